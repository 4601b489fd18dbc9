"""Tests of memplan.torch.report (python/memplan/_report.py, _report_html.py).

Hand-computed numbers of a tiny network (inference and training), module
tree sums of a nested model, the HTML page (balanced, self-contained,
escaped), and torchvision ResNet-18 end to end.  Every plan is proved by the
library's checker.  The library is $MEMPLAN_LIB (ctest passes this build's).
"""

import html.parser
import os
import sys
import tempfile
import unittest
from unittest import mock

import torch              # no skipping: a missing torch must fail loudly
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from memplan import _report, _report_html, lib   # noqa: E402
from memplan._report import report                 # noqa: E402
from test_export import Tiny   # noqa: E402  conv -> relu -> flatten -> linear


def tiny_report(train=False, **kw):
    torch.manual_seed(0)
    return report(Tiny(), torch.randn(2, 3, 8, 8), train=train, name="tiny", **kw)


class Block(nn.Module):
    """relu(conv(x)) + x: the add is the block's own code."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.conv(x)) + x


class Nested(nn.Module):
    """stem conv -> blocks (Sequential of two Blocks) -> x * 2 (the model's
    own code) -> flatten -> fc."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.blocks = nn.Sequential(Block(), Block())
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        y = self.blocks(self.stem(x)) * 2
        return self.fc(torch.flatten(y, 1))


def check_plans(r):
    """The best plan passes both checkers: the graph's and, as ordinary
    records, the core one."""
    r.plan.check()
    problem, offsets = _report.plan_problem(r.graph, r.plan)
    lib.Plan(problem, offsets).check()


def assert_tree_sums(test, r):
    """Every row = its own bytes + its children's rows."""
    kids = {}
    for m in r.modules:
        if m.path != _report.ROOT:
            kids.setdefault(_report.parent(m.path), []).append(m)
    for m in r.modules:
        below = kids.get(m.path, [])
        test.assertEqual(m.bytes, m.own_bytes + sum(c.bytes for c in below), m.path)
        test.assertEqual(m.param_bytes >= sum(c.param_bytes for c in below), True, m.path)


class TinyInference(unittest.TestCase):
    # Batch 2, float32.  Records (graph-format.md's example):
    #   input [2,3,8,8] 1536 B  steps 0..0 (read by conv)
    #   conv  [2,4,6,6] 1152 B  0..1
    #   relu  [2,4,6,6] 1152 B  1..3 (its view flatten is read by fc at 3)
    #   fc    [2,5]       40 B  3..3 (output)
    # Live bytes per step: 2688, 2304, 1152, 1192; the peak is step 0.
    @classmethod
    def setUpClass(cls):
        cls.r = tiny_report()

    def test_totals(self):
        r = self.r
        self.assertEqual(r.naive_bytes, 1536 + 1152 + 1152 + 40)
        self.assertEqual(r.parameter_bytes, 4 * (108 + 4 + 720 + 5))
        self.assertEqual(r.input_bytes, 1536)
        self.assertEqual(r.gradient_bytes, 0)
        self.assertEqual(r.lower_bound, 2688)
        self.assertEqual(r.lower_bound, r.graph.records().bounds().offsets)
        # relu may write over conv (its last reader), which does not help
        # at step 0, where the input and conv are live together
        self.assertEqual(r.inplace_bound, 2688)
        self.assertEqual(r.footprint, 2688)
        self.assertEqual(r.ratio, 1.0)
        check_plans(r)

    def test_curve_and_peak(self):
        r = self.r
        self.assertEqual(r.curve, [2688, 2304, 1152, 1192])
        self.assertEqual((r.peak_step, r.peak_bytes, r.peak_node, r.peak_op),
                         (0, 2688, "conv", "nn.Conv2d"))
        self.assertIsNone(r.backward_step)
        self.assertEqual([(t.name, t.node, t.op, t.module, t.shape, t.dtype, t.bytes, t.role)
                          for t in r.live_at_peak],
                         [("input", "", "", "(input)", (2, 3, 8, 8), "float32", 1536, "input"),
                          ("conv", "conv", "nn.Conv2d", "conv", (2, 4, 6, 6), "float32", 1152,
                           "activation")])

    def test_modules(self):
        r = self.r
        self.assertEqual(r.module_bytes, {"": 3880, "(input)": 1536, "conv": 1152,
                                          "relu": 1152, "fc": 40})
        self.assertEqual([m.path for m in r.modules], ["", "(input)", "conv", "relu", "fc"])
        params = {m.path: m.param_bytes for m in r.modules}
        self.assertEqual((params["conv"], params["fc"], params[""]), (448, 2900, 3348))
        self.assertEqual(r.modules[0].tensors, 4)
        assert_tree_sums(self, r)

    def test_text(self):
        t = self.r.text()
        for s in ("tiny", "2.62 KiB", "(input)", "step 0 of 4 (node conv, nn.Conv2d)",
                  "^ peak at step 0", "lower bound (max live bytes)"):
            self.assertIn(s, t)

    def test_strategy_is_used(self):
        r = tiny_report(strategy="greedy-breadth")
        self.assertIn("placed by greedy-breadth", r.plans[0].label)
        self.assertEqual(r.plans[0].placement, "greedy-breadth")
        check_plans(r)
        with self.assertRaisesRegex(lib.NotFoundError, "unknown strategy 'nope'"):
            tiny_report(strategy="nope")


