#!/usr/bin/python3
"""Writes tests/data/graph_reference.h5: PyTorch 1.13 twins of the zoo's graph models.

One group per model (resmlp, branchnet) with x (NHWC, float32), labels (int32), params/<name>
(the twin's state_dict: its names and layouts, float32, drawn by torch's default initialization
from a fixed seed), logits, loss (mean cross-entropy) and grads/<name>. The twins compute in
float64 from the stored float32 values; the C++ side compares in float32.
Run with Debian's interpreter: /usr/bin/python3 tests/reference/make_graph_reference.py
"""
import os

import h5py
import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "graph_reference.h5")
BATCH, CLASSES = 6, 10


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(x + self.fc2(torch.relu(self.fc1(x))))


class ResMLP(nn.Module):
    def __init__(self, inputs, classes, width=64):
        super().__init__()
        self.stem = nn.Linear(inputs, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(2)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = torch.relu(self.stem(torch.flatten(x, 1)))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class BranchNet(nn.Module):
    def __init__(self, channels, size, classes):
        super().__init__()
        self.stem = nn.Conv2d(channels, 16, 3, padding=1)
        self.branch_a = nn.Conv2d(16, 8, 1)
        self.branch_b = nn.Conv2d(16, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32 * (size // 4) ** 2, classes)

    def forward(self, x):
        s = torch.relu(self.stem(x))
        cat = torch.cat([torch.relu(self.branch_a(s)), torch.relu(self.branch_b(s))], dim=1)
        x = nn.functional.max_pool2d(s + cat, 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(torch.flatten(x, 1))


def write_case(f, name, model, x_nhwc, labels):
    g = f.create_group(name)
    g.create_dataset("x", data=x_nhwc.astype(np.float32))
    g.create_dataset("labels", data=labels.astype(np.int32))
    for k, v in model.state_dict().items():
        g.create_dataset("params/" + k, data=v.numpy().astype(np.float32))
    model = model.double()
    with torch.no_grad():  # compute from the stored float32 values
        for p in model.parameters():
            p.copy_(p.float().double())
    x = torch.tensor(x_nhwc.astype(np.float32), dtype=torch.float64).permute(0, 3, 1, 2)
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, torch.tensor(labels, dtype=torch.long))
    loss.backward()
    g.create_dataset("logits", data=logits.detach().numpy().astype(np.float32))
    g["loss"] = float(loss)
    for k, p in model.named_parameters():
        g.create_dataset("grads/" + k, data=p.grad.numpy().astype(np.float32))


def main():
    torch.manual_seed(39)
    rng = np.random.default_rng(39)
    with h5py.File(OUT, "w") as f:
        x = rng.standard_normal((BATCH, 28, 28, 1))
        labels = rng.integers(0, CLASSES, BATCH)
        write_case(f, "resmlp", ResMLP(28 * 28, CLASSES), x, labels)
        write_case(f, "branchnet", BranchNet(1, 28, CLASSES), x, labels)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
