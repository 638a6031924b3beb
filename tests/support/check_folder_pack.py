#!/usr/bin/python3
# Checks st-pack-folder's output independently, with h5py and PIL (not the C++ decoders):
#   check_folder_pack.py pack <h5> <folder> <H> <W> <C> [--val-fraction F]
#       format attributes, class names (sorted subfolders), sample shape and dtype, sample counts
#       per split and class, labels, train mean/std, and every sample's pixels against PIL's decoding
#       (+ its antialiased bilinear resize) of its file: exact where neither a resize nor a color
#       conversion is involved, within rounding (mean < 0.5, max 2 levels) elsewhere. Without --val-fraction the train split is in file order.
#   check_folder_pack.py same <a.h5> <b.h5>
#       two packings hold identical attributes, samples and labels (1 rank vs 2 ranks).
#   check_folder_pack.py skip <h5> <folder> <H> <W> <C> <bad-list> -- <command...>
#       runs the command (an --on-error skip packing): exit 0, every bad file reported once on
#       stderr with its path and a reason, the final count, then the `pack` checks without them.
import os
import subprocess
import sys

import h5py
import numpy as np
from PIL import Image

IMAGE_EXT = (".jpg", ".jpeg", ".png")


def listing(folder, exclude=()):
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)) and not d.startswith("."))
    files = []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(folder, c))):
            path = os.path.join(folder, c, name)
            if name.startswith(".") or not name.lower().endswith(IMAGE_EXT) or os.path.isdir(path):
                continue
            if os.path.abspath(path) in exclude:
                continue
            files.append((path, label))
    return classes, files


