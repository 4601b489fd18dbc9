"""Tests of the PyTorch exporter (python/memplan) and the graph format.

Hand-checked records of a tiny network (inference and training), alias
accounting, graph validity, torchvision exports planned by the C CLI
($MEMPLAN), and the CLI's error handling.  Run by tests/python/run.sh.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch              # no skipping: a missing torch must fail loudly
import torch.nn as nn
import torchvision        # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYDIR)

from memplan import records as R          # noqa: E402
from memplan.trace import export_module   # noqa: E402

PYTHON = "/usr/bin/python3"


class Tiny(nn.Module):
    """conv(3->4, 3x3) -> relu -> flatten (a view) -> linear(144->5)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(144, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.relu(self.conv(x)), 1))


def tiny_graph(train):
    torch.manual_seed(0)
    return export_module(Tiny(), torch.randn(2, 3, 8, 8), "tiny", train=train)


def named_records(graph, include_persistent=False):
    names = {t["id"]: t["name"] for t in graph["tensors"]}
    return [(names[i], f, l, s) for i, f, l, s in R.records(graph, include_persistent)]


def run_export(*args):
    env = dict(os.environ, PYTHONPATH=PYDIR)
    return subprocess.run([PYTHON, "-m", "memplan.export", *args], env=env,
                          capture_output=True, text=True, timeout=300)


class TinyInference(unittest.TestCase):
    # Batch 2, input 8x8, float32 (4 bytes):
    #   input [2,3,8,8]   = 384 floats = 1536 B, no producer: first 0
    #   step 0 nn.Conv2d  -> conv [2,4,6,6] = 288 floats = 1152 B
    #   step 1 nn.ReLU    -> relu [2,4,6,6] = 1152 B (reads conv: conv lives 0..1)
    #   step 2 flatten    -> [2,144], a view of relu: no bytes, no record
    #   step 3 nn.Linear  -> fc [2,5] = 40 B, the graph output: lives 3..3 (last step)
    # relu is read through its alias at step 3: relu lives 1..3.  The input
    # is last read by the conv: 0..0.  Weights are persistent, not records.
    EXPECTED = [("input", 0, 0, 1536), ("conv", 0, 1, 1152),
                ("relu", 1, 3, 1152), ("fc", 3, 3, 40)]

    def test_records(self):
        g = tiny_graph(False)
        R.validate(g)
        self.assertEqual(named_records(g), self.EXPECTED)

    def test_persistent_records(self):
        # conv.weight 4x3x3x3 = 108 floats, conv.bias 4, fc.weight 5x144 = 720,
        # fc.bias 5: all live over the whole run, 0..3.
        rows = named_records(tiny_graph(False), include_persistent=True)
        self.assertEqual(rows, [("input", 0, 0, 1536), ("conv.weight", 0, 3, 432),
                                ("conv.bias", 0, 3, 16), ("conv", 0, 1, 1152),
                                ("relu", 1, 3, 1152), ("fc.weight", 0, 3, 2880),
                                ("fc.bias", 0, 3, 20), ("fc", 3, 3, 40)])

    def test_nodes(self):
        g = tiny_graph(False)
        ops = [g["nodes"][i]["op"] for i in g["order"]]
        self.assertEqual(ops, ["nn.Conv2d", "nn.ReLU", "torch.flatten", "nn.Linear"])
        by_op = {n["op"]: n for n in g["nodes"]}
        self.assertTrue(by_op["nn.ReLU"]["attrs"]["inplace_capable"])
        self.assertFalse(by_op["nn.Conv2d"]["attrs"]["inplace_capable"])
        # 2 x out elements (288) x Cin*kh*kw (27); 2 x out (10) x 144
        self.assertEqual(by_op["nn.Conv2d"]["attrs"]["flops"], 2 * 288 * 27)
        self.assertEqual(by_op["nn.Linear"]["attrs"]["flops"], 2 * 10 * 144)
        self.assertEqual(by_op["torch.flatten"]["attrs"]["flops"], 0)
        flat = g["tensors"][by_op["torch.flatten"]["outputs"][0]]
        self.assertEqual((flat["bytes"], g["tensors"][flat["alias_of"]]["name"]), (0, "relu"))
        self.assertEqual(by_op["nn.Conv2d"]["attrs"]["config"]["kernel_size"], [3, 3])


