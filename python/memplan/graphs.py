"""memplan.graphs -- memplan-graph/1 graphs through libmemplan (ctypes).

    >>> from memplan import lib
    >>> g = lib.Graph.load(CORPUS + "/inference/resnet18.graph.json.gz")
    >>> len(g.nodes) > 50, g.name
    (True, 'resnet18')
    >>> train = g.backward()                   # + loss, gradients
    >>> plan = train.share().place("auto")     # in-place + sharing, then placed
    >>> plan.check()                           # proved, or ConflictError
    >>> plan.footprint >= train.peak()         # never below the lower bound
    True

A Graph owns its C graph and frees it when collected (or on close()).
Tensor and Node are plain named tuples copied out of the library.
"""

import ctypes
from collections import namedtuple

from . import _ffi
from ._ffi import NONE, dec, enc, fspath

Tensor = namedtuple("Tensor", "id name dtype shape numel bytes kind alias_of root producer "
                              "trainable grad_of")
Tensor.__doc__ = ("A graph tensor; kind is input, activation, parameter, gradient or output; "
                  "alias_of, root, producer and grad_of are ids or None.")
Node = namedtuple("Node", "id name op inputs outputs step inplace_capable inplace flops")
GraphStats = namedtuple("GraphStats", "tensors nodes steps aliases owned_bytes persistent_bytes")
BackwardStats = namedtuple("BackwardStats", "forward_nodes backward_nodes aggregations pruned "
                                            "param_grads")
OrderReport = namedtuple("OrderReport", "given_peak searched_peak passes")
_TENSOR_KINDS = ("input", "activation", "parameter", "gradient", "output")
_PARALLEL = {"any": 0, "ancestor": 1, "colour": 2}


def _id(v):
    return None if v == NONE else v


class Graph:
    """A computation graph with its execution order (docs/graph-format.md)."""

    def __init__(self, handle, owner=None):
        # owner: the object whose lifetime holds a borrowed handle (a Remat);
        # None means this Graph frees the handle itself.
        self._h = handle
        self._owner = owner
        self._tensors = self._nodes = self._order = None
        self.backward_stats = None

    @classmethod
    def load(cls, path):
        """Reads a memplan-graph/1 file (.json or .json.gz).  ParseError names
        the file and the JSON path of the bad value."""
        h = ctypes.c_void_p()
        _ffi.call("mp_graph_load", fspath(path), ctypes.byref(h))
        return cls(h.value)

    @classmethod
    def parse(cls, text, name="<string>"):
        """The same from JSON text; name stands for the file in errors."""
        data = enc(text)
        h = ctypes.c_void_p()
        _ffi.call("mp_graph_parse", data, len(data), enc(name), ctypes.byref(h))
        return cls(h.value)

    def close(self):
        if self._h and self._owner is None:
            _ffi.dll().mp_graph_free(self._h)
        self._h = None

    def __del__(self):
        if _ffi is not None and getattr(self, "_h", None):
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise ValueError("graph is closed")
        return self._h

    def __repr__(self):
        return f"<memplan.Graph {self.name!r}: {len(self.nodes)} nodes>"

    @property
    def name(self):
        return dec(_ffi.dll().mp_graph_model_name(self._handle()))

    @property
    def tensors(self):
        if self._tensors is None:
            lib, h = _ffi.dll(), self._handle()
            self._tensors = [_tensor(i, lib.mp_graph_tensor(h, i).contents)
                             for i in range(lib.mp_graph_tensor_count(h))]
        return self._tensors

    @property
    def nodes(self):
        if self._nodes is None:
            lib, h = _ffi.dll(), self._handle()
            self._nodes = [_node(i, lib.mp_graph_node(h, i).contents)
                           for i in range(lib.mp_graph_node_count(h))]
        return self._nodes

    @property
    def order(self):
        """Node ids in execution order (a tuple: a graph never changes, so
        it is read from the library once)."""
        if self._order is None:
            self._order = tuple(_ids(_ffi.dll().mp_graph_order, self._handle()))
        return self._order

    @property
    def outputs(self):
        return _ids(_ffi.dll().mp_graph_outputs, self._handle())

    @property
    def loss(self):
        return _id(_ffi.dll().mp_graph_loss(self._handle()))

    def stats(self):
        s = _ffi.CGraphStats()
        _ffi.call("mp_graph_stats", self._handle(), ctypes.byref(s))
        return GraphStats(s.tensors, s.nodes, s.steps, s.aliases, s.owned_bytes,
                          s.persistent_bytes)

    def lifetimes(self):
        """(first, last): inclusive steps per tensor (an alias gets its root's)."""
        n = len(self.tensors)
        first, last = (ctypes.c_uint64 * max(1, n))(), (ctypes.c_uint64 * max(1, n))()
        _ffi.dll().mp_graph_lifetimes(self._handle(), first, last)
        return first[:n], last[:n]

    def records(self, include_persistent=False):
        """The usage records as a memplan.lib.Problem (id = tensor id)."""
        from .lib import Problem, Record, _free
        ptr = ctypes.POINTER(_ffi.Buffer)()
        n = ctypes.c_size_t()
        _ffi.call("mp_graph_records", self._handle(), int(include_persistent), ctypes.byref(ptr),
                  ctypes.byref(n))
        try:
            return Problem(Record(b.id, b.first, b.last, b.size, b.align) for b in ptr[:n.value])
        finally:
            _free(ptr)

    def backward(self, add_loss=True, accumulate=False):
        """The training graph (mp_graph_backward); its backward_stats say
        what was added."""
        opts = _ffi.CBackwardOpts(int(add_loss), int(accumulate))
        h, st = ctypes.c_void_p(), _ffi.CBackwardStats()
        _ffi.call("mp_graph_backward", self._handle(), ctypes.byref(opts), ctypes.byref(h),
                  ctypes.byref(st))
        g = Graph(h.value)
        g.backward_stats = BackwardStats(st.forward_nodes, st.backward_nodes, st.aggregations,
                                         st.pruned, st.param_grads)
        return g

    def share(self, inplace=True, share=True, parallel="any", include_persistent=False):
        """Storages by the counter algorithm (in-place, free box), laid out
        end to end; GraphPlan.place() re-places them with a planner."""
        if parallel not in _PARALLEL:
            raise ValueError(f"parallel must be one of {', '.join(_PARALLEL)}")
        opts = _ffi.CShareOpts(int(inplace), int(share), _PARALLEL[parallel],
                               int(include_persistent))
        p = GraphPlan(self)
        _ffi.call("mp_graph_share", self._handle(), ctypes.byref(opts), ctypes.byref(p._c))
        return p

    def peak(self, order=None, include_persistent=False):
        """Peak live bytes of the graph run in order (default its own)."""
        arr = _order_array(self, order)
        out = ctypes.c_uint64()
        _ffi.call("mp_graph_peak", self._handle(), arr, int(include_persistent),
                  ctypes.byref(out))
        return out.value

    def order_search(self, lookahead=0, max_passes=0, include_persistent=False):
        """(order, OrderReport): a topological order with a peak never above
        the graph's own."""
        opts = _ffi.COrderOpts(lookahead, max_passes, int(include_persistent))
        n = len(self.nodes)
        order, rep = (ctypes.c_size_t * max(1, n))(), _ffi.COrderReport()
        _ffi.call("mp_graph_order_search", self._handle(), ctypes.byref(opts), order,
                  ctypes.byref(rep))
        return order[:n], OrderReport(rep.given_peak, rep.searched_peak, rep.passes)

    def with_order(self, order):
        h = ctypes.c_void_p()
        _ffi.call("mp_graph_with_order", self._handle(), _order_array(self, order),
                  ctypes.byref(h))
        return Graph(h.value)

    def save(self, path):
        _ffi.call("mp_graph_save", self._handle(), fspath(path))

    def run(self, plan=None, seed=1):
        """Runs the graph with the reference executor (float32 CPU kernels),
        its tensors in plan's arena (None: each in its own allocation).
        Returns {tensor id: bytes} of every graph output."""
        opts = _ffi.CExecOpts(seed=seed)
        if plan is not None:
            opts.plan = ctypes.pointer(plan._c)
        res = _ffi.CExecResult()
        _ffi.call("mp_exec_run", self._handle(), ctypes.byref(opts), ctypes.byref(res))
        try:
            return {i: ctypes.string_at(res.data[i], res.bytes[i])
                    for i in range(res.n_tensors) if res.data[i]}
        finally:
            _ffi.dll().mp_exec_result_free(ctypes.byref(res))


