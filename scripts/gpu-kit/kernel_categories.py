#!/usr/bin/env python3
"""Kernel-name categories, the Python twin of scaletrain's train/kernel_category.hpp (stdlib only).

Both read the same rules, kernel_categories.tsv (lines REGEX<TAB>CATEGORY; the first regex found in
a name, case-insensitively, gives its category; a name no rule matches is "other"), so the kit groups
torch.profiler's kernels and operators as scaletrain groups its own. The tsv is taken from
$KERNEL_CATEGORIES_TSV, else beside this script (where the kit packs it), else from the source tree
(../../src/train/kernel_categories.tsv).

  kernel_categories.py --check FILE...   FILEs of name<TAB>expected lines (# comments): lists each
                                          name whose category differs and exits 1 if there is one
  kernel_categories.py < NAMES           prints category<TAB>name for each line of NAMES
"""
import argparse
import os
import re
import sys

CATEGORIES = [
    "convolution forward", "convolution backward data", "convolution backward filter", "GEMM",
    "normalization", "element-wise", "reductions", "optimizer", "copies", "communication", "other",
]


def _tsv_path():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("KERNEL_CATEGORIES_TSV")
    if env:
        return env
    for path in (os.path.join(here, "kernel_categories.tsv"),
                 os.path.join(here, "..", "..", "src", "train", "kernel_categories.tsv")):
        if os.path.exists(path):
            return os.path.normpath(path)
    sys.exit("kernel_categories.py: no kernel_categories.tsv beside the script or in the source tree; "
             "set KERNEL_CATEGORIES_TSV")


def _data_lines(path):
    """(line number, line) for each line of PATH that is neither blank nor a # comment."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if line.strip() and not line.lstrip(" \t").startswith("#"):
                yield number, line


def load_rules(path):
    """[(compiled regex, category)] from a kernel_categories.tsv; exits naming the line of an error."""
    rules = []
    for number, line in _data_lines(path):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0]:
            sys.exit(f"{path}:{number}: expected REGEX<TAB>CATEGORY, got {line!r}")
        pattern, cat = parts
        if cat not in CATEGORIES:
            sys.exit(f"{path}:{number}: unknown category {cat!r}")
        try:
            rules.append((re.compile(pattern, re.IGNORECASE), cat))
        except re.error as e:
            sys.exit(f"{path}:{number}: bad regex {pattern!r}: {e}")
    return rules


_rules = None


def category(name):
    """The category of a kernel, operator or work-item name."""
    global _rules
    if _rules is None:
        _rules = load_rules(_tsv_path())
    for regex, cat in _rules:
        if regex.search(name):
            return cat
    return CATEGORIES[-1]


def check(files):
    """Prints FILE:LINE for each name whose category differs from the expected one; returns their count."""
    wrong = 0
    for path in files:
        for number, line in _data_lines(path):
            parts = line.split("\t")
            if len(parts) != 2:
                print(f"{path}:{number}: expected NAME<TAB>CATEGORY, got {line!r}")
                wrong += 1
                continue
            name, expected = parts
            got = category(name)
            if got != expected:
                print(f"{path}:{number}: {name!r} is {got!r}, expected {expected!r}")
                wrong += 1
    return wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", nargs="+", metavar="FILE", help="name<TAB>expected files to check")
    args = parser.parse_args()
    if args.check:
        wrong = check(args.check)
        if wrong:
            print(f"{wrong} name(s) categorized differently than expected")
            return 1
        return 0
    for line in sys.stdin:
        name = line.rstrip("\r\n")
        if name:
            print(f"{category(name)}\t{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
