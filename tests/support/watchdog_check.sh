#!/usr/bin/env bash
# The hang watchdog end to end: NP ranks train (run.watchdog_s = 5); once they are under way, the
# last rank is stopped with SIGSTOP. The ranks still running wait for it in a collective until
# their watchdog ends the job with MPI_Abort: the launcher must return non-zero in under 60 s, with
# the watchdog's message naming the rank, the phase, the step and the wait. Extra scaletrain flags
# (a device, a transport) follow NP.
# usage: watchdog_check.sh SCALETRAIN MPIRUN_PREFIX... -- OUTDIR NP [scaletrain flags...]
set -euo pipefail
st=$1; shift
mpirun=()
while [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
out=$1 np=$2
shift 2
extra=("$@")
rm -rf "$out"
mkdir -p "$out"
log=$out/run.log
"${mpirun[@]}" -np "$np" "$st" --data.synthetic_samples 960 --train.batch 24 --train.epochs 1000 \
  --train.log_every 10 --train.evaluate false --run.threads 1 --run.watchdog_s 5 "${extra[@]}" > "$log" 2>&1 &
job=$!
deadline=$((SECONDS + 120))
until grep -q '^epoch 1/1000 | step 20/' "$log"; do
  if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$job" 2> /dev/null; then
    cat "$log"; echo "FAIL: the run did not get under way"; kill "$job" 2> /dev/null; exit 1
  fi
  sleep 0.05
done
pid=$(awk -v r=$((np - 1)) '/^  rank  local  host/ {t = 1; next} t && $1 == r {print $4; exit}' "$log")
[ -n "$pid" ] || { cat "$log"; echo "FAIL: no pid of rank $((np - 1)) in the rank table"; kill "$job"; exit 1; }
kill -STOP "$pid"
start=$SECONDS
echo "stopped rank $((np - 1)) (pid $pid) with SIGSTOP"
rc=0
while kill -0 "$job" 2> /dev/null && [ $((SECONDS - start)) -lt 90 ]; do sleep 0.2; done
if kill -0 "$job" 2> /dev/null; then
  kill -KILL "$pid" 2> /dev/null || true
  cat "$log"; echo "FAIL: the job still runs 90 s after a rank was stopped"; exit 1
fi
wait "$job" || rc=$?
took=$((SECONDS - start))
kill -KILL "$pid" 2> /dev/null || true  # never leave a stopped process behind
cat "$log"
[ "$rc" -ne 0 ] || { echo "FAIL: the job exited 0"; exit 1; }
[ "$took" -lt 60 ] || { echo "FAIL: the job took $took s to end, not under 60"; exit 1; }
grep -qE "watchdog: rank [0-9]+ \(host [^)]+\) has been in phase '[a-z_]+' of step [0-9]+ for ([5-9]|1[0-9])\.[0-9] s, longer than run.watchdog_s = 5 s" "$log" || {
  echo "FAIL: no watchdog message naming rank, phase, step and wait"; exit 1; }
echo "OK: the job ended $took s after rank $((np - 1)) was stopped, exit $rc, with the watchdog's message"
