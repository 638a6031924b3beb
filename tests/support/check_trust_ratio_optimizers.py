#!/usr/bin/env python3
"""LARS and LAMB against NumPy references of their papers' update rules, on a small graph.

Trains the zoo's mlp (Flatten, Dense 256 ReLU, Dense 128 ReLU, Dense 4) on 48 random 6x6x1 samples
packed with st-pack-arrays, the whole set as one batch (so every step's gradient is the same mean
over the same samples at any rank count), for 4 steps with a checkpoint after each, with
--optimizer.name OPT at --np ranks and --precision P; warm-up of one step, then the poly schedule to
min_lr. For each checkpoint k -> k+1 the test computes in NumPy (float64) the mlp's gradient of the
mean softmax cross-entropy at checkpoint k's weights, applies the paper's rule with checkpoint k's
optimizer state, and requires checkpoint k+1's weights and state:

  LARS (You, Gitman, Ginsburg 2017, momentum as MLPerf's ResNet-50 reference):
      local_lr = lr * eta * ||w|| / (||g|| + wd * ||w||)     (1 where a norm is 0)
      v = m * v + local_lr * (g + wd * w);   w = w - v
  LAMB (You et al. 2019, Algorithm 2):
      m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  m^ = m / (1 - b1^t);  v^ = v / (1 - b2^t)
      u = m^ / (sqrt(v^) + eps) + wd * w;   w = w - lr * ||w|| / ||u|| * u
  Biases (optimizer.exclude_bias_norm, the default) take neither trust ratio nor weight decay:
      LARS v = m v + lr g;  LAMB u = m^ / (sqrt(v^) + eps).
  poly: lr(s) = min_lr + (lr - min_lr) * (1 - (s - warmup) / (total - warmup))^2 after the warm-up.

The change of every tensor must match the reference's within --tol (relative, in the norm of the
change; bf16 computes its gradients in bf16, so its tolerance is wider), and the same comparison
with the trust ratio applied to the biases too must fail it (the check sees the exclusion).

usage: check_trust_ratio_optimizers.py --scaletrain BIN --pack BIN --mpirun "MPIRUN FLAGS" --np N
                                       --optimizer lars|lamb --precision fp32|bf16 [--device cpu|sim] --tol T --out DIR
"""
import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys

import h5py
import numpy as np

LR, MIN_LR, WD, ETA, MOMENTUM = 2.0, 0.2, 1e-3, 0.02, 0.9
LAMB_LR, B1, B2, EPS = 0.01, 0.9, 0.999, 1e-6
STEPS, SAMPLES, CLASSES = 4, 48, 4


def run(cmd, log):
    with open(log, "w", encoding="utf-8") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False)
    if r.returncode != 0:
        print(open(log, encoding="utf-8").read())
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}")


def pack(args, out):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((SAMPLES, 6, 6, 1)).astype(np.float32)
    y = rng.integers(0, CLASSES, SAMPLES).astype(np.int64)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "y.npy"), y)
    data = os.path.join(out, "data.h5")
    run([args.pack, "--train-samples", os.path.join(out, "x.npy"), "--train-labels", os.path.join(out, "y.npy"),
         "--classes", str(CLASSES), "--dtype", "f32", "-o", data], os.path.join(out, "pack.log"))
    return data, x.reshape(SAMPLES, -1).astype(np.float64), y


def lr_at(step, base):
    """One warm-up step from 0, then poly (power 2) to MIN_LR over the remaining steps."""
    if step < 1:
        return 0.0
    x = min(step - 1, STEPS - 1) / (STEPS - 1)
    return MIN_LR * base / LR + (base - MIN_LR * base / LR) * (1.0 - x) ** 2


def layers(model):
    """The Dense layers in order: (weight name, bias name)."""
    prefixes = sorted({k.split(".")[0] for k in model}, key=int)
    return [(p + ".weight", p + ".bias") for p in prefixes]


def gradients(model, x, y):
    """d(mean softmax cross-entropy)/d(every tensor) of the mlp, float64."""
    names = layers(model)
    acts, h = [x], x
    for i, (w, b) in enumerate(names):
        h = h @ model[w].T + model[b]
        if i < len(names) - 1:
            h = np.maximum(h, 0.0)
        acts.append(h)
    z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    d = p
    d[np.arange(len(y)), y] -= 1.0
    d /= len(y)
    grads = {}
    for i in reversed(range(len(names))):
        w, b = names[i]
        grads[w] = d.T @ acts[i]
        grads[b] = d.sum(axis=0)
        if i > 0:
            d = (d @ model[w]) * (acts[i] > 0)
    return grads


def norm(a):
    return float(np.sqrt(np.sum(np.square(a, dtype=np.float64))))


def lars(w, g, state, lr, adapted):
    v = state["lars_momentum"]
    if adapted:
        wn, gn = norm(w), norm(g)
        trust = ETA * wn / (gn + WD * wn) if wn > 0 and gn > 0 else 1.0
        v = MOMENTUM * v + lr * trust * (g + WD * w)
    else:
        v = MOMENTUM * v + lr * g
    return w - v, {"lars_momentum": v}


