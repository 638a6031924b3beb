#!/usr/bin/env python3
"""Compares the per-interval training losses of two metrics.jsonl files bit for bit.

usage: compare_losses.py A/metrics.jsonl B/metrics.jsonl [--steps N]
Exit 0 when both have the same intervals (at least N steps) with identical losses and accuracies;
exit 1 naming the first differing step otherwise."""
import argparse
import json
import math
import sys


def intervals(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--steps", type=int, default=0)
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
    for x, y in zip(a, b):
        if x["first_step"] != y["first_step"] or x["loss"] != y["loss"] or x["accuracy"] != y["accuracy"]:
            print(f"step {x['first_step']}: loss {x['loss']!r} vs {y['loss']!r}, "
                  f"accuracy {x['accuracy']!r} vs {y['accuracy']!r}")
            return 1
    print(f"{len(a)} intervals, {steps} steps: losses identical "
          f"(first {a[0]['loss']!r}, last {a[-1]['loss']!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
