#!/usr/bin/python3
# Training-step throughput of the zoo (mlp, lenet, fmnist_sepcnn on 28x28x1; with --models, the
# ResNets: resnet20 on 28x28x1, resnet18 and resnet50 on 224x224x3 with 1000 classes) beside PyTorch
# 1.13 on the same model, global batch and cores, all measured in this one invocation, with this
# machine's measured fp32 and bf16 peaks (perf/bench_peak_flops). scaletrain runs its real app
# (synthetic data through the real loader, real MPI ranks); PyTorch runs perf/pytorch_anchor.py. Each
# precision is compared with PyTorch in the same precision: fp32 with fp32, bf16 with PyTorch's bf16
# autocast.
"""usage: /usr/bin/python3 perf/bench_train_step.py [--build build/cpu] [--models ...] [--steps-scale 1.0]
                                                 [--precisions fp32 bf16] [--repeats 2] [--json FILE]
                                                 [--baseline OTHER_BUILD/src/apps/scaletrain]

Models: mlp, lenet and fmnist_sepcnn by default; --models resnet20 resnet18 resnet50 runs the ResNets.
mlp, lenet, fmnist_sepcnn and resnet20 train on scaletrain's synthetic data (--data.path synthetic:
28x28x1, 10 classes). resnet18 and resnet50 train on 224x224x3 images of 1000 classes: a file that
st-synth writes into the temporary work directory once per invocation (just enough samples that a run
stays within one epoch), at a small global batch (16 and 8: 2 ranks x 8 and x 4) and few steps, the
first of them (the slow ones) excluded from img/s. PyTorch's twins get the same shapes, classes and
global batch (pytorch_anchor.py: akamaster's CIFAR ResNet-20 with a 1-channel stem, torchvision's
resnet18 and resnet50).

Each framework runs --repeats times per model and precision, alternating with the other, and each
configuration keeps its best run (PyTorch: its best run and format). --baseline runs another build's
scaletrain in the same alternation and adds its img/s and the ratio to it, so that a change is judged
side by side with the build before it.

Configurations (2 cores): 2x1 = 2 ranks x 1 thread (scaletrain: mpirun, one rank per core; PyTorch:
DDP with gloo), 1x2 = 1 process x 2 threads. Precisions: fp32, and bf16 (scaletrain
--train.precision bf16; PyTorch forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)).
The ratio column compares each scaletrain configuration with PyTorch's best configuration of the
same precision. Training FLOPs are run.json's training_flops_per_sample: 3x the forward FLOPs the
model summary counts, but 2x for the first layer with parameters, which computes no input gradient
(neither does PyTorch's); % peak is against the fp32 peak for fp32 rows and against the bf16 peak for bf16
rows: the higher of the vdpbf16ps and the AMX tdpbf16ps peaks the CPU has.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BATCH = {"mlp": 256, "lenet": 256, "fmnist_sepcnn": 128, "resnet20": 128, "resnet18": 16, "resnet50": 8}
# resnet18 and resnet50 take seconds a step: few steps, of which the first 3 (max(3, steps // 10), as for
# every model) are excluded from img/s: the first step's allocations, and the steps before
# comm.bucket_mb = auto chooses its buckets (after step 3; until then one bucket, all-reduced after backward).
STEPS = {"mlp": 300, "lenet": 200, "fmnist_sepcnn": 30, "resnet20": 30, "resnet18": 6, "resnet50": 6}
DEFAULT_MODELS = ["mlp", "lenet", "fmnist_sepcnn"]  # the ResNets run when --models names them
# The models that train on a data file rather than scaletrain's synthetic 28x28x1 data: its sample
# shape (H,W,C) and classes. st-synth writes it into the work directory, once per shape, classes and size.
DATA_FILE = {"resnet18": ("224,224,3", 1000), "resnet50": ("224,224,3", 1000)}
# scaletrain flags per model, unless the caller's own set the same key: the end-of-run checkpoints of
# resnet18 and resnet50 (their parameters and momentum, each run's) are no part of the step: skipped.
MODEL_FLAGS = {"resnet18": {"--run.checkpoint_at_end": "false"}, "resnet50": {"--run.checkpoint_at_end": "false"}}
# pytorch_anchor.py's time limit (a guard against a hung DDP teardown), seconds: longer for the
# ImageNet-shaped ResNets, whose bf16 convolutions PyTorch 1.13 runs on its slow fallback (thnn) rather
# than oneDNN where the CPU lacks AVX-512.
PYTORCH_TIMEOUT_S = {"resnet18": 3600, "resnet50": 3600}
# Decimals of the img/s printed: the models that train at a few images per second need some.
RATE_DECIMALS = {"resnet18": 2, "resnet50": 2}
PRECISIONS = ["fp32", "bf16"]
# scaletrain's learning rate in the benchmarks: fmnist_sepcnn on synthetic data turns inf/NaN at
# the default 0.05 (by step 5) and at 0.01 (step 13), which train.on_nonfinite = stop refuses, and
# trains at 0.001. The rate does not change a step's work (PyTorch's anchor uses 0.01).
BENCH_LR = 0.001
# scaletrain's flags per precision: fp32 is the default and needs none.
PRECISION_FLAGS = {"fp32": [], "bf16": ["--train.precision", "bf16"]}


def mpirun_flags():
    flags = ["--oversubscribe"]
    if os.geteuid() == 0:
        flags.append("--allow-run-as-root")
    return flags


def data_flags(build, model, steps, workdir):
    """scaletrain's data flags for `model`: synthetic data, or the DATA_FILE of its shape, which st-synth
    writes into workdir on first use with enough training samples for `steps` steps in one epoch."""
    if model not in DATA_FILE:
        return ["--data.path", "synthetic", "--data.synthetic_samples", "8192"]
    shape, classes = DATA_FILE[model]
    samples = max(256, -(-steps * BATCH[model] // 256) * 256)
    path = os.path.join(workdir, f"synth-{shape.replace(',', 'x')}-{classes}-{samples}.h5")
    if not os.path.exists(path):
        # build: a build directory, or its src/apps/scaletrain
        build_dir = os.path.dirname(os.path.dirname(os.path.dirname(build))) if os.path.isfile(build) else build
        cmd = [os.path.join(build_dir, "data-tools/st-synth"), "--shape", shape, "--classes", str(classes),
               "--train", str(samples), "--test", "64", "-o", path + ".part"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"bench_train_step: st-synth failed ({' '.join(cmd)}):\n{out.stdout}\n{out.stderr}")
        os.rename(path + ".part", path)
    return ["--data.path", path]


def run_scaletrain(build, model, ranks, threads, steps, workdir, extra=(), warmup=None):
    """One run's figures from run.json; build: a build directory, or a scaletrain binary."""
    binary = build if os.path.isfile(build) else os.path.join(build, "src/apps/scaletrain")
    data = data_flags(build, model, steps, workdir)
    run_dir = os.path.join(workdir, f"{model}-{ranks}x{threads}-{len(os.listdir(workdir))}")
    bind = ["--bind-to", "core"] if ranks > 1 else ["--bind-to", "none"]
    if warmup is None:
        warmup = max(3, steps // 10)
    model_flags = [x for key, value in MODEL_FLAGS.get(model, {}).items() if key not in extra for x in (key, value)]
    cmd = (["mpirun", "-np", str(ranks)] + mpirun_flags() + bind +
           [binary, "--model.name", model] + data +
           ["--train.batch", str(BATCH[model]), "--train.epochs", "1000",
            "--train.max_steps", str(steps), "--train.warmup_log_steps", str(warmup),
            "--train.log_every", str(max(1, steps // 10)), "--train.evaluate", "false",
            "--optimizer.lr", str(BENCH_LR), "--run.threads", str(threads), "--run.dir", run_dir]
           + model_flags + list(extra))
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_train_step: scaletrain failed ({' '.join(cmd)}):\n{out.stdout}\n{out.stderr}")
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    precision = run.get("precision")
    return {"images_per_s": run["samples_per_s"], "flops": run.get("training_flops_per_sample", 3 * run["forward_flops_per_sample"]),
            "exposed_allreduce": run.get("phase_share", {}).get("allreduce_exposed", 0.0),
            "total_allreduce": run.get("allreduce_total_share", 0.0),
            "compute": precision.get("compute") if isinstance(precision, dict) else None,
            "buckets": run.get("buckets") or {}}


def run_pytorch(model, precision, seconds):
    """(config, images/s) of one pytorch_anchor.py run: 2x1 (DDP) and 1x2, each format."""
    anchor = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pytorch_anchor.py"), "--json", "--models", model,
                             "--batch", str(BATCH[model]), "--seconds", str(seconds), "--dtype", precision],
                            check=True, capture_output=True, text=True,
                            timeout=PYTORCH_TIMEOUT_S.get(model, 600)).stdout
    for line in anchor.splitlines():
        r = json.loads(line)
        yield ("2x1" if r["config"].startswith("ddp") else "1x2"), r["images_per_s"]


def core_link_ns(build):
    """The round trip of a cache line between the first two CPUs now (perf/bench_core_link), in ns."""
    out = subprocess.run([os.path.join(build, "perf/bench_core_link"), "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["max_round_trip_ns"]


def with_link(build, run):
    """run()'s result and the core-to-core round trip (ns) measured just before and just after it."""
    before = core_link_ns(build)
    result = run()
    return result, (before, core_link_ns(build))


def peak_line(peak):
    fp32 = (f"measured fp32 peak: {peak['peak_gflops']:.0f} GFLOP/s on {peak['cores']} cores "
            f"({peak['peak_gflops_1core']:.0f} on one; {peak['isa']} FMA chains)")
    if "bf16_peak_gflops" not in peak:
        return fp32 + "\nmeasured bf16 peak: not measured (this bench_peak_flops predates it: rebuild it)"
    if peak["bf16_peak_gflops"] is None:
        return fp32 + "\nmeasured bf16 peak: unavailable (the CPU lacks AVX512-BF16)"
    line = fp32 + (f"\nmeasured bf16 peak: {peak['bf16_peak_gflops']:.0f} GFLOP/s on {peak['cores']} cores "
                   f"({peak['bf16_peak_gflops_1core']:.0f} on one; {peak.get('bf16_isa', 'avx512bf16')} "
                   "vdpbf16ps chains)")
    if peak.get("amx_bf16_peak_gflops") is None:
        return line + "\nmeasured AMX bf16 peak: unavailable (the CPU, or its OS, lacks AMX-BF16)"
    return line + (f"\nmeasured AMX bf16 peak: {peak['amx_bf16_peak_gflops']:.0f} GFLOP/s on {peak['cores']} cores "
                   f"({peak['amx_bf16_peak_gflops_1core']:.0f} on one; tdpbf16ps chains)")


def bf16_peak_gflops(peak):
    """The higher of the vdpbf16ps and AMX peaks; None where the CPU has neither."""
    peaks = [v for v in (peak.get("bf16_peak_gflops"), peak.get("amx_bf16_peak_gflops")) if v is not None]
    return max(peaks) if peaks else None


def fraction(gflops, peak_gflops):
    return gflops / peak_gflops if peak_gflops else None


def percent(v, width):
    return f"{100 * v:{width - 1}.1f}%" if v is not None else f"{'n/a':>{width}s}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(BATCH),
                   help="default: mlp lenet fmnist_sepcnn; the ResNets: resnet20 resnet18 resnet50")
    p.add_argument("--steps-scale", type=float, default=1.0, help="scale the timed step counts")
    p.add_argument("--seconds", type=float, default=4.0, help="timed seconds per PyTorch config")
    p.add_argument("--precisions", nargs="+", default=PRECISIONS, choices=PRECISIONS,
                   help="fp32 and/or bf16 (scaletrain --train.precision bf16, PyTorch bf16 autocast)")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs of each framework per model and precision, alternating; each keeps its best")
    p.add_argument("--json", default="", help="write all figures to this file")
    p.add_argument("--baseline", default="", help="another build's scaletrain, run alternately for a side-by-side ratio")
    a = p.parse_args()

    peak = json.loads(subprocess.run([os.path.join(a.build, "perf/bench_peak_flops"), "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    peak_gflops = {"fp32": peak["peak_gflops"], "bf16": bf16_peak_gflops(peak)}  # None: no bf16 peak
    print(peak_line(peak) + "\n", flush=True)
    slow_bf16 = [m for m in a.models if m in PYTORCH_TIMEOUT_S]
    if "bf16" in a.precisions and slow_bf16 and "avx512" not in peak.get("isa", ""):
        print(f"note: without AVX-512 PyTorch 1.13 runs bf16 convolutions on its slow fallback (thnn), not oneDNN: "
              f"the bf16 PyTorch runs of {' and '.join(slow_bf16)} take many minutes each (--precisions fp32 "
              "leaves them out)", file=sys.stderr, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="st-bench-") as work:
        for model in a.models:
            steps = max(5, int(STEPS[model] * a.steps_scale))
            for precision in a.precisions:
                # Both frameworks run a.repeats times, alternating, and each configuration keeps its best
                # run: PyTorch's throughput moves by up to 30% between runs here, scaletrain's by 5-20%.
                runs = {"2x1": [], "1x2": []}
                torch_runs = {"2x1": [], "1x2": []}  # each run: NCHW and channels_last for convolutional models
                links = {"2x1": [], "1x2": [], "pytorch": []}  # core round trips (ns) before and after each run
                base_runs = {"2x1": [], "1x2": []}  # --baseline's img/s
                for _ in range(a.repeats):
                    for cfg, (r, t) in {"2x1": (2, 1), "1x2": (1, 2)}.items():
                        run, link = with_link(a.build, lambda: run_scaletrain(a.build, model, r, t, steps, work,
                                                                              PRECISION_FLAGS[precision]))
                        runs[cfg].append(run)
                        links[cfg].append(link)
                        if a.baseline:
                            base = run_scaletrain(a.baseline, model, r, t, steps, work, PRECISION_FLAGS[precision])
                            base_runs[cfg].append(base["images_per_s"])
                    torch_lines, link = with_link(a.build, lambda: list(run_pytorch(model, precision, a.seconds)))
                    links["pytorch"].append(link)
                    for cfg, images_per_s in torch_lines:
                        torch_runs[cfg].append(images_per_s)
                ours = {cfg: max(rs, key=lambda o: o["images_per_s"]) for cfg, rs in runs.items()}
                torch = {cfg: max(rs) for cfg, rs in torch_runs.items()}
                best_torch = max(torch.values())  # PyTorch's best configuration in this precision
                for cfg in ("2x1", "1x2"):
                    o = ours[cfg]
                    gflops = o["images_per_s"] * o["flops"] / 1e9
                    rows.append({"model": model, "config": cfg, "precision": precision,
                                 "scaletrain_compute": o["compute"], "global_batch": BATCH[model],
                                 "scaletrain_images_per_s": o["images_per_s"], "pytorch_images_per_s": torch[cfg],
                                 "ratio_vs_pytorch_best": o["images_per_s"] / best_torch, "gflops": gflops,
                                 "peak_gflops": peak_gflops[precision],
                                 "fraction_of_peak": fraction(gflops, peak_gflops[precision]),
                                 "pytorch_fraction_of_peak": fraction(torch[cfg] * o["flops"] / 1e9,
                                                                      peak_gflops[precision]),
                                 "exposed_allreduce_share": o["exposed_allreduce"],
                                 "scaletrain_runs_images_per_s": [x["images_per_s"] for x in runs[cfg]],
                                 "pytorch_runs_images_per_s": torch_runs[cfg],
                                 "scaletrain_runs_core_link_ns": links[cfg], "pytorch_runs_core_link_ns": links["pytorch"],
                                 "baseline_runs_images_per_s": base_runs[cfg],
                                 "baseline_images_per_s": max(base_runs[cfg]) if base_runs[cfg] else None})
                compute = ours["2x1"]["compute"]
                print(f"{model} {precision}: done" + (f" (scaletrain run.json: compute {compute})" if compute else ""),
                      file=sys.stderr, flush=True)

    hdr = (f"{'model':14s} {'config':6s} {'precision':9s} {'batch':>5s} {'scaletrain img/s':>17s} "
           f"{'PyTorch img/s':>14s} {'x PyTorch best':>15s} {'GFLOP/s':>8s} {'% peak':>7s} {'PyTorch % peak':>15s}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        d = RATE_DECIMALS.get(r["model"], 0)
        print(f"{r['model']:14s} {r['config']:6s} {r['precision']:9s} {r['global_batch']:5d} "
              f"{r['scaletrain_images_per_s']:17.{d}f} {r['pytorch_images_per_s']:14.{d}f} "
              f"{r['ratio_vs_pytorch_best']:15.2f} {r['gflops']:8.1f} {percent(r['fraction_of_peak'], 7)} "
              f"{percent(r['pytorch_fraction_of_peak'], 15)}")
    print("\nEvery run (img/s, and in brackets the core round trip in ns before/after it), scaletrain | PyTorch:")
    for r in rows:
        d = RATE_DECIMALS.get(r["model"], 0)

        def listed(values, links):
            return " ".join(f"{v:.{d}f} ({b:.0f}/{e:.0f})" for v, (b, e) in zip(values, links))
        print(f"  {r['model']:14s} {r['config']:6s} {r['precision']:5s} "
              + listed(r["scaletrain_runs_images_per_s"], r["scaletrain_runs_core_link_ns"]) + " | "
              + listed(r["pytorch_runs_images_per_s"], r["pytorch_runs_core_link_ns"]))
    if a.baseline:
        print(f"\nSide by side with --baseline {a.baseline} (best of {a.repeats}, alternating; every run listed):")
        for r in rows:
            d = RATE_DECIMALS.get(r["model"], 0)
            print(f"  {r['model']:14s} {r['config']:6s} {r['precision']:5s} this build {r['scaletrain_images_per_s']:8.{d}f}, "
                  f"baseline {r['baseline_images_per_s']:8.{d}f} img/s: x {r['scaletrain_images_per_s'] / r['baseline_images_per_s']:.3f}"
                  f"   [{' '.join(f'{v:.{d}f}' for v in r['scaletrain_runs_images_per_s'])} | "
                  f"{' '.join(f'{v:.{d}f}' for v in r['baseline_runs_images_per_s'])}]")
    print("\n2x1: 2 ranks x 1 thread (scaletrain mpirun / PyTorch DDP gloo); 1x2: 1 process x 2 threads.\n"
          "PyTorch img/s: the better of NCHW and channels_last (convolutional models), OpenBLAS for Linear.\n"
          "img/s: each framework's best of its runs (--repeats, alternating with the other framework's).\n"
          "core round trip: a cache line between the first two CPUs (perf/bench_core_link); on a VM the host may\n"
          "  place its CPUs far apart for a while (several times the usual round trip), which slows every\n"
          "  all-reduce and thread barrier of either framework.\n"
          "x PyTorch best: scaletrain img/s over the better of PyTorch's two configurations in the same precision\n"
          "  (bf16 rows: PyTorch's best bf16 autocast configuration).")
    if "bf16" in a.precisions:
        print("bf16: scaletrain --train.precision bf16; PyTorch forward and loss under torch.autocast(\"cpu\", "
              "bfloat16).\n% peak: fp32 rows against the fp32 FMA peak, bf16 rows against the bf16 vdpbf16ps peak"
              + (" (n/a: none measured)." if not peak_gflops["bf16"] else "."))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"peak": peak, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
