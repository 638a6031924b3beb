# The Slurm job scripts under a real Slurm: scripts/slurm-test-cluster.sh starts two one-node clusters on this
# machine, one with MpiDefault=pmi2 (as a site may have; Open MPI does not start under it) and one with
# MpiDefault=none, so the sweeps pass only if the scripts choose their srun --mpi themselves. The strong sweep
# runs with jobs/slurm/README.md's own command (read from the README) on the MpiDefault=none cluster; the weak
# sweep runs twice on the pmi2 cluster (1 and 2 tasks per node into one sweep directory); both sweeps are
# checked by tests/support/check_run_dirs.py, which also asserts that srun --cpu-bind=cores gave every rank
# cores of its own (no binding warning in run.json). Jobs with a missing binary or an unknown srun MPI type fail with
# one clear message. jobs/slurm/train_requeue.sbatch is stopped by hand and by its time limit and must checkpoint,
# requeue, resume and complete; a killed or stopped rank must end its job step. Where Slurm cannot start (not
# installed, not root) the tests are skipped; under CI=true they fail. Label: slurm.
if(NOT TARGET scaletrain)
  return()
endif()

set(_slurm_test bash ${CMAKE_CURRENT_SOURCE_DIR}/support/slurm_test.sh)
set(_slurm_check /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_run_dirs.py)
set(_slurm_jobs ${PROJECT_SOURCE_DIR}/jobs)
set(_slurm_out ${CMAKE_CURRENT_BINARY_DIR}/slurm)
file(MAKE_DIRECTORY ${_slurm_out})  # the jobs' output files (SBATCH_OUTPUT): Slurm does not create the directory
# Short cluster directories (Unix socket paths must fit in 108 bytes), one pair per build directory.
string(MD5 _slurm_hash "${CMAKE_CURRENT_BINARY_DIR}")
string(SUBSTRING "${_slurm_hash}" 0 8 _slurm_hash)
set(_slurm_cluster_root /tmp/scaletrain-slurm-${_slurm_hash})
set(_slurm_bench none)
if(TARGET scaletrain-bench-allreduce)
  set(_slurm_bench $<TARGET_FILE:scaletrain-bench-allreduce>)
endif()
# The submission must not inherit an outer Slurm job's or the user's sbatch settings, nor the SCALETRAIN_ROOT of a
# loaded scaletrain module (the jobs run this source tree's scripts).
set(_slurm_clean_env "SCALETRAIN_ROOT=unset:"
                     "SLURM_JOB_ID=unset:" "SLURM_JOBID=unset:" "SLURM_NTASKS=unset:" "SLURM_NTASKS_PER_NODE=unset:"
                     "SLURM_CPUS_PER_TASK=unset:" "SLURM_GPUS_PER_TASK=unset:" "SLURM_MPI_TYPE=unset:"
                     "SBATCH_PARTITION=unset:" "SBATCH_ACCOUNT=unset:" "SBATCH_GPUS_PER_TASK=unset:"
                     "SCALETRAIN_SRUN_MPI=unset:" "TASKS_PER_NODE=unset:" "GPUS_PER_TASK=unset:")
# The sweeps' settings: a short LeNet run on synthetic data, the job's output in the build directory.
set(_slurm_env "SCALETRAIN_CONFIG=${_slurm_jobs}/configs/lenet_synthetic.toml" STEPS=40 LOG_EVERY=10 WARMUP_STEPS=10
               "SCALETRAIN_BENCH_ARGS=-b 1K -e 1M -n 5 -w 1" SCALETRAIN_PYTHON=/usr/bin/python3)
# The scripts' default binary is build/cpu's: name it only when this build directory is elsewhere.
if(NOT PROJECT_BINARY_DIR STREQUAL "${PROJECT_SOURCE_DIR}/build/cpu")
  list(APPEND _slurm_env "SCALETRAIN_BIN=$<TARGET_FILE:scaletrain>" "SCALETRAIN_BENCH=${_slurm_bench}")
endif()

# The clusters: fixtures slurm_cluster_site (MpiDefault=pmi2) and slurm_cluster_none (MpiDefault=none).
foreach(_cluster site none)
  set(_mpi_default pmi2)
  if(_cluster STREQUAL "none")
    set(_mpi_default none)
  endif()
  set(_dir ${_slurm_cluster_root}-${_cluster})
  set(_slurm_dir_${_cluster} ${_dir})
  add_test(NAME slurm_cluster_${_cluster}_start COMMAND ${_slurm_test} start ${_dir} --mpi-default ${_mpi_default})
  add_test(NAME slurm_cluster_${_cluster}_stop COMMAND ${_slurm_test} stop ${_dir})
  set_tests_properties(slurm_cluster_${_cluster}_start PROPERTIES FIXTURES_SETUP slurm_cluster_${_cluster}
                       RESOURCE_LOCK slurm_test_cluster_ports TIMEOUT 60)
  set_tests_properties(slurm_cluster_${_cluster}_stop PROPERTIES FIXTURES_CLEANUP slurm_cluster_${_cluster}
                       TIMEOUT 60)
