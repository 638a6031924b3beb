#!/usr/bin/env bash
# Trains a zoo model on Fashion-MNIST on this machine with 2 MPI ranks (one per core), packing the
# data set from Debian's dataset-fashion-mnist first if needed.
# usage: jobs/local/train_fmnist.sh [lenet|fmnist_sepcnn|resnet20|mobilenet_v2|vit|mlp] [extra scaletrain options...]
# In the source tree it works in the repository root with the programs of SCALETRAIN_BUILD (build/cpu); installed
# (cmake --install) it takes the installed programs and configurations and works in the current directory.
# Either way the data set goes to data/fashion-mnist.h5 and the run to runs/fmnist-<model>-<time>.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../slurm source=common.sh
source "$root/jobs/slurm/common.sh"
st_layout "$root"
model=${1:-lenet}
shift || true
if [ "$ST_INSTALLED" = 1 ]; then
  scaletrain=$ST_PROGRAMS/scaletrain
  pack_idx=$ST_PROGRAMS/st-pack-idx
  configs=$root/jobs/configs
else
  cd "$root"
  build=${SCALETRAIN_BUILD:-build/cpu}
  scaletrain=$build/src/apps/scaletrain
  pack_idx=$build/data-tools/st-pack-idx
  configs=jobs/configs
fi
ranks=${SCALETRAIN_RANKS:-2}
data=data/fashion-mnist.h5
if [ ! -f "$data" ]; then
  mkdir -p data
  "$pack_idx" --dir /usr/share/datasets/fashion-mnist --classes fashion-mnist -o "$data"
fi
case "$model" in
  lenet) config=$configs/lenet_fmnist.toml ;;
  fmnist_sepcnn) config=$configs/fmnist_sepcnn.toml ;;
  resnet20) config=$configs/resnet20_fmnist.toml ;;
  mobilenet_v2) config=$configs/mobilenet_v2_fmnist.toml ;;
  vit) config=$configs/vit_fmnist.toml ;;
  *) config=$configs/lenet_fmnist.toml ;;
esac
run_dir=runs/fmnist-$model-$(date +%Y%m%d-%H%M%S)
mpi_flags=(-q --bind-to core --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
exec mpirun -np "$ranks" "${mpi_flags[@]}" "$scaletrain" --config "$config" \
  --model.name "$model" --data.path "$data" --run.dir "$run_dir" "$@"
