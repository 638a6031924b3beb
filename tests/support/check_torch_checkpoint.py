#!/usr/bin/env python3
"""PyTorch loads a scaletrain checkpoint.

A chain model (lenet, fmnist_sepcnn, ...): trains MODEL for a few steps on 2 ranks (synthetic data),
loads the checkpoint's model.h5 into the unchanged PyTorch twin of perf/pytorch_anchor.py with h5py
and load_state_dict(strict=True) (no scaletrain code in Python), and requires the logits PyTorch
computes on the first samples to match those scaletrain-checkpoint computes from the same file.

resnet18 (--data FILE, a packed Fashion-MNIST): trains it for --steps steps on 2 ranks and evaluates it
on the data set's test split (scaletrain's own evaluation, with rank 0's BatchNorm buffers: run.json's
final_eval_accuracy); loads model.h5, parameters and buffers (running_mean, running_var, the int64
num_batches_tracked), into torchvision.models.resnet18(num_classes=10) with conv1 made
Conv2d(1, 64, 7, 2, 3, bias=False) for 28x28x1 images, with load_state_dict(strict=True), so a missing,
extra or misnamed tensor fails; evaluates it in eval mode on the same test split, normalized as
scaletrain normalizes ((x - mean) * (1 / std) in f32, the training split's statistics) and requires the
same number of correct predictions, up to the samples whose two highest logits are within fp32
rounding of each other. fc follows global average pooling, so none of its columns are permuted
(checked against scaletrain-checkpoint info); and with the running statistics left at their initial
values the accuracy must differ (the check sees the buffers).

mobilenet_v2, vgg16 (--width W: model.classifier_width), inception_v3 and vit (the small ViT of the parity
references) (--size S): trains it for --steps
steps on 2 ranks on a synthetic SxSx3 data set written with st-synth (--synth BIN), loads model.h5 into
torchvision's network (built as tests/reference/make_zoo_reference.py builds it) with
load_state_dict(strict=True), and requires the eval-mode logits PyTorch computes on the first samples to
match those scaletrain-checkpoint computes from the same file (vgg16's classifier.0 takes its columns in
torch's CHW order); with the columns of the classifier's first layer shuffled they must differ.

usage: check_torch_checkpoint.py --scaletrain BIN --tool BIN --mpirun "MPIRUN FLAGS" --model NAME --out DIR
                                 [--data FILE --steps N --batch B --lr LR] [--synth BIN --size S --width W]
"""
import argparse
import glob
import json
import os
import shlex
import subprocess
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
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
    p.add_argument("--data", help="the packed data set (resnet18: Fashion-MNIST)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--synth", help="st-synth (the torchvision zoo networks' data set)")
    p.add_argument("--size", type=int, default=32, help="the torchvision zoo networks' input size")
    p.add_argument("--width", type=int, default=64, help="vgg16: model.classifier_width")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    run_dir = os.path.join(a.out, "run")
    subprocess.run(["rm", "-rf", run_dir], check=True)
    if a.model in TORCHVISION_RESNETS:
        return check_torchvision_resnet(a, run_dir)
    if a.model in TORCHVISION_ZOO:
        return check_torchvision_zoo(a, run_dir)
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
    # A permutation that is not PyTorch's (e.g. the HWC columns left as they are) must be caught.
    first_dense = min((k for k in state if state[k].dim() == 2), key=lambda k: int(k.split(".")[0]))
    return compare_logits(model, state, x, ours, first_dense, f"{a.model}: PyTorch load_state_dict(strict=True) "
                          f"took {len(state)} tensors from {ckpt}/model.h5; logits of {x.shape[0]} samples")


def compare_logits(model, state, x, ours, shuffled, what):
    """Loads `state` into `model` (strict), requires its eval logits on x to be `ours`, then requires them
    to differ with the columns of `shuffled` permuted (the check must see a wrong layout). 0 or 1."""
    model.load_state_dict(state, strict=True)
    model.eval()
    with torch.no_grad():
        theirs = model(x).numpy()
    diff = float(np.max(np.abs(theirs - ours)))
    scale = float(np.max(np.abs(ours)))
    print(f"{what}: max |torch - scaletrain| {diff:.3g} (max |logit| {scale:.3g})")
    if not np.isfinite(diff) or diff > 1e-4 * max(scale, 1.0):
        print("FAIL: PyTorch's logits differ from scaletrain's")
        return 1
    bad = dict(state)
    bad[shuffled] = state[shuffled][:, torch.randperm(state[shuffled].shape[1], generator=torch.Generator().manual_seed(0))]
    model.load_state_dict(bad, strict=True)
    with torch.no_grad():
        wrong = float(np.max(np.abs(model(x).numpy() - ours)))
    if wrong <= 1e-4 * max(scale, 1.0):
        print(f"FAIL: columns of {shuffled} permuted and the logits still agree ({wrong:.3g}): the check is blind")
        return 1
    print(f"OK: with the columns of {shuffled} shuffled the logits differ by {wrong:.3g}, as they must")
    return 0


