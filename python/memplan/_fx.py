"""torch.fx plumbing for memplan.torch: capturing any nn.Module as a
memplan-graph/1 forward graph whose node names are the fx node names, and
rebuilding the module with chosen runs of nodes checkpointed.

The graph memplan plans and the module torch runs come from the same fx
trace, so a plan's node names name the module's own nodes.
"""

import contextlib

import torch
import torch.fx
from torch.fx.passes.split_module import split_module
from torch.utils.checkpoint import checkpoint

from .capture import ExportError, Recorder
from .trace import _propagate, py311_unpack_fix


def as_tuple(inputs):
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


@contextlib.contextmanager
def frozen(model):
    """Runs a block with model in eval mode and gives back its mode and every
    parameter and buffer exactly as they were (a capture or a measured step
    must not change the user's model)."""
    training = model.training
    saved = {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()}
    grads = {k: (p.grad.clone() if p.grad is not None else None)
             for k, p in model.named_parameters()}
    try:
        yield
    finally:
        with torch.no_grad():
            for k, v in model.state_dict(keep_vars=True).items():
                v.copy_(saved[k])
        for k, p in model.named_parameters():
            p.grad = grads[k]
        model.train(training)


def trace(model):
    """The fx GraphModule of model (symbolic tracing; leaf nn modules kept)."""
    try:
        with py311_unpack_fix():
            return torch.fx.symbolic_trace(model)
    except Exception as e:
        text = str(e).strip().splitlines()
        raise ExportError("torch.fx cannot trace the model: %s"
                          % (text[0] if text else type(e).__name__)) from None


def capture(model, inputs, name="model"):
    """(gm, graph dict): the fx trace of model and its memplan-graph/1
    forward graph recorded on inputs (run once in eval mode, no grad; the
    model is left as it was)."""
    inputs = as_tuple(inputs)
    gm = trace(model)
    with frozen(model):
        model.eval()
        info = [{"kind": "input", "name": "input" if len(inputs) == 1 else f"input{i}"}
                for i in range(len(inputs))]
        rec = Recorder(gm, info)
        _propagate(rec, *inputs)
        rec.finish()
    shape = list(inputs[0].shape) if inputs and isinstance(inputs[0], torch.Tensor) else []
    meta = {"name": name, "batch": shape[0] if shape else 1, "input_shape": shape,
            "train": False, "level": "fx", "exporter": "memplan.torch"}
    return gm, rec.graph(meta)


class _SavedBy(torch.fx.Interpreter):
    """Runs a GraphModule node by node, naming the node that is running."""

    current = None

    def run_node(self, n):
        self.current = n.name
        return super().run_node(n)


def _storage(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def hidden_saved_bytes(model, gm, inputs):
    """{fx node name: bytes}: what autograd saves for the backward pass while
    a node runs that is none of the graph's values -- the insides of leaf
    modules the graph cannot see (an LSTM's gates, a Transformer layer's
    attention), which checkpointing the node frees too.  Measured by saved-
    tensor hooks over one forward pass in train mode; model left as it was."""
    inputs = as_tuple(inputs)
    visible, saved = set(), {}
    runner = _SavedBy(gm, garbage_collect_values=False)   # every value stays
    # alive to the end, so no storage address is reused during the run

    def pack(t):
        if t.layout == torch.strided and t.numel():
            saved.setdefault(_storage(t), runner.current)
        return t

    with frozen(model):
        model.train()
        for t in list(model.parameters()) + list(model.buffers()) + list(inputs):
            if isinstance(t, torch.Tensor):
                visible.add(_storage(t)[0])
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            result = runner.run(*inputs)
        for value in list(runner.env.values()) + [result]:
            for t in _flat_tensors(value):
                visible.add(_storage(t)[0])
    out = {}
    for (ptr, nbytes), node in saved.items():
        if ptr not in visible and node is not None:
            out[node] = out.get(node, 0) + nbytes
    return out


def _flat_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value] if value.layout == torch.strided and value.numel() else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    return []


class Checkpointed(torch.nn.Module):
    """A run of nodes whose activations are dropped in the forward pass and
    recomputed in the backward pass (torch.utils.checkpoint, non-reentrant).

    The recomputation runs the nodes a second time in train mode, which
    would move batch-norm running statistics twice per step; they are put
    back after it, so the model trains exactly like the unmodified one."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self._first = False

    def forward(self, *args):
        self._first = True
        return checkpoint(self._run, *args, use_reentrant=False)

    def _run(self, *args):
        if self._first:
            self._first = False
            return self.inner(*args)
        saved = [(b, b.detach().clone()) for b in self.inner.buffers()]
        try:
            return self.inner(*args)
        finally:
            with torch.no_grad():
                for b, v in saved:
                    b.copy_(v)


def _absorb(gm, segment_of):
    """Nodes the planner's graph does not have (getattr on a tensor, the
    test of a torch._assert) that fx placed between two nodes of one run
    join that run, so that each run is one contiguous part."""
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    span = {}
    for i, n in enumerate(nodes):
        if n.name in segment_of:
            lo, hi = span.get(segment_of[n.name], (i, i))
            span[segment_of[n.name]] = (min(lo, i), max(hi, i))
    out = dict(segment_of)
    for k, (lo, hi) in span.items():
        for n in nodes[lo:hi + 1]:
            out.setdefault(n.name, k)
    return out


def _merge_silent_parts(gm, part, ckpt):
    """A plain part nothing outside reads (a torch._assert and the test it
    checks, as ViT's encoder blocks start with) joins the part before it
    (the first part: the one after it): split_module cannot build a part
    with no outputs."""
    nodes = {}
    for n in gm.graph.nodes:
        if n.name in part:
            nodes.setdefault(part[n.name], []).append(n)
    order = sorted(nodes)
    for i, p in enumerate(order):
        if p in ckpt or len(order) < 2:
            continue
        if not any(u.op == "output" or part.get(u.name) != p for n in nodes[p] for u in n.users):
            into = order[i - 1] if i else order[1]      # the first part joins the next
            for n in nodes[p]:
                part[n.name] = into
            nodes[into] = nodes[into] + nodes[p]


def rebuild(model, gm, segment_of):
    """model's GraphModule split into consecutive parts, the parts named in
    segment_of (fx node name -> segment number) wrapped in Checkpointed.
    Parameters and buffers are model's own (shared, not copied)."""
    part, last, parts, ckpt = {}, None, -1, set()
    segment_of = _absorb(gm, segment_of)
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        key = ("ckpt", segment_of[n.name]) if n.name in segment_of else ("plain",)
        if key != last or key == ("plain",) and last != ("plain",):
            parts += 1
            last = key
        part[n.name] = parts
        if key[0] == "ckpt":
            ckpt.add(parts)
    _merge_silent_parts(gm, part, ckpt)
    split = split_module(gm, model, lambda n: part[n.name])
    for k in sorted(ckpt):
        name = f"submod_{k}"
        setattr(split, name, Checkpointed(getattr(split, name)))
    split.memplan_checkpointed = len(ckpt)
    return split
