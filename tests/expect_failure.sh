#!/usr/bin/env bash
# Runs a command that must fail: checks a non-zero exit, that it ended within the time limit (no
# hang), and that the expected message appears exactly once in its output (one clear message).
# usage: expect_failure.sh <timeout-seconds> <expected-substring> -- command args...
set -u
limit=$1; expected=$2; shift 2
[ "$1" = "--" ] && shift
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "FAIL: timed out after ${limit}s (hang)"; exit 1; fi
if [ $rc -eq 0 ]; then echo "FAIL: exited 0, expected a failure"; exit 1; fi
count=$(printf '%s\n' "$out" | grep -cF -- "$expected")
if [ "$count" -ne 1 ]; then echo "FAIL: expected the message exactly once, found it $count times: $expected"; exit 1; fi
echo "OK: exit $rc with the expected message"
