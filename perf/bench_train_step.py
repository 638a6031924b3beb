#!/usr/bin/python3
# Training-step throughput of the zoo (mlp, lenet, fmnist_sepcnn on 28x28x1) beside PyTorch 1.13 on
# the same model, global batch and cores, all measured in this one invocation, with this machine's
# measured fp32 peak (perf/bench_peak_flops). scaletrain runs its real app (synthetic data through
# the real loader, real MPI ranks); PyTorch runs perf/pytorch_anchor.py.
"""usage: /usr/bin/python3 perf/bench_train_step.py [--build build/cpu] [--models ...] [--steps-scale 1.0]
                                                 [--json FILE]

Configurations (2 cores): 2x1 = 2 ranks x 1 thread (scaletrain: mpirun, one rank per core; PyTorch:
DDP with gloo), 1x2 = 1 process x 2 threads. The ratio column compares scaletrain's best with
PyTorch's best configuration. Training FLOPs are 3x the forward FLOPs the model summary counts.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BATCH = {"mlp": 256, "lenet": 256, "fmnist_sepcnn": 128}
STEPS = {"mlp": 300, "lenet": 200, "fmnist_sepcnn": 30}


def mpirun_flags():
    flags = ["--oversubscribe"]
    if os.geteuid() == 0:
        flags.append("--allow-run-as-root")
    return flags


def run_scaletrain(build, model, ranks, threads, steps, workdir, extra=()):
    run_dir = os.path.join(workdir, f"{model}-{ranks}x{threads}-{len(os.listdir(workdir))}")
    bind = ["--bind-to", "core"] if ranks > 1 else ["--bind-to", "none"]
    cmd = (["mpirun", "-np", str(ranks)] + mpirun_flags() + bind +
           [os.path.join(build, "src/apps/scaletrain"), "--model.name", model, "--data.path", "synthetic",
            "--data.synthetic_samples", "8192", "--train.batch", str(BATCH[model]), "--train.epochs", "1000",
            "--train.max_steps", str(steps), "--train.warmup_log_steps", str(max(3, steps // 10)),
            "--train.log_every", str(max(1, steps // 10)), "--train.evaluate", "false",
            "--run.threads", str(threads), "--run.dir", run_dir] + list(extra))
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_train_step: scaletrain failed ({' '.join(cmd)}):\n{out.stdout}\n{out.stderr}")
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    return {"images_per_s": run["samples_per_s"], "flops": 3 * run["forward_flops_per_sample"],
            "exposed_allreduce": run.get("phase_share", {}).get("allreduce_exposed", 0.0),
            "total_allreduce": run.get("allreduce_total_share", 0.0)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--models", nargs="+", default=list(BATCH), choices=list(BATCH))
    p.add_argument("--steps-scale", type=float, default=1.0, help="scale the timed step counts")
    p.add_argument("--seconds", type=float, default=4.0, help="timed seconds per PyTorch config")
    p.add_argument("--json", default="", help="write all figures to this file")
    a = p.parse_args()

    peak = json.loads(subprocess.run([os.path.join(a.build, "perf/bench_peak_flops"), "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    print(f"measured fp32 peak: {peak['peak_gflops']:.0f} GFLOP/s on {peak['cores']} cores "
          f"({peak['peak_gflops_1core']:.0f} on one; {peak['isa']} FMA chains)\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="st-bench-") as work:
        for model in a.models:
            steps = max(5, int(STEPS[model] * a.steps_scale))
            ours = {cfg: run_scaletrain(a.build, model, r, t, steps, work) for cfg, (r, t) in
                    {"2x1": (2, 1), "1x2": (1, 2)}.items()}
            anchor = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pytorch_anchor.py"), "--json",
                                     "--models", model, "--batch", str(BATCH[model]), "--seconds", str(a.seconds)],
                                    check=True, capture_output=True, text=True, timeout=600).stdout
            torch = {"2x1": 0.0, "1x2": 0.0}  # each the better of PyTorch's NCHW and channels_last runs
            for line in anchor.splitlines():
                r = json.loads(line)
                cfg = "2x1" if r["config"].startswith("ddp") else "1x2"
                torch[cfg] = max(torch[cfg], r["images_per_s"])
            best_torch = max(torch.values())
            for cfg in ("2x1", "1x2"):
                o = ours[cfg]
                gflops = o["images_per_s"] * o["flops"] / 1e9
                rows.append({"model": model, "config": cfg, "global_batch": BATCH[model],
                             "scaletrain_images_per_s": o["images_per_s"], "pytorch_images_per_s": torch[cfg],
                             "ratio_vs_pytorch_best": o["images_per_s"] / best_torch, "gflops": gflops,
                             "fraction_of_peak": gflops / peak["peak_gflops"],
                             "pytorch_fraction_of_peak": torch[cfg] * o["flops"] / 1e9 / peak["peak_gflops"],
                             "exposed_allreduce_share": o["exposed_allreduce"]})
            print(f"{model}: done", file=sys.stderr, flush=True)

    hdr = (f"{'model':14s} {'config':6s} {'batch':>5s} {'scaletrain img/s':>17s} {'PyTorch img/s':>14s} "
           f"{'x PyTorch best':>15s} {'GFLOP/s':>8s} {'% peak':>7s} {'PyTorch % peak':>15s}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['model']:14s} {r['config']:6s} {r['global_batch']:5d} {r['scaletrain_images_per_s']:17.0f} "
              f"{r['pytorch_images_per_s']:14.0f} {r['ratio_vs_pytorch_best']:15.2f} {r['gflops']:8.1f} "
              f"{100 * r['fraction_of_peak']:6.1f}% {100 * r['pytorch_fraction_of_peak']:14.1f}%")
    print("\n2x1: 2 ranks x 1 thread (scaletrain mpirun / PyTorch DDP gloo); 1x2: 1 process x 2 threads.\n"
          "PyTorch img/s: the better of NCHW and channels_last (convolutional models), OpenBLAS for Linear.\n"
          "x PyTorch best: scaletrain img/s over the better of PyTorch's two configurations.")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"peak": peak, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
