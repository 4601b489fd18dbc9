"""memplan.torch.report -- where a PyTorch model's activation memory goes.

    >>> r = report(model, torch.randn(32, 3, 224, 224), train=True, name="resnet50")
    >>> print(r.text())                  # totals, modules, live at the peak, load curve
    >>> r.write_html("resnet50.html")    # the same as one self-contained page
    >>> r.footprint, r.lower_bound, r.module_bytes["layer3"]

The model is captured with torch.fx (memplan._fx.capture: run once, in eval
mode, without gradients) as a module-level memplan-graph/1 graph; with
train=True the library adds the backward pass (a softmax cross-entropy loss
over the model's logits [N, K], then one gradient op per forward op).  Every
number comes from the library: records and bounds, in-place and sharing
storages placed by a planner and proved by the checker.  Module attribution
and the tables are computed here.  docs/python.md explains every part.
"""

import json
import time
from collections import namedtuple

from . import _fx, lib

ROOT = ""            # the model itself, in module paths
INPUT = "(input)"    # tensors no node produces (the batch, the training target)
LOSS = "(loss)"      # the loss train=True adds, its seed and its gradient
FUNCTIONAL = "(functional)"   # a node whose enclosing module is unknown

ModuleRow = namedtuple("ModuleRow", "path depth bytes forward_bytes backward_bytes own_bytes "
                                    "param_bytes tensors")
ModuleRow.__doc__ = ("Activation bytes attributed to a module and everything under it; "
                     "own_bytes: produced by the module's own code (or by it, for a leaf); "
                     "backward_bytes: gradients of activations (train=True); param_bytes: "
                     "its parameters and buffers.")
LiveTensor = namedtuple("LiveTensor", "id name node op module shape dtype bytes role")
LiveTensor.__doc__ = ("A tensor live at the peak step; role is input, activation, output or "
                      "gradient (a gradient of an activation, made by the backward pass).")
PlanRow = namedtuple("PlanRow", "label footprint placement seconds")

# prefixes mp_graph_backward gives the nodes it adds (src/graph/backward.c)
_BACKWARD_PREFIXES = ("bwd:", "acc:", "sum:", "copy:", "seed:", "grad:")


def report(model, inputs, train=False, name="model", strategy="auto"):
    """Captures model on inputs and returns its memory Report.

    train=True adds the backward pass of a softmax cross-entropy loss, so
    the model's single output must be logits [N, K] (ValueError otherwise).
    strategy is the planner that places the storages (lib.strategies())."""
    t0 = time.perf_counter()
    gm, d = _fx.capture(model, inputs, name)
    scopes = module_scopes(model, gm)
    scoped = scopes is not None
    if not scoped:      # module nodes still name their module; functions cannot
        scopes = {n.name: str(n.target) if n.op == "call_module" else FUNCTIONAL
                  for n in gm.graph.nodes}
    t1 = time.perf_counter()
    graph = _graph(d, name, train)
    problem = graph.records()
    bounds = problem.bounds()
    plans, best, inplace = _plans(graph, strategy)
    inplace_bound = plan_problem(graph, inplace)[0].bounds().offsets
    t2 = time.perf_counter()
    r = Report(name, train, strategy, graph, len(d["nodes"]), scopes)
    r.scoped = scoped
    r._set_plans(problem, bounds, inplace_bound, plans, best)
    r.capture_s, r.planning_s = t1 - t0, t2 - t1
    r.analysis_s = time.perf_counter() - t2
    return r


# -- capture ---------------------------------------------------------------

def module_scopes(model, gm):
    """{fx node name: path of the innermost module it runs in}: what
    _fx's tracer wrote in each node's meta while tracing (mp_path; "" is
    the model itself).  None for a node that has none (a GraphModule traced
    some other way).  (Before: a second trace, compared node for node with
    gm; under torch 2.11 the two differed and reports lost their module
    scopes.)"""
    scope = {}
    for n in gm.graph.nodes:
        if "mp_path" in n.meta:
            scope[n.name] = n.meta["mp_path"] or ROOT
        elif n.op in ("placeholder", "output", "get_attr"):
            scope[n.name] = ROOT
        else:
            return None
    return scope