class TinyTraining(unittest.TestCase):
    # make_fx of one step (torch 1.13 aten ops), batch 2.  Steps:
    #  0 convolution(input, w, b) -> convolution [2,4,6,6] 1152 B
    #  1 relu(convolution)        -> relu 1152 B
    #  2 detach(relu), 3 _reshape_alias(relu) -> [2,144]: views of relu
    #  4 t(fc.weight): view of a parameter
    #  5 addmm(fc.bias, view, t)  -> addmm [2,5] 40 B
    #  6 _log_softmax(addmm)      -> _log_softmax [2,5] 40 B
    #  7 detach(_log_softmax): view
    #  8 nll_loss_forward(_log_softmax, target) -> loss [] 4 B (output),
    #                                              total_weight [] 4 B
    #  9 ones_like(loss)          -> ones_like [] 4 B
    # 10 nll_loss_backward(ones_like, _log_softmax, target, total_weight) -> [2,5] 40 B
    # 11 detach(detach_1): view of _log_softmax
    # 12 _log_softmax_backward_data(nll_loss_backward, detach_2) -> [2,5] 40 B
    # 13 t(t): view of fc.weight
    # 14 mm(grad, t_1)            -> mm [2,144] 1152 B (gradient of the relu output)
    # 15 t(grad): view;  16 mm(t_3, relu view) -> fc.weight's gradient (persistent)
    # 17 t, 18 sum (fc.bias gradient, persistent), 19 view, 20 t: views
    # 21 _reshape_alias(mm) -> [2,4,6,6] view of mm; 22 detach: view of relu
    # 23 threshold_backward(mm view, relu view) -> [2,4,6,6] 1152 B
    # 24 convolution_backward(grad, input, conv.weight) -> conv weight and bias
    #    gradients (persistent; no input gradient is computed)
    # Lifetimes: input read by 0 and 24 -> 0..24; target by 8 and 10 -> 0..10;
    # convolution 0..1; relu read (through its views) by 5, 16, 22, 23 -> 1..23;
    # addmm 5..6; _log_softmax read by 8, 10 and (via detach_2) 12 -> 6..12;
    # loss is the graph output -> 8..24; total_weight 8..10; ones_like 9..10;
    # nll_loss_backward 10..12; its successor (grad of the logits) read by
    # 14, 15 (t view read at 16) and 18 -> 12..18; mm read via its view at 23
    # -> 14..23; threshold_backward 23..24.
    EXPECTED = [
        ("input", 0, 24, 1536), ("target", 0, 10, 16),
        ("convolution", 0, 1, 1152), ("relu", 1, 23, 1152),
        ("addmm", 5, 6, 40), ("_log_softmax", 6, 12, 40),
        ("nll_loss_forward.0", 8, 24, 4), ("nll_loss_forward.1", 8, 10, 4),
        ("ones_like", 9, 10, 4), ("nll_loss_backward", 10, 12, 40),
        ("_log_softmax_backward_data", 12, 18, 40), ("mm", 14, 23, 1152),
        ("threshold_backward", 23, 24, 1152),
    ]

    def test_records(self):
        g = tiny_graph(True)
        R.validate(g)
        self.assertEqual(len(g["order"]), 25)
        self.assertEqual(named_records(g), self.EXPECTED)

    def test_gradients(self):
        g = tiny_graph(True)
        T = g["tensors"]
        params = {t["id"]: t["name"] for t in T if t["kind"] == "parameter"
                  and t["alias_of"] is None and t.get("trainable")}
        grads = {}
        for tid in g["outputs"][1:]:
            self.assertEqual(T[tid]["kind"], "gradient")
            grads[params[T[tid]["grad_of"]]] = tuple(T[tid]["shape"])
        self.assertEqual(grads, {"conv.weight": (4, 3, 3, 3), "conv.bias": (4,),
                                 "fc.weight": (5, 144), "fc.bias": (5,)})
        self.assertEqual(T[g["loss"]]["kind"], "output")
        self.assertEqual(g["outputs"][0], g["loss"])
        # gradients are persistent: in the records only on request, over 0..24
        rows = {r[0]: r for r in R.records(g, include_persistent=True)}
        for tid in g["outputs"][1:]:
            root = T[tid]["alias_of"] if T[tid]["alias_of"] is not None else tid
            self.assertEqual(rows[root][1:3], (0, 24))
        self.assertTrue(g["model"]["train"])


class Aliases(unittest.TestCase):
    def check(self, g):
        R.validate(g)
        T = g["tensors"]
        for t in T:
            if t["alias_of"] is not None:
                self.assertEqual(t["bytes"], 0)
                self.assertIsNone(T[t["alias_of"]]["alias_of"])
        owners = [t for t in T if t["alias_of"] is None and t["bytes"] > 0]
        rows = R.records(g, include_persistent=True)
        self.assertEqual(sum(r[3] for r in rows), sum(t["bytes"] for t in owners))
        self.assertEqual(len(rows), len(owners))
        rows = R.records(g)
        self.assertEqual(sum(r[3] for r in rows),
                         sum(t["bytes"] for t in owners if t["kind"] not in R.PERSISTENT_KINDS))
        return sum(1 for t in T if t["alias_of"] is not None)

    def test_tiny(self):
        self.assertEqual(self.check(tiny_graph(False)), 1)
        self.assertGreater(self.check(tiny_graph(True)), 5)

    def test_views_of_torchvision(self):
        # ShuffleNet's channel shuffle and chunk, ViT-style reshapes: all views.
        from memplan.models import MODELS, build
        torch.manual_seed(0)
        g = export_module(build(MODELS["shufflenet_v2_x1_0"], (64, 64)),
                          torch.randn(1, 3, 64, 64), "shufflenet")
        self.assertGreater(self.check(g), 30)


