#!/usr/bin/python3
# The scaling report of a sweep: reads every run directory of a sweep (run.json + metrics.jsonl, format in
# jobs/README.md), writes report.md (table, phase breakdown, the main loss of efficiency of each run, the
# phase-sum check, an alpha-beta prediction at larger rank counts; where the logs carry GPU telemetry, a per-rank
# table that flags throttled and hot GPUs) and PNG plots beside it (without matplotlib: the tables, and a line
# naming the missing module).
"""usage: /usr/bin/python3 perf/scaling_report.py SWEEP_DIR [--kind strong|weak] [--allreduce-json FILE]
                                                  [--cores-per-host N] [--out DIR] [--strict]"""
import argparse
import json
import math
import os
import socket
import sys

# Run-directory format versions this report reads (jobs/README.md, "Run directory format"). Fields it does
# not know are ignored; a newer version is refused, since it may have removed or redefined a field.
FORMAT_VERSIONS = (1, 2, 3, 4)
PHASES = ["data_wait", "h2d", "input", "forward", "backward", "allreduce_exposed", "agree", "optimizer"]
# Phases a metrics line may leave out, counted as 0 ms: `input` (the normalize/augment kernels) has its own
# timer since version 2; before, `h2d` held it. `agree` (the inf/NaN check and the step's agreement across ranks)
# is a field added within version 3; older files held the loss scaler's check in `optimizer`.
OPTIONAL_PHASES = {"input", "agree"}
PHASE_SUM_TOLERANCE = 0.05  # the phases must add up to `step` within 5%
# Phases whose work is proportional to the per-rank batch (the optimizer's is per parameter).
BATCH_PHASES = ["data_wait", "h2d", "input", "forward", "backward"]

# GPU telemetry (metrics.jsonl `gpus`, NVML): when a rank is flagged (perf/README.md, "GPU telemetry", says why
# these values). Over the measured (non-warm-up) intervals of a run:
CLOCK_DROP = 0.15          # its SM clock fell more than 15% below its own early clock (median of its first samples)
CLOCK_EARLY_SAMPLES = 3    # the early clock: the median of this many first measured samples
CLOCK_BEHIND = 0.10        # its median SM clock is more than 10% below the median of all ranks' medians
TEMP_RISE_C = 15.0         # its temperature rose more than 15 C above its first measured sample
TEMP_HOT_C = 85.0          # its temperature reached 85 C
TEMP_ABOVE_PEERS_C = 10.0  # its peak temperature is more than 10 C above the median of all ranks' peaks
# NVML clock event reasons that mean the clock was held down (nvmlClocksEventReasons bits). Not counted: gpu_idle
# (0x1), applications_clocks_setting (0x2, the configured application clock), sync_boost (0x10) and
# display_clock_setting (0x100): configuration or idleness, not throttling.
THROTTLE_REASONS = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal_slowdown",
                    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown"}
GPU_FIELDS = ("sm_clock_mhz", "sm_clock_max_mhz", "temperature_c", "power_w", "memory_used_mib",
              "clock_event_reasons")


class ReportError(Exception):
    pass


def _num(obj, key, where):
    if key not in obj:
        raise ReportError(f"{where}: missing key '{key}'")
    v = obj[key]
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ReportError(f"{where}: key '{key}' is {v!r}, expected a number")
    return float(v)


def check_version(version, where):
    """Refuses a format version this report does not read, naming the file (and line) and the version."""
    if version in FORMAT_VERSIONS and not isinstance(version, bool):
        return
    known = " and ".join(str(v) for v in FORMAT_VERSIONS)
    newer = isinstance(version, int) and not isinstance(version, bool) and version > max(FORMAT_VERSIONS)
    hint = (" (a newer scaletrain wrote it: use the perf/scaling_report.py that came with it)" if newer else "")
    raise ReportError(f"{where}: run-directory format version {version!r}; this report reads versions {known} "
                      f"only{hint}")


def read_metrics(path):
    """The intervals of one metrics.jsonl; every line must parse and carry every phase."""
    intervals = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                raise ReportError(f"{where}: not valid JSON ({e})") from None
            check_version(j.get("version", 1), where)  # version 1 lines carry no version
            if "record" in j:  # version 3: checkpoint and resumed_from records between the intervals
                continue
            phases = j.get("phases")
            if not isinstance(phases, dict):
                raise ReportError(f"{where}: missing key 'phases'")
            iv = {"steps": int(_num(j, "steps", where)), "first_step": int(_num(j, "first_step", where)),
                  "warmup": bool(j.get("warmup", False)), "samples_per_s": _num(j, "samples_per_s", where),
                  "allreduce_total_ms": _num(j, "allreduce_total_ms", where) if "allreduce_total_ms" in j else 0.0,
                  "line": lineno, "phases": {}, "present": set(phases)}
            for p in PHASES + ["step"]:
                if p not in phases and p in OPTIONAL_PHASES:
                    iv["phases"][p] = {"mean_ms": 0.0, "min_ms": 0.0, "max_ms": 0.0, "slowest_rank": -1}
                    continue
                if p not in phases:
                    raise ReportError(f"{where}: missing phase '{p}' in 'phases'")
                ph = phases[p]
                iv["phases"][p] = {k: _num(ph, k, f"{where} phases.{p}") for k in ("mean_ms", "min_ms", "max_ms")}
                iv["phases"][p]["slowest_rank"] = int(ph.get("slowest_rank", -1))
            iv["gpus"] = read_gpus(j, where)
            intervals.append(iv)
    if not intervals:
        raise ReportError(f"{path}: no intervals (is train.log_every larger than the run?)")
    return intervals


