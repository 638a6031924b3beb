#!/usr/bin/python3
"""Prints .ci/run's closing table: per tier, its install/configure/build/test seconds and test counts,
then each tier's slowest tests (read from that tier's captured ctest output), then the total against
the CI budget.

usage: timing_table.py PHASES_FILE BUDGET_S
PHASES_FILE: one line per phase, "<tier> <phase> <seconds> [<file with the phase's output>]".
"""
import pathlib
import re
import sys

SLOWEST = 15
# '12/934 Test  #12: name .....   Passed    0.35 sec', '***Failed', '***Timeout', '***Skipped', 'Not Run'
TEST_LINE = re.compile(r"^\s*\d+/\d+ Test +#\d+: (.+?) \.*\s*\**"
                       r"(Passed|Failed|Timeout|Skipped|Not Run|Exception|SEGFAULT|Subprocess \w+|\w+)"
                       r"(?:\s*\([^)]*\))?\s+([\d.]+) sec")


def ctest_results(path):
    """(name, seconds, status) for every test line of a captured ctest output."""
    tests = []
    if path and pathlib.Path(path).exists():
        for line in pathlib.Path(path).read_text(errors="replace").splitlines():
            m = TEST_LINE.match(line)
            if m:
                tests.append((m.group(1).strip(), float(m.group(3)), m.group(2)))
    return tests


def read_phases(path):
    """{tier: {phase: seconds, 'output': file}} in the order the tiers ran."""
    tiers = {}
    for line in pathlib.Path(path).read_text().splitlines():
        parts = line.split()
        tier = tiers.setdefault(parts[0], {})
        tier[parts[1]] = tier.get(parts[1], 0.0) + float(parts[2])
        if parts[1] == "test" and len(parts) > 3:
            tier["output"] = parts[3]
    return tiers


def main():
    tiers, budget = read_phases(sys.argv[1]), float(sys.argv[2])
    phases = ("install", "configure", "build", "test")
    print("\n.ci/run: seconds per tier")
    print(f"{'tier':<8}" + "".join(f"{p:>10}" for p in phases) + f"{'total':>8}{'tests':>7}{'passed':>7}"
          f"{'skipped':>8}{'failed':>7}")
    total, results = 0.0, {}
    for name, tier in tiers.items():
        tests = results[name] = ctest_results(tier.get("output"))
        passed = sum(1 for t in tests if t[2] == "Passed")
        skipped = sum(1 for t in tests if t[2] in ("Skipped", "Not Run"))
        tier_total = sum(tier.get(p, 0.0) for p in phases) + tier.get("other", 0.0)
        total += tier_total
        print(f"{name:<8}" + "".join(f"{tier.get(p, 0.0):>10.0f}" for p in phases) + f"{tier_total:>8.0f}"
              f"{len(tests):>7}{passed:>7}{skipped:>8}{len(tests) - passed - skipped:>7}")
    for name, tests in results.items():
        if tests:
            print(f"\n.ci/run: the {min(SLOWEST, len(tests))} slowest tests of the {name} tier "
                  f"(all {len(tests)}: {sum(t[1] for t in tests):.0f} s of test time)")
            for test, secs, status in sorted(tests, key=lambda t: -t[1])[:SLOWEST]:
                print(f"  {secs:7.1f} s  {test}" + ("" if status == "Passed" else f"  ({status})"))
    verdict = "within" if total <= budget else "OVER"
    print(f"\n.ci/run: total {total:.0f} s, {verdict} the CI budget of {budget:.0f} s ({budget / 60:.0f} minutes "
          "on 2 cores; docs/architecture.md, 'Tests and the CI budget')")


if __name__ == "__main__":
    main()
