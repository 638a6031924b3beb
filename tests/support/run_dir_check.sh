#!/usr/bin/env bash
# One run per run.dir: a second run into a run.dir that holds the first run's files is refused on
# every rank with one message naming --run.resume auto and --run.overwrite true, and the first
# run's files stay as they were; --run.overwrite true moves them aside to <run.dir>.<time> and
# starts afresh (no old checkpoint left beside the new ones); --run.resume auto continues the run.
# usage: run_dir_check.sh SCALETRAIN OUTDIR MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
st=$1 out=$2
shift 2
mpirun=("$@")
rm -rf "$out"
mkdir -p "$out"
dir=$out/run
train=("${mpirun[@]}" -np 2 "$st" --train.epochs 1 --train.evaluate false --data.synthetic_samples 1024
       --train.batch 64 --run.dir "$dir")
fail() { echo "FAIL: $*"; exit 1; }

"${train[@]}" --train.max_steps 5 > "$out/first.log" 2>&1 || { cat "$out/first.log"; fail "the first run failed"; }
[ -f "$dir/config.toml" ] || fail "no config.toml in the run directory"
before=$(md5sum "$dir/metrics.jsonl" "$dir/run.json" "$dir/config.toml")

timeout 120 "${train[@]}" --train.max_steps 3 > "$out/second.log" 2>&1
rc=$?
cat "$out/second.log"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a second run into $dir exited $rc, expected a refusal"
msg="run.dir $dir holds another run's files (config.toml, metrics.jsonl, run.json, checkpoints): continue that run with --run.resume auto, or start afresh with --run.overwrite true"
[ "$(grep -cF -- "$msg" "$out/second.log")" -eq 1 ] || fail "expected the refusal once: $msg"
[ "$(md5sum "$dir/metrics.jsonl" "$dir/run.json" "$dir/config.toml")" = "$before" ] || fail "the refused run changed the first run's files"
[ "$(cat "$dir/checkpoints/latest")" = step-5 ] || fail "the refused run changed checkpoints/latest"
echo "OK: refused (exit $rc), the first run's files unchanged"

"${train[@]}" --train.max_steps 3 --run.overwrite true > "$out/overwrite.log" 2>&1 || {
  cat "$out/overwrite.log"; fail "the run with --run.overwrite true failed"; }
aside=$(sed -n "s|^run.overwrite: the earlier run in $dir was moved aside to \(.*\)$|\1|p" "$out/overwrite.log")
[ -n "$aside" ] && [ -d "$aside" ] || { cat "$out/overwrite.log"; fail "no 'moved aside' line naming an existing directory"; }
case $aside in "$dir".2[0-9][0-9][0-9][01][0-9][0-3][0-9]-[0-9][0-9][0-9][0-9][0-9][0-9]*) ;; *) fail "aside name $aside is not $dir.<time>" ;; esac
[ "$(md5sum "$aside/metrics.jsonl" "$aside/run.json" "$aside/config.toml" | sed "s|$aside|$dir|")" = "$before" ] || fail "the old files did not move intact"
[ "$(ls "$dir/checkpoints")" = "$(printf 'latest\nstep-3')" ] || { ls "$dir/checkpoints"; fail "old checkpoints left beside the new run's"; }
echo "OK: --run.overwrite true moved the first run aside to $aside; $dir holds only the new run (step-3)"

"${train[@]}" --train.max_steps 6 --run.resume auto > "$out/resume.log" 2>&1 || {
  cat "$out/resume.log"; fail "--run.resume auto into the run's own directory failed"; }
grep -q "resume: $dir/checkpoints/step-3" "$out/resume.log" || { cat "$out/resume.log"; fail "did not continue from step-3"; }
echo "OK: --run.resume auto continues the run in its directory"
