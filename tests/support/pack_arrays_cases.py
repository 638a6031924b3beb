#!/usr/bin/env python3
"""Inputs for st-pack-arrays and independent checks of what it wrote (h5py + NumPy).

usage:
  pack_arrays_cases.py make DIR          good and bad .npy / HDF5 inputs (fixed seeds)
  pack_arrays_cases.py check OUT.h5 SAMPLES LABELS [--split S] [--old-formula-off]
      the split's samples and labels equal the source arrays (as float32) in order, and the
      training mean/std are within 1e-6 relative of NumPy's float64 result; --old-formula-off also
      requires that E[x^2] - E[x]^2 summed in order in float64 (the old writer's formula) is off by
      more than 1e-6 relative on this data
  pack_arrays_cases.py same A.h5 B.h5     identical samples, labels and statistics
  pack_arrays_cases.py same-statistics A.h5 B.h5
      every split's samples equal as numbers (whatever the stored types) and the training mean/std
      attributes are bitwise equal
  pack_arrays_cases.py fmnist-npy IN.h5 DIR
      float32 .npy copies of a uint8 data set's train and test splits (x_train.npy, y_train.npy, ...)
SAMPLES and LABELS are .npy paths or FILE:/dataset specs."""
import sys

import h5py
import numpy as np


def load(spec):
    if spec.endswith(".npy"):
        return np.load(spec)
    path, _, dataset = spec.rpartition(":")
    with h5py.File(path, "r") as f:
        return f[dataset][...]


