#!/usr/bin/env bash
# cpu against sim: trains the same short run on run.device = cpu and on the simulated device (and,
# with --delays US, on the simulated device with random delays before every op on every stream) and
# requires bitwise-identical per-step losses (in bf16 the sim run takes the bf16 GEMM way the cpu run
# chose). With --expect-mismatch it instead requires that every run completes and the sim run's
# losses differ: used with testing.sim_ignore_events to show that a missing wait is caught.
# The cpu run of a model and rank count is the same for every sim variant: --cpu-only makes it alone
# (OUTDIR/cpu, a test fixture), --cpu-run DIR compares against that run instead of making one.
# usage: device_equivalence.sh SCALETRAIN MPIRUN_PREFIX... -- OUTDIR MODEL RANKS [--delays US]
#                              [--expect-mismatch] [--precision fp32|bf16|fp16] [--cpu-only | --cpu-run DIR]
#                              [-- extra sim flags...]
set -euo pipefail
st=$1; shift
mpirun=()
while [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
out=$1 model=$2 ranks=$3; shift 3
delays=0 expect=match cpu_only=false cpu_run=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --delays) delays=$2; shift 2 ;;
    --expect-mismatch) expect=mismatch; shift ;;
    --precision) precision=$2; shift 2 ;;
    --cpu-only) cpu_only=true; shift ;;
    --cpu-run) cpu_run=$2; shift 2 ;;
    *) echo "device_equivalence.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] && shift
extra=("$@")
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
# 50 logged steps of 16 samples per rank: every step's loss lands in metrics.jsonl.
common=(--model.name "$model" --data.synthetic_samples 2048 --train.batch $((16 * ranks)) --train.epochs 1
        --train.max_steps 50 --optimizer.lr 0.002 --train.log_every 1 --train.warmup_log_steps 0 --train.evaluate false
        --comm.bucket_mb 0.05 --run.threads 1 --data.augment true)
# --precision P: both runs compute in P with P gradients on the wire.
[ -n "${precision:-}" ] && common+=(--train.precision "$precision" --comm.dtype "$precision")
run() {
  local name=$1; shift
  "${mpirun[@]}" -np "$ranks" "$st" "${common[@]}" --run.dir "$out/$name" "$@" > "$out/$name.log" 2>&1 || {
    cat "$out/$name.log"; echo "FAIL: run $name exited non-zero"; exit 1; }
}
if [ -z "$cpu_run" ]; then
  run cpu --run.device cpu
  cpu_run=$out/cpu
  if $cpu_only; then echo "OK: the cpu run is in $cpu_run"; exit 0; fi
fi
for f in metrics.jsonl run.json; do
  [ -s "$cpu_run/$f" ] || { echo "FAIL: the cpu run $cpu_run has no $f (its fixture failed?)"; exit 1; }
done
# bf16 where the CPU can run its GEMMs two ways: the cpu run times them (run.cpu_bf16_gemm = auto) and the sim
# run is given the way the cpu run's run.json records, as a user reproduces a run bit for bit.
gemm=$(/usr/bin/python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["operators"].get("cpu_bf16_gemm")
print(c["compute"] if c else "")' "$cpu_run/run.json")
[ -z "$gemm" ] || { echo "cpu run: bf16 GEMMs $gemm; the sim run takes the same"; extra+=(--run.cpu_bf16_gemm "$gemm"); }
run sim --run.device sim --testing.sim_delay_us "$delays" "${extra[@]}"
if [ "$expect" = match ]; then
  /usr/bin/python3 "$here/compare_losses.py" "$cpu_run/metrics.jsonl" "$out/sim/metrics.jsonl" --steps 50
else
  if /usr/bin/python3 "$here/compare_losses.py" "$cpu_run/metrics.jsonl" "$out/sim/metrics.jsonl" --steps 50; then
    echo "FAIL: the losses match although ${extra[*]} removed a wait: the tests would not catch it"
    exit 1
  fi
  echo "OK: with ${extra[*]} the sim run diverges from cpu, as it must"
fi
