#!/usr/bin/env bash
# The GPU kit's speed call (scripts/gpu-kit.sh speed), run from the unpacked kit with env.sh sourced:
# images/s of every zoo model at a batch that fills the GPU, in fp32 (TF32 off), tf32 and bf16, with
# run.deterministic on and off, beside PyTorch on the same GPU, model, batch and precision in its
# best configuration (cudnn.benchmark; NCHW and channels_last; eager, then torch.compile), and each
# one's share of the GPU's data-sheet peak (report.py). Each step has its own time limit; their sum
# stays under 4 minutes. KIT_DRY=1: run.device = sim and PyTorch on the CPU, small batches, no
# tf32 and no torch.compile (GPU-only; the report says so).
# usage: speed.sh OUT   (writes OUT/speed.md, OUT/speed.json, OUT/speed.log, OUT/speed-runs.tar.gz)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
dry=${KIT_DRY:-0}
models=(fmnist_sepcnn lenet mlp lenet_dropout)  # the heaviest first: PyTorch's compile step measures it
if [ "$dry" = 1 ]; then
  precisions=(fp32 bf16)
  declare -A batch=([mlp]=64 [lenet]=64 [lenet_dropout]=64 [fmnist_sepcnn]=8)
  declare -A steps=([mlp]=12 [lenet]=12 [lenet_dropout]=12 [fmnist_sepcnn]=4)
else
  precisions=(fp32 tf32 bf16)
  declare -A batch=([mlp]=8192 [lenet]=4096 [lenet_dropout]=4096 [fmnist_sepcnn]=1024)
  declare -A steps=([mlp]=300 [lenet]=200 [lenet_dropout]=200 [fmnist_sepcnn]=60)
fi

# One model: every precision, deterministic on and off; run.json's samples_per_s after the warm-up.
scaletrain_model() {  # MODEL
  local m=$1 p det dir flags failed=0
  for p in "${precisions[@]}"; do
    for det in true false; do
      dir=$KIT_WORK/runs/${m}_${p}_det-$det
      case $p in
        tf32) flags=(--train.precision fp32 --train.allow_tf32 true) ;;
        *) flags=(--train.precision "$p" --comm.dtype "$p") ;;
      esac
      kit_mpirun1 scaletrain --model.name "$m" --data.synthetic_samples $((batch[$m] * 4)) --train.batch "${batch[$m]}" \
        --train.epochs 100000 --train.max_steps "${steps[$m]}" --train.warmup_log_steps $((steps[$m] / 4)) \
        --train.log_every $((steps[$m] / 4)) --train.evaluate false --optimizer.lr 0.001 --run.device "$KIT_DEV" \
        --run.deterministic "$det" --run.threads "$(kit_threads)" --run.checkpoint_at_end false \
        --run.dir "$dir" "${flags[@]}" > "$dir.log" 2>&1 || { tail -5 "$dir.log"; failed=1; continue; }
      echo "{\"model\": \"$m\", \"precision\": \"$p\", \"deterministic\": $det, \"batch\": ${batch[$m]}," \
           "\"run_json\": \"$dir/run.json\"}" >> "$KIT_WORK/scaletrain.jsonl"
      kit_py -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("%s: %.0f images/s" % (sys.argv[2], r["samples_per_s"]))' "$dir/run.json" "$m $p deterministic=$det"
    done
  done
  return "$failed"
}
step_scaletrain_mlp() { scaletrain_model mlp; }
step_scaletrain_lenet() { scaletrain_model lenet; }
step_scaletrain_lenet_dropout() { scaletrain_model lenet_dropout; }
step_scaletrain_fmnist_sepcnn() { scaletrain_model fmnist_sepcnn; }

# PyTorch: every model and precision in one process, eager (or with torch.compile), one JSON line
# per configuration as it is measured.
pytorch() {  # eager|compile
  local m args=(--json --out "$KIT_WORK/pytorch.jsonl" --warmup 3 --dtype "${precisions[@]}" --model-batch)
  for m in "${models[@]}"; do args+=("$m=${batch[$m]}"); done
  if [ "$dry" = 1 ]; then
    [ "$1" = compile ] && { kit_note pytorch_compile "not run (dry run: torch.compile is timed on the GPU only)"; return 77; }
    args+=(--device cpu --configs single --threads "$(nproc)" --seconds 0.5)
  else
    args+=(--device cuda --seconds 1.0)
    [ "$1" = compile ] && args+=(--modes compile --formats channels_last)  # eager ran in the step before
  fi
  kit_py "$here/pytorch_anchor.py" "${args[@]}" --models "${models[@]}"
}
step_pytorch_eager() { pytorch eager; }
step_pytorch_compile() { pytorch compile; }

if [ "${1:-}" = __step ]; then
  "step_$2"
  exit $?
fi

# Limits: 230 s in all.
kit_call "$0" speed "${1:?usage: speed.sh OUT}" \
  scaletrain_mlp:35 scaletrain_lenet:30 scaletrain_lenet_dropout:30 scaletrain_fmnist_sepcnn:45 \
  pytorch_eager:50 pytorch_compile:40
