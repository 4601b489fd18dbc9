"""memplan.torch.fit: "train this model in N bytes" on real PyTorch.

1. Capture the module with torch.fx (memplan-graph/1, node names = fx node
   names) and build its training graph in libmemplan (memplan.lib.Remat).
2. Candidates: checkpoint runs of the chain's stages (the runs of forward
   nodes between cut points, mp_remat_chain).  For each run length L
   (1, 2, 3, 4, 6, 8, 12, 16 stages and all of them) the stages are grouped
   in consecutive runs of L, the runs ranked by bytes they drop per FLOP
   they recompute, and every prefix of that ranking is a candidate; and
   chen2016 Alg. 3's segmentations over a ladder of B, whose runs are as
   long as B allows (short where the layers are large).  Each
   candidate becomes chen2016 mirror counts (m = 1 inside a run, 0 for a
   node whose value leaves it) and the library evaluates it exactly: the
   transformed graph shared, placed and checked (its peak), and its extra
   FLOPs.  O(L-values x stages) evaluations.  Leaf modules hide what
   autograd saves inside them (an LSTM's gates): those bytes are measured
   at capture (saved-tensor hooks) and added to the peak of every
   candidate that keeps them.
3. Choose the least extra FLOPs whose planned peak fits the budget, build
   the module (torch.fx split_module, the runs wrapped in non-reentrant
   torch.utils.checkpoint) and MEASURE one real training step's peak
   (memplan._measure).  The planner's graph is a model of what autograd
   saves; when the measured peak is above the budget the ratio measured /
   planned becomes a correction and the next candidate is chosen with it,
   at most `attempts` times.  Only a measured fit is returned.
"""

import json
import time
from collections import namedtuple

from . import lib
from ._fx import capture, hidden_saved_bytes, rebuild
from ._measure import measure_peak
from .recompute import BudgetError

Candidate = namedtuple("Candidate", "runs mirror peak extra_flops")
FitResult = namedtuple("FitResult", "budget measured_peak plain_peak planned_peak extra_flops "
                                    "forward_flops checkpointed runs candidates attempts "
                                    "capture_seconds planning_seconds measuring_seconds")
FitResult.__doc__ = """What fit did.  budget, measured_peak (torch.profiler, one step),
plain_peak (the same for the unmodified model), planned_peak (libmemplan's checked plan of the same choice) in bytes; extra_flops and
forward_flops (one forward pass) as the planner estimates them; checkpointed: how many
runs are wrapped; runs: the fx node names of each; candidates evaluated; attempts:
steps measured; seconds spent capturing (one forward run of the model), planning
(libmemplan) and measuring (warm-up and measured steps)."""

RUN_LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 0)   # 0: every stage in one run


