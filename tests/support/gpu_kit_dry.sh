#!/usr/bin/env bash
# The GPU kit end to end without a GPU (label kit, the cuda tier): packs the kit from a cuda build,
# checks with ldd that it resolves every library but the CUDA ones from inside itself, then runs both
# calls with --dry (run.device = sim, PyTorch on the CPU, under env -i with only env.sh's settings)
# and requires: no step failed or timed out, every step reported (the torchvision networks' cuda
# against cpu among them), at most 8 files back, the speed
# call's resnet50 on both sides (images/s, time and kernels per step by category), and its algorithm
# table's rows (run.cudnn_algorithms heuristic against auto: both runs' images/s; sim has no choice).
# usage: gpu_kit_dry.sh SOURCE_DIR CUDA_BUILD_DIR WORKDIR
set -euo pipefail
src=$1 build=$2 work=$(realpath -m "$3")
rm -rf "$work"
mkdir -p "$work/unpacked"
t0=$SECONDS
bash "$src/scripts/gpu-kit.sh" pack "$work/kit" --build "$build" | tail -1
t_pack=$((SECONDS - t0))
tar -C "$work/unpacked" -xzf "$work/kit/scaletrain-gpu-kit.tar.gz"
bash "$src/tests/support/gpu_kit_ldd.sh" "$work/unpacked/scaletrain-gpu-kit" "$work/ldd" | tail -1
declare -A seconds
for call in check speed; do
  t0=$SECONDS
  rc=0
  bash "$src/scripts/gpu-kit.sh" "$call" --kit "$work/kit" "$work/out" --dry > "$work/$call.stdout" 2>&1 || rc=$?
  seconds[$call]=$((SECONDS - t0))
  sed -n '/^| step /,/^$/p' "$work/out/$call.md"
  [ "$rc" = 0 ] || { cat "$work/$call.stdout"; tail -60 "$work/out/$call.log"; echo "FAIL: gpu-kit $call --dry exited $rc"; exit 1; }
done
/usr/bin/python3 - "$work/out" <<'PY'
import json, os, sys
out = sys.argv[1]
files = sorted(os.listdir(out))
assert len(files) <= 8, f"{len(files)} files in OUT, at most 8 come back: {files}"
expect = {"check": ["device", "cudatests", "cuda_vs_cpu", "zoo_vs_cpu", "resume", "hdf5_input", "nccl_allreduce",
                    "mpi_device_allreduce", "telemetry", "memcheck"],
          "speed": ["scaletrain_resnet50_bf16", "pytorch_resnet50_bf16", "algorithms_resnet50_nondet",
                    "algorithms_resnet50_det", "scaletrain_fmnist_sepcnn", "algorithms_fmnist_sepcnn",
                    "pytorch_fmnist_sepcnn", "scaletrain_lenet", "algorithms_lenet", "cudnn_bf16_batch_norm"]}
for call, steps in expect.items():
    doc = json.load(open(os.path.join(out, f"{call}.json")))
    got = [s["step"] for s in doc["steps"]]
    assert got == steps, f"{call}: steps {got}, expected {steps}"
    bad = [s for s in doc["steps"] if s["status"] not in ("passed", "skipped")]
    assert not bad, f"{call}: {bad}"
    limits = sum(s["limit_s"] for s in doc["steps"])
    assert limits <= {"check": 235, "speed": 230}[call], f"{call}: step limits add up to {limits} s, over 4 minutes"
vs = json.load(open(os.path.join(out, "check.json")))["figures"]["cuda_vs_cpu"]
assert len(vs) == 8 and all(r["worst_rel"] == 0 for r in vs), f"sim against cpu must be bitwise: {vs}"
# The torchvision networks: mobilenet_v2 in fp32 and bf16, vgg16 and inception_v3 in fp32, a small ViT in fp32 and
# bf16, vit_tiny in fp32 (a dry run).
zoo = json.load(open(os.path.join(out, "check.json")))["figures"]["zoo_vs_cpu"]
got = [(r["model"], r["precision"]) for r in zoo]
want = [("mobilenet_v2", "fp32"), ("mobilenet_v2", "bf16"), ("vgg16", "fp32"), ("inception_v3", "fp32"),
        ("vit", "fp32"), ("vit", "bf16"), ("vit_tiny", "fp32")]
assert got == want and all(r["worst_rel"] == 0 for r in zoo), f"zoo_vs_cpu: sim against cpu must be bitwise: {zoo}"
speed = json.load(open(os.path.join(out, "speed.json")))["speed"]
rows = speed["rows"]
# fp32 and bf16 of fmnist_sepcnn and lenet, resnet50 in fp32 (32x32x3); PyTorch beside all but lenet.
got = sorted((r["model"], r["precision"]) for r in rows)
want = sorted([(m, p) for m in ("fmnist_sepcnn", "lenet") for p in ("fp32", "bf16")] + [("resnet50", "fp32")])
assert got == want, f"speed rows {got}, expected {want}"
assert all(r["pytorch_best_images_per_s"] for r in rows if r["model"] != "lenet"), f"speed rows: {rows}"
# resnet50 side by side: both sides' images/s and non-empty category tables with a positive total.
nets = [n for n in speed["networks"] if n["network"] == "resnet50"]
assert len(nets) == 1 and nets[0]["precision"] == "fp32", f"networks: {speed['networks']}"
net = nets[0]
for side in ("ours", "pytorch"):
    s = net[side]
    assert s and s["images_per_s"] and s["categories"] and s["kernel_s"] > 0 and s["kernels_per_step"] > 0, \
        f"resnet50 {side}: {s}"
    assert sum(c["seconds"] for c in s["categories"]) > 0, f"resnet50 {side}: categories {s['categories']}"
assert net["ratio_vs_pytorch"] and net["ours"]["layers"], f"resnet50: {net}"
assert all(c["ours_ms"] is not None and c["pytorch_ms"] is not None for c in net["categories"]), net["categories"]
# The algorithm table: lenet and fmnist_sepcnn in fp32, resnet50 in the dry run's fp32, run.deterministic
# false and true, each with both runs' images/s; sim has no algorithm choice (operators.algorithms null).
algos = speed["algorithms"]
got = [(r["model"], r["precision"], r["deterministic"]) for r in algos]
want = [(m, "fp32", d) for m in ("resnet50", "fmnist_sepcnn", "lenet") for d in (False, True)]
assert got == want, f"algorithm rows {got}, expected {want}"
for r in algos:
    assert r["heuristic"]["images_per_s"] and r["auto"]["images_per_s"] and r["ratio_auto_vs_heuristic"], r
    assert r["algorithms_status"] == "no algorithm choice on this device" and r["algorithms"] is None, r
md = open(os.path.join(out, "speed.md")).read()
section = md.split("## Algorithm choice (run.cudnn_algorithms)\n", 1)
assert len(section) == 2, "speed.md: no algorithm choice section"
table = section[1].lstrip("\n").split("\n\n", 1)[0].splitlines()
table = [line for line in table if "| --- |" not in line]
assert [tuple(c.strip() for c in line.split("|")[1:4]) for line in table[1:]] == \
    [(m, p, str(d).lower()) for m, p, d in want], f"speed.md algorithm table: {table}"
assert all(line.count("no algorithm choice on this device") == 4 for line in table[1:]), table
print(f"OUT: {', '.join(files)}")
PY
echo "gpu kit: archive $(du -m "$work/kit/scaletrain-gpu-kit.tar.gz" | cut -f1) MiB; pack ${t_pack} s," \
     "check --dry ${seconds[check]} s, speed --dry ${seconds[speed]} s"
