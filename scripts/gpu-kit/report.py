#!/usr/bin/env python3
"""The GPU kit's figures and reports (scripts/gpu-kit/check.sh and speed.sh call it; stdlib only).

  report.py device VERSION_TXT BUILD_INFO GPU_JSON       the device step's figures (JSON on stdout)
  report.py gtest GTEST_JSON                              cudatests' counts (JSON on stdout)
  report.py losses CPU_METRICS DEV_METRICS --model M --precision P --rtol R
                                                          per-step loss differences, one JSON line;
                                                          exit 1 beyond R
  report.py telemetry METRICS                             NVML samples in metrics.jsonl (JSON on stdout)
  report.py summary gpus|cudatests|cuda_vs_cpu|allreduce|telemetry FILE
                                                          a step's one-line note from its figures
  report.py report check|speed WORK OUT --seconds S --dry 0|1
                                                          OUT/<call>.md and OUT/<call>.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# Dense tensor-core and FP32 peaks in TFLOP/s from NVIDIA's data sheets (boost clock; the data sheets'
# TF32 and BF16 figures "with sparsity" halved). The first entry whose name occurs in the GPU's wins.
DATASHEET_TFLOPS = [
    ("H200 NVL", {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5}),
    ("H200", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4}),
    ("H100 NVL", {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5}),
    ("H100 PCIe", {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0}),
    ("H100", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4}),
    ("A100", {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0}),
]
# profile.json's kernel categories in report order (kernel_categories.CATEGORIES; report.py stays stdlib-only
# and free of the kit's other files).
CATEGORY_ORDER = ["convolution forward", "convolution backward data", "convolution backward filter", "GEMM",
                  "normalization", "element-wise", "reductions", "optimizer", "copies", "communication", "other"]


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def key_values(path, sep=None):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("=", 1) if sep == "=" else line.split(None, 1)
            if len(parts) == 2:
                out[parts[0].strip()] = parts[1].strip()
    return out


def cmd_device(a):
    print(json.dumps({"versions": key_values(a.version), "build": key_values(a.build_info, "="),
                      "gpus": json.loads(a.gpu)}))


def cmd_gtest(a):
    with open(a.json, encoding="utf-8") as f:
        g = json.load(f)
    passed = failed = skipped = 0
    failed_names, suites, answers = [], {}, {}
    for suite in g.get("testsuites", []):
        counts = suites.setdefault(suite["name"], {"passed": 0, "failed": 0, "skipped": 0})
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            # The cuDNN bf16 batch normalization question's answers (test properties).
            answers.update({k: v for k, v in t.items() if k.startswith(("cudnn_bf16", "bf16_batch_norm_ms"))})
            if t.get("failures"):
                failed += 1
                counts["failed"] += 1
                failed_names.append(name)
            elif t.get("result") == "SKIPPED":
                skipped += 1
                counts["skipped"] += 1
            else:
                passed += 1
                counts["passed"] += 1
    print(json.dumps({"tests": passed + failed + skipped, "passed": passed, "failed": failed, "skipped": skipped,
                      "failed_names": failed_names, "suites": suites, "cudnn_bf16_batch_norm": answers}))


def logged_losses(path):
    return {j["first_step"]: j["loss"] for j in read_jsonl(path) if "record" not in j}


def cmd_losses(a):
    cpu, dev = logged_losses(a.cpu), logged_losses(a.dev)
    steps = sorted(set(cpu) & set(dev))
    rel = [abs(cpu[s] - dev[s]) / max(abs(cpu[s]), 1e-30) for s in steps]
    row = {"model": a.model, "precision": a.precision, "steps": len(steps), "rtol": a.rtol,
           "worst_rel": max(rel) if rel else None, "median_rel": statistics.median(rel) if rel else None,
           "final_rel": rel[-1] if rel else None, "worst_step": steps[rel.index(max(rel))] if rel else None,
           "cpu_first_loss": cpu[steps[0]] if steps else None, "cpu_last_loss": cpu[steps[-1]] if steps else None,
           "dev_last_loss": dev[steps[-1]] if steps else None, "per_step_rel": rel}
    row["within"] = bool(rel) and len(steps) == len(cpu) == len(dev) and max(rel) <= a.rtol
    print(json.dumps(row))
    return 0 if row["within"] else 1


def cmd_telemetry(a):
    samples = [g for j in read_jsonl(a.metrics) if "record" not in j for g in j.get("gpus", [])]
    keys = ["sm_clock_mhz", "sm_clock_max_mhz", "temperature_c", "power_w", "memory_used_mib"]
    missing = sorted({k for s in samples for k in keys if k not in s}) if samples else keys
    complete = bool(samples) and not missing
    summary = (f"{len(samples)} NVML samples in metrics.jsonl; last: "
               + ", ".join(f"{k} {samples[-1].get(k)}" for k in keys) if samples else "no NVML sample in metrics.jsonl")
    if missing and samples:
        summary += "; missing: " + ", ".join(missing)
    print(json.dumps({"complete": complete, "summary": summary, "samples": samples[-3:], "count": len(samples)}))


def cmd_summary(a):
    with open(a.file, encoding="utf-8") as f:
        text = f.read()
    if a.kind == "cuda_vs_cpu":
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not rows:
            print("no pair of runs finished")
            return 0
        print(", ".join(f"{r['model']} {r['precision']} {fmt(r['worst_rel'], '.2g')}" for r in rows)
              + " (worst relative loss difference over the steps)")
        return 0
    d = json.loads(text)
    if a.kind == "gpus":
        print("; ".join(f"{g['name']}, {g['memory_total']}, driver {g['driver']}, compute capability "
                        f"{g['compute_capability']}" for g in d) or "nvidia-smi lists no GPU")
        return 0 if d else 1
    if a.kind == "cudatests":
        print(f"{d['passed']} passed, {d['failed']} failed, {d['skipped']} skipped of {d['tests']}"
              + (": " + ", ".join(d["failed_names"][:5]) if d["failed"] else ""))
        return 0
    if a.kind == "allreduce":
        r = d["rows"][-1]
        print(f"{d['communicator']}: {r['bytes'] / 2**20:g} MiB in {r['time_us']:.0f} us ({r['algbw_gbps']:.1f} GB/s); "
              f"{sum(x['wrong'] for x in d['rows'])} wrong values over {len(d['rows'])} sizes")
        return 0
    print(d["summary"])  # telemetry
    return 0 if d["complete"] else 1


def fmt(v, spec=".3g"):
    return "n/a" if v is None else format(v, spec)


def steps_table(steps):
    lines = ["| step | status | seconds | limit on a GPU (s) | note |", "| --- | --- | ---: | ---: | --- |"]
    for s in steps:
        applied = f" ({s['applied_limit_s']} here)" if s["applied_limit_s"] != s["limit_s"] else ""
        lines.append(f"| {s['step']} | {s['status']} | {s['seconds']:.1f} | {s['limit_s']}{applied} | "
                     f"{s['note'].replace('|', '/')} |")
    return lines


def figures(work):
    out = {}
    folder = os.path.join(work, "figures")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                out[name[:-5]] = json.load(f)
        except (OSError, ValueError) as e:
            out[name[:-5]] = {"unreadable": str(e)}
    return out


def check_sections(fig):
    lines = []
    dev = fig.get("device", {})
    if dev:
        lines += ["", "## Device and libraries", ""]
        for g in dev.get("gpus", []):
            lines.append(f"- GPU: {g.get('name')}, {g.get('memory_total')}, driver {g.get('driver')}, "
                         f"compute capability {g.get('compute_capability')}")
        v = dev.get("versions", {})
        lines.append("- scaletrain --version: " + "; ".join(f"{k} {val}" for k, val in v.items()))
        b = dev.get("build", {})
        lines.append("- built with: " + "; ".join(f"{k} {val}" for k, val in b.items()))
    vs = fig.get("cuda_vs_cpu", []) + fig.get("zoo_vs_cpu", [])
    if vs:
        lines += ["", "## cuda against cpu: relative loss differences per step", "",
                  "| model | precision | steps | worst (step) | median | last step | tolerance | cpu loss first -> last |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for r in vs:
            lines.append(f"| {r['model']} | {r['precision']} | {r['steps']} | {fmt(r['worst_rel'])} ({r['worst_step']}) | "
                         f"{fmt(r['median_rel'])} | {fmt(r['final_rel'])} | {r['rtol']:g} | "
                         f"{fmt(r['cpu_first_loss'], '.4f')} -> {fmt(r['cpu_last_loss'], '.4f')} |")
    for name in ("nccl_allreduce", "mpi_device_allreduce"):
        d = fig.get(name)
        if not d or "rows" not in d:
            continue
        lines += ["", f"## {name}: {d.get('communicator')}", "", "| bytes | time (us) | algbw (GB/s) | #wrong |",
                  "| ---: | ---: | ---: | ---: |"]
        rows = d["rows"]
        for r in rows[:: max(1, len(rows) // 8)] + ([rows[-1]] if len(rows) % 8 else []):
            lines.append(f"| {r['bytes']} | {r['time_us']:.1f} | {r['algbw_gbps']:.2f} | {r['wrong']} |")
    t = fig.get("cudatests")
    if t:
        lines += ["", f"## cudatests: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped", ""]
        lines += [f"- {s}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
                  for s, c in t.get("suites", {}).items()]
    lines += bf16_batch_norm_section(t)
    tel = fig.get("telemetry")
    if tel:
        lines += ["", "## NVML telemetry", "", tel.get("summary", "")]
    return lines


def bf16_batch_norm_section(t):
    """cuDNN's batch normalization in bf16 at resnet50's shapes: the check call's answer, the speed call's times."""
    answers = (t or {}).get("cudnn_bf16_batch_norm") or {}
    if not answers:
        return []
    lines = ["", "## cuDNN batch normalization in bf16 (the kernels serve bf16 until this is answered)", ""]
    lines += [f"- {k.replace('cudnn_bf16_', '').replace('bf16_batch_norm_ms_', 'forward+backward ')}: {v}"
              for k, v in sorted(answers.items())]
    return lines


def gpu_name(dry):
    if dry:
        return None
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


def datasheet(name):
    for key, peaks in DATASHEET_TFLOPS:
        if name and key in name:
            return key, peaks
    return None, {}


def speed_rows(work, dry):
    name = gpu_name(dry)
    sheet, peaks = datasheet(name)
    torch_lines = read_jsonl(os.path.join(work, "pytorch.jsonl"))
    rows = []
    for r in read_jsonl(os.path.join(work, "scaletrain.jsonl")):
        with open(r["run_json"], encoding="utf-8") as f:
            run = json.load(f)
        flops = run.get("training_flops_per_sample", 3 * run.get("forward_flops_per_sample", 0))
        ips = run["samples_per_s"]
        torch_same = [t for t in torch_lines if t["model"] == r["model"] and t["dtype"] == r["precision"]]
        best = max(torch_same, key=lambda t: t["images_per_s"]) if torch_same else None
        peak = peaks.get(r["precision"])
        rows.append({**{k: r[k] for k in ("model", "precision", "deterministic", "batch")},
                     "images_per_s": ips, "training_flops_per_sample": flops, "tflops": ips * flops / 1e12,
                     "datasheet_peak_tflops": peak, "fraction_of_peak": ips * flops / 1e12 / peak if peak else None,
                     "pytorch_best_images_per_s": best["images_per_s"] if best else None,
                     "pytorch_best_config": best["config"] if best else None,
                     "pytorch_fraction_of_peak": best["images_per_s"] * flops / 1e12 / peak if best and peak else None,
                     "ratio_vs_pytorch_best": ips / best["images_per_s"] if best else None})
    return {"gpu": name, "datasheet": sheet, "datasheet_peaks_tflops": peaks, "rows": rows, "pytorch": torch_lines,
            "networks": networks(work, torch_lines), "algorithms": algorithm_rows(work),
            "cudnn_bf16_batch_norm": read_json(os.path.join(work, "figures", "cudnn_bf16_batch_norm.json")),
            "not_run": os.environ.get("KIT_SPEED_NOT_RUN", "")}


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def timed(v):
    """A time of the algorithm book, None where untimed (null, or the book's -1)."""
    return v if isinstance(v, (int, float)) and v >= 0 else None


def algorithm_run(line, work):
    """One run of the algorithm table: its speed from run.json, its operators.algorithms block (absent:
    a run.json without the key) less the book, times untimed as None."""
    if line is None:
        return None
    run = read_json(line["run_json"]) or {}
    ips = run.get("samples_per_s") or None
    ops = run.get("operators") or {}
    algos = ops.get("algorithms") if "algorithms" in ops else "absent"
    if isinstance(algos, dict):
        book = algos.get("book") or {}
        algos = {**{k: v for k, v in algos.items() if k != "book"},
                 **{k: timed(algos.get(k)) for k in ("probe_ms", "timed_ms", "heuristic_ms")},
                 "library": book.get("library"), "device": book.get("device"), "records": book.get("records") or []}
    return {"images_per_s": ips, "ms_per_step": 1e3 * run.get("global_batch", line["batch"]) / ips if ips else None,
            "run_json": os.path.relpath(line["run_json"], work),
            "algorithms_source": algos.get("source") if isinstance(algos, dict) else None, "algorithms": algos}


def differing(records, n=5):
    """The records whose chosen algorithm is not the heuristic's first choice, the largest saving first."""
    out = []
    for r in records:
        if r.get("heuristic_name") is None or r.get("name") == r.get("heuristic_name"):
            continue
        t, h = timed(r.get("time_ms")), timed(r.get("heuristic_time_ms"))
        out.append({"op": r.get("op"), "shape": r.get("shape"), "name": r.get("name"),
                    "heuristic_name": r.get("heuristic_name"), "time_ms": t, "heuristic_time_ms": h,
                    "saved_ms": h - t if t is not None and h is not None else None})
    out.sort(key=lambda d: float("inf") if d["saved_ms"] is None else -d["saved_ms"])
    return out[:n]


def algorithm_rows(work):
    """The algorithm table (speed.sh's algorithm steps, algorithms.jsonl): per network, precision and
    run.deterministic, the heuristic run's speed against the auto run's, and the auto run's choices
    (operators.algorithms: None on a device without algorithm choices, "absent" where run.json lacks it)."""
    runs, order = {}, []
    for line in read_jsonl(os.path.join(work, "algorithms.jsonl")):
        key = (line["model"], line["precision"], line["deterministic"])
        if key not in runs:
            runs[key] = {"batch": line["batch"]}
            order.append(key)
        runs[key][line["algorithms"]] = line
    models = list(dict.fromkeys(k[0] for k in order))
    order.sort(key=lambda k: (models.index(k[0]), k[1], k[2]))  # per network: deterministic false, then true
    rows = []
    for key in order:
        model, precision, det = key
        h, a = (algorithm_run(runs[key].get(k), work) for k in ("heuristic", "auto"))
        algos = a["algorithms"] if a else "absent"
        if isinstance(algos, dict):
            status, summary = "recorded", {k: v for k, v in algos.items() if k != "records"}
            summary["largest_differences"] = differing(algos["records"])
        else:
            status, summary = ("no auto run" if a is None else "not in run.json" if algos == "absent"
                               else "no algorithm choice on this device"), None
        hi, ai = (h or {}).get("images_per_s"), (a or {}).get("images_per_s")
        rows.append({"model": model, "precision": precision, "deterministic": det, "batch": runs[key]["batch"],
                     "heuristic": h and {k: v for k, v in h.items() if k != "algorithms"},
                     "auto": a and {k: v for k, v in a.items() if k != "algorithms"},
                     "ratio_auto_vs_heuristic": ai / hi if ai and hi else None,
                     "algorithms_status": status, "algorithms": summary})
    return rows


def kernel_side(doc):
    """One side's kernel figures from a profile.json's "kernels" object (or pytorch_kernel_profile.py's
    document, which has the same keys at its top)."""
    if not doc or not doc.get("categories"):
        return {"kernels_source": doc.get("source") if doc else None, "kernels_per_step": None, "kernel_s": None,
                "categories": {}, "top_kernels": []}
    cats = {c["category"]: c for c in doc["categories"]}
    return {"kernels_source": doc.get("source"), "kernels_per_step": sum(c["kernels"] for c in doc["categories"]),
            "kernel_s": sum(c["seconds"] for c in doc["categories"]), "categories": cats,
            "top_kernels": doc.get("per_step", [])[:10]}


def networks(work, torch_lines):
    """The networks measured on both sides with kernel profiles (speed.sh's resnet50 steps): ours from
    scaletrain.jsonl's profile_json, PyTorch's from pytorch_profiles.jsonl, images/s against PyTorch's
    best line of the same model and precision in pytorch.jsonl."""
    ours = {(r["model"], r["precision"]): r for r in read_jsonl(os.path.join(work, "scaletrain.jsonl"))
            if r.get("profile_json")}
    theirs = {(r["model"], r["precision"]): r for r in read_jsonl(os.path.join(work, "pytorch_profiles.jsonl"))}
    out = []
    for key in list(ours) + [k for k in theirs if k not in ours]:
        model, precision = key
        entry = {"network": model, "precision": precision,
                 "batch": (ours.get(key) or theirs.get(key))["batch"], "input": None, "ours": None, "pytorch": None}
        if key in ours:
            prof = read_json(ours[key]["profile_json"]) or {}
            run = read_json(ours[key]["run_json"]) or {}
            side = kernel_side(prof.get("kernels"))
            entry["ours"] = {"images_per_s": run.get("samples_per_s"), "step_s": prof.get("step_s"),
                             "rows_s": prof.get("rows_s"), "measured_steps": prof.get("measured_steps"),
                             "device": prof.get("device"), "profile": prof.get("profile"),
                             "kernels_unavailable": prof.get("kernels_unavailable"),
                             "profile_json": os.path.relpath(ours[key]["profile_json"], work),
                             "layers": prof.get("rows", [])[:10], **side}
        if key in theirs:
            doc = read_json(theirs[key]["profile_json"]) or {}
            entry["input"] = doc.get("input")
            side = kernel_side(doc)
            entry["pytorch"] = {"torch": doc.get("torch"), "device": doc.get("device"),
                                "profiled_steps": doc.get("profiled_steps"),
                                "kernels_unavailable": doc.get("kernels_unavailable"),
                                "profile_json": os.path.relpath(theirs[key]["profile_json"], work), **side}
        same = [t for t in torch_lines if t["model"] == model and t["dtype"] == precision]
        best = max(same, key=lambda t: t["images_per_s"]) if same else None
        if best:
            entry["pytorch"] = entry["pytorch"] or {"kernels_per_step": None, "kernel_s": None, "categories": {},
                                                    "top_kernels": []}
            entry["pytorch"].update(images_per_s=best["images_per_s"], config=best["config"],
                                    step_s=best["ms_per_step"] / 1e3, torch=best.get("torch"))
        if entry["input"] is None and best:
            entry["input"] = best.get("input")
        o, t = entry["ours"] or {}, entry["pytorch"] or {}
        entry["ratio_vs_pytorch"] = (o["images_per_s"] / t["images_per_s"]
                                     if o.get("images_per_s") and t.get("images_per_s") else None)
        oc, tc = o.get("categories") or {}, t.get("categories") or {}
        names = [c for c in CATEGORY_ORDER if c in oc or c in tc] + sorted((set(oc) | set(tc)) - set(CATEGORY_ORDER))
        ms = lambda cats, c: 1e3 * cats[c]["seconds"] if c in cats else None
        entry["categories"] = [{"category": c, "ours_ms": ms(oc, c), "pytorch_ms": ms(tc, c),
                                "difference_ms": ms(oc, c) - ms(tc, c) if c in oc and c in tc else None,
                                "ours_kernels": oc[c]["kernels"] if c in oc else None,
                                "pytorch_kernels": tc[c]["kernels"] if c in tc else None} for c in names]
        for side in (entry["ours"], entry["pytorch"]):
            if side is not None:
                side["categories"] = list(side.get("categories", {}).values())
        out.append(entry)
    return out


def speed_sections(s, dry):
    pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
    lines = ["", f"GPU: {s['gpu'] or 'none (dry run)'}; data-sheet peaks (dense, TFLOP/s): "
             + (", ".join(f"{k} {v:g}" for k, v in s["datasheet_peaks_tflops"].items()) + f" ({s['datasheet']})"
                if s["datasheet"] else "not known for this device"), "",
             "| model | precision | deterministic | batch | scaletrain img/s | TFLOP/s | % peak | PyTorch best img/s (config) "
             "| PyTorch % peak | x PyTorch |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in s["rows"]:
        torch_ips = "n/a" if r["pytorch_best_images_per_s"] is None else \
            f"{r['pytorch_best_images_per_s']:.0f} ({r['pytorch_best_config']})"
        lines.append(f"| {r['model']} | {r['precision']} | {str(r['deterministic']).lower()} | {r['batch']} | "
                     f"{r['images_per_s']:.0f} | {r['tflops']:.2f} | {pct(r['fraction_of_peak'])} | {torch_ips} | "
                     f"{pct(r['pytorch_fraction_of_peak'])} | {fmt(r['ratio_vs_pytorch_best'], '.2f')} |")
    lines += ["", "Every PyTorch configuration measured (img/s):", ""]
    lines += [f"- {t['model']} {t['dtype']} {t['config']}: {t['images_per_s']:.0f}"
              + (f" (setup {t['setup_s']:.0f} s)" if "setup_s" in t else "") for t in s["pytorch"]]
    lines += ["", "TFLOP/s: images/s x run.json's training_flops_per_sample (PyTorch's share uses the same count). "
              "tf32: fp32 with train.allow_tf32 (PyTorch: allow_tf32 in cuDNN and cuBLAS); bf16: scaletrain "
              "train.precision bf16, PyTorch autocast to bfloat16. Every scaletrain run of this table has "
              "run.deterministic = false and run.cudnn_algorithms = auto (the default)."]
    if s.get("not_run"):
        lines.append(f"Not run in this call (no time left within its 4 minutes): {s['not_run']}.")
    if dry:
        lines.append("Dry run: run.device = sim and PyTorch on the CPU; tf32 is GPU-only and was not run, "
                     "resnet50 ran in fp32 on 32x32x3 at batch 2; the figures say nothing about a GPU.")
    if s.get("algorithms"):
        lines += algorithm_section(s["algorithms"])
    for n in s.get("networks", []):
        lines += network_section(n)
    lines += bf16_batch_norm_section(s.get("cudnn_bf16_batch_norm"))
    return lines


def algorithm_section(rows):
    """The algorithm table: per network, precision and run.deterministic, images/s with cuDNN's and
    cuBLASLt's untimed first choices against the timed ones, and what the timing chose."""
    num = lambda v, spec: "n/a" if v is None else format(v, spec)
    speed = lambda r: "n/a" if not r or r["images_per_s"] is None else \
        f"{r['images_per_s']:,.0f} ({r['ms_per_step']:,.2f})"
    lines = ["", "## Algorithm choice (run.cudnn_algorithms)", "",
             "| model | precision | deterministic | batch | heuristic img/s (ms/step) | auto img/s (ms/step) | "
             "auto / heuristic | problems | differ | chosen / first choice ms | probe ms |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        a = r["algorithms"]
        if a is None:
            cells = [r["algorithms_status"]] * 4
        else:
            probe = num(a.get("probe_ms"), ",.0f") if a.get("source") == "timed" else f"not timed ({a.get('source')})"
            cells = [num(a.get("problems"), ",.0f"), num(a.get("differ"), ",.0f"),
                     f"{num(a.get('timed_ms'), ',.2f')} / {num(a.get('heuristic_ms'), ',.2f')}", probe]
        lines.append(f"| {r['model']} | {r['precision']} | {str(r['deterministic']).lower()} | {r['batch']} | "
                     f"{speed(r['heuristic'])} | {speed(r['auto'])} | {num(r['ratio_auto_vs_heuristic'], '.2f')} | "
                     + " | ".join(cells) + " |")
    lines += ["", "heuristic: run.cudnn_algorithms = heuristic, cuDNN's and cuBLASLt's untimed first choice; auto: "
              "rank 0 times the candidates at start-up (with run.deterministic = true only the deterministic ones) "
              "and every rank runs the fastest. Short runs, 4 per network, with fewer measured steps than the "
              "table above. auto / heuristic: auto's images/s over heuristic's (above 1: the timed choices are "
              "faster). From the auto run's run.json (operators.algorithms): problems, its records (convolution "
              "directions and GEMMs); differ, those whose timed choice is not the first choice; chosen / first "
              "choice ms, the records' own times summed (time_ms against heuristic_time_ms, one call each); "
              "probe ms, the start-up's timing (probe_ms)."]
    for r in rows:
        diffs = (r["algorithms"] or {}).get("largest_differences")
        if not diffs:
            continue
        lines += ["", f"{r['model']} {r['precision']} deterministic={str(r['deterministic']).lower()}: the largest "
                  "differences (timed choice against the first choice, ms):", ""]
        lines += [f"- {d['op']} {text(d['shape'])}: `{text(d['name'])}` {num(d['time_ms'], ',.3f')} against "
                  f"`{text(d['heuristic_name'])}` {num(d['heuristic_time_ms'], ',.3f')}" for d in diffs]
    return lines


def text(v):
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def network_section(n):
    """One network's two sides next to each other: images/s, kernel time and kernels per step by
    category, our ten largest layers, each side's largest kernels."""
    o, t = n["ours"] or {}, n["pytorch"] or {}
    num = lambda v, spec: "n/a" if v is None else format(v, spec)
    ms = lambda v: num(None if v is None else 1e3 * v, ",.2f")
    shape = "x".join(map(str, n["input"])) if n.get("input") else "its input"
    torch_name = f"PyTorch {t.get('torch') or ''} ({t.get('config') or 'n/a'})".replace("  ", " ")
    lines = ["", f"## {n['network']} {n['precision']}, batch {n['batch']}, {shape}: scaletrain beside PyTorch", "",
             f"| | scaletrain | {torch_name} | scaletrain / PyTorch |", "| --- | ---: | ---: | ---: |",
             f"| images/s | {num(o.get('images_per_s'), ',.1f')} | {num(t.get('images_per_s'), ',.1f')} | "
             f"{num(n['ratio_vs_pytorch'], '.2f')}x |",
             f"| ms per step | {ms(o.get('step_s'))} | {ms(t.get('step_s'))} | |",
             f"| kernel time per step (ms) | {ms(o.get('kernel_s'))} | {ms(t.get('kernel_s'))} | "
             + (f"{o['kernel_s'] / t['kernel_s']:.2f}x |" if o.get("kernel_s") and t.get("kernel_s") else "|"),
             f"| kernels per step | {num(o.get('kernels_per_step'), ',.0f')} | {num(t.get('kernels_per_step'), ',.0f')} | |",
             "", "| category | scaletrain ms | kernels | PyTorch ms | kernels | difference ms (scaletrain - PyTorch) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in n["categories"]:
        lines.append(f"| {c['category']} | {num(c['ours_ms'], ',.2f')} | {num(c['ours_kernels'], ',.0f')} | "
                     f"{num(c['pytorch_ms'], ',.2f')} | {num(c['pytorch_kernels'], ',.0f')} | "
                     f"{num(c['difference_ms'], '+,.2f')} |")
    if n["categories"]:
        tot = lambda k: sum(c[k] for c in n["categories"] if c[k] is not None) \
            if any(c[k] is not None for c in n["categories"]) else None
        diff = tot("ours_ms") - tot("pytorch_ms") if tot("ours_ms") is not None and tot("pytorch_ms") is not None \
            else None
        lines.append(f"| **total** | {num(tot('ours_ms'), ',.2f')} | {num(tot('ours_kernels'), ',.0f')} | "
                     f"{num(tot('pytorch_ms'), ',.2f')} | {num(tot('pytorch_kernels'), ',.0f')} | {num(diff, '+,.2f')} |")
    notes = [f"scaletrain: {o.get('kernels_source') or o.get('kernels_unavailable') or 'no kernel profile'}"
             + (f" over {o['measured_steps']} measured steps of a run with run.profile = {','.join(o['profile'])} "
                "(its images/s and ms per step include the profile's costs: one synchronization per step, "
                "the kernel records)" if o.get("measured_steps") else ""),
             f"PyTorch: {t.get('kernels_source') or t.get('kernels_unavailable') or 'no kernel profile'}"
             + (f" over {t['profiled_steps']} profiled steps after the timed ones (its images/s and ms per step: "
                "the timed steps, without the profiler)" if t.get("profiled_steps") else "")]
    lines += [""] + [f"- {x}" for x in notes]
    if o.get("layers"):
        lines += ["", "scaletrain's ten largest rows of the layer profile (per step):", "",
                  "| layer | type | forward ms | backward ms | total ms | share |", "| --- | --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {r['name']} | {r.get('type', '')} | {ms(r.get('forward_s'))} | {ms(r.get('backward_s'))} | "
                  f"{ms(r.get('total_s'))} | {num(None if r.get('share') is None else 100 * r['share'], '.1f')}% |"
                  for r in o["layers"]]
    for label, side in (("scaletrain", o), ("PyTorch", t)):
        if side.get("top_kernels"):
            what = "operators" if "CPU operators" in (side.get("kernels_source") or "") else "kernels"
            lines += ["", f"{label}'s largest {what} (per step):", "", f"| {what[:-1]} | category | ms | count |",
                      "| --- | --- | ---: | ---: |"]
            lines += [f"| `{k['name'][:100].replace('|', '/')}` | {k['category']} | {ms(k['seconds'])} | "
                      f"{num(k['count'], ',.1f')} |" for k in side["top_kernels"][:8]]
    return lines


def cmd_report(a):
    steps = read_jsonl(os.path.join(a.work, "steps.jsonl"))
    fig = figures(a.work)
    title = {"check": "GPU kit: check", "speed": "GPU kit: speed"}[a.call]
    failed = [s["step"] for s in steps if s["status"] in ("failed", "timed_out")]
    lines = [f"# {title}{' (dry run)' if a.dry else ''}", "",
             f"{len(steps)} steps in {a.seconds} s: " + (f"FAILED: {', '.join(failed)}" if failed else "no failures"), ""]
    lines += steps_table(steps)
    doc = {"call": a.call, "dry": bool(a.dry), "seconds": a.seconds, "steps": steps, "figures": fig}
    if a.call == "check":
        lines += check_sections(fig)
    else:
        doc["speed"] = speed_rows(a.work, a.dry)
        lines += speed_sections(doc["speed"], a.dry)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, f"{a.call}.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(a.out, f"{a.call}.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print("\n".join(lines))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device")
    d.add_argument("version")
    d.add_argument("build_info")
    d.add_argument("gpu")
    g = sub.add_parser("gtest")
    g.add_argument("json")
    lo = sub.add_parser("losses")
    lo.add_argument("cpu")
    lo.add_argument("dev")
    lo.add_argument("--model", required=True)
    lo.add_argument("--precision", required=True)
    lo.add_argument("--rtol", type=float, required=True)
    t = sub.add_parser("telemetry")
    t.add_argument("metrics")
    su = sub.add_parser("summary")
    su.add_argument("kind", choices=["gpus", "cudatests", "cuda_vs_cpu", "allreduce", "telemetry"])
    su.add_argument("file")
    r = sub.add_parser("report")
    r.add_argument("call", choices=["check", "speed"])
    r.add_argument("work")
    r.add_argument("out")
    r.add_argument("--seconds", type=int, default=0)
    r.add_argument("--dry", type=int, default=0)
    a = p.parse_args()
    return {"device": cmd_device, "gtest": cmd_gtest, "losses": cmd_losses, "telemetry": cmd_telemetry,
            "summary": cmd_summary, "report": cmd_report}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
