#!/usr/bin/env bash
# Runs a training command with run.mllog into a fresh RUN_DIR, keeping its output in RUN_DIR.out,
# then checks the MLPerf log against the run directory (tests/support/check_mllog.py CHECK_ARGS).
# usage: mllog_run.sh RUN_DIR [CHECK_ARGS...] -- command args...
set -u
dir=$1; shift
check=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do check+=("$1"); shift; done
shift
rm -rf "$dir" "$dir.out"
timeout --kill-after=5 240 "$@" --run.dir "$dir" --run.mllog true >"$dir.out" 2>&1
rc=$?
cat "$dir.out"
[ $rc -eq 0 ] || { echo "FAIL: the run exited $rc"; exit 1; }
exec /usr/bin/python3 "$(dirname "$0")/check_mllog.py" "$dir.out" "$dir" "${check[@]}"
