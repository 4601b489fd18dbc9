"""Tests of memplan.torch.fit on real PyTorch (CPU).

Every fitted module is compared with an unmodified copy of the model over
a few SGD steps: losses, every gradient, every parameter and buffer (batch
norm statistics included) must be bit-identical -- checkpointing recomputes
the same kernels on the same inputs, and torch is deterministic on the CPU
for these ops.  The measured peak (torch.profiler, memplan._measure) must
be within the budget.  Sized to run in well under a minute on 2 cores.
"""

import copy
import os
import sys
import unittest

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import memplan.torch as mpt   # noqa: E402
from memplan import lib        # noqa: E402

torch.set_num_threads(2)


class ConvNet(nn.Module):
    """A chain of conv-bn-relu(-dropout) blocks: activations dominate."""

    def __init__(self, depth=8, c=16, dropout=0.0):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        layers = []
        for _ in range(depth):
            layers += [nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()]
            if dropout:
                layers.append(nn.Dropout(dropout))
        self.blocks = nn.Sequential(*layers)
        self.head = nn.Linear(c, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class LSTMNet(nn.Module):
    """Stacked single-layer LSTMs, then a head on the last step."""

    def __init__(self, layers=4, f=16, h=64, k=10):
        super().__init__()
        self.rnns = nn.ModuleList(nn.LSTM(f if i == 0 else h, h, batch_first=True)
                                  for i in range(layers))
        self.head = nn.Linear(h, k)

    def forward(self, x):
        for rnn in self.rnns:
            x, _ = rnn(x)
        return self.head(x[:, -1])


class Encoder(nn.Module):
    """Transformer encoder layers (each a leaf module for torch.fx)."""

    def __init__(self, layers=6, d=64, k=10):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True)
            for _ in range(layers))
        self.head = nn.Linear(d, k)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(1))


class AssertBlock(nn.Module):
    """Starts with torch._assert, as ViT's encoder blocks do: a node whose
    result nothing reads, between the runs fit checkpoints."""

    def __init__(self, d=64):
        super().__init__()
        self.lin = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        torch._assert(x.dim() == 2, "2-d input")
        return self.out(torch.tanh(self.lin(x)))


class AssertNet(nn.Module):
    def __init__(self, blocks=8):
        super().__init__()
        self.blocks = nn.Sequential(*[AssertBlock() for _ in range(blocks)])
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.blocks(x))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ConvNet(depth=4)
        self.b = nn.Linear(10, 10)

    def forward(self, x, y):
        return self.a(x) + self.b(y)


def train(model, inputs, steps=3):
    """Losses of `steps` SGD steps (momentum), the model changed in place."""
    torch.manual_seed(123)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = mpt.default_loss(model(*inputs))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


class Fit(unittest.TestCase):
    def fit_and_compare(self, model, inputs, frac):
        """fit at frac of the plain peak; the fitted module trains exactly
        like an unmodified copy.  Returns the FitResult."""
        torch.manual_seed(0)
        ref = copy.deepcopy(model)
        plain = mpt.measure_peak(model, inputs)
        budget = int(plain * frac)
        fitted, how = mpt.fit(model, inputs, budget)
        self.assertLessEqual(how.measured_peak, budget)
        self.assertEqual(how.plain_peak, plain)
        self.assertGreater(how.checkpointed, 0)
        self.assertEqual(mpt.measure_peak(fitted, inputs), how.measured_peak)
        self.assertEqual(train(ref, inputs), train(fitted, inputs))
        for (k, a), (_, b) in zip(ref.state_dict().items(), model.state_dict().items()):
            self.assertTrue(torch.equal(a, b), k)
        for (k, p), q in zip(ref.named_parameters(), model.parameters()):
            self.assertTrue(torch.equal(p.grad, q.grad), k)
        return how

    def test_convnet_with_batch_norm(self):
        how = self.fit_and_compare(ConvNet(), (torch.randn(8, 3, 48, 48),), 0.7)
        self.assertGreater(how.extra_flops, 0)
        self.assertLess(how.planning_seconds, 5)

    def test_dropout_replays_the_same_masks(self):
        self.fit_and_compare(ConvNet(depth=6, dropout=0.2), (torch.randn(8, 3, 40, 40),), 0.75)

    def test_lstm(self):
        self.fit_and_compare(LSTMNet(), (torch.randn(16, 64, 16),), 0.8)

    def test_transformer_encoder(self):
        self.fit_and_compare(Encoder(), (torch.randn(8, 64, 64),), 0.8)

    def test_lstm_layers_checkpointed_one_by_one(self):
        """Each nn.LSTM alone is a run whose output leaves it: its gates
        are still freed by checkpointing (measured 0.44x of the plain
        peak by hand for this shape), so half the plain peak fits."""
        self.fit_and_compare(LSTMNet(layers=4, f=32, h=128), (torch.randn(16, 32, 32),), 0.5)

    def test_nodes_nothing_reads(self):
        self.fit_and_compare(AssertNet(), (torch.randn(512, 64),), 0.6)

    def test_two_inputs(self):
        self.fit_and_compare(TwoInputs(), (torch.randn(8, 3, 48, 48), torch.randn(8, 10)),
                             0.8)

    def test_model_is_left_as_it_was(self):
        model = ConvNet(depth=4)
        model.eval()
        before = copy.deepcopy(model.state_dict())
        plain = mpt.measure_peak(model, torch.randn(4, 3, 32, 32))
        mpt.fit(model, torch.randn(4, 3, 32, 32), int(plain * 0.8))
        self.assertFalse(model.training)
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)
        self.assertTrue(all(p.grad is None for p in model.parameters()))

    def test_impossible_budget(self):
        model, x = ConvNet(depth=4), torch.randn(4, 3, 32, 32)
        with self.assertRaises(mpt.BudgetError) as cm:
            mpt.fit(model, x, 1000)
        self.assertGreater(cm.exception.min_peak, 1000)
        self.assertIn("budget 1000 bytes cannot be met", str(cm.exception))
        self.assertIsInstance(cm.exception, lib.MemplanError)

    def test_unverified_plan(self):
        model, x = ConvNet(depth=4), torch.randn(4, 3, 32, 32)
        fitted, how = mpt.fit(model, x, 10 ** 12, verify=False)
        self.assertIsNone(how.measured_peak)
        self.assertEqual(how.checkpointed, 0)        # everything fits: no recompute
        self.assertTrue(torch.equal(fitted(x), model(x)))

    def test_untraceable_model_is_a_clear_error(self):
        class Branchy(nn.Module):
            def forward(self, x):
                return x * 2 if x.sum() > 0 else x

        with self.assertRaisesRegex(Exception, "torch.fx cannot trace the model"):
            mpt.fit(Branchy(), torch.randn(2, 3), 10 ** 9)


class ExportModule(unittest.TestCase):
    def test_module_names_are_kept(self):
        g = mpt.export_module(ConvNet(depth=2), torch.randn(2, 3, 16, 16), "mine")
        modules = {n["attrs"].get("module") for n in g["nodes"]}
        self.assertTrue({"stem", "blocks.0", "blocks.1", "blocks.2", "head"} <= modules)
        graph = lib.Graph.parse(__import__("json").dumps(g), "mine")
        self.assertEqual(graph.name, "mine")
        self.assertGreater(graph.records().bounds().offsets, 0)


if __name__ == "__main__":
    unittest.main()
