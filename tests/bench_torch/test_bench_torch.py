"""tests/bench_torch/test_bench_torch.py -- the logic of bench/torch's
fit benchmark without running it: the interleaved timing's order
(timing.py, on tiny modules), the noise floor and the verdicts of issue
14's targets (report.py) on hand-made records, and a run's records from
before the interleaved timing still rendered.

    /usr/bin/python3 tests/bench_torch/test_bench_torch.py
"""

import os
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "torch"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import report  # noqa: E402

MIB = 1 << 20


def meta(**kw):
    m = {"kind": "meta", "cpu": "test", "cores": "2", "mem_gib": 1.0, "torch": "1.13",
         "torchvision": "0.14", "rev": "abc", "lib": "x", "date": "d", "load_start": [1, 1, 1],
         "quick": True, "repeat": 3, "command": "c", "sizes": {"m": [4, 8]},
         "issue_sizes": {"m": [8, 8]}, "describe": {"m": "batch 4"}, "native_nr": False,
         "timing": "rounds", "threads": None, "default_threads": 1, "thread_counts": [1, 2]}
    m.update(kw)
    return m


def row(variant, kind, peak, **kw):
    r = {"model": "m", "batch": 4, "dim": 8, "section": "main", "variant": variant,
         "kind": kind, "peak": peak * MIB}
    r.update(kw)
    return r


def fit(f, peak, budget, **kw):
    return row("memplan 1/%d" % f, "memplan", peak, fraction=f, budget=budget * MIB,
               fits=peak <= budget, **kw)


def seg(k, peak):
    return row("checkpoint_sequential k=%d" % k, "segments", peak, segments=k,
               checkpointed=k - 1, pieces=10)


def rounds(times, name="main"):
    return {"model": "m", "batch": 4, "dim": 8, "section": "main", "kind": "rounds",
            "set": name, "rounds": 3, "seconds": 1.0, "load": [1.0, 1.0],
            "order": list(times), "times": times, "warmup": {}, "errors": {}}


# plain and plain again differ by 2% in every round: the noise floor is 2%
PLAIN, AGAIN = [1.0, 1.0, 1.0], [1.02, 1.02, 1.02]


class NoiseFloor(unittest.TestCase):
    def test_larger_of_median_ratio_and_median_pair(self):
        # medians 1.0 and 1.01 (ratio 1%); per round 0%, 5%, 3%: median 3%
        t = {"plain": [1.0, 1.0, 1.0], "plain again": [1.0, 1.05, 0.97]}
        self.assertAlmostEqual(report.noise_floor(t), 0.03)
        # per round 1%, 1%, 4% (median 1%); medians 1.00 and 1.04: 4%
        t = {"plain": [1.0, 1.0, 1.0], "plain again": [1.04, 1.01, 1.04]}
        self.assertAlmostEqual(report.noise_floor(t), 0.04)

    def test_none_without_the_control(self):
        self.assertIsNone(report.noise_floor({"plain": [1.0]}))


def group(records):
    return report.groups(records)[("main", "m")]


