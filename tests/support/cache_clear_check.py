#!/usr/bin/python3
# run.clear_cache end to end: reads DATA_FILE once so that its pages are cached, measures them with
# util-linux's fincore (independent of scaletrain's mincore), runs the training command on it with
# run.clear_cache, run.mllog and --run.dir RUN_DIR, and checks what the run says it did: run.json's
# cache_clear (one node; the cached bytes before within 2% of fincore's; with --expect cleared at
# most 1% after, with --expect kept, as on tmpfs, nearly all of it still there), the start-up line,
# and MLLOG's cache_clear (true only when cleared). The run trains on a copy of DATA_FILE made in a
# fresh directory inside COPY_DIR, which no other test reads: in /dev/shm (tmpfs) the pages are the
# file itself, so the kernel keeps them.
"""usage: cache_clear_check.py DATA_FILE RUN_DIR COPY_DIR --expect cleared|kept -- command args..."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def cached_bytes(path):
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[0])


def mllog_value(run_dir, key):
    with open(os.path.join(run_dir, "mllog.log"), encoding="utf-8") as f:
        values = [json.loads(line[len(":::MLLOG "):])["value"] for line in f if f'"key":"{key}"' in line]
    if len(values) != 1:
        fail(f"{len(values)} MLLOG {key} lines, expected one")
    return values[0]


def check(a, command):
    with open(a.data_file, "rb") as f:
        while f.read(1 << 24):
            pass
    size = os.path.getsize(a.data_file)
    before = cached_bytes(a.data_file)
    if before < 0.9 * size:
        fail(f"fincore: only {before} of {size} bytes of {a.data_file} cached after reading it")
    shutil.rmtree(a.run_dir, ignore_errors=True)
    cmd = command + ["--data.path", a.data_file, "--run.dir", a.run_dir, "--run.clear_cache", "true",
                     "--run.mllog", "true"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        fail(f"the run exited {r.returncode}")
    with open(os.path.join(a.run_dir, "run.json"), encoding="utf-8") as f:
        cc = json.load(f)["cache_clear"]
    print(f"fincore before the run: {before} bytes; run.json cache_clear: {cc}")
    if cc is None or cc["nodes"] != 1 or cc["file_bytes"] != size:
        fail(f"run.json cache_clear should name one node and the file's {size} bytes")
    if abs(cc["cached_before_bytes"] - before) > 0.02 * size:
        fail(f"the run measured {cc['cached_before_bytes']} bytes cached before the drop, fincore {before}")
    cleared = a.expect == "cleared"
    if cleared and cc["cached_after_bytes"] > 0.01 * size or not cleared and cc["cached_after_bytes"] < 0.9 * before:
        fail(f"{cc['cached_after_bytes']} bytes cached after the drop, expected the file {a.expect}")
    if cc["cleared"] != cleared or mllog_value(a.run_dir, "cache_clear") != cleared:
        fail(f"run.json cleared {cc['cleared']}, MLLOG cache_clear {mllog_value(a.run_dir, 'cache_clear')}, "
             f"expected {cleared}")
    line = [s for s in r.stdout.splitlines() if s.startswith("run.clear_cache: ") and "page cache" in s]
    if len(line) != 1 or (not cleared) != ("MLLOG cache_clear is false" in line[0]):
        fail(f"start-up lines about the cache: {line}")
    print(f"OK: {cc['cached_before_bytes']} bytes cached before the drop, {cc['cached_after_bytes']} after; "
          f"MLLOG cache_clear {cleared}")


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("data_file")
    ap.add_argument("run_dir")
    ap.add_argument("copy_dir")
    ap.add_argument("--expect", choices=["cleared", "kept"], required=True)
    a = ap.parse_args(argv[:split])
    os.makedirs(a.copy_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.copy_dir, prefix="scaletrain-cache-clear-") as tmp:
        a.data_file = shutil.copy(a.data_file, tmp)
        check(a, argv[split + 1:])


if __name__ == "__main__":
    main()