def read_gpus(line, where):
    """The per-rank GPU telemetry of one metrics line ({rank: {field: value}}), or None without it."""
    gpus = line.get("gpus")
    if gpus is None:
        return None
    if not isinstance(gpus, list):
        raise ReportError(f"{where}: 'gpus' is {gpus!r}, expected a list of per-rank objects")
    out = {}
    for g in gpus:
        if not isinstance(g, dict) or not isinstance(g.get("rank"), int) or isinstance(g.get("rank"), bool):
            raise ReportError(f"{where}: 'gpus' holds {g!r}, expected an object with an integer 'rank'")
        out[g["rank"]] = {k: float(g[k]) for k in GPU_FIELDS
                          if isinstance(g.get(k), (int, float)) and not isinstance(g.get(k), bool)}
    return out


def phase_sum_error(iv):
    """Relative difference between the phases' sum and the step time of one interval."""
    step = iv["phases"]["step"]["mean_ms"]
    total = sum(iv["phases"][p]["mean_ms"] for p in PHASES)
    return abs(total - step) / step if step > 0 else 0.0


def read_run(run_dir):
    run_json = os.path.join(run_dir, "run.json")
    try:
        with open(run_json, encoding="utf-8") as f:
            info = json.load(f)
    except json.JSONDecodeError as e:
        raise ReportError(f"{run_json}: not valid JSON ({e})") from None
    if info.get("format") != "scaletrain-run":
        raise ReportError(f"{run_json}: 'format' is {info.get('format')!r}, expected 'scaletrain-run'")
    if "version" not in info:
        raise ReportError(f"{run_json}: missing key 'version'")
    check_version(info["version"], run_json)
    intervals = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    measured = [iv for iv in intervals if not iv["warmup"]] or intervals
    steps = sum(iv["steps"] for iv in measured)
    # Per-step phase times averaged over the measured intervals, weighted by their steps.
    ph = {p: {k: sum(iv["phases"][p][k] * iv["steps"] for iv in measured) / steps
              for k in ("mean_ms", "min_ms", "max_ms")} for p in PHASES + ["step"]}
    slowest = {}
    for iv in measured:
        r = iv["phases"]["step"]["slowest_rank"]
        slowest[r] = slowest.get(r, 0) + 1
    world = int(_num(info, "world_size", run_json))
    hosts = info.get("hosts") or []
    per_host = {}
    for h in hosts:
        per_host[h] = per_host.get(h, 0) + 1
    return {
        "dir": run_dir, "name": os.path.basename(os.path.normpath(run_dir)), "world": world,
        "global_batch": int(_num(info, "global_batch", run_json)),
        "per_rank_batch": int(_num(info, "per_rank_batch", run_json)),
        "samples_per_s": _num(info, "samples_per_s", run_json),
        "parameters": int(info.get("parameters", 0)), "hosts": hosts,
        "ranks_per_host": max(per_host.values()) if per_host else world,
        "host_count": len(per_host) if per_host else 1,
        "device": info.get("device", ""), "phases": ph, "intervals": intervals, "measured_steps": steps,
        "allreduce_total_ms": sum(iv["allreduce_total_ms"] * iv["steps"] for iv in measured) / steps,
        "phase_sum_max_error": max(phase_sum_error(iv) for iv in intervals),
        "phase_sum_bad": [iv["line"] for iv in intervals if phase_sum_error(iv) > PHASE_SUM_TOLERANCE],
        "slowest_rank_counts": slowest,
        "optional_phases": {p for p in OPTIONAL_PHASES if any(p in iv["present"] for iv in intervals)},
        "gpu": gpu_summary(measured, hosts),
    }


# ---------------------------------------------------------------- GPU telemetry


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2) if n else None


