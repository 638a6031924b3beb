#!/usr/bin/env bash
# The PyTorch 2 anchor of the CPU benchmarks: a virtual environment outside the source tree holding
# pinned torch and torchvision from PyPI, made once. Nothing in the build or the tests uses it (they keep
# Debian's PyTorch 1.13 for their references); bench_train_step.py and bench_checkpoint.py time PyTorch
# under it beside Debian's.
#
#   perf/anchor-env.sh             make the environment (nothing to do when it is there and complete)
#   perf/anchor-env.sh --status    one JSON line: dir, python, versions, ready; installs nothing
#   perf/anchor-env.sh --dir DIR   another place (default: $SCALETRAIN_ANCHOR_ENV, else
#                                  ${XDG_CACHE_HOME:-$HOME/.cache}/scaletrain/anchor-torch-<version>)
#
# PyPI's torch for Linux x86_64 is its CUDA build, with NVIDIA's libraries as dependencies: PyPI offers
# no CPU-only build (PyTorch's own index, which has one, is not reachable from every machine), so the
# environment holds the CUDA build, whose CPU kernels are the same. torchvision 0.29 is the newest
# release and pairs with torch 2.14.
set -euo pipefail

TORCH_VERSION=2.14.1
TORCHVISION_VERSION=0.29.2
PYTHON=/usr/bin/python3

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
dir=${SCALETRAIN_ANCHOR_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/scaletrain/anchor-torch-$TORCH_VERSION}
mode=make
while [ $# -gt 0 ]; do
  case $1 in
    --status) mode=status ;;
    --dir) dir=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "perf/anchor-env.sh: unknown argument '$1' (--status, --dir DIR)" >&2; exit 2 ;;
  esac
  shift
done
dir=$(realpath -m "$dir")

say() { echo "perf/anchor-env.sh: $*" >&2; }

# The versions the environment's Python imports, as "torch torchvision", or nothing.
installed_versions() {
  [ -x "$dir/bin/python" ] || return 0
  "$dir/bin/python" -c 'import torch, torchvision; print(torch.__version__.split("+")[0], torchvision.__version__.split("+")[0])' \
    2>/dev/null || true
}

is_ready() { [ "$(installed_versions)" = "$TORCH_VERSION $TORCHVISION_VERSION" ] && [ -f "$dir/anchor.json" ]; }

if [ "$mode" = status ]; then
  ready=false
  is_ready && ready=true
  printf '{"dir": "%s", "python": "%s", "torch": "%s", "torchvision": "%s", "ready": %s}\n' \
    "$dir" "$dir/bin/python" "$TORCH_VERSION" "$TORCHVISION_VERSION" "$ready"
  exit 0
fi

case "$dir/" in
  "$root"/*) say "refusing $dir: inside the source tree ($root); give --dir a place outside it"; exit 2 ;;
esac
if is_ready; then
  say "ready: $dir (torch $TORCH_VERSION, torchvision $TORCHVISION_VERSION; $(du -sh "$dir" | cut -f1))"
  exit 0
fi

# What the environment needs from Debian: venv to make it, and for torch.compile's C++ (inductor) a
# compiler and Python's headers.
missing=()
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
[ -f "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] || missing+=(python3-dev)
command -v g++ >/dev/null || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  else
    say "needs Debian's ${missing[*]}: apt-get install ${missing[*]} (as root), then run this again"
    exit 1
  fi
fi

# PyPI (or the index pip is configured with) must answer before anything is made.
index=${PIP_INDEX_URL:-https://pypi.org/simple}
if ! err=$("$PYTHON" - "$index" <<'EOF' 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=30).read(1)
EOF
); then
  say "PyPI cannot be reached ($index/torch/: $(echo "$err" | tail -1)): no PyTorch 2 anchor on this machine;"
  say "the benchmarks keep Debian's PyTorch 1.13 as their only anchor"
  exit 1
fi

# Made beside its final place and moved there when complete, so that an interrupted run leaves
# nothing that looks ready.
part="$dir.part"
rm -rf "$part"
mkdir -p "$(dirname "$dir")"
say "making $dir: torch $TORCH_VERSION and torchvision $TORCHVISION_VERSION from $index"
"$PYTHON" -m venv "$part"
"$part/bin/python" -m pip install -q "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" numpy
"$part/bin/python" - "$part/anchor.json" <<'EOF'
import json, re, sys, torch, torchvision
config = torch.__config__.show()
onednn = re.search(r"(?:MKL-DNN|oneDNN) v([0-9.]+)", config)
blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
info = {"torch": torch.__version__, "torchvision": torchvision.__version__, "cuda_build": torch.version.cuda,
        "onednn": onednn.group(1) if onednn else None, "blas": blas.group(1) if blas else None}
json.dump(info, open(sys.argv[1], "w"))
EOF
rm -rf "$dir"
mv "$part" "$dir"
# venv writes its own path into its scripts; bench_train_step.py calls bin/python, which does not care.
size=$(du -sh "$dir" | cut -f1)
say "ready: $dir ($size): $(cat "$dir/anchor.json")"
"$dir/bin/python" -m pip list --format freeze 2>/dev/null | grep -iE '^(torch|torchvision|numpy|triton|nvidia-cudnn)' \
  | sed 's/^/  /' >&2
