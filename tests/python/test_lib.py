"""Tests of the ctypes binding (python/memplan/lib.py, graphs.py, recompute.py).

The binding against the CLI ($MEMPLAN) on the corpus, byte for byte: plan
CSVs for every strategy and records file, training graphs and records,
recomputation graphs for every policy and the budget contract.  Errors
carry the library's message.  The modules' doctests run here too.  The
library is $MEMPLAN_LIB (ctest passes this build's).  No torch needed.
"""

import doctest
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from memplan import graphs, lib, recompute, swap   # noqa: E402

MEMPLAN = os.environ.get("MEMPLAN", os.path.join(ROOT, "build", "memplan"))
CORPUS = os.path.join(ROOT, "bench", "corpus")
SMALL_GRAPHS = ["resnet18", "mobilenet_v2", "squeezenet1_1", "vit_b_16"]
# The sanitizer build runs the binding on an ASan library (10x slower): a
# quarter of the corpus and two graphs there, everything in Release.
QUICK = os.environ.get("MEMPLAN_TEST_QUICK") == "1"
if QUICK:
    SMALL_GRAPHS = SMALL_GRAPHS[:2]


def cli(*args, check=True):
    r = subprocess.run([MEMPLAN, *args], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"memplan {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class Doctests(unittest.TestCase):
    def test_module_examples(self):
        globs = {"CORPUS": CORPUS}
        flags = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL
        for mod in (lib, graphs, recompute, swap):
            res = doctest.testmod(mod, extraglobs=globs, optionflags=flags, verbose=False)
            self.assertGreater(res.attempted, 3, mod.__name__)
            self.assertEqual(res.failed, 0, mod.__name__)


class Library(unittest.TestCase):
    def test_loaded_is_the_requested_one(self):
        want = os.environ.get("MEMPLAN_LIB")
        if want:
            self.assertEqual(lib.library_path(), os.path.realpath(want))
        self.assertEqual(lib.version(), "0.1.0")

    def test_strategies_match_the_cli(self):
        names = [s.name for s in lib.strategies()]
        out = cli("strategies").stdout
        for n in names:
            self.assertIn(n, out)
        self.assertIn("auto", names)
        self.assertIn("objects", {s.kind for s in lib.strategies()})


class Errors(unittest.TestCase):
    def test_parse_error_names_file_line_field(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.csv")
            with open(p, "w") as f:
                f.write("id,first,last,size\n0,0,1,x\n")
            with self.assertRaises(lib.ParseError) as cm:
                lib.Problem.read(p)
            self.assertEqual(cm.exception.status, "MP_EPARSE")
            self.assertRegex(str(cm.exception), r"bad\.csv:2: field 'size'")
            self.assertEqual(str(cm.exception), cli("bounds", p, check=False).stderr
                             .strip().removeprefix("memplan: "))

    def test_missing_file_and_unknown_names(self):
        with self.assertRaises(lib.FileError) as cm:
            lib.Problem.read("/nonexistent/x.csv")
        self.assertIn("/nonexistent/x.csv", str(cm.exception))
        p = lib.Problem([(0, 0, 1, 8)])
        with self.assertRaisesRegex(lib.NotFoundError, "unknown strategy 'nope'"):
            p.plan("nope")
        g = lib.Graph.load(os.path.join(CORPUS, "inference", "resnet18.graph.json.gz"))
        with self.assertRaisesRegex(lib.MemplanError, "bogus"):
            lib.Remat(g).policy("bogus")

    def test_invalid_problem_and_conflict(self):
        with self.assertRaisesRegex(lib.MemplanError, "id"):
            lib.Problem([(0, 0, 1, 8), (0, 2, 3, 8)])          # duplicate id
        with self.assertRaises(ValueError):
            lib.Problem([(0, 0, 1)])
        p = lib.Problem([(0, 0, 1, 8), (1, 1, 2, 8)])
        with self.assertRaises(lib.ConflictError) as cm:
            lib.Plan(p, [0, 4]).check()                        # overlap at time 1
        self.assertEqual(cm.exception.status, "MP_ECONFLICT")
        self.assertEqual(lib.Plan(p, [0, 8]).check().footprint, 16)

    def test_graph_parse_error(self):
        with self.assertRaisesRegex(lib.ParseError, "mine.json"):
            lib.Graph.parse('{"format": "memplan-graph/1", "tensors": 3}', "mine.json")

    def test_budget_error_gives_min_peak(self):
        g = lib.Graph.load(os.path.join(CORPUS, "inference", "squeezenet1_1.graph.json.gz"))
        r = lib.Remat(g)
        with self.assertRaises(recompute.BudgetError) as cm:
            r.fit(1)
        self.assertGreater(cm.exception.min_peak, 1)
        self.assertIn(str(cm.exception.min_peak), str(cm.exception))
        # the smallest peak is achievable: a budget of exactly it fits
        plan, rep = r.fit(cm.exception.min_peak)
        self.assertLessEqual(rep.eval.peak, cm.exception.min_peak)


class AgainstCLI(unittest.TestCase):
    """Same inputs through the binding and through `memplan`: same bytes."""

    def test_plans_every_strategy_every_corpus_file(self):
        files = sorted(glob.glob(os.path.join(CORPUS, "*", "*.records.csv")))
        self.assertGreater(len(files), 20)
        files = files[::4] if QUICK else files
        with tempfile.TemporaryDirectory() as d:
            out, mine = os.path.join(d, "cli.csv"), os.path.join(d, "lib.csv")
            for f in files:
                prob = lib.Problem.read(f)
                summary = json.loads(cli("plan", "--strategy", "all", "--json", f).stdout)
                b = prob.bounds()
                self.assertEqual((b.naive, b.offsets, b.objects),
                                 (summary["naive"], summary["lower_bound"],
                                  summary["objects_lower_bound"]), f)
                for s in lib.strategies():
                    if s.all_limit and len(prob) > s.all_limit:
                        continue
                    cli("plan", "--strategy", s.name, "-o", out, f)
                    plan = prob.plan(s.name)
                    plan.check()
                    plan.write_csv(mine)
                    want = read_bytes(out)
                    self.assertEqual(read_bytes(mine), want, (f, s.name))
                    self.assertEqual(plan.to_csv().encode(), want, (f, s.name))
                    # and the CLI's plan, read back, is the same plan
                    back = prob.read_plan(out)
                    self.assertEqual(back.offsets, plan.offsets, (f, s.name))
                    self.assertEqual(back.footprint, plan.footprint)

    def test_svg_bound_of_the_plan_kind(self):
        """write_svg draws the bound of the plan's kind, as `plan --svg` does."""
        f = os.path.join(CORPUS, "inference", "mobilenet_v2.records.csv")
        prob = lib.Problem.read(f)
        with tempfile.TemporaryDirectory() as d:
            out, mine = os.path.join(d, "cli.svg"), os.path.join(d, "lib.svg")
            for s, kind in (("greedy-size", "offsets"), ("objects-greedy-size", "objects")):
                cli("plan", "--strategy", s, "--title", "mobilenet_v2", "--svg", out, f)
                prob.plan(s).write_svg(mine, title="mobilenet_v2")
                self.assertEqual(read_bytes(mine), read_bytes(out), s)
                self.assertIn(f">lower bound ({kind}) ".encode(), read_bytes(mine))

    def test_svg_names(self):
        """write_svg(names=...) puts each record's name in its tooltip and on
        the largest buffers; a wrong number of names is refused."""
        prob = lib.Problem([(0, 0, 1, 4096), (1, 1, 2, 64), (2, 2, 3, 4096)])
        plan = prob.plan("greedy-size")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "n.svg")
            plan.write_svg(out, title="t", names=["conv1.out", "<b>&", "fc.out"])
            svg = read_bytes(out)
            self.assertIn(b"<title>conv1.out, id 0:", svg)
            self.assertIn(b"&lt;b&gt;&amp;, id 1:", svg)
            self.assertNotIn(b"<b>&", svg)
            with self.assertRaises(ValueError):
                plan.write_svg(out, names=["one"])

    def test_training_graphs_and_records(self):
        with tempfile.TemporaryDirectory() as d:
            for name in SMALL_GRAPHS:
                path = os.path.join(CORPUS, "inference", name + ".graph.json.gz")
                gc, rc = os.path.join(d, "cli.json"), os.path.join(d, "cli.csv")
                cli("graph", "--train", "--graph-out", gc, "--records-out", rc, path)
                train = lib.Graph.load(path).backward()
                gl, rl = os.path.join(d, "lib.json"), os.path.join(d, "lib.csv")
                train.save(gl)
                train.records().write(rl)
                self.assertEqual(read_bytes(gl), read_bytes(gc), name)
                self.assertEqual(read_bytes(rl), read_bytes(rc), name)
                plan = train.share().place("auto")
                plan.check()
                self.assertGreaterEqual(plan.footprint, train.peak())

    def test_recompute_every_policy(self):
        policies = ["none", "sqrt", "cheap", "budget", "logn", "revolve", "optimal"]
        with tempfile.TemporaryDirectory() as d:
            for name in SMALL_GRAPHS:
                path = os.path.join(CORPUS, "inference", name + ".graph.json.gz")
                r = lib.Remat(lib.Graph.load(path))
                for pol in policies:
                    gc = os.path.join(d, "cli.json")
                    js = json.loads(cli("remat", "--policy", pol, "--json", "--graph-out", gc,
                                        path).stdout)["policies"][0]
                    plan = r.policy(pol)
                    e = r.evaluate(plan)
                    self.assertEqual((e.peak, e.extra_flops, e.recomputed, e.kept),
                                     (js["peak"], js["extra_flops"], js["recomputed"],
                                      js["kept"]), (name, pol))
                    gl = os.path.join(d, "lib.json")
                    r.apply(plan).save(gl)
                    self.assertEqual(read_bytes(gl), read_bytes(gc), (name, pol))

    def test_budget_contract(self):
        path = os.path.join(CORPUS, "inference", "resnet18.graph.json.gz")
        r = lib.Remat(lib.Graph.load(path))
        none = r.evaluate(r.policy("none")).peak
        calls = []
        for frac in (0.9, 0.6, 0.5):
            budget = int(none * frac)
            js = json.loads(cli("remat", "--budget", str(budget), "--json", path).stdout)
            plan, rep = r.fit(budget, progress=lambda done, total: calls.append((done, total)))
            self.assertTrue(rep.feasible)
            self.assertLessEqual(rep.eval.peak, budget)
            self.assertEqual(rep.eval, r.evaluate(plan))
            fit = js["fit"]
            self.assertEqual((rep.eval.peak, rep.eval.extra_flops, rep.min_peak, rep.candidates),
                             (fit["peak"], fit["extra_flops"], fit["min_peak"],
                              fit["candidates"]), frac)
            self.assertEqual(plan.policy, js["policies"][0]["plan"])
        self.assertTrue(calls and calls[-1][0] == calls[-1][1])


class SwapAgainstCLI(unittest.TestCase):
    def test_every_score_both_modes(self):
        path = os.path.join(CORPUS, "inference", "squeezenet1_1.graph.json.gz")
        it = swap.Iteration.from_graph(lib.Graph.load(path), device="v100")
        js = json.loads(cli("swap", "--json", "--device", "v100", "--link", "pcie4", path).stdout)
        self.assertEqual(it.load_min(), js["load_min"])
        limit = (js["peak"] + js["load_min"]) // 2
        jl = json.loads(cli("swap", "--json", "--device", "v100", "--link", "pcie4", "--mode",
                            "limit", "--limit", str(limit), path).stdout)
        for row, lrow in zip(js["scores"], jl["scores"]):
            items, sim = it.select(score=row["score"], link="pcie4")
            self.assertEqual((len(items), sim.peak, sim.stall_ns),
                             (row["swapped"], row["peak"], row["stall_ns"]), row["score"])
            again = it.simulate(items, link="pcie4")
            self.assertEqual((again.peak, again.stall_ns), (sim.peak, sim.stall_ns))
            items, sim = it.select(mode="limit", limit=limit, score=row["score"], link="pcie4")
            self.assertEqual((len(items), sim.peak, sim.limit_met),
                             (lrow["swapped"], lrow["peak"], lrow["limit_met"]), row["score"])


class Execution(unittest.TestCase):
    def test_planned_run_equals_naive_run(self):
        g = lib.Graph.load(os.path.join(ROOT, "tests", "graph", "mlp.json"))
        train = g.backward()
        plan = train.share().place("auto")
        plan.check()
        naive, planned = train.run(seed=3), train.run(plan=plan, seed=3)
        self.assertTrue(naive)
        self.assertEqual(naive, planned)
        self.assertNotEqual(train.run(seed=4), naive)   # the seed matters


if __name__ == "__main__":
    unittest.main()
