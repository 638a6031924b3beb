#!/usr/bin/python3
# Checks a run's timeline.json (Chrome trace) as a user opening it in Perfetto relies on it: one
# process per rank, every step's phases on the compute track (device backends: the host-timed
# phases on the host track) without overlaps, each gradient bucket's all-reduce on the all-reduce
# track exactly once for every step (with train.accumulate_steps: once per update, not per micro-batch), with --copy-track each batch's host-to-device copy on the copy track, the
# training split's staging on the staging track, and the ranks' clocks aligned: no rank can finish
# a bucket's all-reduce before every other rank has started it.
"""usage: check_timeline.py RUN_DIR --ranks N --steps S [--tolerance-us T] [--copy-track]"""
import argparse
import json
import os
import sys

PHASES = ("data_wait", "input", "forward", "backward", "allreduce_exposed", "optimizer")
COMPUTE, ALLREDUCE, COPY, HOST, STAGING = 0, 1, 2, 3, 4


def fail(msg):
    sys.exit(f"check_timeline: {msg}")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("run_dir")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--tolerance-us", type=float, default=2000.0,
                   help="allowed clock error between ranks in microseconds")
    p.add_argument("--copy-track", action="store_true",
                   help="a device run: every step's batch copy must be on the copy track")
    a = p.parse_args()
    path = os.path.join(a.run_dir, "timeline.json")
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["ph"] == "M"}
    pids = sorted({e["pid"] for e in spans})
    if pids != list(range(a.ranks)):
        fail(f"{path}: expected ranks 0..{a.ranks - 1} as processes, found {pids}")
    for r in pids:
        if names.get((r, None)) != f"rank {r}":
            fail(f"{path}: process {r} is named {names.get((r, None))!r}, not 'rank {r}'")

    buckets_per_rank = {}
    for r in pids:
        tracks = {t: sorted((e for e in spans if e["pid"] == r and e["tid"] == t), key=lambda e: e["ts"])
                  for t in (COMPUTE, HOST)}
        for events_on_track in tracks.values():
            for prev, cur in zip(events_on_track, events_on_track[1:]):
                if cur["ts"] < prev["ts"] + prev["dur"] - 1.0:
                    fail(f"rank {r}: {cur['name']} of step {cur['args']['step']} starts before "
                         f"{prev['name']} of step {prev['args']['step']} ends")
        compute = tracks[COMPUTE] + tracks[HOST]
        if not any(e["pid"] == r and e["tid"] == STAGING and e["name"] == "staging train" for e in spans):
            fail(f"rank {r}: no 'staging train' event on the staging track")
        if a.copy_track:
            copies = [e for e in spans if e["pid"] == r and e["tid"] == COPY]
            if len(copies) < a.steps or any(e["name"] != "h2d" for e in copies):
                fail(f"rank {r}: {len(copies)} events on the copy track, expected at least {a.steps} 'h2d' copies")
            if names.get((r, COPY)) != "copy":
                fail(f"rank {r}: track {COPY} is named {names.get((r, COPY))!r}, not 'copy'")
        for step in range(a.steps):
            got = {e["name"] for e in compute if e["args"]["step"] == step}
            missing = [ph for ph in PHASES if ph not in got]
            if missing:
                fail(f"rank {r}: step {step} has no {', '.join(missing)} on the compute track")
        buckets = {}
        for e in spans:
            if e["pid"] == r and e["tid"] == 1:
                if not e["name"].startswith("allreduce b"):
                    fail(f"rank {r}: unexpected event {e['name']!r} on the all-reduce track")
                key = (e["args"]["step"], e["name"])
                if key in buckets:
                    fail(f"rank {r}: {e['name']} is all-reduced more than once in step {key[0]}")
                buckets[key] = (e["ts"], e["ts"] + e["dur"])
        per_step = {}
        for step, name in buckets:
            per_step.setdefault(step, set()).add(name)
        if sorted(per_step) != list(range(a.steps)) or len({frozenset(v) for v in per_step.values()}) != 1:
            fail(f"rank {r}: the all-reduce track does not hold the same buckets for steps 0..{a.steps - 1}")
        buckets_per_rank[r] = buckets

    keys = set(buckets_per_rank[0])
    for r in pids:
        if set(buckets_per_rank[r]) != keys:
            fail(f"rank {r} all-reduced other buckets than rank 0")
    worst = float("-inf")
    for key in keys:
        last_start = max(buckets_per_rank[r][key][0] for r in pids)
        first_end = min(buckets_per_rank[r][key][1] for r in pids)
        worst = max(worst, last_start - first_end)
        if last_start - first_end > a.tolerance_us:
            fail(f"{key[1]} of step {key[0]}: a rank finished it {last_start - first_end:.0f} us before another "
                 f"rank started it: the ranks' clocks are not aligned")
    nb = len({name for _, name in keys})
    print(f"check_timeline: {path}: {a.ranks} ranks, {a.steps} steps, {nb} buckets per step, "
          f"phases complete and ordered; latest start minus earliest end of a bucket across ranks at most {worst:.0f} us (tolerance "
          f"{a.tolerance_us:.0f} us): OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