def make(d):
    import os
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    x = rng.normal(3.0, 2.0, size=(203, 8, 3)).astype(np.float32)
    y = rng.integers(0, 5, size=203).astype(np.int64)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/y.npy", y)
    np.save(f"{d}/x_f64_be.npy", x.astype(">f8"))          # widened, big-endian: the same values
    np.save(f"{d}/y_i32.npy", y.astype(np.int32).reshape(-1, 1))
    np.save(f"{d}/x_f16.npy", x.astype(np.float16))
    np.save(f"{d}/x_u8.npy", rng.integers(0, 256, size=(203, 8, 3)).astype(np.uint8))
    xt = rng.normal(3.0, 2.0, size=(50, 8, 3)).astype(np.float32)
    np.save(f"{d}/xt.npy", xt)
    np.save(f"{d}/yt.npy", rng.integers(0, 5, size=50).astype(np.int64))
    with h5py.File(f"{d}/arrays.h5", "w") as f:
        f["group/x"] = x
        f["group/y"] = y.astype(np.uint8)
        f["names"] = np.array([b"a", b"b"])
    # Large offset, unit spread: 2^21 values around 1e4 (float32).
    n = 131072
    offset = (1e4 + rng.standard_normal((n, 16, 1))).astype(np.float32)
    with h5py.File(f"{d}/offset.h5", "w") as f:
        f["sim/fields"] = offset
        f["sim/labels"] = rng.integers(0, 3, size=n).astype(np.int16)
    # Bad inputs: each names a file and a first bad index.
    np.save(f"{d}/y_short.npy", y[:202])
    nan = x.copy()
    nan[123, 4, 1] = np.nan
    nan[150, 0, 0] = np.nan
    np.save(f"{d}/x_nan.npy", nan)
    inf = x.copy()
    inf[77, 2, 2] = -np.inf
    np.save(f"{d}/x_inf.npy", inf)
    big = y.copy()
    big[42] = 5
    big[99] = 6
    np.save(f"{d}/y_big.npy", big)
    neg = y.copy()
    neg[17] = -1
    np.save(f"{d}/y_neg.npy", neg)
    np.save(f"{d}/x_str.npy", np.array([["a", "b"]] * 203))
    np.save(f"{d}/x_obj.npy", np.array([None] * 203, dtype=object), allow_pickle=True)
    np.save(f"{d}/y_float.npy", y.astype(np.float32))
    np.save(f"{d}/x_fortran.npy", np.asfortranarray(x))
    with open(f"{d}/x.npy", "rb") as f:
        data = f.read()
    with open(f"{d}/x_truncated.npy", "wb") as f:
        f.write(data[: len(data) // 2])
    print(f"inputs in {d}")


def check(out, samples, labels, split, old_formula_off):
    x = load(samples).astype(np.float64)
    y = load(labels).reshape(-1)
    with h5py.File(out, "r") as f:
        g = f[split]
        xs = g["samples"][...].astype(np.float64)
        ys = g["labels"][...]
        mean = f["train"].attrs["mean"].astype(np.float64)
        std = f["train"].attrs["std"].astype(np.float64)
    assert xs.shape[0] == x.shape[0], f"{split}: {xs.shape[0]} samples packed, {x.shape[0]} in {samples}"
    assert np.array_equal(xs.reshape(x.shape), x.astype(np.float32).astype(np.float64)), f"{split}: sample values differ"
    assert np.array_equal(ys, y), f"{split}: labels differ"
    print(f"{split}: {x.shape[0]} samples and labels identical to {samples}, {labels}")
    if split != "train":
        return
    flat = x.astype(np.float32).astype(np.float64).reshape(-1, xs.shape[-1])
    ref_mean, ref_std = flat.mean(axis=0), flat.std(axis=0)
    err_mean = np.max(np.abs(mean - ref_mean) / np.abs(ref_mean))
    err_std = np.max(np.abs(std - ref_std) / ref_std)
    print(f"mean/std relative error against NumPy float64: {err_mean:.2e} / {err_std:.2e}")
    assert err_mean <= 1e-6 and err_std <= 1e-6, "statistics off by more than 1e-6 relative"
    if old_formula_off:
        # The old writer: running sums of x and x^2 in float64, in order, then E[x^2] - E[x]^2.
        n = flat.shape[0]
        m = np.cumsum(flat, axis=0)[-1] / n
        var = np.cumsum(flat * flat, axis=0)[-1] / n - m * m
        old_std = np.sqrt(np.maximum(var, 0.0)).astype(np.float32).astype(np.float64)
        err_old = np.max(np.abs(old_std - ref_std) / ref_std)
        print(f"old formula E[x^2] - E[x]^2: std relative error {err_old:.2e}")
        assert err_old > 1e-6, "the old formula is not measurably off on this data: the test shows nothing"
    print("statistics right")


def same(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        assert sorted(fa.keys()) == sorted(fb.keys()), "different splits"
        for s in fa.keys():
            for k in ("samples", "labels"):
                assert np.array_equal(fa[s][k][...], fb[s][k][...]), f"{s}/{k} differ"
        for k in ("mean", "std"):
            assert np.array_equal(fa["train"].attrs[k], fb["train"].attrs[k]), f"train {k} differs"
    print(f"{a} and {b} are identical")


def same_statistics(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        for s in fa.keys():
            xa, xb = fa[s]["samples"][...], fb[s]["samples"][...]
            assert xa.shape == xb.shape, f"{s}: shapes {xa.shape} and {xb.shape}"
            assert np.array_equal(xa.astype(np.float64), xb.astype(np.float64)), f"{s}: sample values differ"
            assert np.array_equal(fa[s]["labels"][...], fb[s]["labels"][...]), f"{s}: labels differ"
        for k in ("mean", "std"):
            va, vb = fa["train"].attrs[k], fb["train"].attrs[k]
            assert np.array_equal(va, vb), f"train {k}: {va} ({a}) and {vb} ({b})"
            print(f"train {k}: {va} in both")
    print(f"{a} ({stored_dtype(a)}) and {b} ({stored_dtype(b)}): same values and statistics")


def stored_dtype(path):
    with h5py.File(path, "r") as f:
        return f["train"]["samples"].dtype


def fmnist_npy(src, d):
    import os
    os.makedirs(d, exist_ok=True)
    with h5py.File(src, "r") as f:
        for s in ("train", "test"):
            np.save(f"{d}/x_{s}.npy", f[s]["samples"][...].astype(np.float32))
            np.save(f"{d}/y_{s}.npy", f[s]["labels"][...].astype(np.int64))
    print(f"float32 copies of {src} in {d}")


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "check":
        args = sys.argv[2:]
        split = args[args.index("--split") + 1] if "--split" in args else "train"
        check(args[0], args[1], args[2], split, "--old-formula-off" in args)
    elif cmd == "same":
        same(sys.argv[2], sys.argv[3])
    elif cmd == "same-statistics":
        same_statistics(sys.argv[2], sys.argv[3])
    elif cmd == "fmnist-npy":
        fmnist_npy(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
