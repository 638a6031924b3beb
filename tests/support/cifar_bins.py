#!/usr/bin/python3
# Tiny CIFAR binary batches for the st-pack-cifar tests, and the check of the packed file.
#   cifar_bins.py make10 <dir>        data_batch_1..5.bin (3,2,2,2,1 records), test_batch.bin (2),
#                                     batches.meta.txt
#   cifar_bins.py make100 <dir>       train.bin (5 records), test.bin (3), fine/coarse_label_names.txt
#   cifar_bins.py badsize <dir>       a CIFAR-10 folder whose data_batch_3.bin has 5 stray bytes
#   cifar_bins.py check <h5> <dir> cifar10|cifar100 [fine|coarse]
#       labels, class names, shapes, channel means, and the planar CHW -> HWC conversion: sample
#       [n, y, x, c] must equal record byte label_bytes + c * 1024 + y * 32 + x.
import os
import sys

import h5py
import numpy as np

C10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def records(n, label_bytes, seed):
    rng = np.random.default_rng(seed)
    recs = rng.integers(0, 256, size=(n, label_bytes + 3072), dtype=np.uint8)
    recs[:, 0] = rng.integers(0, 20, size=n)  # coarse (CIFAR-100) or the label (CIFAR-10, < 10 below)
    if label_bytes == 1:
        recs[:, 0] %= 10
    else:
        recs[:, 1] = rng.integers(0, 100, size=n)
    # A known pixel: record i has R=10+i, G=100+i, B=200+i at (y=1, x=2).
    for i in range(n):
        for c, base in enumerate((10, 100, 200)):
            recs[i, label_bytes + c * 1024 + 1 * 32 + 2] = base + i
    return recs


def make10(d, corrupt=False):
    os.makedirs(d, exist_ok=True)
    for k, n in enumerate((3, 2, 2, 2, 1), start=1):
        data = records(n, 1, k).tobytes()
        if corrupt and k == 3:
            data += b"\x00" * 5
        open(os.path.join(d, f"data_batch_{k}.bin"), "wb").write(data)
    open(os.path.join(d, "test_batch.bin"), "wb").write(records(2, 1, 99).tobytes())
    open(os.path.join(d, "batches.meta.txt"), "w").write("\n".join(C10_NAMES) + "\n\n")


def make100(d):
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "train.bin"), "wb").write(records(5, 2, 1).tobytes())
    open(os.path.join(d, "test.bin"), "wb").write(records(3, 2, 2).tobytes())
    open(os.path.join(d, "fine_label_names.txt"), "w").write("\n".join(f"fine{i}" for i in range(100)) + "\n")
    open(os.path.join(d, "coarse_label_names.txt"), "w").write("\n".join(f"coarse{i}" for i in range(20)) + "\n")


def check(h5_path, d, kind, label="fine"):
    if kind == "cifar10":
        lb, li = 1, 0
        parts = {"train": [f"data_batch_{k}.bin" for k in range(1, 6)], "test": ["test_batch.bin"]}
        names = C10_NAMES
    else:
        lb, li = 2, (0 if label == "coarse" else 1)
        parts = {"train": ["train.bin"], "test": ["test.bin"]}
        names = [f"{label}{i}" for i in range(20 if label == "coarse" else 100)]
    with h5py.File(h5_path, "r") as f:
        got = [x.decode() if isinstance(x, bytes) else str(x) for x in f.attrs["classes"]]
        assert got == names, got
        assert list(f.attrs["sample_shape"]) == [32, 32, 3]
        for split, files in parts.items():
            raw = np.concatenate([np.fromfile(os.path.join(d, fn), np.uint8).reshape(-1, lb + 3072) for fn in files])
            x, y = f[split]["samples"][...], f[split]["labels"][...]
            assert x.shape == (len(raw), 32, 32, 3) and x.dtype == np.uint8, x.shape
            assert list(y) == list(raw[:, li].astype(np.int32)), (list(y), list(raw[:, li]))
            hwc = raw[:, lb:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
            assert np.array_equal(x, hwc), f"{split}: samples are not the records in HWC order"
            start = 0
            for fn in files:  # the known pixel, record by record within each file
                n = os.path.getsize(os.path.join(d, fn)) // (lb + 3072)
                for i in range(n):
                    assert list(x[start + i, 1, 2]) == [10 + i, 100 + i, 200 + i], (fn, i, x[start + i, 1, 2])
                start += n
            print(f"{split}: {len(y)} samples, labels and HWC pixels right")
        train = f["train"]["samples"][...].reshape(-1, 3).astype(np.float64)
        assert np.allclose(f["train"].attrs["mean"], train.mean(0), atol=1e-3), f["train"].attrs["mean"]
        assert np.allclose(f["train"].attrs["std"], train.std(0), atol=1e-3), f["train"].attrs["std"]
        print("train mean/std right")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "make10":
        make10(args[0])
    elif cmd == "make100":
        make100(args[0])
    elif cmd == "badsize":
        make10(args[0], corrupt=True)
    elif cmd == "check":
        check(*args)
    else:
        sys.exit(f"unknown command {cmd}")
