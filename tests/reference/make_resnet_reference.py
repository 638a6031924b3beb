#!/usr/bin/python3
"""Writes a ResNet reference for tests/test_nn_resnet_parity.cpp: one training step and one evaluation.

--model resnet18 | resnet50: torchvision.models.resnetXX(num_classes=10) on 64x64x3 images;
--model resnet20: a twin of akamaster's CIFAR resnet20 (option-A shortcuts) on 32x32x3 images. Batch 4.
Made at test time by the CTest fixture in tests/nn_resnet.cmake (resnet50's weights are 100 MB: never
committed). The file holds, at its root:
  params/<key>, buffers/<key>   the state_dict as loaded (float32; num_batches_tracked int64)
  x (NHWC float32), labels (int32); attribute state_dict: every key, in torch's order, one a line
  logits, loss, grads/<name>    model.train() (batch statistics), mean cross-entropy, every gradient
  buffers_after/<key>           the buffers after that one training forward (running_var takes the
                                unbiased batch variance; num_batches_tracked 3 -> 4)
  eval/logits, eval/loss        model.eval() with the buffers as loaded
The weights are made to make a wrong BatchNorm show: every convolution's output channels are scaled by
factors from 0.01 to 1 (so some channels have batch variances near 1e-4, where eps = 1e-5 matters), BN's
weight and bias are drawn away from 1 and 0, and the running statistics are the model's own on random
batches, perturbed (mean + N(0, 0.1) std, var * U(0.5, 1.5)), with num_batches_tracked 3. The reference
computes in float64 from the stored float32 values; the C++ side compares in float32.
Run with Debian's interpreter: /usr/bin/python3 tests/reference/make_resnet_reference.py --model resnet18 --out F
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
BATCH, CLASSES = 4, 10
SIZE = {"resnet18": 64, "resnet50": 64, "resnet20": 32}


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


def make_model(name):
    if name == "resnet20":
        return CifarResNet(3, CLASSES)
    return getattr(torchvision.models, name)(num_classes=CLASSES)


def make_nontrivial(model, size, gen):
    """Channel scales, BN affine parameters and running statistics as described in the docstring."""
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
        for _ in range(3):
            model(torch.randn(8, 3, size, size, generator=gen))
        for bn in bns:
            bn.momentum = 0.1
            std = bn.running_var.sqrt()
            bn.running_mean.add_(0.1 * std * torch.randn(bn.num_features, generator=gen))
            bn.running_var.mul_(0.5 + torch.rand(bn.num_features, generator=gen))
            bn.num_batches_tracked.fill_(3)


def double_twin(name, state):
    """A float64 copy of the model holding exactly the float32 values of `state`."""
    m = make_model(name).double()
    m.load_state_dict({k: v.double() if v.is_floating_point() else v.clone() for k, v in state.items()})
    return m


def store(group, key, t):
    group.create_dataset(key, data=t.detach().numpy().astype(np.int64 if t.dtype == torch.int64 else np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=sorted(SIZE))
    parser.add_argument("--out", required=True, help="the HDF5 file to write")
    args = parser.parse_args()
    name, size = args.model, SIZE[args.model]

    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = make_model(name)
    make_nontrivial(model, size, gen)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}  # float32 as loaded
    param_keys = [k for k, _ in model.named_parameters()]
    buffer_keys = [k for k, _ in model.named_buffers()]
    rng = np.random.default_rng(SEED)
    x_nhwc = rng.standard_normal((BATCH, size, size, 3)).astype(np.float32)
    labels = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    x = torch.tensor(x_nhwc, dtype=torch.float64).permute(0, 3, 1, 2)
    y = torch.tensor(labels, dtype=torch.long)

    train = double_twin(name, state).train()
    logits = train(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    evaluate = double_twin(name, state).eval()
    with torch.no_grad():
        eval_logits = evaluate(x)
        eval_loss = F.cross_entropy(eval_logits, y)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with h5py.File(args.out, "w") as f:
        f.attrs["model"] = name
        f.attrs["state_dict"] = "\n".join(state)
        f.create_dataset("x", data=x_nhwc)
        f.create_dataset("labels", data=labels)
        for k in param_keys:
            store(f, "params/" + k, state[k])
        for k in buffer_keys:
            store(f, "buffers/" + k, state[k])
        store(f, "logits", logits)
        f["loss"] = float(loss)
        for k, p in train.named_parameters():
            store(f, "grads/" + k, p.grad)
        for k, b in train.named_buffers():
            store(f, "buffers_after/" + k, b)
        store(f, "eval/logits", eval_logits)
        f["eval/loss"] = float(eval_loss)
    print("wrote %s: %s, %d parameters in %d tensors, %d buffers, train loss %.6f, eval loss %.6f"
          % (args.out, name, sum(state[k].numel() for k in param_keys), len(param_keys), len(buffer_keys),
             float(loss), float(eval_loss)))


if __name__ == "__main__":
    main()
