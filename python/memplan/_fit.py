"""memplan.torch.fit: "train this model in N bytes" on real PyTorch.

1. Capture the module with torch.fx (memplan-graph/1, node names = fx node
   names) and build its training graph in libmemplan (memplan.lib.Remat).
   One more pass (two forward runs in train mode) measures each node's
   forward seconds -- what recomputing it costs, memory-bound ops included,
   which FLOPs undercount -- and what autograd saves inside leaf modules
   the graph cannot see (an LSTM's gates).  With exact=False every
   unidirectional nn.LSTM is traced as calls over time chunks (_fx.rnn_chunks),
   so a layer's insides can be recomputed a chunk at a time.
2. Candidates: runs of forward nodes to checkpoint (torch reruns a whole
   run in the backward pass).  Families, all evaluated exactly by the
   library (the transformed graph shared, placed and checked):
   - the chain's stages (runs between cut points, mp_remat_chain) grouped
     L at a time (L in RUN_LENGTHS), the groups ranked by bytes dropped per
     second recomputed, every prefix of that ranking;
   - chen2016 Alg. 3's segmentations over a ladder of B (runs as long as B
     allows: short where the layers are large);
   - checkpoint_sequential's shapes: for pieces = the stages, or the
     consecutive nodes of one module at module depth 1..4, and k segments,
     the first k - 1 segments of len // k pieces (what
     torch.utils.checkpoint.checkpoint_sequential checkpoints), so that fit
     considers every segmentation that function would make;
   - each of those with nesting (chen2016's recursion): inside a run that
     spans several stages, every stage but the last is checkpointed again,
     so while the run is recomputed only its stage boundaries stay.
   A plan is chen2016 mirror counts: 1 for a run's nodes, 2 for a nested
   run's, one level less for a value read after its run ends.
   Once the budget is known, the best ranked candidate that fits it (per
   variant) is improved by local descent (memplan._refine: drop or trim
   runs and nested runs while the plan fits) and ranked with the others.
3. Choose: the candidates whose planned peak, plus what the plan does not
   model (the plain step's measured excess over its plan), fits the
   budget, ranked by the forward seconds they recompute.  The best
   `trials` of them are built (torch.fx split_module, runs wrapped in
   torch.utils.checkpoint) and MEASURED (peak and step time); of those
   whose measured peak is within the budget, the ones timed close to the
   fastest or ranked before it are timed again side by side and the
   fastest is returned, the best ranked where their steps are
   indistinguishable (memplan._choice).
   A plan ranked before the pick that misses the budget by less than
   NEAR_MISS (the estimate's error) is measured instead, until one such
   measures over it: at the measured peak of a checkpoint_sequential row,
   that row's own shape is estimated a little over.  A measured peak
   above the budget raises the excess for the candidates after it; at most
   `attempts` candidates are measured in all.  Only a measured fit is
   returned.
"""

import json
import os
import time
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

from . import _choice, _refine, _timeline, lib
from ._ckpt import rebuild
from ._fx import capture, profile_nodes, rnn_chunks
from ._measure import measure_step
from .recompute import BudgetError

Candidate = namedtuple("Candidate", "runs inner mirror peak extra_flops extra_seconds kind "
                                    "variant", defaults=("flat", 0))
Candidate.__doc__ = """One plan: runs (node ids) checkpointed, inner (nested runs per run),
chen2016 mirror counts, the planned peak, the FLOPs and forward seconds it
recomputes; kind: "sequential" for checkpoint_sequential's shapes, "nested", else
"flat"; variant: 0 for the module as written, k > 0 for its LSTMs in time chunks
(the k-th chunking tried, CHUNKINGS)."""
FitResult = namedtuple("FitResult", "budget measured_peak plain_peak planned_peak extra_flops "
                                    "forward_flops checkpointed runs candidates attempts "
                                    "capture_seconds planning_seconds measuring_seconds "
                                    "measured_seconds plain_seconds extra_seconds "
                                    "forward_seconds nested steps chunked kind trials "
                                    "plain_planned", defaults=(None,))
