# MLPerf-HPC-style logging (run.mllog) and time to accuracy (train.target_accuracy) at 2 ranks:
# every :::MLLOG line parses with the required keys, the events come in order, and run.json's
# time_to_accuracy_s is the first evaluation at or above the target in metrics.jsonl (lenet on
# synthetic data at a low learning rate: eval accuracy 45%, 63%, 94%, 100% over epochs 1-4, so a
# 0.9 target is reached in epoch 3 and the run stops there; 0.999 is missed in 2 epochs).
if(TARGET scaletrain)
  set(_mllog_run ${CMAKE_CURRENT_SOURCE_DIR}/support/mllog_run.sh)
  set(_mllog_job ${MPIEXEC_EXECUTABLE} ${_mpi_flags} -np 2 $<TARGET_FILE:scaletrain>
                 --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml --optimizer.lr 0.0005
                 --run.checkpoint_at_end false)
  add_test(NAME mllog_target_reached_stops_the_run
           COMMAND ${_mllog_run} ${CMAKE_CURRENT_BINARY_DIR}/mllog_reached --expect-target reached --stopped-at-target
                   -- ${_mllog_job} --train.epochs 6 --train.target_accuracy 0.9)
  add_test(NAME mllog_target_missed
           COMMAND ${_mllog_run} ${CMAKE_CURRENT_BINARY_DIR}/mllog_missed --expect-target missed
                   -- ${_mllog_job} --train.epochs 2 --train.target_accuracy 0.999)
  set_tests_properties(mllog_target_reached_stops_the_run mllog_target_missed PROPERTIES
                       LABELS "mllog;app;mpi" PROCESSORS 2 TIMEOUT 300)
  add_test(NAME mllog_target_without_evaluation
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 60 "train.target_accuracy needs train.evaluate = true"
                   -- $<TARGET_FILE:scaletrain> --train.target_accuracy 0.9 --train.evaluate false)
  add_test(NAME mllog_target_out_of_range
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 60 "train.target_accuracy must be in [0, 1] (0: none), got 91"
                   -- $<TARGET_FILE:scaletrain> --train.target_accuracy 91)
  set_tests_properties(mllog_target_without_evaluation mllog_target_out_of_range PROPERTIES LABELS "mllog;app")
endif()
