#!/usr/bin/env python3
"""Data files as a newcomer writes them with h5py from data-tools/README.md's format, end to end:
- without the optional train mean/std, the trainer refuses the file (one message naming
  `st-info --add-stats` and `data.normalize = none`, non-zero exit on every rank, no hang), st-info
  says they are missing, and `--data.normalize none` trains on the raw values on purpose;
- `st-info --add-stats` stores numpy's float64 mean/std of the training split, also for float32
  values with a large offset (where E[x^2] - E[x]^2 in float64 loses the variance), and the trainer
  then trains on the file;
- a file with train and val splits but no test split: the trainer names `--train.eval_split val`.
usage: check_unnormalized_data.py --scaletrain BIN --st-info BIN --mpirun "MPIRUN FLAGS" --out DIR
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

import h5py
import numpy as np


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def write_file(path, splits, shape, dtype, values):
    """The documented format: root attributes format, version, classes, sample_shape; per split
    samples [N, ...shape] and int32 labels [N]. No mean/std."""
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "scaletrain-dataset"
        f.attrs["version"] = np.int64(1)
        f.attrs["classes"] = np.array([f"c{i}" for i in range(10)], dtype=h5py.string_dtype())
        f.attrs["sample_shape"] = np.array(shape, dtype=np.int64)
        for name, n in splits.items():
            labels = np.arange(n, dtype=np.int32) % 10
            g = f.create_group(name)
            g.create_dataset("samples", data=values(labels).astype(dtype))
            g.create_dataset("labels", data=labels)


def images(labels):
    """Learnable 28x28x1 uint8 images: a bright band whose row is the class, on noise."""
    rng = np.random.RandomState(7)
    x = rng.randint(0, 60, size=(len(labels), 28, 28, 1))
    for i, c in enumerate(labels):
        x[i, 2 + 2 * c: 4 + 2 * c, :, 0] = 250
    return x


def run(cmd, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scaletrain", required=True)
    ap.add_argument("--st-info", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    train = shlex.split(a.mpirun) + ["-np", "2", a.scaletrain, "--train.batch", "64", "--train.max_steps", "4",
                                      "--train.log_every", "2"]

    raw = os.path.join(a.out, "raw.h5")
    write_file(raw, {"train": 640, "test": 128}, [28, 28, 1], np.uint8, images)
    rc, out = run(train + ["--data.path", raw])
    want = f"`st-info --add-stats {raw}`, or set data.normalize = none"
    if rc == 0 or out.count(want) != 1 or "summary:" in out:
        fail(f"the trainer must refuse {raw} without mean/std once (exit {rc}):\n{out}")
    print(f"OK: refused without mean/std, exit {rc}: {[l for l in out.splitlines() if want in l][0]}")
    rc, out = run([a.st_info, raw])
    if rc != 0 or "mean/std per channel: none" not in out or "--add-stats" not in out:
        fail(f"st-info must flag the missing mean/std:\n{out}")
    print("OK: st-info flags the missing mean/std")
    rc, out = run(train + ["--data.path", raw, "--data.normalize", "none"])
    if rc != 0 or "summary:" not in out:
        fail(f"--data.normalize none must train on the raw values:\n{out}")
    print("OK: --data.normalize none trains")

    rc, out = run([a.st_info, "--add-stats", raw])
    with h5py.File(raw, "r") as f:
        x = f["train/samples"][()].astype(np.float64).reshape(-1, 1)
        mean, std = f["train"].attrs["mean"], f["train"].attrs["std"]
    if rc != 0 or not np.allclose(mean, x.mean(0), rtol=1e-6) or not np.allclose(std, x.std(0), rtol=1e-6):
        fail(f"st-info --add-stats stored mean {mean} std {std}; numpy: {x.mean(0)} {x.std(0)}\n{out}")
    print(f"OK: --add-stats stored mean {mean} std {std} (numpy's)")
    rc, out = run(train + ["--data.path", raw])
    if rc != 0 or "summary:" not in out:
        fail(f"the trainer must train once the file has mean/std:\n{out}")
    print("OK: the file trains after --add-stats")

    # float32 values around 1e6 with a spread of about 0.1 per channel, 3 channels.
    offset = os.path.join(a.out, "offset.h5")
    rng = np.random.RandomState(3)
    write_file(offset, {"train": 3000}, [5, 3], np.float32,
               lambda labels: 1e6 + rng.standard_normal((len(labels), 5, 3)) * [0.1, 0.2, 0.3])
    rc, out = run([a.st_info, "--add-stats", offset])
    with h5py.File(offset, "r") as f:
        x = f["train/samples"][()].astype(np.float64).reshape(-1, 3)
        mean, std = f["train"].attrs["mean"], f["train"].attrs["std"]
    naive = np.sqrt(np.maximum((x * x).mean(0) - x.mean(0) ** 2, 0))
    if rc != 0 or not np.allclose(std, x.std(0), rtol=1e-5) or not np.allclose(mean, x.mean(0), rtol=1e-7):
        fail(f"offset data: stored std {std}, numpy {x.std(0)} (E[x^2]-E[x]^2: {naive})\n{out}")
    print(f"OK: large offset: std {std}, numpy {x.std(0)}, E[x^2]-E[x]^2 would give {naive}")

    val = os.path.join(a.out, "val.h5")
    write_file(val, {"train": 640, "val": 128}, [28, 28, 1], np.uint8, images)
    run([a.st_info, "--add-stats", val])
    rc, out = run(train + ["--data.path", val])
    want = "has no 'test' split to evaluate on (it has: train, val): set --train.eval_split val"
    if rc == 0 or out.count(want) != 1:
        fail(f"a file without a test split must name --train.eval_split val once (exit {rc}):\n{out}")
    rc, out = run(train + ["--data.path", val, "--train.eval_split", "val", "--train.epochs", "1"])
    if rc != 0 or "eval loss" not in out:
        fail(f"--train.eval_split val must evaluate on val:\n{out}")
    print("OK: no test split: the message names --train.eval_split val, which then works")


if __name__ == "__main__":
    main()
