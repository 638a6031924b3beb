#!/usr/bin/env python3
# PyTorch's side of the GPU kit's kernel comparison (scripts/gpu-kit/speed.sh, perf/README.md "A lent
# GPU machine"): one model of pytorch_anchor.py (built by its make_model, so that both scripts train
# the same network), in one configuration, timed as pytorch_anchor.py times it (its time_training:
# images/s over untimed warm-up steps), then a few more steps under torch.profiler. It writes one JSON
# document shaped as the "kernels" object of scaletrain's profile.json (run.profile = kernels):
#   source, per_step [{name, category, count, seconds}] (per profiled step, by seconds, descending),
#   categories [{category, seconds, kernels}] (all of kernel_categories.CATEGORIES, in order),
# plus what was run (model, precision, batch, input, config, torch) and the timing ("timing": the
# JSON line pytorch_anchor.py prints for a configuration, also appended to --timing-out).
# On a GPU (--device cuda: cudnn.benchmark on, TF32 only for --dtype tf32, as pytorch_anchor.py's
# run_cuda) it takes the CUDA kernels, memcpy and memset (key_averages() events of device type CUDA,
# their device time); on the CPU (--device cpu) every operator by its self CPU time (so that an
# operator's time is not counted again in the operators that call it; the calls count every operator,
# wrappers included). Names are grouped by scripts/gpu-kit/kernel_categories.py, the rules scaletrain
# groups its own kernels by.
"""Usage: pytorch_kernel_profile.py --model resnet50 --batch 256 --dtype bf16 --device cuda --out FILE

--input H,W,C sets the images' shape (scaletrain's model.input order; default: the model's INPUT in
pytorch_anchor.py); the model is the same (torchvision's ResNets pool globally, so any input of 32x32
or more fits). Prints the category table on stdout.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # pytorch_anchor.py: beside this script (perf/ here, scripts/ in the kit)
# kernel_categories.py: beside this script in the kit, scripts/gpu-kit/ in the source tree.
sys.path.insert(1, os.path.join(HERE, "..", "scripts", "gpu-kit"))

import torch  # noqa: E402

import kernel_categories  # noqa: E402
import pytorch_anchor  # noqa: E402

SOURCE_CUDA = "torch.profiler CUDA kernels"
SOURCE_CPU = "torch.profiler CPU operators (self time)"


try:
    from torch.autograd import DeviceType  # where torch.autograd.profiler_util takes it from (1.13 to 2.x)
except ImportError:
    DeviceType = None


def is_cuda_event(e):
    """A GPU-side event (kernel, memcpy, memset): device type CUDA, by value, else by name."""
    t = getattr(e, "device_type", None)
    if DeviceType is not None and t == DeviceType.CUDA:
        return True
    return str(t).rsplit(".", 1)[-1] == "CUDA"


def device_us(e):
    """An event's own device time in microseconds: self_device_time_total (PyTorch 2.4 and later;
    self_cuda_time_total is deprecated there), else self_cuda_time_total (1.13 to 2.3)."""
    v = getattr(e, "self_device_time_total", None)
    return v if v is not None else e.self_cuda_time_total


def kernel_table(averages, device, steps):
    """profile.json's "kernels" object from key_averages() of `steps` profiled steps."""
    per_step = []
    for e in averages:
        if device == "cuda":
            if not is_cuda_event(e):
                continue
            us = device_us(e)
        else:
            if is_cuda_event(e):
                continue
            us = e.self_cpu_time_total
        per_step.append({"name": e.key, "category": kernel_categories.category(e.key), "count": e.count / steps,
                         "seconds": us * 1e-6 / steps})
    per_step.sort(key=lambda r: r["seconds"], reverse=True)
    categories = [{"category": c, "seconds": sum(r["seconds"] for r in per_step if r["category"] == c),
                   "kernels": sum(r["count"] for r in per_step if r["category"] == c)}
                  for c in kernel_categories.CATEGORIES]
    return {"source": SOURCE_CUDA if device == "cuda" else SOURCE_CPU, "per_step": per_step, "categories": categories}


