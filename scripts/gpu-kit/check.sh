#!/usr/bin/env bash
# The GPU kit's correctness call (scripts/gpu-kit.sh check), run from the unpacked kit with env.sh
# sourced: the device and library versions; every cudatest_* suite; cuda against cpu (lenet and
# fmnist_sepcnn in fp32, bf16 and fp16, resnet20 in fp32 and fp16; then mobilenet_v2, inception_v3, a
# small ViT and vit_tiny in fp32 and bf16, vgg16 in fp32) with the per-step loss differences seen; a checkpoint and a bitwise resume; an HDF5 file through the input pipeline; the
# NCCL all-reduce at one rank and MPI on device buffers; NVML telemetry in metrics.jsonl;
# compute-sanitizer memcheck over a few steps. Each step has its own time limit; their sum stays under
# 4 minutes. KIT_DRY=1: run.device = sim in place of cuda, smaller runs.
# usage: check.sh OUT   (writes OUT/check.md, OUT/check.json, OUT/check.log, OUT/check-runs.tar.gz)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
dry=${KIT_DRY:-0}
threads=$(kit_threads)

# A short 1-rank run of MODEL in PRECISION on DEVICE into DIR (every step's loss logged).
short_run() {  # DIR DEVICE MODEL PRECISION STEPS BATCH [flags...]
  local dir=$1 device=$2 model=$3 precision=$4 steps=$5 batch=$6; shift 6
  kit_mpirun1 scaletrain --model.name "$model" --data.synthetic_samples 2048 --train.batch "$batch" \
    --train.epochs 1 --train.max_steps "$steps" --optimizer.lr 0.002 --train.log_every 1 --train.warmup_log_steps 0 \
    --train.evaluate false --train.precision "$precision" --comm.dtype "$precision" --run.threads "$threads" \
    --run.device "$device" --run.dir "$dir" "$@" > "$dir.log" 2>&1
}

summary() { kit_py "$here/report.py" summary "$@"; }

step_device() {
  cat "$KIT_ROOT/BUILD-INFO"
  scaletrain --version | tee "$KIT_WORK/version.txt" || return 1
  local gpu="[]"
  if [ "$dry" = 1 ]; then
    kit_note device "dry run: run.device = sim on $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), no GPU"
  else
    nvidia-smi || { kit_note device "nvidia-smi failed: no GPU driver or device"; return 1; }
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm,power.limit \
                     --format=csv,noheader | kit_py -c 'import csv, json, sys
keys = ["name", "memory_total", "driver", "compute_capability", "sm_clock_max", "power_limit"]
print(json.dumps([dict(zip(keys, [v.strip() for v in row])) for row in csv.reader(sys.stdin)]))') || return 1
    echo "$gpu" > "$KIT_WORK/gpus.json"
    kit_note device "$(summary gpus "$KIT_WORK/gpus.json")"
  fi
  kit_py "$here/report.py" device "$KIT_WORK/version.txt" "$KIT_ROOT/BUILD-INFO" "$gpu" | kit_figures device
}

step_cudatests() {
  local rc=0
  scaletrain_cudatests --gtest_output="json:$KIT_WORK/cudatests.json" || rc=$?
  kit_py "$here/report.py" gtest "$KIT_WORK/cudatests.json" | kit_figures cudatests
  local summary
  summary=$(summary cudatests "$KIT_WORK/figures/cudatests.json")
  [ "$rc" = 0 ] || { kit_note cudatests "$summary"; return 1; }
  if [ "$dry" = 1 ]; then
    kit_note cudatests "$summary (dry run: the GPU suites skip without a device)"
    return 0
  fi
  kit_note cudatests "$summary"
  kit_py -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["skipped"] > 0)' \
    "$KIT_WORK/figures/cudatests.json"  # on a GPU nothing may skip
}

step_cuda_vs_cpu() {
  local failed=0 model precision tol steps batch d
  local runs=$KIT_WORK/runs/vs
  mkdir -p "$runs"
  : > "$KIT_WORK/vs.jsonl"
  for model in lenet fmnist_sepcnn resnet20; do
    steps=50 batch=32 precisions="fp32 bf16 fp16"
    # resnet20: cuDNN's batch normalization, which runs f32 and f16 (bf16 runs the kernels lenet's
    # and fmnist_sepcnn's bf16 runs cover); fewer steps, as 19 BatchNorms amplify rounding differences.
    [ "$model" = resnet20 ] && steps=20 precisions="fp32 fp16"
    [ "$dry" = 1 ] && [ "$model" != lenet ] && steps=4 batch=16  # sim on 2 cores: 0.7 s a step
    for precision in $precisions; do
      case $precision in fp32) tol=1e-3 ;; *) tol=3e-2 ;; esac
      d=$runs/${model}_$precision
      mkdir -p "$d"
      short_run "$d/dev" "$KIT_DEV" "$model" "$precision" "$steps" "$batch" || { cat "$d/dev.log"; failed=1; continue; }
      short_run "$d/cpu" cpu "$model" "$precision" "$steps" "$batch" || { cat "$d/cpu.log"; failed=1; continue; }
      kit_py "$here/report.py" losses "$d/cpu/metrics.jsonl" "$d/dev/metrics.jsonl" \
          --model "$model" --precision "$precision" --rtol "$tol" >> "$KIT_WORK/vs.jsonl" || failed=1
      tail -1 "$KIT_WORK/vs.jsonl"
      # After every pair, so that a step stopped at its limit still reports the pairs it finished.
      kit_py -c 'import json, sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' \
          "$KIT_WORK/vs.jsonl" | kit_figures cuda_vs_cpu
    done
  done
  kit_note cuda_vs_cpu "$(summary cuda_vs_cpu "$KIT_WORK/vs.jsonl")"
  return "$failed"
}

