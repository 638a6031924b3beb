# Large global batches: LARS and LAMB against NumPy references of their papers' update rules on the
# mlp (tests/support/check_trust_ratio_optimizers.py: the whole set as one batch, a checkpoint per
# step, each step's change of every tensor against the rule applied in float64 to the checkpoint
# before), at 1 and 2 ranks, fp32 and bf16 (bf16 computes its gradients in bf16: a wider tolerance,
# still far below the error of the rule with the biases adapted too), and fp32 on sim at 2 ranks. About
# 2 s each.
if(NOT TARGET scaletrain OR NOT TARGET st-pack-arrays)
  return()
endif()
set(_lb ${CMAKE_CURRENT_BINARY_DIR}/large_batch)
list(JOIN _mpi_flags " " _lb_mpi_flags)
foreach(opt lars lamb)
  foreach(prec fp32 bf16)
    if(prec STREQUAL fp32)
      set(_tol 1e-4)
    elseif(opt STREQUAL lars)
      set(_tol 0.15)
    else()
      set(_tol 0.3)
    endif()
    foreach(np 1 2)
      add_test(NAME optim_${opt}_paper_rule_${prec}_np${np}
               COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_trust_ratio_optimizers.py
                       --scaletrain $<TARGET_FILE:scaletrain> --pack $<TARGET_FILE:st-pack-arrays>
                       --mpirun "${MPIEXEC_EXECUTABLE} ${_lb_mpi_flags}" --np ${np} --optimizer ${opt}
                       --precision ${prec} --tol ${_tol} --out ${_lb}/${opt}_${prec}_np${np})
      set_tests_properties(optim_${opt}_paper_rule_${prec}_np${np} PROPERTIES PROCESSORS ${np} LABELS "optim;mpi"
                           TIMEOUT 120 PASS_REGULAR_EXPRESSION "OK: ${opt} follows the paper's update rule")
    endforeach()
  endforeach()
  # The simulated GPU: the norms' segment sums and the update queued on its stream, comm.backend nccl.
  add_test(NAME optim_${opt}_paper_rule_fp32_sim_np2
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_trust_ratio_optimizers.py
                   --scaletrain $<TARGET_FILE:scaletrain> --pack $<TARGET_FILE:st-pack-arrays>
                   --mpirun "${MPIEXEC_EXECUTABLE} ${_lb_mpi_flags}" --np 2 --optimizer ${opt} --device sim
                   --tol 1e-4 --out ${_lb}/${opt}_sim_np2)
  set_tests_properties(optim_${opt}_paper_rule_fp32_sim_np2 PROPERTIES PROCESSORS 2 LABELS "optim;mpi;device"
                       TIMEOUT 120 PASS_REGULAR_EXPRESSION "OK: ${opt} follows the paper's update rule")
endforeach()

# Gradient accumulation (train.accumulate_steps), end to end. K = 4 at 2 ranks against 1 rank with the
# whole batch is in mpitest_train_equivalence; the bucket exchange and resume here:
# - the timeline of 12 updates of 4 micro-batches at 2 ranks holds each bucket's all-reduce exactly
#   once per update (tests/support/check_timeline.py), on the cpu and on sim's stream-ordered path;
# - comm.bucket_mb = auto times the last micro-batch's backward and chooses;
# - a stop signal in the middle of an accumulation round (before micro-batch 2 of 4) stops every rank
#   after that update, and the resumed run matches the uninterrupted one bitwise (resume_check.sh);
# - a resume with another train.accumulate_steps is refused, naming the key and both values.
set(_lb_mpirun ${MPIEXEC_EXECUTABLE} ${_mpi_flags})
set(_lb_fresh ${CMAKE_CURRENT_SOURCE_DIR}/support/fresh_dir.sh)
foreach(dev cpu sim)
  set(_tl ${_lb}/timeline_accumulate_${dev})
  add_test(NAME accumulate_one_allreduce_per_update_${dev}_np2_run
           COMMAND ${_lb_fresh} ${_tl} ${_lb_mpirun} -np 2 $<TARGET_FILE:scaletrain> --model.name lenet
                   --data.path synthetic --data.synthetic_samples 1536 --train.batch 64 --train.accumulate_steps 4
                   --train.max_steps 12 --train.evaluate false --comm.bucket_mb 0.05 --run.device ${dev}
                   --comm.backend $<IF:$<STREQUAL:${dev},sim>,nccl,auto> --run.threads 1 --run.timeline true
                   --run.dir ${_tl})
  add_test(NAME accumulate_one_allreduce_per_update_${dev}_np2_check
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_timeline.py ${_tl} --ranks 2 --steps 12)
  set_tests_properties(accumulate_one_allreduce_per_update_${dev}_np2_run PROPERTIES PROCESSORS 2 LABELS "train;mpi"
                       TIMEOUT 120 FIXTURES_SETUP accumulate_timeline_${dev})
  set_tests_properties(accumulate_one_allreduce_per_update_${dev}_np2_check PROPERTIES LABELS train TIMEOUT 60
                       FIXTURES_REQUIRED accumulate_timeline_${dev})
