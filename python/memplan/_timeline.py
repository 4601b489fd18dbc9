"""What torch holds beside a checkpointing plan, placed on the plan's own
timeline, for memplan.torch.fit (_fit.Planner).

A candidate's planned peak (Planner.evaluate) adds the bytes autograd
saves inside opaque nodes (maxpool's indices, an attention's copies) as if
all were held at the plan's peak; it does not see what a nested run's
reentrant checkpoint holds through its backward pass; and it runs an op in
place wherever that is safe, where torch writes in place only where the
module says so.  Nor does it see what torch's checkpoints keep: a run's
inputs and the generator state, to the run's backward pass.
timeline_peak transforms the plan once more and places all of these where
torch holds them; Timeline computes it only for the candidates whose fit
it can decide.
"""

import time

import torch

RNG_STATE = torch.get_rng_state().numel()     # bytes each checkpoint keeps


def timeline_peak(planner, cand):
    """cand's planned peak with what torch holds beyond the plan's own
    lifetimes placed at the steps where it is held (the candidate's
    peak adds them as if held at its peak): each node's hidden bytes
    from the step that last ran it to its gradient's; in a nested run,
    what the reentrant checkpoint keeps until its whole backward pass is
    done -- the rerun's outputs (its function's return value) and the
    gradients that came in for them (the backward's arguments), where
    the plan frees each after its last reader; what every checkpoint
    keeps to its backward pass, the run's inputs and the generator state
    (_checkpoint_holds); and a forward op's result beside its inputs where
    torch does not run it in place (_torch_inplace).  Costs one more transform of the plan (about 10 ms
    on ResNet-50)."""
    g, names, steps = transformed(planner, cand)
    first, last = g.lifetimes()
    shared = g.share(share=False)
    storage, sizes = shared.storage, shared.storage_sizes
    base = _curve([(a, b, sizes[st]) for st, (a, b) in _spans(storage, first, last).items()],
                  len(names))
    storage, sizes = _torch_inplace(planner, g, shared)
    span = _spans(storage, first, last)
    tensors = [(t.name, first[t.id], last[t.id], storage[t.id]) for t in g.tensors]
    holds, held = _checkpoint_holds(planner, cand, g, steps, storage)
    for group in cand.inner:
        for r in group:
            holds += _nested_holds(planner, r, steps, tensors)
    extra = []
    for v, nbytes in planner.hidden.items():
        name = planner.nodes[v].name
        end = steps.get("bwd:" + name, [None])[-1]
        if end is not None and nbytes:
            ran = [i for i in steps.get("re:" + name, []) + steps.get(name, []) if i < end]
            start = max(ran, default=end)
            if nbytes < 0:
                start = _credit_start(planner, v, storage, holds, start)
            if start <= end:
                extra.append((start, end, nbytes))
    for st, end in holds:
        span[st][1] = max(span[st][1], end)
    load = _curve([(a, b, sizes[st]) for st, (a, b) in span.items()] + extra + held,
                  len(names))
    hidden = planner._hidden(cand.runs, cand.inner)
    return cand.peak - hidden - max(base, default=0) + max(load, default=0)


def transformed(planner, cand):
    """(graph, node names in step order, {name: its steps}): cand's plan
    applied to the training graph, as torch's checkpoint runs it (each
    run recomputed whole)."""
    plan = planner._rerun_whole(planner.remat.plan_mirror(cand.mirror, "checkpoint"),
                                cand.runs, cand.inner)
    g = planner.remat.apply(plan)
    names = [g.nodes[v].name for v in g.order]
    steps = {}
    for i, nm in enumerate(names):
        steps.setdefault(nm, []).append(i)
    return g, names, steps


def _credit_start(planner, v, storage, holds, start):
    """The first step from which node v's credit (a negative hidden entry:
    a value the plan holds for generic gradients that torch frees, as each
    reader saved its own copy; _fx._kept_unsaved) holds: not before a
    checkpoint that reads the value from outside has let it go.  Such a
    checkpoint keeps it as its input (LSTM time chunks at T = 128, 8 per
    layer: the first chunk of a layer kept and the others checkpointed
    planned 9 MiB below the step measured; with three layers so, 21 MiB)."""
    credited = {storage[t] for t in planner.credits.get(v, ())} - {None}
    held = [end for st, end in holds if st in credited]
    return max(start, max(held) + 1) if held else start