# The torchvision networks of the zoo, cuda against cpu, a few steps each: mobilenet_v2 on the synthetic
# 28x28x1 data (model.stem_stride 1) and inception_v3 on 299x299x3, the size its auxiliary classifier
# trains at, in fp32 and bf16; vgg16 on 32x32x3 (a 64-wide classifier) in fp32 (its bf16 layers are
# lenet's and fmnist_sepcnn's kinds); a small ViT (16 patches of 7x7, 2 blocks) on the 28x28x1 data and
# vit_tiny on 224x224x3, in fp32 and bf16 (attention's strided-batched cuBLASLt products, the GELU
# epilogue, LayerNorm and softmax on the row reductions). Every run starts a process (a few seconds on a
# GPU node), so the pairs are few. cuDNN's heuristic algorithms: timing inception_v3's 94 convolutions would take the
# step's time.
step_zoo_vs_cpu() {
  local failed=0 model precision tol d steps batch flags
  local runs=$KIT_WORK/runs/zoo
  mkdir -p "$runs"
  : > "$KIT_WORK/zoo.jsonl"
  local samples=256
  [ "$dry" = 1 ] && samples=32
  for size in 32 224 299; do
    st-synth --shape "$size,$size,3" --train "$samples" --test 8 -o "$runs/synth-$size.h5" > "$runs/st-synth-$size.log" 2>&1 ||
      { cat "$runs/st-synth-$size.log"; return 1; }
  done
  for model in mobilenet_v2 vgg16 inception_v3 vit vit_tiny; do
    case $model in
      vit) steps=8 batch=32 flags=(--model.vit.patch_size 7 --model.vit.num_layers 2 --model.vit.num_heads 2
                                   --model.vit.hidden_dim 64 --model.vit.mlp_dim 128) ;;
      vit_tiny) steps=4 batch=8 flags=(--data.path "$runs/synth-224.h5") ;;
      mobilenet_v2) steps=8 batch=32 flags=(--model.stem_stride 1) ;;
      vgg16) steps=8 batch=16 flags=(--data.path "$runs/synth-32.h5" --model.classifier_width 64) ;;
      inception_v3) steps=4 batch=8 flags=(--data.path "$runs/synth-299.h5") ;;
    esac
    [ "$dry" = 1 ] && steps=2 batch=4  # sim on 2 cores
    for precision in fp32 bf16; do
      [ "$model" = vgg16 ] && [ "$precision" = bf16 ] && continue
      [ "$dry" = 1 ] && [ "$precision" = bf16 ] && [ "$model" = inception_v3 ] && continue  # 299x299 on sim: slow
      [ "$dry" = 1 ] && [ "$precision" = bf16 ] && [ "$model" = vit_tiny ] && continue
      case $precision in fp32) tol=1e-3 ;; *) tol=3e-2 ;; esac
      d=$runs/${model}_$precision
      mkdir -p "$d"
      short_run "$d/dev" "$KIT_DEV" "$model" "$precision" "$steps" "$batch" "${flags[@]}" \
          --run.cudnn_algorithms heuristic || { cat "$d/dev.log"; failed=1; continue; }
      short_run "$d/cpu" cpu "$model" "$precision" "$steps" "$batch" "${flags[@]}" || { cat "$d/cpu.log"; failed=1; continue; }
      kit_py "$here/report.py" losses "$d/cpu/metrics.jsonl" "$d/dev/metrics.jsonl" \
          --model "$model" --precision "$precision" --rtol "$tol" >> "$KIT_WORK/zoo.jsonl" || failed=1
      tail -1 "$KIT_WORK/zoo.jsonl"
      kit_py -c 'import json, sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' \
          "$KIT_WORK/zoo.jsonl" | kit_figures zoo_vs_cpu
    done
  done
  kit_note zoo_vs_cpu "$(summary cuda_vs_cpu "$KIT_WORK/zoo.jsonl")"
  return "$failed"
}