endforeach()
add_test(NAME accumulate_bucket_tuner_times_last_micro_batch_np2
         COMMAND ${_lb_mpirun} -np 2 $<TARGET_FILE:scaletrain> --model.name lenet --data.path synthetic
                 --data.synthetic_samples 1536 --train.batch 64 --train.accumulate_steps 2 --train.max_steps 12
                 --train.evaluate false --comm.bucket_mb auto --run.threads 1)
set_tests_properties(accumulate_bucket_tuner_times_last_micro_batch_np2 PROPERTIES PROCESSORS 2 LABELS "train;mpi"
                     TIMEOUT 120 PASS_REGULAR_EXPRESSION "comm.bucket_mb = auto -> .* timed in steps")
set(_rc ${CMAKE_CURRENT_SOURCE_DIR}/support/resume_check.sh $<TARGET_FILE:scaletrain> ${_lb_mpirun} --)
add_test(NAME accumulate_signal_mid_round_resumes_bitwise_np2 COMMAND ${_rc} ${_lb}/signal_mid_round signal 2 USR1 22)
set_tests_properties(accumulate_signal_mid_round_resumes_bitwise_np2 PROPERTIES PROCESSORS 2 LABELS "signals;mpi"
                     TIMEOUT 300 RUN_SERIAL TRUE
                     ENVIRONMENT "EXTRA=--train.accumulate_steps 4 --testing.inject_signal_micro 2")
set(_rk ${_lb}/resume_other_k)
add_test(NAME accumulate_resume_other_k_setup
         COMMAND ${_lb_fresh} ${_rk} ${_lb_mpirun} -np 2 $<TARGET_FILE:scaletrain> --train.max_steps 3
                 --train.accumulate_steps 2 --train.evaluate false --run.threads 1 --run.dir ${_rk})
add_test(NAME accumulate_resume_other_k_refused
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh
                 120 "train.accumulate_steps: checkpoint 2, this run 4" -- ${_lb_mpirun} -np 2 $<TARGET_FILE:scaletrain>
                 --train.max_steps 6 --train.accumulate_steps 4 --train.evaluate false --run.threads 1
                 --run.dir ${_rk} --run.resume auto)
set_tests_properties(accumulate_resume_other_k_setup PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 120
                     FIXTURES_SETUP accumulate_resume_other_k)
set_tests_properties(accumulate_resume_other_k_refused PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 120
                     FIXTURES_REQUIRED accumulate_resume_other_k)
# A global batch that does not divide by the ranks x micro-batches: one message naming the numbers.
add_test(NAME accumulate_batch_not_divisible_np2
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 120
                 "train.batch = 60 is not divisible by the 2 ranks x 4 micro-batches (train.accumulate_steps): choose a multiple of 8"
                 -- ${_lb_mpirun} -np 2 $<TARGET_FILE:scaletrain> --train.batch 60 --train.accumulate_steps 4
                 --train.max_steps 1 --run.threads 1)
set_tests_properties(accumulate_batch_not_divisible_np2 PROPERTIES PROCESSORS 2 LABELS "train;mpi" TIMEOUT 120)
# LARS's and LAMB's state (lars_momentum; lamb_exp_avg, lamb_exp_avg_sq) resumes bitwise: stopped at
# step 25 of 60, resumed, every step's loss and the final model.h5 equal to the uninterrupted run's
# (LAMB with two micro-batches per update).
add_test(NAME optim_lars_resume_bitwise_np2 COMMAND ${_rc} ${_lb}/lars_resume bitwise 2 25)
add_test(NAME optim_lamb_accumulate_resume_bitwise_np2 COMMAND ${_rc} ${_lb}/lamb_resume bitwise 2 25)
set_tests_properties(optim_lars_resume_bitwise_np2 PROPERTIES ENVIRONMENT "EXTRA=--optimizer.name lars;LR=0.5")
set_tests_properties(optim_lamb_accumulate_resume_bitwise_np2 PROPERTIES
                     ENVIRONMENT "EXTRA=--optimizer.name lamb --train.accumulate_steps 2;LR=0.002")
set_tests_properties(optim_lars_resume_bitwise_np2 optim_lamb_accumulate_resume_bitwise_np2 PROPERTIES PROCESSORS 2
                     LABELS "checkpoint;mpi" TIMEOUT 300)
# fp16 with two micro-batches: an inf in one rank's loss (the last micro-batch's, on the device) is
# found once per update: every rank skips that one update and the scale halves once (metrics.jsonl).
set(_fp ${_lb}/fp16_skip)
add_test(NAME accumulate_fp16_skips_one_update_np2
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh 120 --has "\\| 1 step\\(s\\) skipped for inf/NaN"
                 -- ${_lb_fresh} ${_fp} ${_lb_mpirun} -np 2 $<TARGET_FILE:scaletrain> --model.name lenet
                 --data.path synthetic --train.batch 64 --train.accumulate_steps 2 --train.max_steps 6
                 --train.evaluate false --train.precision fp16 --testing.inject_inf_loss_rank 1
                 --testing.inject_inf_loss_step 2 --run.threads 1 --run.dir ${_fp})
set_tests_properties(accumulate_fp16_skips_one_update_np2 PROPERTIES PROCESSORS 2 LABELS "train;mpi" TIMEOUT 120)
