#!/usr/bin/python3
# Strong scaling on this machine: the same global batch on 1 rank (one core) and on 2 ranks (one
# core each), lenet and fmnist_sepcnn, with images/s, speedup, scaling efficiency and the exposed
# all-reduce share of step time; 1 rank x 2 threads is shown as the anchor a user would compare with.
# At 2 ranks both ways of driving MPI progress during backward are measured: a communication thread
# (comm.progress = "thread") and MPI_Test polls from the backward loop (comm.progress = "test").
"""usage: /usr/bin/python3 perf/bench_rank_scaling.py [--build build/cpu] [--models lenet fmnist_sepcnn]"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train_step import BATCH, ROOT, STEPS, run_scaletrain  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--models", nargs="+", default=["lenet", "fmnist_sepcnn"], choices=list(BATCH))
    p.add_argument("--steps-scale", type=float, default=1.0)
    p.add_argument("--bucket-mb", type=float, default=1.0,
                   help="gradient bucket size (small enough that these models have several buckets to overlap)")
    a = p.parse_args()
    hdr = (f"{'model':14s} {'ranks x threads':>15s} {'global batch':>12s} {'img/s':>9s} {'speedup':>8s} "
           f"{'efficiency':>10s} {'progress':>8s} {'all-reduce exposed / total':>27s}")
    print(hdr)
    print("-" * len(hdr))
    with tempfile.TemporaryDirectory(prefix="st-scaling-") as work:
        for model in a.models:
            steps = max(5, int(STEPS[model] * a.steps_scale))
            base = None
            for ranks, threads, progress in ((1, 1, "thread"), (2, 1, "thread"), (2, 1, "test"), (1, 2, "thread")):
                r = run_scaletrain(a.build, model, ranks, threads, steps, work,
                                   ["--comm.bucket_mb", str(a.bucket_mb), "--comm.progress", progress])
                base = base or r["images_per_s"]
                cores = ranks * threads
                speedup = r["images_per_s"] / base
                print(f"{model:14s} {f'{ranks} x {threads}':>15s} {BATCH[model]:12d} {r['images_per_s']:9.0f} "
                      f"{speedup:8.2f} {100 * speedup / cores:9.1f}% {progress if ranks > 1 else '-':>8s} "
                      f"{100 * r['exposed_allreduce']:17.1f}% / {100 * r['total_allreduce']:5.1f}%",
                      flush=True)
    print("\nspeedup and efficiency against 1 rank x 1 thread; efficiency = speedup / cores used.\n"
          "all-reduce: share of step time the step waited for gradients after backward (exposed), and the\n"
          f"share the all-reduces took in all, mostly hidden behind backward ({a.bucket_mb} MB buckets).\n"
          "progress: thread = a communication thread drives the all-reduces; test = MPI_Test polls between\n"
          "layers of backward (the default). With test, an all-reduce's completion is only seen at the next\n"
          "poll, so its total time reads long; compare the exposed share.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
