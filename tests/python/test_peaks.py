"""fit's planned peaks against measured ones on attention blocks.

A small Transformer encoder built like torchvision's ViT blocks
(nn.MultiheadAttention with need_weights=False, LayerNorm, GELU, dropout,
residual adds): the peak fit plans for its plain training step (the graph
capture records, the kernel workspaces and what autograd keeps inside the
attention, as memplan._fit._variant assembles them) must be within 5% of
the peak torch.profiler measures for the same step.  Before the attention's
query and output were taken for values its gradient keeps (it keeps its
own copies), the plan was about 15% high.  A few seconds on 2 cores.
"""

import os
import sys
import unittest

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import memplan.torch as mpt                     # noqa: E402
from memplan._fit import Planner, _build, add_workspaces, _variant   # noqa: E402
from memplan._fx import (capture, node_workspaces, profile_nodes, rnn_chunks,  # noqa: E402
                         _SavedBy)

torch.set_num_threads(2)
TOLERANCE = 0.05


class Block(nn.Module):
    """ViT's encoder block: pre-norm attention and MLP, each added back."""

    def __init__(self, d, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(4 * d, d), nn.Dropout(dropout))

    def forward(self, x):
        y = self.ln_1(x)
        y, _ = self.attention(y, y, y, need_weights=False)
        x = self.dropout(y) + x
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """[N, S, F] -> logits [N, K]: embedding, blocks, norm, the first token's head."""

    def __init__(self, f=32, d=128, heads=4, blocks=3, classes=10, dropout=0.0):
        super().__init__()
        self.embed = nn.Linear(f, d)
        self.blocks = nn.Sequential(*[Block(d, heads, dropout) for _ in range(blocks)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.ln(self.blocks(self.embed(x)))[:, 0])


def planned_and_measured(model, x, cand_of=lambda cands: cands[0]):
    planner, cands, _ = _variant(model, x, "enc", {}, 0)
    cand = cand_of([c for c in cands if not c.runs] + [c for c in cands if c.runs])
    return cand.peak, mpt.measure_peak(_build(model, planner, cand), x), cand


class AttentionPeaks(unittest.TestCase):

    def test_plain_step_planned_within_tolerance(self):
        """No dropout (ViT's default p=0) and dropout 0.1: the planned
        plain step is within 5% of the measured one."""
        for p in (0.0, 0.1):
            torch.manual_seed(0)
            model, x = Encoder(dropout=p), torch.randn(8, 128, 32)
            planned, measured, _ = planned_and_measured(model, x)
            self.assertLessEqual(abs(planned - measured), TOLERANCE * measured,
                                 f"dropout {p}: planned {planned}, measured {measured}")

    def test_whole_blocks_checkpointed_planned_within_tolerance(self):
        """checkpoint_sequential's shape with one run over the first half
        of the model: planned within 5% of measured."""
        torch.manual_seed(0)
        model, x = Encoder(blocks=4), torch.randn(8, 128, 32)

        def first_half(cands):
            one = [c for c in cands if c.kind == "sequential" and len(c.runs) == 1]
            return max(one, key=lambda c: (sum(map(len, c.runs)), -c.peak))
        planned, measured, cand = planned_and_measured(model, x, first_half)
        self.assertTrue(cand.runs)
        self.assertLessEqual(abs(planned - measured), TOLERANCE * measured,
                             f"planned {planned}, measured {measured}")

    def test_attention_saves_copies_not_its_query_and_output(self):
        """What autograd saves for nn.MultiheadAttention holds neither its
        query (the layer norm's output) nor its output: the planner's
        generic gradient, which keeps both, is charged for them, so the
        hidden bytes are the saved copies less those two values."""
        torch.manual_seed(0)
        model, x = Encoder(blocks=1), torch.randn(8, 128, 32)
        gm, _ = capture(model, x)
        net, _ = profile_nodes(model, gm, x, runs=1)
        del gm.memplan_graph            # no graph: saved bytes alone
        bare, _ = profile_nodes(model, gm, x, runs=1)
        name = next(n.name for n in gm.graph.nodes if n.op == "call_module"
                    and isinstance(gm.get_submodule(n.target), nn.MultiheadAttention))
        act = 8 * 128 * 128 * 4
        self.assertGreater(bare[name], 2 * act)
        self.assertEqual(bare[name] - net[name], 2 * act)

    def test_attention_workspace_holds_its_weight_gradients(self):
        """The attention's backward pass computes its projections' weight
        gradients whole before adding them into .grad (which exists): at
        least the input projection's 3 d x d floats are transient."""
        torch.manual_seed(0)
        model, x = Encoder(blocks=1), torch.randn(8, 128, 32)
        gm, _ = capture(model, x)
        runner = _SavedBy(gm)
        with torch.no_grad():
            runner.run(x)
        ws = node_workspaces(gm, runner.env)
        name = next(n.name for n in gm.graph.nodes if n.op == "call_module"
                    and isinstance(gm.get_submodule(n.target), nn.MultiheadAttention))
        self.assertGreaterEqual(ws[name][1], 3 * 128 * 128 * 4)

    def test_saved_in_graph_counts_them_where_they_exist(self):
        """With saved_in_graph, the attention's saved bytes are an output of
        its node: a plan checkpointing every block but the last is planned
        within 5% of its measured peak (beside the plan, at every step,
        they would count the last block's attention after its backward
        pass has freed it)."""
        torch.manual_seed(0)
        model, x = Encoder(blocks=4), torch.randn(8, 128, 32)
        gm, graph = capture(model, x)
        ws = {}
        hidden, seconds = profile_nodes(model, gm, x, workspace=ws, saved_in_graph=True)
        add_workspaces(graph, ws)
        saved = [t for t in graph["tensors"] if t["name"].endswith(":saved")]
        self.assertEqual(len(saved), 4)
        paths = {n.name: n.meta.get("mp_path", "") for n in gm.graph.nodes}
        planner = Planner(graph, "enc", hidden, seconds, paths,
                          [n.name for n in gm.graph.nodes if n.op == "call_module"])
        planner.gm = gm
        blocks = planner._module_pieces(2)
        runs = [r for r in blocks if paths[planner.nodes[r[0]].name].startswith("blocks.")][:3]
        cand = planner.evaluate(runs)
        measured = mpt.measure_peak(_build(model, planner, cand), x)
        self.assertLessEqual(abs(cand.peak - measured), TOLERANCE * measured,
                             f"planned {cand.peak}, measured {measured}")


class Res(nn.Module):
    """Two projections added, then a body of linear layers and tanh: a run
    that opens with the add reads two values only the add reads (its
    gradient reads nothing)."""

    def __init__(self, d=1024, depth=3):
        super().__init__()
        self.a, self.b = nn.Linear(256, d), nn.Linear(256, d)
        self.body = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(d, d), nn.Tanh())])
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        return self.head(self.body(self.a(x) + self.b(x)))


