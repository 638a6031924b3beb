#!/usr/bin/python3
# Source comments say what the code does and why. Measured figures (times, throughputs, speed ratios,
# shares of peak) and the code's history (which session or issue did what, "before ... now") belong in
# commit messages and perf/ (perf/HISTORY.md), where they keep their date and machine.
# Scans the // and /* */ comments of the C++ and CUDA sources under src/ and include/ (and kernels/,
# where it exists) and prints file:line and the comment for each finding; exits 1 if there is one.
# usage: check_source_comments.py [--root DIR] [PATH...]   (PATHs relative to DIR; default src include kernels)
#        check_source_comments.py --self-test              (the rules on recorded good and bad comments)
import argparse
import pathlib
import re
import sys

SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".cc", ".cu", ".cuh", ".inl"}
DEFAULT_PATHS = ("src", "include", "kernels")

_NUM = r"\d+(?:\.\d+)?"
_RANGE = rf"{_NUM}\s*(?:-|–|to)\s*{_NUM}"
_TIME = r"(?:ms|us|µs|μs|ns|s|secs?|seconds?|milliseconds?|microseconds?|nanoseconds?)"
_RATE = (r"(?:img/s|imgs/s|images/s|samples/s|steps/s|tokens/s|[KMGT]?FLOP/s|[KMGT]?FLOPS\b|[KMGT]i?B/s"
         r"|[KMG]?B per second)")

# (name, pattern). Patterns run over a whole comment block (consecutive comment lines joined by spaces),
# so a figure or a phrase broken across two lines is still found; the finding names the line it starts on.
FIGURE_RULES = [
    # 0.48 ms, 1.5 s: a time with a fractional part is a measurement (settings are whole numbers).
    ("time figure", rf"(?<![\w.])\d+\.\d+\s*{_TIME}(?![\w/])"),
    # 150-200 us, 3 to 5 ms: a range of times.
    ("time range", rf"(?<![\w.]){_RANGE}\s*{_TIME}(?![\w/])"),
    # 0.66 -> 0.56 ms, -> 24 us, 3.1 ms -> ...: a before/after pair of times.
    ("time before/after", rf"->\s*{_NUM}\s*{_TIME}(?![\w/])|(?<![\w.]){_NUM}\s*{_TIME}\s*->"),
    # took 400 us, about 300 ms per step, 12 ms against 9: a whole-number time told as a measurement.
    ("time measurement",
     rf"\b(?:took|takes|take|taking|measured|about|around|roughly|costs?|spends?|spent|ran in|runs in|read)\s+"
     rf"(?:about\s+|only\s+|some\s+)?{_NUM}\s*{_TIME}(?![\w/])"
     rf"|(?<![\w.]){_NUM}\s*{_TIME}\s+(?:per|a|each)\s+(?:step|call|image|sample|batch|iteration|epoch|pass|layer)\b"
     rf"|(?<![\w.]){_NUM}\s*{_TIME}\s+against\s+\d"),
    # 753 samples/s, 12 GB/s, 229 GFLOP/s: a throughput.
    ("throughput", rf"(?<![\w.]){_NUM}(?:,\d{{3}})*\s*(?:-\s*{_NUM}(?:,\d{{3}})*\s*)?[KkM]?\s*{_RATE}"),
    # 1.6x, 2-7x, 4x slower, 3 times faster: a speed ratio (3x3, 2x2/2 and "3x its forward" are not).
    ("speed ratio",
     rf"(?<![\w.])(?:{_NUM}\s*-\s*{_NUM}|\d+\.\d+)x(?![\w])"
     rf"|(?<![\w.])\d+x\s+(?:faster|slower|quicker|the speed|as fast)\b"
     rf"|\b{_NUM}\s+times\s+(?:faster|slower|quicker|as fast)\b"),
    # 36% of the FMA peak, 2-5% faster, 1.7-4.5% of the step: a measured share or gain.
    ("measured share",
     rf"(?<![\w.]){_NUM}\s*-\s*{_NUM}\s*%"
     rf"|(?<![\w.]){_NUM}\s*%\s+(?:faster|slower|quicker|of (?:the |its )?(?:[\w-]+ )?(?:peak|step|step's time|runtime))\b"),
]

