#!/usr/bin/env bash
# A strong- or weak-scaling sweep on this machine: scaletrain at 1, 2 and 4 MPI ranks (one compute thread
# per rank; more ranks than cores are oversubscribed and unbound), each run in its own run directory
# SWEEP_DIR/ranks-<N>, the all-reduce benchmark (alpha-beta fit) and perf/scaling_report.py on the sweep
# (report.md and PNG plots in SWEEP_DIR).
# usage: jobs/local/sweep.sh [strong|weak] [CONFIG] [STEPS] [SWEEP_DIR] [extra scaletrain options...]
#   strong: train.batch = SCALETRAIN_BATCH (default 128) at every rank count (global batch fixed)
#   weak:   train.batch = SCALETRAIN_BATCH (default 64) x ranks (per-rank batch fixed)
#   CONFIG default jobs/configs/lenet_synthetic.toml, STEPS default 400, SWEEP_DIR default runs/<kind>-sweep-<time>
#   (installed by cmake --install: the installed programs and configurations, and runs/ in the current directory)
# Environment: SCALETRAIN_BUILD (build/cpu), SCALETRAIN_BIN, SCALETRAIN_BENCH ("none": no benchmark),
#   SCALETRAIN_RANKS ("1 2 4"), SCALETRAIN_BATCH, SCALETRAIN_MODEL, SCALETRAIN_THREADS (1),
#   SCALETRAIN_MPIRUN (mpirun), LOG_EVERY (25), WARMUP_STEPS (50), SCALETRAIN_PYTHON (/usr/bin/python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../slurm source=common.sh
source "$root/jobs/slurm/common.sh"
st_layout "$root"

ST_KIND=${1:-strong}
case "$ST_KIND" in
  strong) default_batch=128 ;;
  weak) default_batch=64 ;;
  *) st_die "the first argument is the sweep kind, strong or weak (got '$ST_KIND')" ;;
esac
ST_CONFIG=${2:-$root/jobs/configs/lenet_synthetic.toml}
ST_STEPS=${3:-400}
ST_SWEEP=${4:-$ST_WORK/runs/$ST_KIND-sweep-$(date +%Y%m%d-%H%M%S)}
shift $(($# < 4 ? $# : 4))
ST_ARGS=("$@")

programs=$ST_PROGRAMS
if [ "$ST_INSTALLED" = 0 ] || [ -n "${SCALETRAIN_BUILD:-}" ]; then
  programs=${SCALETRAIN_BUILD:-$root/build/cpu}/src/apps
fi
ST_BIN=${SCALETRAIN_BIN:-$programs/scaletrain}
ST_BENCH=${SCALETRAIN_BENCH:-$programs/scaletrain-bench-allreduce}
ST_BENCH_ARGS=${SCALETRAIN_BENCH_ARGS:--b 8 -e 4M -n 10 -w 2}
ST_BATCH=${SCALETRAIN_BATCH:-$default_batch}
ST_MODEL=${SCALETRAIN_MODEL:-}
ST_DATA_PATH=""
ST_LOG_EVERY=${LOG_EVERY:-25}
ST_WARMUP=${WARMUP_STEPS:-50}
ST_EPOCHS=1000  # train.max_steps ends every run
ST_THREADS=${SCALETRAIN_THREADS:-1}
ST_PYTHON=${SCALETRAIN_PYTHON:-/usr/bin/python3}
ST_REPORT_ARGS=()
rank_counts=${SCALETRAIN_RANKS:-1 2 4}
cores=$(nproc)
read -r -a mpirun <<<"${SCALETRAIN_MPIRUN:-mpirun}"
[ "${#mpirun[@]}" -gt 0 ] || st_die "SCALETRAIN_MPIRUN is empty"
command -v "${mpirun[0]}" >/dev/null || st_die "${mpirun[0]} not found (set SCALETRAIN_MPIRUN)"
[ -x "$ST_BIN" ] || st_die "$ST_BIN not found: build it (cmake --build --preset cpu) or set SCALETRAIN_BUILD"
[ -f "$ST_CONFIG" ] || st_die "configuration $ST_CONFIG not found"
for k in $rank_counts $ST_STEPS $ST_BATCH; do
  if ! st_is_uint "$k" || [ "$k" -lt 1 ]; then
    st_die "'$k' is not a positive integer (SCALETRAIN_RANKS, STEPS, SCALETRAIN_BATCH)"
  fi
done
st_is_uint "$ST_WARMUP" || st_die "WARMUP_STEPS '$ST_WARMUP' is not a non-negative integer"
if [ "$ST_WARMUP" -ge "$ST_STEPS" ]; then
  st_die "WARMUP_STEPS ($ST_WARMUP) must be smaller than STEPS ($ST_STEPS): no timed interval would be left"
fi

ST_RUNS=""
max_ranks=1
for n in $rank_counts; do
  ST_RUNS+="${ST_RUNS:+ }$n:1"
  [ "$n" -gt "$max_ranks" ] && max_ranks=$n
done
# The benchmark at as many ranks as there are cores (at least 2): the network of this machine, not
# the cost of oversubscription.
bench_ranks=$((cores < max_ranks ? cores : max_ranks))
ST_BENCH_RUN="$((bench_ranks < 2 ? 2 : bench_ranks)):1"

# mpirun for N ranks: bound one per core while they fit, unbound (time-shared) beyond the cores.
local_launch_prefix() {
  local ranks=$1
  ST_LAUNCH=("${mpirun[@]}" -np "$ranks" --oversubscribe)
  # Open MPI's -q: no multi-line "exited with non-zero status" text after scaletrain's own one-line error.
  if [ "$(basename -- "${mpirun[0]}")" = mpirun ]; then ST_LAUNCH+=(-q); fi
  if [ "$ranks" -le "$cores" ]; then ST_LAUNCH+=(--bind-to core); else ST_LAUNCH+=(--bind-to none); fi
  if [ "$(id -u)" -eq 0 ]; then ST_LAUNCH+=(--allow-run-as-root); fi
}
ST_LAUNCH_FN=local_launch_prefix

mkdir -p "$ST_SWEEP"
batch_key=global_batch
[ "$ST_KIND" = weak ] && batch_key=per_rank_batch
st_write_sweep_json "$ST_SWEEP" "$ST_KIND" \
  config "$(st_json_str "$ST_CONFIG")" model "$(st_json_str "${ST_MODEL:-from config}")" \
  binary "$(st_json_str "$ST_BIN")" "$batch_key" "$ST_BATCH" steps "$ST_STEPS" \
  rank_counts "$(st_json_ints "$rank_counts")" threads_per_rank "$ST_THREADS" cores_per_host "$cores" \
  host "$(st_json_str "$(hostname)")" created "$(st_json_str "$(date -Iseconds)")"
st_log "$ST_KIND-scaling sweep in $ST_SWEEP: ranks $rank_counts on $cores cores, batch $ST_BATCH ($batch_key)," \
       "$ST_STEPS steps per run"
st_sweep
