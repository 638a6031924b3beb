#!/usr/bin/env bash
# The steps of the Slurm tests (tests/slurm.cmake) on a test cluster of scripts/slurm-test-cluster.sh:
#   slurm_test.sh start DIR [cluster options]   starts the cluster in DIR
#   slurm_test.sh stop DIR                      stops it
#   slurm_test.sh job DIR -- COMMAND...         runs COMMAND (an sbatch, with or without -W), waits for the job
#                                               it submitted, shows the job's output; fails unless it completed
#   slurm_test.sh job DIR --readme FILE         the same with the command after `<!-- test: slurm command -->`
#   slurm_test.sh run DIR -- COMMAND...         runs COMMAND (a check) with the cluster's SLURM_CONF
# When the cluster cannot start here (no Slurm, not root), every step prints a SKIPPED line and exits 0, so
# that ctest reports it skipped; under CI=true it fails instead (CI must run these tests). Sourced, it only defines
# its functions (tests/support/requeue_test.sh).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
readonly ROOT CLUSTER=$ROOT/scripts/slurm-test-cluster.sh
readonly EXIT_CANNOT_START=3
readonly JOB_WAIT_S=${SLURM_TEST_JOB_WAIT_S:-240}  # below the tests' TIMEOUT, so that a pending job is reported
readonly TERMINAL_STATES=" COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY PREEMPTED BOOT_FAIL DEADLINE "

say() { printf 'slurm_test: %s\n' "$*"; }

# unavailable REASON: SKIPPED outside CI (exit 0), FAILED under CI=true (exit 1).
unavailable() {
  if [ "${CI:-}" = true ]; then
    say "FAILED: the Slurm test cluster is not available under CI=true: $*"
    exit 1
  fi
  say "SKIPPED: the Slurm test cluster is not available: $*"
  exit 0
}

# use_cluster DIR: exports the cluster's SLURM_CONF, or stops the test as unavailable.
use_cluster() {
  local dir=$1
  if [ ! -f "$dir/cluster.env" ]; then
    local reason="it was not started (run the slurm_cluster_*_start test first)"
    [ -f "$dir/unavailable" ] && reason=$(cat "$dir/unavailable")
    unavailable "$reason"
  fi
  export SLURM_CONF=$dir/slurm.conf
}

start_cluster() {
  local rc=0
  bash "$CLUSTER" start "$@" || rc=$?
  [ "$rc" -eq "$EXIT_CANNOT_START" ] && unavailable "$(cat "$1/unavailable" 2>/dev/null)"
  return "$rc"
}

# job_field RECORD KEY: the value of KEY=... in one `scontrol show job -o` line.
job_field() { grep -o "\b$2=[^ ]*" <<<"$1" | head -n 1 | cut -d= -f2-; }

# wait_for_job ID: waits until the job has ended; sets record (its scontrol line), or fails.
wait_for_job() {
  local id=$1 deadline=$((SECONDS + JOB_WAIT_S)) state
  while :; do
    record=$(scontrol show job -o "$id" 2>&1) || { say "FAILED: job $id vanished before its end was seen: $record"; exit 1; }
    state=$(job_field "$record" JobState)
    [[ $TERMINAL_STATES == *" $state "* ]] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "FAILED: job $id is still $state (Reason=$(job_field "$record" Reason)) after $JOB_WAIT_S s; cancelling it"
      scancel "$id"
      exit 1
    fi
    sleep 0.5
  done
}

# readme_command FILE: the line after `<!-- test: slurm command -->` (skipping the code fence).
readme_command() {
  awk '/<!-- test: slurm command -->/{getline; while ($0 ~ /^```/) getline; print; exit}' "$1"
}

run_job() {
  local cmd=("$@") out rc=0
  if [ "${1:-}" = --readme ]; then
    cmd=(bash -c "$(readme_command "$2")")
    [ -n "${cmd[2]}" ] || { say "FAILED: no command after '<!-- test: slurm command -->' in $2"; exit 1; }
  fi
  say "submitting: ${cmd[*]}"
  out=$("${cmd[@]}" 2>&1) || rc=$?
  printf '%s\n' "$out"
  local id
  id=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' <<<"$out" | head -n 1)
  [ -n "$id" ] || { say "FAILED: no job was submitted (exit $rc)"; exit 1; }
  local record
  wait_for_job "$id"
  local state exit_code stdout
  state=$(job_field "$record" JobState)
  exit_code=$(job_field "$record" ExitCode)
  stdout=$(job_field "$record" StdOut)
  say "job $id ended: JobState=$state ExitCode=$exit_code; its output ($stdout):"
  sed 's/^/  | /' "$stdout" 2>/dev/null || say "(no output file $stdout)"
  if [ "$state" != COMPLETED ] || [ "$exit_code" != 0:0 ] || [ "$rc" -ne 0 ]; then
    say "job $id FAILED (submission exit $rc, JobState=$state, ExitCode=$exit_code)"
    exit 1
  fi
  say "job $id completed"
}

main() {
  local action=${1:-} dir=${2:-}
  [ -n "$dir" ] || { say "usage: $0 start|stop|job|run DIR ..."; exit 2; }
  shift 2
  case "$action" in
    start) start_cluster "$dir" "$@" ;;
    stop) bash "$CLUSTER" stop "$dir" ;;
    job) use_cluster "$dir"; [ "${1:-}" = -- ] && shift; run_job "$@" ;;
    run) use_cluster "$dir"; [ "${1:-}" = -- ] && shift; "$@" ;;
    *) say "unknown action '$action'"; exit 2 ;;
  esac
}

# Run, not sourced (tests/support/requeue_test.sh sources it for its functions).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