def gpu_summary(intervals, hosts):
    """Per rank, over the given intervals: SM clock (early, lowest, median, the board's maximum), temperature
    (first, peak), power and memory, and how many intervals had each throttle reason; then the flags. None when no
    interval carries telemetry."""
    if not any(iv["gpus"] for iv in intervals):
        return None
    ranks = sorted({r for iv in intervals if iv["gpus"] for r in iv["gpus"]})
    stats = {}
    for r in ranks:
        samples = [iv["gpus"][r] for iv in intervals if iv["gpus"] and r in iv["gpus"]]
        series = {k: [g[k] for g in samples if k in g] for k in GPU_FIELDS}
        clocks, temps = series["sm_clock_mhz"], series["temperature_c"]
        reasons = [int(m) for m in series["clock_event_reasons"]]
        stats[r] = {
            "host": hosts[r] if r < len(hosts) else "",
            "samples": len(samples),
            "clock_early": _median(clocks[:CLOCK_EARLY_SAMPLES]), "clock_min": min(clocks) if clocks else None,
            "clock_median": _median(clocks), "clock_max_board": max(series["sm_clock_max_mhz"], default=None),
            "temp_first": temps[0] if temps else None, "temp_max": max(temps) if temps else None,
            "power_mean": sum(series["power_w"]) / len(series["power_w"]) if series["power_w"] else None,
            "memory_max": max(series["memory_used_mib"], default=None),
            "reason_samples": len(reasons),
            "throttle_counts": {name: sum(1 for m in reasons if m & bit) for bit, name in THROTTLE_REASONS.items()
                                if any(m & bit for m in reasons)},
            "flags": [],
        }
    medians = [s["clock_median"] for s in stats.values() if s["clock_median"] is not None]
    peaks = [s["temp_max"] for s in stats.values() if s["temp_max"] is not None]
    peer_clock = _median(medians) if len(medians) >= 2 else None
    peer_peak = _median(peaks) if len(peaks) >= 2 else None
    for r, s in stats.items():
        f = s["flags"]
        if s["clock_early"] and s["clock_min"] is not None and s["clock_min"] < (1 - CLOCK_DROP) * s["clock_early"]:
            f.append(f"SM clock fell to {s['clock_min']:.0f} MHz from {s['clock_early']:.0f} early "
                     f"(-{100 * (1 - s['clock_min'] / s['clock_early']):.0f}%)")
        if peer_clock and s["clock_median"] is not None and s["clock_median"] < (1 - CLOCK_BEHIND) * peer_clock:
            f.append(f"SM clock {s['clock_median']:.0f} MHz (median), {100 * (1 - s['clock_median'] / peer_clock):.0f}% "
                     f"below the ranks' median {peer_clock:.0f}")
        for name, n in s["throttle_counts"].items():
            f.append(f"{name} in {n} of {s['reason_samples']} intervals")
        if s["temp_max"] is not None and s["temp_max"] >= TEMP_HOT_C:
            f.append(f"temperature reached {s['temp_max']:.0f} C")
        if s["temp_first"] is not None and s["temp_max"] - s["temp_first"] > TEMP_RISE_C:
            f.append(f"temperature rose {s['temp_max'] - s['temp_first']:.0f} C "
                     f"({s['temp_first']:.0f} -> {s['temp_max']:.0f} C)")
        if peer_peak is not None and s["temp_max"] is not None and s["temp_max"] - peer_peak > TEMP_ABOVE_PEERS_C:
            f.append(f"peak temperature {s['temp_max'] - peer_peak:.0f} C above the ranks' median peak "
                     f"{peer_peak:.0f} C")
    return {"ranks": stats, "peer_clock": peer_clock, "peer_peak": peer_peak}


def gpu_flagged(run):
    """The ranks of a run that the GPU telemetry flags, in rank order."""
    g = run.get("gpu")
    return [r for r, s in sorted(g["ranks"].items()) if s["flags"]] if g else []


