#!/usr/bin/python3
"""Writes tests/data/optim_reference.h5: torch.optim.SGD / AdamW trajectories and lr schedules
(LinearLR warm-up, StepLR, CosineAnnealingLR, PolynomialLR).

Each optimizer case is a group: attrs (optimizer settings), p0 (initial parameters), grads
[steps, n] (fixed gradients fed at each step), lrs [steps] and p (parameters after every step,
[steps, n]). The split cases also cut the flat vector into named tensors (attrs tensor_names,
comma-separated, tensor_offsets, tensor_counts, and no_decay) and give torch two param groups: the weights
with the case's weight decay, the biases with weight_decay 0 (optimizer.no_decay = bias).
Schedule cases: attrs and lrs [steps] from torch.optim.lr_scheduler.
Run with Debian's interpreter: /usr/bin/python3 tests/reference/make_optim_reference.py
"""
import math
import os

import h5py
import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "optim_reference.h5")
N, STEPS = 37, 6
rng = np.random.default_rng(7)
P0 = rng.standard_normal(N).astype(np.float32)
GRADS = rng.standard_normal((STEPS, N)).astype(np.float32)
LRS = np.array([0.1, 0.1, 0.05, 0.05, 0.02, 0.2], dtype=np.float32)


def trajectory(make):
    p = torch.nn.Parameter(torch.tensor(P0))
    opt = make([p])
    out = []
    for s in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = float(LRS[s])
        p.grad = torch.tensor(GRADS[s])
        opt.step()
        out.append(p.detach().numpy().copy())
    return np.stack(out)


# The split cases' tensors, in flat-buffer order: (name, count), summing to N.
SPLIT = [("1.weight", 20), ("1.bias", 5), ("0.weight", 8), ("0.bias", 4)]


def split_trajectory(make, weight_decay):
    """Parameters after every step, [steps, n], with weights decayed and biases not (two param groups)."""
    offsets = np.cumsum([0] + [c for _, c in SPLIT])
    assert offsets[-1] == N
    params = [torch.nn.Parameter(torch.tensor(P0[offsets[i]:offsets[i + 1]])) for i in range(len(SPLIT))]
    decay = [p for (name, _), p in zip(SPLIT, params) if not name.endswith(".bias")]
    no_decay = [p for (name, _), p in zip(SPLIT, params) if name.endswith(".bias")]
    opt = make([{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}])
    out = []
    for s in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = float(LRS[s])
        for i, p in enumerate(params):
            p.grad = torch.tensor(GRADS[s, offsets[i]:offsets[i + 1]])
        opt.step()
        out.append(np.concatenate([p.detach().numpy().copy() for p in params]))
    return np.stack(out)


def schedule(kind, base, steps, warmup, start_factor=0.0, step_size=0, gamma=0.1, total=0, min_lr=0.0, power=1.0):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base)
    after = []
    if kind == "step":
        after.append(torch.optim.lr_scheduler.StepLR(opt, step_size=step_size, gamma=gamma))
    elif kind == "cosine":
        after.append(torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warmup, eta_min=min_lr))
    elif kind == "poly":
        after.append(torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=total - warmup, power=power))
    if warmup > 0:
        # torch's LinearLR cannot start at exactly 0; use a tiny factor when 0 is asked.
        warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=max(start_factor, 1e-12), end_factor=1.0,
                                                 total_iters=warmup)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm] + (after or [torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)]), milestones=[warmup])
    else:
        sched = after[0] if after else torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return np.array(lrs, dtype=np.float64)


def main():
    cases = {
        "sgd_plain": (dict(kind="sgd", momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=0),
                      lambda ps: torch.optim.SGD(ps, lr=0.1)),
        "sgd_momentum_wd": (dict(kind="sgd", momentum=0.9, dampening=0.0, weight_decay=1e-2, nesterov=0),
                            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-2)),
        "sgd_dampening": (dict(kind="sgd", momentum=0.8, dampening=0.3, weight_decay=0.0, nesterov=0),
                          lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.8, dampening=0.3)),
        "sgd_nesterov_wd": (dict(kind="sgd", momentum=0.9, dampening=0.0, weight_decay=5e-4, nesterov=1),
                            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)),
        "adamw_default": (dict(kind="adamw", beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2),
                          lambda ps: torch.optim.AdamW(ps, lr=0.1)),
        "adamw_custom": (dict(kind="adamw", beta1=0.8, beta2=0.95, eps=1e-6, weight_decay=0.1),
                         lambda ps: torch.optim.AdamW(ps, lr=0.1, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    }
    with h5py.File(OUT, "w") as f:
        f.attrs["torch_version"] = str(torch.__version__)
        for name, (attrs, make) in cases.items():
            g = f.create_group("optim/" + name)
            for k, v in attrs.items():
                g.attrs[k] = v
            g["p0"] = P0
            g["grads"] = GRADS
            g["lrs"] = LRS
            g["p"] = trajectory(make)
        split_cases = {
            "sgd_momentum_wd_no_decay_bias": (
                dict(kind="sgd", momentum=0.9, dampening=0.0, weight_decay=0.1, nesterov=0),
                lambda groups: torch.optim.SGD(groups, lr=0.1, momentum=0.9)),
            "adamw_no_decay_bias": (
                dict(kind="adamw", beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.05),
                lambda groups: torch.optim.AdamW(groups, lr=0.1)),
        }
        for name, (attrs, make) in split_cases.items():
            g = f.create_group("optim/" + name)
            for k, v in attrs.items():
                g.attrs[k] = v
            g.attrs["no_decay"] = "bias"
            g.attrs["tensor_names"] = ",".join(n for n, _ in SPLIT)
            g.attrs["tensor_offsets"] = np.cumsum([0] + [c for _, c in SPLIT])[:-1].astype(np.int64)
            g.attrs["tensor_counts"] = np.array([c for _, c in SPLIT], dtype=np.int64)
            g["p0"] = P0
            g["grads"] = GRADS
            g["lrs"] = LRS
            g["p"] = split_trajectory(make, attrs["weight_decay"])
        sched_cases = {
            "constant": dict(kind="constant", base=0.1, steps=10, warmup=0),
            "warmup_constant": dict(kind="constant", base=0.1, steps=12, warmup=5, start_factor=0.1),
            "step": dict(kind="step", base=0.1, steps=20, warmup=0, step_size=6, gamma=0.5),
            "warmup_step": dict(kind="step", base=0.2, steps=20, warmup=4, start_factor=0.25, step_size=5, gamma=0.1),
            "cosine": dict(kind="cosine", base=0.1, steps=30, warmup=0, total=30, min_lr=0.001),
            "warmup_cosine": dict(kind="cosine", base=0.4, steps=40, warmup=8, start_factor=0.0, total=40, min_lr=0.0),
            "poly": dict(kind="poly", base=0.1, steps=24, warmup=0, total=20, power=2.0),
            "warmup_poly": dict(kind="poly", base=2.0, steps=30, warmup=5, start_factor=0.1, total=30, power=1.5),
        }
        for name, c in sched_cases.items():
            g = f.create_group("schedule/" + name)
            for k, v in c.items():
                g.attrs[k] = v
            g["lrs"] = schedule(**c)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
