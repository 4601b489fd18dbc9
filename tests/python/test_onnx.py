"""Tests of the ONNX importer (python/memplan/onnx_import.py, docs/onnx.md).

ResNet-50, MobileNet v2 and a two-layer Transformer encoder are exported by
torch.onnx.export, imported through the command line, read by the C tool
($MEMPLAN) and compared with the PyTorch exporter's fx graph of the same
model and input: the activation lower bound must be equal, and every
difference elsewhere (node count, naive total, FLOPs) must be exactly the
batch-norm outputs ONNX fuses away.  A long-sequence encoder shows the one
real difference: ONNX sees the attention matrix inside
nn.MultiheadAttention, which is one opaque node at fx level.  Small
hand-built graphs check views, static folding, unknown ops and errors.

    tests/python/run.sh test_onnx                           # the tests
    PYTHONPATH=python /usr/bin/python3 tests/python/test_onnx.py --table [MODEL...]
                                                            # docs/onnx.md's tables
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import onnx                # no skipping: a missing package must fail loudly
import torch
import torch.nn as nn
import torchvision
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYDIR)

from memplan import records as R              # noqa: E402
from memplan.onnx_import import import_onnx   # noqa: E402
from memplan.trace import export_module       # noqa: E402
from test_export import Tiny                  # noqa: E402  conv -> relu -> flatten -> linear

PYTHON = "/usr/bin/python3"
SIZE = 224        # the CNNs at their own input size: the whole test takes ~10 s
OPSET = 17        # LayerNormalization is one op from opset 17 on
F32 = 4


class EncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer's own eval computation (post-norm), minus
    the fast-path checks: torch.fx cannot trace ``if not src.dim() == 3``,
    and a torch.nn class would be one opaque fx leaf.  Same parameters, same
    output, same ONNX graph (StockEncoder checks both)."""

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = self.norm1(src + self._sa_block(src, src_mask, src_key_padding_mask))
        return self.norm2(x + self._ff_block(x))


class Encoder(nn.TransformerEncoder):
    """forward(src) only: fx makes every forward argument a placeholder, and
    TransformerEncoder branches on ``src_key_padding_mask is not None``."""

    def forward(self, src):
        return super().forward(src)


E, HEADS, FF = 128, 4, 512          # d_model, heads, feed-forward width


def encoder():
    return Encoder(EncoderLayer(E, HEADS, FF), num_layers=2)


# name -> (builder, input shape); the encoders take [sequence, batch, E].
MODELS = {
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), (1, 3, SIZE, SIZE)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, SIZE, SIZE)),
    "encoder": (encoder, (64, 2, E)),
    "encoder_long": (encoder, (256, 2, E)),
}