def gpu_markdown(runs):
    """The report's GPU telemetry section; [] when no run carries telemetry (the report then says nothing)."""
    with_gpu = [r for r in runs if r.get("gpu")]
    if not with_gpu:
        return []
    out = ["", "## GPU telemetry", ""]
    out.append(f"Per rank over the measured intervals (NVML, sampled once per logging interval). A rank is flagged when "
               f"its SM clock falls more than {100 * CLOCK_DROP:.0f}% below its own early clock (median of its first "
               f"{CLOCK_EARLY_SAMPLES} samples) or its median clock is more than {100 * CLOCK_BEHIND:.0f}% below the "
               f"ranks' median; when a throttle reason is set ({', '.join(THROTTLE_REASONS.values())}; not idle, "
               f"application clocks, sync boost or display clock); or when its temperature reaches "
               f"{TEMP_HOT_C:.0f} C, rises more than {TEMP_RISE_C:.0f} C over the run, or peaks more than "
               f"{TEMP_ABOVE_PEERS_C:.0f} C above the ranks' median peak. In synchronous data parallelism the "
               "slowest GPU sets every step's time.")
    for run in with_gpu:
        g = run["gpu"]
        out += ["", f"### {run['world']} ranks ({run['name']})", ""]
        out.append("| rank | host | SM clock MHz early / min / median (max) | throttle reasons (intervals) "
                   "| temperature C first / peak | power W mean | memory MiB peak | flagged |")
        out.append("|---:|---|---|---|---|---:|---:|---|")

        def num(v, fmt="{:.0f}"):
            return fmt.format(v) if v is not None else "-"

        for r, s in sorted(g["ranks"].items()):
            reasons = ", ".join(f"{k} ({n}/{s['reason_samples']})" for k, n in s["throttle_counts"].items()) or (
                "none" if s["reason_samples"] else "-")
            out.append(f"| {r} | {s['host']} | {num(s['clock_early'])} / {num(s['clock_min'])} / "
                       f"{num(s['clock_median'])} ({num(s['clock_max_board'])}) | {reasons} | "
                       f"{num(s['temp_first'])} / {num(s['temp_max'])} | {num(s['power_mean'], '{:.1f}')} | "
                       f"{num(s['memory_max'])} | {'**yes**' if s['flags'] else 'no'} |")
        out.append("")
        flagged = gpu_flagged(run)
        if not flagged:
            out.append("No rank throttled or ran hot.")
        for r in flagged:
            out.append(f"- **rank {r}** ({g['ranks'][r]['host']}): " + "; ".join(g["ranks"][r]["flags"]) + ".")
    return out


def find_runs(sweep_dir):
    if not os.path.isdir(sweep_dir):
        raise ReportError(f"sweep directory {sweep_dir} does not exist")
    runs, skipped = [], []
    for name in sorted(os.listdir(sweep_dir)):
        d = os.path.join(sweep_dir, name)
        if not os.path.isdir(d):
            continue
        if os.path.isfile(os.path.join(d, "run.json")):
            runs.append(read_run(d))
        elif os.path.isfile(os.path.join(d, "metrics.jsonl")):
            skipped.append(name)  # a run that did not finish (no run.json)
    if not runs:
        raise ReportError(f"{sweep_dir}: no run directories with a run.json in it")
    runs.sort(key=lambda r: (r["world"], r["global_batch"]))
    return runs, skipped


def sweep_kind(sweep_dir, runs, forced):
    if forced:
        return forced
    meta = os.path.join(sweep_dir, "sweep.json")
    if os.path.isfile(meta):
        with open(meta, encoding="utf-8") as f:
            kind = json.load(f).get("kind")
        if kind in ("strong", "weak"):
            return kind
        raise ReportError(f"{meta}: 'kind' is {kind!r}, expected 'strong' or 'weak'")
    if len({r["global_batch"] for r in runs}) == 1:
        return "strong"
    if len({r["per_rank_batch"] for r in runs}) == 1:
        return "weak"
    raise ReportError(f"{sweep_dir}: neither the global nor the per-rank batch is fixed across runs; pass --kind")


def sweep_meta(sweep_dir):
    meta = os.path.join(sweep_dir, "sweep.json")
    if os.path.isfile(meta):
        with open(meta, encoding="utf-8") as f:
            return json.load(f)
    return {}


def cores_for(run, cores_per_host):
    """Cores of the run's hosts: given, recorded by the sweep script, or this machine's when it ran here."""
    if cores_per_host:
        return cores_per_host
    if run["hosts"] and set(run["hosts"]) == {socket.gethostname()}:
        return os.cpu_count()
    return None


def shown_phases(runs):
    """The phases of the table and plots: an optional phase only where some run's metrics have it."""
    return [p for p in PHASES if p not in OPTIONAL_PHASES or any(p in r["optional_phases"] for r in runs)]


def compute_ms(ph, key="mean_ms"):
    return sum(ph[p][key] for p in ("h2d", "input", "forward", "backward", "optimizer"))


