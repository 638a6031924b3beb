#!/usr/bin/python3
# Runs a scaletrain command with ONEDNN_VERBOSE=1 and checks which kernels oneDNN executed.
#   --expect native:   the CPU has AVX512-BF16 (else the test is skipped, exit 77); every
#                      convolution, pooling and inner product (inner_product, or the bf16 matmul of
#                      the fast path) ran with bf16 data on a kernel of a bf16 ISA: AVX512-BF16
#                      (avx512_core_bf16) or AMX (avx512_core_amx_bf16, ...), per bf16_kernel().
#   --expect emulated: run under ONEDNN_MAX_CPU_ISA=AVX512_CORE (set here); the start-up output and
#                      run.json say bf16 is emulated, and the convolutions ran f32 kernels.
# usage: check_precision_kernels.py --expect native|emulated --run-dir DIR --primitives a,b,.. -- CMD...
#        check_precision_kernels.py --self-test   (the recorded verbose lines of both CPU kinds)
import argparse
import collections
import json
import os
import re
import shutil
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


# An implementation name's ISA: "brgconv:avx512_core_amx_bf16" -> "avx512_core_amx_bf16".
# bf16 instructions: AVX512-BF16 (an ISA named ..._bf16) or AMX tiles (an ISA with "amx").
BF16_ISA = re.compile(r"^[a-z0-9_]+:(?P<isa>[a-z0-9_]*(?:_bf16|amx)[a-z0-9_]*)$")


def bf16_kernel(impl, src):
    """Whether oneDNN ran bf16 data (src) on an implementation (impl) that uses bf16 instructions."""
    return src == "bf16" and BF16_ISA.match(impl) is not None


# Verbose lines of oneDNN 2.6.3, with whether each is a native bf16 kernel. The implementation names
# are those real runs executed: on an AMD EPYC (avx512_core_bf16) and on an Intel Xeon with AMX
# (avx512_core_amx, as issue 35 lists them); the negative cases are oneDNN's f32, gemm and reference ones.
RECORDED = [
    ("onednn_verbose,exec,cpu,convolution,brgconv:avx512_core_bf16,forward_training,src_bf16::blocked:acdb:f0 "
     "wei_bf16:p:blocked:Acdb16a:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:acdb:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,0.05", True),
    ("onednn_verbose,exec,cpu,convolution,jit:avx512_core_bf16,backward_weights,src_bf16::blocked:acdb:f0 "
     "wei_f32::blocked:abcd:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:acdb:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,0.11", True),
    ("onednn_verbose,exec,cpu,matmul,brg:avx512_core_bf16,undef,src_bf16::blocked:ab:f0 wei_bf16::blocked:ba:f0 "
     "bia_f32::blocked:ab:f0_mask2 dst_bf16::blocked:ab:f0,,,16x400:400x120:16x120,0.02", True),
    ("onednn_verbose,exec,cpu,convolution,brgconv:avx512_core_amx_bf16,forward_training,src_bf16::blocked:acdb:f0 "
     "wei_bf16:p:blocked:AcdB16b16a2b:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:acdb:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,0.04", True),
    ("onednn_verbose,exec,cpu,convolution,jit:avx512_core_amx_bf16,backward_data,src_bf16::blocked:acdb:f0 "
     "wei_bf16:p:blocked:AcdB16b16a2b:f0 bia_undef::undef::f0 dst_bf16::blocked:acdb:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,0.06", True),
    ("onednn_verbose,exec,cpu,matmul,brg:avx512_core_amx_bf16,undef,src_bf16::blocked:ab:f0 wei_bf16::blocked:ba:f0 "
     "bia_f32::blocked:ab:f0_mask2 dst_bf16::blocked:ab:f0,,,16x400:400x120:16x120,0.02", True),
    ("onednn_verbose,exec,cpu,inner_product,brgemm:avx512_core_amx_bf16,forward_training,src_bf16::blocked:ab:f0 "
     "wei_bf16:p:blocked:AB16b64a2b:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:ab:f0,,,mb16ic400oc120,0.03", True),
    ("onednn_verbose,exec,cpu,inner_product,brgemm_bwd_d:avx512_core_amx_bf16,backward_data,src_bf16::blocked:ab:f0 "
     "wei_bf16:p:blocked:AB16b64a2b:f0 bia_undef::undef::f0 dst_bf16::blocked:ab:f0,,,mb16ic400oc120,0.03", True),
    ("onednn_verbose,exec,cpu,inner_product,brgemm_bwd_w:avx512_core_amx_bf16,backward_weights,src_bf16::blocked:ab:f0 "
     "wei_f32:p:blocked:AB16b64a:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:ab:f0,,,mb16ic400oc120,0.04", True),
    # A bf16 primitive that runs on f32 instructions or a reference kernel, and f32 data: not native bf16.
    ("onednn_verbose,exec,cpu,convolution,gemm:jit,forward_training,src_bf16::blocked:abcd:f0 "
     "wei_bf16::blocked:abcd:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:abcd:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,0.30", False),
    ("onednn_verbose,exec,cpu,convolution,ref:any,forward_training,src_bf16::blocked:acdb:f0 "
     "wei_bf16::blocked:abcd:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:acdb:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,2.1", False),
    ("onednn_verbose,exec,cpu,convolution,brgconv:avx512_core,forward_training,src_f32::blocked:acdb:f0 "
     "wei_f32:p:blocked:Acdb16a:f0 bia_f32::blocked:a:f0 dst_f32::blocked:acdb:f0,,alg:convolution_direct,"
     "mb16_ic6oc16_ih14oh10kh5sh1dh0ph0_iw14ow10kw5sw1dw0pw0,0.05", False),
    ("onednn_verbose,exec,cpu,matmul,brg:avx512_core_amx_bf16,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ba:f0 "
     "bia_f32::blocked:ab:f0_mask2 dst_f32::blocked:ab:f0,,,16x400:400x120:16x120,0.02", False),
    ("onednn_verbose,exec,cpu,pooling,jit:avx512_core,forward_training,src_bf16::blocked:acdb:f0 "
     "dst_bf16::blocked:acdb:f0 ws_u8::blocked:acdb:f0,,alg:pooling_max,mb16ic6_ih28oh14kh2sh2ph0_iw28ow14kw2sw2pw0,0.01",
     False),
]


def self_test():
    failures = 0
    for line, native in RECORDED:
        ((prim, impl, src), _), = executed(line).items()
        got = bf16_kernel(impl, src)
        print(f"{'ok  ' if got == native else 'FAIL'} {prim:14s} {impl:36s} {src:5s} native bf16: {got}")
        failures += got != native
    print("OK: every recorded line classified as recorded" if not failures else f"FAIL: {failures} line(s)")
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
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
    shutil.rmtree(a.run_dir, ignore_errors=True)  # a run.dir holding an earlier run's files is refused
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
            bad = [r for r in rows if not bf16_kernel(*r)]
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
