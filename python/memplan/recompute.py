"""memplan.recompute -- recomputation plans through libmemplan (ctypes).

    >>> from memplan import lib
    >>> g = lib.Graph.load(CORPUS + "/inference/resnet18.graph.json.gz")
    >>> r = lib.Remat(g)                       # training graph + analysis
    >>> none, sqrt = r.evaluate(r.policy("none")), r.evaluate(r.policy("sqrt"))
    >>> sqrt.peak < none.peak, sqrt.extra_flops > 0
    (True, True)
    >>> plan, fit = r.fit(budget=none.peak // 2)    # the budget contract
    >>> fit.eval.peak <= none.peak // 2
    True
    >>> r.fit(budget=1)
    Traceback (most recent call last):
    ...
    memplan._ffi.BudgetError: ...

A plan is a schedule of actions ("recompute", node) / ("backward", node)
over the training graph's forward nodes (docs/remat.md); apply() turns it
into an ordinary Graph.
"""

import ctypes
from collections import namedtuple

from . import _ffi
from ._ffi import MemplanError, dec, enc
from .graphs import Graph

RematEval = namedtuple("RematEval", "peak lower_bound forward_flops extra_flops recomputed "
                                    "kept nodes")
RematEval.__doc__ = ("A plan measured: peak = arena bytes of the final checked plan, "
                     "extra_flops = the recompute nodes' FLOPs.")
FitReport = namedtuple("FitReport", "feasible min_peak candidates eval")
Chain = namedtuple("Chain", "fwd_flops bwd_flops out_bytes all_bytes first_node grad_flops")
_ACTIONS = {1: "recompute", 2: "backward"}
_ACTION_CODES = {v: k for k, v in _ACTIONS.items()}


class BudgetError(MemplanError):
    """No plan fits the budget; min_peak is the smallest achievable peak."""

    def __init__(self, message, min_peak):
        super().__init__(message, "MP_EINVAL")
        self.min_peak = min_peak


_ffi.BudgetError = BudgetError      # so tracebacks name it where it is raised


def policies():
    """The policy names mp_remat_policy accepts (some take =PARAM)."""
    lib, out, i = _ffi.dll(), [], 0
    while True:
        name = lib.mp_remat_policy_name(i)
        if not name:
            return out
        out.append(dec(name))
        i += 1


class RematPlan:
    """A recomputation plan: policy, per-forward-node mirror counts (None for
    schedules made directly) and the actions after the forward pass."""

    def __init__(self, policy, n_forward, actions, mirror=None):
        self.policy = policy
        self.n_forward = n_forward
        self.actions = [(k, int(v)) for k, v in actions]
        self.mirror = list(mirror) if mirror is not None else None

    def __repr__(self):
        n = sum(1 for k, _ in self.actions if k == "recompute")
        return f"<memplan.RematPlan {self.policy}: {n} recomputations>"

    @property
    def recomputed(self):
        """Forward node ids recomputed, in schedule order (repeats kept)."""
        return [v for k, v in self.actions if k == "recompute"]

    @classmethod
    def _from_c(cls, c):
        mirror = c.mirror[:c.n_forward] if c.mirror else None
        acts = [(_ACTIONS[a.kind], a.node) for a in c.action[:c.n_actions]] if c.n_actions else []
        return cls(dec(c.policy), c.n_forward, acts, mirror)

    def _c(self):
        n = len(self.actions)
        acts = (_ffi.CRematAction * max(1, n))(
            *[_ffi.CRematAction(_ACTION_CODES[k], v) for k, v in self.actions])
        keep = [acts]
        c = _ffi.CRematPlan(enc(self.policy)[:63], self.n_forward, None, n, acts)
        if self.mirror is not None:
            keep.append((ctypes.c_uint32 * max(1, len(self.mirror)))(*self.mirror))
            c.mirror = keep[-1]
        return c, keep


