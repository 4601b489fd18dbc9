"""Rebuilding a captured module (memplan._fx.capture) with chosen runs of
its nodes checkpointed: torch.fx's split_module cuts the GraphModule into
consecutive parts, and each checkpointed part is wrapped in Checkpointed,
which drops its activations in the forward pass and reruns it in the
backward pass.  Runs may nest (a checkpointed part inside a checkpointed
part), to any depth.
"""

import operator

import torch
from torch.fx.passes.split_module import split_module
from torch.utils.checkpoint import checkpoint

_REPLAY = [0]     # > 0 while a checkpointed part is being recomputed
_GRAD = torch.ones((), requires_grad=True)   # see Checkpointed.forward


class Checkpointed(torch.nn.Module):
    """A run of nodes whose activations are dropped in the forward pass and
    recomputed in the backward pass.

    The outer level uses torch's non-reentrant checkpoint.  A part nested
    inside a checkpointed part (chen2016's recursion: its values are dropped
    again while the outer part is recomputed) uses the reentrant one: torch
    1.13's non-reentrant checkpoint keeps its inputs in a closure, so a
    nested one would hold them for the whole step; the reentrant one saves
    them with save_for_backward, through the outer level's saved-tensor
    hooks, and runs its function without autograd.  It passes _GRAD, a
    tensor that requires grad, so that its parameters get gradients when no
    input requires one.

    Recomputations run the nodes again in train mode, which would move
    batch-norm running statistics more than once per step; every run but
    the step's own first one puts them back, so the model trains exactly
    like the unmodified one."""

    def __init__(self, inner, nested=False):
        super().__init__()
        self.inner = inner
        self.nested = nested
        self._first = False

    def forward(self, *args):
        self._first = _REPLAY[0] == 0
        if self.nested:
            return checkpoint(self._run_nested, _GRAD, *args, use_reentrant=True)
        return checkpoint(self._run, *args, use_reentrant=False)

    def _run_nested(self, _grad, *args):
        return self._run(*args)

    def _run(self, *args):
        if self._first:
            self._first = False
            return self.inner(*args)
        saved = [(b, b.detach().clone()) for b in self.inner.buffers()]
        _REPLAY[0] += 1
        try:
            return self.inner(*args)
        finally:
            _REPLAY[0] -= 1
            # through .data: no version bump, or the autograd graph just
            # recomputed (which saved the statistics) would refuse to run
            for b, v in saved:
                b.data.copy_(v)


def _absorb(gm, segment_of):
    """Nodes the planner's graph does not have (getattr on a tensor, the
    test of a torch._assert) that fx placed between two nodes of one run
    join that run, so that each run is one contiguous part.  So do the
    tuple items read right after a run from what it returns: a part that
    returned an nn.LSTM's whole (output, (h, c)) made the checkpoint
    rebuild h and c in the backward pass and hold them beside the output
    (126 008 bytes more than checkpoint_sequential's same segments on
    bench/torch's LSTM at batch 32: over a budget of exactly its peak)."""
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
        for n in nodes[hi + 1:]:
            if n.name in out or not _item_of(n, out, k):
                break
            out[n.name] = k
    return out


def _item_of(n, segment_of, k):
    """Whether fx node n takes an item of a tuple that run k makes."""
    src = n.args[0] if n.args else None
    return (n.op == "call_function" and n.target is operator.getitem
            and isinstance(src, torch.fx.Node) and segment_of.get(src.name) == k
            and isinstance(src.meta.get("tensor_meta"), (tuple, list)))


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