def analyse(runs, kind, cores_per_host):
    """Speedup, efficiency and the main loss of efficiency of each run against the smallest one."""
    base = runs[0]
    b_ph = base["phases"]
    for r in runs:
        ratio = r["world"] / base["world"]
        r["speedup"] = r["samples_per_s"] / base["samples_per_s"]
        if kind == "strong":
            r["efficiency"] = r["speedup"] / ratio
        else:  # weak: throughput per rank against the smallest run's
            r["efficiency"] = (r["samples_per_s"] / r["world"]) / (base["samples_per_s"] / base["world"])
        ph = r["phases"]
        s = r["per_rank_batch"] / base["per_rank_batch"]  # work per rank relative to the baseline
        step = ph["step"]["mean_ms"]
        ideal = sum(b_ph[p]["mean_ms"] * s for p in BATCH_PHASES) + b_ph["optimizer"]["mean_ms"]
        imbalance = max(ph["step"]["max_ms"] - ph["step"]["mean_ms"], compute_ms(ph, "max_ms") - compute_ms(ph))
        comm_excess = ph["allreduce_exposed"]["mean_ms"] - b_ph["allreduce_exposed"]["mean_ms"] * s
        losses = {
            "exposed communication": max(comm_excess - imbalance, 0.0),
            "imbalance between ranks": min(imbalance, max(comm_excess, 0.0)) if comm_excess > 0 else 0.0,
            "data wait": ph["data_wait"]["mean_ms"] - b_ph["data_wait"]["mean_ms"] * s,
            "compute slowdown": compute_ms(ph) - (compute_ms(b_ph) - b_ph["optimizer"]["mean_ms"]) * s
            - b_ph["optimizer"]["mean_ms"],
        }
        r["ideal_step_ms"] = ideal
        r["losses"] = losses
        cores = cores_for(r, cores_per_host)
        r["cores_per_host"] = cores
        r["oversubscribed"] = cores is not None and r["ranks_per_host"] > cores
        if r is base and r["world"] == 1:
            r["main_loss"] = "baseline"
            continue
        # What the data shows without a baseline: shares of this run's own step time.
        own = {"exposed communication": ph["allreduce_exposed"]["mean_ms"], "data wait": ph["data_wait"]["mean_ms"],
               "imbalance between ranks": imbalance}
        lost = step - ideal if r is not base else 0.0
        if r is base:
            name, ms = max(own.items(), key=lambda kv: kv[1])
            r["main_loss"] = f"baseline; largest overhead: {name} {ms:.2f} ms/step ({100 * ms / step:.0f}% of step)"
            continue
        name, ms = max(losses.items(), key=lambda kv: kv[1])
        if lost <= 0.02 * step or ms <= 0:
            r["main_loss"] = "none measurable (step time at or below ideal)"
            continue
        text = f"{name}: +{ms:.2f} ms/step of {lost:.2f} ms/step lost"
        if name == "compute slowdown":
            if r["oversubscribed"]:
                text += f" ({r['ranks_per_host']} ranks on {cores} cores: oversubscribed)"
            else:
                text += " (per-sample compute slower than in the baseline: smaller per-rank batch or shared resources)"
        elif name == "imbalance between ranks":
            worst = max(r["slowest_rank_counts"].items(), key=lambda kv: kv[1])[0]
            text += f" (rank {worst} slowest most often; step max {ph['step']['max_ms']:.2f} vs mean {step:.2f} ms)"
        elif name == "exposed communication":
            text += f" (all-reduce {r['allreduce_total_ms']:.2f} ms/step, {ph['allreduce_exposed']['mean_ms']:.2f} exposed)"
        r["main_loss"] = text
    for r in runs:
        flagged = gpu_flagged(r)
        if flagged:
            r["main_loss"] += (f"; GPU telemetry flags rank{'s' if len(flagged) > 1 else ''} "
                               f"{', '.join(str(k) for k in flagged)} (throttled or hot, see GPU telemetry)")
    return runs


# ---------------------------------------------------------------- alpha-beta model