endforeach()

# slurm_sweep_test(NAME CLUSTER SWEEP FIXTURE ENV COMMAND...): one sweep job on CLUSTER into SWEEP_DIR=SWEEP.
function(slurm_sweep_test name cluster sweep env)
  add_test(NAME ${name} COMMAND ${_slurm_test} job ${_slurm_dir_${cluster}} ${ARGN} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "${_slurm_env};${env};SWEEP_DIR=${sweep};SBATCH_OUTPUT=${_slurm_out}/${name}-%j.out"
    ENVIRONMENT_MODIFICATION "${_slurm_clean_env}"
    PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 300)
endfunction()

# Strong scaling with the README's command, on the MpiDefault=none cluster: ranks-2.
set(_sweep ${_slurm_out}/strong)
add_test(NAME slurm_strong_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${_sweep})
slurm_sweep_test(slurm_strong_readme_command none ${_sweep} GLOBAL_BATCH=128 --readme ${_slurm_jobs}/slurm/README.md)
add_test(NAME slurm_strong_run_dirs COMMAND ${_slurm_test} run ${_slurm_dir_none} --
         ${_slurm_check} ${_sweep} --kind strong --ranks 2 --batch 128 --report --bound)
set_tests_properties(slurm_strong_clean PROPERTIES FIXTURES_SETUP slurm_strong_dir)
set_tests_properties(slurm_strong_readme_command PROPERTIES
  FIXTURES_REQUIRED "slurm_cluster_none;slurm_strong_dir" FIXTURES_SETUP slurm_strong)
set_tests_properties(slurm_strong_run_dirs PROPERTIES FIXTURES_REQUIRED "slurm_cluster_none;slurm_strong" TIMEOUT 60)

# The same sweep from an installed prefix (tests/install.cmake, tests/support/install_test.sh): `module load
# scaletrain` in a clean environment, the installed strong_scaling.sbatch and configuration, the default sweep
# directory under the submit directory, checked by the installed check_run_dirs.py. Labels slurm and install.
add_test(NAME slurm_install_strong_sweep
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/install_test.sh slurm ${PROJECT_BINARY_DIR} ${_slurm_dir_none})
set_tests_properties(slurm_install_strong_sweep PROPERTIES FIXTURES_REQUIRED slurm_cluster_none
                     ENVIRONMENT_MODIFICATION "${_slurm_clean_env}" PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 300)

# Weak scaling on the MpiDefault=pmi2 cluster: 1 then 2 tasks per node into one sweep directory.
set(_sweep ${_slurm_out}/weak)
add_test(NAME slurm_weak_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${_sweep})
set_tests_properties(slurm_weak_clean PROPERTIES FIXTURES_SETUP slurm_weak_dir)
set(_previous slurm_weak_dir)
foreach(_tpn 1 2)
  slurm_sweep_test(slurm_weak_${_tpn}_task site ${_sweep} PER_RANK_BATCH=64
                   -- sbatch -W --nodes=1 --ntasks-per-node=${_tpn} jobs/slurm/weak_scaling.sbatch)
  set_tests_properties(slurm_weak_${_tpn}_task PROPERTIES
    FIXTURES_REQUIRED "slurm_cluster_site;${_previous}" FIXTURES_SETUP slurm_weak_${_tpn})
  set(_previous slurm_weak_${_tpn})
endforeach()
add_test(NAME slurm_weak_run_dirs COMMAND ${_slurm_test} run ${_slurm_dir_site} --
         ${_slurm_check} ${_sweep} --kind weak --ranks 1,2 --batch 64 --report --bound)
set_tests_properties(slurm_weak_run_dirs PROPERTIES FIXTURES_REQUIRED "slurm_cluster_site;${_previous}" TIMEOUT 60)

# Bad input fails the job (sbatch -W exits non-zero) with one clear message, before anything runs.
set(_slurm_rejects
  "binary|SCALETRAIN_BIN=set:/nonexistent/scaletrain|scaletrain binary /nonexistent/scaletrain not found"
  "mpi_type|SCALETRAIN_SRUN_MPI=set:pmi9|srun has no MPI plugin 'pmi9'")
