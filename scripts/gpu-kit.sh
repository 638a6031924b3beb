#!/usr/bin/env bash
# The GPU first-contact kit: what a lent, bare GPU machine needs to prove and measure the CUDA path,
# packed on a build machine and run there in two calls of under 4 minutes each (perf/README.md,
# "A lent GPU machine"). The kit carries its programs, Open MPI, HDF5, oneDNN and every other library
# but the CUDA ones, which its env.sh finds on the node.
#
#   scripts/gpu-kit.sh pack DIR [--build BUILD_DIR]   build the cuda preset (or use BUILD_DIR) and
#                                                     write DIR/scaletrain-gpu-kit.tar.gz
#   scripts/gpu-kit.sh check --kit DIR OUT [--dry]    correctness: OUT/check.{md,json,log}, check-runs.tar.gz
#   scripts/gpu-kit.sh speed --kit DIR OUT [--dry]    images/s beside PyTorch: OUT/speed.{md,json,log}, speed-runs.tar.gz
#
# check and speed unpack the kit into a temporary folder and run its scripts there with env.sh
# sourced. --dry runs the same steps on a machine without a GPU: run.device = sim in place of cuda,
# PyTorch on the CPU, under `env -i` with only what env.sh sets (and four times the step limits), so
# that a missing library or path shows before a GPU machine's time is spent. Exit status: 0 when no step failed or timed out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
  sed -n '7,10p' "$0" | sed 's/^#   //' >&2
  exit 2
}
[ $# -ge 1 ] || usage
verb=$1; shift
case $verb in
  pack)
    [ $# -ge 1 ] || usage
    dir=$1 build=()
    shift
    if [ "${1:-}" = --build ]; then build=("${2:?--build needs a folder}"); fi
    exec bash "$here/gpu-kit/pack.sh" "$dir" "${build[@]}"
    ;;
  check|speed)
    kit="" out="" dry=0
    while [ $# -gt 0 ]; do
      case $1 in
        --kit) kit=${2:?--kit needs a folder}; shift 2 ;;
        --dry) dry=1; shift ;;
        -*) usage ;;
        *) out=$1; shift ;;
      esac
    done
    if [ -z "$kit" ] || [ -z "$out" ]; then usage; fi
    archive=$kit
    [ -d "$kit" ] && archive=$kit/scaletrain-gpu-kit.tar.gz
    [ -f "$archive" ] || { echo "gpu-kit: no kit at $archive (make one with: scripts/gpu-kit.sh pack DIR)" >&2; exit 1; }
    out=$(realpath -m "$out")
    mkdir -p "$out"
    unpacked=$(mktemp -d "${TMPDIR:-/tmp}/st-kit.XXXXXX")
    trap 'rm -rf "$unpacked"' EXIT
    tar -C "$unpacked" -xzf "$archive"
    root=$unpacked/scaletrain-gpu-kit
    echo "gpu-kit $verb$([ $dry = 1 ] && echo ' (dry run)'): kit $(awk -F= '$1 == "commit" {print $2}' "$root/BUILD-INFO")," \
         "results in $out" >&2
    # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
    run='source "$1/env.sh" && exec bash "$1/scripts/$2.sh" "$3"'
    if [ "$dry" = 1 ]; then
      env -i KIT_DRY=1 KIT_LIMIT_SCALE=4 bash -c "$run" gpu-kit "$root" "$verb" "$out"
    else
      KIT_DRY=0 bash -c "$run" gpu-kit "$root" "$verb" "$out"
    fi
    ;;
  *) usage ;;
esac
