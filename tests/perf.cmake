# The benchmarks' own machinery, so that perf/ keeps running: the PyTorch anchors without the PyTorch 2
# environment (perf/anchor-env.sh's refusals and status, pytorch_anchor.py's refusal of torch.compile
# under 1.13, bench_train_step.py's message and its run against Debian's PyTorch alone), and
# bench_layers on a graph (resnet20: every layer timed, the step per layer type). Label: perf. Only
# where perf/ is built (the tsan preset leaves it out).
if(NOT SCALETRAIN_ENABLE_BENCHMARKS)
  return()
endif()
add_test(NAME perf_bench_anchors_without_pytorch2
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_bench_anchors.py
                 --root ${PROJECT_SOURCE_DIR} --build ${PROJECT_BINARY_DIR}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/perf_bench_anchors)
set_tests_properties(perf_bench_anchors_without_pytorch2 PROPERTIES PROCESSORS 2 LABELS "perf;mpi;pytorch" TIMEOUT 300)
add_test(NAME perf_bench_layers_graph
         COMMAND bench_layers --model resnet20 --batch 4 --steps 1 --warmup 1)
set_tests_properties(perf_bench_layers_graph PROPERTIES LABELS perf TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "\nConv2D +19 +[0-9.]+ +[0-9.]+%")