def onnx_export(model, example, path):
    """torch.onnx.export at OPSET, without the tracer's warnings about
    nn.MultiheadAttention's Python-level checks (constants in eval mode).
    Not under torch.no_grad(): there batch-first attention (ViT) takes a
    fast path that has no ONNX export."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, example, path, opset_version=OPSET)


def run_export(*args):
    env = dict(os.environ, PYTHONPATH=PYDIR)
    return subprocess.run([PYTHON, "-m", "memplan.export", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def memplan():
    path = os.environ.get("MEMPLAN", "")
    if not os.access(path, os.X_OK):
        raise AssertionError("set MEMPLAN to the memplan binary (got %r)" % path)
    return path


def memplan_graph(graph_json):
    """`memplan graph --json` of a file: (exit status, parsed output, stderr)."""
    p = subprocess.run([memplan(), "graph", "--json", graph_json],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else None), p.stderr


def model_and_shape(name):
    """A model of MODELS, or any torchvision model `memplan.export --list`
    names (at its own input size), in eval mode, and its input shape."""
    torch.manual_seed(0)
    if name in MODELS:
        build, shape = MODELS[name]
        return build().eval(), shape
    from memplan.models import MODELS as TORCHVISION, build
    spec = TORCHVISION[name]
    return build(spec, spec.natural).eval(), (1, 3) + tuple(spec.natural)


def export_pair(name, tmp):
    """The fx graph and, through the CLI, the ONNX graph of one model."""
    model, shape = model_and_shape(name)
    example = torch.randn(*shape)
    fx = export_module(model, example, name)
    path = os.path.join(tmp, name + ".onnx")
    onnx_export(model, example, path)
    out = os.path.join(tmp, "out")
    p = run_export(path, "-o", out, "-q")
    if p.returncode != 0:
        raise AssertionError("import of %s failed: %s" % (path, p.stderr))
    with open(os.path.join(out, name + ".graph.json")) as f:
        graph = json.load(f)
    with open(os.path.join(out, name + ".records.csv")) as f:
        csv = f.read()
    return fx, graph, csv, os.path.join(out, name + ".graph.json")


def outputs_of(graph, op):
    """Tensors (dicts) produced by nodes whose op is ``op``."""
    T = graph["tensors"]
    return [T[t] for n in graph["nodes"] if n["op"] == op for t in n["outputs"]]


def total_flops(graph):
    return sum(n["attrs"]["flops"] for n in graph["nodes"])


def peak_step_node(graph):
    """The node at the first step where the live bytes reach the bound."""
    rows = R.records(graph)
    _, peak = R.summary(rows)
    for step, nid in enumerate(graph["order"]):
        if sum(r[3] for r in rows if r[1] <= step <= r[2]) == peak:
            return graph["nodes"][nid]
    return None


class Models(unittest.TestCase):
    """The three models (and the long encoder) against their fx graphs."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.pairs = {name: export_pair(name, cls.tmp.name) for name in MODELS}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_read(self, name):
        """Valid, its records file is the records, and the C tool reads it
        with the same lower bound."""
        fx, g, csv, path = self.pairs[name]
        R.validate(g)
        self.assertEqual(g["model"]["level"], "onnx")
        self.assertEqual(csv, R.records_csv(R.records(g)))
        rc, out, err = memplan_graph(path)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out["lower_bound"], R.summary(R.records(g))[1])
        return fx, g, out

    def check_cnn(self, name):
        """Lower bound equal; ONNX has no batch-norm (fused into the conv in
        eval mode) and no Dropout node (removed), and exactly their output
        bytes and FLOPs are missing from its naive total and FLOP count."""
        fx, g, out = self.check_read(name)
        self.assertEqual(out["shapes_unchecked"], 0)     # every op known to the C side
        self.assertEqual(R.summary(R.records(g))[1], R.summary(R.records(fx))[1])
        bn = outputs_of(fx, "nn.BatchNorm2d")
        self.assertGreater(len(bn), 50)
        dropped = len(bn) + len(outputs_of(fx, "nn.Dropout"))
        self.assertEqual(len(g["nodes"]), len(fx["nodes"]) - dropped)
        bn_bytes = sum(t["bytes"] for t in bn)
        self.assertEqual(R.summary(R.records(g))[0], R.summary(R.records(fx))[0] - bn_bytes)
        self.assertEqual(total_flops(g), total_flops(fx) - bn_bytes // F32)
        self.assertFalse([n for n in g["nodes"] if n["op"].startswith("onnx::")])

    def test_resnet50(self):
        self.check_cnn("resnet50")

    def test_mobilenet_v2(self):
        self.check_cnn("mobilenet_v2")

    def test_encoder(self):
        # Sequence 64, batch 2: the peak is the feed-forward block in both
        # graphs -- its input (kept for the residual) and two [64,2,512]
        # tensors (fx: linear1 and relu; ONNX: MatMul + bias Add, then Relu).
        fx, g, _ = self.check_read("encoder")
        L, B = 64, 2
        ffn = 2 * L * B * FF * F32 + L * B * E * F32
        self.assertEqual(R.summary(R.records(fx))[1], ffn)
        self.assertEqual(R.summary(R.records(g))[1], ffn)

    def test_encoder_long(self):
        # Sequence 256: ONNX's peak is the attention softmax -- scores and
        # probabilities [B*heads, L, L], V, and the layer input kept for the
        # residual -- which fx cannot see inside nn.MultiheadAttention.
        fx, g, _ = self.check_read("encoder_long")
        L, B = 256, 2
        self.assertEqual(R.summary(R.records(fx))[1], 2 * L * B * FF * F32 + L * B * E * F32)
        attention = 2 * B * HEADS * L * L * F32 + 2 * L * B * E * F32
        self.assertEqual(R.summary(R.records(g))[1], attention)
        self.assertIn("self_attn/Softmax", peak_step_node(g)["name"])
        self.assertEqual([n["op"] for n in fx["nodes"]].count("nn.MultiheadAttention"), 2)


class StockEncoder(unittest.TestCase):
    def test_same_onnx_graph(self):
        """The stock nn.TransformerEncoder gives the test encoder's ONNX graph."""
        x = torch.randn(16, 2, E)
        ops = []
        with tempfile.TemporaryDirectory() as d:
            for cls_enc, cls_layer in ((nn.TransformerEncoder, nn.TransformerEncoderLayer),
                                       (Encoder, EncoderLayer)):
                torch.manual_seed(0)
                m = cls_enc(cls_layer(E, HEADS, FF), num_layers=2).eval()
                path = os.path.join(d, "m.onnx")
                onnx_export(m, x, path)
                g = import_onnx(path)
                ops.append([(n["op"], [g["tensors"][t]["shape"] for t in n["outputs"]])
                            for n in g["nodes"]])
        self.assertEqual(ops[0], ops[1])


def save(tmp, name, nodes, inputs, outputs, inits=()):
    path = os.path.join(tmp, name + ".onnx")
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]), path)
    return path


