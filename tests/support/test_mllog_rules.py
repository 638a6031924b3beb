#!/usr/bin/python3
# The restated MLPerf HPC 3.0.0 rules (mllog_rules.py) on hand-made logs: a minimal passing log
# passes, and each condition of common.yaml and the division files fails with the key named when
# broken (an order, a metadata field, a value outside the allowed ones, a count).
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mllog_rules import rule_problems  # noqa: E402


def event(key, value=None, t=0, **metadata):
    return {"key": key, "value": value, "time_ms": t, "metadata": metadata}


def passing_log(division="open"):
    return [event("init_start", t=0), event("submission_org", "org"), event("submission_platform", "1 node"),
            event("submission_division", division), event("submission_status", "research"),
            event("submission_benchmark", "deepcam"), event("number_of_nodes", 1), event("accelerators_per_node", 0),
            event("cache_clear", False), event("init_stop", t=1), event("run_start", t=2),
            event("staging_start", t=2), event("staging_stop", t=3), event("train_samples", 100),
            event("eval_samples", 10), event("epoch_start", t=4, epoch_num=1), event("epoch_stop", t=5, epoch_num=1),
            event("eval_start", t=5, epoch_num=1), event("eval_accuracy", 0.9, t=6, epoch_num=1),
            event("eval_stop", t=6, epoch_num=1), event("run_stop", t=7, status="success")]


def without(log, key):
    return [e for e in log if e["key"] != key]


def replaced(log, key, **fields):
    return [dict(e, **fields) if e["key"] == key else e for e in log]


class MllogRules(unittest.TestCase):
    def assert_fails_on(self, log, key):
        problems = rule_problems(log)
        self.assertTrue(any(p.startswith(key) for p in problems), f"{key} not named in {problems}")

    def test_a_complete_log_passes_in_both_divisions(self):
        self.assertEqual(rule_problems(passing_log("open")), [])
        self.assertEqual(rule_problems(passing_log("closed")), [])

    def test_each_required_key_is_counted(self):
        for key in ["submission_org", "submission_platform", "submission_division", "submission_status",
                    "cache_clear", "init_start", "init_stop", "run_start", "run_stop", "train_samples",
                    "eval_samples", "submission_benchmark"]:
            self.assert_fails_on(without(passing_log(), key), key)
        self.assert_fails_on(passing_log() + [event("eval_samples", 10)], "eval_samples")
        self.assert_fails_on(without(passing_log(), "epoch_start"), "epoch_start or block_start")
        self.assert_fails_on(without(passing_log(), "eval_stop"), "eval_stop or block_stop")

    def test_closed_needs_node_and_accelerator_counts(self):
        self.assertEqual(rule_problems(without(passing_log("open"), "accelerators_per_node")), [])
        self.assert_fails_on(without(passing_log("closed"), "accelerators_per_node"), "accelerators_per_node")
        self.assert_fails_on(replaced(passing_log("closed"), "number_of_nodes", value=0), "number_of_nodes")

    def test_values_outside_the_rules_fail(self):
        self.assert_fails_on(replaced(passing_log(), "submission_division", value="research"), "submission_division")
        self.assert_fails_on(replaced(passing_log(), "submission_status", value="lab"), "submission_status")
        self.assert_fails_on(replaced(passing_log(), "submission_org", value=""), "submission_org")
        self.assert_fails_on(replaced(passing_log(), "submission_benchmark", value="resnet"), "submission_benchmark")
        self.assert_fails_on(replaced(passing_log(), "train_samples", value=""), "train_samples")

    def test_order_and_metadata(self):
        log = passing_log()
        swapped = [e for e in log if e["key"] != "init_stop"]
        swapped.insert(swapped.index(next(e for e in swapped if e["key"] == "run_start")) + 1, event("init_stop", t=2))
        self.assert_fails_on(swapped, "run_start")
        self.assert_fails_on(replaced(log, "init_stop", time_ms=31 * 60 * 1000), "init_stop")
        self.assert_fails_on(without(log, "staging_start"), "staging_stop")
        self.assert_fails_on(replaced(log, "run_stop", metadata={}), "run_stop")
        self.assert_fails_on(replaced(log, "epoch_start", metadata={}), "epoch_start")
        self.assert_fails_on(replaced(log, "eval_stop", metadata={}), "eval_stop")


if __name__ == "__main__":
    unittest.main()
