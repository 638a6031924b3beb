#!/usr/bin/env bash
# Node-shared staging end to end with the scaletrain binary (data/shared_split.hpp,
# data/node_local_share.hpp). Modes:
#   read_once    4 ranks as two virtual nodes (data.node_ranks = 2): the bytes the processes read
#                while staging (the kernel's /proc/self/io rchar, summed over ranks, from run.json)
#                are the training split's stored size (whole HDF5 chunks) once, within 1%, where
#                every rank's own copy (data.stage_copy = rank) reads it 4 times.
#   shm_small    Open MPI's shared-window directory (osc_sm_backing_directory) on an 8 MB tmpfs:
#                every rank fails with the size needed and the space free, exit non-zero, no hang.
#   dir_full     data.stage_dir on an 8 MB tmpfs, smaller than a node's share: one message, no hang.
#   dir_readonly data.stage_dir on a read-only tmpfs: one message naming the directory.
#   hang         a rank blocks before the exchange: the watchdog (run.watchdog_long_s = 8) ends the
#                job in under 60 s with its message.
# The mount modes need root (mount -t tmpfs); without it they report themselves skipped (exit 77).
# usage: staging_check.sh MODE SCALETRAIN DATA OUTDIR MPIRUN...
set -uo pipefail
mode=$1 st=$2 data=$3 out=$4
shift 4
mpirun=("$@")
# A tmpfs an earlier run left mounted under OUTDIR (killed before its trap) is unmounted first.
for m in $(findmnt -rn -o TARGET 2> /dev/null | grep -F "$out/" | sort -r); do umount "$m"; done
rm -rf "$out"
mkdir -p "$out"
common=(--data.path "$data" --train.max_steps 2 --train.batch 64 --train.evaluate false --run.threads 1)

mounted=""
unmount() { [ -z "$mounted" ] || umount "$mounted" || echo "FAIL: could not unmount $mounted"; }
trap unmount EXIT
mount_tmpfs() {  # dir options
  mkdir -p "$1"
  mount -t tmpfs -o "$2" tmpfs "$1" 2> /dev/null || { echo "SKIP: cannot mount a tmpfs (needs root)"; exit 77; }
  mounted=$1
}

expect_failure() {  # limit times message command... (times: "once", or "any" for one per rank)
  local limit=$1 times=$2 message=$3
  shift 3
  local start=$SECONDS rc=0
  timeout --kill-after=5 "$limit" "$@" > "$out/run.log" 2>&1 || rc=$?
  cat "$out/run.log"
  [ "$rc" -ne 0 ] || { echo "FAIL: the job exited 0"; exit 1; }
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { echo "FAIL: still running after $limit s (hang)"; exit 1; }
  local n
  n=$(grep -cE -- "$message" "$out/run.log")
  [ "$n" -ge 1 ] || { echo "FAIL: no message matching: $message"; exit 1; }
  [ "$times" = any ] || [ "$n" -eq 1 ] || { echo "FAIL: the message came $n times, not once: $message"; exit 1; }
  echo "OK: exit $rc after $((SECONDS - start)) s with: $(grep -m1 -oE -- "$message" "$out/run.log")"
}

case $mode in
  read_once)
    for copy in node rank; do
      "${mpirun[@]}" -np 4 "$st" "${common[@]}" --data.node_ranks 2 --data.stage_copy $copy \
        --run.dir "$out/$copy" > "$out/$copy.log" 2>&1 || { cat "$out/$copy.log"; echo "FAIL: the $copy run failed"; exit 1; }
      grep '^staging train' "$out/$copy.log"
    done
    /usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def train(copy):
    return next(s for s in json.load(open(f"{out}/{copy}/run.json"))["staging"] if s["split"] == "train")
node, rank = train("node"), train("rank")
size = node["stored_bytes"]
rn, rr = node["process_read_bytes"] / size, rank["process_read_bytes"] / size
print(f"split stored in {size} bytes ({node['split_bytes']} of samples and labels); rchar over 4 ranks: node-shared {node['process_read_bytes']} ({rn:.4f}x), "
      f"per-rank copies {rank['process_read_bytes']} ({rr:.4f}x); nodes {node['nodes']}, "
      f"exchanged per node {node['exchanged_bytes_per_node']}")
assert node["nodes"] == 2, node["nodes"]
assert node["file_bytes"] == node["split_bytes"], "the loaders' own counts must add up to the split once"
assert 1.0 <= rn <= 1.01, f"node-shared staging read {rn:.4f}x the split, not once"
assert 3.9 <= rr <= 4.1, f"per-rank copies read {rr:.4f}x the split, not 4 times: the check cannot tell"
assert 0 < node["exchanged_bytes_per_node"] < size
print("OK: the split was read once with node-shared staging, 4 times with per-rank copies")
PY
    ;;
  shm_small)
    mount_tmpfs "$out/shm" size=8m
    expect_failure 120 once "needs [0-9.]+ MB in $out/shm, where Open MPI backs shared memory windows \(osc_sm_backing_directory\), but [0-9.]+ MB are free there" \
      "${mpirun[@]}" --mca osc_sm_backing_directory "$out/shm" -np 2 "$st" "${common[@]}"
    ;;
  dir_full)
    mount_tmpfs "$out/full" size=8m
    expect_failure 120 once "data.stage_dir = $out/full on node 0 \(host [^)]+\) is full: the node's share of the split needs [0-9.]+ MB, [0-9.]+ MB are free there" \
      "${mpirun[@]}" -np 2 "$st" "${common[@]}" --data.stage_dir "$out/full" --data.shuffle node
    ;;
  dir_readonly)
    mount_tmpfs "$out/ro" ro,size=64m
    expect_failure 120 once "cannot create $out/ro/scaletrain-stage-train-node0-[0-9]+.bin in data.stage_dir on node 0 \(host [^)]+\): Read-only file system" \
      "${mpirun[@]}" -np 2 "$st" "${common[@]}" --data.stage_dir "$out/ro" --data.shuffle node
    ;;
  hang)
    expect_failure 60 any "watchdog: rank [0-9]+ \(host [^)]+\) has been in phase 'start-up' of step 0 for [0-9.]+ s, longer than run.watchdog_long_s = 8 s" \
      "${mpirun[@]}" -np 2 "$st" "${common[@]}" --data.node_ranks 1 --testing.inject_stage_hang_rank 1 \
      --run.watchdog_s 4 --run.watchdog_long_s 8
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
