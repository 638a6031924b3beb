#!/usr/bin/env python3
"""Compares the per-interval training losses of two metrics.jsonl files bit for bit.

usage: compare_losses.py A/metrics.jsonl B/metrics.jsonl [--steps N] [--rtol R]
Exit 0 when both have the same intervals (at least N steps) with identical losses, accuracies, loss
scales and skipped-step counts;
exit 1 naming the first differing step otherwise. With --rtol R, losses need only agree within R
(relative; for runs on different rank counts, whose sums round differently).
Record lines are skipped; at a resumed_from record, the intervals an interrupted run had logged after
its checkpoint are dropped (they were run again)."""
import argparse
import json
import math
import sys


def intervals(path):
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    out = []
    for j in lines:
        if j.get("record") == "resumed_from":
            # Steps after the checkpoint that an interrupted run had logged were run again.
            out = [iv for iv in out if iv["first_step"] < j["start"]["step"]]
        if "record" not in j:
            out.append(j)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--rtol", type=float, default=0.0,
                   help="losses within this relative tolerance (accuracy not compared); 0: bit for bit")
    args = p.parse_args()
    a, b = intervals(args.a), intervals(args.b)
    steps = sum(iv["steps"] for iv in a)
    if steps < args.steps:
        print(f"{args.a}: {steps} steps logged, expected at least {args.steps}")
        return 1
    if len(a) != len(b):
        print(f"{args.a} has {len(a)} intervals, {args.b} has {len(b)}")
        return 1
    bad = [iv["first_step"] for iv in a if not isinstance(iv["loss"], float) or not math.isfinite(iv["loss"])]
    if bad:
        print(f"{args.a}: non-finite loss from step {bad[0]}: the run diverged, nothing to compare")
        return 1
    worst = 0.0
    for x, y in zip(a, b):
        if args.rtol > 0 and x["first_step"] == y["first_step"]:
            rel = abs(x["loss"] - y["loss"]) / max(abs(x["loss"]), 1e-30)
            worst = max(worst, rel)
            if rel > args.rtol:
                print(f"step {x['first_step']}: loss {x['loss']!r} vs {y['loss']!r}: relative difference "
                      f"{rel:.3g} > {args.rtol}")
                return 1
            continue
        if x.get("loss_scale") != y.get("loss_scale") or x.get("skipped_steps") != y.get("skipped_steps"):
            print(f"step {x['first_step']}: loss scale {x.get('loss_scale')!r} vs {y.get('loss_scale')!r}, "
                  f"skipped steps {x.get('skipped_steps')!r} vs {y.get('skipped_steps')!r}")
            return 1
        if x["first_step"] != y["first_step"] or x["loss"] != y["loss"] or x["accuracy"] != y["accuracy"]:
            print(f"step {x['first_step']}: loss {x['loss']!r} vs {y['loss']!r}, "
                  f"accuracy {x['accuracy']!r} vs {y['accuracy']!r}")
            return 1
    if args.rtol > 0:
        print(f"{len(a)} intervals, {steps} steps: losses within {args.rtol} (worst {worst:.3g}; "
              f"first {a[0]['loss']!r}, last {a[-1]['loss']!r} vs {b[-1]['loss']!r})")
        return 0
    print(f"{len(a)} intervals, {steps} steps: losses identical "
          f"(first {a[0]['loss']!r}, last {a[-1]['loss']!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
