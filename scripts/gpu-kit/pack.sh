#!/usr/bin/env bash
# Packs the GPU kit (scripts/gpu-kit.sh pack): builds the cuda preset's programs and writes
# DIR/scaletrain-gpu-kit.tar.gz with them, Open MPI's runtime, every shared library they load except
# the C/C++ runtime (glibc, libstdc++, libgcc_s) and the CUDA libraries (cudart, cuBLAS, cuDNN, NCCL,
# the driver: the node has them; env.sh finds them), the kit's scripts (with perf/'s two PyTorch
# scripts and the kernel categories' rules), env.sh and BUILD-INFO.
# usage: pack.sh DIR [BUILD_DIR]   (BUILD_DIR: an existing cuda build; default: the cuda preset's)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "${1:?usage: pack.sh DIR [BUILD_DIR]}")
build=${2:-}
multiarch=x86_64-linux-gnu
# The archive and the working tree travel to the GPU machine together, within 64 MiB.
limit_mib=${KIT_LIMIT_MIB:-60}

if [ -z "$build" ]; then
  (cd "$root" && cmake --preset cuda > /dev/null)
  build=$root/build/cuda
fi
grep -qE '^SCALETRAIN_ENABLE_CUDA:[A-Z]+=ON' "$build/CMakeCache.txt" ||
  { echo "gpu-kit pack: $build is not a cuda build (SCALETRAIN_ENABLE_CUDA is off)" >&2; exit 1; }
cmake --build "$build" --target gpu_kit_programs

