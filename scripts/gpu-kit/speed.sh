#!/usr/bin/env bash
# The GPU kit's speed call (scripts/gpu-kit.sh speed), run from the unpacked kit with env.sh sourced,
# heaviest first: ResNet-50 at batch 256 on 224x224x3 in bf16 on both sides: scaletrain with
# run.profile = layers,kernels (its layer table and CUPTI's kernels, profile.json) and PyTorch in its
# best eager configuration (channels_last, autocast, cudnn.benchmark) with torch.profiler's kernels
# (pytorch_kernel_profile.py); then fmnist_sepcnn on both sides and lenet on ours in fp32 (TF32 off),
# tf32 and bf16 with run.deterministic = false. report.py puts the two sides next to each other:
# images/s, time and kernels per step by category, and each one's share of the GPU's data-sheet peak.
# Last, cuDNN's batch normalization in bf16 timed against the kernels at resnet50's shapes.
# Beside each network, short runs of run.cudnn_algorithms heuristic against auto (cuDNN's and
# cuBLASLt's untimed first choice against the timed fastest), run.deterministic true and false: ResNet-50
# in bf16, fmnist_sepcnn and lenet in fp32 (algorithms.jsonl; report.py's "Algorithm choice" table).
# Each step has its own time limit; their sum stays under 4 minutes (KIT_SPEED_NOT_RUN: what did not
# fit). KIT_DRY=1: run.device = sim and PyTorch on the CPU, small inputs and batches, fp32 and bf16
# (ResNet-50: fp32 on 32x32x3 at batch 2), no tf32 (GPU-only; the report says so).
# usage: speed.sh OUT   (writes OUT/speed.md, OUT/speed.json, OUT/speed.log, OUT/speed-runs.tar.gz)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
dry=${KIT_DRY:-0}
# What the call leaves out to stay within its 4 minutes; report.py prints it under the tables.
not_run="mlp and lenet_dropout; run.deterministic = true outside the algorithm table (which has lenet's and \
fmnist_sepcnn's in fp32, resnet50's in bf16; the H200's first call has lenet's and fmnist_sepcnn's in every \
precision); resnet50 in tf32 (both sides) and scaletrain's in fp32 (TF32 off); PyTorch's lenet and torch.compile; \
mobilenet_v2, vgg16, inception_v3 and vit_b_16 (no bf16 row of theirs fits beside resnet50's and the algorithm tables: \
perf/bench_train_step.py times them on CPUs, the check call compares them with the CPU)"
export KIT_SPEED_NOT_RUN="$not_run; PyTorch's NCHW (channels_last only)"
if [ "$dry" = 1 ]; then
  KIT_SPEED_NOT_RUN="$not_run; PyTorch's channels_last (a dry run's PyTorch runs NCHW)"
  precisions=(fp32 bf16)
  declare -A batch=([lenet]=64 [fmnist_sepcnn]=8 [resnet50]=2)
  declare -A steps=([lenet]=12 [fmnist_sepcnn]=4 [resnet50]=4)
  declare -A warmup=([lenet]=3 [fmnist_sepcnn]=1 [resnet50]=1)
  declare -A algo_steps=([lenet]=12 [fmnist_sepcnn]=4 [resnet50]=4)
  declare -A algo_warmup=([lenet]=3 [fmnist_sepcnn]=1 [resnet50]=1)
  resnet_input=32,32,3 resnet_samples=8
  torch_format=nchw  # PyTorch 1.13's channels_last batch norm takes seconds at batch 2 on the CPU
else
  precisions=(fp32 tf32 bf16)
  declare -A batch=([lenet]=4096 [fmnist_sepcnn]=1024 [resnet50]=256)
  # resnet50: 6 measured steps after 4 (comm.bucket_mb = auto chooses its buckets after step 3).
  declare -A steps=([lenet]=100 [fmnist_sepcnn]=40 [resnet50]=10)
  declare -A warmup=([lenet]=25 [fmnist_sepcnn]=10 [resnet50]=4)
  # The algorithm table's runs, 4 per network: fewer measured steps (20, 8 and 3) to fit the call.
  declare -A algo_steps=([lenet]=30 [fmnist_sepcnn]=12 [resnet50]=7)
  declare -A algo_warmup=([lenet]=10 [fmnist_sepcnn]=4 [resnet50]=4)
  resnet_input=224,224,3 resnet_samples=512
  torch_format=channels_last
fi