class TinyTraining(unittest.TestCase):
    # train=True appends loss (softmax_xent against an int64 target [2],
    # 16 B), then seed:loss, bwd:loss, bwd:fc, bwd:flatten (a view),
    # bwd:relu, bwd:conv: steps 4..10.  At step 9 relu_backward reads
    # grad:relu (a view of grad:flatten, 1152 B) and relu (1152 B) and writes
    # grad:conv (1152 B); the input (read by conv's backward at 10) and the
    # loss (4 B, an output) are live too: 4996 B, the peak.
    @classmethod
    def setUpClass(cls):
        cls.r = tiny_report(train=True)

    def test_peak_has_gradients(self):
        r = self.r
        self.assertEqual(r.backward_step, 5)
        self.assertEqual((r.peak_step, r.peak_node, r.peak_bytes), (9, "bwd:relu", 4996))
        live = {t.name: (t.role, t.module, t.bytes) for t in r.live_at_peak}
        self.assertEqual(live, {"input": ("input", "(input)", 1536),
                                "relu": ("activation", "relu", 1152),
                                "grad:flatten": ("gradient", "fc", 1152),
                                "grad:conv": ("gradient", "relu", 1152),
                                "loss": ("output", "(loss)", 4)})

    def test_totals(self):
        r = self.r
        # + target 16, loss 4, grad:loss 4, grad:fc 40, grad:flatten, grad:conv
        self.assertEqual(r.naive_bytes, 3880 + 16 + 4 + 4 + 40 + 1152 + 1152)
        self.assertEqual(r.lower_bound, 4996)
        self.assertEqual(r.gradient_bytes, r.parameter_bytes)
        # in place, relu_backward overwrites grad:flatten: the most is then at
        # bwd:fc (step 7): input, relu, loss, grad:fc, grad:flatten
        self.assertEqual(r.inplace_bound, 1536 + 1152 + 4 + 40 + 1152)
        self.assertEqual(r.footprint, r.inplace_bound)
        check_plans(r)

    def test_modules_split_forward_and_backward(self):
        rows = {m.path: m for m in self.r.modules}
        self.assertEqual((rows["fc"].forward_bytes, rows["fc"].backward_bytes), (40, 1152))
        self.assertEqual(rows["(loss)"].bytes, 4 + 4 + 40)
        self.assertEqual(rows[""].bytes, self.r.naive_bytes)
        assert_tree_sums(self, self.r)
        self.assertIn("backward", self.r.text())

    def test_logits_required(self):
        class Vector(nn.Module):
            def forward(self, x):
                return x.sum(1)
        with self.assertRaisesRegex(ValueError, r"logits \[N, K\].*float32\[2\]"):
            report(Vector(), torch.randn(2, 3), train=True)


class NestedModules(unittest.TestCase):
    # batch 2, 4 channels, 6x6 float32: every activation is 1152 B but the
    # input (864 B) and fc (24 B).  Each block makes conv, act and its add.
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.r = report(Nested(), torch.randn(2, 3, 6, 6), name="nested")

    def test_tree(self):
        r, a = self.r, 1152
        mb = r.module_bytes
        self.assertEqual(mb["blocks.0"], 3 * a)
        self.assertEqual(mb["blocks.1"], 3 * a)
        self.assertEqual(mb["blocks"], 6 * a)
        self.assertEqual(mb["blocks.0.conv"], a)
        rows = {m.path: m for m in r.modules}
        self.assertEqual(rows["blocks.0"].own_bytes, a)      # the add
        self.assertEqual(rows["blocks"].own_bytes, 0)        # a Sequential has no code
        self.assertEqual(rows[""].own_bytes, a)              # y * 2
        self.assertEqual(mb[""], 864 + a + 6 * a + a + 24)
        self.assertEqual(mb[""], r.naive_bytes)
        self.assertEqual(rows["blocks.1.act"].depth, 3)
        assert_tree_sums(self, r)
        check_plans(r)

    def test_depth_limit(self):
        t = self.r.text(depth=1)
        self.assertIn("blocks", t)
        self.assertNotIn("blocks.0", t.split("Live at the peak")[0])

    def test_without_module_scopes(self):
        # should tracing with module scopes fail, module nodes still name
        # their module and the rest is "(functional)"
        with mock.patch.object(_report, "module_scopes", return_value=None):
            torch.manual_seed(0)
            r = report(Nested(), torch.randn(2, 3, 6, 6), name="nested")
        self.assertFalse(r.scoped)
        self.assertEqual(r.module_bytes["(functional)"], 3 * 1152)   # two adds, the mul
        self.assertEqual(r.module_bytes["blocks.0"], 2 * 1152)
        assert_tree_sums(self, r)
        self.assertIn("(functional)", r.html())


