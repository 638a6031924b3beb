#!/usr/bin/env bash
# Trains a zoo model on Fashion-MNIST on this machine with 2 MPI ranks (one per core), packing the
# data set from Debian's dataset-fashion-mnist first if needed.
# usage: jobs/local/train_fmnist.sh [lenet|fmnist_sepcnn|mlp] [extra scaletrain options...]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-lenet}
shift || true
build=${SCALETRAIN_BUILD:-build/cpu}
ranks=${SCALETRAIN_RANKS:-2}
data=data/fashion-mnist.h5
if [ ! -f "$data" ]; then
  mkdir -p data
  "$build/data-tools/st-pack-idx" --dir /usr/share/datasets/fashion-mnist --classes fashion-mnist -o "$data"
fi
case "$model" in
  lenet) config=jobs/configs/lenet_fmnist.toml ;;
  fmnist_sepcnn) config=jobs/configs/fmnist_sepcnn.toml ;;
  *) config=jobs/configs/lenet_fmnist.toml ;;
esac
run_dir=runs/fmnist-$model-$(date +%Y%m%d-%H%M%S)
mpi_flags=(-q --bind-to core --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
exec mpirun -np "$ranks" "${mpi_flags[@]}" "$build/src/apps/scaletrain" --config "$config" \
  --model.name "$model" --data.path "$data" --run.dir "$run_dir" "$@"
