#!/usr/bin/env python3
"""Other people's weights: data-tools/st-import-torch, run.init_from and run.evaluate_only end to end.

resnet18: torchvision's resnet18 (conv1 Conv2d(1, 64, 7, 2, 3, bias=False), 10 classes), random weights from a
  fixed seed and random running statistics, saved with torch.save(state_dict); st-import-torch writes model.h5;
  scaletrain --run.evaluate_only evaluates it on Fashion-MNIST's test split at 2 ranks. PyTorch's eval-mode
  predictions of the same weights on the same normalized samples must give the same top-1 and top-5 counts and
  the same confusion matrix, the mean loss within 1e-5 relative, and scaletrain-checkpoint's logits of the first
  16 samples from model.h5 must be PyTorch's within fp32 tolerance. With the running statistics left at their
  initial values PyTorch's predictions must change (the check sees the buffers).

refusals: a renamed tensor, a reshaped one, a missing buffer, a file that is not a state_dict (a list, a dict of
  numbers, a pickled module, a text file) each give one error naming it, and no model.h5; a training script's
  {"model": state_dict} and DistributedDataParallel's "module." names are taken. scaletrain refuses to evaluate
  a file of another model, naming it.

finetune: PyTorch's lenet (perf/pytorch_anchor.py's twin) trained for a few hundred steps on Fashion-MNIST is
  imported (10 classes) and evaluated by scaletrain (PyTorch's accuracy exactly: the Flatten's columns); then
  run.init_from starts lenet on a 5-class Fashion-MNIST (labels // 2): with optimizer.lr 1e-30 every tensor but the
  classifier (11.weight, 11.bias, listed as re-initialized) comes back unchanged in the run's checkpoint; trained,
  the loss falls and the final accuracy beats the same run from scratch; run.resume = auto continues the
  fine-tune from its own checkpoint, not from the imported file; evaluating the fine-tune's checkpoint gives the
  same eval.json at 1, 2 and 3 ranks (3 on the simulated device), whose top-1 is the run's last evaluation.

usage: check_torch_import.py {resnet18,refusals,finetune} --scaletrain BIN --tool BIN --importer SCRIPT
                             --mpirun "MPIRUN FLAGS" --data FMNIST.h5 --out DIR
"""
import argparse
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import shlex
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
from pytorch_anchor import make_model  # noqa: E402  (the twin, as the benchmark uses it)
from check_torch_checkpoint import normalized_split, predict, torchvision_resnet  # noqa: E402


def run(cmd, log, expect_fail=False):
    """Runs cmd with its output in log; returns the output. Fails the test on an unexpected exit code."""
    with open(log, "w", encoding="utf-8") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False)
    out = open(log, encoding="utf-8").read()
    if (r.returncode != 0) != expect_fail:
        print(out)
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}")
    return out


def torch_metrics(logits, labels, classes):
    """top-1 and top-5 counts (ties to the lower class, as scaletrain's), mean loss, confusion matrix."""
    z = logits.astype(np.float32)
    zy = z[np.arange(len(labels)), labels][:, None]
    k = np.arange(classes)[None, :]
    rank = np.sum((z > zy) | ((z == zy) & (k < labels[:, None])), axis=1)
    pred = np.argmax(z, axis=1)
    confusion = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(confusion, (labels, pred), 1)
    loss = torch.nn.functional.cross_entropy(torch.from_numpy(z), torch.from_numpy(labels), reduction="mean")
    return {"top1_correct": int(np.sum(rank == 0)), "topk_correct": int(np.sum(rank < min(5, classes))),
            "loss": float(loss), "confusion_matrix": confusion.tolist()}


