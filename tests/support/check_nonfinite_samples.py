#!/usr/bin/env python3
"""Float files with NaN or inf samples, written with h5py as a user would (data-tools/README.md's
format, the statistics written by hand from the finite values), at 2 ranks:
- one NaN in the training split (f32): stage mode ends before the first step (a copy per node,
  per rank, or each node's share on local disk), stream mode at the
  step whose batch holds it; both with one message naming the file, the split, the sample and the
  count (and the step in stream mode), a non-zero exit, no hang, and not the learning rate;
- one inf in the evaluation split (f16): the same, stage mode before the first step, stream mode
  at the evaluation;
- the clean copy trains in both modes; st-info counts the non-finite values per split.
usage: check_nonfinite_samples.py --scaletrain BIN --st-info BIN --mpirun "MPIRUN FLAGS" --out DIR
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

import h5py
import numpy as np

TRAIN, TEST, SHAPE = 1024, 256, [16, 16, 1]
BAD_TRAIN_SAMPLE, BAD_TEST_SAMPLE = 700, 100


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def write_file(path, dtype, poison=None):
    """poison: (split, sample, value) written into one value of one sample."""
    rng = np.random.RandomState(3)
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "scaletrain-dataset"
        f.attrs["version"] = np.int64(1)
        f.attrs["classes"] = np.array([f"c{i}" for i in range(10)], dtype=h5py.string_dtype())
        f.attrs["sample_shape"] = np.array(SHAPE, dtype=np.int64)
        for name, n in (("train", TRAIN), ("test", TEST)):
            labels = np.arange(n, dtype=np.int32) % 10
            x = rng.normal(0.0, 1.0, size=[n] + SHAPE).astype(np.float32)
            x[:, :, 0, 0] += labels[:, None]  # learnable: the first column encodes the class
            x = x.astype(dtype)
            if poison and poison[0] == name:
                x[poison[1], 3, 5, 0] = poison[2]
            g = f.create_group(name)
            g.create_dataset("samples", data=x, chunks=tuple([64] + SHAPE))
            g.create_dataset("labels", data=labels)
            if name == "train":
                finite = x.astype(np.float64)[np.isfinite(x.astype(np.float64))]
                g.attrs["mean"] = np.array([finite.mean()], dtype=np.float32)
                g.attrs["std"] = np.array([finite.std()], dtype=np.float32)


def run(cmd, timeout=120):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"timed out after {timeout} s (hang): {' '.join(cmd)}")
    return p.returncode, p.stdout


def expect_refused(train, path, mode, split, sample, step_pattern, staging=()):
    rc, out = run(train + ["--data.path", path, "--data.mode", mode] + list(staging))
    want = (re.escape(f"{path}: split '{split}'") + (f", in {step_pattern}," if step_pattern else "") +
            re.escape(f" holds 1 non-finite value(s) (NaN or inf), the first in sample {sample}:"))
    lines = [l for l in out.splitlines() if re.search(want, l)]
    if rc == 0 or len(lines) != 1:
        fail(f"{mode} mode must refuse {path} with one message /{want}/ (exit {rc}, {len(lines)} found):\n{out}")
    if "optimizer.lr" in out or "MPI_ABORT" in out:
        fail(f"{mode} mode: the message must name the data, not the learning rate, and end without MPI_Abort:\n{out}")
    steps = re.findall(r"step (\d+)/", out)
    if mode == "stage" and steps:
        fail(f"stage mode must end before the first step:\n{out}")
    print(f"OK: {os.path.basename(path)}, {mode} mode {' '.join(staging)}: exit {rc}, after {len(steps)} logged "
          f"step(s): {lines[0]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scaletrain", required=True)
    ap.add_argument("--st-info", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    train = shlex.split(a.mpirun) + ["-np", "2", a.scaletrain, "--model.name", "mlp", "--train.batch", "64",
                                      "--train.epochs", "1", "--train.log_every", "1", "--run.threads", "1"]
    clean, nan, inf16 = (os.path.join(a.out, n) for n in ("clean.h5", "nan.h5", "inf16.h5"))
    write_file(clean, np.float32)
    write_file(nan, np.float32, ("train", BAD_TRAIN_SAMPLE, np.nan))
    write_file(inf16, np.float16, ("test", BAD_TEST_SAMPLE, np.inf))

    # The other two ways of staging: a copy per rank, and each node's share on local disk.
    stage_dir = os.path.join(a.out, "stage_dir")
    os.makedirs(stage_dir)
    for staging in (["--data.stage_copy", "rank"], ["--data.shuffle", "node", "--data.stage_dir", stage_dir]):
        expect_refused(train, nan, "stage", "train", BAD_TRAIN_SAMPLE, "", staging)
    for mode in ("stage", "stream"):
        expect_refused(train, nan, mode, "train", BAD_TRAIN_SAMPLE,
                       r"the batch of step \d+ \(rank \d, data.mode = stream\)" if mode == "stream" else "")
        expect_refused(train, inf16, mode, "test", BAD_TEST_SAMPLE,
                       r"the evaluation after epoch 1 \(data.mode = stream\)" if mode == "stream" else "")
        rc, out = run(train + ["--data.path", clean, "--data.mode", mode])
        if rc != 0 or "epoch 1 done" not in out or "non-finite" in out:
            fail(f"the clean copy must train in {mode} mode (exit {rc}):\n{out}")
        print(f"OK: the clean copy trains in {mode} mode")

    for path, split, sample in ((nan, "train", BAD_TRAIN_SAMPLE), (inf16, "test", BAD_TEST_SAMPLE)):
        rc, out = run([a.st_info, path])
        want = f"non-finite values (NaN, inf): 1, the first in sample {sample}"
        if rc != 0 or out.count(want) != 1 or out.count("non-finite values (NaN, inf): none") != 1:
            fail(f"st-info must count the non-finite value of split {split} and report none in the other:\n{out}")
        print(f"OK: st-info {os.path.basename(path)}: {want} (split {split}), none in the other split")
    rc, out = run([a.st_info, clean])
    if rc != 0 or out.count("non-finite values (NaN, inf): none") != 2:
        fail(f"st-info must report no non-finite values in either split of the clean copy:\n{out}")
    print("OK: st-info reports none in both splits of the clean copy")


if __name__ == "__main__":
    main()
