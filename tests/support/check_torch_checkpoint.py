#!/usr/bin/env python3
"""PyTorch loads a scaletrain checkpoint: trains MODEL for a few steps on 2 ranks (synthetic data),
loads the checkpoint's model.h5 into the unchanged PyTorch twin of perf/pytorch_anchor.py with h5py
and load_state_dict(strict=True) (no scaletrain code in Python), and requires the logits PyTorch
computes on the first samples to match those scaletrain-checkpoint computes from the same file.

usage: check_torch_checkpoint.py --scaletrain BIN --tool BIN --mpirun "MPIRUN FLAGS" --model NAME --out DIR
"""
import argparse
import glob
import os
import shlex
import subprocess
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
from pytorch_anchor import make_model  # noqa: E402  (the twin, as the benchmark uses it)


def run(cmd, log):
    with open(log, "w", encoding="utf-8") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False)
    if r.returncode != 0:
        print(open(log, encoding="utf-8").read())
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scaletrain", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    run_dir = os.path.join(a.out, "run")
    subprocess.run(["rm", "-rf", run_dir], check=True)
    run(shlex.split(a.mpirun) + ["-np", "2", a.scaletrain, "--model.name", a.model, "--data.synthetic_samples", "1024",
                                 "--train.batch", "32", "--train.max_steps", str(a.steps), "--train.evaluate", "false",
                                 "--optimizer.lr", "0.002", "--run.threads", "1", "--run.dir", run_dir],
        os.path.join(a.out, "train.log"))
    latest = open(os.path.join(run_dir, "checkpoints", "latest"), encoding="utf-8").read().strip()
    ckpt = os.path.join(run_dir, "checkpoints", latest)
    data = glob.glob(os.path.join(run_dir, "synthetic-*.h5"))[0]
    logits_file = os.path.join(a.out, "logits.h5")
    run([a.tool, "logits", ckpt, "--data", data, "--split", "test", "--count", "16", "-o", logits_file],
        os.path.join(a.out, "logits.log"))

    with h5py.File(os.path.join(ckpt, "model.h5"), "r") as f:
        state = {k: torch.from_numpy(np.array(f[k])) for k in f.keys()}
    with h5py.File(logits_file, "r") as f:
        x = torch.from_numpy(np.array(f["input"])).permute(0, 3, 1, 2).contiguous()  # NHWC -> NCHW
        ours = np.array(f["logits"])
    model = make_model(a.model, classes=ours.shape[1])
    model.load_state_dict(state, strict=True)
    model.eval()
    with torch.no_grad():
        theirs = model(x).numpy()
    diff = float(np.max(np.abs(theirs - ours)))
    scale = float(np.max(np.abs(ours)))
    print(f"{a.model}: PyTorch load_state_dict(strict=True) took {len(state)} tensors from {ckpt}/model.h5; "
          f"logits of {x.shape[0]} samples: max |torch - scaletrain| {diff:.3g} (max |logit| {scale:.3g})")
    if not np.isfinite(diff) or diff > 1e-4 * max(scale, 1.0):
        print("FAIL: PyTorch's logits differ from scaletrain's")
        return 1
    # A permutation that is not PyTorch's (e.g. the HWC columns left as they are) must be caught.
    first_dense = min((k for k in state if state[k].dim() == 2), key=lambda k: int(k.split(".")[0]))
    bad = dict(state)
    bad[first_dense] = state[first_dense][:, torch.randperm(state[first_dense].shape[1], generator=torch.Generator().manual_seed(0))]
    model.load_state_dict(bad, strict=True)
    with torch.no_grad():
        wrong = float(np.max(np.abs(model(x).numpy() - ours)))
    if wrong <= 1e-4 * max(scale, 1.0):
        print(f"FAIL: columns of {first_dense} permuted and the logits still agree ({wrong:.3g}): the check is blind")
        return 1
    print(f"OK: with the columns of {first_dense} shuffled the logits differ by {wrong:.3g}, as they must")
    return 0


if __name__ == "__main__":
    sys.exit(main())
