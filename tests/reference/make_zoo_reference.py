#!/usr/bin/python3
"""Writes a zoo network's reference for tests/test_nn_zoo_parity.cpp: one training step and one evaluation.

--model (10 classes, the input size and batch of CASES, or --size/--batch):
  resnet18, resnet50, mobilenet_v2: torchvision's, 64x64x3, batch 4;
  resnet20: a twin of akamaster's CIFAR resnet20 (option-A shortcuts), 32x32x3, batch 4;
  vgg16: torchvision's with the classifier's hidden layers --width wide (64 in CI; 4096 is torchvision's),
         32x32x3 (features end at 1x1: the adaptive pooling repeats it to 7x7), batch 4;
  inception_v3: torchvision's with the auxiliary classifier, 299x299x3, batch 2 (training: loss =
         main + 0.4 auxiliary cross-entropy, the auxiliary logits stored as aux_logits);
  inception_v3_75: the same network at 75x75x3, evaluation only (too small for the auxiliary head);
  vit: torchvision's VisionTransformer of patch 8, 2 layers, 2 heads, hidden 64, MLP 128 on 32x32x3, batch 4
       (the architecture in the attributes patch_size, num_layers, num_heads, hidden_dim, mlp_dim);
  vit_tiny: patch 16, 12 layers, 3 heads, hidden 192, MLP 768 on 224x224x3, batch 2.
Dropout is off in training (dropout=0.0, as the C++ side builds with model.dropout 0). Made at test
time by the CTest fixture in tests/nn_zoo_parity.cmake (resnet50's weights are 100 MB: never
committed). The file holds, at its root:
  params/<key>, buffers/<key>   the state_dict as loaded (float32; num_batches_tracked int64)
  x (NHWC float32), labels (int32); attribute state_dict: every key, in torch's order, one a line;
  attributes size, batch, width (vgg16), train (0: evaluation only)
  logits, loss, grads/<name>    model.train() (batch statistics), the loss, every gradient
  aux_logits, main_loss         inception_v3: the auxiliary logits and the main output's cross-entropy
  buffers_after/<key>           the buffers after that one training forward (running_var takes the
                                unbiased batch variance; num_batches_tracked 3 -> 4)
  eval/logits, eval/loss        model.eval() with the buffers as loaded
The weights are made to make a wrong BatchNorm show: every convolution's output channels are scaled by
factors from 0.01 to 1 (so some channels have batch variances near 1e-4, where eps = 1e-5 matters), BN's
weight and bias are drawn away from 1 and 0, and the running statistics are the model's own on random
batches, perturbed (mean + N(0, 0.1) std, var * U(0.5, 1.5)), with num_batches_tracked 3. The reference
computes in float64 from the stored float32 values; the C++ side compares in float32.
Run with Debian's interpreter: /usr/bin/python3 tests/reference/make_zoo_reference.py --model resnet18 --out F
"""
import argparse
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

SEED = 40
CLASSES = 10
AUX_WEIGHT = 0.4
# model: (input size, batch, trains)
CASES = {"resnet20": (32, 4, True), "resnet18": (64, 4, True), "resnet50": (64, 4, True),
         "mobilenet_v2": (64, 4, True), "vgg16": (32, 4, True), "inception_v3": (299, 2, True),
         "inception_v3_75": (75, 2, False), "vit": (32, 4, True), "vit_tiny": (224, 2, True)}
# The ViTs' architectures: patch_size, num_layers, num_heads, hidden_dim, mlp_dim.
VIT = {"vit": (8, 2, 2, 64, 128), "vit_tiny": (16, 12, 3, 192, 768)}


class ShortcutA(nn.Module):
    """akamaster's option A: subsample by 2, zero-pad the channels (planes // 4 on each side)."""

    def __init__(self, planes):
        super().__init__()
        self.planes = planes

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.planes // 4, self.planes // 4), "constant", 0)


class CifarBasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = ShortcutA(planes) if stride != 1 or in_planes != planes else nn.Sequential()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """akamaster/pytorch_resnet_cifar10's ResNet: 3x3 stem of 16, three stages of BasicBlocks, linear."""

    def __init__(self, num_blocks, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        planes_in = 16
        for i, (planes, stride) in enumerate(((16, 1), (32, 2), (64, 2))):
            blocks = []
            for s in [stride] + [1] * (num_blocks - 1):
                blocks.append(CifarBasicBlock(planes_in, planes, s))
                planes_in = planes
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.linear = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.avg_pool2d(out, out.size()[3])
        return self.linear(out.view(out.size(0), -1))


def make_model(name, width, size):
    if name in VIT:
        patch, layers, heads, hidden, mlp = VIT[name]
        return torchvision.models.VisionTransformer(size, patch, layers, heads, hidden, mlp, dropout=0.0,
                                                    attention_dropout=0.0, num_classes=CLASSES)
    if name == "resnet20":
        return CifarResNet(3, CLASSES)
    if name.startswith("resnet"):
        return getattr(torchvision.models, name)(num_classes=CLASSES)
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(num_classes=CLASSES, dropout=0.0)
    if name == "vgg16":
        m = torchvision.models.vgg16(num_classes=CLASSES, dropout=0.0)
        m.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, width), nn.ReLU(True), nn.Dropout(0.0),
                                     nn.Linear(width, width), nn.ReLU(True), nn.Dropout(0.0),
                                     nn.Linear(width, CLASSES))
        return m
    assert name.startswith("inception_v3"), name
    return torchvision.models.inception_v3(num_classes=CLASSES, aux_logits=True, init_weights=True, dropout=0.0)


