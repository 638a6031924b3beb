#!/usr/bin/python3
# Runs a scaletrain command with ONEDNN_VERBOSE=1 and checks which kernels oneDNN executed.
#   --expect native:   the CPU has AVX512-BF16 (else the test is skipped, exit 77); every
#                      convolution, pooling and inner product (inner_product, or the bf16 matmul of
#                      the fast path) ran with bf16 data on an avx512_core_bf16 kernel.
#   --expect emulated: run under ONEDNN_MAX_CPU_ISA=AVX512_CORE (set here); the start-up output and
#                      run.json say bf16 is emulated, and the convolutions ran f32 kernels.
# usage: check_precision_kernels.py --expect native|emulated --run-dir DIR --primitives a,b,.. -- CMD...
import argparse
import collections
import json
import os
import subprocess
import sys


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def executed(stdout):
    """(primitive, implementation, source data type) -> count, from onednn_verbose exec lines."""
    seen = collections.Counter()
    for line in stdout.splitlines():
        f = line.split(",")
        if len(f) < 7 or f[0] != "onednn_verbose" or f[1] != "exec":
            continue
        prim, impl, descs = f[3], f[4], f[6].split()
        src = next((d.split(":")[0][4:] for d in descs if d.startswith("src_")), "?")
        seen[(prim.replace("pooling_v2", "pooling"), impl, src)] += 1
    return seen


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--expect", choices=["native", "emulated"], required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--primitives", required=True, help="comma-separated: convolution,pooling,matmul,inner_product")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    flags = cpu_flags()
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    if a.expect == "native" and "avx512_bf16" not in flags:
        print("skipped: this CPU has no AVX512-BF16, so oneDNN has no native bf16 kernels here")
        return 77
    if a.expect == "emulated":
        if "avx512f" not in flags:
            print("skipped: ONEDNN_MAX_CPU_ISA=AVX512_CORE needs an AVX-512 CPU")
            return 77
        env["ONEDNN_MAX_CPU_ISA"] = "AVX512_CORE"
    out = subprocess.run(cmd + ["--run.dir", a.run_dir], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout[-4000:], out.stderr[-4000:])
        print(f"FAIL: the run exited with {out.returncode}")
        return 1
    seen = executed(out.stdout)
    print(f"{'primitive':14s} {'implementation':32s} {'src':5s} {'calls':>5s}")
    for (prim, impl, src), n in sorted(seen.items()):
        print(f"{prim:14s} {impl:32s} {src:5s} {n:5d}")
    errors = []
    wanted = a.primitives.split(",")
    for prim in wanted:
        rows = [(impl, src) for (pr, impl, src) in seen if pr == prim]
        if not rows:
            errors.append(f"no {prim} was executed")
            continue
        if a.expect == "native":
            bad = [r for r in rows if r[1] != "bf16" or "avx512_core_bf16" not in r[0]]
            if bad:
                errors.append(f"{prim} ran without a bf16 kernel: {bad}")
        else:
            bad = [r for r in rows if r[1] != "f32"]
            if bad:
                errors.append(f"{prim} ran on {bad} although bf16 is emulated (f32 compute)")
    with open(os.path.join(a.run_dir, "run.json")) as f:
        precision = json.load(f)["precision"]
    print("run.json precision:", precision)
    emulated = a.expect == "emulated"
    if precision.get("emulated") != emulated or ("emulated" in precision.get("compute", "")) != emulated:
        errors.append(f"run.json says {precision}, expected emulated = {emulated}")
    if emulated and "bf16 emulated" not in out.stdout:
        errors.append("the start-up output does not say that bf16 is emulated")
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("OK:", "bf16 kernels ran" if a.expect == "native" else "bf16 emulated, said so, f32 kernels ran")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
