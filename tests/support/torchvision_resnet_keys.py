#!/usr/bin/python3
"""Prints a torchvision ResNet's state_dict keys for tests/test_nn_resnet_zoo.cpp: one line per key in
torch's order, "param <key>" or "buffer <key>", then "parameters <count>" (the trainable elements).
Fails (exit 1, ImportError) without torch and torchvision: the test must not pass without them.

usage: /usr/bin/python3 torchvision_resnet_keys.py resnet18|resnet50 [classes, default 1000]
"""
import sys

import torchvision


def main():
    name = sys.argv[1]
    classes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    model = getattr(torchvision.models, name)(num_classes=classes)
    params = {k for k, _ in model.named_parameters()}
    for key in model.state_dict():
        print(("param " if key in params else "buffer ") + key)
    print("parameters", sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
