# MLCommons' MLPerf HPC 3.0.0 logging rules, restated for scaletrain's own checks: every rule of
# the compliance checker's hpc_3.0.0/common.yaml (how often each key must occur, and the condition
# each line must meet in order), and the division files it then loads (open_common.yaml and
# closed_common.yaml: the benchmark's name; closed also the node and accelerator counts). The
# per-benchmark files (closed_deepcam.yaml, ...) hold a benchmark's reference hyperparameters and
# quality target, which a scaletrain model does not claim to meet, so they are not restated.
# rule_problems(events) returns one line per broken rule (empty: the log passes).
from collections import Counter

HPC_BENCHMARKS = ["deepcam", "cosmoflow", "oc20", "openfold"]
DIVISIONS = ["closed", "open"]
STATUSES = ["cloud", "onprem", "preview", "research"]
INIT_LIMIT_MS = 30 * 60 * 1e3  # init_stop within 30 minutes of the first init_start

# common.yaml's REQ fields. The checker only warns when an EXACTLY_ONE key repeats with one value;
# scaletrain logs each once, so a repeat fails here.
EXACTLY_ONE = ["submission_org", "submission_platform", "submission_division", "submission_status",
               "init_stop", "run_start", "run_stop", "train_samples", "eval_samples"]
AT_LEAST_ONE = ["cache_clear", "init_start"]
AT_LEAST_ONE_OF = [("epoch_start", "block_start"), ("epoch_stop", "block_stop"),
                   ("eval_start", "block_start"), ("eval_stop", "block_stop")]
CLOSED_EXACTLY_ONE = ["number_of_nodes", "accelerators_per_node"]


def count_problems(counts, keys, want):
    out = []
    for k in keys:
        if want == "exactly one" and counts[k] != 1 or want == "at least one" and counts[k] < 1:
            out.append(f"{k}: {counts[k]} occurrence(s), the rules require {want}")
    return out


def occurrence_problems(events):
    counts = Counter(e["key"] for e in events)
    out = count_problems(counts, EXACTLY_ONE, "exactly one") + count_problems(counts, AT_LEAST_ONE, "at least one")
    for alternatives in AT_LEAST_ONE_OF:
        if not any(counts[k] for k in alternatives):
            out.append(f"{' or '.join(alternatives)}: none, the rules require at least one")
    divisions = [e["value"] for e in events if e["key"] == "submission_division"]
    if divisions and divisions[0] in DIVISIONS:  # the division's file, as the checker loads it
        out += count_problems(counts, ["submission_benchmark"], "exactly one")
        if divisions[0] == "closed":
            out += count_problems(counts, CLOSED_EXACTLY_ONE, "exactly one")
    return out


class LineState:
    """common.yaml's BEGIN state: what the lines so far have started and stopped."""

    def __init__(self):
        self.init_started = self.init_stopped = self.run_started = self.staging_started = False
        self.first_init_start = float("inf")


def in_metadata(*names):
    return lambda e, s: [f"metadata lacks '{n}'" for n in names if n not in e["metadata"]]


def value_in(allowed):
    return lambda e, s: [] if e["value"] in allowed else [f"value {e['value']!r} is not one of {allowed}"]


def not_empty(e, s):
    return [] if e["value"] != "" else ["value is empty"]


def check_init_start(e, s):
    out = ["after init_stop"] if s.init_stopped else []
    out += ["after run_start"] if s.run_started else []
    s.init_started = True
    s.first_init_start = min(s.first_init_start, e["time_ms"])
    return out


def check_init_stop(e, s):
    out = [] if s.init_started else ["before any init_start"]
    out += ["after run_start"] if s.run_started else []
    if e["time_ms"] - s.first_init_start >= INIT_LIMIT_MS:
        out.append(f"{(e['time_ms'] - s.first_init_start) / 6e4:.1f} minutes after the first init_start (limit 30)")
    s.init_stopped = True
    return out


def check_staging_start(e, s):
    s.staging_started = True
    return []


def check_staging_stop(e, s):
    return [] if s.staging_started else ["before staging_start"]


def check_run_start(e, s):
    s.run_started = True
    return [] if s.init_stopped else ["before init_stop"]


def check_run_stop(e, s):
    return ([] if s.run_started else ["before run_start"]) + in_metadata("status")(e, s)


def check_block_start(e, s):
    out = ([] if s.run_started else ["before run_start"]) + in_metadata("epoch_count", "first_epoch_num")(e, s)
    if "epoch_count" in e["metadata"] and not e["metadata"]["epoch_count"] > 0:
        out.append("epoch_count is not positive")
    return out


def positive(e, s):
    return [] if e["value"] > 0 else [f"value {e['value']} is not positive"]


def not_negative(e, s):
    return [] if e["value"] >= 0 else [f"value {e['value']} is negative"]


# common.yaml's CHECK (and POST) per key; submission_* are checked at their first line only.
LINE_CHECKS = {
    "submission_org": not_empty,
    "submission_platform": not_empty,
    "submission_division": value_in(DIVISIONS),
    "submission_status": value_in(STATUSES),
    "cache_clear": lambda e, s: [] if "value" in e else ["no value"],
    "init_start": check_init_start,
    "init_stop": check_init_stop,
    "staging_start": check_staging_start,
    "staging_stop": check_staging_stop,
    "run_start": check_run_start,
    "run_stop": check_run_stop,
    "block_start": check_block_start,
    "block_stop": in_metadata("first_epoch_num"),
    "epoch_start": in_metadata("epoch_num"),
    "epoch_stop": in_metadata("epoch_num"),
    "eval_start": in_metadata("epoch_num"),
    "eval_stop": in_metadata("epoch_num"),
    "train_samples": not_empty,
    "eval_samples": not_empty,
}
# The division files' checks (open_common.yaml, closed_common.yaml).
DIVISION_CHECKS = {
    "submission_benchmark": value_in(HPC_BENCHMARKS),
    "gradient_accumulation_steps": positive,
    "gradient_accumulation_frequency": positive,
    "number_of_nodes": positive,
    "accelerators_per_node": not_negative,
}


def line_problems(events):
    out = []
    state = LineState()
    seen = set()
    division = next((e["value"] for e in events if e["key"] == "submission_division"), None)
    checks = dict(LINE_CHECKS)
    if division == "open":
        checks["submission_benchmark"] = DIVISION_CHECKS["submission_benchmark"]
    elif division == "closed":
        checks.update(DIVISION_CHECKS)
    for n, e in enumerate(events, 1):
        check = checks.get(e["key"])
        if check is None or (e["key"].startswith("submission_") and e["key"] in seen):
            continue
        seen.add(e["key"])
        out += [f"{e['key']} (MLLOG line {n}): {p}" for p in check(e, state)]
    return out


def rule_problems(events):
    return occurrence_problems(events) + line_problems(events)
