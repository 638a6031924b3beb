#!/usr/bin/python3
"""Writes tests/data/layer_reference.h5: PyTorch 1.13 forward and backward of every scaletrain layer.

Each case is a group with attrs describing the layer and datasets x (NHWC or [N, F]), the
parameters in PyTorch layout, y, a fixed upstream gradient dy, and the gradients dx and
d<parameter>. The padding attr is Keras's "same" or "valid", or p in decimal ("1"): PyTorch's own
padding=p of nn.Conv2d and nn.MaxPool2d (average pooling with count_include_pad=False). The cases
with explicit padding come last, from their own seed, so that adding them left the others' data as
it was. Run with Debian's interpreter: /usr/bin/python3 tests/reference/make_layer_reference.py
"""
import math
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(1234)
torch.set_default_dtype(torch.float64)  # reference in double; the C++ side compares in float

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "layer_reference.h5")


def same_pad(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def nchw(x):
    return x.permute(0, 3, 1, 2)


def nhwc(x):
    return x.permute(0, 2, 3, 1)


def act(z, name):
    if name == "relu":
        return F.relu(z)
    if name == "relu6":
        return F.relu6(z)
    if name == "selu":
        return F.selu(z)
    return z


def conv_nhwc(x, w, b, k, stride, padding, groups):
    xc = nchw(x)
    if padding == "same":
        pt, pb = same_pad(x.shape[1], k, stride)
        pl, pr = same_pad(x.shape[2], k, stride)
        xc = F.pad(xc, (pl, pr, pt, pb))
    elif padding != "valid":
        return nhwc(F.conv2d(xc, w, b, stride=stride, padding=int(padding), groups=groups))
    return nhwc(F.conv2d(xc, w, b, stride=stride, groups=groups))


def write_case(f, name, attrs, tensors, fwd):
    """tensors: dict of leaf tensors (x and parameters) with requires_grad; fwd returns y."""
    for t in tensors.values():
        t.requires_grad_(True)
    y = fwd(**tensors)
    dy = torch.randn_like(y)
    y.backward(dy)
    g = f.create_group(name)
    for k, v in attrs.items():
        g.attrs[k] = v
    for k, t in tensors.items():
        g.create_dataset(k, data=t.detach().numpy().astype(np.float32))
        g.create_dataset("d" + k, data=t.grad.numpy().astype(np.float32))
    g.create_dataset("y", data=y.detach().numpy().astype(np.float32))
    g.create_dataset("dy", data=dy.numpy().astype(np.float32))


def write_conv_cases(f, cases):
    """Conv2D cases (name, H, W, C, filters, k, stride, padding, activation), batch 3, one group."""
    for name, h, w, c, fo, k, s, pad, a in cases:
        write_case(f, name,
                   {"type": "Conv2D", "filters": fo, "kernel": k, "stride": s, "padding": pad, "activation": a,
                    "in_shape": [h, w, c]},
                   {"x": torch.randn(3, h, w, c), "weight": torch.randn(fo, c, k, k) * 0.2,
                    "bias": torch.randn(fo) * 0.1},
                   lambda x, weight, bias, k=k, s=s, pad=pad, a=a: act(conv_nhwc(x, weight, bias, k, s, pad, 1), a))


def write_depthwise_cases(f, cases):
    """DepthwiseConv2D cases (name, H, W, C, k, stride, padding, activation), batch 2."""
    for name, h, w, c, k, s, pad, a in cases:
        write_case(f, name,
                   {"type": "DepthwiseConv2D", "kernel": k, "stride": s, "padding": pad, "activation": a,
                    "in_shape": [h, w, c]},
                   {"x": torch.randn(2, h, w, c), "weight": torch.randn(c, 1, k, k) * 0.3,
                    "bias": torch.randn(c) * 0.1},
                   lambda x, weight, bias, k=k, s=s, pad=pad, a=a, c=c: act(conv_nhwc(x, weight, bias, k, s, pad, c), a))


def write_explicit_padding_cases(f):
    """PyTorch's padding=p as torchvision's networks use it (ResNet's 7x7/2 stem with padding 3, its
    3x3/2 max pooling with padding 1, 3x3 convolutions with padding 1 at stride 1 and 2, 1x1/2
    shortcuts), on even sizes, where the last row and column of padding (or of the input, for 1x1/2)
    fall in no window, and on odd ones."""
    torch.manual_seed(4321)
    conv_cases = [
        # name, H, W, C, filters, k, stride, padding, activation
        ("conv_3x3_pad1_even", 8, 8, 3, 6, 3, 1, "1", "relu"),
        ("conv_3x3_pad1_odd", 7, 9, 4, 5, 3, 1, "1", "none"),
        ("conv_3x3_pad1_stride2_even", 8, 8, 4, 6, 3, 2, "1", "none"),
        ("conv_3x3_pad1_stride2_odd", 9, 7, 4, 5, 3, 2, "1", "relu"),
        ("conv_7x7_pad3_stride2_even", 16, 16, 3, 8, 7, 2, "3", "relu"),
        ("conv_1x1_pad0_stride2_even", 8, 8, 8, 12, 1, 2, "0", "none"),
    ]
    write_conv_cases(f, conv_cases)
    write_depthwise_cases(f, [("depthwise_3x3_pad1", 7, 6, 8, 3, 1, "1", "relu"),
                              ("depthwise_3x3_pad1_stride2_even", 8, 8, 6, 3, 2, "1", "none")])

    # 16x14 at stride 2: 8x7 outputs, enough for the cpu backend's fused separable op.
    for name, h, w, c, fo, s, a in [("separable_3x3_pad1", 6, 6, 8, 12, 1, "selu"),
                                    ("separable_3x3_pad1_stride2_even", 16, 14, 4, 6, 2, "none")]:
        def sep(x, depthwise_weight, pointwise_weight, bias, a=a, c=c, s=s):
            mid = conv_nhwc(x, depthwise_weight, None, 3, s, "1", c)
            return act(conv_nhwc(mid, pointwise_weight, bias, 1, 1, "valid", 1), a)
        write_case(f, name,
                   {"type": "SeparableConv2D", "filters": fo, "kernel": 3, "stride": s, "padding": "1",
                    "activation": a, "in_shape": [h, w, c]},
                   {"x": torch.randn(2, h, w, c), "depthwise_weight": torch.randn(c, 1, 3, 3) * 0.3,
                    "pointwise_weight": torch.randn(fo, c, 1, 1) * 0.3, "bias": torch.randn(fo) * 0.1},
                   sep)

    def pool(x, kind, k, s, pad):
        if kind == "max":
            return nhwc(F.max_pool2d(nchw(x), k, s, padding=pad))
        return nhwc(F.avg_pool2d(nchw(x), k, s, padding=pad, count_include_pad=False))

    for name, kind, h, w, c, k, s, pad in [("maxpool_3x3_s2_pad1_even", "max", 8, 8, 4, 3, 2, 1),
                                           ("maxpool_3x3_s2_pad1_odd", "max", 9, 7, 5, 3, 2, 1),
                                           ("maxpool_2x2_s2_pad1_odd", "max", 7, 7, 3, 2, 2, 1),
                                           ("avgpool_3x3_s2_pad1_even", "average", 8, 6, 3, 3, 2, 1)]:
        write_case(f, name,
                   {"type": "MaxPool2D" if kind == "max" else "AvgPool2D", "pool": k, "stride": s,
                    "padding": str(pad), "in_shape": [h, w, c]},
                   {"x": torch.randn(2, h, w, c)},
                   lambda x, kind=kind, k=k, s=s, pad=pad: pool(x, kind, k, s, pad))


def write_zoo_layer_cases(f):
    """The layers MobileNetV2, VGG16 and Inception-v3 brought: ReLU6 (alone and fused into a depthwise
    stride-2 convolution), rectangular kernels with padding=(ph, pw), average pooling counting its
    padding (F.avg_pool2d's default) and adaptive average pooling (repeating, overlapping, tiling and
    identity windows)."""
    torch.manual_seed(5678)
    write_case(f, "relu6", {"type": "ReLU6", "in_shape": [4, 4, 3]}, {"x": 4 * torch.randn(2, 4, 4, 3)},
               lambda x: F.relu6(x))
    for name, h, w, c, fo, (kh, kw), s, (ph, pw), a in [("conv_1x7_pad0x3", 9, 9, 4, 5, (1, 7), 1, (0, 3), "none"),
                                                         ("conv_7x1_pad3x0", 9, 8, 4, 5, (7, 1), 1, (3, 0), "relu"),
                                                         ("conv_3x1_pad1x0_stride2", 8, 9, 3, 4, (3, 1), 2, (1, 0), "none")]:
        write_case(f, name,
                   {"type": "Conv2D", "filters": fo, "kernel": kh, "kernel_w": kw, "stride": s,
                    "padding": "%d,%d" % (ph, pw), "activation": a, "in_shape": [h, w, c]},
                   {"x": torch.randn(3, h, w, c), "weight": torch.randn(fo, c, kh, kw) * 0.2,
                    "bias": torch.randn(fo) * 0.1},
                   lambda x, weight, bias, s=s, ph=ph, pw=pw, a=a:
                       act(nhwc(F.conv2d(nchw(x), weight, bias, stride=s, padding=(ph, pw))), a))
    write_case(f, "depthwise_3x3_pad1_stride2_relu6",
               {"type": "DepthwiseConv2D", "kernel": 3, "stride": 2, "padding": "1", "activation": "relu6",
                "in_shape": [9, 9, 8]},
               {"x": 3 * torch.randn(2, 9, 9, 8), "weight": torch.randn(8, 1, 3, 3) * 0.6, "bias": torch.randn(8)},
               lambda x, weight, bias: F.relu6(nhwc(F.conv2d(nchw(x), weight, bias, stride=2, padding=1, groups=8))))
    for name, h, w, c, k, s, pad in [("avgpool_3x3_s1_pad1_counted", 7, 6, 5, 3, 1, 1),
                                     ("avgpool_3x3_s2_pad1_counted", 8, 7, 3, 3, 2, 1)]:
        write_case(f, name,
                   {"type": "AvgPool2D", "pool": k, "stride": s, "padding": str(pad), "count_include_pad": 1,
                    "in_shape": [h, w, c]},
                   {"x": torch.randn(2, h, w, c)},
                   lambda x, k=k, s=s, pad=pad: nhwc(F.avg_pool2d(nchw(x), k, s, padding=pad, count_include_pad=True)))
    for name, h, w, c, oh, ow in [("adaptive_avgpool_1x1_to_7x7", 1, 1, 5, 7, 7),
                                  ("adaptive_avgpool_5x7_to_3x3", 5, 7, 4, 3, 3),
                                  ("adaptive_avgpool_6x6_to_3x2", 6, 6, 3, 3, 2),
                                  ("adaptive_avgpool_4x4_to_4x4", 4, 4, 3, 4, 4)]:
        write_case(f, name, {"type": "AdaptiveAvgPool2D", "out_h": oh, "out_w": ow, "in_shape": [h, w, c]},
                   {"x": torch.randn(2, h, w, c)},
                   lambda x, oh=oh, ow=ow: nhwc(F.adaptive_avg_pool2d(nchw(x), (oh, ow))))


def main():
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with h5py.File(OUT, "w") as f:
        f.attrs["generator"] = "tests/reference/make_layer_reference.py"
        f.attrs["torch_version"] = str(torch.__version__)

        for act_name in ["none", "relu", "selu"]:
            n, fin, fout = 4, 37, 19
            write_case(f, f"dense_{act_name}",
                       {"type": "Dense", "units": fout, "activation": act_name, "in_shape": [fin]},
                       {"x": torch.randn(n, fin), "weight": torch.randn(fout, fin) * 0.2, "bias": torch.randn(fout) * 0.1},
                       lambda x, weight, bias, a=act_name: act(F.linear(x, weight, bias), a))

        conv_cases = [
            # name, H, W, C, filters, k, stride, padding, activation
            ("conv_3x3_same", 8, 8, 3, 6, 3, 1, "same", "relu"),
            ("conv_5x5_valid", 9, 7, 4, 5, 5, 1, "valid", "none"),
            ("conv_3x3_stride2_same", 8, 8, 6, 10, 3, 2, "same", "selu"),
            ("conv_1x1", 5, 5, 16, 32, 1, 1, "same", "none"),
        ]
        write_conv_cases(f, conv_cases)
        write_depthwise_cases(f, [("depthwise_3x3_same", 7, 7, 8, 3, 1, "same", "relu"),
                                  ("depthwise_5x5_stride2", 10, 10, 6, 5, 2, "same", "none")])

        for name, h, w, c, fo, a in [("separable_3x3_selu", 6, 6, 8, 12, "selu"), ("separable_3x3_none", 5, 7, 3, 4, "none")]:
            def sep(x, depthwise_weight, pointwise_weight, bias, a=a, c=c):
                mid = conv_nhwc(x, depthwise_weight, None, 3, 1, "same", c)
                return act(conv_nhwc(mid, pointwise_weight, bias, 1, 1, "same", 1), a)
            write_case(f, name,
                       {"type": "SeparableConv2D", "filters": fo, "kernel": 3, "stride": 1, "padding": "same",
                        "activation": a, "in_shape": [h, w, c]},
                       {"x": torch.randn(2, h, w, c), "depthwise_weight": torch.randn(c, 1, 3, 3) * 0.3,
                        "pointwise_weight": torch.randn(fo, c, 1, 1) * 0.3, "bias": torch.randn(fo) * 0.1},
                       sep)

        def pool(x, kind, k, s, pad):
            xc = nchw(x)
            if pad == "same":
                pt, pb = same_pad(x.shape[1], k, s)
                pl, pr = same_pad(x.shape[2], k, s)
            else:
                pt = pb = pl = pr = 0
            if kind == "max":
                xc = F.pad(xc, (pl, pr, pt, pb), value=-math.inf)
                return nhwc(F.max_pool2d(xc, k, s))
            # average excluding padding: sum over the padded window / count of real cells
            ones = torch.ones_like(xc)
            num = F.avg_pool2d(F.pad(xc, (pl, pr, pt, pb)), k, s, divisor_override=1)
            den = F.avg_pool2d(F.pad(ones, (pl, pr, pt, pb)), k, s, divisor_override=1)
            return nhwc(num / den)

        for name, kind, h, w, c, k, s, pad in [("maxpool_2x2", "max", 8, 8, 5, 2, 2, "valid"),
                                               ("maxpool_3x3_s2_same", "max", 7, 7, 4, 3, 2, "same"),
                                               ("avgpool_2x2", "average", 6, 8, 3, 2, 2, "valid"),
                                               ("avgpool_3x3_s2_same", "average", 7, 7, 4, 3, 2, "same")]:
            write_case(f, name,
                       {"type": "MaxPool2D" if kind == "max" else "AvgPool2D", "pool": k, "stride": s, "padding": pad,
                        "in_shape": [h, w, c]},
                       {"x": torch.randn(2, h, w, c)},
                       lambda x, kind=kind, k=k, s=s, pad=pad: pool(x, kind, k, s, pad))

        write_case(f, "global_avg_pool", {"type": "GlobalAvgPool", "in_shape": [5, 6, 7]},
                   {"x": torch.randn(3, 5, 6, 7)}, lambda x: x.mean(dim=(1, 2)))
        write_case(f, "flatten", {"type": "Flatten", "in_shape": [3, 4, 5]},
                   {"x": torch.randn(2, 3, 4, 5)}, lambda x: x.reshape(2, -1))
        write_case(f, "relu", {"type": "ReLU", "in_shape": [4, 4, 3]}, {"x": torch.randn(2, 4, 4, 3)}, lambda x: F.relu(x))
        write_case(f, "selu", {"type": "SELU", "in_shape": [4, 4, 3]}, {"x": torch.randn(2, 4, 4, 3)}, lambda x: F.selu(x))
        # Dropout at inference is the identity (training masks are tested statistically in C++).
        write_case(f, "dropout_inference", {"type": "Dropout", "rate": 0.5, "in_shape": [10]},
                   {"x": torch.randn(4, 10)}, lambda x: x)

        # Softmax cross-entropy, mean over the batch; logits include a large value.
        logits = torch.randn(6, 10) * 3
        logits[2, 4] = 80.0
        labels = torch.tensor([0, 3, 4, 9, 1, 7])
        logits.requires_grad_(True)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        g = f.create_group("softmax_cross_entropy")
        g.attrs["type"] = "SoftmaxCrossEntropy"
        g.create_dataset("logits", data=logits.detach().numpy().astype(np.float32))
        g.create_dataset("labels", data=labels.numpy().astype(np.int32))
        g.create_dataset("loss", data=np.array([loss.item()], dtype=np.float64))
        g.create_dataset("dlogits", data=logits.grad.numpy().astype(np.float32))

        write_explicit_padding_cases(f)
        write_zoo_layer_cases(f)
    print("wrote", os.path.relpath(OUT), "torch", torch.__version__)


if __name__ == "__main__":
    sys.exit(main())