def read_allreduce_model(path):
    """(alpha_s, beta_s_per_byte, ranks) of the all-reduce benchmark's JSON; fitted here if it has no fit."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    ranks = int(_num(doc, "ranks", path))
    fit = doc.get("fit")
    if fit:
        return _num(fit, "alpha_us", f"{path} fit") * 1e-6, _num(fit, "beta_s_per_byte", f"{path} fit"), ranks
    rows = doc.get("rows") or []
    if len(rows) < 2:
        raise ReportError(f"{path}: needs a 'fit' or at least two 'rows' to fit the alpha-beta model")
    # t = alpha + bytes * beta, least squares on relative error (as the benchmark does).
    a11 = a12 = a22 = b1 = b2 = 0.0
    for row in rows:
        t, x = _num(row, "time_us", path) * 1e-6, _num(row, "bytes", path)
        w = 1.0 / (t * t)
        a11, a12, a22, b1, b2 = a11 + w, a12 + w * x, a22 + w * x * x, b1 + w * t, b2 + w * x * t
    det = a11 * a22 - a12 * a12
    if det == 0:
        raise ReportError(f"{path}: the rows do not determine an alpha-beta fit")
    return (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det, ranks


def ring_allreduce_s(n, nbytes, alpha_link, beta_link):
    """Ring all-reduce: 2(n-1) messages of bytes/n each way round the ring."""
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * alpha_link + 2 * (n - 1) / n * nbytes * beta_link


def predictions(runs, kind, model, rank_counts):
    alpha, beta, bench_ranks = model
    if bench_ranks < 2:
        raise ReportError("the all-reduce benchmark ran on 1 rank: it measures no communication (run it on >= 2 ranks)")
    # The fit is t(bytes) at bench_ranks; the ring model turns it into per-message latency and per-byte cost.
    alpha_link = alpha / (2 * (bench_ranks - 1))
    beta_link = beta / (2 * (bench_ranks - 1) / bench_ranks)
    base = runs[0]
    b_ph = base["phases"]
    grad_bytes = 4 * base["parameters"]
    batch_ms = sum(b_ph[p]["mean_ms"] for p in BATCH_PHASES)
    opt_ms = b_ph["optimizer"]["mean_ms"]
    # The baseline without communication, from the same timed phases as `compute` below (the step's untimed
    # loop overhead left out of both), so that the model gives 100% at the baseline when it communicates nothing.
    t0_ms = batch_ms + opt_ms
    measured = {r["world"]: r["efficiency"] for r in runs}
    rows = []
    for n in sorted(set(rank_counts) | set(measured)):
        if n < base["world"]:
            continue
        per_rank = base["per_rank_batch"] * base["world"] / n if kind == "strong" else base["per_rank_batch"]
        if per_rank < 1:
            rows.append({"ranks": n, "per_rank_batch": per_rank, "too_small": True})
            continue
        s = per_rank / base["per_rank_batch"]
        compute = batch_ms * s + opt_ms
        ar = 1e3 * ring_allreduce_s(n, grad_bytes, alpha_link, beta_link)
        bwd = b_ph["backward"]["mean_ms"] * s
        ideal = t0_ms * s
        rows.append({"ranks": n, "per_rank_batch": per_rank, "too_small": False, "compute_ms": compute,
                     "allreduce_ms": ar, "eff_no_overlap": ideal / (compute + ar),
                     "eff_overlap": ideal / (compute + max(ar - bwd, 0.0)), "measured": measured.get(n)})
    return {"alpha_us": alpha * 1e6, "beta_s_per_byte": beta, "bench_ranks": bench_ranks, "grad_bytes": grad_bytes,
            "alpha_link_us": alpha_link * 1e6, "beta_link": beta_link, "rows": rows}


# ---------------------------------------------------------------- output


def markdown(runs, kind, skipped, pred, plots, meta, plot_note=None):
    base = runs[0]
    out = [f"# {kind.capitalize()}-scaling report", ""]
    desc = ("fixed global batch of %d" % base["global_batch"] if kind == "strong"
            else "fixed per-rank batch of %d" % base["per_rank_batch"])
    out.append(f"{len(runs)} runs, {desc}; speedup and efficiency against the smallest run ({base['world']} "
               f"rank{'s' if base['world'] > 1 else ''}). Warm-up intervals are excluded. Device: {base['device']}.")
    if meta:
        out.append("")
        out.append("Sweep: " + ", ".join(f"{k} = {v}" for k, v in meta.items()))
    out.append("")
    eff_def = ("speedup / (ranks / baseline ranks)" if kind == "strong"
               else "samples/s per rank / the baseline's samples/s per rank")
    out.append(f"Efficiency = {eff_def}. Phases in ms per step (mean over ranks) and share of the step.")
    out.append("")
    shown = shown_phases(runs)
    head = ["ranks", "global batch", "per-rank batch", "samples/s", "speedup", "efficiency", "step ms"] + shown
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join(["---:"] * len(head)) + "|")
    for r in runs:
        ph = r["phases"]
        step = ph["step"]["mean_ms"]
        cells = [str(r["world"]), str(r["global_batch"]), str(r["per_rank_batch"]), f"{r['samples_per_s']:.0f}",
                 f"{r['speedup']:.2f}", f"{100 * r['efficiency']:.0f}%", f"{step:.2f}"]
        cells += [f"{ph[p]['mean_ms']:.2f} ({100 * ph[p]['mean_ms'] / step:.0f}%)" for p in shown]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Main loss of efficiency", ""]
    out.append("Against the baseline scaled to each run's per-rank batch: exposed communication (all-reduce not "
               "hidden behind backward), data wait, imbalance between ranks (slowest vs mean rank), compute slowdown "
               "(per-sample compute slower than in the baseline, e.g. more ranks than cores).")
    out.append("")
    for r in runs:
        ph = r["phases"]
        out.append(f"- **{r['world']} ranks** ({r['name']}): {r['main_loss']}. Step {ph['step']['mean_ms']:.2f} ms "
                   f"(ideal {r['ideal_step_ms']:.2f}); ranks' step time min/mean/max "
                   f"{ph['step']['min_ms']:.2f}/{ph['step']['mean_ms']:.2f}/{ph['step']['max_ms']:.2f} ms; "
                   f"{r['ranks_per_host']} ranks per host on {r['host_count']} host(s)"
                   + (f" with {r['cores_per_host']} cores" if r["cores_per_host"] else "") + ".")
    out += gpu_markdown(runs)
    out += ["", "## Phase-sum check", ""]
    bad = [r for r in runs if r["phase_sum_bad"]]
    for r in runs:
        n = len(r["intervals"])
        status = "OK" if not r["phase_sum_bad"] else f"FAILED on lines {r['phase_sum_bad']}"
        out.append(f"- {r['name']}: the phases add up to `step` within {100 * r['phase_sum_max_error']:.2f}% "
                   f"(worst of {n} intervals; tolerance {100 * PHASE_SUM_TOLERANCE:.0f}%): {status}")
    out.append("")
    out.append("All runs: phases add up to the step time within 5%." if not bad
               else "Some intervals' phases do NOT add up to the step time within 5%: the timers miss part of the step.")
    if skipped:
        out += ["", f"Skipped (no run.json, run did not finish): {', '.join(skipped)}"]
    if pred:
        out += ["", "## Alpha-beta model at larger rank counts", ""]
        out.append(f"All-reduce fit from the benchmark at {pred['bench_ranks']} ranks: alpha = {pred['alpha_us']:.2f} us, "
                   f"beta = {pred['beta_s_per_byte'] * 1e9:.4f} ns/B; as a ring: {pred['alpha_link_us']:.2f} us per "
                   f"message, {pred['beta_link'] * 1e9:.4f} ns/B per link. Ring all-reduce of the "
                   f"{pred['grad_bytes'] / 1e6:.2f} MB of fp32 gradients: t(n) = 2(n-1) alpha + 2(n-1)/n bytes beta. "
                   "Compute per step from the baseline's measured phases, scaled with the per-rank batch. "
                   "Efficiency without overlap, and with the all-reduce hidden behind backward as far as it lasts.")
        out.append("")
        out.append("| ranks | per-rank batch | compute ms | all-reduce ms (model) | predicted eff. (no overlap) "
                   "| predicted eff. (overlap) | measured eff. |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|")
        for p in pred["rows"]:
            if p["too_small"]:
                out.append(f"| {p['ranks']} | {p['per_rank_batch']:.2f} | - | - | per-rank batch < 1 | - | - |")
                continue
            m = f"{100 * p['measured']:.0f}%" if p["measured"] is not None else ""
            out.append(f"| {p['ranks']} | {p['per_rank_batch']:.4g} | {p['compute_ms']:.2f} | {p['allreduce_ms']:.3f} "
                       f"| {100 * p['eff_no_overlap']:.0f}% | {100 * p['eff_overlap']:.0f}% | {m} |")
    out += ["", "## Plots", ""]
    if plot_note:
        out.append(plot_note)
    for title, fname in plots:
        out.append(f"![{title}]({fname})")
    out.append("")
    return "\n".join(out)


def import_pyplot():
    """(matplotlib.pyplot on the Agg backend, None), or (None, a sentence naming the module that is missing):
    without matplotlib the report still has its tables, and says why it has no plots."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        missing = e.name or "matplotlib"
        what = missing if missing == "matplotlib" else f"{missing} (needed by matplotlib)"
        return None, (f"Plots not drawn: the Python module {what} is not installed for {sys.executable} "
                      "(apt-get install python3-matplotlib, or pip install matplotlib; then re-run this report).")
    return plt, None