def _graph(d, name, train):
    """The library's graph of the captured dict, with its backward pass for
    train=True."""
    g = lib.Graph.parse(json.dumps(d), name)
    if not train:
        return g
    outs = g.outputs
    t = g.tensors[outs[0]] if len(outs) == 1 else None
    if t is None or len(t.shape) != 2 or not t.dtype.startswith(("float", "bfloat")):
        got = ", ".join(f"{g.tensors[i].dtype}{list(g.tensors[i].shape)}" for i in outs)
        raise ValueError("report(train=True) adds a softmax cross-entropy loss, so the model "
                         "must return one float tensor of logits [N, K]; it returns "
                         + (got or "nothing"))
    return g.backward(add_loss=True, accumulate=True)


# -- planning --------------------------------------------------------------

def _plans(graph, strategy):
    """(rows, best GraphPlan, in-place-only GraphPlan): the in-place and
    sharing storages placed by strategy, the in-place storages alone placed
    by it (what `memplan graph` calls inplace+NAME), and the counter
    algorithm's own layout; each proved by the checker."""
    tries = [(f"in-place + sharing, placed by {strategy}", dict(share=True), strategy),
             (f"in-place, placed by {strategy}", dict(share=False), strategy),
             ("in-place + sharing (counter, end to end)", dict(share=True), None)]
    rows, made = [], []
    for label, opts, strat in tries:
        t = time.perf_counter()
        p = graph.share(inplace=True, **opts)
        if strat:
            p.place(strat)
        p.check()
        rows.append(PlanRow(label, p.footprint, p.placement, time.perf_counter() - t))
        made.append(p)
    best = min(range(len(made)), key=lambda i: made[i].footprint)
    return rows, (rows[best], made[best]), made[1]


def plan_problem(graph, gplan):
    """(lib.Problem, offsets): the graph plan as ordinary records over
    half-steps, as mp_graph_plan_records defines them -- step s is half-step
    2s, a write over an input read last at s is 2s + 1 -- one record per
    planned owning tensor (id = tensor id) at its storage's offset."""
    first, last = graph.lifetimes()
    storage = gplan.storage
    inplace_of = gplan.inplace_of
    offsets = gplan.offsets
    rows, offs = [], []
    for t in graph.tensors:
        if t.root != t.id or storage[t.id] is None:
            continue
        lo = 2 * first[t.id] + (inplace_of[t.id] is not None)
        rows.append((t.id, lo, max(2 * last[t.id], lo), t.bytes))
        offs.append(offsets[storage[t.id]])
    return lib.Problem(rows), offs


# -- attribution -----------------------------------------------------------

def _base_name(name):
    """The forward node or tensor a backward node or tensor is named after
    ("bwd:layer1_0_conv1" -> "layer1_0_conv1", "acc:fc.weight@2" -> "fc.weight")."""
    while name.startswith(_BACKWARD_PREFIXES):
        name = name.split(":", 1)[1]
    head, at, tail = name.rpartition("@")
    return head if at and tail.isdigit() else name


class _Attribution:
    """Which module each node and tensor of the graph belongs to."""

    def __init__(self, graph, n_fx, scopes, n_forward):
        self.graph = graph
        self.n_forward = n_forward
        fx_nodes = graph.nodes[:n_fx]
        self.node_module = [scopes.get(n.name, FUNCTIONAL) for n in fx_nodes]
        self.node_module += [LOSS] * (n_forward - n_fx)
        by_name = {n.name: m for n, m in zip(graph.nodes, self.node_module)}
        for t in graph.tensors:
            if t.producer is None or t.producer < n_forward:
                by_name.setdefault(t.name, self._forward_tensor_module(t))
        for n in graph.nodes[n_forward:]:
            self.node_module.append(by_name.get(_base_name(n.name), FUNCTIONAL))

    def _forward_tensor_module(self, t):
        if t.kind in ("parameter", "gradient"):
            return t.name.rpartition(".")[0]
        if t.producer is None:
            return INPUT
        return self.node_module[t.producer]

    def tensor_module(self, tid):
        p = self.graph.tensors[tid].producer
        return INPUT if p is None else self.node_module[p]

    def role(self, tid):
        t = self.graph.tensors[tid]
        if t.producer is not None and t.producer >= self.n_forward:
            return "gradient"
        return t.kind


