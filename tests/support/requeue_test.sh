#!/usr/bin/env bash
# The requeue and watchdog tests of tests/slurm.cmake, on a test cluster of scripts/slurm-test-cluster.sh:
#   requeue_test.sh requeue DIR RUN_DIR STEPS scancel|before_step|time_limit -- SBATCH OPTIONS...
#       submits jobs/slurm/train_requeue.sbatch with these options into a fresh RUN_DIR (a LeNet run of STEPS steps,
#       SCALETRAIN_CONFIG from the environment); with `scancel`, once metrics.jsonl shows progress, it stops the job by
#       hand (scancel --batch --signal=USR1); with `time_limit` Slurm's --signal does; with `before_step` the batch
#       shell gets SIGUSR1 as soon as it has made RUN_DIR, before it starts the job step. Passes when the job ends
#       COMPLETED after at least one requeue, its output shows the stop (exit 75) and the requeue, and the run
#       directory is whole: a checkpoint, run.json with final_step = STEPS, a resumed_from record in metrics.jsonl.
#   requeue_test.sh watchdog DIR kill|stop LIMIT -- SRUN COMMAND...
#       starts the job step (2 ranks of scaletrain), waits until it trains, then sends rank 1 SIGKILL (a dead rank) or
#       SIGSTOP (a hung one). Passes when the step ends non-zero within LIMIT seconds; with `stop`, through
#       scaletrain's watchdog (rank 0's message, exit 69).
# Like slurm_test.sh (whose functions it uses): SKIPPED where the cluster cannot start, FAILED under CI=true.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=slurm_test.sh
source "$(dirname "$0")/slurm_test.sh"

readonly EXIT_WATCHDOG=69  # scaletrain's exit code when its watchdog ends the job (MPI_Abort)
readonly START_WAIT_S=90  # until the job trains (it may wait for a previous test's job to leave the node)

fail() { say "FAILED: $*"; exit 1; }

# steps_lasting SECONDS: the step count of about SECONDS of the requeue job's training on this machine (2 ranks,
# bound to cores), from two short runs (the difference removes the start-up); at least 3000. Machines differ by 4x
# and more (lenet: 3.7 ms a step on one, 16 on another), and the time-limit case needs a run longer than Slurm's 30 s
# between time-limit checks.
steps_lasting() {
  local seconds=$1 bin=${SCALETRAIN_BIN:-$ROOT/build/cpu/src/apps/scaletrain} root_flag=() t0 t1 t2
  [ "$(id -u)" = 0 ] && root_flag=(--allow-run-as-root)
  timed_run() {
    mpirun "${root_flag[@]}" --oversubscribe -np 2 --bind-to core "$bin" --config "$SCALETRAIN_CONFIG" \
      --train.epochs 1000 --train.max_steps "$1" --train.evaluate false --train.log_every 1000 >/dev/null \
      || fail "calibration run of $1 steps failed"
  }
  t0=$(date +%s.%N); timed_run 50; t1=$(date +%s.%N); timed_run 550; t2=$(date +%s.%N)
  /usr/bin/python3 -c "import sys; t0, t1, t2, s = map(float, sys.argv[1:]); \
per = max((t2 - t1) - (t1 - t0), 1e-3) / 500; print(max(3000, int(s / per)))" "$t0" "$t1" "$t2" "$seconds"
}