# The zoo models that are torchvision's, with the first convolution made for one-channel 28x28 images.
TORCHVISION_RESNETS = ("resnet18",)
# A prediction is a near tie when its two highest logits are closer than this, relative to its largest
# |logit|: two fp32 computations of the same network in different orders (oneDNN's convolutions and
# PyTorch's) differ in the logits by ~1e-6 of their size, so only such samples can change their class.
NEAR_TIE = 1e-4


# The torchvision networks checked on synthetic 3-channel data, and the first layer of each one's
# classifier (the one whose shuffled columns must change the logits).
TORCHVISION_ZOO = {"mobilenet_v2": "classifier.1.weight", "vgg16": "classifier.0.weight", "inception_v3": "fc.weight",
                   "vit": "heads.head.weight"}


def check_torchvision_zoo(a, run_dir):
    import make_zoo_reference  # noqa: E402  (torchvision's networks as the parity references build them)
    if not a.synth:
        raise SystemExit(f"check_torch_checkpoint.py: --model {a.model} needs --synth (st-synth)")
    data = os.path.join(a.out, f"synthetic-{a.size}.h5")
    run([a.synth, "--shape", f"{a.size},{a.size},3", "--train", "64", "--test", "16", "-o", data],
        os.path.join(a.out, "synth.log"))
    extra = ["--model.classifier_width", str(a.width)] if a.model == "vgg16" else []
    if a.model in make_zoo_reference.VIT:  # the reference's small architecture
        for key, v in zip(("patch_size", "num_layers", "num_heads", "hidden_dim", "mlp_dim"),
                          make_zoo_reference.VIT[a.model]):
            extra += ["--model.vit." + key, str(v)]
    run(shlex.split(a.mpirun) + ["-np", "2", a.scaletrain, "--model.name", a.model, "--data.path", data,
                                 "--train.batch", "4", "--train.max_steps", str(a.steps), "--train.evaluate", "false",
                                 "--optimizer.lr", str(a.lr), "--run.threads", "1", "--run.dir", run_dir] + extra,
        os.path.join(a.out, "train.log"))
    latest = open(os.path.join(run_dir, "checkpoints", "latest"), encoding="utf-8").read().strip()
    ckpt = os.path.join(run_dir, "checkpoints", latest)
    logits_file = os.path.join(a.out, "logits.h5")
    run([a.tool, "logits", ckpt, "--data", data, "--split", "test", "--count", "8", "-o", logits_file],
        os.path.join(a.out, "logits.log"))
    state = read_state(ckpt)
    with h5py.File(logits_file, "r") as f:
        x = torch.from_numpy(np.array(f["input"])).permute(0, 3, 1, 2).contiguous()
        ours = np.array(f["logits"])
    make_zoo_reference.CLASSES = ours.shape[1]
    model = make_zoo_reference.make_model(a.model, a.width, a.size)
    return compare_logits(model, state, x, ours, TORCHVISION_ZOO[a.model],
                          f"{a.model}: PyTorch load_state_dict(strict=True) took {len(state)} tensors from "
                          f"{ckpt}/model.h5 into torchvision's {a.model}; logits of {x.shape[0]} "
                          f"{a.size}x{a.size}x3 samples")


def torchvision_resnet(name, channels, classes):
    import torchvision  # noqa: E402  (only the resnet check needs it)
    model = getattr(torchvision.models, name)(num_classes=classes)
    model.conv1 = torch.nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
    return model


def read_state(ckpt):
    """model.h5 as a state_dict: f32 tensors, and int64 for num_batches_tracked (as torch keeps it)."""
    state = {}
    with h5py.File(os.path.join(ckpt, "model.h5"), "r") as f:
        for k in f.keys():
            v = np.array(f[k])
            want = np.int64 if k.endswith(".num_batches_tracked") else np.float32
            if v.dtype != want:
                raise SystemExit(f"FAIL: {ckpt}/model.h5: {k} is {v.dtype}, expected {np.dtype(want)}")
            state[k] = torch.from_numpy(v)
    return state


def normalized_split(data, split):
    """A split of a packed data set: its stored samples, the same normalized as scaletrain's Normalize does
    (kernels/normalize.hpp: (x - mean[c]) * inv_std[c] in f32, inv_std = 1.0f / std[c], the training split's
    statistics; NHWC), its labels (int64) and the class count."""
    with h5py.File(data, "r") as f:
        samples = np.array(f[split]["samples"])
        labels = np.array(f[split]["labels"]).astype(np.int64)
        mean = np.array(f["train"].attrs["mean"], dtype=np.float32)
        std = np.array(f["train"].attrs["std"], dtype=np.float32)
        classes = len(f.attrs["classes"])
    inv_std = np.where(std > 0, np.float32(1) / np.where(std > 0, std, np.float32(1)), np.float32(1)).astype(np.float32)
    x = ((samples.astype(np.float32) - mean) * inv_std).astype(np.float32)
    return samples, x, labels, classes


