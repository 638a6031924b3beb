# The device model end to end: cpu against the simulated device (bitwise-identical per-step losses
# for lenet and fmnist_sepcnn over 50 steps at 1 and 2 ranks, also with random delays before every
# op on every stream), through MPI (host-staged) and through the NCCL path (comm.backend = nccl),
# the same runs with a wait removed (they must diverge: the tests catch it), an out-of-memory error
# on a small sim device, and sim timelines with the copy track.
if(TARGET scaletrain)
  set(_st $<TARGET_FILE:scaletrain>)
  set(_eq ${CMAKE_CURRENT_SOURCE_DIR}/support/device_equivalence.sh ${_st} ${MPIEXEC_EXECUTABLE} ${_mpi_flags} --)
  set(_dev ${CMAKE_CURRENT_BINARY_DIR}/device)
  # The cpu run of each model and rank count, made once (fixture device_cpu_<model>_np<N>); every sim
  # variant of it, here and below, compares against that run (_cpu_<model>_np<N>: the arguments that name it).
  foreach(model lenet fmnist_sepcnn)
    foreach(np 1 2)
      add_test(NAME device_cpu_run_${model}_np${np} COMMAND ${_eq} ${_dev}/cpu_${model}_np${np} ${model} ${np} --cpu-only)
      set_tests_properties(device_cpu_run_${model}_np${np} PROPERTIES PROCESSORS ${np} LABELS "device;mpi" TIMEOUT 300
                           FIXTURES_SETUP device_cpu_${model}_np${np})
      set(_cpu_${model}_np${np} --cpu-run ${_dev}/cpu_${model}_np${np}/cpu)
      add_test(NAME device_cpu_vs_sim_${model}_np${np}
               COMMAND ${_eq} ${_dev}/${model}_np${np} ${model} ${np} ${_cpu_${model}_np${np}})
      add_test(NAME device_cpu_vs_sim_delays_${model}_np${np}
               COMMAND ${_eq} ${_dev}/${model}_delays_np${np} ${model} ${np} --delays 200 ${_cpu_${model}_np${np}})
      set_tests_properties(device_cpu_vs_sim_${model}_np${np} device_cpu_vs_sim_delays_${model}_np${np}
                           PROPERTIES PROCESSORS ${np} LABELS "device;mpi" TIMEOUT 300
                           FIXTURES_REQUIRED device_cpu_${model}_np${np})
    endforeach()
  endforeach()
  # Mixed precision on the simulated device: bf16 compute with bf16 gradients on the wire, fp16 with
  # its loss scaler (a device-side check read back every step) and fp16 on the wire.
  foreach(prec bf16 fp16)
    add_test(NAME device_cpu_vs_sim_${prec}_lenet_np2
             COMMAND ${_eq} ${_dev}/${prec}_lenet_np2 lenet 2 --delays 200 --precision ${prec})
    set_tests_properties(device_cpu_vs_sim_${prec}_lenet_np2 PROPERTIES PROCESSORS 2 LABELS "device;mpi;precision"
                         TIMEOUT 300)
  endforeach()
  # The NCCL path's orchestration on the simulated device (comm.backend = nccl: stream-ordered buckets,
  # averaged by the transport, MPI on the sim comm stream) against cpu, bitwise, with and without delays.
  # (Without it, sim reduces through MPI host-staged: the tests above and below.)
  foreach(np 1 2)
    add_test(NAME device_cpu_vs_sim_nccl_lenet_np${np}
             COMMAND ${_eq} ${_dev}/nccl_lenet_np${np} lenet ${np} ${_cpu_lenet_np${np}} -- --comm.backend nccl)
    add_test(NAME device_cpu_vs_sim_nccl_delays_lenet_np${np}
             COMMAND ${_eq} ${_dev}/nccl_delays_lenet_np${np} lenet ${np} --delays 200 ${_cpu_lenet_np${np}}
                     -- --comm.backend nccl)
    set_tests_properties(device_cpu_vs_sim_nccl_lenet_np${np} device_cpu_vs_sim_nccl_delays_lenet_np${np}
                         PROPERTIES PROCESSORS ${np} LABELS "device;mpi" TIMEOUT 300
                         FIXTURES_REQUIRED device_cpu_lenet_np${np})
  endforeach()
  # scaletrain-bench-allreduce on device buffers (the GPU kit's NCCL and staged-MPI checks, here on
  # sim): every size's result checked (#wrong), exit non-zero on any wrong value.
  if(TARGET scaletrain-bench-allreduce)
    foreach(transport nccl mpi)
      add_test(NAME device_bench_allreduce_${transport}_np2
               COMMAND ${MPIEXEC_EXECUTABLE} -np 2 ${_mpi_flags} $<TARGET_FILE:scaletrain-bench-allreduce>
                       -b 4 -e 4M -n 3 -w 1 -d bf16 --device sim --backend ${transport})
      set_tests_properties(device_bench_allreduce_${transport}_np2 PROPERTIES PROCESSORS 2 LABELS "device;mpi"
                           TIMEOUT 120)
    endforeach()
  endif()
  add_test(NAME device_nccl_missing_bucket_wait_is_caught
           COMMAND ${_eq} ${_dev}/nccl_missing_bucket_wait lenet 2 --delays 200 --expect-mismatch ${_cpu_lenet_np2}
                   -- --comm.backend nccl --testing.sim_ignore_events "bucket ready" --run.checkpoint_at_end false)
  add_test(NAME device_sim_nccl_says_so
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh 120
                   --has "transport nccl path simulated with MPI on the sim comm stream" --
                   ${_fresh} ${_dev}/nccl_says_so ${_mpirun} -np 2 ${_st} --run.device sim --comm.backend nccl
                   --train.max_steps 2 --data.synthetic_samples 1024 --train.evaluate false --run.dir ${_dev}/nccl_says_so)
  set_tests_properties(device_nccl_missing_bucket_wait_is_caught device_sim_nccl_says_so
                       PROPERTIES PROCESSORS 2 LABELS "device;mpi" TIMEOUT 300)
  set_tests_properties(device_nccl_missing_bucket_wait_is_caught PROPERTIES FIXTURES_REQUIRED device_cpu_lenet_np2)

  # A wait removed: the batch's copy event, and (2 ranks) a bucket's gradients-ready event.
  add_test(NAME device_missing_copy_wait_is_caught
           COMMAND ${_eq} ${_dev}/missing_copy_wait lenet 1 --delays 200 --expect-mismatch ${_cpu_lenet_np1}
                   -- --testing.sim_ignore_events "batch copied")
  # The per-step losses catch the missing bucket wait (the end-of-run checkpoint is off, since its
  # replica checksum would stop the run first); the second test: that checksum catches it too, on the
  # NCCL path, where the reduced bucket lands in the device gradients while a late backward write
  # can still overwrite it with this rank's own values. (Through MPI the copy back is ordered on
  # the compute stream: a missing wait reduces stale gradients, the same on every rank, which the
  # losses catch but the replicas do not show.)
  add_test(NAME device_missing_bucket_wait_is_caught
           COMMAND ${_eq} ${_dev}/missing_bucket_wait lenet 2 --delays 200 --expect-mismatch ${_cpu_lenet_np2}
                   -- --testing.sim_ignore_events "bucket ready" --run.checkpoint_at_end false)
  add_test(NAME device_missing_bucket_wait_diverges_the_replicas
           COMMAND ${_fail} "the replicas have silently diverged" --
                   ${_fresh} ${_dev}/missing_bucket_wait_checksum
                   ${_mpirun} -np 2 ${_st} --run.device sim --testing.sim_delay_us 200 --model.name lenet
                   --data.synthetic_samples 2048 --train.batch 32 --train.max_steps 50
                   --optimizer.lr 0.002 --train.evaluate false --comm.bucket_mb 0.05 --run.threads 1
                   --testing.sim_ignore_events "bucket ready" --comm.backend nccl
                   --run.dir ${_dev}/missing_bucket_wait_checksum)
  set_tests_properties(device_missing_copy_wait_is_caught device_missing_bucket_wait_is_caught
                       device_missing_bucket_wait_diverges_the_replicas
                       PROPERTIES PROCESSORS 2 LABELS "device;mpi" TIMEOUT 300)
  set_tests_properties(device_missing_copy_wait_is_caught PROPERTIES FIXTURES_REQUIRED device_cpu_lenet_np1)
  set_tests_properties(device_missing_bucket_wait_is_caught PROPERTIES FIXTURES_REQUIRED device_cpu_lenet_np2)

  add_test(NAME device_sim_out_of_memory
           COMMAND ${_fail} "sim device out of memory: tensor '" --
                   ${_fresh} ${_dev}/oom ${_mpirun} -np 2 ${_st} --run.device sim --run.sim_memory_mb 1 --train.max_steps 2
                   --run.dir ${_dev}/oom)
  set_tests_properties(device_sim_out_of_memory PROPERTIES PROCESSORS 2 LABELS "device;mpi" TIMEOUT 120)

  set(_tl ${_dev}/timeline_sim)
  add_test(NAME device_sim_timeline_run
           COMMAND ${_fresh} ${_tl} ${_mpirun} -np 2 ${_st} --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml
                   --run.device sim --data.synthetic_samples 2048 --train.batch 96 --train.max_steps 20
                   --train.evaluate false --comm.bucket_mb 0.05 --run.timeline true --run.dir ${_tl})
  add_test(NAME device_sim_timeline_check
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_timeline.py ${_tl} --ranks 2
                   --steps 20 --copy-track)
  set_tests_properties(device_sim_timeline_run PROPERTIES PROCESSORS 2 LABELS "device;mpi" TIMEOUT 300
                       FIXTURES_SETUP device_sim_timeline)
  set_tests_properties(device_sim_timeline_check PROPERTIES LABELS device TIMEOUT 60
                       FIXTURES_REQUIRED device_sim_timeline)
  # The NCCL path's timeline: bucket times from events on the comm stream, the exposed wait on the device.
  set(_tl ${_dev}/timeline_sim_nccl)
  add_test(NAME device_sim_nccl_timeline_run
           COMMAND ${_fresh} ${_tl} ${_mpirun} -np 2 ${_st} --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml
                   --run.device sim --comm.backend nccl --data.synthetic_samples 2048 --train.batch 96
                   --train.max_steps 20 --train.evaluate false --comm.bucket_mb 0.05 --run.timeline true
                   --run.dir ${_tl})
  add_test(NAME device_sim_nccl_timeline_check
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_timeline.py ${_tl} --ranks 2
                   --steps 20 --copy-track)
  set_tests_properties(device_sim_nccl_timeline_run PROPERTIES PROCESSORS 2 LABELS "device;mpi" TIMEOUT 300
                       FIXTURES_SETUP device_sim_nccl_timeline)
  set_tests_properties(device_sim_nccl_timeline_check PROPERTIES LABELS device TIMEOUT 60
                       FIXTURES_REQUIRED device_sim_nccl_timeline)
endif()