def evaluate(a, path, np_, model, data, out_dir, extra=()):
    """scaletrain --run.evaluate_only PATH at np_ ranks; eval.json."""
    shutil.rmtree(out_dir, ignore_errors=True)
    run(shlex.split(a.mpirun) + ["-np", str(np_), a.scaletrain, "--model.name", model, "--data.path", data,
                                 "--train.batch", "96", "--run.threads", "1", "--run.evaluate_only", path,
                                 "--run.dir", out_dir] + list(extra), out_dir + ".log")
    with open(os.path.join(out_dir, "eval.json"), encoding="utf-8") as f:
        return json.load(f)


def compare(ours, theirs, what):
    """scaletrain's eval.json against PyTorch's metrics: counts and confusion exact, loss to 1e-5."""
    bad = [k for k in ("top1_correct", "topk_correct", "confusion_matrix") if ours[k] != theirs[k]]
    rel = abs(ours["loss"] - theirs["loss"]) / max(abs(theirs["loss"]), 1e-12)
    print(f"{what}: scaletrain top-1 {ours['top1_correct']}/{ours['samples']}, top-5 {ours['topk_correct']}, loss "
          f"{ours['loss']:.7g}; PyTorch top-1 {theirs['top1_correct']}, top-5 {theirs['topk_correct']}, loss "
          f"{theirs['loss']:.7g} (relative difference {rel:.2g})")
    if bad or rel > 1e-5:
        raise SystemExit(f"FAIL: {what}: scaletrain and PyTorch differ in {bad or 'the loss'}")


def check_resnet18(a):
    torch.manual_seed(0)
    model = torchvision_resnet("resnet18", 1, 10)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # running statistics away from their initial values, so that they must travel
        for k, v in model.state_dict().items():
            if k.endswith("running_mean"):
                v.copy_(torch.randn(v.shape, generator=g) * 0.2)
            elif k.endswith("running_var"):
                v.copy_(torch.rand(v.shape, generator=g) + 0.5)
            elif k.endswith("num_batches_tracked"):
                v.fill_(123)
    pt, h5 = os.path.join(a.out, "resnet18.pt"), os.path.join(a.out, "resnet18.h5")
    torch.save(model.state_dict(), pt)
    print(run(["/usr/bin/python3", a.importer, pt, "--model", "resnet18", "--input", "28,28,1", "--classes", "10",
               "-o", h5, "--checkpoint-tool", a.tool], os.path.join(a.out, "import.log")).strip())
    ours = evaluate(a, h5, 2, "resnet18", a.data, os.path.join(a.out, "eval_np2"))
    _, x, labels, _ = normalized_split(a.data, "test")
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    logits = predict(model, x)
    compare(ours, torch_metrics(logits, labels, 10), "resnet18 imported, Fashion-MNIST test split")

    out = os.path.join(a.out, "logits.h5")
    run([a.tool, "logits", h5, "--data", a.data, "--split", "test", "--count", "16", "-o", out],
        os.path.join(a.out, "logits.log"))
    with h5py.File(out, "r") as f:
        st = np.array(f["logits"])
    diff, scale = float(np.max(np.abs(st - logits[:16]))), float(np.max(np.abs(logits[:16])))
    print(f"resnet18: logits of 16 samples: max |torch - scaletrain| {diff:.3g} (max |logit| {scale:.3g})")
    if not np.isfinite(diff) or diff > 1e-4 * max(scale, 1.0):
        raise SystemExit("FAIL: scaletrain's logits from the imported file differ from PyTorch's")

    fresh = torchvision_resnet("resnet18", 1, 10).state_dict()
    blind = {k: (fresh[k] if "running" in k else v) for k, v in model.state_dict().items()}
    model.load_state_dict(blind)
    moved = int(np.sum(predict(model, x[:1000]).argmax(axis=1) != logits[:1000].argmax(axis=1)))
    if moved == 0:
        raise SystemExit("FAIL: the running statistics change no prediction: the check is blind to them")
    print(f"OK: PyTorch's accuracy on the imported resnet18 is scaletrain's (with the running statistics reset, "
          f"{moved} of the first 1000 predictions change)")
    return 0


