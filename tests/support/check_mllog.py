#!/usr/bin/python3
# Checks a run's MLPerf log (run.mllog). Always: every `:::MLLOG` line parses, has namespace,
# time_ms, event_type, key, value and metadata (file, lineno), and the log keeps MLCommons' MLPerf
# HPC 3.0.0 rules (tests/support/mllog_rules.py: each key's count and each line's condition).
# Given the run's OUTPUT (stdout) and RUN_DIR, also: the lines equal RUN_DIR/mllog.log's; the
# required events appear in order (init, run, staging, then per epoch epoch_start < epoch_stop <
# eval_accuracy, run_stop last); global_batch_size, number_of_ranks, eval_samples, cache_clear and
# the default submission_platform match run.json and metrics.jsonl; each eval_accuracy matches
# metrics.jsonl's evaluation record; run.json's time_to_accuracy_s is the run_seconds of the first
# evaluation at or above the target, and the MLLOG times agree with it.
"""usage: check_mllog.py OUTPUT RUN_DIR --expect-target reached|missed [--stopped-at-target]
       check_mllog.py --rules-only MLLOG_FILE"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_rules import rule_problems  # noqa: E402

REQUIRED = ["init_start", "init_stop", "run_start", "run_stop", "staging_start", "staging_stop",
            "epoch_start", "epoch_stop", "eval_accuracy", "global_batch_size", "number_of_ranks"]
FIELDS = ["namespace", "time_ms", "event_type", "key", "value", "metadata"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def parse_lines(text, where):
    events = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith(":::MLLOG "):
            continue
        try:
            e = json.loads(line[len(":::MLLOG "):])
        except json.JSONDecodeError as err:
            fail(f"{where}:{n}: not JSON after :::MLLOG: {err}")
        if list(e.keys()) != FIELDS:
            fail(f"{where}:{n}: keys {list(e.keys())}, expected {FIELDS}")
        if not isinstance(e["time_ms"], int) or not {"file", "lineno"} <= set(e["metadata"]):
            fail(f"{where}:{n}: time_ms must be an integer and metadata must name file and lineno: {line}")
        key = e["key"]
        kind = "INTERVAL_START" if key.endswith("_start") else "INTERVAL_END" if key.endswith("_stop") else "POINT_IN_TIME"
        if e["event_type"] != kind:
            fail(f"{where}:{n}: {e['key']} has event_type {e['event_type']}, expected {kind}")
        events.append(e)
    return events


def first(events, key, epoch=None):
    for i, e in enumerate(events):
        if e["key"] == key and (epoch is None or e["metadata"].get("epoch_num") == epoch):
            return i
    fail(f"no {key} event" + (f" for epoch_num {epoch}" if epoch else ""))


def check_order(events):
    times = [e["time_ms"] for e in events]
    if times != sorted(times):
        fail("time_ms goes backwards between lines")
    order = ["init_start", "init_stop", "run_start", "staging_start", "staging_stop", "epoch_start"]
    idx = [first(events, k) for k in order]
    if idx != sorted(idx):
        fail(f"events out of order: {order} at lines {idx}")
    if events[-1]["key"] != "run_stop":
        fail(f"the last event is {events[-1]['key']}, not run_stop")
    epochs = sorted({e["metadata"]["epoch_num"] for e in events if e["key"] == "epoch_start"})
    if epochs != list(range(1, len(epochs) + 1)):
        fail(f"epoch_num of epoch_start events: {epochs}, expected 1..{len(epochs)}")
    for k in epochs:
        seq = [first(events, "epoch_start", k), first(events, "epoch_stop", k), first(events, "eval_accuracy", k)]
        if seq != sorted(seq) or (k > 1 and seq[0] < first(events, "eval_accuracy", k - 1)):
            fail(f"epoch {k}: epoch_start, epoch_stop and eval_accuracy out of order")
    return epochs


def read_run_dir(run_dir):
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        run = json.load(f)
    evals = []
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            j = json.loads(line)
            if j.get("record") == "evaluation":
                evals.append(j)
    return run, evals


def check_time_to_accuracy(run, evals, events, expect, stopped):
    target = run["target_accuracy"]
    hits = [e for e in evals if e["eval_accuracy"] >= target]
    tta = run["time_to_accuracy_s"]
    status = events[-1]["metadata"].get("status")
    if expect == "missed":
        if hits or tta is not None or run["target_epoch"] is not None or status != "aborted":
            fail(f"target {target} should be missed: evaluations {[e['eval_accuracy'] for e in evals]}, "
                 f"time_to_accuracy_s {tta}, target_epoch {run['target_epoch']}, run_stop status {status}")
        return "missed"
    if not hits:
        fail(f"no evaluation reached the target {target}: {[e['eval_accuracy'] for e in evals]}")
    hit = hits[0]
    if evals.index(hit) == 0:
        fail("the first evaluation already reached the target: choose a target that takes more than one epoch")
    if tta is None or abs(tta - hit["run_seconds"]) > 1e-9 or run["target_epoch"] != hit["epoch"]:
        fail(f"run.json time_to_accuracy_s {tta} / target_epoch {run['target_epoch']}; metrics.jsonl's first "
             f"evaluation at or above {target}: epoch {hit['epoch']} at {hit['run_seconds']} s")
    run_start = events[first(events, "run_start")]["time_ms"]
    eval_ms = events[first(events, "eval_accuracy", hit["epoch"])]["time_ms"]
    if abs((eval_ms - run_start) / 1e3 - tta) > 0.003:
        fail(f"MLLOG: eval_accuracy - run_start = {(eval_ms - run_start) / 1e3} s, run.json says {tta} s")
    if status != "success":
        fail(f"run_stop status {status}, expected success")
    if stopped and len(evals) != hit["epoch"]:
        fail(f"the run went on after reaching the target in epoch {hit['epoch']}: {len(evals)} evaluations")
    return f"epoch {hit['epoch']} after {tta:.3f} s"


def check_rules(events, where):
    problems = rule_problems(events)
    if problems:
        fail(f"{where} breaks MLPerf HPC 3.0.0's logging rules:\n  " + "\n  ".join(problems))


def check_run_json(events, run, evals):
    for key, want in [("global_batch_size", run["global_batch"]), ("number_of_ranks", run["world_size"]),
                      ("cache_clear", bool(run["cache_clear"] and run["cache_clear"]["cleared"]))]:
        if events[first(events, key)]["value"] != want:
            fail(f"{key} = {events[first(events, key)]['value']}, run.json says {want}")
    if not run["config"]["run"]["mllog_submission"]["platform"]:
        logged = events[first(events, "submission_platform")]["value"]
        if logged != run["platform"]["description"]:
            fail(f"submission_platform {logged!r}, run.json's platform {run['platform']['description']!r}")
    for e in evals:
        if events[first(events, "eval_samples")]["value"] != e["eval_samples"]:
            fail(f"eval_samples = {events[first(events, 'eval_samples')]['value']}, epoch {e['epoch']} "
                 f"evaluated {e['eval_samples']} samples")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output", nargs="?")
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--rules-only", metavar="MLLOG_FILE")
    ap.add_argument("--expect-target", choices=["reached", "missed"])
    ap.add_argument("--stopped-at-target", action="store_true")
    a = ap.parse_args()
    if a.rules_only:
        with open(a.rules_only, encoding="utf-8") as f:
            events = parse_lines(f.read(), a.rules_only)
        check_rules(events, a.rules_only)
        print(f"OK: {len(events)} MLLOG lines keep MLPerf HPC 3.0.0's logging rules")
        return
    if not (a.output and a.run_dir and a.expect_target):
        ap.error("OUTPUT, RUN_DIR and --expect-target are required without --rules-only")
    with open(a.output, encoding="utf-8") as f:
        events = parse_lines(f.read(), a.output)
    log_path = os.path.join(a.run_dir, "mllog.log")
    with open(log_path, encoding="utf-8") as f:
        if parse_lines(f.read(), log_path) != events:
            fail(f"{log_path} differs from the :::MLLOG lines of {a.output}")
    missing = [k for k in REQUIRED if k not in {e["key"] for e in events}]
    if missing:
        fail(f"missing events: {missing}")
    check_rules(events, log_path)
    epochs = check_order(events)
    run, evals = read_run_dir(a.run_dir)
    check_run_json(events, run, evals)
    if [e["epoch"] for e in evals] != epochs:
        fail(f"metrics.jsonl evaluations of epochs {[e['epoch'] for e in evals]}, MLLOG epochs {epochs}")
    for e in evals:
        logged = events[first(events, "eval_accuracy", e["epoch"])]["value"]
        if logged != e["eval_accuracy"]:
            fail(f"epoch {e['epoch']}: MLLOG eval_accuracy {logged}, metrics.jsonl {e['eval_accuracy']}")
    what = check_time_to_accuracy(run, evals, events, a.expect_target, a.stopped_at_target)
    print(f"OK: {len(events)} MLLOG lines keep MLPerf HPC 3.0.0's logging rules, {len(epochs)} epochs in order; "
          f"target {run['target_accuracy']}: {what}")


if __name__ == "__main__":
    main()