def parse_input(text, name):
    """(C, H, W) from "H,W,C", or the model's INPUT."""
    if not text:
        return pytorch_anchor.INPUT[name]
    try:
        h, w, c = (int(v) for v in text.split(","))
    except ValueError:
        raise SystemExit(f"pytorch_kernel_profile.py: --input expects H,W,C (as 224,224,3), got '{text}'")
    return (c, h, w)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=list(pytorch_anchor.EXPECTED_PARAMS))
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--dtype", default="fp32", choices=pytorch_anchor.DTYPES)
    p.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    p.add_argument("--input", default="", help="H,W,C of the images (default: the model's, pytorch_anchor.INPUT)")
    p.add_argument("--format", default="channels_last", choices=["nchw", "channels_last"])
    p.add_argument("--threads", type=int, default=0, help="--device cpu: torch.set_num_threads (0: the cores)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed steps after the first (default: pytorch_anchor.WARMUP of the model)")
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds (at least MIN_STEPS steps)")
    p.add_argument("--profile-steps", type=int, default=5, help="steps under torch.profiler, after the timed ones")
    p.add_argument("--out", required=True, help="the JSON document")
    p.add_argument("--timing-out", default="", help="also append the timing's JSON line to this file")
    a = p.parse_args()
    if a.profile_steps < 1:
        raise SystemExit("pytorch_kernel_profile.py: --profile-steps must be at least 1")

    name, dtype, device = a.model, a.dtype, a.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("pytorch_kernel_profile.py: --device cuda, but PyTorch sees no CUDA device")
    if dtype == "tf32" and device != "cuda":
        raise SystemExit("pytorch_kernel_profile.py: --dtype tf32 needs --device cuda")
    try:
        pytorch_anchor.check_parameter_counts([name])
    except ImportError as e:  # the ResNets are torchvision's
        raise SystemExit(f"pytorch_kernel_profile.py: {name} needs {e.name or 'a module'}, which {sys.executable} "
                         f"(torch {torch.__version__}) does not have: {e}")
    shape = parse_input(a.input, name)
    channels_last = a.format == "channels_last" and name != "mlp"
    threads = 1
    if device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        torch.backends.cudnn.allow_tf32 = dtype == "tf32"
        config = "cuda-" + ("cl" if channels_last else "nchw")
    else:
        pytorch_anchor.check_blas()
        threads = a.threads or len(os.sched_getaffinity(0))
        torch.set_num_threads(threads)
        config = pytorch_anchor.config_name(f"1x{threads}", channels_last, False)

    torch.manual_seed(1)
    g = torch.Generator().manual_seed(2)  # as pytorch_anchor.synthetic_batch, at this input
    x = torch.randn(a.batch, *shape, generator=g)
    y = torch.randint(0, pytorch_anchor.CLASSES[name], (a.batch,), generator=g)
    model = pytorch_anchor.make_model(name).to(device)
    model, x = pytorch_anchor.in_format(model, x.to(device), channels_last)
    y = y.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    # Timed as pytorch_anchor.py times a configuration; the first step (cuDNN's autotuning) is not.
    t0 = time.perf_counter()
    warmup = a.warmup if a.warmup is not None else pytorch_anchor.WARMUP[name]
    timed = pytorch_anchor.time_training(model, opt, x, y, warmup, a.seconds, dtype, device=device,
                                         min_steps=pytorch_anchor.MIN_STEPS[name])
    timing = pytorch_anchor.result_line(name, config, dtype, a.batch, timed, threads, 1)
    timing["input"] = [shape[1], shape[2], shape[0]]
    timing["setup_s"] = time.perf_counter() - t0 - timed[1]
    if device == "cuda":
        timing["gpu"] = torch.cuda.get_device_name()
    print(json.dumps(timing), flush=True)
    if a.timing_out:
        with open(a.timing_out, "a", encoding="utf-8") as f:
            f.write(json.dumps(timing) + "\n")

    # The profiled steps: the same step as time_training's.
    loss_fn = torch.nn.CrossEntropyLoss()
    fence = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        opt.zero_grad(set_to_none=True)
        with pytorch_anchor.precision_scope(dtype, device):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    fence()
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for _ in range(a.profile_steps):
            step()
        fence()
        profiled_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = kernel_table(prof.key_averages(), device, a.profile_steps)
    doc = {"version": 1, "framework": "pytorch", "torch": torch.__version__, "device": device, "model": name,
           "precision": dtype, "batch": a.batch, "input": timing["input"], "config": config,
           "profiled_steps": a.profile_steps, "profiled_step_s": profiled_s / a.profile_steps,
           "postprocess_s": time.perf_counter() - t0, "timing": timing, **table}
    if not table["per_step"]:
        doc["kernels_unavailable"] = ("torch.profiler recorded no CUDA kernel (CUPTI refused or missing?)"
                                      if device == "cuda" else "torch.profiler recorded no CPU operator")
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)

    total = sum(c["seconds"] for c in table["categories"])
    print(f"# {name} {dtype} batch {a.batch} input {'x'.join(map(str, timing['input']))} {config}: "
          f"{timing['images_per_s']:.1f} img/s, {timing['ms_per_step']:.2f} ms/step timed; "
          f"{a.profile_steps} profiled steps of {1e3 * doc['profiled_step_s']:.2f} ms; {table['source']}")
    for c in table["categories"]:
        print(f"{c['category']:28s} {1e3 * c['seconds']:10.3f} ms {c['kernels']:9.1f} per step")
    print(f"{'total':28s} {1e3 * total:10.3f} ms {sum(c['kernels'] for c in table['categories']):9.1f} per step")
    if "kernels_unavailable" in doc:
        print(f"pytorch_kernel_profile.py: {doc['kernels_unavailable']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
