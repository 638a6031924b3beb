# The GPU kit's step runner, sourced by check.sh and speed.sh. Each step is a function of the calling
# script, run by that script again (`SCRIPT __step NAME`) under its own time limit, so that one hang
# cannot eat the machine's time. A step's exit code is its status: 0 passed, 77 skipped or not
# available, 124 or 137 timed out, anything else failed; it may write a one-line note to
# $KIT_WORK/notes/NAME and its figures to $KIT_WORK/figures/NAME.json. Each result becomes one line of
# $KIT_WORK/steps.jsonl, which report.py turns into the call's table and JSON.
# The caller sets KIT_WORK (scratch), KIT_LOG (the call's log), KIT_DEV (cuda, or sim in a dry run).

kit_note() {  # NAME TEXT...: the step's one-line note
  local name=$1; shift
  echo "$*" > "$KIT_WORK/notes/$name"
  echo "note: $*"
}

kit_figures() {  # NAME: stdin (JSON) becomes the step's figures
  cat > "$KIT_WORK/figures/$1.json"
}

kit_run_step() {  # SCRIPT NAME LIMIT_S: runs SCRIPT's step NAME under LIMIT_S seconds
  local script=$1 name=$2 limit=$3 rc=0 status
  local t0
  t0=$(date +%s.%N)
  echo "=== step $name (limit ${limit} s) ===" >> "$KIT_LOG"
  timeout --kill-after=5 "$limit" bash "$script" __step "$name" >> "$KIT_LOG" 2>&1 < /dev/null || rc=$?
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
  "$KIT_PYTHON" -c 'import json, sys; print(json.dumps(dict(step=sys.argv[1], status=sys.argv[2], rc=int(sys.argv[3]),
      seconds=float(sys.argv[4]), limit_s=int(sys.argv[5]), note=sys.argv[6])))' \
      "$name" "$status" "$rc" "$seconds" "$limit" "$note" >> "$KIT_WORK/steps.jsonl"
  printf '%-22s %-10s %6s s (limit %s s) %s\n' "$name" "$status" "$seconds" "$limit" "$note"
}

# mpirun for one rank, unbound (the steps choose their threads).
kit_mpirun1() { mpirun -np 1 --bind-to none "$@"; }
