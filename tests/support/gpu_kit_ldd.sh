#!/usr/bin/env bash
# The GPU kit resolves its libraries from inside itself: ldd of every packed program, Open MPI binary,
# component and library under the kit's env.sh (run under env -i), with the CUDA libraries taken from a
# folder of stand-ins (empty shared libraries with the sonames and symbol versions the kit needs).
# Every library must come from the kit or the stand-ins, except the C/C++ runtime (glibc, libstdc++,
# libgcc_s), which the node has.
# usage: gpu_kit_ldd.sh UNPACKED_KIT WORKDIR
set -euo pipefail
kit=$(realpath "$1") work=$(realpath -m "$2")
standins=$work/cuda-standins
rm -rf "$standins"
mkdir -p "$standins"
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl|libnvrtc[a-z-]*|libnvJitLink|libnvidia-ml)\.so'
runtime='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s)\.so'
mapfile -t objects < <(find "$kit/bin" "$kit/lib" "$kit/usr" -type f \( -perm -u+x -o -name '*.so*' \) \
                       -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
# The CUDA sonames the kit needs, each with the symbol versions required of it.
for obj in "${objects[@]}"; do
  readelf -d "$obj" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $NF); print $NF}'
done | sort -u | grep -E "$cuda" | while read -r so; do
  versions=$(for obj in "${objects[@]}"; do
               readelf -V "$obj" 2>/dev/null | awk -v so="$so" '
                 /File:/ {f = 0; for (i = 1; i < NF; ++i) if ($i == "File:") f = ($(i + 1) == so)}
                 f && /Name:/ {for (i = 1; i < NF; ++i) if ($i == "Name:") print $(i + 1)}'
             done | sort -u)
  : > "$standins/$so.map"
  for v in $versions; do echo "$v { local: *; };" >> "$standins/$so.map"; done
  echo 'int scaletrain_cuda_standin;' > "$standins/empty.c"
  gcc -shared -fPIC -Wl,-soname,"$so" ${versions:+-Wl,--version-script="$standins/$so.map"} \
      -o "$standins/$so" "$standins/empty.c"
  echo "stand-in: $so${versions:+ (versions: ${versions//$'\n'/ })}"
done
ls "$standins"/*.so* > /dev/null 2>&1 || { echo "FAIL: the kit needs no CUDA library: is it a cuda build?"; exit 1; }

report=$work/ldd.txt
# shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
env -i KIT_CUDA_LIBS="$standins" KIT_QUIET=1 bash -c 'source "$1/env.sh"; shift; for o in "$@"; do echo "== $o"; ldd "$o" 2>&1; done' \
  _ "$kit" "${objects[@]}" > "$report"
bad=$(awk -v kit="$kit/" -v st="$standins/" -v rt="$runtime" '
  /^== / {obj = $2; next}
  /not found|version .* not found/ {print obj ": " $0; next}
  $2 == "=>" && $3 ~ /^\// {
    if (index($3, kit) == 1 || index($3, st) == 1) next
    if ($1 ~ rt) next
    print obj ": " $1 " from " $3
  }' "$report")
checked=$(grep -c '^== ' "$report")
from_kit=$(grep -c "=> $kit/" "$report" || true)
from_standins=$(grep -c "=> $standins/" "$report" || true)
if [ -n "$bad" ]; then
  echo "$bad" | head -40
  echo "FAIL: $(echo "$bad" | wc -l) libraries resolve outside the kit (full ldd output: $report)"
  exit 1
fi
echo "ldd: $checked objects; $from_kit resolutions inside the kit, $from_standins to the CUDA stand-ins," \
     "the rest the C/C++ runtime only"
