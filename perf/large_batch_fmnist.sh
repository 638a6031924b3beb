#!/usr/bin/env bash
# resnet20 on Fashion-MNIST at a global batch of 4,096 with LARS (gradient accumulation: 2 ranks x 16
# micro-batches of 128), beside the batch-128 SGD recipe of jobs/configs/resnet20_fmnist.toml, for the
# same number of epochs on this machine's 2 ranks; prints each run's final test accuracy and time.
# The LARS recipe follows MLPerf's ResNet-50 reference: trust coefficient 0.001, linear warm-up, poly
# decay (power 2) to 1e-4, biases and BatchNorm parameters without trust ratio or weight decay.
# usage: perf/large_batch_fmnist.sh [EPOCHS (20)] [OUT (runs/large_batch)]; SCALETRAIN_BUILD as jobs/local.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-20}
out=${2:-runs/large_batch}
build=${SCALETRAIN_BUILD:-build/cpu}
data=data/fashion-mnist.h5
if [ ! -f "$data" ]; then
  mkdir -p data
  "$build/data-tools/st-pack-idx" --dir /usr/share/datasets/fashion-mnist --classes fashion-mnist -o "$data"
fi
mkdir -p "$out"
mpi=(mpirun -np 2 -q --bind-to core --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
common=(--config jobs/configs/resnet20_fmnist.toml --data.path "$data" --train.epochs "$epochs" --train.log_every 50)
run() {
  local name=$1; shift
  rm -rf "${out:?}/$name"
  "${mpi[@]}" "$build/src/apps/scaletrain" "${common[@]}" --run.dir "$out/$name" "$@" > "$out/$name.log" 2>&1
}
run sgd_b128
run lars_b4096 --train.batch 4096 --train.accumulate_steps 16 --optimizer.name lars --optimizer.lr "${LARS_LR:-8}" \
  --optimizer.weight_decay 1e-4 --optimizer.schedule poly --optimizer.warmup_epochs 2 --optimizer.min_lr 1e-4
/usr/bin/python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
print(f"{'run':<12} {'batch':>6} {'updates':>8} {'final test acc':>15} {'best':>7} {'seconds':>8} {'samples/s':>10}")
for name in ("sgd_b128", "lars_b4096"):
    r = json.load(open(os.path.join(out, name, "run.json")))
    best = max(e["eval_accuracy"] for e in r["epochs"]) if r["epochs"] else float("nan")
    print(f"{name:<12} {r['global_batch']:>6} {r['final_step']:>8} {100 * r['final_eval_accuracy']:>14.2f}% "
          f"{100 * best:>6.2f}% {r['seconds']:>8.0f} {r['samples_per_s']:>10.0f}")
PY
