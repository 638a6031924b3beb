#!/usr/bin/python3
# Synthetic sweeps for perf/scaling_report.py's GPU telemetry section (tests/jobs.cmake): run directories in the
# jobs/README.md format whose metrics.jsonl lines carry `gpus` as scaletrain writes them, or none.
#   OUT/throttle/   ranks-2 (steady) and ranks-4: rank 2's SM clock falls from 1980 to 1400 MHz with
#                   sw_thermal_slowdown set, rank 3 heats from 62 to 88 C; ranks 0 and 1 steady
#   OUT/normal/     ranks-2 and ranks-4, steady clocks (boost jitter of +-15 MHz), 60-66 C, the application-clocks
#                   reason set throughout and gpu_idle in the warm-up interval: nothing to flag
#   OUT/none/       ranks-2 and ranks-4 without telemetry (a cpu run)
"""usage: make_telemetry_runs.py OUT_DIR"""
import json
import os
import sys

PHASES = {"data_wait": 1, "h2d": 1, "input": 1, "forward": 3, "backward": 2, "allreduce_exposed": 1, "agree": 0,
          "optimizer": 1, "step": 10}
INTERVALS = 8  # of 10 steps each; the first is warm-up
REASON_NAMES = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x20: "sw_thermal_slowdown"}


def gpu(rank, i, world, kind):
    """Rank `rank`'s sample at interval i (0 = warm-up)."""
    clock, temp, reasons = 1980 - 15 * ((i + rank) % 3), 60 + min(i, 6), 0x2
    if i == 0:
        clock, reasons = 1410, 0x1 | 0x2  # warm-up: idle GPU clocks, excluded from the report
    if kind == "throttle" and world == 4 and i >= 4 and rank == 2:
        clock, reasons = 1400, 0x2 | 0x20
    if kind == "throttle" and world == 4 and rank == 3:
        temp = 62 + int(26 * i / (INTERVALS - 1))
    names = [n for bit, n in REASON_NAMES.items() if reasons & bit]
    return {"rank": rank, "sm_clock_mhz": float(clock), "sm_clock_max_mhz": 1980.0, "temperature_c": float(temp),
            "power_w": 300.0 + rank, "memory_used_mib": 20000.0 + 100 * i, "clock_event_reasons": reasons,
            "clock_event_reason_names": names}


def run_dir(path, world, kind):
    os.makedirs(path, exist_ok=True)
    sps = 6000 * world
    with open(os.path.join(path, "metrics.jsonl"), "w", encoding="utf-8") as f:
        for i in range(INTERVALS):
            line = {"version": 3, "epoch": 0, "first_step": 10 * i, "steps": 10, "warmup": i == 0,
                    "samples_per_s": sps, "allreduce_total_ms": 1,
                    "phases": {p: {"mean_ms": ms, "min_ms": ms, "max_ms": ms, "slowest_rank": 0}
                               for p, ms in PHASES.items()}}
            if kind != "none":
                line["gpus"] = [gpu(r, i, world, kind) for r in range(world)]
            f.write(json.dumps(line) + "\n")
    with open(os.path.join(path, "run.json"), "w", encoding="utf-8") as f:
        json.dump({"format": "scaletrain-run", "version": 3, "world_size": world, "global_batch": 64,
                   "per_rank_batch": 64 // world, "hosts": ["fixture"] * world, "device": "fixture",
                   "parameters": 1000, "samples_per_s": sps}, f)


def main(out):
    for kind in ("throttle", "normal", "none"):
        for world in (2, 4):
            run_dir(os.path.join(out, kind, f"ranks-{world}"), world, kind)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
