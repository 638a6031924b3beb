#!/usr/bin/python3
# Training-step throughput of the zoo (mlp, lenet, fmnist_sepcnn on 28x28x1; with --models, the
# ResNets: resnet20 on 28x28x1, resnet18 and resnet50 on 224x224x3 with 1000 classes) beside PyTorch
# on the same model, global batch and cores, all measured in this one invocation, with this machine's
# measured fp32 and bf16 peaks (perf/bench_peak_flops). scaletrain runs its real app (synthetic data
# through the real loader, real MPI ranks); PyTorch runs perf/pytorch_anchor.py under each PyTorch at
# hand: Debian's 1.13, and PyTorch 2 (perf/anchor-env.sh's environment) eager and under torch.compile.
# Each precision is compared with PyTorch in the same precision: fp32 with fp32, bf16 with PyTorch's
# bf16 autocast.
"""usage: /usr/bin/python3 perf/bench_train_step.py [--build build/cpu] [--models ...] [--steps-scale 1.0]
                                                 [--precisions fp32 bf16] [--repeats 2] [--json FILE]
                                                 [--baseline OTHER_BUILD/src/apps/scaletrain]
                                                 [--anchors debian pytorch2] [--anchor-env DIR]

Models: mlp, lenet and fmnist_sepcnn by default; --models resnet20 resnet18 resnet50 runs the ResNets,
--models vit vit_tiny the ViTs (vit: jobs/configs/vit_fmnist.toml's on 28x28x1, batch 128; vit_tiny on 224x224x3,
batch 16), --models mobilenet_v2 vgg16 inception_v3 the other torchvision networks (224x224x3; inception_v3 at
299x299x3 with its auxiliary classifier, whose loss both sides weight 0.4; global batches 16, 4 and 8).
mlp, lenet, fmnist_sepcnn and resnet20 train on scaletrain's synthetic data (--data.path synthetic:
28x28x1, 10 classes). resnet18 and resnet50 train on 224x224x3 images of 1000 classes: a file that
st-synth writes into the temporary work directory once per invocation (just enough samples that a run
stays within one epoch), at a small global batch (16 and 8: 2 ranks x 8 and x 4) and few steps, the
first of them (the slow ones) excluded from img/s. PyTorch's twins get the same shapes, classes and
global batch (pytorch_anchor.py: akamaster's CIFAR ResNet-20 with a 1-channel stem, torchvision's
resnet18 and resnet50).

PyTorch anchors (--anchors): "debian", Debian's PyTorch 1.13 (/usr/bin/python3), eager; "pytorch2", the
PyTorch 2 of perf/anchor-env.sh's environment (--anchor-env, else where the script puts it), eager and
under torch.compile (inductor's C++ on the CPU; its compilation reported apart, never in img/s). Where
that environment is missing the benchmark says so and runs against Debian's alone.

Each framework runs --repeats times per model and precision, alternating with the other, and each
configuration keeps its best run (PyTorch: its best run and format). --baseline runs another build's
scaletrain in the same alternation and adds its img/s and the ratio to it, so that a change is judged
side by side with the build before it.

Configurations (2 cores): 2x1 = 2 ranks x 1 thread (scaletrain: mpirun, one rank per core; PyTorch:
DDP with gloo), 1x2 = 1 process x 2 threads. Precisions: fp32, and bf16 (scaletrain
--train.precision bf16; PyTorch forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)).
The ratio column compares each scaletrain configuration with PyTorch's best of every anchor, mode,
configuration and format in the same precision, which the table names. Training FLOPs are run.json's
training_flops_per_sample: 3x the forward FLOPs the
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
BATCH = {"mlp": 256, "lenet": 256, "fmnist_sepcnn": 128, "resnet20": 128, "resnet18": 16, "resnet50": 8,
         "mobilenet_v2": 16, "vgg16": 4, "inception_v3": 8, "vit": 128, "vit_tiny": 16}
IMAGENET = ("resnet18", "resnet50", "mobilenet_v2", "vgg16", "inception_v3", "vit_tiny")
# resnet18 and resnet50 take seconds a step: few steps, of which the first 3 (max(3, steps // 10), as for
# every model) are excluded from img/s: the first step's allocations, and the steps before
# comm.bucket_mb = auto chooses its buckets (after step 3; until then one bucket, all-reduced after backward).
STEPS = {"mlp": 300, "lenet": 200, "fmnist_sepcnn": 30, "resnet20": 30, "resnet18": 6, "resnet50": 6,
         "mobilenet_v2": 6, "vgg16": 6, "inception_v3": 6, "vit": 30, "vit_tiny": 6}
DEFAULT_MODELS = ["mlp", "lenet", "fmnist_sepcnn"]  # the ResNets run when --models names them
# The models that train on a data file rather than scaletrain's synthetic 28x28x1 data: its sample
# shape (H,W,C) and classes. st-synth writes it into the work directory, once per shape, classes and size.
DATA_FILE = {**{m: ("224,224,3", 1000) for m in IMAGENET}, "inception_v3": ("299,299,3", 1000)}
# scaletrain flags per model, unless the caller's own set the same key: the end-of-run checkpoints of
# resnet18 and resnet50 (their parameters and momentum, each run's) are no part of the step: skipped.
MODEL_FLAGS = {m: {"--run.checkpoint_at_end": "false"} for m in IMAGENET}
# vit: jobs/configs/vit_fmnist.toml's architecture (pytorch_anchor.py's VIT["vit"]) on the synthetic 28x28x1 data.
MODEL_FLAGS["vit"] = {"--model.vit.patch_size": "4", "--model.vit.num_layers": "4", "--model.vit.num_heads": "4",
                      "--model.vit.hidden_dim": "64", "--model.vit.mlp_dim": "128"}
# pytorch_anchor.py's time limit (a guard against a hung DDP teardown), seconds, PYTORCH_TIMEOUT_DEFAULT_S
# unless given: longer for the
# ImageNet-shaped ResNets, whose bf16 convolutions PyTorch 1.13 runs on its slow fallback (thnn) rather
# than oneDNN where the CPU lacks AVX-512.
PYTORCH_TIMEOUT_S = {m: 3600 for m in IMAGENET}
# Decimals of the img/s printed: the models that train at a few images per second need some.
RATE_DECIMALS = {m: 2 for m in IMAGENET}
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


PYTORCH_TIMEOUT_DEFAULT_S = 900
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's PyTorch 1.13 (the tests' reference)
ANCHORS = ["debian", "pytorch2"]


def anchor_env_status(env_dir):
    """perf/anchor-env.sh --status: where the PyTorch 2 environment is and whether it is complete."""
    cmd = [os.path.join(HERE, "anchor-env.sh"), "--status"] + (["--dir", env_dir] if env_dir else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def find_anchors(names, env_dir):
    """The anchors at hand, each {name, python, torch, modes}, and a note for each one missing (the caller
    says what it measures without it)."""
    anchors, notes = [], []
    for name in names:
        if name == "debian":
            anchors.append({"name": name, "python": DEBIAN_PYTHON, "modes": ["eager"]})
            continue
        status = anchor_env_status(env_dir)
        if not status["ready"]:
            notes.append(f"PyTorch 2 anchor missing: there is no complete environment at {status['dir']} (make it once "
                         "with perf/anchor-env.sh)")
            continue
        anchors.append({"name": name, "python": status["python"], "modes": ["eager", "compile"]})
    for anchor in anchors:
        version = subprocess.run([anchor["python"], "-c", "import torch; print(torch.__version__)"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        anchor["torch"] = version
        anchor["short"] = ".".join(version.split("+")[0].split(".")[:2])
    return anchors, notes


def anchor_columns(anchors):
    """(anchor, mode, column label) for every PyTorch figure of the table, in its order."""
    return [(a, m, f"{a['short']} {m}") for a in anchors for m in a["modes"]]


def run_pytorch(anchor, mode, model, precision, seconds, workdir):
    """One pytorch_anchor.py run under `anchor` in `mode`: a result line per configuration and format
    (its "config": 1x2 or ddp2x1, "-cl", "-compile"), or a string saying why the run failed."""
    cmd = [anchor["python"], os.path.join(HERE, "pytorch_anchor.py"), "--json", "--models", model,
           "--batch", str(BATCH[model]), "--seconds", str(seconds), "--dtype", precision, "--modes", mode]
    # One inductor cache per invocation of this benchmark: the first compiled run of a model compiles
    # from nothing, the later ones find its kernels.
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(workdir, "inductor-cache"))
    timeout = PYTORCH_TIMEOUT_S.get(model, PYTORCH_TIMEOUT_DEFAULT_S)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s"
    if out.returncode != 0:
        return f"exit {out.returncode}: " + " / ".join(out.stderr.strip().splitlines()[-3:])
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def config_of(torch_config):
    """scaletrain's configuration that a PyTorch configuration is the twin of."""
    return "2x1" if torch_config.startswith("ddp") else "1x2"


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


