#!/usr/bin/env python3
"""1-D float samples: the mlp trained by scaletrain on f32 spectra reaches the accuracy of a PyTorch
MLP of the same shape trained on the same file with the same recipe, within one point.

usage: spectra_vs_pytorch.py SCALETRAIN ST_SYNTH OUTDIR [--epochs E] -- MPIRUN -np N [flags...]

The file: st-synth --shape 256 --dtype f32 (10 classes, heavy noise, so that neither model is near
100%). The recipe (scaletrain's defaults): SGD with momentum 0.9, lr 0.05, global batch 128, a new
permutation each epoch, the last partial batch dropped, inputs normalized per channel by the file's
training mean/std. The PyTorch twin: Flatten, Linear 256 ReLU, Linear 128 ReLU, Linear 10,
initialized as scaletrain's Dense layers are (Glorot-uniform weights, zero biases) but from PyTorch's
generator: the comparison is of what training reaches, not of trajectories."""
import json
import subprocess
import sys

import h5py
import numpy as np
import torch


def scaletrain_accuracy(st, mpirun, data, run_dir, epochs):
    cmd = mpirun + [st, "--model.name", "mlp", "--data.path", data, "--train.epochs", str(epochs),
                    "--train.batch", "128", "--run.threads", "1", "--run.dir", run_dir]
    subprocess.run(cmd, check=True)
    with open(f"{run_dir}/run.json", encoding="utf-8") as f:
        return 100.0 * json.load(f)["final_eval_accuracy"]


def pytorch_accuracy(data, epochs, seed=0):
    torch.manual_seed(seed)
    torch.set_num_threads(2)
    with h5py.File(data, "r") as f:
        mean = f["train"].attrs["mean"].astype(np.float32)
        inv_std = (1.0 / f["train"].attrs["std"].astype(np.float32)).astype(np.float32)
        x = torch.from_numpy((f["train"]["samples"][...] - mean) * inv_std)
        y = torch.from_numpy(f["train"]["labels"][...].astype(np.int64))
        xt = torch.from_numpy((f["test"]["samples"][...] - mean) * inv_std)
        yt = torch.from_numpy(f["test"]["labels"][...].astype(np.int64))
    classes = int(max(y.max(), yt.max())) + 1
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(x[0].numel(), 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, classes))
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss = torch.nn.CrossEntropyLoss()
    batch = 128
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for k in range(len(x) // batch):
            idx = order[k * batch:(k + 1) * batch]
            opt.zero_grad()
            loss(model(x[idx]), y[idx]).backward()
            opt.step()
    with torch.no_grad():
        return 100.0 * (model(xt).argmax(1) == yt).float().mean().item()


def main():
    args = sys.argv[1:]
    split = args.index("--")
    st, synth, out = args[:3]
    epochs = int(args[args.index("--epochs") + 1]) if "--epochs" in args[:split] else 4
    mpirun = args[split + 1:]
    subprocess.run(["rm", "-rf", out], check=True)
    subprocess.run(["mkdir", "-p", out], check=True)
    data = f"{out}/spectra.h5"
    subprocess.run([synth, "--shape", "256", "--dtype", "f32", "--classes", "10", "--train", "32768", "--test", "8192",
                    "--noise", "2.0", "--seed", "5", "-o", data], check=True, stdout=subprocess.DEVNULL)
    ours = scaletrain_accuracy(st, mpirun, data, f"{out}/run", epochs)
    theirs = pytorch_accuracy(data, epochs)
    print(f"test accuracy after {epochs} epochs on {data}: scaletrain mlp {ours:.2f}%, PyTorch MLP {theirs:.2f}% "
          f"(difference {ours - theirs:+.2f} points)")
    if abs(ours - theirs) > 1.0:
        print("FAIL: more than one point apart")
        return 1
    print("OK: within one point")
    return 0


if __name__ == "__main__":
    sys.exit(main())
