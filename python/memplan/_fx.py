"""torch.fx plumbing for memplan.torch: capturing any nn.Module as a
memplan-graph/1 forward graph whose node names are the fx node names, and
rebuilding it with chosen runs checkpointed (memplan._ckpt).

The graph memplan plans and the module torch runs come from the same fx
trace, so a plan's node names name the module's own nodes.
"""

import contextlib
import time

import torch
import torch.fx

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


class _Tracer(torch.fx.Tracer):
    """symbolic_trace's tracer that also writes each node's module path in
    node.meta["mp_path"] (the innermost module whose forward made it: the
    pieces checkpoint_sequential-shaped candidates group by), and with
    `chunks` traces every unidirectional nn.LSTM as `chunks` calls of the
    same module over consecutive time chunks, the (h, c) state carried
    (rnn_chunks: {module path: number of chunks})."""

    def __init__(self, rnn_chunks=None):
        super().__init__()
        self.path = []
        self.rnn_chunks = rnn_chunks or {}

    def call_module(self, m, forward, args, kwargs):
        name = self.path_of_module(m)
        self.path.append(name)
        try:
            chunks = self.rnn_chunks.get(name)
            if chunks and not kwargs and len(args) in (1, 2):
                return self._chunked(m, forward, args, chunks)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.path.pop()

    def _chunked(self, m, forward, args, bounds):
        dim = 1 if m.batch_first else 0
        outs, state = [], args[1] if len(args) == 2 else None
        for start, length in bounds:
            piece = args[0].narrow(dim, start, length)
            out = super().call_module(m, forward, (piece,) if state is None else (piece, state),
                                      {})
            outs.append(out[0])
            state = out[1]
        return torch.cat(outs, dim), state

    def create_proxy(self, *args, **kwargs):
        proxy = super().create_proxy(*args, **kwargs)
        proxy.node.meta["mp_path"] = self.path[-1] if self.path else ""
        return proxy


def trace(model, rnn_chunks=None):
    """The fx GraphModule of model (symbolic tracing; leaf nn modules kept;
    rnn_chunks as _Tracer's)."""
    try:
        with py311_unpack_fix():
            tracer = _Tracer(rnn_chunks)
            graph = tracer.trace(model)
            return torch.fx.GraphModule(tracer.root, graph, model.__class__.__name__)
    except Exception as e:
        text = str(e).strip().splitlines()
        raise ExportError("torch.fx cannot trace the model: %s"
                          % (text[0] if text else type(e).__name__)) from None


