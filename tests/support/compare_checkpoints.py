#!/usr/bin/env python3
"""Compares the model.h5 of two checkpoints bit for bit: the same dataset names, dtypes and shapes, and
identical bytes in every parameter and buffer (BatchNorm's running_mean, running_var and the int64
num_batches_tracked). Read with h5py, no scaletrain code.

usage: compare_checkpoints.py A_CHECKPOINT B_CHECKPOINT [--require-buffers]
A_CHECKPOINT, B_CHECKPOINT: checkpoint directories (step-N) or run directories (their checkpoints/latest).
--require-buffers: fail unless the model has buffers, every num_batches_tracked counted at least one
batch and some running statistic moved from its initial value (so that the comparison covers them).
Exit 0 and one line with the counts when identical; exit 1 naming each differing dataset otherwise."""
import argparse
import os
import sys

import h5py
import numpy as np

BUFFER_SUFFIXES = (".running_mean", ".running_var", ".num_batches_tracked")


def checkpoint_dir(path):
    latest = os.path.join(path, "checkpoints", "latest")
    if os.path.isfile(latest):
        return os.path.join(path, "checkpoints", open(latest, encoding="utf-8").read().strip())
    return path


def read_model(path):
    out = {}
    with h5py.File(os.path.join(path, "model.h5"), "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.array(obj)) if isinstance(obj, h5py.Dataset) else None)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--require-buffers", action="store_true")
    args = p.parse_args()
    a_dir, b_dir = checkpoint_dir(args.a), checkpoint_dir(args.b)
    a, b = read_model(a_dir), read_model(b_dir)
    problems = []
    for name in sorted(set(a) ^ set(b)):
        problems.append(f"{name}: only in {a_dir if name in a else b_dir}/model.h5")
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        if x.dtype != y.dtype or x.shape != y.shape:
            problems.append(f"{name}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}")
        elif x.tobytes() != y.tobytes():
            bits = f"u{x.dtype.itemsize}"  # compared as bit patterns (NaNs, -0.0)
            n = int(np.count_nonzero(x.reshape(-1).view(bits) != y.reshape(-1).view(bits)))
            diff = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))
            problems.append(f"{name}: {n} of {x.size} values differ (max |a - b| {diff:.3g})")
    buffers = [k for k in a if k.endswith(BUFFER_SUFFIXES)]
    params = len(a) - len(buffers)
    if args.require_buffers:
        if not buffers:
            problems.append("the model has no buffers (running_mean, running_var, num_batches_tracked) to compare")
        tracked = {k: int(a[k]) for k in buffers if k.endswith(".num_batches_tracked")}
        if any(v < 1 for v in tracked.values()):
            problems.append("num_batches_tracked still 0 in: " + ", ".join(k for k, v in tracked.items() if v < 1))
        moved = [k for k in buffers if k.endswith(".running_mean") and np.any(a[k] != 0)]
        if buffers and not moved:
            problems.append("every running_mean is still 0: the running statistics were never updated")
    if problems:
        print(f"FAIL: {a_dir}/model.h5 and {b_dir}/model.h5 differ:")
        for line in problems:
            print("  " + line)
        return 1
    tracked = sorted({int(a[k]) for k in buffers if k.endswith(".num_batches_tracked")})
    print(f"model.h5 bitwise identical ({os.path.basename(a_dir)}): {params} parameters and {len(buffers)} buffers"
          + (f" (num_batches_tracked {', '.join(map(str, tracked))})" if tracked else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
