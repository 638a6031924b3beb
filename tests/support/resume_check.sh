#!/usr/bin/env bash
# Checkpoint and resume, end to end, against an uninterrupted run of the same configuration (every
# step's loss logged). Modes:
#   bitwise NP STOP        NP ranks stop at step STOP (mid-epoch), resume on NP ranks: the losses of
#                          every step must be bitwise identical to the uninterrupted run's.
#   ranks NP MP STOP RTOL  NP ranks stop at STOP, resume on MP ranks (same global batch, stage mode,
#                          augmentation and dropout on): losses within relative tolerance RTOL.
#   crash NP               checkpoints every 10 steps; the job is killed between two files of the
#                          step-30 checkpoint: `latest` must stay on step-20, and the resumed run
#                          must still match the uninterrupted one bitwise.
#   refuse NP              a resume with other identity keys is refused, naming each key and both
#                          values; run.resume_force overrides the forceable ones (and the run starts
#                          at the next epoch boundary, saying so); a model change cannot be forced.
#   stream NP MP           data.mode = stream: NP -> NP replays the reader bitwise; NP -> MP continues
#                          at the next epoch boundary and says so.
#   signal NP SIG STOP     the last rank alone sends itself SIG (USR1 or TERM) before step STOP: every
#                          rank stops after step STOP+1 with its checkpoint and exit code 75, without
#                          run.json; run.resume = auto then matches the uninterrupted run bitwise.
#   external NP SIG        the same with a real `kill -SIG` from outside, to the last rank's process,
#                          once the run is under way (1500 steps; the stop step is read back).
#   bf16_gemm NP STOP      bf16 with run.cpu_bf16_gemm = auto: a fresh run times both ways and says so
#                          (start-up line, run.json); for each way, a run stopped at STOP with it set,
#                          resumed with auto, takes the checkpoint's way and matches the uninterrupted
#                          run with that way bitwise, and a fresh run pinned to the uninterrupted
#                          run's run.json (run.cpu_bf16_gemm = FILE) takes its way and matches it
#                          bitwise (skipped, exit 77, where bf16 is emulated).
# EXTRA="flags" (environment) adds flags to every run; LR=... sets the learning rate (0.01); PYTHON=...
# the interpreter of compare_losses.py and compare_checkpoints.py (/usr/bin/python3). In bitwise mode the
# final checkpoints' model.h5 (parameters and buffers: BatchNorm's running statistics, which no loss shows
# with train.evaluate false) must be bitwise identical too, where PYTHON has h5py (the GPU kit's may not);
# REQUIRE_BUFFERS=1 insists on the comparison and fails a model without buffers, or with running
# statistics never updated.
# usage: resume_check.sh SCALETRAIN MPIRUN_PREFIX... -- OUTDIR MODE ARGS...
set -euo pipefail
st=$1; shift
mpirun=()
while [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
out=$1 mode=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
# 960 samples in global batches of 24 (1, 2 or 3 ranks): 40 steps per epoch, 60 steps in all, so a
# resume at step 25 or 30 lands mid-epoch and then crosses an epoch boundary.
# MODEL=... and BATCH=... before run or must_fail change the model and the global batch; SAMPLES=...
# the synthetic training samples (keep SAMPLES / BATCH = 40 for the epoch boundary above).
common=(--data.synthetic_samples "${SAMPLES:-960}" --train.epochs 2
        --optimizer.lr "${LR:-0.01}" --optimizer.schedule cosine --train.log_every 1
        --train.warmup_log_steps 0 --train.evaluate false --comm.bucket_mb 0.05 --run.threads 1
        --data.augment true)

# EXTRA="flags..." in the environment: added to every run (another optimizer, precision, ...).
read -r -a extra <<< "${EXTRA:-}"
common+=("${extra[@]}")
all=(--train.max_steps 60)
# run NAME NP [flags...]: a run that must succeed; its output goes to OUTDIR/NAME.log (appended).
run() {
  local name=$1 np=$2; shift 2
  "${mpirun[@]}" -np "$np" "$st" "${common[@]}" --model.name "${MODEL:-lenet_dropout}" --train.batch "${BATCH:-24}" \
    --run.dir "$out/$name" "$@" >> "$out/$name.log" 2>&1 || {
    cat "$out/$name.log"; echo "FAIL: run $name ($*) exited non-zero"; exit 1; }
}
# must_fail NAME NP MESSAGE [flags...]: a run that must fail on every rank with MESSAGE in its output.
must_fail() {
  local name=$1 np=$2 message=$3; shift 3
  if "${mpirun[@]}" -np "$np" "$st" "${common[@]}" --model.name "${MODEL:-lenet_dropout}" \
      --train.batch "${BATCH:-24}" --run.dir "$out/$name" "$@" > "$out/$name.fail.log" 2>&1; then
    cat "$out/$name.fail.log"; echo "FAIL: run $name ($*) succeeded; it must be refused"; exit 1
  fi
  grep -qF -- "$message" "$out/$name.fail.log" || {
    cat "$out/$name.fail.log"; echo "FAIL: run $name: no '$message' in its output"; exit 1; }
  echo "OK: refused with: $(grep -F -- "$message" "$out/$name.fail.log" | head -1)"
}
compare() {
  "${PYTHON:-/usr/bin/python3}" "$here/compare_losses.py" "$out/$1/metrics.jsonl" "$out/$2/metrics.jsonl" --steps "${steps:-60}" "${@:3}"
}
# stopped_run NAME NP [flags...]: a run that a stop signal must end with exit code 75 (run in the
# background with `&` when the caller signals it; the exit code goes to OUTDIR/NAME.rc).
stopped_run() {
  local name=$1 np=$2 rc=0; shift 2
  "${mpirun[@]}" -np "$np" "$st" "${common[@]}" --model.name "${MODEL:-lenet_dropout}" --train.batch "${BATCH:-24}" \
    --run.dir "$out/$name" "$@" >> "$out/$name.log" 2>&1 || rc=$?
  echo "$rc" > "$out/$name.rc"
}
# check_stopped NAME STEP: exit code 75, the checkpoint of STEP is `latest`, metrics.jsonl ends with a
# "stopped" record at STEP, and there is no run.json (the run has not finished).
check_stopped() {
  local name=$1 step=$2 rc
  rc=$(cat "$out/$name.rc")
  [ "$rc" -eq 75 ] || { cat "$out/$name.log"; echo "FAIL: run $name exited $rc, expected 75 (stopped, resumable)"; exit 1; }
  [ "$(cat "$out/$name/checkpoints/latest")" = "step-$step" ] || {
    ls -la "$out/$name/checkpoints"; echo "FAIL: latest is not step-$step"; exit 1; }
  tail -n 1 "$out/$name/metrics.jsonl" | grep -q "\"record\":\"stopped\".*\"step\":$step," || {
    tail -n 2 "$out/$name/metrics.jsonl"; echo "FAIL: metrics.jsonl does not end with a stopped record at step $step"; exit 1; }
  [ ! -e "$out/$name/run.json" ] || { echo "FAIL: a stopped run wrote run.json"; exit 1; }
  echo "OK: every rank stopped after step $step with exit code 75; latest = step-$step"
}
# rank_pid LOG RANK: the process id of RANK from the rank table at the top of LOG.
rank_pid() { awk -v r="$2" '/^  rank  local  host/ {t = 1; next} t && $1 == r {print $4; exit}' "$1"; }
# wait_for_lines FILE N SECONDS: until FILE has N lines.
wait_for_lines() {
  local deadline=$((SECONDS + $3))
  until [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "FAIL: $1 has fewer than $2 lines after $3 s"; exit 1; }
    sleep 0.05
  done
}
expect_line() {  # FILE TEXT
  grep -qF -- "$2" "$1" || { cat "$1"; echo "FAIL: no '$2' in $1"; exit 1; }
}

case $mode in
  bitwise)
    np=$1 stop=$2
    run full "$np" "${all[@]}"
    run resumed "$np" --train.max_steps "$stop" --run.timeline true
    run resumed "$np" --run.resume auto "${all[@]}" --run.timeline true
    expect_line "$out/resumed.log" "resume: $out/resumed/checkpoints/step-$stop: step $stop"
    compare full resumed
    if "${PYTHON:-/usr/bin/python3}" -c 'import h5py' 2>/dev/null || [ -n "${REQUIRE_BUFFERS:-}" ]; then
      "${PYTHON:-/usr/bin/python3}" "$here/compare_checkpoints.py" "$out/full" "$out/resumed" \
        ${REQUIRE_BUFFERS:+--require-buffers}
    else
      echo "note: final checkpoints not compared (${PYTHON:-/usr/bin/python3} has no h5py); losses only"
    fi
    # The timeline goes on across the resume: both runs' steps, and the resumed_from marker between.
    "${PYTHON:-/usr/bin/python3}" - "$out/resumed/timeline.json" "$stop" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