def rnn_chunks(model, inputs, steps=16, most=8):
    """{module path: [(start, length)...]}: time chunks of about `steps`
    steps (at most `most` chunks) for every unidirectional, unpacked nn.LSTM of
    model, from the sequence length it sees on inputs (one forward pass in
    eval mode, no grad; model left as it was).  Chunking changes no value
    of the forward pass, but the input weights' gradient becomes a sum of
    per-chunk products: equal up to float rounding, not bit for bit."""
    seen, hooks = {}, []
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.LSTM) and not m.bidirectional and m.num_layers >= 1:
            def hook(mod, args, name=name):
                x = args[0] if args else None
                if isinstance(x, torch.Tensor) and x.dim() == 3:
                    seen.setdefault(name, x.shape[1 if mod.batch_first else 0])
            hooks.append(m.register_forward_pre_hook(hook))
    try:
        with frozen(model), torch.no_grad():
            model.eval()
            model(*as_tuple(inputs))
    finally:
        for h in hooks:
            h.remove()
    out = {}
    for name, t in seen.items():
        n = max(1, min(most, t // steps))
        if n > 1:
            cuts = [t * i // n for i in range(n + 1)]
            out[name] = [(a, b - a) for a, b in zip(cuts, cuts[1:])]
    return out


def capture(model, inputs, name="model", rnn_chunks=None):
    """(gm, graph dict): the fx trace of model and its memplan-graph/1
    forward graph recorded on inputs (run once in eval mode, no grad; the
    model is left as it was).  rnn_chunks: as trace's."""
    inputs = as_tuple(inputs)
    gm = trace(model, rnn_chunks)
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
    """Runs a GraphModule node by node, naming the node that is running and
    adding up the seconds each node takes (times)."""

    current = None

    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)   # every value
        # stays alive to the end, so no storage address is reused in a run
        self.times = {}

    def run_node(self, n):
        self.current = n.name
        t0 = time.perf_counter()
        try:
            return super().run_node(n)
        finally:
            self.times[n.name] = time.perf_counter() - t0


def _storage(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def profile_nodes(model, gm, inputs, runs=2, workspace=None):
    """({fx node name: bytes}, {fx node name: seconds}).

    Bytes: what autograd saves for the backward pass while a node runs that
    is none of the graph's values -- the insides of leaf modules the graph
    cannot see (an LSTM's gates, a Transformer layer's attention), which
    checkpointing the node frees too; measured by saved-tensor hooks.
    Seconds: each node's forward time in train mode with autograd recording
    (what recomputing it costs), the least of `runs` forward passes (the
    first pays one-time costs).  workspace: a dict to fill with each leaf
    module call's transient bytes (node_workspaces).  Model left as it was."""
    inputs = as_tuple(inputs)
    visible, saved, times = set(), {}, {}
    with frozen(model):
        model.train()
        for t in list(model.parameters()) + list(model.buffers()) + list(inputs):
            if isinstance(t, torch.Tensor):
                visible.add(_storage(t)[0])
        for i in range(max(1, runs)):
            runner = _SavedBy(gm)

            def pack(t, runner=runner):
                if t.layout == torch.strided and t.numel():
                    saved.setdefault(_storage(t), runner.current)
                return t

            if i == 0:
                with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                    result = runner.run(*inputs)
                for value in list(runner.env.values()) + [result]:
                    for t in _flat_tensors(value):
                        visible.add(_storage(t)[0])
                if workspace is not None:
                    workspace.update(node_workspaces(gm, runner.env))
            else:
                runner.run(*inputs)
            for k, v in runner.times.items():
                times[k] = min(v, times.get(k, v))
            del runner
    out = {}
    for (ptr, nbytes), node in saved.items():
        if ptr not in visible and node is not None:
            out[node] = out.get(node, 0) + nbytes
    return out, times


def _transient(fn):
    """Bytes torch's CPU allocator holds during fn() above the larger of
    what was allocated when it started and when it ended (torch.profiler's
    memory events: a running sum from the start)."""
    from torch.profiler import ProfilerActivity, profile
    from ._measure import peak_and_end       # _measure imports this module
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    peak, end = peak_and_end(prof)
    return max(0, peak - max(0, end))


def _transients(module, args):
    """(forward, backward) transient bytes of one call of module on args:
    what torch's CPU kernels allocate and free again within the call (a
    oneDNN convolution's copies of its input and of its output's gradient,
    batch norm's backward buffer), each pass measured alone by _transient.
    Parameters' .grad exist beforehand (as in a training step), so
    accumulating into them counts as the transient it is."""
    args = _detached(args)
    for p in module.parameters():
        if p.requires_grad and p.grad is None:
            p.grad = torch.zeros_like(p)
    box = []
    fwd = _transient(lambda: box.append(module(*args)))
    outs = [t for t in _flat_tensors(box[0]) if t.requires_grad]
    grads = [torch.ones_like(t) for t in outs]
    bwd = _transient(lambda: torch.autograd.backward(outs, grads)) if outs else 0
    return fwd, bwd


def _detached(value):
    """value with every tensor in it (nested tuples and lists too) detached
    from its graph, requiring grad as it did."""
    if isinstance(value, torch.Tensor):
        return value.detach().requires_grad_(value.requires_grad)
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v) for v in value)
    return value


def node_workspaces(gm, env, kinds=(torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.Linear,
                                    torch.nn.LSTM)):
    """{fx node name: (forward, backward) transient bytes} of the calls of
    leaf modules of these kinds in gm, each rerun alone on the values it
    read (env: a finished Interpreter's values) and measured by _transients;
    calls of equal modules on equal shapes are measured once."""
    out, seen = {}, {}
    for n in gm.graph.nodes:
        if n.op != "call_module":
            continue
        m = gm.get_submodule(n.target)
        if not isinstance(m, kinds):
            continue
        args = torch.fx.node.map_arg(n.args, lambda a: env[a])
        key = (repr(m), tuple(tuple(t.shape) for t in _flat_tensors(args)))
        if key not in seen:
            seen[key] = _transients(m, args)
        if any(seen[key]):
            out[n.name] = seen[key]
    return out


def _flat_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value] if value.layout == torch.strided and value.numel() else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    return []
