# shellcheck shell=bash
# The GPU kit's environment (scripts/gpu-kit.sh packs this file at the kit's root). Source it:
#   source KIT/env.sh
# It puts the kit's programs, its Open MPI and its libraries first on the paths, and finds on the
# node what the kit does not carry: the CUDA libraries (cudart, cuBLAS/cuBLASLt, cuDNN, NCCL, CUPTI)
# in KIT_CUDA_LIBS (a colon-separated list, if set), in the nvidia-* pip wheels of the node's Pythons
# (CUPTI: nvidia/cuda_cupti/lib), or under /usr/local/cuda (CUPTI: also extras/CUPTI/lib64); the
# driver's libcuda in the usual places; and a Python with PyTorch
# (KIT_PYTHON; run it with the node's library path, KIT_NODE_LD_LIBRARY_PATH). It prints, on
# stderr, each CUDA library found beside the version the kit was built with (KIT/BUILD-INFO). It
# works under `env -i`: nothing else need be set.
kit_root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export KIT_ROOT=$kit_root
export PATH="$kit_root/bin:$kit_root/usr/bin:${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
export HOME=${HOME:-/tmp}

# Python: the first that imports torch and torchvision (the speed call's resnet50 is torchvision's),
# then the first that imports torch (the node's PyTorch venv, then the system's), else any.
kit_pythons=(/opt/*/.venv/bin/python3 /usr/local/bin/python3 /usr/bin/python3)
KIT_PYTHON=${KIT_PYTHON:-}
for m in 'import torch, torchvision' 'import torch'; do
  [ -n "$KIT_PYTHON" ] && break
  for p in "${kit_pythons[@]}"; do
    [ -x "$p" ] && "$p" -c "$m" >/dev/null 2>&1 && { KIT_PYTHON=$p; break; }
  done
done
if [ -z "$KIT_PYTHON" ]; then
  for p in "${kit_pythons[@]}"; do [ -x "$p" ] && { KIT_PYTHON=$p; break; }; done
fi
export KIT_PYTHON

# The CUDA libraries' folders, in order of preference.
kit_cuda_dirs=()
IFS=: read -r -a kit_user_dirs <<< "${KIT_CUDA_LIBS:-}"
for d in "${kit_user_dirs[@]}"; do [ -d "$d" ] && kit_cuda_dirs+=("$d"); done
if [ -z "${KIT_CUDA_LIBS:-}" ]; then
  for p in "${kit_pythons[@]}"; do
    [ -x "$p" ] || continue
    for s in $("$p" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
      for d in "$s"/nvidia/*/lib "$s"/nvidia/cu*/lib; do [ -d "$d" ] && kit_cuda_dirs+=("$d"); done
    done
  done
  # CUPTI (run.profile = kernels loads it with dlopen): the toolkit's extras/CUPTI/lib64 beside lib64.
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
           /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda-*/extras/CUPTI/lib64; do
    [ -d "$d" ] && kit_cuda_dirs+=("$d")
  done
fi
# The driver (libcuda, libnvidia-ml): where container runtimes mount it.
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib; do [ -d "$d" ] && kit_cuda_dirs+=("$d"); done
kit_cuda_path=$(IFS=:; echo "${kit_cuda_dirs[*]}")

export KIT_NODE_LD_LIBRARY_PATH=${KIT_NODE_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}  # for the node's Python (lib.sh)
export OPAL_PREFIX="$kit_root/usr" OPAL_SYSCONFDIR="$kit_root/etc/openmpi"
export PMIX_INSTALL_PREFIX="$kit_root/usr/lib/x86_64-linux-gnu/pmix2" PMIX_PREFIX="$kit_root/usr/lib/x86_64-linux-gnu/pmix2"
export LD_LIBRARY_PATH="$kit_root/lib:$kit_root/usr/lib/x86_64-linux-gnu/openmpi/lib:$kit_root/usr/lib/x86_64-linux-gnu/pmix2/lib${kit_cuda_path:+:$kit_cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1
export PMIX_MCA_pcompress_base_silence_warning=1

# name -> file found on the node, beside the build's version (BUILD-INFO: build_<name>=...).
kit_found_lib() {
  local d f
  for d in "${kit_cuda_dirs[@]}"; do
    for f in "$d"/"$1"*; do [ -e "$f" ] && { readlink -f "$f"; return; }; done
  done
  # The loader's own search (ldconfig's cache) for what no folder above holds.
  /sbin/ldconfig -p 2>/dev/null | awk -v n="$1" '$1 ~ "^"n {print $NF; exit}' | xargs -r readlink -f
}
if [ "${KIT_QUIET:-0}" != 1 ]; then
  echo "gpu kit: $kit_root (python: ${KIT_PYTHON:-none})" >&2
  for lib in libcudart.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2 libcupti.so.13 libcuda.so.1 libnvidia-ml.so.1; do
    key=${lib%%.so*}; key=${key#lib}
    built=$(awk -F= -v k="build_$key" '$1 == k {print $2}' "$kit_root/BUILD-INFO" 2>/dev/null)
    found=$(kit_found_lib "$lib")
    printf '  %-18s %-70s built with %s\n' "$lib" "${found:-not found}" "${built:-(not recorded)}" >&2
  done
fi
unset kit_root kit_pythons kit_user_dirs kit_cuda_path m p s d lib key built found