foreach(_case IN LISTS _slurm_rejects)
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _what)
  list(GET _case 1 _env)
  list(GET _case 2 _message)
  add_test(NAME slurm_job_rejects_${_what}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 120 "${_message}" --
                   ${_slurm_test} job ${_slurm_dir_site} -- sbatch -W --nodes=1 jobs/slurm/strong_scaling.sbatch
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(slurm_job_rejects_${_what} PROPERTIES
    ENVIRONMENT "${_slurm_env};SWEEP_DIR=${_slurm_out}/rejects_${_what};SBATCH_OUTPUT=${_slurm_out}/rejects_${_what}-%j.out"
    ENVIRONMENT_MODIFICATION "${_slurm_clean_env};${_env}"
    FIXTURES_REQUIRED slurm_cluster_site TIMEOUT 150)
endforeach()

# The binding check under Slurm: two ranks started without binding (srun --cpu-bind=none; the symptom of a
# cluster without task/affinity: each rank on both cores, 748 samples/s against 38,619 bound for lenet here)
# are warned about, with their masks.
add_test(NAME slurm_unbound_ranks_warn
         COMMAND ${_slurm_test} run ${_slurm_dir_site} --
                 bash ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh 120
                 --has "warning: ranks 0 and 1 on host .* share cores \\(rank 0: [0-9,-]+, rank 1: [0-9,-]+\\)"
                 -- srun --mpi=pmix --nodes=1 --ntasks=2 --cpu-bind=none $<TARGET_FILE:scaletrain>
                 --config ${_slurm_jobs}/configs/lenet_synthetic.toml --train.max_steps 4 --train.evaluate false)
set_tests_properties(slurm_unbound_ranks_warn PROPERTIES FIXTURES_REQUIRED slurm_cluster_site
                     ENVIRONMENT_MODIFICATION "${_slurm_clean_env}" PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 150)

# Jobs longer than the wall-clock limit (jobs/slurm/train_requeue.sbatch, 2 ranks of LeNet): stopped by hand
# (scancel --batch --signal=USR1 once metrics.jsonl shows progress; the steps of about 8 s of training, measured
# first, so that a fast machine does not finish before the signal) and by the time limit (--time=1 with
# --signal=B:USR1@30: Slurm checks time limits every 30 s and signals at the first check that finds at most lead + 30 s
# left, here the first one after the start, so a run lasts at most 30 s, and the steps of about 50 s of training on
# this machine, measured by requeue_test.sh first, need at least one requeue), and by a signal to the batch shell before
# it starts the job step (as when that first check comes at the job's start). Each job checkpoints, exits 75, is
# requeued (after the test cluster's cred_expire of 5 s), resumes and completes; tests/support/requeue_test.sh checks
# the job's output and the run directory. About 20 s each, the time limit's 10 s of calibration plus 65 s.
set(_requeue_test bash ${CMAKE_CURRENT_SOURCE_DIR}/support/requeue_test.sh)
foreach(_case "scancel|auto:8|" "before_step|600|" "time_limit|auto:50|--time=1;--signal=B:USR1@30")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _mode)
  list(GET _case 1 _steps)
  list(SUBLIST _case 2 -1 _options)
  add_test(NAME slurm_requeue_${_mode}
           COMMAND ${_requeue_test} requeue ${_slurm_dir_none} ${_slurm_out}/requeue_${_mode} ${_steps} ${_mode}
                   -- --nodes=1 --ntasks-per-node=2 ${_options}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(slurm_requeue_${_mode} PROPERTIES
    ENVIRONMENT "${_slurm_env};SBATCH_OUTPUT=${_slurm_out}/slurm_requeue_${_mode}-%j.out"
    ENVIRONMENT_MODIFICATION "${_slurm_clean_env};RUN_ROOT=unset:;SLURM_RESTART_COUNT=unset:"
    FIXTURES_REQUIRED slurm_cluster_none PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 300)
endforeach()

# A dead or hung rank ends the job step, started without --kill-on-bad-exit as train_requeue.sbatch starts it: rank 1
# gets SIGKILL (Slurm's PMIx plugin then cancels the step, in about 1 s) or SIGSTOP (rank 0's scaletrain watchdog,
# run.watchdog_s = 5, ends the job with MPI_Abort and exit 69, in about 5 s); each must end within 60 s.
foreach(_case "killed|kill" "stopped|stop")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _name)
  list(GET _case 1 _how)
  add_test(NAME slurm_watchdog_${_name}_rank
           COMMAND ${_requeue_test} watchdog ${_slurm_dir_site} ${_how} 60
                   -- srun --mpi=pmix --nodes=1 --ntasks=2 --cpu-bind=cores $<TARGET_FILE:scaletrain>
                   --config ${_slurm_jobs}/configs/lenet_synthetic.toml --train.epochs 1000 --train.max_steps 100000
                   --train.log_every 16 --train.evaluate false --run.watchdog_s 5)
  set_tests_properties(slurm_watchdog_${_name}_rank PROPERTIES FIXTURES_REQUIRED slurm_cluster_site
                       ENVIRONMENT_MODIFICATION "${_slurm_clean_env}" PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 180)
endforeach()

get_property(_slurm_tests DIRECTORY PROPERTY TESTS)
list(FILTER _slurm_tests INCLUDE REGEX "^slurm_")
set_tests_properties(${_slurm_tests} PROPERTIES LABELS slurm SKIP_REGULAR_EXPRESSION "SKIPPED: ")
set_property(TEST slurm_install_strong_sweep APPEND PROPERTY LABELS install)
