#!/usr/bin/env bash
# Fails unless BINARY carries a CUDA ELF image (SASS) for every architecture given, e.g. 80 90.
# Lists them with `cuobjdump --list-elf` (the cuobjdump beside nvcc); where the toolkit has none
# (the pip-wheel CUDA 13 here ships nvcc without it), with tests/support/list_fatbin.py, which
# reads the .nv_fatbin sections itself. Prints the tool, the listing and the verdict per arch.
# usage: check_cuda_elf.sh CUOBJDUMP BINARY ARCH...
set -euo pipefail
cuobjdump=$1 binary=$2
shift 2
if [[ -x "$cuobjdump" ]]; then
  echo "listing with: $cuobjdump --list-elf $binary"
  listing=$("$cuobjdump" --list-elf "$binary")
  pattern='\.sm_%s\.cubin'
else
  echo "no cuobjdump at '$cuobjdump': listing the .nv_fatbin sections with list_fatbin.py"
  listing=$(python3 "$(dirname "$0")/list_fatbin.py" "$binary")
  pattern='^ELF sm_%s$'
fi
echo "$listing" | sort | uniq -c
status=0
for arch in "$@"; do
  # shellcheck disable=SC2059
  if grep -Eq "$(printf "$pattern" "$arch")" <<<"$listing"; then
    echo "ok: sm_$arch ELF image in $binary"
  else
    echo "MISSING: no sm_$arch ELF image in $binary"
    status=1
  fi
done
exit $status
