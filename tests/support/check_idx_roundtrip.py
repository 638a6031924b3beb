#!/usr/bin/python3
# Round trip of st-pack-idx: the packed HDF5 file's bytes and labels equal the IDX files', read
# here independently with Python's gzip and h5py (not through the C++ reader that packed them).
import gzip
import sys

import h5py
import numpy as np


def idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def main(h5_path, idx_dir):
    with h5py.File(h5_path, "r") as f:
        assert f.attrs["format"] == "scaletrain-dataset", f.attrs["format"]
        assert int(f.attrs["version"]) == 1
        assert list(f.attrs["sample_shape"]) == [28, 28, 1]
        for split, stem in (("train", "train"), ("test", "t10k")):
            images = idx(f"{idx_dir}/{stem}-images-idx3-ubyte.gz")
            labels = idx(f"{idx_dir}/{stem}-labels-idx1-ubyte.gz")
            s = f[f"{split}/samples"][...]
            l = f[f"{split}/labels"][...]
            assert s.dtype == np.uint8 and l.dtype == np.int32, (s.dtype, l.dtype)
            assert s.shape == images.shape + (1,), (s.shape, images.shape)
            assert np.array_equal(s[..., 0], images), f"{split}: sample bytes differ"
            assert np.array_equal(l, labels.astype(np.int32)), f"{split}: labels differ"
            print(f"{split}: {len(l)} samples and labels identical to the IDX files")
        mean = float(f["train"].attrs["mean"][0])
        std = float(f["train"].attrs["std"][0])
        ref = idx(f"{idx_dir}/train-images-idx3-ubyte.gz").astype(np.float64)
        assert abs(mean - ref.mean()) < 1e-3 and abs(std - ref.std()) < 1e-3, (mean, std, ref.mean(), ref.std())
        print(f"train mean/std {mean:.4f}/{std:.4f} match")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
