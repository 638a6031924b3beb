# Stop signals, the hang watchdog and the non-finite guard, end to end with the scaletrain binary
# under mpirun (the Slurm side, requeue and a rank killed under srun, is in tests/slurm.cmake):
# - one rank alone gets SIGUSR1 or SIGTERM (sent by itself at a fixed step, or with kill from
#   outside): every rank stops after the same step with a checkpoint and exit code 75, and
#   run.resume = auto continues bitwise (tests/support/resume_check.sh), also on sim's stream-ordered
#   path, where no step waits for the device; Ctrl-C (SIGINT) on a
#   process without a launcher does the same, and a second one ends it at once;
# - a rank stopped with SIGSTOP: the watchdog ends the job in under 60 s with its message (also on
#   the simulated device's NCCL path, whose abort goes through the gradient communicator);
# - a learning rate far too large: the run stops with the inf/NaN message and a non-zero exit;
#   with train.on_nonfinite = skip it finishes and reports the skipped steps.
if(TARGET scaletrain)
  set(_st $<TARGET_FILE:scaletrain>)
  set(_rc ${CMAKE_CURRENT_SOURCE_DIR}/support/resume_check.sh ${_st} ${MPIEXEC_EXECUTABLE} ${_mpi_flags} --)
  set(_sig ${CMAKE_CURRENT_BINARY_DIR}/signals)
  add_test(NAME signal_usr1_one_rank_stops_all_np2 COMMAND ${_rc} ${_sig}/usr1 signal 2 USR1 22)
  add_test(NAME signal_term_one_rank_stops_all_np3 COMMAND ${_rc} ${_sig}/term signal 3 TERM 41)
  add_test(NAME signal_usr1_from_outside_np2 COMMAND ${_rc} ${_sig}/external external 2 USR1)
  # The same where no step waits for the device (sim, stream-ordered transport): the agreement is
  # started as a step starts and completed as it ends.
  add_test(NAME signal_term_one_rank_stops_all_sim_nccl_np2 COMMAND ${_rc} ${_sig}/term_sim signal 2 TERM 22)
  add_test(NAME signal_usr1_from_outside_sim_nccl_np2 COMMAND ${_rc} ${_sig}/external_sim external 2 USR1)
  set_tests_properties(signal_term_one_rank_stops_all_sim_nccl_np2 signal_usr1_from_outside_sim_nccl_np2
                       PROPERTIES ENVIRONMENT "EXTRA=--run.device sim --comm.backend nccl")
  add_test(NAME signal_watchdog_stopped_rank_np2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/watchdog_check.sh ${_st} ${MPIEXEC_EXECUTABLE} ${_mpi_flags} --
                   ${_sig}/watchdog 2)
  add_test(NAME signal_watchdog_stopped_rank_sim_nccl_np2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/watchdog_check.sh ${_st} ${MPIEXEC_EXECUTABLE} ${_mpi_flags} --
                   ${_sig}/watchdog_sim_nccl 2 --run.device sim --comm.backend nccl)
  # Ctrl-C on a process started without a launcher: a checkpoint and exit 75; twice: ends at once.
  add_test(NAME signal_ctrl_c_without_launcher
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/ctrl_c_check.sh ${_st} ${_sig}/ctrl_c)
  set_tests_properties(signal_ctrl_c_without_launcher PROPERTIES LABELS signals TIMEOUT 300)
  set(_nan_run ${_mpirun} -np 2 ${_st} --train.max_steps 30 --train.evaluate false --optimizer.lr 1e30)
  add_test(NAME nonfinite_stops_with_message_np2
           COMMAND ${_fail} "the first layer with inf/NaN gradients, counting from the output, is dense_2" -- ${_nan_run})
  add_test(NAME nonfinite_skip_reports_count_np2
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh 120
                   --has "\\| [0-9]+ step\\(s\\) skipped for inf/NaN" --has "warning: step [0-9]+: inf/NaN in the loss"
                   -- ${_nan_run} --train.on_nonfinite skip)
  set_tests_properties(signal_usr1_one_rank_stops_all_np2 signal_usr1_from_outside_np2
                       signal_term_one_rank_stops_all_sim_nccl_np2 signal_usr1_from_outside_sim_nccl_np2
                       signal_watchdog_stopped_rank_np2 signal_watchdog_stopped_rank_sim_nccl_np2
                       nonfinite_stops_with_message_np2 nonfinite_skip_reports_count_np2 PROPERTIES PROCESSORS 2)
  set_tests_properties(signal_term_one_rank_stops_all_np3 PROPERTIES PROCESSORS 3)
  set_tests_properties(signal_usr1_one_rank_stops_all_np2 signal_term_one_rank_stops_all_np3
                       signal_usr1_from_outside_np2 signal_term_one_rank_stops_all_sim_nccl_np2
                       signal_usr1_from_outside_sim_nccl_np2 signal_watchdog_stopped_rank_np2
                       signal_watchdog_stopped_rank_sim_nccl_np2 nonfinite_stops_with_message_np2
                       nonfinite_skip_reports_count_np2 PROPERTIES LABELS "signals;mpi" TIMEOUT 300)
endif()