def main_output(out):
    """The logits of a forward: Inception-v3 in training gives (logits, aux_logits)."""
    return out[0] if isinstance(out, tuple) else out


def make_vit_nontrivial(model, gen):
    """torchvision zeroes the head and the class token (every gradient but the head's would vanish) and
    starts LayerNorms at 1 and 0: all of them are drawn instead, with every bias."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 1:  # LayerNorm
                p.copy_(0.5 + torch.rand(p.shape, generator=gen))
            elif name.endswith("bias") or name.endswith("in_proj_bias") or name == "class_token":
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name == "heads.head.weight":
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def make_nontrivial(model, size, gen):
    """Channel scales, BN affine parameters and running statistics as described in the docstring."""
    if isinstance(model, torchvision.models.VisionTransformer):
        make_vit_nontrivial(model, gen)
        return
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                scale = 10.0 ** (-2.0 * torch.rand(m.out_channels, generator=gen))
                m.weight.mul_(scale.view(-1, 1, 1, 1))
        for bn in bns:
            bn.weight.copy_(0.5 + torch.rand(bn.num_features, generator=gen))
            bn.bias.copy_(0.1 * torch.randn(bn.num_features, generator=gen))
        # The model's own statistics (cumulative average over 3 random batches of 8), then perturbed.
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None
        model.train()
        # Inception-v3's auxiliary head cannot run below 299x299: its statistics stay the initial ones there.
        aux = getattr(model, "AuxLogits", None)
        if aux is not None and size < 299:
            model.AuxLogits = None
        for _ in range(3):
            model(torch.randn(8, 3, size, size, generator=gen))
        if aux is not None:
            model.AuxLogits = aux
        for bn in bns:
            bn.momentum = 0.1
            std = bn.running_var.sqrt()
            bn.running_mean.add_(0.1 * std * torch.randn(bn.num_features, generator=gen))
            bn.running_var.mul_(0.5 + torch.rand(bn.num_features, generator=gen))
            bn.num_batches_tracked.fill_(3)


def double_twin(name, width, size, state):
    """A float64 copy of the model holding exactly the float32 values of `state`."""
    m = make_model(name, width, size).double()
    m.load_state_dict({k: v.double() if v.is_floating_point() else v.clone() for k, v in state.items()})
    return m


def store(group, key, t):
    group.create_dataset(key, data=t.detach().numpy().astype(np.int64 if t.dtype == torch.int64 else np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=sorted(CASES))
    parser.add_argument("--out", required=True, help="the HDF5 file to write")
    parser.add_argument("--size", type=int, help="the input's height and width (default: the model's case)")
    parser.add_argument("--batch", type=int, help="the batch (default: the model's case)")
    parser.add_argument("--width", type=int, default=64, help="vgg16: the classifier's hidden width")
    args = parser.parse_args()
    size, batch, trains = CASES[args.model]
    size, batch = args.size or size, args.batch or batch
    name, width = args.model, args.width

    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = make_model(name, width, size)
    make_nontrivial(model, size, gen)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}  # float32 as loaded
    param_keys = [k for k, _ in model.named_parameters()]
    buffer_keys = [k for k, _ in model.named_buffers()]
    rng = np.random.default_rng(SEED)
    x_nhwc = rng.standard_normal((batch, size, size, 3)).astype(np.float32)
    labels = rng.integers(0, CLASSES, batch).astype(np.int32)
    x = torch.tensor(x_nhwc, dtype=torch.float64).permute(0, 3, 1, 2)
    y = torch.tensor(labels, dtype=torch.long)

    if trains:
        train = double_twin(name, width, size, state).train()
        out = train(x)
        logits = main_output(out)
        main_loss = F.cross_entropy(logits, y)
        loss = main_loss + AUX_WEIGHT * F.cross_entropy(out[1], y) if isinstance(out, tuple) else main_loss
        loss.backward()
    evaluate = double_twin(name, width, size, state).eval()
    with torch.no_grad():
        eval_logits = evaluate(x)
        eval_loss = F.cross_entropy(eval_logits, y)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with h5py.File(args.out, "w") as f:
        f.attrs["model"] = name
        f.attrs["state_dict"] = "\n".join(state)
        f.attrs["size"], f.attrs["batch"], f.attrs["width"], f.attrs["train"] = size, batch, width, int(trains)
        if name in VIT:
            for key, v in zip(("patch_size", "num_layers", "num_heads", "hidden_dim", "mlp_dim"), VIT[name]):
                f.attrs[key] = v
        f.create_dataset("x", data=x_nhwc)
        f.create_dataset("labels", data=labels)
        for k in param_keys:
            store(f, "params/" + k, state[k])
        for k in buffer_keys:
            store(f, "buffers/" + k, state[k])
        if trains:
            store(f, "logits", logits)
            f["loss"] = float(loss)
            if isinstance(out, tuple):
                store(f, "aux_logits", out[1])
                f["main_loss"] = float(main_loss)
            for k, p in train.named_parameters():
                store(f, "grads/" + k, p.grad)
            for k, b in train.named_buffers():
                store(f, "buffers_after/" + k, b)
        store(f, "eval/logits", eval_logits)
        f["eval/loss"] = float(eval_loss)
    print("wrote %s: %s at %dx%d, batch %d, %d parameters in %d tensors, %d buffers, train loss %s, eval loss %.6f"
          % (args.out, name, size, size, batch, sum(state[k].numel() for k in param_keys), len(param_keys),
             len(buffer_keys), "%.6f" % float(loss) if trains else "-", float(eval_loss)))


if __name__ == "__main__":
    main()