step_resume() {
  EXTRA="--run.device $KIT_DEV" PYTHON=$KIT_PYTHON bash "$KIT_ROOT/scripts/support/resume_check.sh" \
    "$(command -v scaletrain)" mpirun --bind-to none -- "$KIT_WORK/runs/resume" bitwise 1 25
  local rc=$?
  [ "$rc" = 0 ] && kit_note resume "stopped at step 25, resumed: every step's loss bitwise equal to the uninterrupted run's"
  return "$rc"
}

# An HDF5 file made here (st-synth) through the real input pipeline onto the device: the reader
# thread, the pinned host ring and the host-to-device copies, in stage and stream mode, 2 epochs
# with evaluation; the synthetic classes are separable, so both must reach 90% accuracy.
step_hdf5_input() {
  local d=$KIT_WORK/runs/hdf5 mode failed=0 notes=()
  mkdir -p "$d"
  st-synth --train 2048 --test 512 -o "$d/synth.h5" > "$d/st-synth.log" 2>&1 || { cat "$d/st-synth.log"; return 1; }
  for mode in stage stream; do
    kit_mpirun1 scaletrain --model.name lenet --data.path "$d/synth.h5" --data.mode "$mode" --train.batch 64 \
      --train.epochs 2 --optimizer.lr 0.01 --run.device "$KIT_DEV" --run.threads "$threads" --run.dir "$d/$mode" \
      > "$d/$mode.log" 2>&1 ||
      { cat "$d/$mode.log"; failed=1; continue; }
    tail -3 "$d/$mode.log"
    notes+=("$(kit_py -c 'import json, sys; r = json.load(open(sys.argv[1]))
a = r["final_eval_accuracy"]
print("%s: %.0f samples/s, eval accuracy %.3f" % (sys.argv[2], r["samples_per_s"], a)); sys.exit(a < 0.9)' \
      "$d/$mode/run.json" "$mode")") || failed=1
  done
  kit_note hdf5_input "$(printf '%s; ' "${notes[@]}" | sed 's/; $//')"
  return "$failed"
}

allreduce() {  # NAME BACKEND MAX_BYTES
  kit_mpirun1 scaletrain-bench-allreduce -b 8 -e "$3" -n 20 -w 5 --device "$KIT_DEV" --backend "$2" \
    --json "$KIT_WORK/figures/$1.json" || return 1
  kit_note "$1" "$(summary allreduce "$KIT_WORK/figures/$1.json")"
}
step_nccl_allreduce() { allreduce nccl_allreduce nccl "$([ "$dry" = 1 ] && echo 4M || echo 256M)"; }
step_mpi_device_allreduce() { allreduce mpi_device_allreduce mpi "$([ "$dry" = 1 ] && echo 4M || echo 64M)"; }

step_telemetry() {
  if [ "$dry" = 1 ]; then kit_note telemetry "not available (dry run: sim has no NVML)"; return 77; fi
  kit_py "$here/report.py" telemetry "$KIT_WORK/runs/vs/lenet_fp32/dev/metrics.jsonl" | kit_figures telemetry
  summary telemetry "$KIT_WORK/figures/telemetry.json" > "$KIT_WORK/notes/telemetry"
}

step_memcheck() {
  if [ "$dry" = 1 ]; then kit_note memcheck "not available (dry run: no GPU)"; return 77; fi
  local cs
  local cs="" c
  for c in "$(command -v compute-sanitizer)" /usr/local/cuda*/bin/compute-sanitizer; do
    [ -x "$c" ] && { cs=$c; break; }
  done
  [ -n "$cs" ] || { kit_note memcheck "not available (no compute-sanitizer on this machine)"; return 77; }
  mkdir -p "$KIT_WORK/runs/memcheck"
  local rc=0 d=$KIT_WORK/runs/memcheck/lenet
  kit_mpirun1 "$cs" --tool memcheck --error-exitcode 3 --print-limit 20 scaletrain --model.name lenet \
    --data.synthetic_samples 256 --train.batch 32 --train.epochs 1 --train.max_steps 4 --train.evaluate false \
    --run.device cuda --run.dir "$d" > "$d.log" 2>&1 || rc=$?
  cat "$d.log"
  if grep -qE "Device not supported|Unable to find injection library|Target application terminated before first instrumented API call" "$d.log"; then
    kit_note memcheck "not available: $(grep -m1 -E "Device not supported|Unable to find|terminated before" "$d.log")"
    return 77
  fi
  kit_note memcheck "$(grep -m1 -E "ERROR SUMMARY" "$d.log" || echo "exit code $rc")"
  return "$rc"
}

if [ "${1:-}" = __step ]; then
  "step_$2"
  exit $?
fi

# Limits: 235 s in all; the other steps' limits sit closer to what the last GPU call took
# (perf/gpu/*/check.md) to make room for zoo_vs_cpu (its ViTs not yet timed on a GPU).
kit_call "$0" check "${1:?usage: check.sh OUT}" \
  device:5 cudatests:25 cuda_vs_cpu:70 zoo_vs_cpu:60 resume:15 hdf5_input:10 nccl_allreduce:12 \
  mpi_device_allreduce:8 telemetry:5 memcheck:25