FitResult.__doc__ = """What fit did.  budget, measured_peak (torch.profiler, one step),
plain_peak (the same for the unmodified model), planned_peak (libmemplan's checked plan
of the same choice) in bytes; extra_flops and forward_flops (one forward pass) as the
planner estimates them; checkpointed: how many runs are wrapped; runs: the fx node names
of each; candidates evaluated; attempts: candidates measured; seconds spent capturing
(the recorded forward pass and two timed ones), planning (libmemplan) and measuring;
measured_seconds and plain_seconds: the least of the timed steps of the returned module
and of the model; extra_seconds: the forward seconds the plan recomputes, forward_seconds:
one forward pass, both as measured at capture; nested: runs checkpointed inside runs;
steps: training steps fit ran to measure (4 per measured module, and _choice.ROUNDS
per fit timed again beside the others); chunked: 0, or
the module runs its nn.LSTMs in up to this many time chunks (exact=False); kind: "sequential" when the
plan is one checkpoint_sequential would make, "nested", else "flat"; trials: a Trial per
module fit built, in the order built (why fit returned what it did); plain_planned: the
planned peak of the model as written (its measured peak minus this is the excess fit first
adds to every plan's)."""
Trial = namedtuple("Trial", "kind runs nested chunked planned_peak measured_peak seconds fits "
                            "error", defaults=(None,))
Trial.__doc__ = """One module fit built and measured: its plan's kind, runs, nested runs and
chunking (as in FitResult), its planned peak on the timeline (before the excess fit adds),
the measured peak and step seconds (measure_step), and whether it fitted the budget.  A
module torch.fx could not split or torch could not run has measured_peak and seconds None,
fits False and the exception in error (it costs no attempt)."""

RUN_LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 0)   # 0: every stage in one run
SEQUENTIAL_K = 24          # checkpoint_sequential shapes up to this many segments
MODULE_DEPTHS = (1, 2, 3, 4)
# exact=False: nn.LSTMs split in at most this many time chunks, one variant
# each (coarser chunks run faster; finer ones recompute less at a time)
CHUNKINGS = (2, 4, 8)
EVAL_THREADS = min(4, os.cpu_count() or 1)   # candidates evaluated at once
# Estimates (timeline peak plus the plain step's excess) came out within
# 0.1% of the measured peak on bench/torch's LSTM (checkpoint_sequential's
# shapes, batch 32, T=128) and within 0.42% on ResNet-50's nested plans; a
# better ranked plan that misses the budget by less than this share of it
# is measured rather than passed over: at k=4's measured peak its own shape
# was estimated 0.1% over and measures within (and fit went on to the
# slower time-chunked plans).
NEAR_MISS = 0.01
# Once a plan fits, a better ranked one is measured if its estimate misses
# by less than this share (it costs steps, never the budget: only measured
# fits are returned).  The bench's ResNet-50 at batch 16 at 1/3 (runs of
# 2026-11-28 and -29) returned a 9-run plan at 1.52-1.54x where a 6-run plan
# planned 5.4 MB under the budget (measured 5.6 MB under, 1.32-1.37x) was
# never measured, while the seven fits run apart from it measured it first
# (bench/torch/notes.md).
NEAR_FIT = 0.05


