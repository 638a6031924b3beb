#!/usr/bin/env bash
# Installs every Debian 12 package scaletrain needs to build, test, benchmark and train.
# Idempotent and non-interactive: skips apt-get entirely when everything is already there.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang-format shellcheck
  # MPI, HDF5 (serial and Open MPI parallel), oneDNN, Kokkos
  openmpi-bin libopenmpi-dev
  libhdf5-dev libhdf5-openmpi-dev hdf5-tools
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers  # Debian builds oneDNN with the OpenCL GPU runtime
  libtrilinos-kokkos-dev
  # tests, benchmarks, configuration, formatting
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
  # image decoding for data-tools
  libjpeg62-turbo-dev libpng-dev zlib1g-dev
  # reference data, anchors and plots
  python3 python3-torch python3-torchvision python3-h5py python3-numpy python3-matplotlib
  # OpenBLAS for PyTorch's Linear layers (Debian's torch calls libblas.so.3, else the reference BLAS)
  libopenblas0-openmp
  # fincore, for the run.clear_cache test (tests/mllog.cmake) to measure the page cache independently
  util-linux-extra
  # the real data set
  dataset-fashion-mnist
  # a one-node Slurm for the job scripts' tests (scripts/slurm-test-cluster.sh). Debian's slurmctld and slurmd
  # services start only with an /etc/slurm/slurm.conf, and the munge service uses /run/munge: the test cluster
  # has its own configuration, munge key and socket, and ports, so it runs beside them
  slurm-wlm munge
  # Lmod, for the installed modulefile's test (tests/install.cmake: module load scaletrain)
  lmod
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