class Verdicts(unittest.TestCase):
    def records(self, fit_time, seg_time, fit_peak=500, seg_peak=500):
        return [meta(), row("plain", "plain", 1500), fit(2, fit_peak, 750, plan_kind="flat",
                                                          runs=3),
                seg(4, seg_peak),
                rounds({"plain": PLAIN, "memplan 1/2": fit_time, "plain again": AGAIN,
                        "checkpoint_sequential k=4": seg_time})]

    def verdict(self, records):
        g = group(records)
        return report.verdict(g, g.of("memplan")[0])

    def test_as_much_memory_slower_beyond_noise_fails(self):
        lines, ok = self.verdict(self.records([1.2] * 3, [1.1] * 3))    # 9% > 2%
        self.assertFalse(ok)
        self.assertIn("**slower** than k=4", lines[0])

    def test_as_much_memory_slower_within_noise_holds(self):
        lines, ok = self.verdict(self.records([1.12] * 3, [1.1] * 3))   # 1.8% <= 2%
        self.assertTrue(ok, lines)
        self.assertIn("no slower within the tolerance: holds", lines[0])
        self.assertIn("tolerance 2.0%", lines[0])

    def test_compared_per_round_not_by_medians(self):
        # load rises in rounds 3-5 and memplan's step also had one slow
        # round: medians 1.10 against 1.00 (10%), but per round 1.00, 1.01,
        # 1.20, 1.00, 1.00: median 1.00
        recs = self.records([1.0, 1.01, 1.2, 1.1, 1.3], [1.0, 1.0, 1.0, 1.1, 1.3])
        recs[-1]["times"].update(plain=[1.0] * 5, **{"plain again": [1.02] * 5})
        lines, ok = self.verdict(recs)
        self.assertTrue(ok, lines)
        self.assertIn("memplan 1.00x (slower in 2 of 5 rounds)", lines[0])

    def test_beyond_the_tolerance_but_faster_in_one_round_holds(self):
        # per round 1.05, 1.05, 0.99: median 5% > 2%, but faster once
        lines, ok = self.verdict(self.records([1.05, 1.05, 0.99], [1.0] * 3))
        self.assertTrue(ok, lines)
        self.assertIn("memplan 1.05x (slower in 2 of 3 rounds)", lines[0])
        self.assertIn("beyond the tolerance against k=4 but faster in some round: not shown "
                      "slower, holds", lines[0])

    def test_less_memory_than_every_row_holds_vacuously(self):
        # memplan at 400 MiB, slower than k=4 at 500: not judged against it
        lines, ok = self.verdict(self.records([1.3] * 3, [1.1] * 3, fit_peak=400))
        self.assertTrue(ok, lines)
        self.assertIn("no checkpoint_sequential row runs in as little memory (least: k=4, "
                      "500.0 MiB): holds vacuously", lines[0])
        self.assertIn("for information, not a target", lines[2])

    def test_the_time_limit_is_judged_on_medians(self):
        # 1.45x the plain step's median: within the budget and against k=4,
        # but over 1.4x
        lines, ok = self.verdict(self.records([1.45, 1.45, 9.0], [1.5] * 3))
        self.assertFalse(ok)
        self.assertIn("= 1.45x plain -- <= 1.4x: no", lines[0])

    def test_the_same_shape_is_named(self):
        recs = self.records([1.2] * 3, [1.1] * 3)
        recs[2].update(plan_kind="sequential", runs=3)     # k=4: 3 runs, same peak
        lines, _ = self.verdict(recs)
        self.assertIn("the same plan: k=4's shape", lines[0])

    def test_fastest_within_the_budget(self):
        recs = self.records([1.2] * 3, [1.1] * 3)
        recs.insert(4, seg(8, 700))      # fits 750, slower than k=4
        recs[-1]["times"]["checkpoint_sequential k=8"] = [1.3] * 3
        lines, _ = self.verdict(recs)
        self.assertIn("fastest checkpoint_sequential row within the budget: k=4 (500.0 MiB, "
                      "1.10 s [1.10-1.10]); memplan 1.20 s [1.20-1.20] = 1.09x it", lines[1])

    def test_equal_memory(self):
        recs = self.records([1.2] * 3, [1.1] * 3)
        recs.append(row("memplan at checkpoint_sequential k=4's peak", "memplan-eq", 480,
                        budget=500 * MIB, equal_to="checkpoint_sequential k=4"))
        recs.append(rounds({"plain": PLAIN, "checkpoint_sequential k=4": [1.1] * 3,
                            "plain again": AGAIN,
                            "memplan at checkpoint_sequential k=4's peak": [1.0] * 3}, "equal"))
        g = group(recs)
        text = report.equal_verdict(g, g.of("memplan-eq")[0])
        self.assertIn("per round 0.91x (slower in 0 of 3 rounds) (tolerance 2.0%): no slower: "
                      "**holds**", text)
        self.assertIn("memplan at checkpoint_sequential k=4's peak", report.render(recs))
        recs[-1]["times"]["memplan at checkpoint_sequential k=4's peak"] = [1.2, 1.2, 1.0]
        text = report.equal_verdict(group(recs), g.of("memplan-eq")[0])
        self.assertIn("per round 1.09x (slower in 2 of 3 rounds) (tolerance 2.0%): beyond the "
                      "tolerance but faster in some round: not shown slower, **holds**", text)
        recs[-1]["times"]["memplan at checkpoint_sequential k=4's peak"] = [1.2, 1.2, 1.2]
        text = report.equal_verdict(group(recs), g.of("memplan-eq")[0])
        self.assertIn("slower in every round: **fails**", text)


class OldRecords(unittest.TestCase):
    def test_rows_timed_alone_are_read_with_no_tolerance(self):
        old = meta(timing=None, threads=2)
        del old["timing"], old["default_threads"], old["thread_counts"]
        recs = [old, row("plain", "plain", 1500, time=1.0, load=1.5),
                fit(2, 500, 750, time=1.05, load=1.5, plan_kind="flat", runs=3),
                dict(seg(4, 500), time=1.0, load=1.5)]
        for r in recs[1:]:
            del r["section"]
        lines, ok = report.verdict(group(recs), recs[2])
        self.assertFalse(ok)            # 5% slower, no noise floor to forgive it
        self.assertIn("no noise floor in this run: tolerance 0", lines[0])
        page = report.render(recs)
        self.assertIn("| load |", page)
        self.assertNotIn("| plain again |", page)


class Interleaved(unittest.TestCase):
    def test_rotation_warmup_and_a_failing_entry(self):
        import torch
        import timing
        calls = []

        class Tagged(torch.nn.Module):
            def __init__(self, lin, tag, fail=False):
                super().__init__()
                self.lin, self.tag, self.fail = lin, tag, fail

            def forward(self, x):
                calls.append(self.tag)
                if self.fail and len(calls) > 3:
                    raise RuntimeError("boom")
                return self.lin(x)

        lin = torch.nn.Linear(4, 3)
        before = lin.weight.detach().clone()
        mods = [("a", Tagged(lin, "a"), None), ("b", Tagged(lin, "b", fail=True), None),
                ("c", Tagged(lin, "c"), None)]
        out = timing.interleaved(lin, mods, torch.randn(5, 4), 3)
        # warm-up a b c; round 0: a (b fails: dropped) c; round 1 starts at
        # b, reversed: a c; round 2 starts at c: c a
        self.assertEqual(calls, ["a", "b", "c", "a", "b", "c", "a", "c", "c", "a"])
        self.assertEqual([len(out["times"][k]) for k in "abc"], [3, 0, 3])
        self.assertIn("boom", out["errors"]["b"])
        self.assertTrue(torch.equal(lin.weight, before))
        self.assertIsNone(lin.weight.grad)


if __name__ == "__main__":
    unittest.main()