def lamb(w, g, state, lr, adapted, t):
    m = B1 * state["lamb_exp_avg"] + (1 - B1) * g
    v = B2 * state["lamb_exp_avg_sq"] + (1 - B2) * g * g
    u = (m / (1 - B1 ** t)) / (np.sqrt(v / (1 - B2 ** t)) + EPS)
    trust = 1.0
    if adapted:
        u = u + WD * w
        wn, un = norm(w), norm(u)
        trust = wn / un if wn > 0 and un > 0 else 1.0
    return w - lr * trust * u, {"lamb_exp_avg": m, "lamb_exp_avg_sq": v}


def read_checkpoint(path):
    with h5py.File(os.path.join(path, "model.h5"), "r") as f:
        model = {k: np.asarray(f[k], dtype=np.float64) for k in f.keys()}
    with h5py.File(os.path.join(path, "optimizer.h5"), "r") as f:
        steps = int(f.attrs["steps"])
        state = {buf: {k: np.asarray(f[buf][k], dtype=np.float64) for k in f[buf].keys()} for buf in f.keys()}
    return model, state, steps


def compare(args, checkpoints, x, y, exclude_biases):
    """The worst relative error of a tensor's change against the reference, over every transition."""
    worst = 0.0
    for k in range(len(checkpoints) - 1):
        model, state, steps = read_checkpoint(checkpoints[k])
        after, after_state, _ = read_checkpoint(checkpoints[k + 1])
        grads = gradients(model, x, y)
        for name, w in model.items():
            adapted = not (exclude_biases and name.endswith(".bias"))
            s = {buf: state[buf][name] for buf in state} if state else None
            if args.optimizer == "lars":
                s = s or {"lars_momentum": np.zeros_like(w)}
                ref, ref_state = lars(w, grads[name], s, lr_at(steps, LR), adapted)
            else:
                s = s or {"lamb_exp_avg": np.zeros_like(w), "lamb_exp_avg_sq": np.zeros_like(w)}
                ref, ref_state = lamb(w, grads[name], s, lr_at(steps, LAMB_LR), adapted, steps + 1)
            change, ref_change = after[name] - w, ref - w
            err = norm(change - ref_change) / max(norm(ref_change), 1e-30)
            for buf, value in ref_state.items():
                err = max(err, norm(after_state[buf][name] - value) / max(norm(value), 1e-30))
            worst = max(worst, err)
    return worst


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scaletrain", required=True)
    p.add_argument("--pack", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--np", type=int, default=1)
    p.add_argument("--optimizer", choices=["lars", "lamb"], required=True)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--device", default="cpu")
    p.add_argument("--tol", type=float, required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    data, x, y = pack(args, args.out)
    lr = LR if args.optimizer == "lars" else LAMB_LR
    run_dir = os.path.join(args.out, "run")
    cmd = shlex.split(args.mpirun) + ["-np", str(args.np), args.scaletrain, "--model.name", "mlp",
                                      "--data.path", data, "--data.normalize", "none", "--train.batch", str(SAMPLES),
                                      "--train.epochs", str(STEPS), "--train.evaluate", "false",
                                      "--train.precision", args.precision, "--run.threads", "1", "--run.device", args.device,
                                      "--optimizer.name", args.optimizer, "--optimizer.lr", str(lr),
                                      "--optimizer.weight_decay", str(WD), "--optimizer.schedule", "poly",
                                      "--optimizer.warmup_epochs", "1", "--optimizer.min_lr", str(MIN_LR * lr / LR),
                                      "--optimizer.trust_coefficient", str(ETA), "--optimizer.momentum", str(MOMENTUM),
                                      "--optimizer.beta1", str(B1), "--optimizer.beta2", str(B2),
                                      "--optimizer.eps", str(EPS), "--run.dir", run_dir,
                                      "--run.checkpoint_steps", "1", "--run.checkpoint_keep", str(STEPS + 1)]
    run(cmd, os.path.join(args.out, "train.log"))
    checkpoints = sorted(glob.glob(os.path.join(run_dir, "checkpoints", "step-*")),
                         key=lambda d: int(d.rsplit("-", 1)[1]))
    if len(checkpoints) != STEPS:
        raise SystemExit(f"FAIL: expected {STEPS} checkpoints, found {checkpoints}")
    err = compare(args, checkpoints, x, y, True)
    wrong = compare(args, checkpoints, x, y, False)
    print(f"{args.optimizer} {args.precision} {args.device} np{args.np}: worst relative error {err:.2e} (tolerance {args.tol:g}); "
          f"with the biases adapted too {wrong:.2e}")
    if err > args.tol:
        raise SystemExit(f"FAIL: {args.optimizer} differs from the paper's rule by {err:.2e} > {args.tol:g}")
    if wrong <= args.tol:
        raise SystemExit("FAIL: the reference with the biases adapted matches too: the check cannot see the exclusion")
    print(f"OK: {args.optimizer} follows the paper's update rule")


if __name__ == "__main__":
    sys.exit(main())
