#!/usr/bin/env bash
# Ctrl-C on a scaletrain started without a launcher (one process, as a user tries it first):
# - one SIGINT: the process says so, stops after the next step with its checkpoint, prints
#   "stopped by SIGINT" and exits 75; run.resume = auto then finishes the run;
# - a second SIGINT soon after the first ends the process at once (killed by SIGINT, exit 130),
#   without waiting for the step. The steps are slowed down on the simulated device so that the
#   second signal comes before the step ends; a run whose step ended in between is tried again.
# usage: ctrl_c_check.sh SCALETRAIN OUTDIR
set -uo pipefail
st=$1 out=$2
rm -rf "$out"
mkdir -p "$out"
common=(--train.epochs 100 --train.log_every 1 --train.evaluate false --data.synthetic_samples 2048 --run.threads 1)

# wait_for PATTERN FILE SECONDS
wait_for() {
  local deadline=$((SECONDS + $3))
  until grep -q -- "$1" "$2" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { cat "$2"; echo "FAIL: no '$1' in $2 after $3 s"; exit 1; }
    sleep 0.05
  done
}

# One Ctrl-C.
"$st" "${common[@]}" --run.dir "$out/once" > "$out/once.log" 2>&1 &
pid=$!
wait_for "^epoch 1/100 | step 3/" "$out/once.log" 60
kill -INT "$pid"
wait "$pid"
rc=$?
cat "$out/once.log"
[ "$rc" -eq 75 ] || { echo "FAIL: exit $rc after one Ctrl-C, expected 75"; exit 1; }
grep -q "Ctrl-C: stopping after the next step" "$out/once.log" || { echo "FAIL: no Ctrl-C notice"; exit 1; }
grep -q "stopped by SIGINT .*checkpoint .*written; exit code 75" "$out/once.log" || { echo "FAIL: no stop line"; exit 1; }
step=$(sed -n 's/.*stopped by SIGINT (received by rank 0) after step \([0-9]*\):.*/\1/p' "$out/once.log")
[ "$(cat "$out/once/checkpoints/latest")" = "step-$step" ] || { echo "FAIL: latest is not step-$step"; exit 1; }
"$st" "${common[@]}" --train.max_steps $((step + 3)) --run.dir "$out/once" --run.resume auto > "$out/resumed.log" 2>&1 || {
  cat "$out/resumed.log"; echo "FAIL: the resumed run failed"; exit 1; }
grep -q "resume: .*step-$step" "$out/resumed.log" || { cat "$out/resumed.log"; echo "FAIL: did not resume step $step"; exit 1; }
echo "OK: one Ctrl-C: checkpoint step-$step, exit 75; run.resume = auto continued from it"

# Two Ctrl-C.
for attempt in 1 2 3; do
  log=$out/twice-$attempt.log
  "$st" "${common[@]}" --run.device sim --testing.sim_delay_us 20000 --run.dir "$out/twice-$attempt" > "$log" 2>&1 &
  pid=$!
  wait_for "^epoch 1/100 | step 2/" "$log" 120
  kill -INT "$pid"
  sleep 0.02
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  if [ "$rc" -eq 130 ]; then
    grep -q "stopped by SIGINT" "$log" && { cat "$log"; echo "FAIL: the second Ctrl-C did not end it at once"; exit 1; }
    echo "OK: a second Ctrl-C ended the process at once (exit 130, attempt $attempt)"
    exit 0
  fi
  cat "$log"
  [ "$rc" -eq 75 ] || { echo "FAIL: exit $rc after two Ctrl-C, expected 130"; exit 1; }
  echo "note: the step ended between the two signals (exit 75); trying again"
done
echo "FAIL: three tries, and each step ended between the two signals"
exit 1