stop = int(sys.argv[2])
# Only the events of a step (a device's copy track also has events without one).
stepped = [e for e in ev if e.get("ph") == "X" and "step" in e.get("args", {})]
steps = {e["args"]["step"] for e in stepped}
marks = [e for e in ev if e.get("name") == "resumed_from"]
before = max(e["ts"] + e["dur"] for e in stepped if e["args"]["step"] < stop)
after = min(e["ts"] for e in stepped if e["args"]["step"] >= stop)
ok = len(marks) == 1 and min(steps) == 0 and max(steps) == 59 and before <= marks[0]["ts"] <= after
print(f"timeline: steps {min(steps)}..{max(steps)}, {len(marks)} resumed_from marker(s) at {marks[0]['ts'] if marks else None}"
      f" between {before:.0f} and {after:.0f} us")
sys.exit(0 if ok else 1)
PY
    ;;
  ranks)
    np=$1 mp=$2 stop=$3 rtol=$4
    run full "$np" "${all[@]}"
    run resumed "$np" --train.max_steps "$stop"
    run resumed "$mp" --run.resume auto "${all[@]}"
    expect_line "$out/resumed.log" "written by $np rank(s), now $mp"
    compare full resumed --rtol "$rtol"
    ;;
  crash)
    np=$1
    run full "$np" "${all[@]}"
    if "${mpirun[@]}" -np "$np" "$st" "${common[@]}" "${all[@]}" --model.name lenet_dropout --train.batch 24 --run.dir "$out/crashed" --run.checkpoint_steps 10 \
        --testing.inject_checkpoint_crash_step 30 > "$out/crashed.log" 2>&1; then
      cat "$out/crashed.log"; echo "FAIL: the run with a crash injected at step 30 exited 0"; exit 1
    fi
    [ "$(cat "$out/crashed/checkpoints/latest")" = step-20 ] || {
      ls -la "$out/crashed/checkpoints"; echo "FAIL: latest is not step-20 after the crash"; exit 1; }
    if [ ! -d "$out/crashed/checkpoints/.step-30.tmp" ] || [ -e "$out/crashed/checkpoints/step-30" ]; then
      ls -la "$out/crashed/checkpoints"; echo "FAIL: expected a torn .step-30.tmp and no step-30"; exit 1
    fi
    echo "OK: killed while writing step-30: latest still names step-20, step-30 only exists as .step-30.tmp"
    run crashed "$np" --run.resume auto --run.checkpoint_steps 10 "${all[@]}"
    expect_line "$out/crashed.log" "resume: $out/crashed/checkpoints/step-20: step 20"
    [ ! -e "$out/crashed/checkpoints/.step-30.tmp" ] || { echo "FAIL: the torn .step-30.tmp was not cleaned up"; exit 1; }
    kept=$(cd "$out/crashed/checkpoints" && echo step-*)
    [ "$kept" = "step-40 step-50 step-60" ] || { echo "FAIL: kept $kept, expected the newest 3: step-40 step-50 step-60"; exit 1; }
    echo "OK: the newest 3 checkpoints kept: $kept"
    compare full crashed
    ;;
  refuse)
    np=$1
    run first "$np" --train.max_steps 30
    BATCH=48 must_fail first "$np" "train.batch: checkpoint 24, this run 48" --run.resume auto --train.precision bf16 \
      "${all[@]}"
    expect_line "$out/first.fail.log" "train.precision: checkpoint fp32, this run bf16"
    MODEL=lenet must_fail first "$np" "model.name: checkpoint lenet_dropout, this run lenet" --run.resume auto \
      --run.resume_force true
    BATCH=48 run first "$np" --run.resume auto --run.resume_force true "${all[@]}"
    expect_line "$out/first.log" "continuing at the start of epoch 2"
    expect_line "$out/first.log" "forced: train.batch: checkpoint 24, this run 48"
    ;;
  stream)
    np=$1 mp=$2
    common+=(--data.mode stream)
    run full "$np" "${all[@]}"
    run resumed "$np" --train.max_steps 25
    run resumed "$np" --run.resume auto "${all[@]}"
    compare full resumed
    run other "$np" --train.max_steps 25
    run other "$mp" --run.resume auto "${all[@]}"
    expect_line "$out/other.log" "continuing at the start of epoch 2, not at step 25 of epoch 1: data.mode = stream"
    ;;
  signal)
    np=$1 sig=$2 stop=$3
    after=$((stop + 1))
    run full "$np" "${all[@]}"
    stopped_run stopped "$np" "${all[@]}" --testing.inject_signal "$sig" --testing.inject_signal_rank $((np - 1)) \
      --testing.inject_signal_step "$stop"
    check_stopped stopped "$after"
    expect_line "$out/stopped.log" "scaletrain: stopped by SIG$sig (received by rank $((np - 1))) after step $after: checkpoint $out/stopped/checkpoints/step-$after written; exit code 75"
    run stopped "$np" --run.resume auto "${all[@]}"
    expect_line "$out/stopped.log" "resume: $out/stopped/checkpoints/step-$after: step $after"
    compare full stopped
    ;;
  external)
    np=$1 sig=$2 steps=1500
    for i in "${!common[@]}"; do [ "${common[$i]}" = --train.epochs ] && common[i + 1]=40; done
    all=(--train.max_steps "$steps")
    run full "$np" "${all[@]}"
    stopped_run stopped "$np" "${all[@]}" &
    job=$!
    wait_for_lines "$out/stopped/metrics.jsonl" 100 120
    pid=$(rank_pid "$out/stopped.log" $((np - 1)))
    [ -n "$pid" ] || { cat "$out/stopped.log"; echo "FAIL: no pid of rank $((np - 1)) in the rank table"; exit 1; }
    kill -"$sig" "$pid"
    echo "sent SIG$sig to rank $((np - 1)) (pid $pid) at line $(wc -l < "$out/stopped/metrics.jsonl") of metrics.jsonl"
    wait "$job"
    at=$(tail -n 1 "$out/stopped/metrics.jsonl" | grep -o '"step":[0-9]*' | cut -d: -f2)
    if [ -z "$at" ] || [ "$at" -ge "$steps" ]; then cat "$out/stopped.log"; echo "FAIL: the run was not stopped"; exit 1; fi
    check_stopped stopped "$at"
    expect_line "$out/stopped.log" "scaletrain: stopped by SIG$sig (received by rank $((np - 1))) after step $at"
    run stopped "$np" --run.resume auto "${all[@]}"
    compare full stopped
    ;;
  bf16_gemm)
    np=$1 stop=$2
    common+=(--train.precision bf16)
    run timed "$np" --train.max_steps 2 --run.cpu_bf16_gemm auto
    if grep -q "bf16 emulated" "$out/timed.log"; then echo "skipped: bf16 is emulated on this CPU: no choice"; exit 77; fi
    expect_line "$out/timed.log" "bf16 GEMMs: run.cpu_bf16_gemm = auto -> "
    expect_line "$out/timed.log" " per step, forward and backward; "
    grep -F "bf16 GEMMs:" "$out/timed.log"
    "${PYTHON:-/usr/bin/python3}" - "$out/timed/run.json" "$out/timed.log" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["operators"]["cpu_bf16_gemm"]
