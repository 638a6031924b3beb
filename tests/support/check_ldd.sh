#!/usr/bin/env bash
# Fails on any "undefined symbol" or "not found" line of `ldd -r` for the given binaries and for
# every libcudnn*.so.9 in CUDNN_DIR (cuDNN loads its sub-libraries at run time, so the link of
# scaletrain alone does not show them). Prints each file checked and its verdict.
# usage: check_ldd.sh CUDNN_DIR BINARY...
set -uo pipefail
cudnn_dir=$1
shift
files=("$@")
shopt -s nullglob
cudnn=("$cudnn_dir"/libcudnn*.so.9)
if ((${#cudnn[@]} == 0)); then
  echo "FAIL: no libcudnn*.so.9 in $cudnn_dir"
  exit 1
fi
files+=("${cudnn[@]}")
status=0
for f in "${files[@]}"; do
  bad=$(ldd -r "$f" 2>&1 | grep -E "undefined symbol|not found" || true)
  if [[ -n "$bad" ]]; then
    echo "FAIL: $f"
    echo "$bad" | head -20
    status=1
  else
    echo "ok: $f ($(ldd "$f" | wc -l) libraries, every symbol resolved)"
  fi
done
exit $status