def _spans(storage, first, last):
    """{storage: [first step, last step]} over the tensors stored there."""
    span = {}
    for t, st in enumerate(storage):
        if st is not None:
            a, b = span.get(st, (first[t], last[t]))
            span[st] = [min(a, first[t]), max(b, last[t])]
    return span


def _torch_inplace(planner, g, shared):
    """(storage per tensor, bytes per storage): shared's in-place
    storages, with a write in place only where torch makes one -- a
    forward node (or its rerun) the module ran in place (an
    nn.ReLU(inplace=True)) and the gradient ops (whose results replace
    the gradients they read at once, which in-place storages count the
    same).  An operator.add allocates its result while both inputs are
    still held, which the plan's in-place add does not show; a rerun's
    add during the backward pass can make the step's peak (ResNet-50 at
    batch 4: 12.3 MiB under the measured peak without this).  And a cat's
    gradients are views of its output's gradient."""
    torch_inplace = {planner.nodes[v].name for v in planner.inplace}
    storage, sizes = list(shared.storage), list(shared.storage_sizes)
    over = shared.inplace_of
    for v in g.order:
        node = g.nodes[v]
        name = node.name[3:] if node.name.startswith("re:") else node.name
        backward = node.op.endswith("_backward") or node.op == "sum_n"
        for t in node.outputs:
            if over[t] is None or storage[t] is None:
                continue
            if backward or name in torch_inplace:     # over a view: its root's, as moved
                src = g.tensors[over[t]].root
                storage[t] = storage[over[t] if src is None else src]
            else:
                sizes.append(sizes[storage[t]])
                storage[t] = len(sizes) - 1
    for t in g.tensors:
        if t.root is not None and t.root != t.id and storage[t.id] is not None:
            storage[t.id] = storage[t.root]
    # torch's cat backward gives each input a view of the output's gradient,
    # one buffer held until the last view is used (the graph gives each
    # input's gradient its own tensor, freed as it is used)
    for node in g.nodes:
        if node.op == "concat_backward" and storage[node.inputs[0]] is not None:
            for t in node.outputs:
                if storage[t] is not None:
                    storage[t] = storage[node.inputs[0]]
    return storage, sizes


def _nested_holds(planner, run, steps, tensors):
    """(storage, step) pairs: what the reentrant checkpoint of the
    nested run holds up to the step of its last gradient."""
    inside = set(run)
    bwd = [steps["bwd:" + planner.nodes[v].name][-1] for v in run
           if "bwd:" + planner.nodes[v].name in steps]
    if not bwd:
        return []
    first_bwd, end = min(bwd), max(bwd)
    again = {}
    for v in run:
        ran = [i for i in steps.get("re:" + planner.nodes[v].name, ()) if i < first_bwd]
        if ran:
            again[v] = ran[-1]
    if not again:
        return []
    start = min(again.values())
    outs = {planner.tensors[t].name for v in run for t in planner.nodes[v].outputs
            if any(u not in inside for u in _tensor_readers(planner, t))}
    made = {again[v] for v in again
            if any(planner.tensors[t].name in outs for t in planner.nodes[v].outputs)}
    out = []
    for name, a, b, st in tensors:
        if st is None or b >= end:
            continue
        # the rerun's outputs, not its kernels' workspaces made at the same step
        if a in made and name.startswith("re:") and name[3:] in outs:
            out.append((st, end))
        elif name.startswith("grad:") and name[5:].split("@")[0] in outs and a < start <= b:
            out.append((st, end))
    return out


def _checkpoint_holds(planner, cand, g, steps, storage):
    """([(storage, step)], [(first step, last step, bytes)]): what torch's
    checkpoints hold beside the plan.  A run's inputs, which the plan frees
    after their last reader (a run's first add: its rerun, the add's
    gradient reads nothing), are held until the run's backward pass is
    done: the non-reentrant checkpoint keeps them in the closure that reruns
    the run until the last gradient that reads a value the run saved; the
    reentrant one (a nested run) among its saved tensors until its whole
    backward pass is done.  And each checkpoint keeps the CPU generator's
    state (torch.get_rng_state(), 5056 bytes), from its forward step to
    the same end."""
    holds, spans = [], []
    for k, run in enumerate(cand.runs):
        inner = cand.inner[k] if cand.inner else ()
        nested = {v for r in inner for v in r}
        ran = [steps[planner.nodes[v].name][0] for v in run]
        end = _last(steps, planner, [v for v in run if v in nested or _saves(g, planner, steps, v)])
        holds += _read_from_outside(g, ran, storage, end)
        spans += _rng_state(min(ran), end)
        for r in inner:
            end = _last(steps, planner, r)
            if end is None:
                continue
            first_bwd = min(i for i in (_last_step(steps, planner.nodes[v].name) for v in r)
                            if i is not None)
            again = [max((i for i in steps.get("re:" + planner.nodes[v].name, ())
                          if i < first_bwd), default=None) for v in r]
            holds += _read_from_outside(g, [i for i in again if i is not None], storage, end)
            spans += _rng_state(steps[planner.nodes[r[0]].name][0], end)
    return holds, spans