def value(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


class Graphs(unittest.TestCase):
    """Mapping rules on small graphs."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_tiny_records_match_fx(self):
        # Same network, batch 2, 8x8 (test_export.py TinyInference): the
        # records are the fx records, ids aside; the flatten is a view.
        torch.manual_seed(0)
        x = torch.randn(2, 3, 8, 8)
        model = Tiny().eval()
        fx = export_module(model, x, "tiny")
        path = os.path.join(self.tmp.name, "tiny.onnx")
        onnx_export(model, x, path)
        g = import_onnx(path)
        R.validate(g)
        spans = lambda gr: [r[1:] for r in R.records(gr)]          # noqa: E731
        self.assertEqual(spans(g), [(0, 0, 1536), (0, 1, 1152), (1, 3, 1152), (3, 3, 40)])
        self.assertEqual(spans(g), spans(fx))
        self.assertEqual([n["op"] for n in g["nodes"]],
                         ["nn.Conv2d", "nn.ReLU", "torch.flatten", "nn.Linear"])
        self.assertEqual([n["attrs"]["flops"] for n in g["nodes"]],
                         [n["attrs"]["flops"] for n in fx["nodes"]])
        kinds = sorted({t["kind"] for t in g["tensors"]})
        self.assertEqual(kinds, ["activation", "input", "output", "parameter"])

    def test_views(self):
        # Reshape, Unsqueeze, Squeeze, Flatten(axis 2), Identity: aliases of
        # the Relu's output; Transpose copies.
        shape = ints("shape", [6, 4])
        axes = ints("axes", [0])
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Reshape", ["r", "shape"], ["a"]),
                 helper.make_node("Unsqueeze", ["a", "axes"], ["b"]),
                 helper.make_node("Squeeze", ["b", "axes"], ["c"]),
                 helper.make_node("Flatten", ["c"], ["d"], axis=2),
                 helper.make_node("Identity", ["d"], ["e"]),
                 helper.make_node("Transpose", ["e"], ["t"], perm=[1, 0]),
                 helper.make_node("Sigmoid", ["t"], ["y"])]
        path = save(self.tmp.name, "views", nodes, [value("x", [2, 3, 4])],
                    [value("y", [1, 24])], [shape, axes])
        g = import_onnx(path)
        R.validate(g)
        T = {t["name"]: t for t in g["tensors"]}
        for name in "abcde":
            self.assertEqual(T[name]["alias_of"], T["r"]["id"], name)
            self.assertEqual(T[name]["bytes"], 0)
        self.assertIsNone(T["t"]["alias_of"])
        self.assertNotIn("shape", T)            # control inputs are arguments, not tensors
        ops = [n["op"] for n in g["nodes"]]
        self.assertEqual(ops, ["nn.ReLU", "Tensor.reshape", "Tensor.reshape", "Tensor.reshape",
                               "Tensor.reshape", "nn.Identity", "torch.permute", "nn.Sigmoid"])
        # r is read through its aliases until the permute at step 6
        rows = {g["tensors"][r[0]]["name"]: r[1:] for r in R.records(g)}
        self.assertEqual(rows["r"], (0, 6, 96))
        rc, _, err = memplan_graph(self.write(g))
        self.assertEqual(rc, 0, err)

    def write(self, graph):
        from memplan.export import write_json
        path = os.path.join(self.tmp.name, graph["model"]["name"] + ".graph.json")
        with open(path, "w") as f:
            write_json(graph, f)
        return path

    def test_static_folding(self):
        # y = relu6(reshape(x, [x.shape[0] / 1, -1]) * w): the shape arithmetic
        # (Shape, Gather, Div, Unsqueeze, Concat -- Div defeats onnx's own data
        # propagation) is folded, not nodes; Clip(0, 6) with Constant bounds
        # is nn.ReLU6; the weight read through two Identity copies is one
        # parameter.
        c = lambda name, v: helper.make_node(                      # noqa: E731
            "Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [], [v]))
        fc = lambda name, v: helper.make_node(                     # noqa: E731
            "Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [v]))
        nodes = [helper.make_node("Shape", ["x"], ["s"]), c("zero", 0), c("one", 1),
                 helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
                 helper.make_node("Div", ["n", "one"], ["n1"]),
                 helper.make_node("Unsqueeze", ["n1", "axes"], ["n2"]),
                 helper.make_node("Concat", ["n2", "minus1"], ["shape"], axis=0),
                 helper.make_node("Reshape", ["x", "shape"], ["r"]),
                 helper.make_node("Identity", ["w"], ["w1"]),
                 helper.make_node("Identity", ["w1"], ["w2"]),
                 helper.make_node("Mul", ["r", "w2"], ["m"]),
                 helper.make_node("Add", ["m", "w1"], ["m2"]),
                 fc("lo", 0.0), fc("hi", 6.0),
                 helper.make_node("Clip", ["m2", "lo", "hi"], ["y"])]
        w = helper.make_tensor("w", TensorProto.FLOAT, [12], [0.5] * 12)
        path = save(self.tmp.name, "fold", nodes, [value("x", [2, 3, 4])], [value("y", None)],
                    [ints("axes", [0]), ints("minus1", [-1]), w])
        g = import_onnx(path)
        R.validate(g)
        self.assertEqual([n["op"] for n in g["nodes"]],
                         ["Tensor.reshape", "operator.mul", "operator.add", "nn.ReLU6"])
        T = {t["name"]: t for t in g["tensors"]}
        self.assertEqual(T["r"]["shape"], [2, 12])
        self.assertEqual(T["y"]["kind"], "output")
        params = [t["name"] for t in g["tensors"] if t["kind"] == "parameter"]
        self.assertEqual(params, ["w"])
        self.assertTrue(T["w"]["trainable"])
        self.assertEqual(g["nodes"][3]["attrs"]["args"], [{"tensor": T["m2"]["id"]}, 0.0, 6.0])

    def test_unknown_op(self):
        # Erf: no memplan spelling, kept as onnx::Erf; the C side accepts it
        # as an unknown op (not shape-checked).
        nodes = [helper.make_node("Erf", ["x"], ["e"], name="erf0"),
                 helper.make_node("Relu", ["e"], ["y"])]
        g = import_onnx(save(self.tmp.name, "erf", nodes, [value("x", [2, 3])],
                             [value("y", [2, 3])]))
        self.assertEqual([n["op"] for n in g["nodes"]], ["onnx::Erf", "nn.ReLU"])
        self.assertEqual(g["nodes"][0]["attrs"]["flops"], 6)
        rc, out, err = memplan_graph(self.write(g))
        self.assertEqual(rc, 0, err)
        self.assertEqual((out["shapes_checked"], out["shapes_unchecked"]), (1, 1))


class Cli(unittest.TestCase):
    """Errors through the command line: exit 2, one line naming the file."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def check_error(self, path, *message, args=()):
        out = os.path.join(self.tmp.name, "out")
        p = run_export(path, "-o", out, *args)
        self.assertEqual(p.returncode, 2, p.stderr)
        for m in message:
            self.assertIn(m, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(p.stderr.count("error:"), 1, p.stderr)
        self.assertFalse(os.path.exists(out) and os.listdir(out), "partial output left behind")

    def model(self, name, nodes, inputs, outputs, domain=None):
        path = os.path.join(self.tmp.name, name + ".onnx")
        opsets = [helper.make_opsetid("", OPSET)]
        if domain:
            opsets.append(helper.make_opsetid(domain, 1))
        g = helper.make_graph(nodes, name, inputs, outputs)
        onnx.save(helper.make_model(g, opset_imports=opsets), path)
        return path

    def relu(self, shape):
        return self.model("relu", [helper.make_node("Relu", ["x"], ["y"])],
                          [value("x", shape)], [value("y", None)])

    def test_corrupt_file(self):
        good = self.relu([2, 3])
        with open(good, "rb") as f:
            data = f.read()
        bad = os.path.join(self.tmp.name, "corrupt.onnx")
        with open(bad, "wb") as f:
            f.write(data[:len(data) // 2])
        self.check_error(bad, "corrupt.onnx: not an ONNX model")

    def test_missing_file(self):
        self.check_error(os.path.join(self.tmp.name, "none.onnx"),
                         "cannot read", "none.onnx", "No such file")

    def test_symbolic_shape(self):
        self.check_error(self.relu(["batch", 3]), "relu.onnx: tensor 'x'",
                         "symbolic dimension 'batch'")

    def test_no_shape(self):
        path = self.model("custom", [helper.make_node("Foo", ["x"], ["y"], name="foo0",
                                                      domain="com.example")],
                          [value("x", [2])], [value("y", None)], domain="com.example")
        self.check_error(path, "custom.onnx: node 'foo0' (com.example::Foo): tensor 'y' "
                               "has no shape after shape inference")

    def test_control_flow(self):
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c2"])], "body",
            [value("i", [], TensorProto.INT64), value("c", [], TensorProto.BOOL)],
            [value("c2", [], TensorProto.BOOL)])
        path = self.model("loop", [helper.make_node("Loop", ["", ""], [], body=body, name="l0"),
                                   helper.make_node("Relu", ["x"], ["y"])],
                          [value("x", [2])], [value("y", [2])])
        self.check_error(path, "loop.onnx: node 'l0' (Loop): ONNX control flow")

    def test_torch_options(self):
        self.check_error(self.relu([2, 3]), "--batch and --size: an ONNX model's input shapes",
                         args=("--batch", "2", "--size", "64"))

    def test_list_into_closed_pipe(self):
        # `--list | head -1`: head exits after one line.  A pipe whose reader
        # is already closed makes the failed write certain, not a race.
        for args in (["--list"], ["--help"]):
            r, w = os.pipe()
            os.close(r)
            env = dict(os.environ, PYTHONPATH=PYDIR)
            p = subprocess.run([PYTHON, "-m", "memplan.export", *args], stdout=w,
                               stderr=subprocess.PIPE, text=True, env=env, timeout=60)
            os.close(w)
            self.assertIn(p.returncode, (0, 141), p.stderr)
            self.assertEqual(p.stderr, "")

    def test_list_head(self):
        env = dict(os.environ, PYTHONPATH=PYDIR)
        p = subprocess.run(["sh", "-c", "%s -m memplan.export --list | head -1" % PYTHON],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertRegex(p.stdout, r"^name +model +size +task\n$")


def table(names):
    """docs/onnx.md's comparison tables (markdown) for the named models."""
    mib = lambda b: "%.3f" % (b / 2**20)                         # noqa: E731
    lines = ["| model | input | nodes fx / ONNX | naive MiB fx / ONNX | "
             "lower bound MiB fx / ONNX (bytes) | ONNX / fx |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            fx, g, _, _ = export_pair(name, tmp)
            shape = g["model"]["input_shape"]
            (nf, lf), (no, lo) = R.summary(R.records(fx)), R.summary(R.records(g))
            lines.append("| %s | %s | %d / %d | %s / %s | %s / %s (%d / %d) | %.3f |" % (
                name, "x".join(map(str, shape)), len(fx["nodes"]), len(g["nodes"]),
                mib(nf), mib(no), mib(lf), mib(lo), lf, lo, lo / lf))
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--table"]:
        print(table(sys.argv[2:] or list(MODELS)))
    else:
        unittest.main()
