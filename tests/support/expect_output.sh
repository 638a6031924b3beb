#!/usr/bin/env bash
# Runs a command that must succeed and checks its output (stdout and stderr): every --has pattern
# (an extended regular expression) must match a line, and no --lacks pattern may.
# usage: expect_output.sh <timeout-seconds> [--has REGEX]... [--lacks REGEX]... -- command args...
set -u
limit=$1; shift
has=(); lacks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --has) has+=("$2"); shift 2 ;;
    --lacks) lacks+=("$2"); shift 2 ;;
    *) echo "expect_output.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
shift
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ]; then echo "FAIL: exit $rc, expected 0"; exit 1; fi
for re in "${has[@]}"; do
  printf '%s\n' "$out" | grep -qE -- "$re" || { echo "FAIL: no line matches: $re"; exit 1; }
done
for re in "${lacks[@]}"; do
  if printf '%s\n' "$out" | grep -qE -- "$re"; then echo "FAIL: a line matches what must not appear: $re"; exit 1; fi
done
echo "OK: exit 0, output as expected"