def _rng_state(start, end):
    return [(start, end, RNG_STATE)] if end is not None else []


def _last(steps, planner, nodes):
    """The step of the last gradient of forward nodes `nodes`, None if
    none has one."""
    ends = [_last_step(steps, planner.nodes[v].name) for v in nodes]
    return max((i for i in ends if i is not None), default=None)


def _last_step(steps, name):
    """The step of node `name`'s gradient, None if it has none."""
    return steps.get("bwd:" + name, [None])[-1]


def _saves(g, planner, steps, v):
    """Whether forward node v's gradient reads a value (or v hides bytes):
    autograd saved it through the run's checkpoint."""
    i = _last_step(steps, planner.nodes[v].name)
    if i is None:
        return False
    if planner.hidden.get(v):
        return True
    node = g.nodes[g.order[i]]
    return any(not g.tensors[t].name.startswith("grad:") for t in node.inputs)


def _read_from_outside(g, ran, storage, end):
    """(storage, end) for each value the nodes at steps `ran` read that none
    of them made (parameters have no storage)."""
    if end is None:
        return []
    made = {t for i in ran for t in g.nodes[g.order[i]].outputs}
    read = {t for i in ran for t in g.nodes[g.order[i]].inputs if t not in made}
    return [(storage[t], end) for t in read if storage[t] is not None]


def _tensor_readers(planner, t):
    """The forward nodes that read tensor t."""
    return [planner.forward[p] for p in planner._readers.get(t, ())]


def _curve(spans, steps):
    """Live bytes at each of `steps` steps of (first, last, bytes) spans,
    first and last inclusive."""
    d = [0] * (steps + 1)
    for a, b, nbytes in spans:
        d[a] += nbytes
        d[b + 1] -= nbytes
    out, live = [], 0
    for x in d[:steps]:
        live += x
        out.append(live)
    return out


class Timeline:
    """Candidates' peaks placed on their plans' timelines
    (Planner.timeline_peak), computed only where that can decide whether a
    candidate fits: it costs a transform of the plan, and it lowers a plan
    by its hidden bytes at most (they are then placed where held), while
    nested holds and torch's out-of-place ops can raise it."""

    def __init__(self, planners):
        self.planners = planners
        self.peaks = {}
        self.lows = {}
        self.seconds = 0.0

    def peak(self, c, limit):
        """c's planned peak where it decides c against limit bytes."""
        if id(c) in self.peaks:
            return self.peaks[id(c)][1]
        if not c.runs or self._low(c) > limit:
            return c.peak
        return self.exact(c)

    def exact(self, c):
        """c's timeline peak (computed once)."""
        if id(c) not in self.peaks:
            t = time.perf_counter()
            self.peaks[id(c)] = (c, self.planners[c.variant].timeline_peak(c))  # c kept: its id
            self.seconds += time.perf_counter() - t                          # stays its own
        return self.peaks[id(c)][1]

    def _low(self, c):
        """What c's timeline peak is at least: its hidden bytes off (fit
        asks for every candidate at each trial: computed once)."""
        if id(c) not in self.lows:
            self.lows[id(c)] = (c, c.peak - self.planners[c.variant]._hidden(c.runs, c.inner))
        return self.lows[id(c)][1]

    def least(self, cands):
        """The candidate with the least timeline peak, computing only those
        whose least possible one is below the best found."""
        best, peak = None, None
        for c in sorted((c for c in cands if c.runs), key=self._low):
            if peak is not None and self._low(c) >= peak:
                break
            here = self.exact(c)
            if peak is None or here < peak:
                best, peak = c, here
        if best is None:                 # nothing to checkpoint: the plain plan
            best = min(cands, key=lambda c: c.peak)
            peak = best.peak
        return best, peak

    def known(self, c):
        """c's timeline peak where computed, else its planned peak."""
        return self.peaks.get(id(c), (c, c.peak))[1]