stage=$(mktemp -d "${TMPDIR:-/tmp}/st-kit-pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
kit=$stage/scaletrain-gpu-kit
mkdir -p "$kit"/{bin,lib,usr/bin,usr/lib/$multiarch,usr/share,etc,scripts/support}

# The programs tests/kit.cmake's gpu_kit_programs target builds, by file.
mapfile -t programs < "$build/gpu_kit_programs.txt"
for f in "${programs[@]}"; do
  [ -x "$f" ] || { echo "gpu-kit pack: $f was not built" >&2; exit 1; }
  strip --strip-unneeded -o "$kit/bin/${f##*/}" "$f"
done

# Open MPI 4.1's runtime laid out as under /usr, so that OPAL_PREFIX relocates it (env.sh).
cp -a /usr/bin/orterun /usr/bin/orted "$kit/usr/bin/"
ln -s orterun "$kit/usr/bin/mpirun"
ln -s orterun "$kit/usr/bin/mpiexec"
cp -a "/usr/lib/$multiarch/openmpi" "/usr/lib/$multiarch/pmix2" "$kit/usr/lib/$multiarch/"
rm -rf "$kit/usr/lib/$multiarch/openmpi/include"
cp -a /usr/share/openmpi "$kit/usr/share/"
cp -a /etc/openmpi "$kit/etc/"

# Every library those load, but the C/C++ runtime and what the GPU node provides.
skip='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s'
skip+='|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl|libnvrtc[a-z-]*|libnvJitLink|libnvidia-ml'
skip+='|libcurand|libcufft|libcusparse|libcusolver)\.so'
mapfile -t objects < <(find "$kit/bin" "$kit/usr/bin" "$kit/usr/lib/$multiarch" -type f \( -perm -u+x -o -name '*.so*' \))
for obj in "${objects[@]}"; do
  ldd "$obj" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  [[ $path == "$kit"/* ]] && continue
  [ -e "$kit/lib/$name" ] || cp -L "$path" "$kit/lib/$name"
done
find "$kit/lib" -type f -name '*.so*' -exec strip --strip-unneeded {} + 2>/dev/null || true

cp "$root/scripts/gpu-kit/env.sh" "$kit/env.sh"
cp "$root/scripts/gpu-kit/"{lib.sh,check.sh,speed.sh,report.py,kernel_categories.py} "$kit/scripts/"
cp "$root/src/train/kernel_categories.tsv" "$kit/scripts/"  # kernel_categories.py reads it beside itself
cp "$root/tests/support/"{compare_losses.py,compare_checkpoints.py,resume_check.sh} "$kit/scripts/support/"
cp "$root/perf/"{pytorch_anchor.py,pytorch_kernel_profile.py} "$kit/scripts/"

# What the kit was built from and with: env.sh prints the CUDA libraries' versions beside these.
header_version() {  # header file, then the macro names of major, minor, patch
  local h=$1; shift
  [ -f "$h" ] || { echo unknown; return; }
  local v=() m
  for m in "$@"; do v+=("$(awk -v m="$m" '$1 == "#define" && $2 == m {print $3; exit}' "$h")"); done
  if [ ${#v[@]} = 1 ] && [ "${v[0]:-0}" -ge 1000 ] 2>/dev/null; then  # CUDA_VERSION style: 13000 = 13.0
    echo "$((v[0] / 1000)).$((v[0] % 1000 / 10))"
  else
    (IFS=.; echo "${v[*]}")
  fi
}
cache() { awk -F= -v k="$1" 'index($1, k ":") == 1 {print $2; exit}' "$build/CMakeCache.txt"; }
cuda_inc=$(dirname "$(cache CMAKE_CUDA_COMPILER)")/../include
cudnn_h=$(cache SCALETRAIN_CUDNN_INCLUDE_DIR)/cudnn_version.h
cupti_h=$(cache SCALETRAIN_CUPTI_INCLUDE_DIR)/cupti_version.h
nccl_h=$(cache SCALETRAIN_NCCL_INCLUDE_DIR)/nccl.h
{
  echo "commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "packed=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build_host_cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "cuda_architectures=$(cache CMAKE_CUDA_ARCHITECTURES)"
  echo "build_cudart=$(header_version "$cuda_inc/cuda_runtime_api.h" CUDART_VERSION)"
  echo "build_cublasLt=$(header_version "$cuda_inc/cublas_api.h" CUBLAS_VER_MAJOR CUBLAS_VER_MINOR CUBLAS_VER_PATCH)"
  echo "build_cudnn=$(header_version "$cudnn_h" CUDNN_MAJOR CUDNN_MINOR CUDNN_PATCHLEVEL)"
  echo "build_nccl=$(header_version "$nccl_h" NCCL_MAJOR NCCL_MINOR NCCL_PATCH)"
  echo "build_cuda=$(header_version "$cuda_inc/cuda.h" CUDA_VERSION) (the driver API version; any newer driver)"
  echo "build_cupti=API $(awk '$1 == "#define" && $2 == "CUPTI_API_VERSION" {print $3; f = 1; exit} END {if (!f) print "unknown"}' \
    "$cupti_h" 2>/dev/null || echo unknown) (headers only; libcupti is opened at run time for run.profile = kernels)"
  echo "build_nvidia-ml=none (opened at run time for GPU telemetry)"
} > "$kit/BUILD-INFO"

mkdir -p "$out"
archive=$out/scaletrain-gpu-kit.tar.gz
tar -C "$stage" -czf "$archive.part" scaletrain-gpu-kit
mv "$archive.part" "$archive"
bytes=$(stat -c %s "$archive")
tree_bytes=$(git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 du -cb 2>/dev/null) | awk 'END {print $1}')
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
echo "gpu kit: $archive: $(mib "$bytes") MiB ($(du -sh "$kit" | cut -f1) unpacked); with the working tree" \
     "($(mib "$tree_bytes") MiB) $(mib $((bytes + tree_bytes))) MiB of the ${limit_mib} MiB allowed"
if [ $((bytes + tree_bytes)) -gt $((limit_mib * 1048576)) ]; then
  echo "gpu-kit pack: the archive and the working tree are over ${limit_mib} MiB: they cannot travel together" >&2
  exit 1
fi
