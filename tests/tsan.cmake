# ThreadSanitizer tier (the tsan preset: -fsanitize=thread in CMAKE_CXX_FLAGS): the simulated
# device's tests under TSan, labelled tsan, and a removed copy wait that TSan must report as a data
# race. `ctest --preset tsan` runs only these, with TSAN_OPTIONS naming tests/tsan.supp.
if(NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread" OR NOT TARGET scaletrain)
  return()
endif()

set(_tsan_mpirun ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_mpi_flags})
set(_tsan_dir ${CMAKE_CURRENT_BINARY_DIR}/tsan)

add_test(NAME tsan_sim_device COMMAND $<TARGET_FILE:test_backend_sim> --gtest_filter=SimDevice.*)
add_test(NAME tsan_sim_buckets_np2
         COMMAND ${_tsan_mpirun} $<TARGET_FILE:mpitest_comm_gradient_buckets> --gtest_filter=*/BucketsTest.*_sim)
# The NCCL path's simulation (MPI on the sim comm stream's thread) and the device bucket transports;
# the missing-wait test is a race on purpose.
add_test(NAME tsan_sim_device_buckets_np2
         COMMAND ${_tsan_mpirun} $<TARGET_FILE:mpitest_comm_device_buckets> --gtest_filter=-*MissingWait*)
add_test(NAME tsan_sim_device_communicator_np2
         COMMAND ${_tsan_mpirun} $<TARGET_FILE:mpitest_comm_sim_device_communicator>)
add_test(NAME tsan_sim_train_equivalence_np2
         COMMAND ${_tsan_mpirun} $<TARGET_FILE:mpitest_train_equivalence> --gtest_filter=*/Equivalence.*/sim_*:-*node_ranks*)
# lenet only: fmnist_sepcnn adds no stream ordering of its own and takes 70 s under TSan.
add_test(NAME tsan_device_cpu_vs_sim_delays_lenet_np2
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/device_equivalence.sh $<TARGET_FILE:scaletrain>
                 ${MPIEXEC_EXECUTABLE} ${_mpi_flags} -- ${_tsan_dir}/cpu_vs_sim_lenet lenet 2 --delays 200)
set_tests_properties(tsan_sim_buckets_np2 tsan_sim_device_buckets_np2 tsan_sim_device_communicator_np2
                     tsan_sim_train_equivalence_np2 tsan_device_cpu_vs_sim_delays_lenet_np2 PROPERTIES PROCESSORS 2)

# The batch's host-to-device copy wait removed: the copy stream's memcpy into the device batch and
# the compute stream's normalize kernel reading it are unordered, and TSan must say so (in some runs
# it first reports the loader refilling the host slot that memcpy reads: the host's wait before
# reusing a slot is the same event). The control is the same run with the wait: no report at all. (A removed bucket wait is invisible to TSan: the
# all-reduce reads the gradients inside uninstrumented libmpi; device_missing_bucket_wait_is_caught
# catches it by the losses.)
set(_tsan_run $<TARGET_FILE:scaletrain> --run.device sim --testing.sim_delay_us 200 --train.max_steps 10
              --model.name lenet --train.batch 16 --data.synthetic_samples 1024 --train.evaluate false
              --run.threads 1)
add_test(NAME tsan_missing_copy_wait_is_a_data_race
         COMMAND ${_fresh} ${_tsan_dir}/missing_copy_wait ${_tsan_run} --testing.sim_ignore_events "batch copied"
                 --run.dir ${_tsan_dir}/missing_copy_wait)
set_tests_properties(tsan_missing_copy_wait_is_a_data_race PROPERTIES
                     PASS_REGULAR_EXPRESSION "WARNING: ThreadSanitizer: data race")
add_test(NAME tsan_copy_wait_is_race_free
         COMMAND ${_fresh} ${_tsan_dir}/copy_wait ${_tsan_run} --run.dir ${_tsan_dir}/copy_wait)
set_tests_properties(tsan_copy_wait_is_race_free PROPERTIES FAIL_REGULAR_EXPRESSION "ThreadSanitizer")

set_tests_properties(tsan_sim_device tsan_sim_buckets_np2 tsan_sim_device_buckets_np2 tsan_sim_device_communicator_np2
                     tsan_sim_train_equivalence_np2
                     tsan_device_cpu_vs_sim_delays_lenet_np2 tsan_missing_copy_wait_is_a_data_race
                     tsan_copy_wait_is_race_free
                     PROPERTIES LABELS tsan TIMEOUT 600)

# What these tests run, so that CI builds only that: cmake --build --preset tsan --target tsan_test_targets
add_custom_target(tsan_test_targets)
add_dependencies(tsan_test_targets scaletrain test_backend_sim mpitest_comm_gradient_buckets mpitest_comm_device_buckets
                 mpitest_comm_sim_device_communicator mpitest_train_equivalence)
