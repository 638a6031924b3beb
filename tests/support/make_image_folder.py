#!/usr/bin/python3
# Writes the image folders the st-pack-folder tests pack (with PIL):
#   <out>/good/{ant,bee,cat}/...  real JPEG and PNG files of different sizes and kinds: RGB and gray
#                                 JPEG, CMYK JPEG, RGB, RGBA, palette, gray, 16-bit gray PNG, an
#                                 upper-case .JPEG, plus files st-pack-folder must ignore (notes.txt,
#                                 .hidden.jpg). Class folders are created out of order (sorted: ant,
#                                 bee, cat).
#   <out>/bad/{ant,bee}/...       good images plus the bad files listed in <out>/bad_files.txt:
#                                 a truncated JPEG, a zero-byte .jpg, a text file named .png, a PNG
#                                 cut short, and a dangling symlink named .jpg (unreadable, even as root).
#   <out>/empty/                  no class subfolders;  <out>/noimages/x/  a class without images.
# usage: make_image_folder.py <out>
import os
import shutil
import sys

import numpy as np
from PIL import Image


def pattern(h, w, seed):
    """A smooth colour pattern (JPEG-friendly) with some texture; deterministic."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 127 + 100 * np.sin(x / (3 + seed % 5) + seed)
    g = 127 + 100 * np.cos(y / (4 + seed % 3))
    b = (x * 255 / max(w - 1, 1) + y * 255 / max(h - 1, 1)) / 2
    img = np.stack([r, g, b], axis=-1) + rng.normal(0, 4, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def write(path, img, **kw):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path, **kw)


def make_good(root):
    # (class, file name, height, width, kind)
    files = [
        ("cat", "c01.jpg", 40, 30, "rgb_jpeg"),
        ("cat", "c02.png", 24, 32, "rgb_png"),       # already the target size: decoded pixels exact
        ("cat", "c03.png", 50, 70, "rgba_png"),
        ("cat", "c04.JPEG", 24, 32, "gray_jpeg"),
        ("ant", "a01.png", 17, 23, "palette_png"),
        ("ant", "a02.jpg", 64, 48, "rgb_jpeg"),
        ("ant", "a03.png", 33, 41, "gray16_png"),
        ("ant", "a04.jpeg", 24, 32, "rgb_jpeg"),
        ("bee", "b01.png", 24, 32, "gray_png"),
        ("bee", "b02.jpg", 31, 29, "cmyk_jpeg"),
        ("bee", "b03.png", 96, 128, "rgb_png"),
    ]
    for i, (cls, name, h, w, kind) in enumerate(files):
        rgb = pattern(h, w, i + 1)
        path = os.path.join(root, cls, name)
        if kind == "rgb_jpeg":
            write(path, Image.fromarray(rgb), format="JPEG", quality=90)
        elif kind == "gray_jpeg":
            write(path, Image.fromarray(rgb).convert("L"), format="JPEG", quality=90)
        elif kind == "cmyk_jpeg":
            write(path, Image.fromarray(rgb).convert("CMYK"), format="JPEG", quality=95)
        elif kind == "rgb_png":
            write(path, Image.fromarray(rgb), format="PNG")
        elif kind == "rgba_png":
            alpha = np.full((h, w, 1), 128, np.uint8)
            write(path, Image.fromarray(np.concatenate([rgb, alpha], axis=-1), "RGBA"), format="PNG")
        elif kind == "palette_png":
            write(path, Image.fromarray(rgb).convert("P", palette=Image.ADAPTIVE, colors=16), format="PNG")
        elif kind == "gray_png":
            write(path, Image.fromarray(rgb).convert("L"), format="PNG")
        elif kind == "gray16_png":
            g16 = (np.asarray(Image.fromarray(rgb).convert("L"), np.uint16) * 257).astype(np.uint16)
            write(path, Image.fromarray(g16, "I;16"), format="PNG")
    with open(os.path.join(root, "cat", "notes.txt"), "w") as f:
        f.write("not an image, and not named like one: ignored\n")
    shutil.copy(os.path.join(root, "cat", "c01.jpg"), os.path.join(root, "cat", ".hidden.jpg"))


def make_bad(root, good):
    os.makedirs(os.path.join(root, "ant"))
    os.makedirs(os.path.join(root, "bee"))
    shutil.copy(os.path.join(good, "ant", "a01.png"), os.path.join(root, "ant", "a01.png"))
    shutil.copy(os.path.join(good, "ant", "a02.jpg"), os.path.join(root, "ant", "a02.jpg"))
    shutil.copy(os.path.join(good, "bee", "b03.png"), os.path.join(root, "bee", "b03.png"))
    jpeg = open(os.path.join(good, "ant", "a02.jpg"), "rb").read()
    png = open(os.path.join(good, "bee", "b03.png"), "rb").read()
    bad = {
        os.path.join(root, "ant", "a00_truncated.jpg"): jpeg[: len(jpeg) // 2],
        os.path.join(root, "ant", "a05_empty.jpg"): b"",
        os.path.join(root, "bee", "b01_text.png"): b"this is a text file, not a PNG\n",
        os.path.join(root, "bee", "b02_cut.png"): png[: len(png) * 2 // 3],
    }
    for path, data in bad.items():
        with open(path, "wb") as f:
            f.write(data)
    dangling = os.path.join(root, "bee", "b04_dangling.jpg")
    os.symlink(os.path.join(root, "no-such-file.jpg"), dangling)
    return sorted(list(bad) + [dangling])


def main(out):
    if os.path.exists(out):
        shutil.rmtree(out)
    good, bad = os.path.join(out, "good"), os.path.join(out, "bad")
    make_good(good)
    bad_files = make_bad(bad, good)
    with open(os.path.join(out, "bad_files.txt"), "w") as f:
        f.write("\n".join(bad_files) + "\n")
    os.makedirs(os.path.join(out, "empty"))
    os.makedirs(os.path.join(out, "noimages", "x"))
    with open(os.path.join(out, "noimages", "x", "readme.txt"), "w") as f:
        f.write("no images here\n")
    print(f"wrote {good} (11 images, 3 classes), {bad} (3 good + {len(bad_files)} bad files)")


if __name__ == "__main__":
    main(sys.argv[1])