class Cli(unittest.TestCase):
    """Exports through the command line, planned by the C tool."""

    @classmethod
    def setUpClass(cls):
        cls.memplan = os.environ.get("MEMPLAN", "")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def plan_all(self, records_csv):
        self.assertTrue(os.access(self.memplan, os.X_OK),
                        "set MEMPLAN to the memplan binary (got %r)" % self.memplan)
        p = subprocess.run([self.memplan, "plan", "--strategy", "all", "--json", records_csv],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertGreater(len(out["results"]), 3)
        for r in out["results"]:
            self.assertTrue(r["valid"], "%s: invalid plan for %s" % (r["strategy"], records_csv))
            self.assertGreaterEqual(r["footprint"], out["lower_bound"])
        return out

    def export_and_plan(self, model, *extra):
        d = os.path.join(self.tmp.name, model + "".join(extra))
        p = run_export(model, "-o", d, "-q", *extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        base = model + ("-train" if "--train" in extra else "")
        with open(os.path.join(d, base + ".graph.json")) as f:
            g = json.load(f)
        R.validate(g)
        csv = os.path.join(d, base + ".records.csv")
        with open(csv) as f:
            text = f.read()
        self.assertEqual(text, R.records_csv(R.records(g)))
        out = self.plan_all(csv)
        naive, peak = R.summary(R.records(g))
        self.assertEqual((out["naive"], out["lower_bound"]), (naive, peak))
        return g, out

    def test_resnet18(self):
        g, out = self.export_and_plan("resnet18")
        self.assertEqual(g["model"]["input_shape"], [1, 3, 224, 224])
        # the first conv's output: 64 x 112 x 112 floats
        self.assertIn(64 * 112 * 112 * 4, [t["bytes"] for t in g["tensors"]])
        self.assertEqual(out["buffers"], 69)

    def test_mobilenet_v2(self):
        g, _ = self.export_and_plan("mobilenet_v2", "--size", "160x192")
        self.assertEqual(g["model"]["input_shape"], [1, 3, 160, 192])

    def test_resnet18_training(self):
        g, out = self.export_and_plan("resnet18", "--train", "--batch", "2")
        self.assertEqual(g["model"]["level"], "aten")
        self.assertEqual(sum(1 for t in g["tensors"] if t["kind"] == "gradient"
                             and t["alias_of"] is None), 62)
        self.assertGreater(out["lower_bound"], 2 * 64 * 112 * 112 * 4)

    def test_include_persistent(self):
        d = os.path.join(self.tmp.name, "persist")
        p = run_export("alexnet", "-o", d, "-q", "--include-persistent")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(d, "alexnet.graph.json")) as f:
            g = json.load(f)
        weights = sum(t["bytes"] for t in g["tensors"] if t["kind"] == "parameter")
        self.assertGreater(weights, 200 * 2**20)      # AlexNet: ~61 M floats
        out = self.plan_all(os.path.join(d, "alexnet.records.csv"))
        self.assertGreater(out["lower_bound"], weights)

    def test_list(self):
        p = run_export("--list")
        self.assertEqual(p.returncode, 0)
        for name in ["alexnet", "vgg16", "googlenet", "inception_v3", "resnet18", "resnet50",
                     "resnet152", "densenet121", "mobilenet_v2", "mobilenet_v3_large",
                     "squeezenet1_0", "shufflenet_v2_x1_0", "efficientnet_b0",
                     "regnet_y_400mf", "convnext_tiny", "vit_b_16", "swin_t",
                     "deeplabv3_resnet50", "fcn_resnet50"]:
            self.assertRegex(p.stdout, r"(?m)^%s " % name)

    def check_error(self, args, message):
        d = os.path.join(self.tmp.name, "err")
        p = run_export(*args, "-o", d)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(message, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertFalse(os.path.exists(d) and os.listdir(d), "partial output left behind")

    def test_errors(self):
        self.check_error(["resnet_9000"], "unknown model 'resnet_9000'")
        self.check_error(["resnet18", "--size", "garbage"], "is not HxW")
        self.check_error(["resnet18", "--size", "0x0"], "sides must be")
        self.check_error(["resnet18", "--batch", "0"], "not a batch size")
        self.check_error(["vit_b_16", "--size", "224x200"], "square input")
        self.check_error(["alexnet", "--size", "16"], "alexnet:")
        self.check_error([], "MODEL is required")


if __name__ == "__main__":
    unittest.main()
