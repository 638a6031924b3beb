#!/usr/bin/env bash
# The GPU kit end to end without a GPU (label kit, the cuda tier): packs the kit from a cuda build,
# checks with ldd that it resolves every library but the CUDA ones from inside itself, then runs both
# calls with --dry (run.device = sim, PyTorch on the CPU, under env -i with only env.sh's settings)
# and requires: no step failed or timed out, every step reported, at most 8 files back, and the speed
# call's resnet50 on both sides (images/s, time and kernels per step by category).
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
expect = {"check": ["device", "cudatests", "cuda_vs_cpu", "resume", "hdf5_input", "nccl_allreduce", "mpi_device_allreduce",
                    "telemetry", "memcheck"],
          "speed": ["scaletrain_resnet50_bf16", "pytorch_resnet50_bf16", "scaletrain_resnet50_tf32",
                    "pytorch_resnet50_tf32", "scaletrain_fmnist_sepcnn", "pytorch_fmnist_sepcnn", "scaletrain_lenet"]}
for call, steps in expect.items():
    doc = json.load(open(os.path.join(out, f"{call}.json")))
    got = [s["step"] for s in doc["steps"]]
    assert got == steps, f"{call}: steps {got}, expected {steps}"
    bad = [s for s in doc["steps"] if s["status"] not in ("passed", "skipped")]
    assert not bad, f"{call}: {bad}"
    assert sum(s["limit_s"] for s in doc["steps"]) <= 235, f"{call}: step limits over 4 minutes"
vs = json.load(open(os.path.join(out, "check.json")))["figures"]["cuda_vs_cpu"]
assert len(vs) == 8 and all(r["worst_rel"] == 0 for r in vs), f"sim against cpu must be bitwise: {vs}"
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
print(f"OUT: {', '.join(files)}")
PY
echo "gpu kit: archive $(du -m "$work/kit/scaletrain-gpu-kit.tar.gz" | cut -f1) MiB; pack ${t_pack} s," \
     "check --dry ${seconds[check]} s, speed --dry ${seconds[speed]} s"
