#!/usr/bin/python3
# Checks the run directories of a scaling sweep (jobs/slurm/*.sbatch, jobs/local/sweep.sh) independently of
# perf/scaling_report.py: run.json and every metrics.jsonl line carry the format version this build writes,
# run.json parses with the expected world size, the batch is the sweep's (global batch constant for strong,
# per-rank batch constant for weak), every metrics.jsonl line parses and in every non-warm-up interval the
# phases add up to `step` within 5%; with --report also report.md (a table row per rank count) and the PNG
# plots; with --bound that run.json's binding check found every rank on cores of its own.
"""usage: check_run_dirs.py SWEEP_DIR --kind strong|weak --ranks 1,2,4 [--batch N] [--phase-check-ranks 1,2]
                         [--tolerance 0.05] [--report] [--bound]"""
import argparse
import json
import os
import sys

FORMAT_VERSION = 4  # the run-directory format version scaletrain writes (jobs/README.md)
PHASES = ["data_wait", "h2d", "forward", "backward", "allreduce_exposed", "optimizer"]
OPTIONAL_PHASES = ["input", "agree"]  # counted when a line has them (input: split from h2d; agree: the step's agreement)
PLOTS = ["throughput.png", "efficiency.png", "phases.png", "rank_step_time.png"]


def bucket_problems(info, ranks):
    """What is wrong with run.json's `buckets` (comm.bucket_mb: the size in use; for auto the probe,
    its alpha-beta fit and the candidates' predicted exposed time)."""
    b = info.get("buckets")
    if not isinstance(b, dict):
        return [f"missing or not an object: {b!r}"]
    out = []
    setting = (info.get("config") or {}).get("comm", {}).get("bucket_mb")
    if b.get("setting") != ("auto" if setting == "auto" else "fixed"):
        out.append(f"setting {b.get('setting')!r} does not match config comm.bucket_mb {setting!r}")
    if not (isinstance(b.get("buckets"), int) and b["buckets"] >= 1):
        out.append(f"buckets {b.get('buckets')!r} is not a positive count")
    if not (isinstance(b.get("bucket_mb"), (int, float)) and b["bucket_mb"] > 0):
        out.append(f"bucket_mb {b.get('bucket_mb')!r} is not positive")
    if b.get("setting") != "auto":
        return out
    if ranks == 1:
        if b.get("buckets") != 1 or not b.get("note"):
            out.append(f"auto on 1 rank must be one bucket with a note, got {b.get('buckets')!r} / {b.get('note')!r}")
        return out
    probe = b.get("probe") or []
    if len(probe) < 2 or any(not (isinstance(p.get("bytes"), int) and p["bytes"] > 0 and p.get("seconds", 0) > 0)
                             for p in probe):
        out.append(f"probe {probe!r} is not two or more sizes with positive bytes and seconds")
    fit = b.get("fit") or {}
    if not all(isinstance(fit.get(k), (int, float)) for k in ("alpha_us", "beta_s_per_byte", "rms_relative_error")):
        out.append(f"fit {fit!r} lacks alpha_us, beta_s_per_byte, rms_relative_error")
    if not (isinstance(b.get("probe_seconds"), (int, float)) and b["probe_seconds"] > 0):
        out.append(f"probe_seconds {b.get('probe_seconds')!r} is not positive")
    if b.get("chosen_after_step") is None:
        return out  # the run ended before the choice: one bucket
    cands = b.get("candidates") or []
    if not cands or any(c.get("predicted_exposed_ms", -1) < 0 for c in cands):
        out.append(f"candidates {cands!r} are missing or predict a negative time")
    chosen = [c for c in cands if c.get("one_bucket") == b.get("one_bucket") and
              (b.get("one_bucket") or c.get("bucket_mb") == b.get("bucket_mb"))]
    if len(chosen) != 1:
        out.append(f"the size in use ({b.get('bucket_mb')} MB, one bucket {b.get('one_bucket')}) is not one candidate")
    elif chosen[0]["predicted_exposed_ms"] > min(c["predicted_exposed_ms"] for c in cands) * 1.02 + 0.005:
        out.append(f"the size in use predicts {chosen[0]['predicted_exposed_ms']} ms, not the least of the candidates")
    elif chosen[0].get("buckets") != b.get("buckets"):
        out.append(f"{b.get('buckets')} buckets in use, the candidate predicted {chosen[0].get('buckets')}")
    return out