# One scaletrain run; run.json's samples_per_s after the warm-up (and profile.json with run.profile).
# ALGORITHMS default: run.cudnn_algorithms left at its default, the main table's runs (scaletrain.jsonl);
# heuristic or auto: the algorithm table's (algorithms.jsonl, algo_steps, the setting in the run's name).
scaletrain_run() {  # MODEL PRECISION DETERMINISTIC ALGORITHMS [flags...]
  local m=$1 p=$2 det=$3 algos=$4 dir flags n=${steps[$1]} w=${warmup[$1]} list=scaletrain.jsonl what
  shift 4
  dir=$KIT_WORK/runs/${m}_${p}_det-$det what="$m $p deterministic=$det"
  case $p in
    tf32) flags=(--train.precision fp32 --train.allow_tf32 true) ;;
    *) flags=(--train.precision "$p" --comm.dtype "$p") ;;
  esac
  if [ "$algos" != default ]; then
    dir+=_alg-$algos what+=" algorithms=$algos" n=${algo_steps[$m]} w=${algo_warmup[$m]} list=algorithms.jsonl
    flags+=(--run.cudnn_algorithms "$algos")
  fi
  kit_mpirun1 scaletrain --model.name "$m" --train.batch "${batch[$m]}" \
    --train.epochs 100000 --train.max_steps "$n" --train.warmup_log_steps "$w" \
    --train.log_every "$w" --train.evaluate false --optimizer.lr 0.001 --run.device "$KIT_DEV" \
    --run.deterministic "$det" --run.threads "$(kit_threads)" --run.checkpoint_at_end false \
    --run.dir "$dir" "${flags[@]}" "$@" > "$dir.log" 2>&1 || { echo "$what:"; tail -5 "$dir.log"; return 1; }
  local algo="" profile=""
  [ "$algos" = default ] || algo=", \"algorithms\": \"$algos\""
  [ -f "$dir/profile.json" ] && profile=", \"profile_json\": \"$dir/profile.json\""
  echo "{\"model\": \"$m\", \"precision\": \"$p\", \"deterministic\": $det$algo, \"batch\": ${batch[$m]}," \
       "\"run_json\": \"$dir/run.json\"$profile}" >> "$KIT_WORK/$list"
  kit_py -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("%s: %.0f images/s" % (sys.argv[2], r["samples_per_s"]))' "$dir/run.json" "$what"
}

# One model on synthetic data (28x28x1, 10 classes): every precision, run.deterministic = false.
scaletrain_model() {  # MODEL
  local m=$1 p failed=0
  for p in "${precisions[@]}"; do
    scaletrain_run "$m" "$p" false default --data.synthetic_samples $((batch[$m] * 4)) || failed=1
  done
  return "$failed"
}
step_scaletrain_fmnist_sepcnn() { scaletrain_model fmnist_sepcnn; }
step_scaletrain_lenet() { scaletrain_model lenet; }

# The algorithm table's runs of one network: run.cudnn_algorithms heuristic, then auto (rank 0 times
# the candidates at start-up, only deterministic ones with run.deterministic = true), for each
# DETERMINISTIC setting, each run on its own, so that one failing leaves the others.
algorithms_runs() {  # MODEL PRECISION "DETERMINISTIC..." [flags...]
  local m=$1 p=$2 dets=$3 det a failed=0
  shift 3
  for det in $dets; do
    for a in heuristic auto; do
      scaletrain_run "$m" "$p" "$det" "$a" "$@" || failed=1
    done
  done
  return "$failed"
}
step_algorithms_fmnist_sepcnn() {
  algorithms_runs fmnist_sepcnn fp32 "false true" --data.synthetic_samples $((batch[fmnist_sepcnn] * 4))
}
step_algorithms_lenet() { algorithms_runs lenet fp32 "false true" --data.synthetic_samples $((batch[lenet] * 4)); }

# The precision a resnet50 step runs in (into rp): its own on a GPU; fp32 in a dry run (bf16 there:
# PyTorch's bf16 on the CPU takes minutes a step). A dry step's note (rp_note) says so once it passed;
# a failed one's is its error.
resnet_precision() {  # STEP PRECISION
  rp=$2 rp_note=""
  [ "$dry" = 1 ] || return 0
  rp=fp32 rp_note="dry run: fp32 on ${resnet_input//,/x} at batch ${batch[resnet50]} (on a GPU: $2 on 224x224x3 at 256)"
}