def parent(path):
    return ROOT if "." not in path else path.rpartition(".")[0]


def depth(path):
    return 0 if path == ROOT else path.count(".") + 1


def _ancestry(path):
    """path and every module above it, up to the root."""
    out = [path]
    while path != ROOT:
        path = parent(path)
        out.append(path)
    return out


def module_rows(items):
    """ModuleRows in tree order (siblings by bytes, largest first) from
    (path, forward, backward, param, tensors) contributions."""
    own, total = {}, {}
    for path, *vals in items:
        own[path] = [a + b for a, b in zip(own.get(path, [0] * 4), vals)]
        for p in _ancestry(path):
            total[p] = [a + b for a, b in zip(total.get(p, [0] * 4), vals)]
    children = {}
    for p in total:
        if p != ROOT:
            children.setdefault(parent(p), []).append(p)
    rows = []

    def visit(p):
        f, b, prm, n = total[p]
        o = own.get(p, [0] * 4)
        rows.append(ModuleRow(p, depth(p), f + b, f, b, o[0] + o[1], prm, n))
        for c in sorted(children.get(p, []), key=lambda c: (-sum(total[c][:2]), -total[c][2], c)):
            visit(c)
    visit(ROOT)
    return rows


# -- the report ------------------------------------------------------------

class Report:
    """What report() found; every size is an int of bytes.

    Totals: parameter_bytes (weights and buffers), gradient_bytes (their
    gradients, train=True), input_bytes, naive_bytes (every activation its
    own memory), lower_bound (max live bytes: no plan of these tensors
    without in-place does better), inplace_bound (the same after in-place
    ops), footprint (the best plan's arena), plan_label, ratio (footprint /
    lower_bound).  Tables: plans (PlanRow), modules (ModuleRow, tree order),
    module_bytes {path: bytes}, live_at_peak (LiveTensor, largest first),
    curve (live bytes per step), peak_step, peak_bytes, peak_node,
    backward_step (the first backward step, or None).  Times: capture_s
    (tracing, running the model once), planning_s (the library), analysis_s.
    graph (lib.Graph) and plan (lib.GraphPlan) are the objects behind it."""

    def __init__(self, name, train, strategy, graph, n_fx, scopes):
        self.name, self.train, self.strategy, self.graph = name, train, strategy, graph
        n_forward = graph.backward_stats.forward_nodes if train else len(graph.nodes)
        self._attr = _Attribution(graph, n_fx, scopes, n_forward)
        self.scoped = True      # False: functions outside modules are "(functional)"
        steps = [n.step for n in graph.nodes[n_forward:]]
        self.backward_step = min(steps) if steps else None
        ts = graph.tensors
        self.parameter_bytes = sum(t.bytes for t in ts if t.kind == "parameter")
        self.gradient_bytes = sum(t.bytes for t in ts if t.kind == "gradient")
        self.input_bytes = sum(t.bytes for t in ts if t.kind == "input")
        self.capture_s = self.planning_s = self.analysis_s = 0.0

    def _set_plans(self, problem, bounds, inplace_bound, plans, best):
        self.naive_bytes, self.lower_bound = bounds.naive, bounds.offsets
        self.inplace_bound = inplace_bound
        self.plans = plans
        (row, self.plan) = best
        self.plan_label, self.footprint = row.label, row.footprint
        self.ratio = self.footprint / self.lower_bound if self.lower_bound else 1.0
        self.records = list(problem)
        self._set_curve()
        self._set_modules()

    def _set_curve(self):
        n = len(self.graph.order)
        delta = [0] * (n + 1)
        for r in self.records:
            delta[r.first] += r.size
            delta[r.last + 1] -= r.size
        live, self.curve = 0, []
        for s in range(n):
            live += delta[s]
            self.curve.append(live)
        self.peak_bytes = max(self.curve, default=0)
        self.peak_step = self.curve.index(self.peak_bytes) if self.curve else 0
        node = self.graph.nodes[self.graph.order[self.peak_step]] if n else None
        self.peak_node = node.name if node else ""
        self.peak_op = node.op if node else ""
        self.live_at_peak = self._live(self.peak_step)

    def _live(self, step):
        a, ts, nodes = self._attr, self.graph.tensors, self.graph.nodes
        out = []
        for r in self.records:
            if r.first <= step <= r.last:
                t = ts[r.id]
                p = nodes[t.producer] if t.producer is not None else None
                out.append(LiveTensor(t.id, t.name, p.name if p else "", p.op if p else "",
                                      a.tensor_module(t.id), t.shape, t.dtype, t.bytes,
                                      a.role(t.id)))
        out.sort(key=lambda x: (-x.bytes, x.id))
        return out

    def _set_modules(self):
        a = self._attr
        items = []
        for r in self.records:
            grad = a.role(r.id) == "gradient"
            items.append((a.tensor_module(r.id), 0 if grad else r.size, r.size if grad else 0,
                          0, 1))
        for t in self.graph.tensors:
            if t.kind == "parameter" and t.root == t.id:
                items.append((t.name.rpartition(".")[0], 0, 0, t.bytes, 0))
        self.modules = module_rows(items)
        self.module_bytes = {m.path: m.bytes for m in self.modules}

    def module_label(self, path):
        """A module path for people: the root is the report's name."""
        return self.name if path == ROOT else path

    def __repr__(self):
        return (f"<memplan Report {self.name!r}: footprint {self.footprint} bytes, lower bound "
                f"{self.lower_bound}>")

    def text(self, depth=3, top=15):
        """The report as a terminal table: modules to depth, the top
        tensors live at the peak (all with top=None)."""
        return render_text(self, depth, top)

    def __str__(self):
        return self.text()

    def html(self, depth=None):
        """One self-contained HTML page (no network): totals, plans, the load
        curve, modules (to depth; all by default), live at the peak and the
        best plan's picture."""
        from ._report_html import render
        return render(self, depth)

    def write_html(self, path, depth=None):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html(depth))


