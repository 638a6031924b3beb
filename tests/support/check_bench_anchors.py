#!/usr/bin/env python3
"""The CPU benchmarks' PyTorch anchors without the PyTorch 2 environment.

perf/anchor-env.sh: --status of a missing environment reads ready false; a directory inside the source
tree is refused (exit 2); an index that does not answer is named and nothing is made (exit 1).
perf/pytorch_anchor.py under Debian's PyTorch 1.13 refuses --modes compile with a message naming the
version. perf/bench_train_step.py with --anchor-env pointing at no environment says so on stdout and
stderr, runs against Debian's PyTorch alone (mlp, fp32, one repeat, a few steps), and its JSON rows
hold scaletrain's and PyTorch 1.13's figures and the ratio.

usage: check_bench_anchors.py --root SRC --build BUILD --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    sys.exit(f"check_bench_anchors: {msg}")


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def check_anchor_env(root, outside):
    """outside: a directory outside the source tree, where the environment would be made."""
    script = os.path.join(root, "perf/anchor-env.sh")
    missing = os.path.join(outside, "no-anchor-env")
    status = json.loads(run([script, "--status", "--dir", missing]).stdout)
    if status["ready"] or status["dir"] != missing:
        fail(f"--status of a missing environment: {status}")
    inside = run([script, "--dir", os.path.join(root, "build/anchor")])
    if inside.returncode != 2 or "inside the source tree" not in inside.stderr:
        fail(f"a directory inside the source tree: exit {inside.returncode}, {inside.stderr!r}")
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/simple")
    offline = run([script, "--dir", missing], env=env)
    if offline.returncode != 1 or "cannot be reached" not in offline.stderr or os.path.exists(missing + ".part"):
        fail(f"an index that does not answer: exit {offline.returncode}, {offline.stderr!r}")
    return missing


def check_compile_refused(root):
    out = run(["/usr/bin/python3", os.path.join(root, "perf/pytorch_anchor.py"), "--models", "mlp", "--modes", "compile"])
    if out.returncode == 0 or "torch.compile needs PyTorch 2" not in out.stderr:
        fail(f"pytorch_anchor.py --modes compile under PyTorch 1.13: exit {out.returncode}, {out.stderr!r}")


def check_bench(root, build, work, missing):
    result = os.path.join(work, "bench.json")
    out = run(["/usr/bin/python3", os.path.join(root, "perf/bench_train_step.py"), "--build", build,
               "--anchor-env", missing, "--models", "mlp", "--precisions", "fp32", "--repeats", "1",
               "--steps-scale", "0.1", "--seconds", "0.3", "--json", result])
    if out.returncode != 0:
        fail(f"bench_train_step.py exit {out.returncode}:\n{out.stdout}\n{out.stderr}")
    note = "PyTorch 2 anchor missing"
    if note not in out.stdout or note not in out.stderr or missing not in out.stdout:
        fail(f"bench_train_step.py does not say that the PyTorch 2 environment is missing:\n{out.stdout}\n{out.stderr}")
    with open(result) as f:
        figures = json.load(f)
    if [a["name"] for a in figures["anchors"]] != ["debian"] or not figures["missing_anchors"]:
        fail(f"anchors in the JSON: {figures['anchors']}, missing {figures['missing_anchors']}")
    for row in figures["rows"]:
        torch113 = row["pytorch"].get("1.13 eager", {}).get("images_per_s")
        if not (row["scaletrain_images_per_s"] > 0 and torch113 and torch113 > 0 and row["ratio_vs_pytorch_best"] > 0):
            fail(f"row without its figures: {row}")
        if not row["pytorch_best"]["config"].startswith("1.13 eager"):
            fail(f"the best PyTorch is named {row['pytorch_best']['config']!r}")
    print(out.stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    with tempfile.TemporaryDirectory(prefix="st-anchor-test-") as outside:
        missing = check_anchor_env(a.root, outside)
        check_compile_refused(a.root)
        check_bench(a.root, a.build, a.work, missing)
    print("check_bench_anchors: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
