#!/usr/bin/env bash
# cuda against cpu: trains the same short 1-rank run on run.device = cpu and run.device = cuda and
# requires the per-step losses to agree within a tolerance (cuDNN/cuBLASLt and oneDNN sum in
# different orders; bf16 also rounds at different points). Without a GPU the cuda run stops at
# device selection, and the script prints the GPU tests' skip message (tests/cuda.cmake).
# usage: cuda_vs_cpu_losses.sh SCALETRAIN MPIRUN_PREFIX... -- OUTDIR MODEL PRECISION RTOL [extra flags...]
set -euo pipefail
st=$1; shift
mpirun=()
while [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
out=$1 model=$2 precision=$3 rtol=$4; shift 4
extra=("$@")
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
# 50 logged steps of 32 samples: every step's loss lands in metrics.jsonl.
common=(--model.name "$model" --data.synthetic_samples 2048 --train.batch 32 --train.epochs 1
        --train.max_steps 50 --optimizer.lr 0.002 --train.log_every 1 --train.warmup_log_steps 0
        --train.evaluate false --train.precision "$precision" --comm.dtype "$precision" --run.threads 1)
run() {
  local name=$1; shift
  "${mpirun[@]}" -np 1 "$st" "${common[@]}" --run.dir "$out/$name" "$@" "${extra[@]}" > "$out/$name.log" 2>&1
}
if ! run cuda --run.device cuda; then
  if grep -q "sees no CUDA device" "$out/cuda.log"; then
    echo "no CUDA device on this machine (cudaGetDeviceCount): $model $precision on cuda not run"
    exit 0
  fi
  cat "$out/cuda.log"; echo "FAIL: the cuda run exited non-zero"; exit 1
fi
run cpu --run.device cpu || { cat "$out/cpu.log"; echo "FAIL: the cpu run exited non-zero"; exit 1; }
awk '/^operators/ {p = 1; print; next} p && /^  / {print; next} {p = 0}' "$out/cuda.log"
/usr/bin/python3 "$here/compare_losses.py" "$out/cpu/metrics.jsonl" "$out/cuda/metrics.jsonl" --steps 50 --rtol "$rtol"