def load_importer(path):
    loader = importlib.machinery.SourceFileLoader("st_import_torch", path)
    spec = importlib.util.spec_from_loader("st_import_torch", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def import_in_process(importer, a, weights, model, out, classes="10"):
    """st-import-torch's main() on weights (one torch import for every case): exit code and stderr."""
    argv = sys.argv
    sys.argv = ["st-import-torch", weights, "--model", model, "--input", "28,28,1", "--classes", classes, "-o", out,
                "--checkpoint-tool", a.tool]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = importer.main()
    finally:
        sys.argv = argv
    return rc, err.getvalue()


def check_refusals(a):
    importer = load_importer(a.importer)
    torch.manual_seed(0)
    model = torchvision_resnet("resnet18", 1, 10)
    good = model.state_dict()
    renamed = {("layer1.0.conv_1.weight" if k == "layer1.0.conv1.weight" else k): v for k, v in good.items()}
    reshaped = dict(good, **{"layer2.0.downsample.0.weight": torch.zeros(128, 64, 3, 3)})
    missing = {k: v for k, v in good.items() if k != "layer3.1.bn2.running_var"}
    cases = [  # name, object saved (None: written as text), what the one error must say
        ("renamed", renamed, ["missing: layer1.0.conv1.weight [64, 64, 3, 3]",
                              "unexpected: layer1.0.conv_1.weight [64, 64, 3, 3]", "2 mismatch(es)"]),
        ("reshaped", reshaped, ["wrong shape: layer2.0.downsample.0.weight: file [128, 64, 3, 3], model expects "
                                "[128, 64, 1, 1]", "1 mismatch(es)"]),
        ("missing_buffer", missing, ["missing: layer3.1.bn2.running_var [256] (a buffer of the model",
                                     "1 mismatch(es)"]),
        ("a_list", [good["fc.weight"], good["fc.bias"]], ["is not a state_dict: a list"]),
        ("numbers", {"epochs": 3, "name": "run"}, ["is not a state_dict: a dict of 2 entries, not all of them "
                                                   "named tensors"]),
        ("pickled_module", model, ["holds objects other than tensors and plain containers"]),
        ("text", None, ["is not a file torch.save wrote"]),
    ]
    failures = 0
    for name, obj, needles in cases:
        pt, h5 = os.path.join(a.out, name + ".pt"), os.path.join(a.out, name + ".h5")
        if obj is None:
            with open(pt, "w", encoding="utf-8") as f:
                f.write("conv1.weight 1 2 3\n")
        else:
            torch.save(obj, pt)
        rc, err = import_in_process(importer, a, pt, "resnet18", h5)
        lines = [line for line in err.splitlines() if line.startswith("st-import-torch: error:")]
        ok = rc == 1 and len(lines) == 1 and all(n in err for n in needles) and not os.path.exists(h5)
        print(f"{'ok' if ok else 'FAIL'}: {name}: exit {rc}: {err.strip()}")
        failures += not ok
    # Accepted: a training script's checkpoint dict, and DDP's names.
    for name, obj, note in (("wrapped", {"model": good, "epoch": torch.tensor(3)}, "the state_dict under 'model'"),
                            ("ddp", {"module." + k: v for k, v in good.items()}, "'module.' prefix")):
        pt, h5 = os.path.join(a.out, name + ".pt"), os.path.join(a.out, name + ".h5")
        torch.save(obj, pt)
        argv = sys.argv
        sys.argv = ["st-import-torch", pt, "--model", "resnet18", "--input", "28,28,1", "--classes", "10", "-o", h5,
                    "--checkpoint-tool", a.tool]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = importer.main()
        sys.argv = argv
        with h5py.File(h5, "r") as f:
            same = all(np.array_equal(np.array(f[k]), v.numpy()) for k, v in good.items())
        ok = rc == 0 and note in out.getvalue() and same
        print(f"{'ok' if ok else 'FAIL'}: {name}: {out.getvalue().strip()}")
        failures += not ok
    # scaletrain refuses a file of another model, naming it and the fix.
    err = run(shlex.split(a.mpirun) + ["-np", "1", a.scaletrain, "--model.name", "lenet", "--data.path", a.data,
                                       "--run.evaluate_only", os.path.join(a.out, "wrapped.h5"), "--run.threads", "1"],
              os.path.join(a.out, "other_model.log"), expect_fail=True)
    want = "holds model 'resnet18', this run builds 'lenet' (set model.name = resnet18)"
    print(f"{'ok' if want in err else 'FAIL'}: scaletrain --run.evaluate_only of a resnet18 file with model lenet")
    failures += want not in err
    if failures:
        raise SystemExit(f"FAIL: {failures} case(s)")
    print("OK: every refusal names what is wrong, once")
    return 0


def five_class_copy(src, dst):
    """Fashion-MNIST with labels // 2: five classes (the first name of each pair)."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        names = [n.decode() if isinstance(n, bytes) else n for n in f.attrs["classes"]]
        f.attrs["classes"] = [f"{names[2 * i]}+{names[2 * i + 1]}" for i in range(5)]
        for split in ("train", "test"):
            f[split]["labels"][...] = np.array(f[split]["labels"]) // 2


def pretrain_lenet(a, steps=300):
    """PyTorch's lenet twin, SGD on Fashion-MNIST's training split for `steps` steps of 64 (fixed seed)."""
    torch.manual_seed(0)
    model = make_model("lenet", classes=10)
    _, x, y, _ = normalized_split(a.data, "train")
    x, y = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(), torch.from_numpy(y)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))
    model.train()
    for s in range(steps):
        idx = order[s * 64:(s + 1) * 64]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    return model


def metrics_of(run_dir):
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8")]
    intervals = [r for r in records if "phases" in r]
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        return intervals, json.load(f)


def check_finetune(a):
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    model = pretrain_lenet(a)
    pt, h5 = os.path.join(a.out, "lenet.pt"), os.path.join(a.out, "lenet10.h5")
    torch.save(model.state_dict(), pt)
    run(["/usr/bin/python3", a.importer, pt, "--model", "lenet", "--input", "28,28,1", "--classes", "10", "-o", h5,
         "--checkpoint-tool", a.tool], os.path.join(a.out, "import.log"))
    _, x, labels, _ = normalized_split(a.data, "test")
    compare(evaluate(a, h5, 2, "lenet", a.data, os.path.join(a.out, "eval_lenet10")),
            torch_metrics(predict(model, x), labels, 10), "lenet trained by PyTorch, imported")

    five = os.path.join(a.out, "fmnist5.h5")
    five_class_copy(a.data, five)
    base = shlex.split(a.mpirun) + ["-np", "2", a.scaletrain, "--model.name", "lenet", "--data.path", five,
                                    "--train.batch", "96", "--run.threads", "1", "--train.log_every", "10"]
    # The start itself, checkpointed after one step at lr 1e-30: an update below every weight's float32 resolution.
    start = os.path.join(a.out, "start")
    shutil.rmtree(start, ignore_errors=True)
    out = run(base + ["--optimizer.lr", "1e-30", "--optimizer.weight_decay", "0", "--train.max_steps", "1",
                      "--train.evaluate", "false", "--run.init_from", h5, "--run.dir", start],
              os.path.join(a.out, "start.log"))
    want = "re-initialized (the classifier of another class count, train.seed 42): 11.weight: file [10, 84], model " \
           "[5, 84], 11.bias: file [10], model [5]"
    if want not in out or "kept 8 tensors" not in out:
        print(out)
        raise SystemExit("FAIL: the start-up does not list the kept tensors and the re-initialized classifier")
    latest = open(os.path.join(start, "checkpoints", "latest"), encoding="utf-8").read().strip()
    with h5py.File(h5, "r") as src, h5py.File(os.path.join(start, "checkpoints", latest, "model.h5"), "r") as got:
        kept = [k for k in src if not k.startswith("11.")]
        unequal = [k for k in kept if not np.array_equal(np.array(src[k]), np.array(got[k]))]
        shapes = {k: got[k].shape for k in ("11.weight", "11.bias")}
    if unequal or shapes != {"11.weight": (5, 84), "11.bias": (5,)}:
        raise SystemExit(f"FAIL: after init_from and a step at lr 1e-30, {unequal} differ from the imported file, classifier {shapes}")
    print(f"init_from: {len(kept)} tensors equal to the imported file after a step at lr 1e-30; classifier {shapes}")

    # Fine-tune against the same run from scratch.
    results = {}
    base += ["--optimizer.lr", "0.02"]
    for name, extra in (("finetune", ["--run.init_from", h5]), ("scratch", [])):
        d = os.path.join(a.out, name)
        shutil.rmtree(d, ignore_errors=True)
        run(base + ["--train.max_steps", "60", "--run.dir", d] + extra, os.path.join(a.out, name + ".log"))
        results[name] = metrics_of(d)
    ft, rj = results["finetune"]
    _, scratch = results["scratch"]
    print(f"fine-tune from the import: loss {ft[0]['loss']:.4f} (steps 1-{ft[0]['steps']}) -> {ft[-1]['loss']:.4f} "
          f"(the last {ft[-1]['steps']}), accuracy {rj['final_eval_accuracy']:.4f}; from scratch {scratch['final_eval_accuracy']:.4f}")
    if not ft[-1]["loss"] < 0.8 * ft[0]["loss"] or not rj["final_eval_accuracy"] > scratch["final_eval_accuracy"]:
        raise SystemExit("FAIL: training from the imported start does not improve on itself and on a fresh start")

    # A resumed fine-tune continues from its own checkpoint.
    d = os.path.join(a.out, "finetune")
    out = run(base + ["--train.max_steps", "70", "--run.dir", d, "--run.resume", "auto", "--run.init_from", h5],
              os.path.join(a.out, "finetune_resumed.log"))
    if "run.init_from: not used: the run continues from its own checkpoint" not in out or "step 60" not in out:
        print(out)
        raise SystemExit("FAIL: the resumed fine-tune did not continue from its checkpoint")
    _, resumed = metrics_of(d)
    last_eval = resumed["final_eval_accuracy"]

    # Its checkpoint evaluated at 1, 2 and 3 ranks: the same numbers, the run's last evaluation's top-1.
    evals = {n: evaluate(a, d, n, "lenet", five, os.path.join(a.out, f"eval_np{n}"), dev) for n, dev in
             ((1, ()), (2, ()), (3, ("--run.device", "sim")))}  # sim: the records on a device's streams
    keys = ("samples", "top1_correct", "topk_correct", "loss", "per_class", "confusion_matrix")
    differ = [(n, k) for n in (2, 3) for k in keys if evals[n][k] != evals[1][k]]
    print(f"evaluate_only of {d} at 1, 2, 3 ranks: top-1 {[evals[n]['top1'] for n in (1, 2, 3)]}, loss "
          f"{[evals[n]['loss'] for n in (1, 2, 3)]}; the run's last evaluation {last_eval}")
    if differ or evals[1]["top1"] != last_eval:
        raise SystemExit(f"FAIL: evaluations differ: {differ or 'from the run last evaluation'}")
    print("OK: fine-tuned from imported weights; evaluation is the same at 1, 2 and 3 ranks and is the run's own")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("resnet18", "refusals", "finetune"))
    p.add_argument("--scaletrain", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--importer", required=True)
    p.add_argument("--mpirun", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    return {"resnet18": check_resnet18, "refusals": check_refusals, "finetune": check_finetune}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