# -- text ------------------------------------------------------------------

_UNITS = ("KiB", "MiB", "GiB", "TiB")


def fmt_bytes(n):
    """n bytes for people: "512 B", "1.50 KiB", "12.25 MiB" (binary units)."""
    if abs(n) < 1024:
        return f"{n} B"
    v = float(n)
    for u in _UNITS:
        v /= 1024
        if abs(v) < 1024 or u == _UNITS[-1]:
            return f"{v:.2f} {u}"


def _table(head, rows, left=1):
    """Columns padded to their widest cell; the first `left` columns are
    left-aligned (names), the rest right-aligned (numbers)."""
    cells = [head] + [[str(c) for c in row] for row in rows]
    width = [max(len(r[i]) for r in cells) for i in range(len(head))]
    out = []
    for r in cells:
        out.append("  ".join(c.ljust(w) if i < left else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, width))).rstrip())
    return ["  " + line for line in out]


def _clip(s, n=48):
    """s shortened in the middle to at most n characters."""
    return s if len(s) <= n else s[:n // 2 - 1] + "..." + s[-(n - n // 2 - 2):]


def totals(r):
    """(label, value) lines of the totals, shared by the text and the page."""
    rows = [("parameters and buffers", r.parameter_bytes)]
    if r.train:
        rows.append(("parameter gradients", r.gradient_bytes))
    rows += [("inputs", r.input_bytes),
             ("activations, no reuse (naive)", r.naive_bytes),
             ("lower bound (max live bytes)", r.lower_bound),
             ("lower bound after in-place ops", r.inplace_bound),
             (f"best plan: {r.plan_label} ({r.plan.placement})", r.footprint)]
    return rows


def render_text(r, depth, top):
    mode = "training step: forward, loss, backward" if r.train else "inference"
    out = [f"memplan report: {r.name} ({mode}; {len(r.graph.nodes)} ops, "
           f"{len(r.curve)} steps)",
           f"  capture {r.capture_s:.2f} s (tracing, running the model once); planning "
           f"{r.planning_s:.3f} s; analysis {r.analysis_s:.3f} s", ""]
    out += ["Totals"] + _table(["", ""], [(k, fmt_bytes(v)) for k, v in totals(r)])[1:]
    out += [f"  best plan / lower bound = {r.ratio:.3f}; / in-place bound = "
            f"{r.footprint / max(1, r.inplace_bound):.3f}", "", "Plans"]
    out += _table(["plan", "placement", "footprint", "/ bound", "ms"],
                  [(p.label, p.placement, fmt_bytes(p.footprint),
                    f"{p.footprint / max(1, r.lower_bound):.3f}", f"{p.seconds * 1e3:.1f}")
                   for p in r.plans], left=2)
    out += ["", f"Activation memory by module (depth <= {depth}; % of the naive total)"]
    out += _module_lines(r, depth)
    out += [""] + _live_lines(r, top) + [""] + curve_lines(r)
    return "\n".join(out) + "\n"


def _module_lines(r, depth):
    head = ["module", "activations", "%"] + (["forward", "backward"] if r.train else []) + \
        ["own", "params", "tensors"]
    rows = []
    for m in r.modules:
        if m.depth > depth:
            continue
        pct = f"{100 * m.bytes / r.naive_bytes:.1f}" if r.naive_bytes else "-"
        row = ["  " * m.depth + _clip(r.module_label(m.path)), fmt_bytes(m.bytes), pct]
        if r.train:
            row += [fmt_bytes(m.forward_bytes), fmt_bytes(m.backward_bytes)]
        rows.append(row + [fmt_bytes(m.own_bytes), fmt_bytes(m.param_bytes), m.tensors])
    return _table(head, rows)


def peak_caption(r):
    return (f"step {r.peak_step} of {len(r.curve)} (node {r.peak_node}, {r.peak_op}): "
            f"{fmt_bytes(r.peak_bytes)} in {len(r.live_at_peak)} tensors")


def _live_lines(r, top):
    shown = r.live_at_peak if top is None else r.live_at_peak[:top]
    out = ["Live at the peak: " + peak_caption(r)]
    out += _table(["tensor", "node", "op", "module", "shape", "dtype", "bytes", "role"],
                  [(_clip(t.name, 32), _clip(t.node, 32), _clip(t.op, 28),
                    _clip(r.module_label(t.module), 32), "x".join(map(str, t.shape)) or "scalar",
                    t.dtype, fmt_bytes(t.bytes), t.role) for t in shown], left=6)
    rest = r.live_at_peak[len(shown):]
    if rest:
        out.append(f"  ... and {len(rest)} more ({fmt_bytes(sum(t.bytes for t in rest))})")
    return out


def curve_lines(r, width=64, height=8):
    """The load curve as characters: the maximum of each column's steps,
    the peak marked with ^ (and the first backward step with b)."""
    n = len(r.curve)
    if not n or not r.peak_bytes:
        return ["Load curve: empty"]
    width = min(width, n)
    col = [max(r.curve[c * n // width:max((c + 1) * n // width, c * n // width + 1)])
           for c in range(width)]
    hs = [round(v / r.peak_bytes * height) for v in col]
    out = [f"Load curve (live bytes per step; {n} steps, {max(1, n // width)}+ per column)"]
    for i in range(height, 0, -1):
        label = fmt_bytes(r.peak_bytes) if i == height else ""
        out.append(f"  {label:>11} |" + "".join("#" if h >= i else " " for h in hs))
    marks = [" "] * width
    if r.backward_step is not None:
        marks[r.backward_step * width // n] = "b"
    marks[r.peak_step * width // n] = "^"
    out.append(f"  {'0 B':>11} +" + "-" * width)
    out.append(" " * 14 + "".join(marks).rstrip())
    legend = f"^ peak at step {r.peak_step}"
    if r.backward_step is not None:
        legend += f"; b backward pass from step {r.backward_step}"
    return out + [" " * 14 + legend]