def timeline_and_measured(model, x, runs_of):
    """(timeline peak, measured peak) of the plan checkpointing
    runs_of(planner, {fx name: node id})."""
    planner, _, _ = _variant(model, x, "m", {}, 0)
    ids = {planner.nodes[v].name: v for v in planner.forward}
    cand = planner.evaluate(runs_of(planner, ids))
    return planner.timeline_peak(cand), mpt.measure_peak(_build(model, planner, cand), x)


class CheckpointHolds(unittest.TestCase):
    """What torch's checkpoint keeps beside the plan's own values, on the
    plan's timeline (memplan._timeline._checkpoint_holds): within 1% of the
    measured peak (both are exact to a few bytes here)."""

    def test_run_inputs_held_to_its_backward(self):
        """The run [add, body]: torch keeps the add's two inputs (the run's
        inputs) until the run's backward pass is done, where the plan freed
        them after the add's rerun -- 2 MiB at the rerun's peak (18% under
        the measured peak before)."""
        torch.manual_seed(0)
        model, x = Res(), torch.randn(256, 256)
        planned, measured = timeline_and_measured(
            model, x, lambda p, ids: [[v for n, v in ids.items()
                                       if n == "add" or n.startswith("body")]])
        self.assertLessEqual(abs(planned - measured), 0.01 * measured,
                             f"planned {planned}, measured {measured}")

    def test_each_checkpoint_keeps_the_rng_state(self):
        """23 runs over a chain of small layers: each checkpoint keeps the
        CPU generator's state (5056 bytes) to its backward pass, half the
        measured peak here (49% under before)."""
        torch.manual_seed(0)
        model = nn.Sequential(*[m for _ in range(24) for m in (nn.Linear(64, 64), nn.Tanh())],
                              nn.Linear(64, 10))

        def pairs(p, ids):
            calls = p._leaf_calls()
            return [calls[i] + calls[i + 1] for i in range(0, 46, 2)]
        planned, measured = timeline_and_measured(model, torch.randn(16, 64), pairs)
        self.assertLessEqual(abs(planned - measured), 0.01 * measured,
                             f"planned {planned}, measured {measured}")


