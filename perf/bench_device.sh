#!/usr/bin/env bash
# Training throughput of two builds side by side, and the simulated device's overhead: runs the
# parent build's scaletrain (OLD) and this build's (NEW) alternately on the cpu device, then NEW on
# the sim device, REPEATS times each, and prints the best samples/s of each with the ratios
# NEW/OLD (the >= 97% check of a refactor) and sim/cpu. 2 ranks x 1 thread, bound to cores.
# usage: perf/bench_device.sh OLD_SCALETRAIN NEW_SCALETRAIN [REPEATS]
set -euo pipefail
old=$1 new=$2 reps=${3:-3}
mpirun=(mpirun -np 2 --bind-to core)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# model, global batch, steps, log interval, warm-up steps, learning rate (fmnist_sepcnn diverges on the
# synthetic data at the default 0.05)
configs=("lenet 256 300 25 50 0.05" "fmnist_sepcnn 128 40 10 10 0.005")
rate() {  # binary, extra flags... -> samples/s of the run (warm-up excluded)
  local bin=$1; shift
  "${mpirun[@]}" "$bin" --data.synthetic_samples 16384 --train.evaluate false --train.epochs 100 \
    --run.dir "$(mktemp -d -p "$tmp")" "$@" 2>&1 | sed -n 's/.*| mean \([0-9.]*\) samples\/s.*/\1/p' | tail -1
}
best() { printf '%s\n' "$@" | sort -g | tail -1; }
printf '%-14s %14s %14s %14s %10s %10s\n' model "old cpu" "new cpu" "new sim" "new/old" "sim/cpu"
printf '%-14s %14s %14s %14s %10s %10s\n' "" "samples/s" "samples/s" "samples/s" "" ""
for c in "${configs[@]}"; do
  read -r model batch steps every warm lr <<<"$c"
  flags=(--model.name "$model" --train.batch "$batch" --train.max_steps "$steps" --train.log_every "$every"
         --train.warmup_log_steps "$warm" --optimizer.lr "$lr")
  o=() n=() s=()
  for ((i = 0; i < reps; ++i)); do
    o+=("$(rate "$old" "${flags[@]}")")
    n+=("$(rate "$new" "${flags[@]}" --run.device cpu)")
    s+=("$(rate "$new" "${flags[@]}" --run.device sim)")
  done
  bo=$(best "${o[@]}") bn=$(best "${n[@]}") bs=$(best "${s[@]}")
  awk -v m="$model" -v o="$bo" -v n="$bn" -v s="$bs" \
    'BEGIN { printf "%-14s %14.0f %14.0f %14.0f %9.1f%% %9.1f%%\n", m, o, n, s, 100 * n / o, 100 * s / n }'
  echo "#   runs: old ${o[*]} | new cpu ${n[*]} | new sim ${s[*]}"
done