def plot(plt, runs, kind, pred, out_dir):
    ranks = [r["world"] for r in runs]
    base = runs[0]
    files = []

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ranks, [r["samples_per_s"] for r in runs], "o-", label="measured")
    ax.plot(ranks, [base["samples_per_s"] * n / base["world"] for n in ranks], "k--", label="ideal (linear)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks, [str(n) for n in ranks])
    ax.set_xlabel("ranks")
    ax.set_ylabel("samples/s")
    ax.set_title(f"{kind}-scaling throughput")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "throughput.png"), dpi=100)
    plt.close(fig)
    files.append(("throughput against ranks", "throughput.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ranks, [100 * r["efficiency"] for r in runs], "o-", label="measured")
    xs = list(ranks)
    if pred:
        prow = [p for p in pred["rows"] if not p["too_small"]]
        px = [p["ranks"] for p in prow]
        ax.plot(px, [100 * p["eff_no_overlap"] for p in prow], "s:", label="alpha-beta model, no overlap")
        ax.plot(px, [100 * p["eff_overlap"] for p in prow], "^:", label="alpha-beta model, overlap with backward")
        xs = sorted(set(xs) | set(px))
    ax.axhline(100, color="k", linestyle="--", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(n) for n in xs])
    # Room for superlinear runs (a baseline slowed by cache or contention effects) instead of clipping them.
    top = max([100 * r["efficiency"] for r in runs] + [100.0])
    ax.set_ylim(0, max(110.0, 1.08 * top))
    ax.set_xlabel("ranks")
    ax.set_ylabel("efficiency (%)")
    ax.set_title(f"{kind}-scaling efficiency")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "efficiency.png"), dpi=100)
    plt.close(fig)
    files.append(("efficiency against ranks", "efficiency.png"))

    fig, ax = plt.subplots(figsize=(7.5, 4))
    labels = [f"{r['world']} r\nB={r['per_rank_batch']}" for r in runs]
    bottom = [0.0] * len(runs)
    for p in shown_phases(runs):
        vals = [r["phases"][p]["mean_ms"] for r in runs]
        ax.bar(labels, vals, bottom=bottom, label=p)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.plot(labels, [r["phases"]["step"]["mean_ms"] for r in runs], "k_", markersize=30, mew=2, label="step")
    ax.set_ylabel("ms per step (mean over ranks)")
    ax.set_title("phase breakdown per run")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), markerscale=0.4)  # beside the bars
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "phases.png"), dpi=100)
    plt.close(fig)
    files.append(("stacked phase breakdown per run", "phases.png"))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    x = list(range(len(runs)))
    mean = [r["phases"]["step"]["mean_ms"] for r in runs]
    lo = [m - r["phases"]["step"]["min_ms"] for m, r in zip(mean, runs)]
    hi = [r["phases"]["step"]["max_ms"] - m for m, r in zip(mean, runs)]
    a1.errorbar(x, mean, yerr=[lo, hi], fmt="o", capsize=6, label="mean (bars: fastest..slowest rank)")
    cmax = [compute_ms(r["phases"], "max_ms") for r in runs]
    cmin = [compute_ms(r["phases"], "min_ms") for r in runs]
    a1.vlines([i + 0.15 for i in x], cmin, cmax, colors="tab:red", lw=4, label="compute min..max over ranks")
    for i, r in enumerate(runs):
        worst = max(r["slowest_rank_counts"].items(), key=lambda kv: kv[1])[0]
        a1.annotate(f"slowest: r{worst}", (i, r["phases"]["step"]["max_ms"]), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=8)
    a1.set_xticks(x, [f"{r['world']} ranks" for r in runs])
    a1.set_ylabel("ms per step")
    a1.set_title("per-rank step time (non-warm-up)")
    a1.legend(fontsize=8)
    a1.grid(True, alpha=0.3)
    for r in runs:
        ivs = r["intervals"]
        xs = [iv["first_step"] for iv in ivs]
        line, = a2.plot(xs, [iv["phases"]["step"]["mean_ms"] for iv in ivs], "-", label=f"{r['world']} ranks")
        a2.fill_between(xs, [iv["phases"]["step"]["min_ms"] for iv in ivs],
                        [iv["phases"]["step"]["max_ms"] for iv in ivs], color=line.get_color(), alpha=0.25)
    a2.set_xlabel("first step of interval")
    a2.set_ylabel("ms per step (band: min..max over ranks)")
    a2.set_title("step time over the run")
    a2.legend(fontsize=8)
    a2.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "rank_step_time.png"), dpi=100)
    plt.close(fig)
    files.append(("per-rank step time: stragglers", "rank_step_time.png"))
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(description="Scaling report of a sweep directory (one run directory per run).")
    ap.add_argument("sweep_dir")
    ap.add_argument("--kind", choices=["strong", "weak"], help="default: sweep.json, else inferred from the batches")
    ap.add_argument("--allreduce-json", help="scaletrain-bench-allreduce --json output: predict larger rank counts")
    ap.add_argument("--predict-ranks", default="8,16,32,64,128,256,512,1024", help="rank counts for the model")
    ap.add_argument("--cores-per-host", type=int, help="cores per host (default: sweep.json, or this machine's)")
    ap.add_argument("--out", help="output directory (default: the sweep directory)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if some interval's phases miss the step by > 5%%")
    a = ap.parse_args(argv)
    try:
        runs, skipped = find_runs(a.sweep_dir)
        meta = sweep_meta(a.sweep_dir)
        kind = sweep_kind(a.sweep_dir, runs, a.kind)
        cores = a.cores_per_host or meta.get("cores_per_host")
        analyse(runs, kind, int(cores) if cores else None)
        pred = None
        if a.allreduce_json:
            counts = [int(c) for c in a.predict_ranks.split(",") if c.strip()]
            pred = predictions(runs, kind, read_allreduce_model(a.allreduce_json), counts)
        out_dir = a.out or a.sweep_dir
        os.makedirs(out_dir, exist_ok=True)
        plt, plot_note = import_pyplot()
        plots = plot(plt, runs, kind, pred, out_dir) if plt else []
        text = markdown(runs, kind, skipped, pred, plots, meta, plot_note)
    except (ReportError, OSError) as e:
        print(f"scaling_report: error: {e}", file=sys.stderr)
        return 2
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    if plot_note:
        print(f"scaling_report: warning: {plot_note}", file=sys.stderr)
    if a.strict and any(r["phase_sum_bad"] for r in runs):
        print("scaling_report: phases do not add up to the step time within 5% (see report.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
