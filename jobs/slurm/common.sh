# shellcheck shell=bash
# Shared functions of the scaling sweeps (jobs/slurm/*.sbatch and jobs/local/sweep.sh): sweep.json,
# one run directory per rank count, launching one run, the all-reduce benchmark and the scaling report.
# Sourced, not run. Every function is prefixed st_; the sourcing script sets `set -euo pipefail`.

st_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
st_die() { printf 'error: %s\n' "$*" >&2; exit 2; }

# A JSON string literal of $1 (escapes backslashes, quotes, tabs and newlines).
st_json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\n'/\\n}
  printf '"%s"' "$s"
}

# A JSON array of integers from the words of $1 ("1 2 4" -> [1, 2, 4]).
st_json_ints() {
  local out="" w
  for w in $1; do out+="${out:+, }$w"; done
  printf '[%s]' "$out"
}

st_is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# st_write_sweep_json DIR KIND KEY JSON_VALUE [KEY JSON_VALUE ...]
# Writes DIR/sweep.json (read by perf/scaling_report.py: `kind`, `cores_per_host`, the rest is shown in
# the report). A sweep directory holds one kind only: an existing sweep.json of the other kind is an error
# (several submissions may fill one sweep directory; the last one's sweep.json wins).
st_write_sweep_json() {
  local dir=$1 kind=$2
  shift 2
  local file=$dir/sweep.json
  if [ -f "$file" ] && ! grep -q "\"kind\": \"$kind\"" "$file"; then
    st_die "$file belongs to a sweep of another kind (this one is $kind); use a new SWEEP_DIR"
  fi
  local body="  \"kind\": \"$kind\""
  while [ $# -ge 2 ]; do
    body+=$',\n'"  $(st_json_str "$1"): $2"
    shift 2
  done
  printf '{\n%s\n}\n' "$body" >"$file.tmp"
  mv -f "$file.tmp" "$file"
}

# st_prepare_run_dir DIR: 0 if a run should go into DIR, 1 if DIR already holds a finished run (run.json),
# so a resubmitted sweep skips what is done. A run that did not finish (metrics.jsonl, no run.json) is
# moved aside to DIR.partial-<time>, because scaletrain appends to metrics.jsonl.
st_prepare_run_dir() {
  local dir=$1
  if [ -f "$dir/run.json" ]; then
    return 1
  fi
  if [ -e "$dir" ]; then
    local aside
    aside=$dir.partial-$(date +%Y%m%d-%H%M%S)
    st_log "moving the unfinished run $dir aside to $aside"
    mv "$dir" "$aside"
  fi
  mkdir -p "$dir"
  return 0
}

# st_powers_of_two MAX: 1 2 4 ... up to MAX, and MAX itself when it is not a power of two.
st_powers_of_two() {
  local max=$1 n=1 out=""
  while [ "$n" -le "$max" ]; do
    out+="${out:+ }$n"
    n=$((n * 2))
  done
  [ "$((n / 2))" -ne "$max" ] && out+=" $max"
  printf '%s\n' "$out"
}

# st_device: the run.device of the job's runs: cuda where the job asked for GPUs per task (a node without one
# then fails with scaletrain's message instead of training on its CPUs), else cpu.
st_device() { if [ "${ST_GPUS:-0}" -gt 0 ]; then echo cuda; else echo cpu; fi; }

# st_is_srun WORD: whether the launcher's command is Slurm's srun.
st_is_srun() { [ "$(basename -- "$1")" = srun ]; }

# st_dry_run: whether SCALETRAIN_DRY_RUN=1 asks the sweep to print each run's job-step command instead of running
# it (no run directories, no sweep.json, no benchmark, no report).
st_dry_run() { [ "${SCALETRAIN_DRY_RUN:-0}" = 1 ]; }

# st_run_one RUN_DIR LOG -- COMMAND...: runs one training run, its output on the terminal and in LOG.
# Returns the command's exit status (the caller decides whether the sweep goes on).
st_run_one() {
  local dir=$1 log=$2
  shift 3
  st_log "run $dir: $*"
  local rc=0
  "$@" 2>&1 | tee "$log" || rc=$?
  if [ "$rc" -eq 0 ] && [ ! -f "$dir/run.json" ]; then
    st_log "run $dir exited 0 but wrote no run.json"
    rc=1
  fi
  [ "$rc" -ne 0 ] && st_log "run $dir FAILED (exit $rc); see $log"
  return "$rc"
}

# st_layout ROOT: where the scripts under ROOT/jobs find the programs, the Python tools and the default run
# directories.
#   Source tree (ROOT/perf/scaling_report.py): ST_INSTALLED=0, ST_TOOLS=ROOT/perf, ST_WORK=ROOT, ST_PROGRAMS empty
#     (the callers take the programs from a build directory).
#   Installed tree (`cmake --install`: ROOT = PREFIX/share/scaletrain, with ROOT/tools/scaling_report.py):
#     ST_INSTALLED=1, ST_TOOLS=ROOT/tools, ST_PROGRAMS=PREFIX/bin (where that holds no scaletrain, the directory of
#     the scaletrain on PATH), and ST_WORK, the parent of the default runs/ and data/, is the submit directory under
#     Slurm, else the current directory: the prefix is the site's software tree, often read-only.
st_layout() {
  local root=$1
  if [ -f "$root/tools/scaling_report.py" ] && [ ! -f "$root/perf/scaling_report.py" ]; then
    ST_INSTALLED=1
    ST_TOOLS=$root/tools
    ST_WORK=${SLURM_SUBMIT_DIR:-$PWD}
    ST_PROGRAMS=$(cd "$root/../.." && pwd)/bin
    if [ ! -x "$ST_PROGRAMS/scaletrain" ] && command -v scaletrain >/dev/null; then
      ST_PROGRAMS=$(dirname -- "$(command -v scaletrain)")
    fi
  else
    ST_INSTALLED=0
    ST_TOOLS=$root/perf
    ST_WORK=$root
    ST_PROGRAMS=""
  fi
}

# st_report PYTHON TOOLS SWEEP_DIR [REPORT OPTIONS...]: the scaling report (report.md + PNGs in SWEEP_DIR) by
# TOOLS/scaling_report.py (TOOLS: ST_TOOLS of st_layout).
st_report() {
  local py=$1 tools=$2 sweep=$3
  shift 3
  st_log "scaling report: $py $tools/scaling_report.py $sweep $*"
  "$py" "$tools/scaling_report.py" "$sweep" "$@"
}

# st_sweep: the sweep itself, shared by the Slurm scripts and jobs/local/sweep.sh. Reads these variables:
#   ST_KIND strong|weak    ST_TOOLS scaling_report.py's directory (st_layout)    ST_BIN scaletrain
#   ST_BENCH bench binary or "none"
#   ST_CONFIG  ST_MODEL (may be empty)  ST_DATA_PATH (may be empty)  ST_SWEEP sweep directory
#   ST_BATCH  global batch (strong) or per-rank batch (weak)
#   ST_STEPS  ST_LOG_EVERY  ST_WARMUP  ST_EPOCHS  ST_THREADS  ST_PYTHON  ST_BENCH_ARGS (words)
#   ST_RUNS   words "RANKS:NODES", one per run, smallest first; ST_BENCH_RUN "RANKS:NODES" of the benchmark
#             (default: the last run's)
#   ST_ARGS   array of extra scaletrain options; ST_REPORT_ARGS array of extra report options
# and calls "$ST_LAUNCH_FN" RANKS NODES (a function of the caller), which sets the array ST_LAUNCH.
# One run directory per run: $ST_SWEEP/ranks-<RANKS>. Returns 1 if a run or the report failed. With
# SCALETRAIN_DRY_RUN=1 it prints the runs' commands ("dry run: srun ... scaletrain ...") and returns 0.
st_sweep() {
  local failed=() done_runs=0 spec ranks nodes batch dir
  for spec in $ST_RUNS; do
    ranks=${spec%%:*}
    nodes=${spec##*:}
    if [ "$ST_KIND" = strong ]; then
      if [ $((ST_BATCH % ranks)) -ne 0 ]; then
        st_log "skipping $ranks ranks: the global batch $ST_BATCH does not divide by $ranks"
        continue
      fi
      batch=$ST_BATCH
    else
      batch=$((ST_BATCH * ranks))
    fi
    dir=$ST_SWEEP/ranks-$ranks
    if ! st_dry_run && ! st_prepare_run_dir "$dir"; then
      st_log "skipping $ranks ranks: $dir/run.json exists (finished earlier)"
      done_runs=$((done_runs + 1))
      continue
    fi
    local cmd=("$ST_BIN" --config "$ST_CONFIG")
    [ -n "$ST_MODEL" ] && cmd+=(--model.name "$ST_MODEL")
    [ -n "$ST_DATA_PATH" ] && cmd+=(--data.path "$ST_DATA_PATH")
    cmd+=(--run.dir "$dir" --train.batch "$batch" --train.max_steps "$ST_STEPS" --train.epochs "$ST_EPOCHS"
          --train.log_every "$ST_LOG_EVERY" --train.warmup_log_steps "$ST_WARMUP" --run.threads "$ST_THREADS"
          --run.device "$(st_device)")
    cmd+=("${ST_ARGS[@]}")
    "$ST_LAUNCH_FN" "$ranks" "$nodes"
    if st_dry_run; then
      printf 'dry run: %s\n' "${ST_LAUNCH[*]} ${cmd[*]}"
      continue
    fi
    if st_run_one "$dir" "$dir/output.log" -- "${ST_LAUNCH[@]}" "${cmd[@]}"; then
      done_runs=$((done_runs + 1))
    else
      failed+=("$ranks")
    fi
  done
  st_dry_run && return 0
  [ "$done_runs" -gt 0 ] || st_die "no run of the sweep finished (failed: ${failed[*]:-none ran})"

  # The all-reduce benchmark (default: at the largest rank count) for the report's alpha-beta prediction.
  local report_args=() bench_run=${ST_BENCH_RUN:-${ST_RUNS##* }} json=$ST_SWEEP/allreduce.json
  ranks=${bench_run%%:*}
  nodes=${bench_run##*:}
  if [ "$ST_BENCH" != none ] && [ -x "$ST_BENCH" ] && [ "$ranks" -ge 2 ] && [ ! -f "$json" ]; then
    "$ST_LAUNCH_FN" "$ranks" "$nodes"
    local bench_args
    read -r -a bench_args <<<"$ST_BENCH_ARGS"
    st_log "all-reduce benchmark at $ranks ranks: $ST_BENCH ${bench_args[*]} --json $json"
    if ! "${ST_LAUNCH[@]}" "$ST_BENCH" "${bench_args[@]}" --json "$json" >"$ST_SWEEP/allreduce.log" 2>&1; then
      st_log "the all-reduce benchmark failed (see $ST_SWEEP/allreduce.log): report without the prediction"
      rm -f "$json"
    fi
  fi
  [ -f "$json" ] && report_args+=(--allreduce-json "$json")
  local rc=0
  st_report "$ST_PYTHON" "$ST_TOOLS" "$ST_SWEEP" "${report_args[@]}" "${ST_REPORT_ARGS[@]}" || rc=$?
  if [ "$rc" -ne 0 ]; then
    st_log "the scaling report failed (exit $rc)"
    return 1
  fi
  st_log "sweep done: $ST_SWEEP/report.md"
  if [ "${#failed[@]}" -gt 0 ]; then
    st_log "runs that FAILED: ${failed[*]} ranks"
    return 1
  fi
  return 0
}

# st_slurm_resources: the allocation's shape, from the submission (sbatch options), so that one script runs on
# CPU and GPU partitions alike. Sets ST_NODES (nodes of the allocation), ST_TPN (ranks per node: TASKS_PER_NODE,
# else SLURM_NTASKS_PER_NODE, else tasks / nodes), ST_CPUS (cores per rank: SLURM_CPUS_PER_TASK, else the node's
# cores / ST_TPN), ST_GPUS and ST_GPU_SPEC (GPUs per rank: GPUS_PER_TASK, else SLURM_GPUS_PER_TASK, which may
# carry a type as in `a100:1`, else the node's GPUs / ST_TPN, else 0).
st_slurm_resources() {
  ST_NODES=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
  ST_TPN=${TASKS_PER_NODE:-${SLURM_NTASKS_PER_NODE:-}}
  if [ -z "$ST_TPN" ]; then
    ST_TPN=1
    [ -n "${SLURM_NTASKS:-}" ] && ST_TPN=$((SLURM_NTASKS / ST_NODES))
  fi
  if ! st_is_uint "$ST_TPN" || [ "$ST_TPN" -lt 1 ]; then
    st_die "tasks per node '$ST_TPN' is not a positive integer (TASKS_PER_NODE, --ntasks-per-node)"
  fi
  ST_CPUS=${SLURM_CPUS_PER_TASK:-}
  if [ -z "$ST_CPUS" ]; then
    local node_cpus=${SLURM_CPUS_ON_NODE:-$ST_TPN}
    st_is_uint "$node_cpus" || st_die "SLURM_CPUS_ON_NODE '$node_cpus' is not an integer"
    ST_CPUS=$((node_cpus / ST_TPN > 1 ? node_cpus / ST_TPN : 1))
  fi
  ST_GPU_SPEC=${GPUS_PER_TASK:-${SLURM_GPUS_PER_TASK:-}}
  if [ -z "$ST_GPU_SPEC" ] && st_is_uint "${SLURM_GPUS_ON_NODE:-}"; then
    ST_GPU_SPEC=$((SLURM_GPUS_ON_NODE / ST_TPN))
  fi
  ST_GPU_SPEC=${ST_GPU_SPEC:-0}
  ST_GPUS=${ST_GPU_SPEC##*:}
  local k
  for k in "$ST_NODES" "$ST_CPUS" "$ST_GPUS"; do
    st_is_uint "$k" || st_die "'$k' is not a non-negative integer (nodes, cores or GPUs per task)"
  done
}

# st_slurm_srun_mpi: ST_SRUN_MPI, the `srun --mpi` type (SCALETRAIN_SRUN_MPI, default pmix: Debian's and most
# Open MPI builds start only under PMIx; empty or `default`: no --mpi, the cluster's MpiDefault). A type this
# srun does not have is an error listing those it has.
st_slurm_srun_mpi() {
  ST_SRUN_MPI=${SCALETRAIN_SRUN_MPI-pmix}
  [ "$ST_SRUN_MPI" = default ] && ST_SRUN_MPI=""
  if [ -z "$ST_SRUN_MPI" ] || ! st_is_srun "${ST_LAUNCHER[0]}" || st_dry_run; then
    return 0
  fi
  local types
  types=$("${ST_LAUNCHER[0]}" --mpi=list 2>&1 || true)
  if ! grep -qw -- "$ST_SRUN_MPI" <<<"$types"; then
    st_die "srun has no MPI plugin '$ST_SRUN_MPI' (set SCALETRAIN_SRUN_MPI to one it has, or to 'default'" \
           "for the cluster's MpiDefault): $(tr -s '\n\t' '  ' <<<"$types")"
  fi
}

# st_slurm_settings: the sweep's files and options from the environment (see jobs/slurm/README.md). The
# default binary: in a source tree build/cuda's when the ranks have GPUs, build/cpu's otherwise; in an installed
# tree the installed one (st_layout), and the default run directories go under the submit directory.
st_slurm_settings() {
  ST_ROOT=${SCALETRAIN_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
  st_layout "$ST_ROOT"
  local build=cpu programs=$ST_PROGRAMS
  [ "$ST_GPUS" -gt 0 ] && build=cuda
  [ "$ST_INSTALLED" = 1 ] || programs=$ST_ROOT/build/$build/src/apps
  ST_BIN=${SCALETRAIN_BIN:-$programs/scaletrain}
  ST_BENCH=${SCALETRAIN_BENCH:-$(dirname -- "$ST_BIN")/scaletrain-bench-allreduce}
  ST_BENCH_ARGS=${SCALETRAIN_BENCH_ARGS:--b 8 -e 256M -n 20}
  ST_CONFIG=${SCALETRAIN_CONFIG:-$ST_ROOT/jobs/configs/fmnist_sepcnn.toml}
  ST_MODEL=${SCALETRAIN_MODEL:-}
  ST_DATA_PATH=${DATA_PATH:-}
  ST_SWEEP=${SWEEP_DIR:-$ST_WORK/runs/$ST_KIND-scaling-$SLURM_JOB_ID}
  ST_STEPS=${STEPS:-200}
  ST_LOG_EVERY=${LOG_EVERY:-20}
  ST_WARMUP=${WARMUP_STEPS:-20}
  ST_EPOCHS=${EPOCHS:-1000}
  ST_THREADS=${SCALETRAIN_THREADS:-0}
  ST_PYTHON=${SCALETRAIN_PYTHON:-python3}
  ST_GPU_BIND=${SCALETRAIN_GPU_BIND:-local-rank}
  case "$ST_GPU_BIND" in
    local-rank | single) ;;
    *) st_die "SCALETRAIN_GPU_BIND '$ST_GPU_BIND' is not local-rank or single (jobs/slurm/README.md, GPU binding)" ;;
  esac
  ST_CPU_BIND=${SCALETRAIN_CPU_BIND:-cores}
  read -r -a ST_ARGS <<<"${SCALETRAIN_ARGS:-}"
  ST_REPORT_ARGS=()
  read -r -a ST_LAUNCHER <<<"${SCALETRAIN_LAUNCHER:-srun}"
  [ "${#ST_LAUNCHER[@]}" -gt 0 ] || st_die "SCALETRAIN_LAUNCHER is empty"
  command -v "${ST_LAUNCHER[0]}" >/dev/null || st_die "launcher ${ST_LAUNCHER[0]} not found (set SCALETRAIN_LAUNCHER)"
  [ -x "$ST_BIN" ] || st_die "scaletrain binary $ST_BIN not found (build it, or set SCALETRAIN_BIN)"
  [ -f "$ST_CONFIG" ] || st_die "configuration $ST_CONFIG not found (set SCALETRAIN_CONFIG)"
}

# st_slurm_sweep KIND BATCH: the Slurm sweep inside one allocation (see jobs/slurm/README.md). For every
# node count k of NODE_COUNTS (default 1 2 4 ... up to the allocation's nodes) one job step
# `srun -N k -n k*TASKS_PER_NODE` runs into $SWEEP_DIR/ranks-<k*TASKS_PER_NODE>; then the all-reduce
# benchmark on the whole allocation and the scaling report. SCALETRAIN_LAUNCHER other than srun (mpirun
# for tests) gets `-np RANKS` only.
st_slurm_sweep() {
  ST_KIND=$1
  ST_BATCH=$2
  [ -n "${SLURM_JOB_ID:-}" ] || st_die "not inside a Slurm allocation (SLURM_JOB_ID is unset): submit with sbatch"
  st_slurm_resources
  local node_counts=${NODE_COUNTS:-$(st_powers_of_two "$ST_NODES")} k
  for k in $node_counts $ST_BATCH; do
    st_is_uint "$k" || st_die "'$k' is not a non-negative integer (NODE_COUNTS, GLOBAL_BATCH, PER_RANK_BATCH)"
  done
  ST_RUNS=""
  for k in $node_counts; do
    if [ "$k" -lt 1 ] || [ "$k" -gt "$ST_NODES" ]; then
      st_die "node count $k is outside 1..$ST_NODES (the allocation's nodes)"
    fi
    ST_RUNS+="${ST_RUNS:+ }$((k * ST_TPN)):$k"
  done
  st_slurm_settings
  st_slurm_srun_mpi
  ST_LAUNCH_FN=st_slurm_launch_prefix

  local batch_key=global_batch
  [ "$ST_KIND" = weak ] && batch_key=per_rank_batch
  st_dry_run || mkdir -p "$ST_SWEEP"
  st_dry_run || st_write_sweep_json "$ST_SWEEP" "$ST_KIND" \
    config "$(st_json_str "$ST_CONFIG")" model "$(st_json_str "${ST_MODEL:-from config}")" \
    binary "$(st_json_str "$ST_BIN")" "$batch_key" "$ST_BATCH" steps "$ST_STEPS" \
    node_counts "$(st_json_ints "$node_counts")" tasks_per_node "$ST_TPN" cpus_per_task "$ST_CPUS" \
    gpus_per_task "$ST_GPUS" gpu_bind "$(st_json_str "$ST_GPU_BIND")" cpu_bind "$(st_json_str "$ST_CPU_BIND")" \
    cores_per_host "${SLURM_CPUS_ON_NODE:-$(nproc)}" \
    launcher "$(st_json_str "${ST_LAUNCHER[*]}")" srun_mpi "$(st_json_str "${ST_SRUN_MPI:-default}")" \
    slurm_job_id "$(st_json_str "$SLURM_JOB_ID")" created "$(st_json_str "$(date -Iseconds)")"
  st_log "$ST_KIND-scaling sweep in $ST_SWEEP: node counts $node_counts x $ST_TPN tasks per node" \
         "($ST_CPUS cores, $ST_GPUS GPUs per task$([ "$ST_GPUS" -gt 0 ] && echo ", GPU binding $ST_GPU_BIND")), batch" \
         "$ST_BATCH ($batch_key), $ST_STEPS steps per run," \
         "binary $ST_BIN, launcher ${ST_LAUNCHER[*]}$(st_is_srun "${ST_LAUNCHER[0]}" && echo " --mpi=${ST_SRUN_MPI:-<MpiDefault>}")"
  st_sweep
}

# st_slurm_launch_prefix RANKS NODES [KILL_ON_BAD_EXIT]: the job-step prefix of one run under Slurm (srun) or another
# launcher (mpirun: -np only). KILL_ON_BAD_EXIT (srun --kill-on-bad-exit, default 1) is 0 for a step whose ranks
# all exit 75 when stopped by a signal (train_requeue.sbatch): with 1, the first rank to exit makes srun kill the rest.
# One rank per GPU (jobs/slurm/README.md, "GPU binding"): SCALETRAIN_GPU_BIND=local-rank (the default) gives the step
# the node's GPUs without binding any to a task (--gpu-bind=none), so every rank sees all of them and takes the one at
# its local rank (src/backend/device_selection.cpp) and NCCL sees every GPU of the node (P2P/NVLink between them),
# and hands out cores in blocks (--distribution=block:block: local rank i gets the i-th block of C cores, on the
# socket of GPU i where GPU numbering follows the sockets); SCALETRAIN_GPU_BIND=single lets Slurm give each rank the
# one GPU nearest its cores (--gpu-bind=single:1), which a cgroup-constrained site then isolates per task.
st_slurm_launch_prefix() {
  local ranks=$1 nodes=$2 kill_on_bad_exit=${3:-1}
  ST_LAUNCH=("${ST_LAUNCHER[@]}")
  if st_is_srun "${ST_LAUNCHER[0]}"; then
    ST_LAUNCH+=(--nodes="$nodes" --ntasks="$ranks" --ntasks-per-node="$ST_TPN" --cpus-per-task="$ST_CPUS"
                --cpu-bind="$ST_CPU_BIND" --kill-on-bad-exit="$kill_on_bad_exit")
    [ -n "$ST_SRUN_MPI" ] && ST_LAUNCH+=(--mpi="$ST_SRUN_MPI")
    if [ "$ST_GPUS" -gt 0 ]; then
      ST_LAUNCH+=(--gpus-per-task="$ST_GPU_SPEC")
      if [ "$ST_GPU_BIND" = single ]; then
        ST_LAUNCH+=(--gpu-bind=single:1)
      else
        ST_LAUNCH+=(--gpu-bind=none --distribution=block:block)
      fi
    fi
  else
    ST_LAUNCH+=(-np "$ranks")
    if [ "$(basename -- "${ST_LAUNCHER[0]}")" = mpirun ]; then ST_LAUNCH+=(-q); fi
  fi
  return 0
}
