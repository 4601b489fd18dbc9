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
    graph = rec.to_graph(meta)
    gm.memplan_graph = graph      # profile_nodes compares autograd with it
    return gm, graph


class _SavedBy(torch.fx.Interpreter):
    """Runs a GraphModule node by node, naming the node that is running and
    adding up the seconds each node takes (times)."""

    current = None

    def __init__(self, gm, device=None):
        super().__init__(gm, garbage_collect_values=False)   # every value
        # stays alive to the end, so no storage address is reused in a run
        self.times = {}
        self.cuda = device is not None and device.type == "cuda"
        self.device = device

    def run_node(self, n):
        self.current = n.name
        if self.cuda:                   # a node's seconds include its kernels
            torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        try:
            return super().run_node(n)
        finally:
            if self.cuda:
                torch.cuda.synchronize(self.device)
            self.times[n.name] = time.perf_counter() - t0


class _Saving:
    """profile_nodes' saved-tensor hooks: pack notes each saved tensor's
    storage under the running node's name and keeps the tensor alive to
    the pass's end (no storage address reused in the pass), giving
    autograd its index.  Autograd's graph holds both hooks, so done()
    drops the tensors and the runner: before, the hook returned the
    tensor itself and closed over the runner, cycles through autograd's C++
    objects that Python's gc cannot break -- every capture leaked its
    activations (234 tensors, 220 MiB, for ResNet-50 at 8x3x112x112; the
    bench process grew 3-5 GB a model until the OOM killer stopped it)."""

    def __init__(self, runner, saved):
        self.runner, self.saved, self.held = runner, saved, []

    def pack(self, t):
        if t.layout == torch.strided and t.numel():
            self.saved.setdefault(_storage(t), self.runner.current)
        self.held.append(t)
        return len(self.held) - 1

    def unpack(self, i):
        return self.held[i]

    def done(self):
        self.runner, self.held = None, []


