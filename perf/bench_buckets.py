#!/usr/bin/python3
# Gradient bucket size at 2 ranks x 1 thread: comm.bucket_mb = auto (probe + timed backward + model)
# against fixed 1, 4 and 25 MB buckets, lenet and fmnist_sepcnn, through the real scaletrain app:
# exposed and total all-reduce share of step time, images/s, and auto's chosen size. The settings
# alternate within each repetition, so a busy machine hurts them alike; the table shows the range.
"""usage: /usr/bin/python3 perf/bench_buckets.py [--build build/cpu] [--models lenet fmnist_sepcnn] [--repeats 2]"""
import argparse
import math
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train_step import BATCH, ROOT, run_scaletrain  # noqa: E402

STEPS = {"mlp": 200, "lenet": 150, "fmnist_sepcnn": 25}
SETTINGS = ["auto", "1", "4", "25"]
WARMUP = 6  # auto chooses after the run's 4th step: the timed steps all use the chosen size


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def chosen(buckets):
    if buckets.get("setting") != "auto":
        return "-"
    if buckets.get("chosen_after_step") is None:
        return "(not chosen)"
    size = "one bucket" if buckets.get("one_bucket") else f"{buckets['bucket_mb']:g} MB"
    return f"{size} ({buckets['buckets']})"


def verdict(runs, fixed):
    """auto against the fixed size with the lowest median exposed share: medians over the runs, and no
    worse when auto's median is within 0.2 points plus two standard errors of the difference (run-to-run
    noise: with a single bucket, lenet's settings are one configuration and still spread by points)."""
    def stats(s):
        xs = [100 * r["exposed_allreduce"] for r in runs[s]]
        se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
        return statistics.median(xs), se
    best = min(fixed, key=lambda s: stats(s)[0])
    (auto_med, auto_se), (best_med, best_se) = stats("auto"), stats(best)
    allowed = 0.2 + 2 * math.sqrt(auto_se ** 2 + best_se ** 2)
    ok = auto_med <= best_med + allowed
    return (f"auto's median exposed share {auto_med:.2f}% vs best fixed ({best} MB) {best_med:.2f}%: "
            f"{'no worse' if ok else 'WORSE'} (allowed {allowed:.2f} points: 0.2 + 2 standard errors)")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--models", nargs="+", default=["lenet", "fmnist_sepcnn"], choices=list(BATCH))
    p.add_argument("--repeats", type=int, default=2, help="runs per model and setting (alternating)")
    p.add_argument("--steps-scale", type=float, default=1.0)
    p.add_argument("--progress", default="test", choices=["test", "thread"], help="comm.progress")
    p.add_argument("--settings", nargs="+", default=SETTINGS, help="comm.bucket_mb values (auto and sizes in MB)")
    a = p.parse_args()
    hdr = (f"{'model':14s} {'bucket_mb':>9s} {'chosen (buckets)':>18s} {'img/s':>13s} "
           f"{'exposed':>13s} {'total':>13s} {'probe ms':>9s}")
    print(hdr)
    print("-" * len(hdr))
    with tempfile.TemporaryDirectory(prefix="st-buckets-") as work:
        for model in a.models:
            steps = max(WARMUP + 5, int(STEPS[model] * a.steps_scale))
            runs = {s: [] for s in a.settings}
            for _ in range(a.repeats):
                for s in a.settings:
                    runs[s].append(run_scaletrain(a.build, model, 2, 1, steps, work,
                                                  ["--comm.bucket_mb", s, "--comm.progress", a.progress],
                                                  warmup=WARMUP))
            for s in a.settings:
                rs = runs[s]
                b = rs[-1]["buckets"]
                probe = f"{1e3 * b['probe_seconds']:9.0f}" if b.get("probe_seconds") else f"{'-':>9s}"
                print(f"{model:14s} {s:>9s} {chosen(b):>18s} {span([r['images_per_s'] for r in rs], '{:.0f}'):>13s} "
                      f"{span([100 * r['exposed_allreduce'] for r in rs], '{:.1f}%'):>13s} "
                      f"{span([100 * r['total_allreduce'] for r in rs], '{:.1f}%'):>13s} {probe}", flush=True)
            fixed = [s for s in a.settings if s != "auto"]
            if "auto" not in runs or not fixed:
                continue
            print(f"{model:14s} {verdict(runs, fixed)}", flush=True)
    print(f"\n2 ranks x 1 thread, comm.progress = {a.progress}, {a.repeats} runs per row (min-max), warm-up "
          f"{WARMUP} steps excluded.\nexposed: share of step time waiting for gradients after backward; total: "
          "share the all-reduces took in all.\nchosen: auto's bucket size (and count); the last run's. probe ms: its "
          "start-up all-reduce probe.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