class ChunkedLSTM(nn.Module):
    """Single-layer nn.LSTMs in sequence, a linear head on the last step."""

    def __init__(self, f=32, h=256, layers=3):
        super().__init__()
        self.lstms = nn.ModuleList(nn.LSTM(f if i == 0 else h, h, batch_first=True)
                                   for i in range(layers))
        self.head = nn.Linear(h, 10)

    def forward(self, x):
        for lstm in self.lstms:
            x, _ = lstm(x)
        return self.head(x[:, -1])


class TimeChunks(unittest.TestCase):
    """nn.LSTMs traced in time chunks (fit's exact=False): each chunk is a
    call of the same module on a view of the layer's input."""

    def test_plain_chunked_step_planned_within_tolerance(self):
        """3 layers in 4 chunks: the plain step's planned peak is within 5%
        of the measured one (12% above before: each chunk's input was held
        twice, as the layer input the plan keeps for the chunk's opaque
        gradient and as the contiguous copy autograd saves, and each chunk's
        weight gradients twice, in its measured workspace and as the
        per-call gradients of the training graph)."""
        torch.manual_seed(0)
        model, x = ChunkedLSTM(), torch.randn(32, 64, 32)
        chunks = rnn_chunks(model, x, steps=16, most=4)
        planner, cands, _ = _variant(model, x, "lstm", chunks, 1)
        self.assertEqual(planner.chunks, 4)
        none = next(c for c in cands if not c.runs)
        measured = mpt.measure_peak(_build(model, planner, none), x)
        self.assertLessEqual(abs(none.peak - measured), TOLERANCE * measured,
                             f"planned {none.peak}, measured {measured}")

    def test_shared_module_workspace_leaves_out_its_weight_gradients(self):
        """A module called twice: the graph gives each call's weight
        gradient a tensor of its own, so the call's measured backward
        workspace holds it no longer (once: the gradient added into .grad
        is a transient of the call)."""
        torch.manual_seed(0)
        lin = nn.Linear(512, 512)

        class Twice(nn.Module):
            def __init__(self, calls):
                super().__init__()
                self.lin, self.calls = lin, calls

            def forward(self, x):
                for _ in range(self.calls):
                    x = self.lin(x)
                return x

        x = torch.randn(4, 512)
        weight = 512 * 512 * 4
        ws = []
        for calls in (1, 2):
            gm, _ = capture(Twice(calls), x)
            runner = _SavedBy(gm)
            runner.run(x)
            ws.append(node_workspaces(gm, runner.env).get("lin", (0, 0))[1])
        self.assertGreaterEqual(ws[0], weight)
        self.assertLess(ws[1], ws[0] - weight // 2)


if __name__ == "__main__":
    unittest.main()