def _storage(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def profile_nodes(model, gm, inputs, runs=2, workspace=None, graph=None, saved_in_graph=False,
                  credits=None):
    """({fx node name: bytes}, {fx node name: seconds}).

    Bytes: what autograd keeps for a node's backward pass beyond what the
    library's training graph keeps for it, measured by saved-tensor hooks:
    what autograd saves while the node runs that is none of the graph's
    values -- the insides of leaf modules the graph cannot see (an LSTM's
    gates, an attention's scores), which checkpointing the node frees too --
    less, for a node the library knows nothing of (its gradient reads every
    input and output, generic_backward), the graph values only such
    gradients keep and autograd does not save (an nn.MultiheadAttention's
    query and output: it saves its own copies; _kept_unsaved).  graph: the captured dict
    (default: the one capture left on gm).  saved_in_graph: the bytes of
    such opaque nodes go INTO graph (_saved_output), not into the dict
    returned, so the planner counts them at the steps where they exist (but
    a run can then no longer drop them while keeping the node's output).
    Seconds: each node's forward time in train mode with autograd recording
    (what recomputing it costs), the least of `runs` forward passes (the
    first pays one-time costs).  workspace: a dict to fill with each leaf
    module call's transient bytes (node_workspaces).  credits: a dict to fill
    with {fx node name: [graph tensor name]}, the values whose bytes the
    node's (negative) entry credits (_kept_unsaved).  Model left as it was."""
    inputs = as_tuple(inputs)
    graph = graph if graph is not None else getattr(gm, "memplan_graph", None)
    visible, saved, times, credit, opaque = set(), {}, {}, {}, ()
    with frozen(model):
        model.train()
        for t in list(model.parameters()) + list(model.buffers()) + list(inputs):
            if isinstance(t, torch.Tensor):
                visible.add(_storage(t)[0])
        from ._measure import device_of
        device = device_of(model, inputs)
        for i in range(max(1, runs)):
            runner = _SavedBy(gm, device)
            hooks = _Saving(runner, saved)
            if i == 0:
                with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
                    result = runner.run(*inputs)
                for value in list(runner.env.values()) + [result]:
                    for t in _flat_tensors(value):
                        visible.add(_storage(t)[0])
                if workspace is not None:
                    workspace.update(node_workspaces(gm, runner.env))
                if graph is not None:
                    credit, opaque, which = _kept_unsaved(graph, gm, runner.env,
                                                          {p for p, _ in saved})
                    if credits is not None:
                        credits.update(which)
                hooks.done()
            else:
                runner.run(*inputs)
            for k, v in runner.times.items():
                times[k] = min(v, times.get(k, v))
            del runner
    out = {}
    for (ptr, nbytes), node in saved.items():
        if ptr not in visible and node is not None:
            out[node] = out.get(node, 0) + nbytes
    for node, nbytes in credit.items():
        out[node] = out.get(node, 0) - nbytes
    for node in opaque if saved_in_graph else ():
        if out.get(node, 0) >= 0:
            _saved_output(graph, node, out.pop(node, 0))
    return out, times


def _saved_output(graph, name, nbytes):
    """Gives graph's node `name` (one the library knows nothing of, whose
    gradient reads all its outputs) one more output of nbytes: what autograd
    keeps for its backward pass (profile_nodes).  The planner then keeps it
    from the node's step to its gradient's, drops it where the node is
    checkpointed and counts it again where it is recomputed -- as torch
    does -- instead of beside the plan at every step."""
    if nbytes <= 0:
        return
    node = next(nd for nd in graph["nodes"] if nd["name"] == name)
    tid = len(graph["tensors"])
    graph["tensors"].append({"id": tid, "name": name + ":saved", "shape": [int(nbytes)],
                             "dtype": "uint8", "bytes": int(nbytes), "kind": "activation",
                             "alias_of": None})
    node["outputs"].append(tid)


def _kept_unsaved(graph, gm, env, saved):
    """({fx node name: bytes}, [fx node name], {fx node name: [tensor
    name]}): for the nodes whose
    gradient the library does not know (generic_backward: it reads all of
    the node's inputs and outputs), the activations only such gradients
    keep (every gradient that reads them or a view of them is one) whose
    storage autograd saved for no node (saved: storage addresses) --
    each credited once, to the node whose gradient runs last, to which the
    plan holds it (a layer's input that an nn.LSTM's time chunks read
    through views: each chunk saves its own contiguous copy) -- those
    nodes' names, and per credited node the values credited.  env: a
    finished Interpreter's values."""
    import json
    from . import lib
    tensors = graph["tensors"]
    remat = lib.Remat(lib.Graph.parse(json.dumps(graph), "profile"))
    train = remat.graph
    nf = remat.forward_count

    def root(t):
        return t if tensors[t]["alias_of"] is None else tensors[t]["alias_of"]
    readers, opaque = {}, []
    for nd in train.nodes[nf:]:
        for t in nd.inputs:
            if t < len(tensors):          # a forward value
                readers.setdefault(root(t), set()).add(nd.id)
        if nd.op == "generic_backward" and nd.name.startswith("bwd:"):
            opaque.append(nd)
    producer = {t: (nd["name"], i) for nd in graph["nodes"] for i, t in enumerate(nd["outputs"])}
    fx = {n.name: n for n in gm.graph.nodes}
    names = [nd.name[len("bwd:"):] for nd in opaque]
    ids = {nd.id for nd in opaque}
    step = {v: i for i, v in enumerate(train.order)}
    out, which = {}, {}
    for r in sorted({root(t) for nd in opaque for t in nd.inputs if t < len(tensors)}):
        if tensors[r]["kind"] != "activation" or not readers[r] <= ids or r not in producer:
            continue
        src, i = producer[r]
        values = _flat_tensors(env.get(fx.get(src))) if src in fx else []
        if i < len(values) and _storage(values[i])[0] not in saved:
            name = train.nodes[max(readers[r], key=step.get)].name[len("bwd:"):]
            out[name] = out.get(name, 0) + tensors[r]["bytes"]
            which.setdefault(name, []).append(tensors[r]["name"])
    return out, [n for n in names if n in fx], which


def _transient(fn, device):
    """Bytes torch allocates on device during fn() above the larger of
    what was allocated when it started and when it ended
    (_measure.allocated_during)."""
    from ._measure import allocated_during    # _measure imports this module
    peak, end = allocated_during(fn, device)
    return max(0, peak - max(0, end))


def _transients(module, args, kwargs=None, shared=False):
    """(forward, backward) transient bytes of one call of module on args
    and kwargs: what torch's CPU kernels allocate and free again within the
    call (a oneDNN convolution's copies of its input and of its output's
    gradient, batch norm's backward buffer, a linear layer's weight
    gradient before it is accumulated), each pass measured alone by
    _transient.  Parameters' .grad exist beforehand (as in a training
    step), so accumulating into them counts as the transient it is --
    unless `shared` (the module is called more than once): the training
    graph then gives each call's parameter gradients a tensor of their own,
    so they are measured as results (.grad None beforehand), not again as
    transients."""
    from ._measure import device_of
    memo = {}
    args, kwargs = _detached(args, memo), _detached(kwargs or {}, memo)
    device = device_of(module, tuple(_flat_tensors((args, kwargs))))
    for p in module.parameters():
        if p.requires_grad and (shared or p.grad is None):
            p.grad = None if shared else torch.zeros_like(p)
    box = []
    fwd = _transient(lambda: box.append(module(*args, **kwargs)), device)
    outs = [t for t in _flat_tensors(box[0]) if t.requires_grad]
    grads = [torch.ones_like(t) for t in outs]
    bwd = _transient(lambda: torch.autograd.backward(outs, grads), device) if outs else 0
    return fwd, bwd


def _detached(value, memo):
    """value with every tensor in it (in tuples, lists and dicts too)
    detached from its graph, requiring grad as it did; one tensor passed
    twice stays one (nn.MultiheadAttention takes another path when its
    query is its key)."""
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            memo[id(value)] = value.detach().requires_grad_(value.requires_grad)
        return memo[id(value)]
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: _detached(v, memo) for k, v in value.items()}
    return value


