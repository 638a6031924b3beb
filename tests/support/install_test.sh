#!/usr/bin/env bash
# The installed scaletrain, used as a cluster user would (tests/install.cmake, tests/slurm.cmake):
#   install_test.sh local BUILD_DIR               2 ranks of LeNet by the installed jobs/local/train_fmnist.sh
#   install_test.sh slurm BUILD_DIR CLUSTER_DIR   a one-node strong-scaling sweep by the installed
#                                                 jobs/slurm/strong_scaling.sbatch on a running test cluster
#                                                 (scripts/slurm-test-cluster.sh, through tests/support/slurm_test.sh)
# Both install BUILD_DIR into a temporary prefix and move the prefix elsewhere (the modulefile and the job scripts
# must find their files from where they are), then run in a clean environment (env -i, PATH of the system only, no
# build or source tree): Debian's Lmod, `module use PREFIX/share/modulefiles`, `module load scaletrain`; scaletrain
# must resolve to PREFIX/bin, SCALETRAIN_JOBS, SCALETRAIN_ROOT and SCALETRAIN_TOOLS must point into the prefix and
# the module's help must name the job scripts. The runs take the installed configurations and write into a work
# directory; the checks are the installed tools (check_run_dirs.py). No file under PREFIX/share may name the source
# tree. Where Lmod or the test cluster is missing the test prints SKIPPED (exit 0); under CI=true it fails.
set -euo pipefail

SOURCE=$(cd "$(dirname "$0")/../.." && pwd)
readonly SOURCE SELF=$SOURCE/tests/support/install_test.sh
readonly LMOD_INITS="/usr/share/lmod/lmod/init/bash /usr/share/lmod/8.*/init/bash /usr/lmod/lmod/init/bash"

say() { printf 'install_test: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }

# unavailable REASON: SKIPPED outside CI (exit 0), FAILED under CI=true.
unavailable() {
  [ "${CI:-}" = true ] && fail "$* (CI must run this test)"
  say "SKIPPED: $*"
  exit 0
}

lmod_init() {
  local f
  # shellcheck disable=SC2086  # the glob in LMOD_INITS
  for f in $LMOD_INITS; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

# --- outside: install, move, start the clean stage -----------------------------------------------------------------

outer() {
  local mode=$1 build=$2 cluster=${3:-}
  case "$mode" in
    local) ;;
    slurm)
      [ -n "$cluster" ] || fail "usage: $0 slurm BUILD_DIR CLUSTER_DIR"
      if [ ! -f "$cluster/cluster.env" ]; then
        local reason="the test cluster in $cluster was not started (the slurm_cluster_none_start test starts it)"
        [ -f "$cluster/unavailable" ] && reason="the test cluster cannot start: $(cat "$cluster/unavailable")"
        unavailable "$reason"
      fi ;;
    *) fail "usage: $0 local|slurm BUILD_DIR [CLUSTER_DIR]" ;;
  esac
  [ -f "$build/cmake_install.cmake" ] || fail "$build is not a configured build directory"
  local init
  init=$(lmod_init) || unavailable "Lmod is not installed (apt-get install lmod, see scripts/install-deps.sh)"

  local tmp
  tmp=$(mktemp -d /tmp/scaletrain-install.XXXXXX)
  local staged=$tmp/staged prefix=$tmp/prefix work=$tmp/work
  say "cmake --install $build --prefix $staged"
  cmake --install "$build" --prefix "$staged" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install failed"; }
  mv "$staged" "$prefix"
  mkdir -p "$work"

  local f
  for f in bin/scaletrain bin/st-pack-idx bin/scaletrain-checkpoint bin/st-import-torch share/scaletrain/jobs/README.md share/scaletrain/jobs/local/train_fmnist.sh \
           share/scaletrain/jobs/slurm/common.sh share/scaletrain/jobs/slurm/strong_scaling.sbatch \
           share/scaletrain/jobs/slurm/README.md share/scaletrain/jobs/configs/lenet_synthetic.toml \
           share/scaletrain/tools/scaling_report.py share/scaletrain/tools/check_run_dirs.py; do
    [ -e "$prefix/$f" ] || fail "the install has no $f (files: $(cd "$prefix" && find . -type f | sort | tr '\n' ' '))"
  done
  # The installed st-import-torch finds the scaletrain-checkpoint beside it (the model's layout comes before the
  # file is read).
  local imported
  imported=$("$prefix/bin/st-import-torch" "$work/none.pt" --model lenet --input 28,28,1 --classes 10 -o "$work/x.h5" 2>&1) &&
    fail "st-import-torch accepted a missing file"
  [[ $imported == *"$work/none.pt: no such file"* ]] || fail "the installed st-import-torch: $imported"
  local modulefiles
  modulefiles=$(find "$prefix/share/modulefiles/scaletrain" -name '*.lua' 2>/dev/null | head -n 1)
  [ -n "$modulefiles" ] || fail "the install has no Lmod modulefile share/modulefiles/scaletrain/<version>.lua"
  if grep -rlF -- "$SOURCE" "$prefix/share" >"$tmp/names-source"; then
    fail "installed files name the source tree $SOURCE: $(tr '\n' ' ' <"$tmp/names-source")"
  fi

  # The clean stage: only the system's PATH, no variables of ctest, the build, an outer Slurm job or MPI.
  local env=(HOME="$work" USER="$(id -un)" LOGNAME="$(id -un)" LANG=C.UTF-8 TERM=dumb
             PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  [ -n "${CI:-}" ] && env+=(CI="$CI")
  local rc=0
  (cd "$work" && env -i "${env[@]}" bash --noprofile --norc "$SELF" --stage "$mode" "$init" "$prefix" "$work" \
                  "$cluster") || rc=$?
  if [ "$rc" -ne 0 ]; then
    say "FAILED (exit $rc); the prefix and the runs are left in $tmp"
    exit "$rc"
  fi
  rm -rf "$tmp"
  say "passed"
}