HISTORY_RULES = [
    ("history: a session or round of work",
     r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)|this|that|"
     r"last|previous|earlier)\s+(?:work\s+)?(?:session|round)\b(?!\s+trip)"
     r"|\bround of (?:work|optimi[sz]ation|changes)\b"),
    ("history: an issue or stop number", r"\b(?:issue|stop|ticket|PR)\s*#?\d+\b"),
    ("history: 'used to'", r"\b(?:it|this|that|which|these|they|we|code|loop|loops|path|op|kernel)\s+used\s+to\b"
                           r"|\bused to be\b"),
    ("history: 'previously'/'formerly'",
     r"\bformerly\b|\bpreviously\b(?!\s+(?:set|recorded|stored|written|chosen|seen|allocated|returned|"
     r"queued|read|saved|released|registered|created|loaded|reported|started|finished|completed))"),
    ("history: 'we measured'", r"\bwe\s+(?:measured|timed|tried|found|saw|benchmarked|profiled)\b"),
    ("history: 'went from ... to'", r"\bwent\s+from\b[^.;]{0,80}?\bto\b"),
    ("history: 'was ..., now'", r"\bwas\s+\S[^.;]{0,80}?[,;(]\s*now\b"),
    ("history: 'before ... now'",
     r"\bbefore\s*:|\b(?:before|previously|formerly)\b[^.;]{0,80}?[,;]\s*now\b"
     r"|\bbefore\s+(?:this|the)\s+(?:change|commit|session|rewrite|fix)\b"),
    ("history: a commit", r"\b(?:commit|build|since|until|before|after)\s+[0-9a-f]{7,40}\b"
                          r"|\bthis\s+(?:commit|change|patch|PR)\b"),
]

RULES = ([(name, re.compile(p)) for name, p in FIGURE_RULES]
         + [(name, re.compile(p, re.IGNORECASE)) for name, p in HISTORY_RULES])