line = next(l for l in open(sys.argv[2]) if l.startswith("bf16 GEMMs:"))
ok = (c["source"] == "timed" and c["setting"] == "auto" and f"-> {c['compute']} (" in line and c["shapes"]
      and c["bf16_ms"] > 0 and c["f32_ms"] > 0 and (c["compute"] == "f32") == (c["f32_ms"] < c["bf16_ms"]))
print("run.json operators.cpu_bf16_gemm:", {k: v for k, v in c.items() if k != "shapes"}, len(c["shapes"]), "shapes")
sys.exit(0 if ok else 1)
PY
    for way in f32 bf16; do
      run "full_$way" "$np" "${all[@]}" --run.cpu_bf16_gemm "$way"
      run "resumed_$way" "$np" --train.max_steps "$stop" --run.cpu_bf16_gemm "$way"
      "${PYTHON:-/usr/bin/python3}" -c 'import h5py, sys; v = h5py.File(sys.argv[1])["/"].attrs["cpu_bf16_gemm"]
v = v.decode() if isinstance(v, bytes) else v
print("trainer.h5 cpu_bf16_gemm:", v); sys.exit(v != sys.argv[2])' \
        "$out/resumed_$way/checkpoints/step-$stop/trainer.h5" "$way"
      run "resumed_$way" "$np" --run.resume auto "${all[@]}" --run.cpu_bf16_gemm auto
      expect_line "$out/resumed_$way.log" "bf16 GEMMs: run.cpu_bf16_gemm = auto -> $way (as the resumed checkpoint ran"
      compare "full_$way" "resumed_$way"
      # A fresh run pinned to the full run's run.json computes as it did.
      run "pinned_$way" "$np" "${all[@]}" --run.cpu_bf16_gemm "$out/full_$way/run.json"
      expect_line "$out/pinned_$way.log" "bf16 GEMMs: run.cpu_bf16_gemm = $out/full_$way/run.json -> $way (as that run computed)"
      compare "full_$way" "pinned_$way"
    done
    # The two ways round differently, so that the comparisons above could fail.
    if compare full_f32 full_bf16 > /dev/null; then echo "FAIL: the f32 and bf16 GEMM runs are identical"; exit 1; fi
    ;;
  *) echo "resume_check.sh: unknown mode $mode" >&2; exit 2 ;;
esac
echo "OK: resume $mode"
