#!/usr/bin/python3
# What checkpointing costs: the size and write time of one checkpoint (checksum compare, three HDF5
# files written and fsynced, rename, `latest`), against two anchors measured here in the same run:
# torch.save of the PyTorch twin's state_dict plus its SGD optimizer state (the same tensors),
# fsynced, under each PyTorch at hand (Debian's 1.13; perf/anchor-env.sh's PyTorch 2), and a raw
# write + fsync of the same number of bytes (what the disk allows). Then the
# share of training time that checkpointing every N steps costs, from 2-rank runs with
# run.checkpoint_steps = N against the same run without checkpoints.
"""usage: /usr/bin/python3 perf/bench_checkpoint.py [--build build/cpu] [--models fmnist_sepcnn lenet]
                                                  [--anchors debian pytorch2] [--anchor-env DIR]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train_step import ANCHORS, BATCH, ROOT, find_anchors, run_scaletrain  # noqa: E402

STEPS = {"lenet": 300, "fmnist_sepcnn": 60}
EVERY = {"lenet": [100, 20, 5], "fmnist_sepcnn": [30, 10, 5]}


def checkpoint_records(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [j for j in map(json.loads, f) if j.get("record") == "checkpoint"]


def best_of(n, f):
    return min(f() for _ in range(n))


def fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def torch_save_seconds(model_name, workdir):
    """torch.save of the twin's state_dict and its SGD (momentum) state, fsynced: best of 3. Runs under
    the anchor's Python (--torch-save)."""
    import torch
    from pytorch_anchor import make_model

    model = make_model(model_name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(2, 1, 28, 28)
    model(x).sum().backward()
    opt.step()  # creates the momentum buffers
    path = os.path.join(workdir, f"{model_name}.pt")

    def once():
        t0 = time.perf_counter()
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)
        fsync_file(path)
        return time.perf_counter() - t0
    return best_of(3, once), os.path.getsize(path)


def torch_save_under(anchor, model_name, workdir):
    """(seconds, bytes) of torch_save_seconds under `anchor`'s Python."""
    out = subprocess.run([anchor["python"], os.path.abspath(__file__), "--torch-save", model_name, "--work", workdir],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.splitlines()[-1])
    return r["seconds"], r["bytes"]


def raw_write_seconds(nbytes, workdir):
    data = os.urandom(nbytes)
    path = os.path.join(workdir, "raw.bin")

    def once():
        t0 = time.perf_counter()
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return time.perf_counter() - t0
    return best_of(3, once)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--models", nargs="+", default=["fmnist_sepcnn", "lenet"], choices=list(STEPS))
    p.add_argument("--anchors", nargs="+", default=ANCHORS, choices=ANCHORS,
                   help="the PyTorch whose torch.save is timed: debian (1.13), pytorch2 (perf/anchor-env.sh's)")
    p.add_argument("--anchor-env", default="", help="the PyTorch 2 environment (default: where perf/anchor-env.sh puts it)")
    p.add_argument("--torch-save", default="", help=argparse.SUPPRESS)  # one torch.save timing, under this Python
    p.add_argument("--work", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_save:
        seconds, size = torch_save_seconds(a.torch_save, a.work)
        print(json.dumps({"seconds": seconds, "bytes": size}))
        return
    anchors, missing = find_anchors(a.anchors, a.anchor_env)
    with tempfile.TemporaryDirectory(prefix="st-ckpt-", dir=os.path.join(ROOT, "build")) as work:
        print(f"checkpoint directory on the file system of {work}; 2 ranks x 1 thread, global batch per model")
        for anchor in anchors:
            print(f"torch.save under PyTorch {anchor['torch']} ({anchor['python']})")
        for note in missing:
            print(f"{note}; torch.save is timed under Debian's PyTorch alone")
        print()
        hdr = (f"{'model':14s} {'size MB':>8s} {'scaletrain s':>12s} {'torch.save s':>12s} {'raw write s':>11s} "
               f"{'vs torch.save':>13s} {'vs raw write':>12s}")
        print(hdr)
        print("-" * len(hdr))
        runs = {}
        for model in a.models:
            steps = STEPS[model]
            base = run_scaletrain(a.build, model, 2, 1, steps, work, ["--run.checkpoint_at_end", "false"])
            rows = []
            for every in EVERY[model]:
                extra = ["--run.checkpoint_steps", str(every), "--run.checkpoint_at_end", "false",
                         "--run.checkpoint_keep", "2"]
                r = run_scaletrain(a.build, model, 2, 1, steps, work, extra)
                run_dir = max((os.path.join(work, d) for d in os.listdir(work)), key=os.path.getmtime)
                recs = checkpoint_records(run_dir)
                rows.append((every, r, recs))
            recs = [c for _, _, rs in rows for c in rs]
            size = recs[0]["bytes"]
            ours = min(c["seconds"] for c in recs)
            saves = {a["torch"]: torch_save_under(a, model, work) for a in anchors}
            version, (theirs, torch_size) = min(saves.items(), key=lambda kv: kv[1][0])
            raw = raw_write_seconds(size, work)
            each = ", ".join(f"{v}: {t:.4f} s" for v, (t, _) in saves.items())
            print(f"{model:14s} {size / 1e6:8.2f} {ours:12.4f} {theirs:12.4f} {raw:11.4f} {theirs / ours:12.2f}x "
                  f"{raw / ours:11.2f}x   (torch.save: the fastest PyTorch, {version}, file {torch_size / 1e6:.2f} MB; "
                  f"{each})")
            runs[model] = (base, rows, steps)
        print()
        print("scaletrain s: the fastest of the run's checkpoints, from the checksum to `latest` on rank 0;")
        print("vs X: X's time / scaletrain's (above 1: scaletrain is faster).")
        print()
        hdr = (f"{'model':14s} {'every N steps':>13s} {'checkpoints':>11s} {'mean write s':>12s} {'img/s':>8s} "
               f"{'vs none':>8s} {'share of training time':>22s}")
        print(hdr)
        print("-" * len(hdr))
        for model, (base, rows, steps) in runs.items():
            print(f"{model:14s} {'none':>13s} {0:11d} {'-':>12s} {base['images_per_s']:8.0f} {1:8.3f} {'-':>22s}")
            step_s = BATCH[model] / base["images_per_s"]
            for every, r, recs in rows:
                mean = sum(c["seconds"] for c in recs) / len(recs)
                share = mean / (every * step_s + mean)
                print(f"{model:14s} {every:13d} {len(recs):11d} {mean:12.4f} {r['images_per_s']:8.0f} "
                      f"{r['images_per_s'] / base['images_per_s']:8.3f} {100 * share:21.2f}%")
        print()
        print("share of training time: mean write time / (N steps at the no-checkpoint step time + write time);")
        print("img/s and vs none: measured throughput (warm-up excluded), which also carries run-to-run noise.")


if __name__ == "__main__":
    main()