# ResNet-50's st-synth file of its shape and 1000 classes (into data), made by the first step that
# needs it and kept for the others.
resnet_data() {
  data=$KIT_WORK/runs/resnet50-${resnet_input//,/x}-1000.h5
  [ -f "$data" ] && return 0
  st-synth --shape "$resnet_input" --classes 1000 --train "$resnet_samples" --test 16 -o "$data.part" \
    > "$KIT_WORK/runs/st-synth-resnet50.log" 2>&1 ||
    { cat "$KIT_WORK/runs/st-synth-resnet50.log"; rm -f "$data.part"; return 1; }
  mv "$data.part" "$data"
}

# ResNet-50 with the layer profile and the device's kernels (profile.json).
scaletrain_resnet50() {  # PRECISION
  local rp rp_note data
  resnet_precision "scaletrain_resnet50_$1" "$1" || return $?
  resnet_data || return 1
  scaletrain_run resnet50 "$rp" false default --model.input "$resnet_input" --data.path "$data" \
    --run.profile layers,kernels || return 1
  [ -f "$KIT_WORK/runs/resnet50_${rp}_det-false/profile.json" ] || { echo "no profile.json in the run directory"; return 1; }
  [ -z "$rp_note" ] || kit_note "scaletrain_resnet50_$1" "$rp_note"
}
step_scaletrain_resnet50_bf16() { scaletrain_resnet50 bf16; }

# ResNet-50's algorithm table runs in bf16 (a dry run: resnet_precision's), one step per
# run.deterministic setting: the timing of every candidate (false) is the costlier start-up.
algorithms_resnet50() {  # STEP DETERMINISTIC
  local rp rp_note data
  resnet_precision "$1" bf16 || return $?
  resnet_data || return 1
  algorithms_runs resnet50 "$rp" "$2" --model.input "$resnet_input" --data.path "$data" || return 1
  [ -z "$rp_note" ] || kit_note "$1" "$rp_note"
}
step_algorithms_resnet50_nondet() { algorithms_resnet50 algorithms_resnet50_nondet false; }
step_algorithms_resnet50_det() { algorithms_resnet50 algorithms_resnet50_det true; }

# PyTorch's ResNet-50 beside it: images/s (into pytorch.jsonl, as pytorch_anchor.py's lines) and
# torch.profiler's kernels per step (runs/pytorch_resnet50_P.json, profile.json's "kernels" shape).
pytorch_resnet50() {  # PRECISION
  local rp rp_note
  resnet_precision "pytorch_resnet50_$1" "$1" || return $?
  local out=$KIT_WORK/runs/pytorch_resnet50_$rp.json
  local args=(--model resnet50 --batch "${batch[resnet50]}" --dtype "$rp" --input "$resnet_input"
              --format "$torch_format" --out "$out" --timing-out "$KIT_WORK/pytorch.jsonl")
  if [ "$dry" = 1 ]; then
    args+=(--device cpu --threads "$(nproc)" --warmup 1 --seconds 0.3 --profile-steps 2)
  else
    args+=(--device cuda --warmup 3 --seconds 2.0 --profile-steps 5)
  fi
  kit_py "$here/pytorch_kernel_profile.py" "${args[@]}" || return 1
  echo "{\"model\": \"resnet50\", \"precision\": \"$rp\", \"batch\": ${batch[resnet50]}, \"profile_json\": \"$out\"}" \
    >> "$KIT_WORK/pytorch_profiles.jsonl"
  [ -z "$rp_note" ] || kit_note "pytorch_resnet50_$1" "$rp_note"
}
step_pytorch_resnet50_bf16() { pytorch_resnet50 bf16; }

# PyTorch's fmnist_sepcnn in every precision in one process, one JSON line per configuration as it is
# measured (pytorch_anchor.py).
step_pytorch_fmnist_sepcnn() {
  local args=(--json --out "$KIT_WORK/pytorch.jsonl" --warmup 2 --dtype "${precisions[@]}" --formats "$torch_format"
              --model-batch "fmnist_sepcnn=${batch[fmnist_sepcnn]}" --models fmnist_sepcnn)
  if [ "$dry" = 1 ]; then
    args+=(--device cpu --configs single --threads "$(nproc)" --seconds 0.5)
  else
    args+=(--device cuda --seconds 0.5)
  fi
  kit_py "$here/pytorch_anchor.py" "${args[@]}"
}

# cuDNN's batch normalization in bf16 against the kernels at resnet50's shapes, forward and backward
# (tests/cuda/cudatest_cudnn_bf16_batch_norm.cpp's timing; without a device it skips).
step_cudnn_bf16_batch_norm() {
  local rc=0
  scaletrain_cudatests --gtest_also_run_disabled_tests --gtest_filter='CudnnBatchNormBf16.DISABLED_Timing' \
    --gtest_output="json:$KIT_WORK/cudnn_bf16_batch_norm.json" > "$KIT_WORK/cudnn_bf16_batch_norm.log" 2>&1 || rc=$?
  kit_py "$here/report.py" gtest "$KIT_WORK/cudnn_bf16_batch_norm.json" | kit_figures cudnn_bf16_batch_norm
  [ "$rc" = 0 ] || tail -5 "$KIT_WORK/cudnn_bf16_batch_norm.log"
  return "$rc"
}

if [ "${1:-}" = __step ]; then
  "step_$2"
  exit $?
fi

# Limits: 230 s in all (tests/support/gpu_kit_dry.sh checks). scaletrain's resnet50 starts by timing
# cuDNN's algorithms for 53 convolutions in 3 directions (run.cudnn_algorithms = auto, the default; the
# algorithm steps find the data file made); PyTorch's first resnet50 steps autotune (cudnn.benchmark)
# and torch.profiler's post-processing of 5 steps' kernels takes seconds. Each scaletrain process
# starts in a few seconds (mpirun, the CUDA context, cuDNN's and cuBLAS's handles): the algorithm
# steps' 4 runs each cost more in start-ups than in steps.
kit_call "$0" speed "${1:?usage: speed.sh OUT}" \
  scaletrain_resnet50_bf16:45 pytorch_resnet50_bf16:40 algorithms_resnet50_nondet:25 algorithms_resnet50_det:20 \
  scaletrain_fmnist_sepcnn:20 algorithms_fmnist_sepcnn:25 pytorch_fmnist_sepcnn:25 scaletrain_lenet:12 \
  algorithms_lenet:13 cudnn_bf16_batch_norm:5