class Tags(html.parser.HTMLParser):
    """Checks that every element is closed in order; counts tags."""
    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.count, self.errors, self.text = [], {}, [], []

    def handle_starttag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def parse(page):
    p = Tags()
    p.feed(page)
    p.close()
    return p


class Html(unittest.TestCase):
    def test_page_is_balanced_and_self_contained(self):
        r = tiny_report(train=True)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tiny.html")
            r.write_html(path)
            with open(path, encoding="utf-8") as f:
                page = f.read()
        p = parse(page)
        self.assertEqual((p.errors, p.stack), ([], []))
        self.assertEqual(p.count["svg"], 2)            # load curve, plan
        self.assertGreaterEqual(p.count["rect"], 10)   # the plan's tensors
        self.assertEqual(p.count.get("script", 0), 0)
        for bad in ("http://", "https://", "src=", "<link", "@import", "url("):
            self.assertNotIn(bad, page)
        text = "".join(p.text)
        for name in ("conv", "relu", "fc", "(input)", "(loss)", "grad:conv", "tiny"):
            self.assertIn(name, text)
        self.assertIn("peak", text)
        self.assertIn("<title>grad:flatten, id ", page)    # plan tooltips name tensors
        self.assertIn(">grad:flatten (1.12 KiB)</text>", page)   # and the largest carry names

    def test_names_are_escaped(self):
        # torch forbids only "." in module names: ModuleDict keys may hold <>&
        class Odd(nn.Module):
            def __init__(self):
                super().__init__()
                self.d = nn.ModuleDict({"<b>&x": nn.ReLU()})

            def forward(self, x):
                return self.d["<b>&x"](x) * 2
        r = report(Odd(), torch.randn(2, 3), name="a<script>")
        self.assertIn("d.<b>&x", r.module_bytes)
        page = r.html()
        self.assertNotIn("<b>", page)
        self.assertNotIn("<script", page)
        self.assertIn("d.&lt;b&gt;&amp;x", page)
        p = parse(page)
        self.assertEqual((p.errors, p.stack), ([], []))
        self.assertIn("d.<b>&x", "".join(p.text))

    def test_escape_helper(self):
        self.assertEqual(_report_html.esc("<a href=\"x\">&'"),
                         "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;")
        self.assertEqual(_report_html.esc(3), "3")

    def test_ticks(self):
        self.assertEqual(_report_html.nice_ticks(2.54), [0, 0.5, 1, 1.5, 2, 2.5, 3])
        self.assertEqual(_report_html.nice_ticks(369, 10, integer=True)[-1], 400)
        self.assertEqual(_report_html.nice_ticks(4, 10, integer=True), [0, 1, 2, 3, 4])


class ResNet18(unittest.TestCase):
    def test_end_to_end(self):
        torch.manual_seed(0)
        m = torchvision.models.resnet18()
        r = report(m, torch.randn(2, 3, 224, 224), train=True, name="resnet18")
        self.assertTrue(r.scoped)
        self.assertNotIn("(functional)", r.module_bytes)
        self.assertEqual(r.module_bytes[""], r.naive_bytes)
        self.assertEqual(max(r.curve), r.lower_bound)
        self.assertEqual(r.lower_bound, r.graph.records().bounds().offsets)
        self.assertLessEqual(r.inplace_bound, r.lower_bound)
        self.assertGreaterEqual(r.footprint, r.inplace_bound)
        self.assertLess(r.footprint, r.naive_bytes)
        # the residual add runs in the block's forward: the block's own code
        rows = {x.path: x for x in r.modules}
        self.assertGreater(rows["layer1.0"].own_bytes, 0)
        self.assertEqual(rows["layer1"].own_bytes, 0)
        self.assertIn("gradient", {t.role for t in r.live_at_peak})
        self.assertEqual(r.parameter_bytes,
                         4 * sum(p.numel() for p in m.state_dict().values()
                                 if p.dtype == torch.float32)
                         + 8 * sum(p.numel() for p in m.state_dict().values()
                                   if p.dtype == torch.int64))
        assert_tree_sums(self, r)
        check_plans(r)
        self.assertLess(r.planning_s, 2.0)
        p = parse(r.html())
        self.assertEqual((p.errors, p.stack), ([], []))
        self.assertIn("layer4.1.conv2", r.text(depth=3))


if __name__ == "__main__":
    unittest.main()