def predict(model, x, batch=500):
    """Logits of NHWC float32 inputs x in eval mode, in batches."""
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            out.append(model(torch.from_numpy(x[i:i + batch]).permute(0, 3, 1, 2).contiguous()).numpy())
    return np.concatenate(out)


def check_torchvision_resnet(a, run_dir):
    if not a.data:
        raise SystemExit(f"check_torch_checkpoint.py: --model {a.model} needs --data (a packed Fashion-MNIST)")
    run(shlex.split(a.mpirun) + ["-np", "2", a.scaletrain, "--model.name", a.model, "--data.path", a.data,
                                 "--train.batch", str(a.batch), "--train.max_steps", str(a.steps),
                                 "--train.evaluate", "true", "--optimizer.lr", str(a.lr), "--comm.bucket_mb", "8",
                                 "--run.threads", "1", "--run.dir", run_dir],
        os.path.join(a.out, "train.log"))
    latest = open(os.path.join(run_dir, "checkpoints", "latest"), encoding="utf-8").read().strip()
    ckpt = os.path.join(run_dir, "checkpoints", latest)
    # scaletrain's own evaluation of the model it checkpointed (no step between the two).
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        rj = json.load(f)
    split = rj["config"]["train"]["eval_split"]
    evals = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8")
             if '"record":"evaluation"' in line]
    if rj["final_step"] != int(latest.split("-")[1]) or not evals or evals[-1]["eval_accuracy"] != rj["final_eval_accuracy"]:
        raise SystemExit(f"FAIL: {run_dir}: run.json's final_eval_accuracy is not the evaluation of {ckpt}")
    theirs_acc, n_eval = rj["final_eval_accuracy"], evals[-1]["eval_samples"]

    # fc follows global average pooling, not a Flatten of an image: its columns are the channels in
    # both layouts, so scaletrain must mark no parameter as permuted.
    info = os.path.join(a.out, "info.log")
    run([a.tool, "info", ckpt], info)
    listed = open(info, encoding="utf-8").read()
    if "HWC -> CHW" in listed or " fc.weight " not in listed:
        print(listed)
        raise SystemExit("FAIL: scaletrain-checkpoint info marks a permuted parameter (or lists no fc.weight)")

    state = read_state(ckpt)
    samples, x, labels, classes = normalized_split(a.data, split)
    if samples.dtype != np.uint8 or samples.shape[0] != n_eval:
        raise SystemExit(f"FAIL: {a.data}:{split}: {samples.dtype} {samples.shape}, scaletrain evaluated {n_eval} samples")

    model = torchvision_resnet(a.model, samples.shape[-1], classes)
    model.load_state_dict(state, strict=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    logits = predict(model, x)
    pred = logits.argmax(axis=1)
    correct = int(np.sum(pred == labels))
    theirs = round(theirs_acc * n_eval)
    top2 = np.sort(logits, axis=1)[:, -2:]
    near = int(np.sum(top2[:, 1] - top2[:, 0] < NEAR_TIE * np.maximum(np.max(np.abs(logits), axis=1), 1.0)))
    allowed = max(near, 2)
    buffers = sum(1 for k in state if k.endswith((".running_mean", ".running_var", ".num_batches_tracked")))
    print(f"{a.model}: PyTorch load_state_dict(strict=True) took {len(state)} tensors ({buffers} buffers) from "
          f"{ckpt}/model.h5 into torchvision.models.{a.model} (conv1 for {samples.shape[-1]} channel(s)); split "
          f"'{split}' of {a.data}: PyTorch {correct}/{n_eval} correct ({correct / n_eval:.2%}), scaletrain "
          f"{theirs}/{n_eval} ({theirs_acc:.2%}): {abs(correct - theirs)} apart, {near} near ties "
          f"(top-2 logits within {NEAR_TIE:g} relative), {allowed} allowed")
    if theirs_acc < 2.0 / classes:
        print(f"FAIL: scaletrain's accuracy {theirs_acc:.2%} is not clearly above chance ({1 / classes:.0%}; "
              f"{2 / classes:.0%} needed): train longer for a meaningful comparison")
        return 1
    if abs(correct - theirs) > allowed:
        print("FAIL: PyTorch's accuracy differs from scaletrain's evaluation of the same checkpoint")
        return 1
    # The running statistics matter: with them back at their initial values (mean 0, var 1) the
    # predictions must change on more samples than the tolerance allows (on the first 1000 alone), or
    # the check could not see a wrong buffer.
    fresh = torchvision_resnet(a.model, samples.shape[-1], classes).state_dict()
    blind = {k: (fresh[k] if k.endswith((".running_mean", ".running_var")) else v) for k, v in state.items()}
    model.load_state_dict(blind, strict=True)
    n = min(1000, n_eval)
    moved = int(np.sum(predict(model, x[:n]).argmax(axis=1) != pred[:n]))
    if moved <= allowed:
        print(f"FAIL: with the running statistics reset only {moved} of {n} predictions change: the check is blind to them")
        return 1
    print(f"OK: PyTorch's accuracy on scaletrain's checkpoint is scaletrain's (with the running statistics reset, "
          f"{moved} of the first {n} predictions change)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
