"""memplan.swap -- swapping plans through libmemplan (ctypes; src/swap/).

    >>> from memplan import lib, swap
    >>> g = lib.Graph.load(CORPUS + "/train/resnet18-b16.graph.json.gz")
    >>> it = swap.Iteration.from_graph(g, device="gtx1080ti")
    >>> plan, sim = it.select(link="pcie3")         # no-overhead mode, BO
    >>> sim.stall_ns, sim.peak < sim.original_peak
    (0, True)
    >>> plan, sim = it.select(mode="limit", limit=300 * 2**20, score="wdoa")
    >>> sim.limit_met, sim.peak <= 300 * 2**20
    (True, True)
    >>> it.select(mode="limit", limit=1)
    Traceback (most recent call last):
    ...
    memplan._ffi.MemplanError: limit 1 bytes is below load_min ...

An Iteration is the timed training step (ops with compute times, the
variables they access); a plan is a list of (variable, after, before)
items; a simulation says when everything ran and what it cost
(docs/swap.md).
"""

import ctypes
from collections import namedtuple

from . import _ffi
from ._ffi import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_size_t, c_uint64,
                   dec, enc)

Item = namedtuple("Item", "var after before")
Sim = namedtuple("Sim", "compute_ns total_ns stall_ns overhead original_peak peak limit_met "
                        "op_start_ns op_load")
_SCORES = {"doa": 0, "aoa": 1, "wdoa": 2, "swdoa": 3, "bo": 4}
_MODES = {"no-overhead": 0, "limit": 1}


class CVar(Structure):
    _fields_ = [("size", c_uint64), ("persistent", c_int), ("name", c_char_p)]


class CAccess(Structure):
    _fields_ = [("var", c_size_t), ("write", c_int)]


class COp(Structure):
    _fields_ = [("ns", c_uint64), ("first", c_size_t), ("n", c_size_t), ("name", c_char_p)]


class CIter(Structure):
    _fields_ = [("n_vars", c_size_t), ("n_ops", c_size_t), ("n_access", c_size_t),
                ("var", POINTER(CVar)), ("op", POINTER(COp)), ("access", POINTER(CAccess))]


class CDevice(Structure):
    _fields_ = [("name", c_char * 32), ("flops", c_double), ("bytes_per_s", c_double),
                ("efficiency", c_double), ("launch_ns", c_uint64)]


class CLink(Structure):
    _fields_ = [("name", c_char * 32), ("out_lat_ns", c_uint64), ("out_bytes_per_s", c_double),
                ("in_lat_ns", c_uint64), ("in_bytes_per_s", c_double)]


class CItem(Structure):
    _fields_ = [("var", c_size_t), ("after", c_size_t), ("before", c_size_t)]


class CPlan(Structure):
    _fields_ = [("n", c_size_t), ("item", POINTER(CItem)), ("score", c_char * 32)]


class CSim(Structure):
    _fields_ = [("compute_ns", c_uint64), ("total_ns", c_uint64), ("stall_ns", c_uint64),
                ("overhead", c_double), ("original_peak", c_uint64), ("peak", c_uint64),
                ("limit_met", c_int), ("n_ops", c_size_t), ("op_start_ns", POINTER(c_uint64)),
                ("op_load", POINTER(c_uint64)), ("out_start_ns", POINTER(c_uint64)),
                ("out_end_ns", POINTER(c_uint64)), ("in_start_ns", POINTER(c_uint64)),
                ("in_end_ns", POINTER(c_uint64))]


class COpts(Structure):
    _fields_ = [("mode", c_int), ("score", c_int), ("limit", c_uint64), ("min_size", c_uint64),
                ("bo_evals", c_size_t), ("seed", c_uint64)]


_PROTOS = {
    "mp_swap_device_preset": (c_int, [c_char_p, POINTER(CDevice)]),
    "mp_swap_link_preset": (c_int, [c_char_p, POINTER(CLink)]),
    "mp_swap_link_parse": (c_int, [c_char_p, POINTER(CLink)]),
    "mp_swap_iter_from_graph": (c_int, [ctypes.c_void_p, POINTER(CDevice), POINTER(CIter)]),
    "mp_swap_iter_free": (None, [POINTER(CIter)]),
    "mp_swap_select_opts_default": (None, [POINTER(COpts)]),
    "mp_swap_select": (c_int, [POINTER(CIter), POINTER(CLink), POINTER(COpts), POINTER(CPlan),
                               POINTER(CSim)]),
    "mp_swap_simulate": (c_int, [POINTER(CIter), POINTER(CLink), POINTER(CPlan), c_uint64,
                                 POINTER(CSim)]),
    "mp_swap_plan_free": (None, [POINTER(CPlan)]),
    "mp_swap_sim_free": (None, [POINTER(CSim)]),
    "mp_swap_load_min": (c_int, [POINTER(CIter), c_uint64, POINTER(c_uint64)]),
}
_ready = False