def comment_lines(text):
    """(line number, text) of every line of a // or /* */ comment; strings and raw strings are skipped."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            body = text[i + 2:j]
            for k, seg in enumerate(body.split("\n")):
                out.append((line + k, re.sub(r"^\s*\*(?!/)", "", seg)))
            line += body.count("\n")
            i = j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j
            line += text[i:j].count("\n")
            i = j + len(end)
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # 1'000 is a digit separator
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def blocks(lines):
    """Consecutive comment lines as one block: [(line, text), ...]."""
    block = []
    for ln, t in lines:
        if block and ln != block[-1][0] + 1:
            yield block
            block = []
        block.append((ln, t))
    if block:
        yield block


def findings_in_block(block):
    """(line, rule name, the comment line) for each rule that matches the block."""
    joined, starts = "", []
    for ln, t in block:
        starts.append((len(joined), ln, t))
        joined += t.strip() + " "
    found = []
    for name, rx in RULES:
        for m in rx.finditer(joined):
            ln, t = next((ln, t) for off, ln, t in reversed(starts) if off <= m.start())
            found.append((ln, name, t.strip(), m.group(0)))
    return found


def check_text(text):
    seen, out = set(), []
    for block in blocks(comment_lines(text)):
        for ln, name, line_text, match in findings_in_block(block):
            if (ln, name) not in seen:
                seen.add((ln, name))
                out.append((ln, name, line_text, match))
    return sorted(out)


def check_tree(root, paths):
    problems = []
    for rel in paths:
        base = root / rel
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in SOURCE_SUFFIXES)
        for f in files:
            text = f.read_text(encoding="utf-8", errors="replace")
            for ln, name, line_text, match in check_text(text):
                problems.append(f"{f.relative_to(root)}:{ln}: {name} ('{match.strip()}'): {line_text}")
    return problems


# Recorded comments: lines that were in the sources (bad), and lines that must stay allowed (good).
SELF_TEST_BAD = [
    "// the forward's output (perf/bench_conv forward 0.48 -> 0.39 ms at batch 128, against stores lane by",
    "// -> 24 us). With stream_out (backward-data's dx, which goes to memory) full blocks are written by",
    "// 150-200 us, this 30-40 us (a standalone Kokkos Serial loop measured 400 us against 33-43 us).",
    "// convolution spends about 300 ms per step on the weight gradient of the 512->512 layer at 7x7,",
    "// result. (Byte by byte, one chain of dependent multiplies took 11.6 ms for 2.9 M parameters.)",
    "// trained at 464 img/s against 505-514 with 1 MB.",
    "// without task/affinity: 753 samples/s against 37,172 when bound), and neither fails. Rank 0",
    "// memory one line at a time, about 12 GB/s on an AMD EPYC).",
    "// pooling at every shape of fmnist_sepcnn (2-7x) and lenet (1.2-4x), f32 and bf16 (perf/README.md);",
    "// made lenet's 6-channel bf16 forward 4x slower), else a loop over the lanes.",
    "// size up to 4 MB 3-6x slower than the probes before and after it, and chose 0.25 MB buckets that",
    "// (6 -> 16 channels, 5x5 on 14x14, batch 128, one core), oneDNN 2.6's jit backward-data ran at 36% of the FMA peak",
    "// polls hid as much or more (perf/bench_rank_scaling.py: lenet 2 ranks, exposed all-reduce 1.7-4.5%",
    "// With many rows the forward transposes w first: oneDNN 2.6's sgemm runs x * wT ('N', 'N') 2-5% faster",
    "// evict each other. A 16-float slack moves each row to other sets (perf/README, \"sixth session\").",
    "// oneDNN's at batch 128. The first session's Xeon figures (forward 2-3x) came from per-lane code",
    "// The stop flags travel in one all-reduce (issue 17 added the checkpoint trigger).",
    "// This loop used to run per element; it is now vectorized.",
    "// Previously the buffer was copied twice.",
    "// Before: one thread per bucket. Now a single poller.",
    "// The bucket was 25 MB, now 4 MB by default.",
    "// We measured the loader at 3 GB/s.",
    "// The step went from 12 ms to 9 ms this round.",
    "/* a block comment: the pooling took 0.19 ms against 0.44 */",
    "// (the SELU's gradient from y needs no exp: 0.52 -> 0.22 ns per bf16 value in L2)",
    "// runs 1.5 times faster than oneDNN here",
]
SELF_TEST_GOOD = [
    "// Every 100 ms: on an asynchronous error, one line naming the rank, ncclCommAbort, then MPI_Abort.",
    "// time, in microseconds, after which the new events go (1 ms after the last earlier one ends).",
    "// bucket. Near-ties (within 2% of the least, 5 us, or 0.1% of backward) go to the larger bucket",
    "// Forward and backward FLOPs per sample of layer i: 3x its forward (forward, dx, weight gradient),",
    "// 2x for the first layer with parameters (no dx), 1x before it; and their sum over the model.",
    "// a 16x16 f32 tile: 16 x 16 x 32 x 2 = 16384 FLOPs. Four accumulator tiles (tmm0-3) from two A (tmm4-5)",
    "// 2x2/2 windows of at most 8 channels take a backward window by window; 1x1 and 3x3 convolutions too.",
    "//       [N, classes]. Used to check that PyTorch computes the same logits from the checkpoint.",
    "// which it cannot do before this worker has released mu_, so cv_ is no longer in use by then.",
    "// Every rank knows the write succeeded: only now does `latest` move.",
    "// oneDNN 2.6's sgemm on plain layouts; CUDA 13 and cuDNN 9; format version 3.",
    "// whose round trip (measured by a barrier) was shortest. Cristian's algorithm over MPI.",
    "// A periodic checkpoint every run.checkpoint_seconds (rank 0's clock decides, 300 s by default).",
    "// Each rank's 20-byte all-reduce of the stop flag; comm.bucket_mb candidates 0.0625 to 25 MB.",
    "// The cache line's round trip between two CPUs (bench_core_link measures it, in ns).",
    "// uint8 crosses the bus: 4x fewer bytes than fp32, normalized on the device.",
    "// each gets one timed round, and more rounds while the budget lasts; its later rounds stop early.",
    "// The bucket's all-reduce starts only after its gradients-ready event (never before), overlapping backward.",
    "// The previously recorded event is waited on first.",
    "// Reads the value in GB/s units from the probe and returns seconds per byte.",
    "// 0.5 is SELU's alpha rounded; 1.0507 its scale.",
    "// kMaxSeconds = 1.0: the timed rounds stop within a second of the first.",
]


def self_test():
    failed = 0
    for line in SELF_TEST_BAD:
        if not check_text(line + "\n"):
            print(f"self-test: not flagged, should be: {line}")
            failed += 1
    for line in SELF_TEST_GOOD:
        got = check_text(line + "\n")
        if got:
            print(f"self-test: flagged, should not be ({got[0][1]}: '{got[0][3]}'): {line}")
            failed += 1
    # Comment extraction: strings (also with // inside), raw strings and char literals are not comments; a
    # figure broken across two lines of one comment block is found on the line where it starts.
    code = ('const char* a = "// 1.5 ms in a string";\n'
            'auto r = R"x(/* 2.5 ms */)x"; char q = \'"\'; int n = 1\'000;\n'
            "// the forward took\n"
            "// 4.5 ms on one core\n"
            "int x = 0;  /* fine */ /* 3-5 us */\n")
    got = [(ln, name) for ln, name, _, _ in check_text(code)]
    want = [(3, "time measurement"), (4, "time figure"), (5, "time range")]
    if sorted(set(got)) != sorted(set(want)):
        print(f"self-test: extraction found {got}, wanted {want}")
        failed += 1
    if failed:
        print(f"self-test: {failed} case(s) failed")
        return 1
    print(f"self-test: {len(SELF_TEST_BAD)} bad and {len(SELF_TEST_GOOD)} good comment lines, and the extraction, "
          "as expected")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[2]))
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = pathlib.Path(args.root)
    paths = args.paths or [p for p in DEFAULT_PATHS if (root / p).exists()]
    problems = check_tree(root, paths)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} source comment line(s) carry a measured figure or the code's history: say what "
              "the code does and why, and move figures and history to the commit message or perf/HISTORY.md.")
        return 1
    print(f"source comments under {', '.join(paths)}: no measured figures, no history")
    return 0


if __name__ == "__main__":
    sys.exit(main())