class Planner:
    """The forward graph of a module in libmemplan and its stage chain."""

    def __init__(self, graph_dict, name, hidden=None, seconds=None, paths=None, leaves=(),
                 variant=0, credits=None):
        self.variant = variant
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
        self.stage_of = {v: i for i, st in enumerate(self.stages) for v in st}
        self.own = [v for v in self.forward if self.nodes[v].name in fx]   # the module's nodes
        self._readers = self._forward_readers()
        ids = {self.nodes[v].name: v for v in self.forward}
        self.hidden = {ids[k]: b for k, b in (hidden or {}).items() if k in ids}
        # the values a negative hidden entry credits (profile_nodes)
        tids = {t.name: t.id for t in self.tensors}
        self.credits = {ids[k]: [tids[n] for n in ns if n in tids]
                        for k, ns in (credits or {}).items() if k in ids}
        # Seconds: measured per fx node; without them, FLOPs stand in.
        if seconds:
            self.seconds = {v: seconds.get(self.nodes[v].name, 0.0) for v in self.forward}
        else:
            self.seconds = {v: float(self.remat.node_flops(v)) for v in self.forward}
        self.paths = {ids[k]: p for k, p in (paths or {}).items() if k in ids}
        self.leaves = {ids[k] for k in leaves if k in ids}     # calls of leaf modules
        # Nodes that ran in place (an nn.ReLU(inplace=True)): one must not
        # open a run, where it would change the run's input in place
        # (torch's checkpoint reruns the run on that input).
        inplace = {n["name"] for n in graph_dict["nodes"] if n.get("attrs", {}).get("inplace")}
        self.inplace = {ids[k] for k in inplace if k in ids}

    def _forward_readers(self):
        readers = {}
        for pos, v in enumerate(self.forward):
            for t in self.nodes[v].inputs:
                readers.setdefault(t, []).append(pos)
        return readers

    def _mark(self, m, runs, level):
        """Nodes of runs (whose m is level - 1) to level; a node whose value
        (or a view of it) is read after its run ends back to level - 1:
        torch's checkpoint keeps a run's outputs."""
        for run in runs:
            members = {v for v in run if m[v] == level - 1}
            last = max(self.pos[v] for v in run)
            for v in members:
                m[v] = level
            for v in members:
                for t in self.nodes[v].outputs:
                    if any(p > last for p in self._readers.get(t, ())):
                        for keep in (v, self.tensors[self.tensors[t].root].producer):
                            if keep in members:
                                m[keep] = level - 1

    def mirror(self, runs, inner=()):
        """chen2016 mirror counts for checkpointing `runs` (lists of node
        ids) and, inside them, the runs of `inner` (one list per run)."""
        m = [0] * self.remat.forward_count
        self._mark(m, runs, 1)
        self._mark(m, [r for group in inner for r in group], 2)
        return m

    def evaluate(self, runs, inner=(), kind="flat"):
        inner = tuple(tuple(tuple(r) for r in g) for g in inner) if any(inner) else ()
        m = self.mirror(runs, inner)
        if any(not any(m[v] or self.hidden.get(v) for v in r) for r in runs):
            return None                 # a run that drops nothing: no candidate
        e = self.remat.evaluate(self._rerun_whole(self.remat.plan_mirror(m, "checkpoint"),
                                                  runs, inner))
        # torch.utils.checkpoint reruns a whole run, the nodes whose values
        # leave it (kept, m = 0) too, and a nested run once more.
        rerun = [v for r in runs for v in r] + [v for g in inner for r in g for v in r]
        return Candidate(tuple(tuple(r) for r in runs), inner, m,
                         e.peak + self._hidden(runs, inner),
                         sum(self.remat.node_flops(v) for v in rerun),
                         sum(self.seconds[v] for v in rerun), "nested" if inner else kind,
                         self.variant)

    def timeline_peak(self, cand):
        """cand's planned peak with what torch holds beside the plan placed
        at the steps where it holds it (memplan._timeline)."""
        return _timeline.timeline_peak(self, cand)

    def _rerun_whole(self, plan, runs, inner=()):
        """plan (chen2016 Alg. 2: each value recomputed just before the first
        gradient that needs it, a run's outputs kept) as torch's checkpoint
        runs it: before the first gradient of a run, the whole run again,
        its last nodes too, whose fresh outputs (and workspaces) the run's
        own gradients then read while the kept ones serve the nodes after
        it; and before the first gradient of a nested run, that run once
        more (the outer rerun passed through it without keeping its
        values: the reentrant checkpoint runs it without autograd)."""
        level = {}
        for k, r in enumerate(runs):
            for v in r:
                level[v] = [r]
            for g in (inner[k] if inner else ()):
                for v in g:
                    level[v].append(g)
        acts, started = [], set()
        for kind, v in plan.actions:
            if v not in level:
                acts.append((kind, v))
                continue
            if kind != "backward":
                continue
            for r in level[v]:
                if id(r) not in started:
                    started.add(id(r))
                    acts += [("recompute", u) for u in sorted(r, key=self.pos.get)]
            acts.append((kind, v))
        return lib.RematPlan(plan.policy, plan.n_forward, acts)

    def _hidden(self, runs, inner):
        """What autograd saves inside opaque nodes (profile_nodes): kept from
        the forward to the backward pass unless the node is in a run, and
        present while its run (its nested run, if it is in one) is
        recomputed.  A run is recomputed when the backward pass reaches it:
        the kept nodes after it have given theirs back by then, so beside
        it only those before it count (an LSTM kept last and the layers
        before it checkpointed: one layer's gates at a time, not two)."""
        inside = {v for r in runs for v in r}
        kept = {v: b for v, b in self.hidden.items() if v not in inside}
        most = sum(kept.values())
        for k, r in enumerate(runs):
            groups = inner[k] if inner else ()
            nested = {v for g in groups for v in g}
            own = sum(self.hidden.get(v, 0) for v in r if v not in nested)
            deepest = max((sum(self.hidden.get(v, 0) for v in g) for g in groups), default=0)
            start = self.pos[r[0]]
            before = sum(b for v, b in kept.items() if self.pos[v] < start)
            most = max(most, before + own + deepest)
        return most

    def candidates(self):
        seen, out = {}, [self.evaluate([])]

        def add_all(plans):
            """The candidates of plans [(runs, inner, kind)], each evaluated
            once (the first kind given wins), on up to EVAL_THREADS threads
            (the library's evaluation runs without the GIL and shares
            nothing but the read-only training graph: ResNet-50 at batch
            32, 202 plans, 1.33 s on one thread, 0.64-0.73 s on two); None
            for one that drops nothing.  out gets them in plans' order."""
            keys, pending = [], {}
            for runs, inner, kind in plans:
                runs = [self._opening(r) for r in runs]
                inner = [[r for r in map(self._opening, g) if r] for g in inner]
                runs = sorted((r for r in runs if r), key=lambda r: self.pos[r[0]])
                key = (tuple(tuple(r) for r in runs), tuple(tuple(map(tuple, g)) for g in inner))
                keys.append(key)
                if runs and key not in seen and key not in pending:
                    pending[key] = (runs, inner, kind)
            jobs = list(pending.items())
            with ThreadPoolExecutor(max(1, min(EVAL_THREADS, len(jobs)))) as pool:
                done = list(pool.map(lambda j: self.evaluate(*j[1]), jobs))
            for (key, _), cand in zip(jobs, done):
                seen[key] = cand
                if cand:
                    out.append(cand)
            return [seen.get(key) for key in keys]

        flat, spans = [], []        # spans: the multi-stage plans nested below
        n = len(self.stages)
        for length in RUN_LENGTHS:
            size = length or n
            if size > n:
                continue
            groups = [sum(self.stages[i:i + size], []) for i in range(0, n, size)]
            ranked = sorted(groups, key=self._value, reverse=True)
            for j in range(1, len(ranked) + 1):
                flat.append(ranked[:j])
                if size > 1 and j >= len(ranked) - 2:
                    spans.append(ranked[:j])
        # Finer: one leaf call each (a conv, one time chunk of an LSTM),
        # ranked the same way; prefixes on a ladder of lengths.
        calls = sorted(self._leaf_calls(), key=self._value, reverse=True)
        j = 1
        while calls:
            flat.append(calls[:j])
            if j >= len(calls):
                break
            j = min(len(calls), j * 3 // 2 + 1)
        if self.variant:
            # LSTMs in time chunks: the chain's calls in forward order, every
            # prefix -- all checkpointed but a tail kept whole.  The backward
            # pass starts at the tail and frees it first, so a kept tail
            # costs little memory (all but the last layer's last 4 of 8
            # chunks checkpointed: 83.3 MiB against 67.5 for all, at batch
            # 32, T=128) and saves its recomputation; the ranking above
            # orders equal chunks by their noisy seconds instead.
            ordered = self._leaf_calls()
            flat += [ordered[:j] for j in range(1, len(ordered) + 1)]
        flat += self._alg3_runs()
        # checkpoint_sequential's shapes first: a plan another family also
        # proposes is then known as one checkpoint_sequential would make
        plans = [(runs, (), "sequential")
                 for pieces in [self.stages] + [self._module_pieces(d) for d in MODULE_DEPTHS]
                 for runs in self._sequential_runs(pieces)]
        add_all(plans + [(runs, (), "flat") for runs in flat])
        # Nesting lowers a plan's peak and adds recomputation: worth trying
        # from the plans no other flat plan beats on both, and from the plans
        # of groups of several stages that checkpoint all groups or all but
        # one or two (evaluated already).  The front alone moves with the
        # seconds measured at capture: on ResNet-50 at batch 16 its least
        # nested plan was 416.5 MiB in two captures of three and 433.2 in
        # the third (453.4 in a bench run, where 1/3 is 438.3), while the
        # multi-stage plans are a few dozen more evaluations.
        nests = []
        for cand in _pareto(out) + [c for c in add_all([(r, (), "flat") for r in spans]) if c]:
            inner = [self._nest(r) for r in cand.runs]
            if any(inner):
                nests.append((cand.runs, inner, "flat"))
        add_all(nests)
        return out

    def _opening(self, run):
        """run without the in-place nodes that would open it; in a variant
        with its LSTMs in time chunks, also without the leading nodes it
        would keep (a layer's concatenated output, which the next layer's
        later chunks read): torch's checkpoint would recompute them for
        nothing, a second copy of the output alive while it does."""
        i = 0
        while i < len(run) and run[i] in self.inplace:
            i += 1
        if self.variant and i < len(run):
            m = self.mirror([run[i:]])
            while i < len(run) - 1 and not m[run[i]] and not self.hidden.get(run[i]):
                i += 1
        return list(run[i:])

    def _nest(self, run):
        """The runs nested inside run: each stage of it but the last (the
        backward pass needs the last one first: nothing to drop); in a run
        within one stage, each leaf call but the last."""
        parts, cur = [], []
        for v in run:
            if cur and self.stage_of.get(v) != self.stage_of.get(cur[-1]):
                parts.append(cur)
                cur = []
            cur.append(v)
        if len(parts) >= 1:
            return parts
        calls = [c for c in self._leaf_calls(run) if c]
        return calls[:-1] if len(calls) >= 3 else []

    def _leaf_calls(self, nodes=None):
        """nodes (default: every stage's) cut after each call of a leaf
        module (a node with a module path): the call and the nodes before
        it since the previous one."""
        if nodes is None:
            nodes = [v for st in self.stages for v in st]
        out, cur = [], []
        for v in nodes:
            cur.append(v)
            if v in self.leaves:
                out.append(cur)
                cur = []
        if cur:
            out.append(cur)
        return out

    def _alg3_runs(self):
        """chen2016 Alg. 3's segmentations over a ladder of B (each B keeps
        a stage output once the stages since the last kept one hold more
        than B bytes): every stretch of dropped nodes becomes a run, so the
        runs are as long as B allows -- uneven where the layers are."""
        own = {v for st in self.stages for v in st}
        total = sum(self.remat.node_bytes(v) for v in own) or 1
        b, out = max(1, total // 4096), []
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
            out.append(runs)
            b = b * 3 // 2 + 1
        return out

    def _module_pieces(self, depth):
        """Consecutive forward nodes of the same module at `depth` (the
        first `depth` parts of its path: "layer1.0" at depth 2)."""
        pieces, key = [], None
        own = self.own
        for v in own:
            k = ".".join(self.paths.get(v, "").split(".")[:depth])
            if not pieces or k != key:
                pieces.append([])
                key = k
            pieces[-1].append(v)
        return pieces

    @staticmethod
    def _sequential_runs(pieces):
        """What checkpoint_sequential(pieces, k) checkpoints, for every k:
        k segments of len // k pieces, all but the last (which also holds
        the remainder) checkpointed."""
        out, n = [], len(pieces)
        for k in range(2, min(n, SEQUENTIAL_K) + 1):
            size = n // k
            out.append([sum(pieces[i * size:(i + 1) * size], []) for i in range(k - 1)])
        return out

    def _value(self, run):
        dropped = sum(self.remat.node_bytes(v) + self.hidden.get(v, 0) for v in run)
        return dropped / (1e-9 + sum(self.seconds[v] for v in run))

    def names(self, cand):
        """(fx node names of each run, fx name -> run number, {run number:
        {fx name: nested run number}})."""
        runs = [[self.nodes[v].name for v in r] for r in cand.runs]
        nested = {}
        for k, groups in enumerate(cand.inner):
            if groups:
                nested[k] = {self.nodes[v].name: j for j, g in enumerate(groups) for v in g}
        return runs, {name: k for k, r in enumerate(runs) for name in r}, nested


def _pareto(cands):
    """The candidates no other one beats on both peak and extra seconds."""
    front, best = [], None
    for c in sorted(cands, key=lambda c: (c.extra_seconds, c.peak)):
        if best is None or c.peak < best:
            front.append(c)
            best = c.peak
    return front


def _variant(model, inputs, name, chunks, variant):
    """(gm, planner, candidates, one forward pass's seconds) of model as
    captured with `chunks` (rnn_chunks; {}: as written)."""
    t0 = time.perf_counter()
    gm, graph = capture(model, inputs, name, chunks)
    _inputs_persistent(graph)
    ws, credits = {}, {}
    hidden, seconds = profile_nodes(model, gm, inputs, workspace=ws, credits=credits)
    add_workspaces(graph, ws)
    paths = {n.name: n.meta.get("mp_path", "") for n in gm.graph.nodes}
    leaves = [n.name for n in gm.graph.nodes if n.op == "call_module"]
    t1 = time.perf_counter()
    planner = Planner(graph, name, hidden, seconds, paths, leaves, variant, credits)
    planner.gm = gm
    planner.chunks = max((len(c) for c in chunks.values()), default=0)
    cands = planner.candidates()
    planner.took = (t1 - t0, time.perf_counter() - t1)      # capture, planning
    return planner, cands, sum(planner.seconds.values())


def _inputs_persistent(graph):
    """The example inputs as persistent tensors, which no peak counts: the
    step fit measures starts with them already allocated (_measure), so a
    plan that counted them would be their size above every measured peak."""
    for t in graph["tensors"]:
        if t.get("kind") == "input":
            t.update(kind="parameter", trainable=False)


def add_workspaces(graph, ws):
    """Writes {fx node name: (forward, backward) bytes} (node_workspaces)
    into the graph's nodes as attrs.workspace and attrs.backward_workspace,
    which the C planner counts at the step where the node, its backward
    node or its recomputation runs (docs/graph-format.md)."""
    for nd in graph["nodes"]:
        f, b = ws.get(nd.get("name"), (0, 0))
        if f or b:
            attrs = nd["attrs"] = nd.get("attrs") or {}
            if f:
                attrs["workspace"] = int(f)
            if b:
                attrs["backward_workspace"] = int(b)


def fit(model, inputs, budget, loss_fn=None, name="model", trials=2, attempts=4, verify=True,
        exact=True):
    """(module, FitResult): model rebuilt with the runs of nodes that let
    one training step fit `budget` bytes, the fastest of the measured ones.
    The module shares model's parameters and buffers and computes the same
    loss and gradients (exact=False: may also split nn.LSTMs over time
    chunks, equal up to float rounding; the model as written is preferred
    where one of its plans fits).  trials: fitting candidates measured;
    attempts: candidates measured in all (4 training steps each, and 4 for
    the model; fits timed close to each other get _choice.ROUNDS more
    each, interleaved).  BudgetError when nothing measured fits."""
    variants = [_variant(model, inputs, name, {}, 0)]
    seen = [{}]
    for most in () if exact else CHUNKINGS:
        chunks = rnn_chunks(model, inputs, most=most)
        if chunks not in seen:
            seen.append(chunks)
            variants.append(_variant(model, inputs, name, chunks, len(variants)))
    # Rank by forward seconds with the recomputation: the chunked model's
    # own forward pass is slower, so it ranks after the model's plans that
    # recompute as much.
    order = sorted((c for _, cands, _ in variants for c in cands),
                   key=lambda c: (variants[c.variant][2] + c.extra_seconds, c.peak))
    planner = variants[0][0]
    t1 = time.perf_counter()
    # one forward pass of each variant, in FLOPs and seconds: a plan's
    # recomputation is reported against its own variant's
    fwd = [(v.remat.evaluate(v.remat.policy("none")).forward_flops, fwd_s)
           for v, _, fwd_s in variants]
    took = [sum(v[0].took[0] for v in variants),
            sum(v[0].took[1] for v in variants) + time.perf_counter() - t1]
    none = next(c for c in variants[0][1] if not c.runs)
    done = _Done(budget, fwd, order, took)
    done.plain_planned = none.peak
    done.planners = [v[0] for v in variants]
    tl = done.timeline = _timeline.Timeline(done.planners)
    if not verify:
        order = _refined(done, order, lambda c: budget)
        pick = next((c for c in order if tl.peak(c, budget) <= budget), None)
        if pick is None:
            raise _budget_error(budget, name, tl.least(order), 0, None)
        return _build(model, done.planners[pick.variant], pick), done.result(pick, None, None, 0, 0)
    t1 = time.perf_counter()
    plain, plain_s = measure_step(model, inputs, loss_fn)
    done.steps = 4
    if plain <= budget:
        return _build(model, planner, none), done.result(
            none, (plain, plain_s), (plain, plain_s), 0, time.perf_counter() - t1)
    # What the planner does not model (weight-gradient temporaries, the
    # loss, allocator slack, the kernels' scratch) is first taken from the
    # plain step's excess over its plan, then from each measured plan's.
    # The plain step is the model's as written, so its excess is taken
    # against the plan of that model for every variant: the same
    # parameters, loss and kernels.  Against a time-chunked variant's own
    # plan of no checkpoint it mixed two programs (the LSTM at T = 256:
    # 30 MiB, where the chunked plans' timelines are within 3 MiB of
    # what they measure), which kept fit from plans that fit.
    excess = [plain - none.peak] * len(variants)
    t0 = time.perf_counter()
    order = _refined(done, order, lambda c: budget - excess[c.variant])
    t1 += time.perf_counter() - t0          # planning, not measuring
    tried, unbuilt, fits, least = [], [], [], None
    rank = {id(c): i for i, c in enumerate(order)}

    def ok(c, slack=0):
        limit = budget - excess[c.variant] + slack
        return (c.runs and tl.peak(c, limit) <= limit and c not in tried
                and c not in unbuilt)

    def near(c):
        return not missed and ok(c, (NEAR_FIT if fits else NEAR_MISS) * budget)

    missed = []         # a near miss measured over the budget: no more of them
    while len(tried) < max(1, attempts) and len(fits) < max(1, trials):
        pick = _choice.next_trial(order, fits, ok, near)
        if pick is None:
            break
        stretched = not ok(pick)        # picked as a near miss
        try:
            module = _build(model, done.planners[pick.variant], pick)
            peak, secs = measure_step(module, inputs, loss_fn)
        except (IndexError, RuntimeError) as e:
            # torch.fx's split_module fails on a part whose values only its
            # own nodes read (ViT's shape tests split from what they check);
            # torch refuses a part it cannot rerun.  Nothing was measured:
            # the next one is tried, and this one costs no attempt.
            unbuilt.append(pick)
            done.trial(pick, error="%s: %s" % (type(e).__name__, e))
            continue
        tried.append(pick)
        done.steps += 4
        done.trial(pick, peak, secs)
        least = peak if least is None else min(least, peak)
        if peak <= budget:
            fits.append((secs, rank[id(pick)], peak, pick, module))
        else:
            excess[pick.variant] = max(excess[pick.variant], peak - tl.known(pick))
            missed += [pick] if stretched else []
    if not fits:
        raise _budget_error(budget, name, tl.least(order), min(excess), least)
    # The fits whose first timings are close are timed again side by side
    # (memplan._choice): the fastest wins unless indistinguishable.
    final = _choice.finalists(fits)
    times = None
    if len(final) > 1:
        times = _choice.retime([f[4] for f in final], inputs, loss_fn)
        done.steps += sum(map(len, times))
    secs, _, peak, pick, module = _choice.choose(final, times)
    return module, done.result(pick, (peak, secs), (plain, plain_s), len(tried),
                               time.perf_counter() - t1)


def _refined(done, order, limit):
    """order with, for each variant, the descent (memplan._refine) from its
    best ranked candidate that the timeline fits in limit(candidate) bytes,
    ranked among them; its seconds count as planning."""
    t, tl = time.perf_counter(), done.timeline
    before = tl.seconds
    starts = {}
    for c in order:
        if c.runs and c.variant not in starts and tl.peak(c, limit(c)) <= limit(c):
            starts[c.variant] = c
    new = []
    for c in starts.values():
        found, _ = _refine.descend(done.planners[c.variant], c,
                                   lambda d: tl.peak(d, limit(d)) <= limit(d))
        if found is not c:
            new.append(found)
    out = sorted(order + new, key=lambda c: (done.fwd[c.variant][1] + c.extra_seconds, c.peak))
    done.cands = out
    done.took[1] += time.perf_counter() - t - (tl.seconds - before)
    return out


class _Done:
    """What fit has done so far, for its FitResult."""

    def __init__(self, budget, fwd, cands, took):
        self.budget, self.fwd, self.cands, self.took = budget, fwd, cands, took
        self.steps = 0
        self.trials = []
        self.plain_planned = None
        self.planners = []
        self.timeline = None

    def trial(self, cand, peak=None, secs=None, error=None):
        """Records a module built from cand: measured (peak, secs), or not
        built or run (error)."""
        self.trials.append(Trial(cand.kind, len(cand.runs), _nested(cand),
                                 self.planners[cand.variant].chunks, self.timeline.known(cand),
                                 peak, secs, peak is not None and peak <= self.budget, error))

    def result(self, cand, measured, plain, attempts, measuring):
        peak, secs = measured or (None, None)
        plain_peak, plain_s = plain or (None, None)
        fwd, fwd_s = self.fwd[cand.variant]
        # the timelines computed while measuring count as planning
        tl = self.timeline.seconds if self.timeline else 0.0
        planned = self.timeline.known(cand) if self.timeline else cand.peak
        return FitResult(self.budget, peak, plain_peak, planned, cand.extra_flops, fwd,
                         len(cand.runs), self.planners[cand.variant].names(cand)[0],
                         len(self.cands), attempts, self.took[0], self.took[1] + tl,
                         max(0.0, measuring - tl), secs,
                         plain_s, cand.extra_seconds, fwd_s,
                         _nested(cand), self.steps,
                         self.planners[cand.variant].chunks,
                         cand.kind, tuple(self.trials), self.plain_planned)


def _nested(cand):
    """How many runs cand checkpoints again inside its runs."""
    return sum(len(g) for g in cand.inner)


def _build(model, planner, cand):
    runs, segment_of, nested = planner.names(cand)
    module = rebuild(model, planner.gm, segment_of, nested)
    module.memplan_runs = runs
    return module


def _budget_error(budget, name, least, excess, least_measured):
    """least: (candidate, its timeline peak) of the least planned one."""
    peak = least[1]
    what = (f"the smallest measured peak was {least_measured} bytes" if least_measured else
            f"the smallest planned peak is {peak} bytes ({excess:+d} bytes measured "
            f"beside the plan)")
    return BudgetError(f"budget {budget} bytes cannot be met by checkpointing {name}: {what}",
                       least_measured or peak + excess)