def cpu_line():
    """The CPU as /proc/cpuinfo names it, with its family and model (which tell Zen 3, 4 and 5 apart)."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    return (f"cpu: {info.get('model name', '?')}, family {info.get('cpu family', '?')} model {info.get('model', '?')}, "
            f"{len(os.sched_getaffinity(0))} cores allowed")


def best_of(runs):
    """The fastest of [(images/s, config)], or None for no runs."""
    return max(runs, key=lambda r: r[0]) if runs else None


def measure(a, model, precision, steps, work, columns, peak_gflops):
    """The table's two rows (2x1, 1x2) of one model in one precision: scaletrain and every PyTorch column
    a.repeats times, alternating, each configuration keeping its best run."""
    runs = {"2x1": [], "1x2": []}
    links = {"2x1": [], "1x2": [], "pytorch": []}  # core round trips (ns) before and after each run
    base_runs = {"2x1": [], "1x2": []}  # --baseline's img/s
    # Per column and configuration: each run's best format as (img/s, PyTorch config); compile seconds
    # per PyTorch config; why a run failed.
    torch_runs = {label: {"2x1": [], "1x2": []} for _, _, label in columns}
    compile_s = {label: {} for _, _, label in columns}
    failures = {}
    for _ in range(a.repeats):
        for cfg, (r, t) in {"2x1": (2, 1), "1x2": (1, 2)}.items():
            run, link = with_link(a.build, lambda: run_scaletrain(a.build, model, r, t, steps, work,
                                                                  PRECISION_FLAGS[precision]))
            runs[cfg].append(run)
            links[cfg].append(link)
            if a.baseline:
                base = run_scaletrain(a.baseline, model, r, t, steps, work, PRECISION_FLAGS[precision])
                base_runs[cfg].append(base["images_per_s"])
        for anchor, mode, label in columns:
            lines, link = with_link(a.build, lambda: run_pytorch(anchor, mode, model, precision, a.seconds, work))
            links["pytorch"].append(link)
            if isinstance(lines, str):
                failures[label] = lines
                print(f"bench_train_step: PyTorch {label} on {model} {precision}: {lines}", file=sys.stderr, flush=True)
                continue
            for cfg in ("2x1", "1x2"):
                mine = [(r["images_per_s"], r["config"]) for r in lines if config_of(r["config"]) == cfg]
                if mine:
                    torch_runs[label][cfg].append(best_of(mine))
            for r in lines:
                if r.get("compile_s") is not None:
                    compile_s[label].setdefault(r["config"], []).append(r["compile_s"])
    ours = {cfg: max(rs, key=lambda o: o["images_per_s"]) for cfg, rs in runs.items()}
    torch_best = {label: {cfg: best_of(rs) for cfg, rs in by_cfg.items()} for label, by_cfg in torch_runs.items()}
    overall = best_of([(v[0], f"{label} {v[1]}") for label, by_cfg in torch_best.items() for v in by_cfg.values() if v])
    rows = []
    for cfg in ("2x1", "1x2"):
        o = ours[cfg]
        gflops = o["images_per_s"] * o["flops"] / 1e9
        rows.append({"model": model, "config": cfg, "precision": precision, "scaletrain_compute": o["compute"],
                     "global_batch": BATCH[model], "scaletrain_images_per_s": o["images_per_s"],
                     "pytorch": {label: {"images_per_s": v[cfg][0] if v[cfg] else None,
                                         "config": v[cfg][1] if v[cfg] else None,
                                         "runs_images_per_s": [x[0] for x in torch_runs[label][cfg]],
                                         "compile_s": {c: t for c, t in compile_s[label].items() if config_of(c) == cfg},
                                         "failed": failures.get(label)}
                                 for label, v in torch_best.items()},
                     "pytorch_best": {"images_per_s": overall[0], "config": overall[1]} if overall else None,
                     "ratio_vs_pytorch_best": o["images_per_s"] / overall[0] if overall else None, "gflops": gflops,
                     "peak_gflops": peak_gflops, "fraction_of_peak": fraction(gflops, peak_gflops),
                     "pytorch_fraction_of_peak": fraction(overall[0] * o["flops"] / 1e9, peak_gflops) if overall else None,
                     "exposed_allreduce_share": o["exposed_allreduce"],
                     "scaletrain_runs_images_per_s": [x["images_per_s"] for x in runs[cfg]],
                     "scaletrain_runs_core_link_ns": links[cfg], "pytorch_runs_core_link_ns": links["pytorch"],
                     "baseline_runs_images_per_s": base_runs[cfg],
                     "baseline_images_per_s": max(base_runs[cfg]) if base_runs[cfg] else None})
    compute = ours["2x1"]["compute"]
    print(f"{model} {precision}: done" + (f" (scaletrain run.json: compute {compute})" if compute else ""),
          file=sys.stderr, flush=True)
    return rows


def rate(value, decimals, width):
    return f"{value:{width}.{decimals}f}" if value is not None else f"{'n/a':>{width}s}"


def print_table(rows, columns, a):
    labels = [label for _, _, label in columns]
    widths = [max(10, len(label) + 2) for label in labels]
    hdr = (f"{'model':14s} {'config':6s} {'precision':9s} {'batch':>5s} {'scaletrain img/s':>17s} "
           + "".join(f"{label:>{w}s} " for label, w in zip(labels, widths))
           + f"{'x PyTorch best':>15s} {'PyTorch best':26s} {'GFLOP/s':>8s} {'% peak':>7s} {'PyTorch % peak':>15s}")
    print("img/s (PyTorch columns: its version and mode, the best format of the row's configuration)")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        d = RATE_DECIMALS.get(r["model"], 0)
        best = r["pytorch_best"]
        print(f"{r['model']:14s} {r['config']:6s} {r['precision']:9s} {r['global_batch']:5d} "
              f"{r['scaletrain_images_per_s']:17.{d}f} "
              + "".join(rate(r["pytorch"][label]["images_per_s"], d, w) + " " for label, w in zip(labels, widths))
              + f"{rate(r['ratio_vs_pytorch_best'], 2, 15)} {best['config'] if best else 'none':26s} "
              f"{r['gflops']:8.1f} {percent(r['fraction_of_peak'], 7)} {percent(r['pytorch_fraction_of_peak'], 15)}")


def print_runs(rows, columns):
    print("\nEvery run (img/s, and in brackets the core round trip in ns before/after it), scaletrain | PyTorch:")
    for r in rows:
        d = RATE_DECIMALS.get(r["model"], 0)
        listed = " ".join(f"{v:.{d}f} ({b:.0f}/{e:.0f})"
                          for v, (b, e) in zip(r["scaletrain_runs_images_per_s"], r["scaletrain_runs_core_link_ns"]))
        theirs = "; ".join(f"{label} " + (" ".join(f"{v:.{d}f}" for v in r["pytorch"][label]["runs_images_per_s"])
                                          or "none")
                           for _, _, label in columns)
        print(f"  {r['model']:14s} {r['config']:6s} {r['precision']:5s} {listed} | {theirs}")
    compiled = [(r, label, c, t) for r in rows for _, mode, label in columns if mode == "compile"
                for c, t in r["pytorch"][label]["compile_s"].items()]
    if compiled:
        print("\ntorch.compile's compilation, seconds (rank 0; the first step's time beyond a timed step's; each run, "
              "the first from an empty inductor cache), not in img/s:")
        for r, label, c, t in compiled:
            print(f"  {r['model']:14s} {r['precision']:5s} {label} {c:20s} {' '.join(f'{x:.1f}' for x in t)}")
    failed = [(r, label, r["pytorch"][label]["failed"]) for r in rows for _, _, label in columns
              if r["pytorch"][label]["failed"] and r["config"] == "2x1"]
    for r, label, why in failed:
        print(f"  PyTorch {label} failed on {r['model']} {r['precision']}: {why}")


def print_baseline(rows, a):
    print(f"\nSide by side with --baseline {a.baseline} (best of {a.repeats}, alternating; every run listed):")
    for r in rows:
        d = RATE_DECIMALS.get(r["model"], 0)
        print(f"  {r['model']:14s} {r['config']:6s} {r['precision']:5s} this build {r['scaletrain_images_per_s']:8.{d}f}, "
              f"baseline {r['baseline_images_per_s']:8.{d}f} img/s: x {r['scaletrain_images_per_s'] / r['baseline_images_per_s']:.3f}"
              f"   [{' '.join(f'{v:.{d}f}' for v in r['scaletrain_runs_images_per_s'])} | "
              f"{' '.join(f'{v:.{d}f}' for v in r['baseline_runs_images_per_s'])}]")


def print_notes(a, columns, peak_gflops, missing):
    print("\n2x1: 2 ranks x 1 thread (scaletrain mpirun / PyTorch DDP gloo); 1x2: 1 process x 2 threads.\n"
          "PyTorch columns: each PyTorch and mode (eager; compile: torch.compile, inductor), the better of NCHW and\n"
          "  channels_last (-cl) for convolutional models, in the row's configuration.\n"
          "img/s: each framework's best of its runs (--repeats, alternating with the other framework's).\n"
          "core round trip: a cache line between the first two CPUs (perf/bench_core_link); on a VM the host may\n"
          "  place its CPUs far apart for a while (several times the usual round trip), which slows every\n"
          "  all-reduce and thread barrier of either framework.\n"
          "x PyTorch best: scaletrain img/s over the best PyTorch figure of the same precision: every PyTorch, mode,\n"
          "  configuration and format (named in 'PyTorch best'; bf16 rows: PyTorch's bf16 autocast).")
    for note in missing:
        print(note)
    if "bf16" in a.precisions:
        print("bf16: scaletrain --train.precision bf16; PyTorch forward and loss under torch.autocast(\"cpu\", "
              "bfloat16).\n% peak: fp32 rows against the fp32 FMA peak, bf16 rows against the bf16 peak"
              + (" (n/a: none measured)." if not peak_gflops["bf16"] else "."))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(BATCH),
                   help="default: mlp lenet fmnist_sepcnn; the ResNets: resnet20 resnet18 resnet50; "
                        "mobilenet_v2 vgg16 inception_v3")
    p.add_argument("--steps-scale", type=float, default=1.0, help="scale the timed step counts")
    p.add_argument("--seconds", type=float, default=4.0, help="timed seconds per PyTorch config")
    p.add_argument("--precisions", nargs="+", default=PRECISIONS, choices=PRECISIONS,
                   help="fp32 and/or bf16 (scaletrain --train.precision bf16, PyTorch bf16 autocast)")
    p.add_argument("--repeats", type=int, default=2,
                   help="runs of each framework per model and precision, alternating; each keeps its best")
    p.add_argument("--json", default="", help="write all figures to this file")
    p.add_argument("--baseline", default="", help="another build's scaletrain, run alternately for a side-by-side ratio")
    p.add_argument("--anchors", nargs="+", default=ANCHORS, choices=ANCHORS,
                   help="debian: Debian's PyTorch 1.13, eager; pytorch2: perf/anchor-env.sh's PyTorch 2, eager and compiled")
    p.add_argument("--anchor-env", default="", help="the PyTorch 2 environment (default: where perf/anchor-env.sh puts it)")
    a = p.parse_args()

    peak = json.loads(subprocess.run([os.path.join(a.build, "perf/bench_peak_flops"), "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    peak_gflops = {"fp32": peak["peak_gflops"], "bf16": bf16_peak_gflops(peak)}  # None: no bf16 peak
    anchors, missing = find_anchors(a.anchors, a.anchor_env)
    missing = [f"{note}; every ratio below is against Debian's PyTorch alone" for note in missing]
    columns = anchor_columns(anchors)
    print(cpu_line() + "\n" + peak_line(peak), flush=True)
    for anchor in anchors:
        print(f"PyTorch anchor: {anchor['torch']} ({anchor['python']}), {' and '.join(anchor['modes'])}", flush=True)
    for note in missing:
        print(note, flush=True)
        print(f"bench_train_step: {note}", file=sys.stderr, flush=True)
    print(flush=True)
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
                rows += measure(a, model, precision, steps, work, columns, peak_gflops[precision])
    print_table(rows, columns, a)
    print_runs(rows, columns)
    if a.baseline:
        print_baseline(rows, a)
    print_notes(a, columns, peak_gflops, missing)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_line(), "peak": peak, "anchors": anchors, "missing_anchors": missing, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
