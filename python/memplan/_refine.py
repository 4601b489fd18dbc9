"""Local descent for memplan.torch.fit: a plan that fits, made to recompute
less.

Planner.candidates proposes shapes -- groups of stages, checkpoint_sequential's
segments, chen2016's segmentations, each nested or not -- and the one that
fits a budget best still reruns whole runs that the budget does not need
rerun (ResNet-50 at batch 16 at 1/3 of its peak: 108% of a forward pass's
measured seconds, where 72% fits).  descend() starts from a candidate that
fits and takes, while one fits, the move that leaves the least forward
seconds recomputed:

- drop a run (and the runs nested in it);
- trim a run by its first or its last leaf call (a module call and the
  nodes since the one before: a conv, a batch norm);
- drop a nested run, or trim one by its first or last leaf call.

A move may not make a run read, from outside it, a value of an opaque node
(a leaf module the library differentiates generically: an attention, an
LSTM) that no run of the plan read from outside before: what torch keeps of
such a node is measured at capture for the plan of no checkpoint (its saved
tensors, less the outputs the generic gradient keeps and torch does not),
and a checkpoint that holds the output as its input changes that (ViT-B/16
at batch 4: a run opening after an attention measured 2.31 MiB, one
attention output, above its timeline).

Each move only lowers the recomputation, so it can only raise the peak: a
move that did not fit is not tried again later in the same descent.  The
moves of a plan are tried in order of the seconds they leave and the first
that fits is taken, so a descent costs one scan of the moves and about one
evaluation per move taken; at most MAX_EVALUATIONS in all.  An evaluation
is the library's (Planner.evaluate, about 8 ms on ResNet-50) and, where it
can decide the fit, the timeline's (memplan._timeline, 16-29 ms): at
batch 32, 45-60 evaluations, 0.6 s.
"""

MAX_EVALUATIONS = 160


def descend(planner, start, fits):
    """(best candidate found, evaluations): from `start` (a Candidate of
    planner that fits), moves taken while one keeps fits(candidate) true
    and lowers the forward seconds recomputed.  start itself when no move
    does."""
    best, failed, done = start, set(), 0
    opaque = _opaque(planner)
    allowed = _opaque_reads(planner, start.runs, opaque)
    while done < MAX_EVALUATIONS:
        for seconds, key, runs, inner in _moves(planner, best):
            if seconds >= best.extra_seconds or key in failed:
                continue
            if not _opaque_reads(planner, runs, opaque) <= allowed:
                failed.add(key)
                continue
            done += 1
            cand = planner.evaluate(runs, inner)
            if cand is not None and cand.extra_seconds < best.extra_seconds and fits(cand):
                best = cand
                break
            failed.add(key)
            if done >= MAX_EVALUATIONS:
                break
        else:
            break
    return best, done


def _moves(planner, cand):
    """[(seconds recomputed after, key, runs, inner)] of cand's moves, the
    least seconds first; key names the move by the nodes it removes."""
    runs = [list(r) for r in cand.runs]
    inner = [[list(g) for g in gs] for gs in cand.inner] if cand.inner else [[] for _ in runs]
    out = []

    def add(key, rs, ins):
        rs, ins = _normal(planner, rs, ins)
        if rs:
            out.append((_seconds(planner, rs, ins), key, rs, ins))

    for k, run in enumerate(runs):
        add(("drop", run[0]), runs[:k] + runs[k + 1:], inner[:k] + inner[k + 1:])
        calls = [c for c in planner._leaf_calls(run) if c]
        if len(calls) > 1:
            for key, kept in ((("head", run[0]), calls[1:]), (("tail", run[-1]), calls[:-1])):
                add(key, runs[:k] + [sum(kept, [])] + runs[k + 1:], inner)
        for j, g in enumerate(inner[k]):
            rest = inner[k][:j] + inner[k][j + 1:]
            add(("unnest", g[0]), runs, inner[:k] + [rest] + inner[k + 1:])
            parts = [c for c in planner._leaf_calls(g) if c]
            if len(parts) > 1:
                for key, kept in ((("nhead", g[0]), parts[1:]), (("ntail", g[-1]), parts[:-1])):
                    ins = inner[k][:j] + [sum(kept, [])] + inner[k][j + 1:]
                    add(key, runs, inner[:k] + [ins] + inner[k + 1:])
    out.sort(key=lambda m: m[0])
    return out


def _normal(planner, runs, inner):
    """runs and their nested runs as Planner.candidates makes them: no run
    opened by an in-place node, a nested run inside its run, in forward
    order."""
    pairs = []
    for run, groups in zip(runs, inner):
        run = planner._opening(run)
        if run:
            inside = set(run)
            groups = [g for g in map(planner._opening, groups) if g and set(g) <= inside]
            pairs.append((run, groups))
    pairs.sort(key=lambda p: planner.pos[p[0][0]])
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _seconds(planner, runs, inner):
    """Forward seconds recomputed (Planner.evaluate's extra_seconds)."""
    s = planner.seconds
    return (sum(s[v] for r in runs for v in r)
            + sum(s[v] for gs in inner for g in gs for v in g))


def _opaque(planner):
    """Forward nodes whose gradient is the library's generic one."""
    nf = planner.remat.forward_count
    names = {nd.name[len("bwd:"):] for nd in planner.nodes[nf:]
             if nd.op == "generic_backward" and nd.name.startswith("bwd:")}
    return {v for v in planner.forward if planner.nodes[v].name in names}


def _opaque_reads(planner, runs, opaque):
    """The opaque nodes whose values (or views of them) some run reads
    from outside itself."""
    out = set()
    for run in runs:
        inside = set(run)
        for v in run:
            for t in planner.nodes[v].inputs:
                root = planner.tensors[t].root
                made = planner.tensors[t if root is None else root].producer
                if made in opaque and made not in inside:
                    out.add(made)
    return out
