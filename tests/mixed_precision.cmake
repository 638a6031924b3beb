# Mixed precision end to end: which oneDNN kernels a bf16 run executes (ONEDNN_VERBOSE): bf16
# convolutions, pooling and inner products on a CPU with AVX512-BF16 (skipped elsewhere), through
# the fast paths (bf16 matmul, with run.cpu_bf16_gemm = bf16; with f32 the GEMMs leave oneDNN's
# bf16 kernels; max pooling is the direct op, not oneDNN's, on both) and oneDNN's primitives only;
# and the fallback under
# ONEDNN_MAX_CPU_ISA=AVX512_CORE: f32 kernels, with the start-up table and run.json saying so.
if(TARGET scaletrain)
  set(_chk /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_precision_kernels.py)
  set(_mp ${CMAKE_CURRENT_BINARY_DIR}/mixed_precision)
  set(_run $<TARGET_FILE:scaletrain> --model.name lenet --train.precision bf16 --train.max_steps 2
           --train.batch 32 --train.evaluate false)
  add_test(NAME precision_bf16_kernels_fast_paths
           COMMAND ${_chk} --expect native --run-dir ${_mp}/fast --primitives convolution,matmul -- ${_run}
                   --run.cpu_bf16_gemm bf16)
  add_test(NAME precision_bf16_kernels_gemm_on_f32
           COMMAND ${_chk} --expect native --run-dir ${_mp}/gemm_f32 --primitives convolution -- ${_run}
                   --run.cpu_bf16_gemm f32)
  add_test(NAME precision_bf16_kernels_onednn_only
           COMMAND ${_chk} --expect native --run-dir ${_mp}/onednn --primitives convolution,pooling,inner_product
                   -- ${_run} --run.cpu_onednn_only true)
  add_test(NAME precision_bf16_emulated_without_avx512_bf16
           COMMAND ${_chk} --expect emulated --run-dir ${_mp}/emulated --primitives convolution -- ${_run})
  # The checker itself, on recorded verbose lines of both CPU kinds (AVX512-BF16 and AMX), on any machine.
  add_test(NAME precision_kernel_checker_recorded_lines COMMAND ${_chk} --self-test)
  set_tests_properties(precision_bf16_kernels_fast_paths precision_bf16_kernels_gemm_on_f32
                       precision_bf16_kernels_onednn_only
                       precision_bf16_emulated_without_avx512_bf16 precision_kernel_checker_recorded_lines
                       PROPERTIES LABELS "precision" TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