def _lib():
    global _ready
    dll = _ffi.dll()
    if not _ready:
        for name, (res, args) in _PROTOS.items():
            fn = getattr(dll, name)
            fn.restype, fn.argtypes = res, args
        _ready = True
    return dll


def _link(spec):
    l = CLink()
    if "," in spec:
        _ffi.call("mp_swap_link_parse", enc(spec), ctypes.byref(l))
    else:
        _ffi.call("mp_swap_link_preset", enc(spec), ctypes.byref(l))
    return l


class Iteration:
    """A timed training step (mp_swap_iter_t), owned and freed by Python."""

    def __init__(self):
        self._c = CIter()

    @classmethod
    def from_graph(cls, graph, device="gtx1080ti"):
        """The step of a training graph timed on a device preset
        (gtx1080ti, v100, h100, cpu); a forward graph gets its backward
        pass first (graph.backward(accumulate=True))."""
        if not any(t.kind == "gradient" for t in graph.tensors):
            graph = graph.backward(add_loss=True, accumulate=True)
        _lib()
        d = CDevice()
        _ffi.call("mp_swap_device_preset", enc(device), ctypes.byref(d))
        it = cls()
        _ffi.call("mp_swap_iter_from_graph", graph._handle(), ctypes.byref(d), ctypes.byref(it._c))
        return it

    def __del__(self):
        if _ffi is not None and getattr(self, "_c", None) is not None:
            _lib().mp_swap_iter_free(ctypes.byref(self._c))

    n_ops = property(lambda self: self._c.n_ops)
    n_vars = property(lambda self: self._c.n_vars)

    def var_name(self, v):
        return dec(self._c.var[v].name)

    def load_min(self, min_size=1 << 20):
        out = c_uint64()
        _ffi.call("mp_swap_load_min", ctypes.byref(self._c), min_size, ctypes.byref(out))
        return out.value

    def select(self, mode="no-overhead", score="bo", limit=0, link="pcie3", min_size=1 << 20,
               evals=40, seed=1):
        """(items, Sim): AutoSwap's selection (mp_swap_select)."""
        if mode not in _MODES or score not in _SCORES:
            raise ValueError(f"mode is one of {list(_MODES)}, score one of {list(_SCORES)}")
        lib = _lib()
        o = COpts()
        lib.mp_swap_select_opts_default(ctypes.byref(o))
        o.mode, o.score, o.limit, o.min_size = _MODES[mode], _SCORES[score], int(limit), min_size
        o.bo_evals, o.seed = evals, seed
        p, s = CPlan(), CSim()
        _ffi.call("mp_swap_select", ctypes.byref(self._c), ctypes.byref(_link(link)),
                  ctypes.byref(o), ctypes.byref(p), ctypes.byref(s))
        try:
            items = [Item(p.item[i].var, p.item[i].after, p.item[i].before) for i in range(p.n)]
            return items, self._sim(s)
        finally:
            lib.mp_swap_plan_free(ctypes.byref(p)), lib.mp_swap_sim_free(ctypes.byref(s))

    def simulate(self, items, link="pcie3", limit=0):
        """The Sim of a plan given as (var, after, before) items."""
        lib = _lib()
        arr = (CItem * max(1, len(items)))(*[CItem(*i) for i in items])
        p, s = CPlan(len(items), arr, b"user"), CSim()
        _ffi.call("mp_swap_simulate", ctypes.byref(self._c), ctypes.byref(_link(link)),
                  ctypes.byref(p), int(limit), ctypes.byref(s))
        try:
            return self._sim(s)
        finally:
            lib.mp_swap_sim_free(ctypes.byref(s))

    @staticmethod
    def _sim(s):
        n = s.n_ops
        return Sim(s.compute_ns, s.total_ns, s.stall_ns, s.overhead, s.original_peak, s.peak,
                   bool(s.limit_met), s.op_start_ns[:n] if n else [], s.op_load[:n] if n else [])