def rebuild(model, gm, segment_of, nested=None):
    """model's GraphModule split into consecutive parts, the parts named in
    segment_of (fx node name -> segment number) wrapped in Checkpointed.
    nested: {segment number: {fx node name: inner segment number}}: runs
    inside a segment, checkpointed again inside it (Checkpointed, nested).
    Parameters and buffers are model's own (shared, not copied)."""
    # split_module names a part's nodes afresh (add_1 becomes add where the
    # part has no add): a node's own name goes with it in its meta
    for n in gm.graph.nodes:
        n.meta.setdefault("mp_name", n.name)
    split, parts = _split(model, gm, segment_of)
    for k, part in parts.items():
        inner = (nested or {}).get(k)
        if inner:
            sub = getattr(split, part).inner
            names = {n.meta.get("mp_name", n.name): n.name for n in sub.graph.nodes}
            inner = {names[n]: j for n, j in inner.items() if n in names}
            if inner:
                getattr(split, part).inner = _split(sub, sub, inner, nested=True)[0]
    split.memplan_checkpointed = len(parts)
    for m in split.modules():
        if isinstance(m, torch.fx.GraphModule):
            _drop_unread_items(m)
    return split


def _drop_unread_items(gm):
    """Tuple items nothing reads leave the part's code.  fx frees a value
    after its last reader, and one without readers never: `x, _ = lstm(x)`
    traced keeps each `_`, an nn.LSTM's (h, c), to the end of its part,
    where Python drops it at the next loop turn (checkpoint_sequential's
    k=2 shape on bench/torch's LSTM measured 131 072 bytes, one (h, c),
    above the row's own peak, so over a budget of exactly that peak)."""
    dropped = False
    for n in reversed(list(gm.graph.nodes)):
        if n.op == "call_function" and n.target is operator.getitem and not n.users:
            gm.graph.erase_node(n)
            dropped = True
    if dropped:
        gm.recompile()


def _split(root, gm, segment_of, nested=False):
    """(GraphModule of parts, {segment number: part attribute name})."""
    part, last, parts, ckpt = {}, None, -1, {}
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
            ckpt[parts] = key[1]
    _merge_silent_parts(gm, part, ckpt)
    # in the graph's own order, which the plan follows: split_module's
    # default order runs a part that reads only earlier parts' values (a
    # ResNet block's downsample) before the parts in between
    split = split_module(gm, root, lambda n: part[n.name], keep_original_order=True)
    out = {}
    for k in sorted(ckpt):
        name = f"submod_{k}"
        setattr(split, name, Checkpointed(getattr(split, name), nested))
        out[ckpt[k]] = name
    return _inline_plain(split), out


def _inline_plain(split):
    """split with its plain parts' nodes moved into its own graph.  A part
    is a Python call, and a call's arguments live in the caller's frame
    until it returns: a plain part that ran from a run's end to the end of
    the forward pass held the run's outputs that only its first nodes read
    (ResNet-50 at batch 16, a run ending at a block's last batch norm:
    12.25 MiB per such output above the plan's peak, to the end of the
    forward pass).  Inlined, fx frees each value after its last reader.
    The nodes keep their meta (mp_name); a part's modules and attributes
    are reached through it (submod_2.layer1_0_conv1)."""
    parts = {name for name, m in split.named_children() if isinstance(m, torch.fx.GraphModule)}
    if not parts:
        return split
    g, env = torch.fx.Graph(), {}
    for n in split.graph.nodes:
        if n.op == "call_module" and n.target in parts:
            env[n] = _copy_part(g, split.get_submodule(n.target), n.target,
                                [torch.fx.map_arg(a, env.__getitem__) for a in n.args])
        elif (n.op == "call_function" and n.target is operator.getitem
              and isinstance(env.get(n.args[0]), (tuple, list))):
            env[n] = env[n.args[0]][n.args[1]]      # an item of a part's outputs
        elif n.op == "output":
            g.output(torch.fx.map_arg(n.args[0], env.__getitem__))
        else:
            env[n] = g.node_copy(n, env.__getitem__)
    return torch.fx.GraphModule(split, g)


def _copy_part(g, part, prefix, args):
    """part's nodes copied into g, reading args; its outputs (a node or a
    tuple of them)."""
    env, places = {}, [n for n in part.graph.nodes if n.op == "placeholder"]
    for p, a in zip(places, args):
        env[p] = a
    for n in part.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            return torch.fx.map_arg(n.args[0], env.__getitem__)
        env[n] = g.node_copy(n, env.__getitem__)
        if n.op in ("call_module", "get_attr"):
            env[n].target = prefix + "." + n.target
    return None
