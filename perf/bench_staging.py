#!/usr/bin/python3
# Stage mode's memory and start-up time, one copy per node (data.stage_copy = node: MPI shared
# memory, each byte of the file read once per job) against one copy per rank (data.stage_copy =
# rank, the loader before node-shared staging), at 1, 2 and 4 ranks on this machine, on one
# synthetic uint8 split (about 1 GB by default). Memory is the proportional set size (Pss of
# /proc/PID/smaps_rollup, shared pages divided among the processes that map them) summed over the
# ranks, sampled during training; RSS would count the shared copy once per rank. Staging time is the
# slowest rank's, from run.json, with the page cache dropped for the file before each run
# (posix_fadvise DONTNEED, "cold") or warm, the best of --repeats runs (the two copies alternate). Anchors in the same run: the split's size, and a plain
# sequential read of the file (cold and warm).
"""usage: /usr/bin/python3 perf/bench_staging.py [--build build/cpu] [--samples 80000] [--ranks 1 2 4] [--repeats 3]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def raw_read_seconds(path):
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass
    return time.perf_counter() - t


def rank_pids(launcher_pid):
    """The scaletrain processes under the launcher."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm == "scaletrain" and int(fields[1]) == launcher_pid:
            pids.append(int(d))
    return pids


def memory_kb(pid, key):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def run(build, data, ranks, copy, work, cold):
    """One training run; returns (staging seconds, summed Pss MB, summed RSS MB) at its peak."""
    if cold:
        drop_cache(data)
    run_dir = os.path.join(work, f"{copy}-{ranks}")
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    cmd += [os.path.join(build, "src/apps/scaletrain"), "--data.path", data, "--data.stage_copy", copy,
            "--model.name", "mlp", "--train.batch", "64", "--train.max_steps", "150", "--train.log_every", "10",
            "--train.evaluate", "false", "--run.threads", "1", "--run.dir", run_dir, "--run.overwrite", "true"]
    log = open(os.path.join(work, "run.log"), "w+")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    pss = rss = 0
    while p.poll() is None:
        time.sleep(0.2)
        log.seek(0)
        if "step 10/" not in log.read():
            continue
        try:
            pids = rank_pids(p.pid)
            if len(pids) == ranks:
                pss = max(pss, sum(memory_kb(q, "Pss") for q in pids))
                rss = max(rss, sum(memory_kb(q, "Rss") for q in pids))
        except OSError:
            pass
    if p.returncode != 0:
        log.seek(0)
        sys.exit(f"run failed: {' '.join(cmd)}\n{log.read()}")
    staging = json.load(open(os.path.join(run_dir, "run.json")))["staging"][0]
    return staging, pss / 1024, rss / 1024


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build/cpu"))
    p.add_argument("--samples", type=int, default=80000, help="training samples of 64x64x3 uint8 (80000: 0.98 GB)")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--repeats", type=int, default=3, help="runs per setting; the best staging time is kept")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="st-staging-", dir="/tmp") as work:
        data = os.path.join(work, "split.h5")
        subprocess.run([os.path.join(a.build, "data-tools/st-synth"), "--shape", "64,64,3", "--train",
                        str(a.samples), "--test", "64", "-o", data], check=True, stdout=subprocess.DEVNULL)
        split_mb = a.samples * (64 * 64 * 3 + 4) / 1e6
        drop_cache(data)
        cold_read = raw_read_seconds(data)
        warm_read = raw_read_seconds(data)
        size_mb = os.path.getsize(data) / 1e6
        print(f"split: {a.samples} samples of 64x64x3 uint8, {split_mb:.0f} MB; file {size_mb:.0f} MB; plain "
              f"sequential read {size_mb / cold_read:.0f} MB/s cold, {size_mb / warm_read:.0f} MB/s warm\n")
        hdr = (f"{'ranks':>5s} {'copy':>5s} {'Pss sum MB':>10s} {'/ split':>8s} {'RSS sum MB':>10s} "
               f"{'staging cold s':>14s} {'warm s':>7s} {'cold / plain read':>17s} {'read from file MB':>17s}")
        print(hdr)
        print("-" * len(hdr))
        for ranks in a.ranks:
            best = {}
            for _ in range(a.repeats):
                for copy in ("rank", "node"):
                    cold, pss, rss = run(a.build, data, ranks, copy, work, True)
                    warm, _, _ = run(a.build, data, ranks, copy, work, False)
                    b = best.setdefault(copy, {"cold": cold, "warm": warm, "pss": pss, "rss": rss})
                    if cold["seconds"] < b["cold"]["seconds"]:
                        b["cold"] = cold
                    if warm["seconds"] < b["warm"]["seconds"]:
                        b["warm"] = warm
            for copy in ("rank", "node"):
                b = best[copy]
                cold, warm, pss, rss = b["cold"], b["warm"], b["pss"], b["rss"]
                print(f"{ranks:5d} {copy:>5s} {pss:10.0f} {pss / split_mb:8.2f} {rss:10.0f} {cold['seconds']:14.2f} "
                      f"{warm['seconds']:7.2f} {cold['seconds'] / cold_read:17.2f} "
                      f"{cold['process_read_bytes'] / 1e6:17.0f}", flush=True)
    print("\nPss: proportional set size summed over the ranks (a shared page counts 1/N in each of N ranks),\n"
          "the largest sample during training of the first run; it includes each rank's own memory (model,\n"
          "buffers, MPI). staging: the slowest rank's seconds from run.json (reads, exchange,\n"
          f"synchronization), best of {a.repeats} runs; cold: the file dropped from the page cache first.\n"
          "read from file: the kernel's rchar during staging, all ranks.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