def reference(path, h, w, c):
    """PIL's decoding of one file to [h, w, c] uint8 and whether it should match exactly."""
    im = Image.open(path)
    im.load()
    # Lossless, or the same libjpeg decoding as PIL's: exact unless a conversion or resize follows.
    exact = im.format == "PNG" or (im.format == "JPEG" and im.mode in ("RGB", "L"))
    if im.mode.startswith("I"):  # 16-bit gray: scale to 8 bits as libpng's png_set_scale_16 does
        a = np.asarray(im).astype(np.float64)
        im = Image.fromarray(np.round(a / 257.0).astype(np.uint8), "L")
    if im.mode == "CMYK":  # PIL has already undone Adobe's inversion; multiply out like st-pack-folder
        a = np.asarray(im).astype(np.int64)
        im = Image.fromarray(((255 - a[..., :3]) * (255 - a[..., 3:]) // 255).astype(np.uint8), "RGB")
    src_mode = im.mode
    im = im.convert("L" if c == 1 else "RGB")
    if c == 1 and src_mode not in ("L", "1", "LA", "I"):
        exact = False  # color -> gray: rounding (and JPEG's Y) differ by one here and there
    if im.size != (w, h):
        im = im.resize((w, h), Image.BILINEAR)
        exact = False
    return np.asarray(im).reshape(h, w, c), exact


def check_pack(h5_path, folder, h, w, c, val_fraction=None, exclude=()):
    classes, files = listing(folder, exclude)
    with h5py.File(h5_path, "r") as f:
        assert f.attrs["format"] == "scaletrain-dataset", f.attrs["format"]
        assert int(f.attrs["version"]) == 1
        names = [x.decode() if isinstance(x, bytes) else str(x) for x in f.attrs["classes"]]
        assert names == classes, (names, classes)
        assert list(f.attrs["sample_shape"]) == [h, w, c], list(f.attrs["sample_shape"])
        splits = {s: (f[s]["samples"][...], f[s]["labels"][...]) for s in ("train", "val") if s in f}
        mean, std = np.asarray(f["train"].attrs["mean"]), np.asarray(f["train"].attrs["std"])
    for s, (x, y) in splits.items():
        assert x.dtype == np.uint8 and y.dtype == np.int32, (s, x.dtype, y.dtype)
        assert x.shape == (len(y), h, w, c), (s, x.shape)
        assert np.all(np.diff(y) >= 0), f"{s}: labels not in class order: {y}"
    refs = [reference(p, h, w, c) for p, _ in files]
    per_class = np.bincount([lab for _, lab in files], minlength=len(classes))
    if not val_fraction:
        assert set(splits) == {"train"}, set(splits)
        x, y = splits["train"]
        assert list(y) == [lab for _, lab in files], (list(y), [lab for _, lab in files])
        order = list(range(len(files)))
    else:
        expected_val = [int(np.floor(n * val_fraction + 0.5)) for n in per_class]
        got_val = np.bincount(splits["val"][1], minlength=len(classes)) if "val" in splits else np.zeros(len(classes))
        assert list(got_val) == expected_val, (list(got_val), expected_val)
        x = np.concatenate([splits[s][0] for s in ("train", "val") if s in splits])
        y = np.concatenate([splits[s][1] for s in ("train", "val") if s in splits])
        # Match every stored sample to its file: the closest reference image; a partition of the files.
        order = [int(np.argmin([np.abs(xi.astype(int) - r.astype(int)).mean() for r, _ in refs])) for xi in x]
        assert sorted(order) == list(range(len(files))), f"samples do not map one-to-one onto files: {order}"
        assert [files[i][1] for i in order] == list(y), "a sample's label is not its file's class"
    assert len(y) == len(files) and list(np.bincount(y, minlength=len(classes))) == list(per_class)
    worst = 0.0
    for xi, i in zip(x, order):
        ref, exact = refs[i]
        diff = np.abs(xi.astype(int) - ref.astype(int))
        if exact:
            assert diff.max() == 0, f"{files[i][0]}: pixels differ from PIL's decoding (max {diff.max()})"
        else:
            assert diff.mean() < 0.5 and diff.max() <= 2, f"{files[i][0]}: mean diff {diff.mean():.2f}, max {diff.max()}"
        worst = max(worst, diff.mean())
    train = splits["train"][0].reshape(-1, c).astype(np.float64)
    assert np.allclose(mean, train.mean(0), atol=1e-3) and np.allclose(std, train.std(0), atol=1e-3), (mean, std)
    counts = {s: len(v[1]) for s, v in splits.items()}
    print(f"{h5_path}: {counts} samples of [{h}, {w}, {c}], classes {classes}, labels and pixels right "
          f"(worst mean abs diff to PIL {worst:.2f})")


def check_same(a, b):
    def walk(f):
        out = {"/": dict(f.attrs)}
        f.visititems(lambda name, obj: out.__setitem__(name, (dict(obj.attrs), obj[...] if isinstance(obj, h5py.Dataset) else None)))
        return out

    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        wa, wb = walk(fa), walk(fb)
    assert wa.keys() == wb.keys(), (wa.keys(), wb.keys())
    for k in wa:
        va, vb = wa[k], wb[k]
        if k == "/":
            assert va.keys() == vb.keys() and all(np.array_equal(va[n], vb[n]) for n in va), "root attributes differ"
            continue
        assert va[0].keys() == vb[0].keys(), k
        for n in va[0]:
            assert np.array_equal(va[0][n], vb[0][n]), f"{k} attribute {n} differs"
        if va[1] is not None:
            assert np.array_equal(va[1], vb[1]), f"{k} differs"
    print(f"{a} and {b} are identical ({len(wa) - 1} objects)")


def check_skip(h5_path, folder, h, w, c, bad_list, command):
    bad = [line.strip() for line in open(bad_list) if line.strip()]
    if os.path.exists(h5_path):
        os.remove(h5_path)
    p = subprocess.run(command, capture_output=True, text=True, timeout=120)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    assert p.returncode == 0, f"exit status {p.returncode}"
    for path in bad:
        lines = [ln for ln in p.stderr.splitlines() if path in ln]
        assert len(lines) == 1, f"{path} reported {len(lines)} times"
        reason = lines[0].split(path + ": ", 1)[-1]
        assert "skipping" in lines[0] and reason.strip() and reason != lines[0], f"no reason given: {lines[0]}"
    assert f"skipped {len(bad)} bad files" in p.stderr, "no count of skipped files"
    print(f"all {len(bad)} bad files reported with a reason and skipped")
    check_pack(h5_path, folder, h, w, c, exclude={os.path.abspath(b) for b in bad})


def main(argv):
    if argv[0] == "pack":
        h5, folder, h, w, c = argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5])
        vf = float(argv[argv.index("--val-fraction") + 1]) if "--val-fraction" in argv else None
        check_pack(h5, folder, h, w, c, vf)
    elif argv[0] == "same":
        check_same(argv[1], argv[2])
    elif argv[0] == "skip":
        sep = argv.index("--")
        h5, folder, h, w, c, bad_list = argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5]), argv[6]
        check_skip(h5, folder, h, w, c, bad_list, argv[sep + 1:])
    else:
        sys.exit(f"unknown check {argv[0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