# signal_before_step JOB RUN_DIR: SIGUSR1 to the job's batch shell (on this node: `scontrol listpids`, local id 0 of
# the batch step) once it has made the run directory, just before it logs its start and starts the job step: as
# Slurm's --signal at a time-limit check that comes at the job's start.
signal_before_step() {
  local id=$1 run_dir=$2 pid="" deadline=$((SECONDS + START_WAIT_S))
  until [ -d "$run_dir" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { scancel "$id"; fail "job $id made no $run_dir within $START_WAIT_S s"; }
    sleep 0.01
  done
  pid=$(scontrol listpids "$id" 2>/dev/null | awk '$3 == "batch" && $4 == 0 {print $1}')
  [ -n "$pid" ] || { scancel "$id"; fail "no batch shell of job $id in scontrol listpids"; }
  kill -USR1 "$pid" || fail "kill -USR1 $pid (the batch shell of job $id) failed"
  say "SIGUSR1 to the batch shell of job $id (pid $pid) as it starts, before the job step"
}

# requeue_job RUN_DIR STEPS MODE SBATCH OPTIONS...   (STEPS: a number, or auto:SECONDS for steps_lasting)
requeue_job() {
  local run_dir=$1 steps=$2 mode=$3
  shift 3
  if [[ $steps == auto:* ]]; then
    local seconds=${steps#auto:}
    steps=$(steps_lasting "$seconds") || exit 1
    say "calibrated: $steps steps last about $seconds s here"
  fi
  [ "${1:-}" = -- ] && shift
  rm -rf "$run_dir"
  export RUN_DIR=$run_dir
  export SCALETRAIN_ARGS="--train.epochs 1000 --train.max_steps $steps --train.log_every 32 --train.evaluate false"
  local id t0=$SECONDS
  id=$(sbatch --parsable "$@" "$ROOT/jobs/slurm/train_requeue.sbatch") || fail "sbatch $* failed"
  id=${id%%;*}
  say "job $id submitted: sbatch $* jobs/slurm/train_requeue.sbatch ($steps steps into $run_dir, stop: $mode)"
  if [ "$mode" = scancel ]; then
    local deadline=$((SECONDS + START_WAIT_S))
    until grep -q '"first_step"' "$run_dir/metrics.jsonl" 2>/dev/null; do
      [ "$SECONDS" -lt "$deadline" ] || { scancel "$id"; fail "job $id shows no progress in $run_dir/metrics.jsonl after $START_WAIT_S s"; }
      sleep 0.2
    done
    say "training is under way after $((SECONDS - t0)) s: scancel --batch --signal=USR1 $id"
    scancel --batch --signal=USR1 "$id" || fail "scancel --batch --signal=USR1 $id failed"
  elif [ "$mode" = before_step ]; then
    signal_before_step "$id" "$run_dir"
  fi
  local record
  wait_for_job "$id"
  local state exit_code restarts stdout
  state=$(job_field "$record" JobState)
  exit_code=$(job_field "$record" ExitCode)
  restarts=$(job_field "$record" Restarts)
  stdout=$(job_field "$record" StdOut)
  say "job $id ended after $((SECONDS - t0)) s: JobState=$state ExitCode=$exit_code Restarts=$restarts; its output ($stdout):"
  sed 's/^/  | /' "$stdout" 2>/dev/null || say "(no output file $stdout)"
  if [ "$state" != COMPLETED ] || [ "$exit_code" != 0:0 ]; then
    fail "job $id did not complete (JobState=$state, ExitCode=$exit_code)"
  fi
  [[ $restarts =~ ^[1-9][0-9]*$ ]] || fail "job $id was not requeued (Restarts=$restarts): it finished before a stop signal"
  local re
  for re in 'scaletrain: stopped by SIGUSR1 .*exit code 75' 'the step stopped \(exit 75.*requeueing job' \
            'restart [1-9][0-9]*: resuming .* from checkpoint step-[0-9]+' "training done after $restarts restart"; do
    grep -qE -- "$re" "$stdout" || fail "no line of the job's output matches: $re"
  done
  /usr/bin/python3 - "$run_dir" "$steps" <<'EOF' || fail "the run directory $run_dir is not whole (above)"
import json, os, sys
run_dir, steps = sys.argv[1], int(sys.argv[2])
errors = []
latest = os.path.join(run_dir, "checkpoints", "latest")
if not os.path.isfile(latest):
    errors.append("no checkpoints/latest")
run_json = os.path.join(run_dir, "run.json")
if not os.path.isfile(run_json):
    errors.append("no run.json")
else:
    final = json.load(open(run_json)).get("final_step")
    if final != steps:
        errors.append(f"run.json: final_step {final}, planned {steps}")
records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl")) if line.strip()]
resumed = [r for r in records if r.get("record") == "resumed_from"]
if not resumed:
    errors.append("metrics.jsonl has no resumed_from record")
elif not all(0 < r["start"]["step"] < steps for r in resumed):
    errors.append(f"a resume did not start inside the run: {[r['start'] for r in resumed]}")
for e in errors:
    print("run directory:", e)
print(f"run directory: {len(resumed)} resumed_from record(s), starts at steps",
      [r["start"]["step"] for r in resumed])
sys.exit(1 if errors else 0)
EOF
  say "OK: job $id stopped, requeued $restarts time(s), resumed and completed $steps steps"
}

# watchdog_step kill|stop LIMIT SRUN COMMAND...
watchdog_step() {
  local how=$1 limit=$2
  shift 2
  [ "${1:-}" = -- ] && shift
  local log
  log=$(mktemp)
  "$@" >"$log" 2>&1 &
  local step=$! deadline=$((SECONDS + START_WAIT_S)) victim=""
  # Rank 1's pid from scaletrain's rank table (rank, local, host, pid, device), once a progress line shows training.
  until grep -qE '^epoch [0-9]+/[0-9]+ \| step' "$log"; do
    if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$step" 2>/dev/null; then
      kill "$step" 2>/dev/null
      cat "$log"
      fail "the job step did not start training within $START_WAIT_S s"
    fi
    sleep 0.2
  done
  victim=$(awk '/^ *rank +local +host +pid/ {table = 1; next} table && $1 == 1 {print $4; exit}' "$log")
  if ! [[ $victim =~ ^[0-9]+$ ]] || [ "$(cat "/proc/$victim/comm" 2>/dev/null)" != scaletrain ]; then
    kill "$step"
    cat "$log"
    fail "no scaletrain process for rank 1 in the rank table (pid '$victim')"
  fi
  local signal=KILL
  [ "$how" = stop ] && signal=STOP
  say "training: kill -$signal rank 1 (pid $victim)"
  local t0
  t0=$(date +%s.%N)
  kill "-$signal" "$victim"
  deadline=$((SECONDS + limit))
  while kill -0 "$step" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
  local hung=0 rc=0
  if kill -0 "$step" 2>/dev/null; then
    hung=1
    kill -CONT "$victim" 2>/dev/null
    kill "$step"; sleep 1; kill "$step" 2>/dev/null  # srun: a second signal within a second ends the step
  fi
  wait "$step" || rc=$?
  local elapsed
  elapsed=$(/usr/bin/python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0")
  sed 's/^/  | /' "$log"
  [ "$hung" -eq 0 ] || fail "the job step still ran $limit s after rank 1 got SIG$signal"
  [ "$rc" -ne 0 ] || fail "the job step exited 0 after rank 1 got SIG$signal"
  if [ "$how" = stop ]; then
    grep -qE "watchdog: rank 0 \(host [^)]*\) has been in phase '[a-z_]+' of step [0-9]+" "$log" ||
      fail "no watchdog message of rank 0 in the job step's output"
    [ "$rc" -eq "$EXIT_WATCHDOG" ] || fail "the job step exited $rc, not $EXIT_WATCHDOG (scaletrain's watchdog)"
  fi
  rm -f "$log"
  say "OK: the job step ended (exit $rc) $elapsed s after rank 1 got SIG$signal"
}

action=${1:-}
dir=${2:-}
[ -n "$dir" ] || { say "usage: $0 requeue|watchdog DIR ..."; exit 2; }
shift 2
use_cluster "$dir"
case "$action" in
  requeue) requeue_job "$@" ;;
  watchdog) watchdog_step "$@" ;;
  *) say "unknown action '$action'"; exit 2 ;;
esac
