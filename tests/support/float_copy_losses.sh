#!/usr/bin/env bash
# A float32 copy of a uint8 data set trains exactly as the original: the copy is written as .npy by
# NumPy, packed by st-pack-arrays, checked to hold the same values and statistics, and both files
# train lenet for 50 steps (augmentation on) on cpu and on sim; the per-step losses must be bitwise
# equal (compare_losses.py).
# usage: float_copy_losses.sh SCALETRAIN ST_PACK_ARRAYS UINT8_FILE OUTDIR MPIRUN -np N [mpirun flags...]
set -euo pipefail
st=$1 pack=$2 u8=$3 out=$4
shift 4
mpirun=("$@")
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
rm -rf "$out"
mkdir -p "$out"
$py "$here/pack_arrays_cases.py" fmnist-npy "$u8" "$out/npy"
"${mpirun[@]}" "$pack" --train-samples "$out/npy/x_train.npy" --train-labels "$out/npy/y_train.npy" \
  --test-samples "$out/npy/x_test.npy" --test-labels "$out/npy/y_test.npy" -o "$out/f32.h5"
$py "$here/pack_arrays_cases.py" same-statistics "$u8" "$out/f32.h5"
common=(--model.name lenet --train.batch 64 --train.epochs 1 --train.max_steps 50 --train.log_every 1
        --train.warmup_log_steps 0 --train.evaluate false --data.augment true --run.threads 1)
for device in cpu sim; do
  for kind in u8 f32; do
    file=$u8
    [ "$kind" = f32 ] && file=$out/f32.h5
    "${mpirun[@]}" "$st" "${common[@]}" --run.device $device --data.path "$file" --run.dir "$out/$device-$kind" \
      > "$out/$device-$kind.log" 2>&1 || { cat "$out/$device-$kind.log"; echo "FAIL: $device run on $kind exited non-zero"; exit 1; }
  done
  $py "$here/compare_losses.py" "$out/$device-u8/metrics.jsonl" "$out/$device-f32/metrics.jsonl" --steps 50
  echo "$device: losses of the f32 copy identical to the uint8 file's over 50 steps"
done
