#!/usr/bin/python3
# The project's MLLOG checker must catch what MLCommons' checker caught in scaletrain's logs before
# they carried submission metadata, cache_clear and eval_samples: given a real run's mllog.log that
# passes `check_mllog.py --rules-only`, copies with every line of one of those keys removed must
# each fail, naming the key.
"""usage: mllog_key_removal.py MLLOG_FILE WORK_DIR"""
import json
import os
import subprocess
import sys

KEYS = ["submission_org", "submission_platform", "submission_division", "submission_status", "cache_clear",
        "eval_samples"]
CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_mllog.py")


def key_of(line):
    return json.loads(line[len(":::MLLOG "):])["key"] if line.startswith(":::MLLOG ") else None


def check(path):
    r = subprocess.run(["/usr/bin/python3", CHECKER, "--rules-only", path], capture_output=True, text=True,
                       check=False)
    return r.returncode, r.stdout + r.stderr


def main():
    log, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    with open(log, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    rc, out = check(log)
    if rc != 0:
        sys.exit(f"FAIL: the untouched log must pass first:\n{out}")
    for key in KEYS:
        kept = [line for line in lines if key_of(line) != key]
        if len(kept) == len(lines):
            sys.exit(f"FAIL: {log} has no {key} line to remove")
        copy = os.path.join(work, f"without_{key}.log")
        with open(copy, "w", encoding="utf-8") as f:
            f.writelines(kept)
        rc, out = check(copy)
        named = any(line.strip().startswith(f"{key}:") for line in out.splitlines())
        if rc == 0 or not named:
            sys.exit(f"FAIL: without {key} the checker exited {rc} and {'named' if named else 'did not name'} "
                     f"the key:\n{out}")
        print(f"without {key}: rejected ({len(lines) - len(kept)} line(s) removed)")
    print(f"OK: the checker rejects each of the {len(KEYS)} copies, naming the removed key")


if __name__ == "__main__":
    main()