class Remat:
    """A forward graph's training graph and what the policies need.

    Options as mp_remat_opts_t: add_loss, accumulate (running gradient
    sums), include_persistent (count parameters and gradients in peaks),
    inplace, share, strategy (the planner placing storages)."""

    def __init__(self, graph, add_loss=True, accumulate=True, include_persistent=False,
                 inplace=True, share=True, strategy="auto"):
        o = _ffi.CRematOpts()
        _ffi.dll().mp_remat_opts_default(ctypes.byref(o))
        self._strategy = enc(strategy)      # o.strategy points into it
        o.add_loss, o.accumulate, o.include_persistent = int(add_loss), int(accumulate), \
            int(include_persistent)
        o.inplace, o.share, o.strategy = int(inplace), int(share), self._strategy
        h = ctypes.c_void_p()
        _ffi.call("mp_remat_new", graph._handle(), ctypes.byref(o), ctypes.byref(h))
        self._h = h.value

    def __del__(self):
        if _ffi is not None and getattr(self, "_h", None):
            _ffi.dll().mp_remat_free(self._h)
            self._h = None

    def _handle(self):
        return self._h

    @property
    def graph(self):
        """The training graph without recomputation (borrowed from self)."""
        return Graph(_ffi.dll().mp_remat_graph(self._h), owner=self)

    @property
    def forward_count(self):
        return _ffi.dll().mp_remat_forward_count(self._h)

    def node_flops(self, node):
        return _ffi.dll().mp_remat_node_flops(self._h, node)

    def node_bytes(self, node):
        return _ffi.dll().mp_remat_node_bytes(self._h, node)

    @property
    def cuts(self):
        """Forward steps after which nothing earlier is needed (stage ends)."""
        n = ctypes.c_size_t()
        p = _ffi.dll().mp_remat_cuts(self._h, ctypes.byref(n))
        return p[:n.value] if n.value else []

    def chain(self):
        """The chain of stages between cut points (per-stage lists)."""
        c = _ffi.CChain()
        _ffi.call("mp_remat_chain", self._h, ctypes.byref(c))
        try:
            n = c.n
            return Chain(c.fwd_flops[:n], c.bwd_flops[:n], c.out_bytes[:n], c.all_bytes[:n],
                         c.first_node[:n + 1],
                         c.grad_flops[:n] if c.grad_flops else c.fwd_flops[:n])
        finally:
            _ffi.dll().mp_chain_free(ctypes.byref(c))

    def alg3(self, budget):
        """chen2016 Alg. 3 for one B over the cut points: (mirror counts,
        x = bytes of the kept stage outputs, y = the largest stage)."""
        m = (ctypes.c_uint32 * max(1, self.forward_count))()
        x, y = ctypes.c_uint64(), ctypes.c_uint64()
        _ffi.call("mp_remat_alg3", self._h, int(budget), m, ctypes.byref(x), ctypes.byref(y))
        return m[:self.forward_count], x.value, y.value

    def policy(self, name):
        """The plan of a policy ("none", "sqrt", "segments=3,7", "budget",
        "logn=2", "revolve", "optimal=BYTES", ...; see policies())."""
        return self._take("mp_remat_policy", enc(name))

    def plan_mirror(self, mirror, policy="mirror"):
        """The plan of chen2016 mirror counts (one per forward node)."""
        m = list(mirror)
        if len(m) != self.forward_count:
            raise ValueError(f"{len(m)} mirror counts for {self.forward_count} forward nodes")
        arr = (ctypes.c_uint32 * max(1, len(m)))(*m)
        return self._take("mp_remat_plan_mirror", arr, enc(policy))

    def _take(self, fn, *args):
        c = _ffi.CRematPlan()
        _ffi.call(fn, self._h, *args, ctypes.byref(c))
        try:
            return RematPlan._from_c(c)
        finally:
            _ffi.dll().mp_remat_plan_free(ctypes.byref(c))

    def validate(self, plan):
        c, _keep = plan._c()
        _ffi.call("mp_remat_plan_validate", self._h, ctypes.byref(c))

    def evaluate(self, plan):
        """Transforms, shares, places and checks the plan: RematEval."""
        c, _keep = plan._c()
        e = _ffi.CRematEval()
        _ffi.call("mp_remat_evaluate", self._h, ctypes.byref(c), ctypes.byref(e))
        return _eval(e)

    def apply(self, plan):
        """The training graph of the plan (the mirror transform)."""
        c, _keep = plan._c()
        h = ctypes.c_void_p()
        _ffi.call("mp_remat_apply", self._h, ctypes.byref(c), ctypes.byref(h))
        return Graph(h.value)

    def fit(self, budget, policy="auto", progress=None):
        """(plan, FitReport): the least extra compute whose measured peak is
        <= budget bytes.  BudgetError (with min_peak) when nothing fits.
        progress(done, total) is called after each candidate."""
        cb = _ffi.PROGRESS(lambda _ctx, done, total: progress(done, total)) if progress \
            else _ffi.PROGRESS()
        c, f = _ffi.CRematPlan(), _ffi.CRematFit()
        st = _ffi.dll().mp_remat_fit(self._h, enc(policy), int(budget), cb, None,
                                     ctypes.byref(c), ctypes.byref(f))
        report = FitReport(bool(f.feasible), f.min_peak, f.candidates, _eval(f.eval))
        if st != 0:
            err = _ffi.error(st)
            if not f.feasible and f.min_peak:
                raise BudgetError(str(err), f.min_peak) from None
            raise err
        try:
            return RematPlan._from_c(c), report
        finally:
            _ffi.dll().mp_remat_plan_free(ctypes.byref(c))


def _eval(e):
    return RematEval(e.peak, e.lower_bound, e.forward_flops, e.extra_flops, e.recomputed,
                     e.kept, e.nodes)
