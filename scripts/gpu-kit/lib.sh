# shellcheck shell=bash
# The GPU kit's step runner, sourced by check.sh and speed.sh. Each step is a function of the calling
# script, run by that script again (`SCRIPT __step NAME`) under its own time limit, so that one hang
# cannot eat the machine's time. A step's exit code is its status: 0 passed, 77 skipped or not
# available, 124 or 137 timed out, anything else failed; it may write a one-line note to
# $KIT_WORK/notes/NAME and its figures to $KIT_WORK/figures/NAME.json. Each result becomes one line of
# $KIT_WORK/steps.jsonl, which report.py turns into the call's table and JSON.
# kit_call sets KIT_WORK (scratch), KIT_LOG (the call's log), KIT_DEV (cuda, or sim in a dry run).

# Python with the node's own library path: the kit's libraries (Debian's libssl, libffi, libz, ...)
# are for the kit's programs, not for the node's Python and PyTorch.
kit_py() { LD_LIBRARY_PATH=${KIT_NODE_LD_LIBRARY_PATH:-} "$KIT_PYTHON" "$@"; }

kit_note() {  # NAME TEXT...: the step's one-line note
  local name=$1; shift
  echo "$*" > "$KIT_WORK/notes/$name"
  echo "note: $*"
}

kit_figures() {  # NAME: stdin (JSON) becomes the step's figures
  cat > "$KIT_WORK/figures/$1.json"
}

# KIT_LIMIT_SCALE (a dry run's: 4) multiplies every limit: a dry run's limits leave room for a slow or
# busy machine; it exists to show what is missing, not to time anything.
kit_run_step() {  # SCRIPT NAME LIMIT_S: runs SCRIPT's step NAME under LIMIT_S seconds (on a GPU)
  local script=$1 name=$2 gpu_limit=$3 rc=0 status
  local limit=$((gpu_limit * ${KIT_LIMIT_SCALE:-1}))
  local t0
  t0=$(date +%s.%N)
  echo "=== step $name (limit ${limit} s) ===" >> "$KIT_LOG"
  timeout --kill-after=5 "$limit" bash "$script" __step "$name" > "$KIT_WORK/output/$name" 2>&1 < /dev/null || rc=$?
  cat "$KIT_WORK/output/$name" >> "$KIT_LOG"
  case $rc in
    0) status=passed ;;
    77) status=skipped ;;
    124|137) status=timed_out ;;
    *) status=failed ;;
  esac
  local seconds
  seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  local note=""
  [ -f "$KIT_WORK/notes/$name" ] && note=$(head -c 400 "$KIT_WORK/notes/$name")
  [ "$status" = timed_out ] && note="stopped at its ${limit} s limit${note:+; $note}"
  if [ "$status" = failed ] && [ -z "$note" ]; then  # the step's last error line says why
    local o=$KIT_WORK/output/$name
    note=$(grep -E '^\[rank [0-9]+|^scaletrain: error|^FAIL' "$o" | tail -1 | head -c 400)
    [ -n "$note" ] || note=$(grep -iE 'error|fail' "$o" | tail -1 | head -c 400)
    [ -n "$note" ] || note=$(grep -v '^\s*$' "$o" | tail -1 | head -c 400)
  fi
  kit_py -c 'import json, sys; print(json.dumps(dict(step=sys.argv[1], status=sys.argv[2], rc=int(sys.argv[3]),
      seconds=float(sys.argv[4]), limit_s=int(sys.argv[5]), applied_limit_s=int(sys.argv[6]), note=sys.argv[7])))' \
      "$name" "$status" "$rc" "$seconds" "$gpu_limit" "$limit" "$note" >> "$KIT_WORK/steps.jsonl"
  printf '%-22s %-10s %6s s (limit %s s) %s\n' "$name" "$status" "$seconds" "$limit" "$note"
}

# Compute threads of a step's runs: the node's cores, at most 8.
kit_threads() {
  local n
  n=$(nproc)
  echo $((n < 8 ? n : 8))
}

# mpirun for one rank, unbound (the steps choose their threads).
kit_mpirun1() { mpirun -np 1 --bind-to none "$@"; }

# One call: SCRIPT's steps (NAME:LIMIT_S ...) in order, then the runs' archive and report.py's table
# and JSON in OUT: OUT/CALL.md, CALL.json, CALL.log, CALL-runs.tar.gz.
kit_call() {  # SCRIPT CALL OUT STEP:LIMIT...
  local script=$1 call=$2 out
  out=$(realpath -m "$3")
  shift 3
  mkdir -p "$out"
  export KIT_LOG=$out/$call.log KIT_WORK KIT_DEV
  KIT_WORK=$(mktemp -d "${TMPDIR:-/tmp}/st-kit-$call.XXXXXX")
  KIT_DEV=$([ "${KIT_DRY:-0}" = 1 ] && echo sim || echo cuda)
  mkdir -p "$KIT_WORK/notes" "$KIT_WORK/figures" "$KIT_WORK/runs" "$KIT_WORK/output"
  : > "$KIT_LOG"
  local start=$SECONDS step_limit
  for step_limit in "$@"; do
    kit_run_step "$script" "${step_limit%%:*}" "${step_limit##*:}"
  done
  echo "$call: $((SECONDS - start)) s"
  local lists=() f
  for f in "$KIT_WORK"/*.jsonl; do [ -e "$f" ] && lists+=("${f##*/}"); done
  tar -C "$KIT_WORK" -czf "$out/$call-runs.tar.gz" --exclude='*.h5' --exclude=checkpoints runs notes "${lists[@]}"
  local rc=0
  kit_py "$(dirname "$script")/report.py" report "$call" "$KIT_WORK" "$out" --seconds $((SECONDS - start)) \
    --dry "${KIT_DRY:-0}" || rc=$?
  rm -rf "$KIT_WORK"
  return "$rc"
}
