# Where PyTorch's training step of a zoo model goes, by kind of operator: pytorch_anchor.py's twin and
# step (SGD momentum, cross-entropy; bf16: forward and loss under autocast), eager, one process, under
# torch.profiler; the operators' own CPU time per step grouped as convolution, linear, layer norm,
# attention (its softmax), batch norm, pooling, activation, elementwise, loss, optimizer and the rest
# (autograd's and the dispatcher's own time among them). Beside bench_layers' time per layer
# type it tells which layers scaletrain loses on. Runs under any PyTorch: Debian's, or perf/anchor-env.sh's.
"""usage: PYTHON perf/pytorch_op_profile.py --model resnet50 [--batch 4] [--threads 1] [--dtype fp32|bf16]
                                         [--channels-last] [--steps 5] [--json]"""
import argparse
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_anchor import (DEFAULT_BATCH, EXPECTED_PARAMS, in_format, make_model, precision_scope,  # noqa: E402
                            synthetic_batch, training_loss)

# First match wins: an operator's name to its kind.
KINDS = [("optimizer", r"_foreach|sgd|SGD|Optimizer"), ("convolution", r"conv"),
         ("linear", r"addmm|::mm$|matmul|linear|bmm"), ("bias gradient sums", r"::sum$"),
         ("batch norm", r"batch_norm"), ("pooling", r"pool"),
         ("activation", r"relu|threshold|selu|elu|gelu|sigmoid|tanh|hardtanh|clamp"),
         ("layer norm", r"layer_norm"), ("loss", r"log_softmax|nll_loss|cross_entropy"),
         ("attention", r"scaled_dot_product|softmax"),
         ("elementwise", r"::add|::mul|::sub|::div|copy_|::fill_|::zero_|::pad|constant_pad|::cat|::clone"),
         ("autograd and dispatch", r"autograd|Backward|::empty|::view|::reshape|::slice|::t$|::as_strided|::to$|"
                                   r"::contiguous|::detach|::flatten|::expand|::transpose|::permute|::_to_copy")]


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name):
            return kind
    return "other"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=list(EXPECTED_PARAMS))
    p.add_argument("--batch", type=int, default=0, help="default: pytorch_anchor.py's global batch of the model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--steps", type=int, default=5, help="profiled steps, after 3 untimed ones")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    batch = a.batch or DEFAULT_BATCH[a.model]
    x, y = synthetic_batch(a.model, batch, 2)
    model, x = in_format(make_model(a.model), x, a.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = training_loss

    def step():
        opt.zero_grad(set_to_none=True)
        with precision_scope(a.dtype):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(a.steps):
            step()
    ops = [(e.key, e.self_cpu_time_total / a.steps / 1e3) for e in prof.key_averages()]  # ms per step
    kinds = {}
    for name, ms in ops:
        kinds[kind_of(name)] = kinds.get(kind_of(name), 0.0) + ms
    total = sum(kinds.values())
    result = {"torch": torch.__version__, "model": a.model, "batch": batch, "threads": a.threads, "dtype": a.dtype,
              "channels_last": a.channels_last, "ms_per_step": total, "kinds_ms": kinds,
              "top_ops_ms": dict(sorted(ops, key=lambda o: -o[1])[:15])}
    if a.json:
        print(json.dumps(result))
        return 0
    print(f"PyTorch {torch.__version__}, {a.model}, batch {batch}, {a.threads} thread(s), {a.dtype}"
          f"{', channels_last' if a.channels_last else ''}: {total:.2f} ms of operators per step ({a.steps} steps)")
    print(f"{'kind':24s} {'ms/step':>9s} {'share':>7s}")
    for kind, ms in sorted(kinds.items(), key=lambda k: -k[1]):
        print(f"{kind:24s} {ms:9.3f} {100 * ms / total:6.1f}%")
    print("\nthe largest operators (own time, ms/step):")
    for name, ms in result["top_ops_ms"].items():
        print(f"  {name:48s} {ms:9.3f}  ({kind_of(name)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
