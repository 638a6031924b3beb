# jobs/ scripts, scripts/*.sh, tests/support/slurm_test.sh and install_test.sh: `bash -n` and shellcheck on every
# script; the Slurm strong- and weak-scaling sweeps inside a fake 2-node allocation (SLURM_* variables, launched
# through mpirun instead of srun; tests/slurm.cmake runs them under a real Slurm) with their run directories checked by
# tests/support/check_run_dirs.py; the scaling report on fixture run directories, also without matplotlib; and
# jobs/local/sweep.sh strong at 1, 2 and 4 ranks end to end (run directories, report.md with a row per rank
# count, the PNG plots). Label: jobs.
set(_jobs_dir ${PROJECT_SOURCE_DIR}/jobs)
set(_jobs_py /usr/bin/python3)
set(_jobs_check ${_jobs_py} ${CMAKE_CURRENT_SOURCE_DIR}/support/check_run_dirs.py)

# The job scripts, and the scripts that start and drive the Slurm test cluster (scripts/, tests/slurm.cmake).
file(GLOB_RECURSE _job_scripts CONFIGURE_DEPENDS ${_jobs_dir}/*.sh ${_jobs_dir}/*.sbatch
     ${PROJECT_SOURCE_DIR}/scripts/*.sh)
list(APPEND _job_scripts ${CMAKE_CURRENT_SOURCE_DIR}/support/slurm_test.sh
     ${CMAKE_CURRENT_SOURCE_DIR}/support/install_test.sh)
foreach(script IN LISTS _job_scripts)
  file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${script})
  string(REGEX REPLACE "^jobs/" "" _rel ${_rel})
  string(MAKE_C_IDENTIFIER ${_rel} _id)
  add_test(NAME jobs_bash_syntax_${_id} COMMAND bash -n ${script})
  set_tests_properties(jobs_bash_syntax_${_id} PROPERTIES LABELS jobs TIMEOUT 30)
endforeach()

find_program(SHELLCHECK_EXECUTABLE shellcheck)
if(SHELLCHECK_EXECUTABLE)
  # -x follows `source` (the scripts point shellcheck at jobs/slurm/common.sh with source-path directives).
  add_test(NAME jobs_shellcheck COMMAND ${SHELLCHECK_EXECUTABLE} -x ${_job_scripts}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(jobs_shellcheck PROPERTIES LABELS jobs TIMEOUT 60)
else()
  add_test(NAME jobs_shellcheck COMMAND ${CMAKE_COMMAND} -E echo
           "SKIPPED: shellcheck is not installed (apt-get install shellcheck, see scripts/install-deps.sh)")
  set_tests_properties(jobs_shellcheck PROPERTIES LABELS jobs SKIP_REGULAR_EXPRESSION "SKIPPED: shellcheck")
endif()

# perf/scaling_report.py and the run-directory format versions (jobs/README.md): a sweep whose 1-rank run is
# version 1 (no `version` in its metrics lines, `input` inside `h2d`) and whose 2-rank run is version 2 (its own
# `input` phase) gives a report with an `input` column whose phases add up (they do only if `input` counts); a
# run.json or a metrics.jsonl line of version 99 is refused with one message naming the file and the version.
function(_jobs_fake_run_dir dir run_version line_version world)
  if(line_version EQUAL 1)
    set(_phases "data_wait=1;h2d=2;forward=3;backward=2;allreduce_exposed=1;optimizer=1;step=10")
    set(_version "")
  else()
    set(_phases "data_wait=1;h2d=1;input=1;forward=3;backward=2;allreduce_exposed=1;optimizer=1;step=10")
    set(_version "\"version\": ${line_version}, ")
  endif()
  set(_ph "")
  foreach(_kv IN LISTS _phases)
    string(REPLACE "=" ";" _kv "${_kv}")
    list(GET _kv 0 _name)
    list(GET _kv 1 _ms)
    string(APPEND _ph "\"${_name}\": {\"mean_ms\": ${_ms}, \"min_ms\": ${_ms}, \"max_ms\": ${_ms}, \"slowest_rank\": 0}, ")
  endforeach()
  string(REGEX REPLACE ", $" "" _ph "${_ph}")
  math(EXPR _per_rank "64 / ${world}")
  math(EXPR _sps "6000 * ${world}")
  set(_lines "")
  foreach(_first 0 10)
    set(_warmup false)
    if(_first EQUAL 0)
      set(_warmup true)
    endif()
    string(APPEND _lines "{${_version}\"epoch\": 0, \"first_step\": ${_first}, \"steps\": 10, "
                         "\"warmup\": ${_warmup}, \"samples_per_s\": ${_sps}, \"phases\": {${_ph}}, "
                         "\"allreduce_total_ms\": 1}\n")
  endforeach()
  set(_hosts "")
  foreach(_r RANGE 1 ${world})
    list(APPEND _hosts "\"fixture\"")
  endforeach()
  list(JOIN _hosts ", " _hosts)
  file(WRITE ${dir}/metrics.jsonl "${_lines}")
  file(WRITE ${dir}/run.json "{\"format\": \"scaletrain-run\", \"version\": ${run_version}, \"world_size\": ${world}, "
                             "\"global_batch\": 64, \"per_rank_batch\": ${_per_rank}, \"hosts\": [${_hosts}], "
                             "\"device\": \"fixture\", \"parameters\": 1000, \"samples_per_s\": ${_sps}}\n")
endfunction()

set(_jobs_report ${_jobs_py} ${PROJECT_SOURCE_DIR}/perf/scaling_report.py)
set(_fmt ${CMAKE_CURRENT_BINARY_DIR}/jobs_report_format)
file(REMOVE_RECURSE ${_fmt})
_jobs_fake_run_dir(${_fmt}/v1_and_v2/ranks-1 1 1 1)
_jobs_fake_run_dir(${_fmt}/v1_and_v2/ranks-2 2 2 2)
_jobs_fake_run_dir(${_fmt}/newer_run_json/ranks-1 99 2 1)
_jobs_fake_run_dir(${_fmt}/newer_metrics_line/ranks-1 2 99 1)
add_test(NAME jobs_report_reads_versions_1_and_2 COMMAND ${_jobs_report} ${_fmt}/v1_and_v2 --kind strong --strict)
set_tests_properties(jobs_report_reads_versions_1_and_2 PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| h2d \\| input \\| forward \\|.*All runs: phases add up to the step time within 5%")
add_test(NAME jobs_report_rejects_newer_run_json
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/expect_failure.sh 60
                 "newer_run_json/ranks-1/run.json: run-directory format version 99; this report reads versions 1 and 2"
                 -- ${_jobs_report} ${_fmt}/newer_run_json --kind strong)
add_test(NAME jobs_report_rejects_newer_metrics_line
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/expect_failure.sh 60
                 "newer_metrics_line/ranks-1/metrics.jsonl:1: run-directory format version 99; this report reads"
                 -- ${_jobs_report} ${_fmt}/newer_metrics_line --kind strong)
set_tests_properties(jobs_report_reads_versions_1_and_2 jobs_report_rejects_newer_run_json
                     jobs_report_rejects_newer_metrics_line PROPERTIES LABELS jobs TIMEOUT 60)

# Without matplotlib (a `matplotlib` package on PYTHONPATH whose import fails, as a Python without it would) the
# report still writes report.md with its table, names the missing module, draws no plot and exits 0.
set(_no_mpl ${_fmt}/no_matplotlib)
file(WRITE ${_no_mpl}/python/matplotlib/__init__.py
     "# Stands in for a Python without matplotlib (tests/jobs.cmake).\n"
     "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n")
add_test(NAME jobs_report_without_matplotlib
         COMMAND sh -c "\"$0\" \"$1\" \"$2\" --kind strong --out \"$3\" >/dev/null && cat \"$3/report.md\" && ls \"$3\""
                 ${_jobs_report} ${_fmt}/v1_and_v2 ${_no_mpl}/out)
set_tests_properties(jobs_report_without_matplotlib PROPERTIES LABELS jobs TIMEOUT 60
  ENVIRONMENT "PYTHONPATH=${_no_mpl}/python"
  PASS_REGULAR_EXPRESSION "\n\\| 2 \\| 64 \\| 32 \\|.*Plots not drawn: the Python module matplotlib is not installed for /"
  FAIL_REGULAR_EXPRESSION "!\\[|\\.png")

# The report's GPU telemetry section on synthetic sweeps (tests/support/make_telemetry_runs.py): a throttling rank
# (clock down 29%, sw_thermal_slowdown) and a hot rank (62 -> 88 C) are flagged and named in the main loss, and
# the steady ranks are not; a sweep with steady GPUs (application clocks set, idle in the warm-up) has the section
# and no flag; a sweep without telemetry has no section and says nothing about GPUs.
set(_gpu_fix ${CMAKE_CURRENT_BINARY_DIR}/jobs_report_gpu)
add_test(NAME jobs_report_gpu_fixtures
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" \"$2\" \"$1\"" ${_jobs_py} ${_gpu_fix}
                 ${CMAKE_CURRENT_SOURCE_DIR}/support/make_telemetry_runs.py)
set_tests_properties(jobs_report_gpu_fixtures PROPERTIES FIXTURES_SETUP jobs_report_gpu LABELS jobs TIMEOUT 60)
add_test(NAME jobs_report_gpu_flags_throttled_and_hot
         COMMAND ${_jobs_report} ${_gpu_fix}/throttle --kind strong --out ${_gpu_fix}/throttle-report)
set_tests_properties(jobs_report_gpu_flags_throttled_and_hot PROPERTIES
  PASS_REGULAR_EXPRESSION "4 ranks.*GPU telemetry flags ranks 2, 3.*## GPU telemetry.*\\| 2 \\| fixture \\| 1965 / 1400 / 1400 \\(1980\\) \\| sw_thermal_slowdown \\(4/7\\) .*\\*\\*yes\\*\\*.*- \\*\\*rank 2\\*\\* \\(fixture\\): SM clock fell to 1400 MHz from 1965 early \\(-29%\\).*sw_thermal_slowdown in 4 of 7 intervals.*- \\*\\*rank 3\\*\\* \\(fixture\\): temperature reached 88 C; temperature rose 23 C"
  FAIL_REGULAR_EXPRESSION "\\*\\*rank [01]\\*\\*")
add_test(NAME jobs_report_gpu_normal_not_flagged
         COMMAND ${_jobs_report} ${_gpu_fix}/normal --kind strong --out ${_gpu_fix}/normal-report)
set_tests_properties(jobs_report_gpu_normal_not_flagged PROPERTIES
  PASS_REGULAR_EXPRESSION "## GPU telemetry.*### 4 ranks.*\\| 3 \\| fixture \\| 1965 / 1950 / 1965 \\(1980\\) \\| none \\|.*No rank throttled or ran hot\\.\n\n## Phase-sum"
  FAIL_REGULAR_EXPRESSION "\\*\\*rank [0-9]|GPU telemetry flags|\\*\\*yes")
add_test(NAME jobs_report_gpu_absent_no_section
         COMMAND ${_jobs_report} ${_gpu_fix}/none --kind strong --out ${_gpu_fix}/none-report)
set_tests_properties(jobs_report_gpu_absent_no_section PROPERTIES PASS_REGULAR_EXPRESSION "## Phase-sum check"
  FAIL_REGULAR_EXPRESSION "GPU|gpu|telemetry")
set_tests_properties(jobs_report_gpu_flags_throttled_and_hot jobs_report_gpu_normal_not_flagged
                     jobs_report_gpu_absent_no_section PROPERTIES FIXTURES_REQUIRED jobs_report_gpu LABELS jobs
                     TIMEOUT 60)

if(TARGET scaletrain)
  list(JOIN _mpi_flags " " _jobs_mpi_flags)
  set(_jobs_bench none)
  if(TARGET scaletrain-bench-allreduce)
    set(_jobs_bench $<TARGET_FILE:scaletrain-bench-allreduce>)
  endif()
  # Unset SLURM_JOBID (real Slurm sets it beside SLURM_JOB_ID) and keep Open MPI off its Slurm components,
  # so that mpirun starts the ranks on this machine even when ctest itself runs inside a Slurm job; unset the
  # SCALETRAIN_ROOT of a loaded scaletrain module, so that the Slurm scripts run this source tree's common.sh.
  set(_jobs_unslurm "SCALETRAIN_ROOT=unset:" "SLURM_JOBID=unset:" "SLURM_NODELIST=unset:" "SLURM_JOB_NODELIST=unset:"
                    "SLURM_TASKS_PER_NODE=unset:" "OMPI_MCA_plm=set:^slurm" "OMPI_MCA_ras=set:^slurm")

  # The Slurm scripts in a fake allocation of 2 "nodes" x 1 task: node counts 1 and 2 -> ranks-1, ranks-2.
  foreach(kind strong weak)
    set(_sweep ${CMAKE_CURRENT_BINARY_DIR}/jobs_slurm_${kind})
    if(kind STREQUAL "strong")
      set(_batch_env GLOBAL_BATCH=128)
      set(_batch 128)
    else()
      set(_batch_env PER_RANK_BATCH=64)
      set(_batch 64)
    endif()
    add_test(NAME jobs_slurm_${kind}_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${_sweep})
    add_test(NAME jobs_slurm_${kind}_fake_allocation COMMAND bash ${_jobs_dir}/slurm/${kind}_scaling.sbatch)
    set_tests_properties(jobs_slurm_${kind}_fake_allocation PROPERTIES
      ENVIRONMENT "SLURM_JOB_ID=4242;SLURM_JOB_NAME=scaletrain-${kind};SLURM_JOB_NUM_NODES=2;SLURM_NNODES=2;SLURM_NTASKS=2;SLURM_NTASKS_PER_NODE=1;SLURM_CPUS_PER_TASK=1;SLURM_SUBMIT_DIR=${PROJECT_SOURCE_DIR};SCALETRAIN_LAUNCHER=${MPIEXEC_EXECUTABLE} ${_jobs_mpi_flags};SCALETRAIN_BIN=$<TARGET_FILE:scaletrain>;SCALETRAIN_BENCH=${_jobs_bench};SCALETRAIN_BENCH_ARGS=-b 1K -e 1M -n 5 -w 1;SCALETRAIN_CONFIG=${_jobs_dir}/configs/lenet_synthetic.toml;SCALETRAIN_PYTHON=${_jobs_py};SWEEP_DIR=${_sweep};${_batch_env};STEPS=40;LOG_EVERY=10;WARMUP_STEPS=10;GPUS_PER_TASK=0"
      ENVIRONMENT_MODIFICATION "${_jobs_unslurm}"
      FIXTURES_REQUIRED jobs_slurm_${kind}_dir FIXTURES_SETUP jobs_slurm_${kind}
      PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 180)
    add_test(NAME jobs_slurm_${kind}_run_dirs
             COMMAND ${_jobs_check} ${_sweep} --kind ${kind} --ranks 1,2 --batch ${_batch} --report)
    set_tests_properties(jobs_slurm_${kind}_clean PROPERTIES FIXTURES_SETUP jobs_slurm_${kind}_dir)
    set_tests_properties(jobs_slurm_${kind}_run_dirs PROPERTIES FIXTURES_REQUIRED jobs_slurm_${kind} TIMEOUT 60)
    set_tests_properties(jobs_slurm_${kind}_clean jobs_slurm_${kind}_fake_allocation jobs_slurm_${kind}_run_dirs
                         PROPERTIES LABELS jobs)
  endforeach()

  # The GPU scripts' job steps, printed by SCALETRAIN_DRY_RUN=1 in a fake allocation of 2 nodes x 4 tasks with one
  # GPU each and 32 cores per node (what `sbatch --nodes=2 jobs/slurm/*_gpu.sbatch` gives): by default every rank
  # sees the node's GPUs (--gpu-bind=none, the rank takes the one at its local rank) and gets its own block of 8
  # cores (--cpu-bind=cores --distribution=block:block); SCALETRAIN_GPU_BIND=single asks Slurm for the GPU nearest
  # each rank's cores instead; the GPU scripts' runs ask for --run.device cuda (a node without a GPU fails
  # clearly), the CPU script's for cpu and no GPU option; an unknown binding is refused. Nothing is run or
  # written (srun is a stand-in that would fail).
  set(_dry_bin ${CMAKE_CURRENT_BINARY_DIR}/jobs_dry_run_bin)
  file(WRITE ${_dry_bin}/srun "#!/bin/sh\necho 'stand-in srun of tests/jobs.cmake: a dry run must not start it' >&2\nexit 1\n")
  file(CHMOD ${_dry_bin}/srun PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
  set(_dry_sweep ${CMAKE_CURRENT_BINARY_DIR}/jobs_dry_run_sweep)
  set(_dry_env "SLURM_JOB_ID=4243;SLURM_JOB_NUM_NODES=2;SLURM_NNODES=2;SLURM_NTASKS=8;SLURM_NTASKS_PER_NODE=4;SLURM_CPUS_ON_NODE=32;SLURM_SUBMIT_DIR=${PROJECT_SOURCE_DIR};SCALETRAIN_LAUNCHER=${_dry_bin}/srun;SCALETRAIN_BIN=$<TARGET_FILE:scaletrain>;SCALETRAIN_DRY_RUN=1;SWEEP_DIR=${_dry_sweep}")
  set(_dry_unset "SCALETRAIN_ROOT=unset:"
                 "SLURM_JOBID=unset:" "SLURM_CPUS_PER_TASK=unset:" "SLURM_GPUS_ON_NODE=unset:" "GPUS_PER_TASK=unset:"
                 "TASKS_PER_NODE=unset:" "SCALETRAIN_SRUN_MPI=unset:" "SCALETRAIN_CPU_BIND=unset:" "NODE_COUNTS=unset:"
                 "GLOBAL_BATCH=unset:" "PER_RANK_BATCH=unset:" "SCALETRAIN_ARGS=unset:")
  set(_dry_step "--cpus-per-task=8 --cpu-bind=cores --kill-on-bad-exit=1 --mpi=pmix --gpus-per-task=1")
  set(_dry_run sh -c "rm -rf \"$1\" && bash \"$0\" && test ! -e \"$1\"")
  add_test(NAME jobs_slurm_gpu_strong_dry_run
           COMMAND ${_dry_run} ${_jobs_dir}/slurm/strong_scaling_gpu.sbatch ${_dry_sweep})
  set_tests_properties(jobs_slurm_gpu_strong_dry_run PROPERTIES
    ENVIRONMENT "${_dry_env};SLURM_GPUS_PER_TASK=1" ENVIRONMENT_MODIFICATION "${_dry_unset};SCALETRAIN_GPU_BIND=unset:"
    PASS_REGULAR_EXPRESSION "dry run: [^\n]*/srun --nodes=1 --ntasks=4 --ntasks-per-node=4 ${_dry_step} --gpu-bind=none --distribution=block:block [^\n]*/scaletrain --config [^\n]* --run.dir [^\n]*/ranks-4 --train.batch 1024 [^\n]* --run.device cuda[^\n]*\ndry run: [^\n]*/srun --nodes=2 --ntasks=8 --ntasks-per-node=4 ${_dry_step} --gpu-bind=none --distribution=block:block [^\n]*/ranks-8 --train.batch 1024 [^\n]* --run.device cuda")
  add_test(NAME jobs_slurm_gpu_weak_dry_run_single
           COMMAND ${_dry_run} ${_jobs_dir}/slurm/weak_scaling_gpu.sbatch ${_dry_sweep})
  set_tests_properties(jobs_slurm_gpu_weak_dry_run_single PROPERTIES
    ENVIRONMENT "${_dry_env};SLURM_GPUS_PER_TASK=1;SCALETRAIN_GPU_BIND=single" ENVIRONMENT_MODIFICATION "${_dry_unset}"
    PASS_REGULAR_EXPRESSION "dry run: [^\n]*/srun --nodes=1 --ntasks=4 --ntasks-per-node=4 ${_dry_step} --gpu-bind=single:1 [^\n]*/ranks-4 --train.batch 512 [^\n]* --run.device cuda[^\n]*\ndry run: [^\n]*--nodes=2 --ntasks=8 [^\n]*--gpu-bind=single:1 [^\n]*/ranks-8 --train.batch 1024 [^\n]* --run.device cuda"
    FAIL_REGULAR_EXPRESSION "distribution")
  add_test(NAME jobs_slurm_cpu_dry_run_no_gpu_options
           COMMAND ${_dry_run} ${_jobs_dir}/slurm/strong_scaling.sbatch ${_dry_sweep})
  set_tests_properties(jobs_slurm_cpu_dry_run_no_gpu_options PROPERTIES
    ENVIRONMENT "${_dry_env}" ENVIRONMENT_MODIFICATION "${_dry_unset};SLURM_GPUS_PER_TASK=unset:;SCALETRAIN_GPU_BIND=unset:"
    PASS_REGULAR_EXPRESSION "dry run: [^\n]*/srun --nodes=2 --ntasks=8 --ntasks-per-node=4 --cpus-per-task=8 --cpu-bind=cores --kill-on-bad-exit=1 --mpi=pmix [^\n]*/scaletrain [^\n]* --run.device cpu"
    FAIL_REGULAR_EXPRESSION "--gpu|distribution|--run.device cuda")
  add_test(NAME jobs_slurm_gpu_rejects_unknown_binding
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/expect_failure.sh 30
                   "SCALETRAIN_GPU_BIND 'closest' is not local-rank or single" --
                   bash ${_jobs_dir}/slurm/strong_scaling_gpu.sbatch)
  set_tests_properties(jobs_slurm_gpu_rejects_unknown_binding PROPERTIES
    ENVIRONMENT "${_dry_env};SLURM_GPUS_PER_TASK=1;SCALETRAIN_GPU_BIND=closest" ENVIRONMENT_MODIFICATION "${_dry_unset}")
  set(_dry_tests jobs_slurm_gpu_strong_dry_run jobs_slurm_gpu_weak_dry_run_single jobs_slurm_cpu_dry_run_no_gpu_options
                 jobs_slurm_gpu_rejects_unknown_binding)
  set_tests_properties(${_dry_tests} PROPERTIES LABELS jobs TIMEOUT 30 RESOURCE_LOCK jobs_dry_run_sweep)

  # The local sweep: strong scaling at 1, 2 and 4 ranks, report and plots. The phase sums are checked at 1 and
  # 2 ranks only: 4 ranks time-share 2 cores, and a rank descheduled between two phases loses that time from
  # the phases but not from the step (the report shows it).
  set(_sweep ${CMAKE_CURRENT_BINARY_DIR}/jobs_local_strong)
  add_test(NAME jobs_local_sweep_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${_sweep})
  add_test(NAME jobs_local_sweep_strong
           COMMAND bash ${_jobs_dir}/local/sweep.sh strong ${_jobs_dir}/configs/lenet_synthetic.toml 50 ${_sweep})
  set_tests_properties(jobs_local_sweep_strong PROPERTIES
    ENVIRONMENT "SCALETRAIN_BIN=$<TARGET_FILE:scaletrain>;SCALETRAIN_BENCH=${_jobs_bench};SCALETRAIN_MPIRUN=${MPIEXEC_EXECUTABLE} ${MPIEXEC_PREFLAGS};SCALETRAIN_RANKS=1 2 4;SCALETRAIN_BATCH=128;LOG_EVERY=10;WARMUP_STEPS=10;SCALETRAIN_PYTHON=${_jobs_py}"
    ENVIRONMENT_MODIFICATION "${_jobs_unslurm}"
    FIXTURES_REQUIRED jobs_local_dir FIXTURES_SETUP jobs_local_strong
    PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 240)
  add_test(NAME jobs_local_sweep_report
           COMMAND ${_jobs_check} ${_sweep} --kind strong --ranks 1,2,4 --batch 128 --report --phase-check-ranks 1,2)
  set_tests_properties(jobs_local_sweep_clean PROPERTIES FIXTURES_SETUP jobs_local_dir)
  set_tests_properties(jobs_local_sweep_report PROPERTIES FIXTURES_REQUIRED jobs_local_strong TIMEOUT 60)
  # A warm-up as long as the run leaves no timed interval: one clear message before anything runs.
  add_test(NAME jobs_local_sweep_rejects_warmup_past_steps
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/expect_failure.sh 30
                   "WARMUP_STEPS (50) must be smaller than STEPS (50)" --
                   bash ${_jobs_dir}/local/sweep.sh strong ${_jobs_dir}/configs/lenet_synthetic.toml 50
                   ${CMAKE_CURRENT_BINARY_DIR}/jobs_local_rejected)
  set_tests_properties(jobs_local_sweep_rejects_warmup_past_steps PROPERTIES
    ENVIRONMENT "SCALETRAIN_BIN=$<TARGET_FILE:scaletrain>;SCALETRAIN_MPIRUN=${MPIEXEC_EXECUTABLE};WARMUP_STEPS=50")
  set_tests_properties(jobs_local_sweep_clean jobs_local_sweep_strong jobs_local_sweep_report
                       jobs_local_sweep_rejects_warmup_past_steps PROPERTIES LABELS jobs)
endif()