class GraphPlan:
    """Storages of a graph's tensors and their offsets in one arena."""

    def __init__(self, graph):
        self.graph = graph      # keeps the C graph alive while the plan is
        self._c = _ffi.CGraphPlan()

    def __del__(self):
        if _ffi is not None and getattr(self, "_c", None) is not None:
            _ffi.dll().mp_graph_plan_free(ctypes.byref(self._c))

    def __repr__(self):
        return f"<memplan.GraphPlan {self.placement}: {self.footprint} bytes>"

    footprint = property(lambda self: self._c.footprint)
    placement = property(lambda self: dec(self._c.placement))
    n_inplace = property(lambda self: self._c.n_inplace)
    n_reused = property(lambda self: self._c.n_reused)

    @property
    def storage(self):
        """Per tensor: its storage index, or None (not planned)."""
        return [_id(s) for s in self._c.storage[:self._c.n_tensors]]

    @property
    def inplace_of(self):
        """Per tensor: the input tensor it was written over, or None."""
        return [_id(s) for s in self._c.inplace_of[:self._c.n_tensors]]

    @property
    def storage_sizes(self):
        return self._c.storage_size[:self._c.n_storages]

    @property
    def offsets(self):
        """Per storage: its offset in the arena."""
        return self._c.offset[:self._c.n_storages]

    def place(self, strategy="auto"):
        """Re-places the storages with a planner (checked); returns self."""
        _ffi.call("mp_graph_plan_place", self.graph._handle(), ctypes.byref(self._c),
                  enc(strategy))
        return self

    def check(self, parallel="any"):
        """Proves the plan valid for its graph; ConflictError otherwise."""
        _ffi.call("mp_graph_plan_check", self.graph._handle(), ctypes.byref(self._c),
                  _PARALLEL[parallel])


def _ids(fn, h):
    n = ctypes.c_size_t()
    p = fn(h, ctypes.byref(n))
    return p[:n.value] if n.value else []


def _order_array(g, order):
    if order is None:
        return None
    order = list(order)
    if len(order) != len(g.nodes):
        raise ValueError(f"an order names every node once: {len(order)} for {len(g.nodes)}")
    return (ctypes.c_size_t * max(1, len(order)))(*order)


def _tensor(i, t):
    return Tensor(i, dec(t.name), dec(t.dtype), tuple(t.shape[:t.rank]) if t.rank else (),
                  t.numel, t.bytes, _TENSOR_KINDS[t.kind], _id(t.alias_of), _id(t.root),
                  _id(t.producer), bool(t.trainable), _id(t.grad_of))


def _node(i, n):
    return Node(i, dec(n.name), dec(n.op), n.inputs[:n.n_inputs] if n.n_inputs else [],
                n.outputs[:n.n_outputs] if n.n_outputs else [], n.step,
                bool(n.inplace_capable), bool(n.inplace), n.flops)