class Planner:
    """The forward graph of a module in libmemplan and its stage chain."""

    def __init__(self, graph_dict, name, hidden=None):
        self.graph = lib.Graph.parse(json.dumps(graph_dict), name)
        self.remat = lib.Remat(self.graph)
        train = self.remat.graph
        self.nodes = train.nodes
        self.tensors = train.tensors
        nf = self.remat.forward_count
        self.forward = [v for v in train.order if v < nf]
        self.pos = {v: i for i, v in enumerate(self.forward)}    # node id -> forward step
        fx = {n["name"] for n in graph_dict["nodes"]}
        chain = self.remat.chain()
        # A stage is usable when every node is one of the module's own (the
        # added loss node is not) and it makes some bytes worth dropping.
        self.stages = []
        for i in range(len(chain.fwd_flops)):
            ids = self.forward[chain.first_node[i]:chain.first_node[i + 1]]
            if ids and all(self.nodes[v].name in fx for v in ids):
                self.stages.append(ids)
        self._readers = self._forward_readers()
        ids = {self.nodes[v].name: v for v in self.forward}
        self.hidden = {ids[k]: b for k, b in (hidden or {}).items() if k in ids}

    def _forward_readers(self):
        readers = {}
        for pos, v in enumerate(self.forward):
            for t in self.nodes[v].inputs:
                readers.setdefault(t, []).append(pos)
        return readers

    def mirror(self, runs):
        """chen2016 mirror counts for checkpointing `runs` (lists of node
        ids): recompute every node of a run except those whose value (or a
        view of it) is read after the run ends."""
        m = [0] * self.remat.forward_count
        for run in runs:
            members = set(run)
            last = max(self.pos[v] for v in run)
            for v in run:
                m[v] = 1
            for v in run:
                for t in self.nodes[v].outputs:
                    if any(p > last for p in self._readers.get(t, ())):
                        for keep in (v, self.tensors[self.tensors[t].root].producer):
                            if keep in members:
                                m[keep] = 0
        return m

    def evaluate(self, runs):
        m = self.mirror(runs)
        if any(not any(m[v] or self.hidden.get(v) for v in r) for r in runs):
            return None                 # a run that drops nothing: no candidate
        e = self.remat.evaluate(self.remat.plan_mirror(m, "checkpoint"))
        # torch.utils.checkpoint reruns a whole run, the nodes whose values
        # leave it (kept, m = 0) too: their FLOPs are extra as well.
        rerun = sum(self.remat.node_flops(v) for r in runs for v in r if not m[v])
        return Candidate(tuple(tuple(r) for r in runs), m, e.peak + self._hidden(m, runs),
                         e.extra_flops + rerun)

    def _hidden(self, m, runs):
        """What autograd saves inside opaque nodes (hidden_saved_bytes): kept
        from the forward to the backward pass unless the node is in a run
        (torch's checkpoint reruns the whole run, the nodes whose values
        leave it too, so none of a run's insides are kept), and then
        present while its run is recomputed."""
        inside = {v for r in runs for v in r}
        kept = sum(b for v, b in self.hidden.items() if v not in inside)
        redo = max((sum(self.hidden.get(v, 0) for v in r) for r in runs), default=0)
        return kept + redo

    def candidates(self):
        seen, out = set(), [self.evaluate([])]
        self.alg3_candidates(seen, out)
        n = len(self.stages)
        for length in RUN_LENGTHS:
            size = length or n
            if size > n:
                continue
            groups = [sum(self.stages[i:i + size], []) for i in range(0, n, size)]
            ranked = sorted(groups, key=self._value, reverse=True)
            for j in range(1, len(ranked) + 1):
                runs = sorted(ranked[:j], key=lambda r: self.pos[r[0]])
                key = tuple(tuple(r) for r in runs)
                if key not in seen:
                    seen.add(key)
                    cand = self.evaluate(runs)
                    if cand:
                        out.append(cand)
        return out

    def alg3_candidates(self, seen, out):
        """chen2016 Alg. 3's segmentations over a ladder of B (each B keeps
        a stage output once the stages since the last kept one hold more
        than B bytes): every stretch of dropped nodes becomes a run, so the
        runs are as long as B allows -- uneven where the layers are."""
        own = {v for st in self.stages for v in st}
        total = sum(self.remat.node_bytes(v) for v in own) or 1
        b = max(1, total // 4096)
        while b <= total:
            m, _, _ = self.remat.alg3(b)
            runs, cur = [], []
            for v in self.forward:
                if m[v] and v in own:
                    cur.append(v)
                elif cur:
                    runs.append(cur)
                    cur = []
            if cur:
                runs.append(cur)
            runs.sort(key=lambda r: self.pos[r[0]])
            key = tuple(tuple(r) for r in runs)
            if runs and key not in seen:
                seen.add(key)
                cand = self.evaluate(runs)
                if cand:
                    out.append(cand)
            b = b * 3 // 2 + 1

    def _value(self, run):
        dropped = sum(self.remat.node_bytes(v) for v in run)
        return dropped / (1 + sum(self.remat.node_flops(v) for v in run))

    def names(self, cand):
        """The fx node names of each run, and fx name -> run number."""
        runs = [[self.nodes[v].name for v in r] for r in cand.runs]
        return runs, {name: k for k, r in enumerate(runs) for name in r}


def fit(model, inputs, budget, loss_fn=None, name="model", attempts=4, verify=True):
    """(module, FitResult): model rebuilt with the runs of nodes that let
    one training step fit `budget` bytes with the least recomputation.
    The module shares model's parameters and buffers and computes the same
    loss and gradients.  BudgetError when nothing measured fits."""
    t0 = time.perf_counter()
    gm, graph = capture(model, inputs, name)
    hidden = hidden_saved_bytes(model, gm, inputs)
    took = [time.perf_counter() - t0]
    t0 = time.perf_counter()
    planner = Planner(graph, name, hidden)
    cands = sorted(planner.candidates(), key=lambda c: (c.extra_flops, c.peak))
    fwd = planner.remat.evaluate(planner.remat.policy("none")).forward_flops
    took.append(time.perf_counter() - t0)
    t1 = time.perf_counter()
    plain = measure_peak(model, inputs, loss_fn) if verify else None
    # What the planner does not model (weight-gradient temporaries, the
    # loss, allocator slack) does not depend on what is checkpointed: the
    # plain step's excess over its plan is the first correction.
    excess = plain - cands_none(cands).peak if verify else 0
    tried, best = [], None
    for _ in range(max(1, attempts)):
        pick = next((c for c in cands if c.peak + excess <= budget and c not in tried), None)
        if pick is None:
            break
        tried.append(pick)
        runs, segment_of = planner.names(pick)
        module = rebuild(model, gm, segment_of)
        if not verify:
            return module, _result(budget, None, None, pick, fwd, runs, cands, 0, took + [0.0])
        peak = plain if not pick.runs else measure_peak(module, inputs, loss_fn)
        if best is None or peak < best[0]:
            best = (peak, pick)
        if peak <= budget:
            return module, _result(budget, peak, plain, pick, fwd, runs, cands, len(tried),
                                   took + [time.perf_counter() - t1])
        excess = max(excess, peak - pick.peak)
    least = min(cands, key=lambda c: c.peak)
    what = (f"the smallest measured peak was {best[0]} bytes" if best else
            f"the smallest planned peak is {least.peak} bytes ({excess:+d} bytes measured "
            f"beside the plan)")
    raise BudgetError(f"budget {budget} bytes cannot be met by checkpointing {name}: {what}",
                      best[0] if best else least.peak + excess)


def cands_none(cands):
    return next(c for c in cands if not c.runs)


def _result(budget, peak, plain, cand, fwd, runs, cands, attempts, seconds):
    return FitResult(budget, peak, plain, cand.peak, cand.extra_flops, fwd, len(runs), runs,
                     len(cands), attempts, *seconds)