def check_run(d, ranks, tolerance, errors, phase_check=True):
    """Returns (global_batch, per_rank_batch) of the run directory d, appending problems to errors."""
    def err(msg):
        errors.append(f"{d}: {msg}")

    try:
        with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        err(f"run.json: {e}")
        return None
    if info.get("format") != "scaletrain-run" or info.get("version") != FORMAT_VERSION:
        err(f"run.json: format/version {info.get('format')!r}/{info.get('version')!r}, "
            f"expected 'scaletrain-run'/{FORMAT_VERSION}")
    world, gb, prb = info.get("world_size"), info.get("global_batch"), info.get("per_rank_batch")
    if world != ranks:
        err(f"run.json: world_size {world}, expected {ranks}")
    if len(info.get("hosts") or []) != ranks:
        err(f"run.json: {len(info.get('hosts') or [])} hosts, expected one per rank ({ranks})")
    if not isinstance(gb, int) or not isinstance(prb, int) or gb != prb * ranks:
        err(f"run.json: global_batch {gb} is not per_rank_batch {prb} x {ranks} ranks")
    cfg_batch = (info.get("config") or {}).get("train", {}).get("batch")
    if cfg_batch != gb:
        err(f"run.json: config train.batch {cfg_batch} differs from global_batch {gb}")
    ops = info.get("operators") or {}
    if not isinstance(ops.get("deterministic"), bool) or not isinstance(ops.get("choices"), list):
        err(f"run.json: operators {ops!r} lacks deterministic (bool) and choices (list)")
    if not (isinstance(info.get("samples_per_s"), (int, float)) and info["samples_per_s"] > 0):
        err(f"run.json: samples_per_s {info.get('samples_per_s')!r} is not positive")
    for problem in bucket_problems(info, ranks):
        err(f"run.json: buckets: {problem}")

    measured = 0
    try:
        with open(os.path.join(d, "metrics.jsonl"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        err(f"metrics.jsonl: {e}")
        return gb, prb
    for n, line in enumerate(lines, 1):
        where = f"metrics.jsonl:{n}"
        try:
            iv = json.loads(line)
            if "record" in iv:  # checkpoint and resumed_from records (version 3)
                continue
            ph = iv["phases"]
            step = float(ph["step"]["mean_ms"])
            total = sum(float(ph[p]["mean_ms"]) for p in PHASES + [p for p in OPTIONAL_PHASES if p in ph])
            warmup = bool(iv["warmup"])
            int(iv["steps"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            err(f"{where}: not a complete interval ({type(e).__name__}: {e})")
            continue
        if iv.get("version") != FORMAT_VERSION:
            err(f"{where}: version {iv.get('version')!r}, expected {FORMAT_VERSION}")
        if warmup:
            continue
        measured += 1
        if not phase_check:
            continue
        rel = abs(total - step) / step if step > 0 else float("inf")
        if rel > tolerance:
            err(f"{where}: the phases add up to {total:.3f} ms, step is {step:.3f} ms "
                f"({100 * rel:.1f}% apart, tolerance {100 * tolerance:.0f}%)")
    if measured == 0:
        err("metrics.jsonl: no non-warm-up interval")
    print(f"{d}: world_size {world}, global batch {gb}, per-rank batch {prb}, {len(lines)} intervals "
          f"({measured} measured{'' if phase_check else '; phase sums not checked'})")
    return gb, prb


def check_binding(d, ranks, errors):
    """run.json's binding: one CPU mask per rank and no warning (no ranks sharing cores on a host)."""
    try:
        with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
            binding = json.load(f).get("binding") or {}
    except (OSError, json.JSONDecodeError) as e:
        errors.append(f"{d}: run.json: {e}")
        return
    masks, warnings = binding.get("cpu_masks") or [], binding.get("warnings")
    if len(masks) != ranks or warnings != []:
        errors.append(f"{d}: run.json binding: masks {masks} (expected {ranks}), warnings {warnings!r} (expected none)")
    else:
        print(f"{d}: every rank bound to cores of its own: {', '.join(masks)}")


def check_report(sweep, rank_counts, errors):
    path = os.path.join(sweep, "report.md")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        errors.append(f"report.md: {e}")
        return
    # The first table (the one whose header starts with "| ranks |"): its rows' first cells.
    rows, in_table = [], False
    for line in text.splitlines():
        if line.startswith("| ranks |"):
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                break
            cell = line.strip("|").split("|")[0].strip()
            if cell.isdigit():
                rows.append(int(cell))
    if rows != sorted(rank_counts):
        errors.append(f"{path}: the table's rows are for ranks {rows}, expected {sorted(rank_counts)}")
    for png in PLOTS:
        p = os.path.join(sweep, png)
        try:
            with open(p, "rb") as f:
                head = f.read(8)
            if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(p) < 1000:
                errors.append(f"{p}: not a PNG image")
        except OSError as e:
            errors.append(f"{p}: {e}")
        if f"]({png})" not in text:
            errors.append(f"{path}: does not link {png}")
    print(f"{path}: table rows for ranks {rows}; plots {', '.join(PLOTS)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("sweep_dir")
    ap.add_argument("--kind", choices=["strong", "weak"], required=True)
    ap.add_argument("--ranks", required=True, help="comma-separated rank counts: one run directory ranks-<N> each")
    ap.add_argument("--batch", type=int, help="the fixed batch: global (strong) or per-rank (weak)")
    ap.add_argument("--tolerance", type=float, default=0.05, help="phase sum vs step, relative (default 0.05)")
    ap.add_argument("--phase-check-ranks", help="comma-separated rank counts whose phase sums are checked "
                    "(default: all; leave out runs with more ranks than cores, whose time-sharing is not timed)")
    ap.add_argument("--report", action="store_true", help="also check report.md and the plots")
    ap.add_argument("--bound", action="store_true",
                    help="also check that every rank had cores of its own (run.json binding: no warnings)")
    a = ap.parse_args()
    rank_counts = [int(r) for r in a.ranks.split(",")]
    phase_ranks = [int(r) for r in a.phase_check_ranks.split(",")] if a.phase_check_ranks else rank_counts
    errors = []

    meta_path = os.path.join(a.sweep_dir, "sweep.json")
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("kind") != a.kind:
            errors.append(f"{meta_path}: kind {meta.get('kind')!r}, expected {a.kind!r}")
    except (OSError, json.JSONDecodeError) as e:
        errors.append(f"{meta_path}: {e}")

    batches = {}
    for n in rank_counts:
        b = check_run(os.path.join(a.sweep_dir, f"ranks-{n}"), n, a.tolerance, errors, n in phase_ranks)
        if b:
            batches[n] = b
        if a.bound:
            check_binding(os.path.join(a.sweep_dir, f"ranks-{n}"), n, errors)
    fixed = {n: (gb if a.kind == "strong" else prb) for n, (gb, prb) in batches.items()}
    what = "global batch" if a.kind == "strong" else "per-rank batch"
    if len(set(fixed.values())) > 1:
        errors.append(f"{a.kind} sweep: the {what} differs between runs: {fixed}")
    if a.batch is not None and any(v != a.batch for v in fixed.values()):
        errors.append(f"{a.kind} sweep: the {what} is {fixed}, expected {a.batch}")

    if a.report:
        check_report(a.sweep_dir, rank_counts, errors)
    if errors:
        print(f"FAILED: {len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    print(f"OK: {a.kind} sweep with {len(rank_counts)} run directories, {what} {sorted(set(fixed.values()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