# --- inside the clean environment ----------------------------------------------------------------------------------

# json_get FILE EXPRESSION: a value of a JSON file (EXPRESSION in Python, on `j`).
json_get() { python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

load_module() {
  local init=$1 prefix=$2
  # Lmod's init and module functions use unset variables.
  set +u
  # shellcheck source=/dev/null
  source "$init"
  module use "$prefix/share/modulefiles"
  module load scaletrain || fail "module load scaletrain failed"
  set -u
  local found
  found=$(command -v scaletrain) || fail "scaletrain is not on PATH after module load (PATH=$PATH)"
  [ "$found" = "$prefix/bin/scaletrain" ] || fail "scaletrain resolves to $found, not $prefix/bin/scaletrain"
  [ "${SCALETRAIN_JOBS:-}" = "$prefix/share/scaletrain/jobs" ] || fail "SCALETRAIN_JOBS is '${SCALETRAIN_JOBS:-}'"
  [ "${SCALETRAIN_ROOT:-}" = "$prefix/share/scaletrain" ] || fail "SCALETRAIN_ROOT is '${SCALETRAIN_ROOT:-}'"
  [ "${SCALETRAIN_TOOLS:-}" = "$prefix/share/scaletrain/tools" ] || fail "SCALETRAIN_TOOLS is '${SCALETRAIN_TOOLS:-}'"
  local help
  help=$(set +u; module help scaletrain 2>&1)
  grep -qF "$prefix/share/scaletrain/jobs" <<<"$help" || fail "module help does not name the job scripts: $help"
  say "module load scaletrain: $found; SCALETRAIN_JOBS=$SCALETRAIN_JOBS"
  "$found" --version >version.txt || fail "scaletrain --version failed"
  head -n 1 version.txt
}

# 2 ranks of LeNet on Fashion-MNIST, packed by the installed st-pack-idx, by the installed train_fmnist.sh.
stage_local() {
  local work=$1
  [ -d /usr/share/datasets/fashion-mnist ] ||
    unavailable "no /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist)"
  "$SCALETRAIN_JOBS/local/train_fmnist.sh" lenet --train.max_steps 20 --train.log_every 10 --train.evaluate false ||
    fail "train_fmnist.sh failed"
  [ -f "$work/data/fashion-mnist.h5" ] || fail "train_fmnist.sh packed no $work/data/fashion-mnist.h5"
  local runs=("$work"/runs/fmnist-lenet-*)
  { [ "${#runs[@]}" -eq 1 ] && [ -f "${runs[0]}/run.json" ]; } || fail "no run directory with a run.json under $work/runs"
  local world steps
  world=$(json_get "${runs[0]}/run.json" 'j["world_size"]')
  steps=$(json_get "${runs[0]}/run.json" 'j["steps"]')
  { [ "$world" = 2 ] && [ "$steps" = 20 ]; } || fail "run.json has world_size $world and steps $steps, not 2 and 20"
  say "2-rank lenet run: ${runs[0]} (world_size $world, $steps steps)"
}

# The strong sweep of jobs/slurm/README.md's command with the installed script, as tests/slurm.cmake runs it from
# the source tree: 1 node x 2 tasks -> ranks-2, into the default sweep directory under the submit directory.
stage_slurm() {
  local prefix=$1 work=$2 cluster=$3
  export SCALETRAIN_CONFIG=$SCALETRAIN_JOBS/configs/lenet_synthetic.toml GLOBAL_BATCH=128 STEPS=40 LOG_EVERY=10 \
         WARMUP_STEPS=10 SCALETRAIN_BENCH_ARGS="-b 1K -e 1M -n 5 -w 1" SCALETRAIN_PYTHON=/usr/bin/python3
  bash "$SOURCE/tests/support/slurm_test.sh" job "$cluster" -- \
    sbatch --nodes=1 --ntasks-per-node=2 "$SCALETRAIN_JOBS/slurm/strong_scaling.sbatch" || fail "the sweep job failed"
  local sweeps=("$work"/runs/strong-scaling-*)
  { [ "${#sweeps[@]}" -eq 1 ] && [ -f "${sweeps[0]}/sweep.json" ]; } || fail "no sweep directory under $work/runs"
  local sweep=${sweeps[0]} binary config
  binary=$(json_get "$sweep/sweep.json" 'j["binary"]')
  config=$(json_get "$sweep/sweep.json" 'j["config"]')
  [ "$binary" = "$prefix/bin/scaletrain" ] || fail "the sweep ran $binary, not $prefix/bin/scaletrain"
  [ "$config" = "$SCALETRAIN_CONFIG" ] || fail "the sweep's configuration is $config, not $SCALETRAIN_CONFIG"
  /usr/bin/python3 "$SCALETRAIN_TOOLS/check_run_dirs.py" "$sweep" --kind strong --ranks 2 --batch 128 --report --bound ||
    fail "check_run_dirs.py rejected $sweep"
  say "strong sweep: $sweep"
}

stage() {
  local mode=$1 init=$2 prefix=$3 work=$4 cluster=${5:-}
  cd "$work"
  load_module "$init" "$prefix"
  case "$mode" in
    local) stage_local "$work" ;;
    slurm) stage_slurm "$prefix" "$work" "$cluster" ;;
  esac
}

if [ "${1:-}" = --stage ]; then
  shift
  stage "$@"
else
  outer "$@"
fi
