#!/usr/bin/env sh
# Removes DIR, then runs the command: a test's run directory starts empty on every ctest run (a
# run.dir holding an earlier run's files is refused).
# usage: fresh_dir.sh DIR command args...
dir=$1
shift
rm -rf "$dir" || exit 1
exec "$@"