# Leaf modules whose kernels hold memory only while they run: a weight
# gradient computed whole and then added into .grad (linear layers, the
# attention's projections), oneDNN's copies, batch norm's backward buffer.
WORKSPACE_KINDS = (torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.Linear, torch.nn.LSTM,
                   torch.nn.MultiheadAttention, torch.nn.LayerNorm)


def node_workspaces(gm, env, kinds=WORKSPACE_KINDS):
    """{fx node name: (forward, backward) transient bytes} of the calls of
    leaf modules of these kinds in gm, each rerun alone on the values it
    read (env: a finished Interpreter's values) and measured by _transients;
    calls of equal modules on equal arguments are measured once."""
    out, seen = {}, {}
    calls = {}
    for n in gm.graph.nodes:
        if n.op == "call_module":
            calls[n.target] = calls.get(n.target, 0) + 1
    for n in gm.graph.nodes:
        if n.op != "call_module":
            continue
        m = gm.get_submodule(n.target)
        if not isinstance(m, kinds):
            continue
        args = torch.fx.node.map_arg(n.args, lambda a: env[a])
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: env[a])
        shared = calls[n.target] > 1
        key = (repr(m), shared, tuple(tuple(t.shape) for t in _flat_tensors((args, kwargs))),
               repr(torch.fx.node.map_aggregate((args, kwargs), lambda a: None if isinstance(
                   a, torch.Tensor) else a)))
        if key not in seen:
            seen[key] = _transients(m, args, kwargs, shared)
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
