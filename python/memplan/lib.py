"""memplan.lib -- libmemplan from Python (ctypes; no numpy, no compiler).

Problems and plans::

    >>> from memplan import lib
    >>> p = lib.Problem([(0, 0, 1, 1024), (1, 1, 2, 2048), (2, 2, 3, 1024)])
    >>> p.bounds().offsets            # max live bytes: no plan does better
    3072
    >>> plan = p.plan("greedy-size")
    >>> plan.footprint, plan.offsets
    (3072, [2048, 0, 2048])
    >>> plan.check().footprint        # the checker proves it (raises if not)
    3072
    >>> print(plan.to_csv(), end="")
    id,offset,size
    0,2048,1024
    1,0,2048
    2,2048,1024

Graphs (memplan.graphs) and recomputation (memplan.recompute) are
re-exported here: ``lib.Graph.load(path)``, ``lib.Remat(graph)``.  A call
that fails in the library raises a MemplanError subclass whose message is
the library's own (file, line and field for bad input).  How the library
is found: docs/python.md.
"""

import ctypes
from collections import namedtuple

from . import _ffi
from ._ffi import (ConflictError, FileError, MemplanError, NotFoundError,  # noqa: F401
                   ParseError, dec, enc, fspath)

Bounds = namedtuple("Bounds", "naive offsets objects peak_count")
Bounds.__doc__ = ("Lower bounds of a problem: naive (every buffer its own region), offsets "
                  "(max live bytes), objects (shared objects), peak_count (max live buffers).")
Strategy = namedtuple("Strategy", "name kind source summary all_limit")
Record = namedtuple("Record", "id first last size align")
CheckReport = namedtuple("CheckReport", "footprint")
_KINDS = ("offsets", "objects", "meta")


def library_path():
    """Absolute path of the libmemplan shared library in use."""
    return _ffi.path()


def version():
    """The loaded library's version, e.g. "0.1.0"."""
    return dec(_ffi.dll().mp_version())


def strategies():
    """Every strategy as Strategy(name, kind, source, summary, all_limit), in
    the library's fixed order (the order "auto" breaks ties by)."""
    lib = _ffi.dll()
    out = []
    for i in range(lib.mp_strategy_count()):
        s = lib.mp_strategy_info(i).contents
        out.append(Strategy(dec(s.name), _KINDS[s.kind], dec(s.source), dec(s.summary),
                            s.all_limit))
    return out


class Problem:
    """Buffers {id, first, last, size, align} with inclusive logical times.

    Built from an iterable of tuples (id, first, last, size[, align]), of
    objects with those attributes, or read from a records CSV with
    Problem.read(path).  It is validated on construction (MemplanError
    naming the first bad buffer)."""

    def __init__(self, records):
        rows = [_as_record(r) for r in records]
        self._arr = (_ffi.Buffer * max(1, len(rows)))()
        for i, r in enumerate(rows):
            self._arr[i] = _ffi.Buffer(*r)
        self._n = len(rows)
        if self._n:
            _ffi.call("mp_problem_validate", self._arr, self._n)

    @classmethod
    def read(cls, path):
        """Reads a records CSV (docs/formats.md); ParseError names file:line:field."""
        ptr = ctypes.POINTER(_ffi.Buffer)()
        n = ctypes.c_size_t()
        _ffi.call("mp_records_read", fspath(path), ctypes.byref(ptr), ctypes.byref(n))
        try:
            return cls(Record(b.id, b.first, b.last, b.size, b.align) for b in ptr[:n.value])
        finally:
            _free(ptr)

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if not -self._n <= i < self._n:
            raise IndexError(i)
        b = self._arr[i % self._n]
        return Record(b.id, b.first, b.last, b.size, b.align)

    def __iter__(self):
        return (self[i] for i in range(self._n))

    def __repr__(self):
        return f"<memplan.Problem of {self._n} buffers>"

    def write(self, path):
        """Writes the records CSV (temporary file + rename)."""
        _ffi.call("mp_records_write", fspath(path), self._arr, self._n)

    def bounds(self):
        """The lower bounds (O(n log n))."""
        b = _ffi.CBounds()
        _ffi.call("mp_bounds_compute", self._arr, self._n, ctypes.byref(b))
        return Bounds(b.naive, b.offsets, b.objects, b.peak_count)

    def plan(self, strategy="auto"):
        """Plans with a strategy (see strategies()); "auto" keeps the best
        offsets plan and names the winner in plan.winner."""
        c = _ffi.CPlan()
        winner = None
        if strategy == "auto":
            rep = _ffi.CAutoReport()
            _ffi.call("mp_plan_auto", self._arr, self._n, ctypes.byref(c), ctypes.byref(rep))
            winner = dec(rep.winner)
        else:
            _ffi.call("mp_plan_compute", self._arr, self._n, enc(strategy), ctypes.byref(c))
        try:
            return Plan._from_c(self, c, strategy, winner)
        finally:
            _ffi.dll().mp_plan_free(ctypes.byref(c))

    def read_plan(self, path):
        """Reads a plan CSV written for these buffers."""
        c = _ffi.CPlan()
        _ffi.call("mp_plan_read_csv", fspath(path), self._arr, self._n, ctypes.byref(c))
        try:
            return Plan._from_c(self, c, "file", None)
        finally:
            _ffi.dll().mp_plan_free(ctypes.byref(c))


class Plan:
    """Where each buffer of a Problem lives.

    offsets[i] is buffer i's offset (problem order); footprint the arena
    size; for shared-object plans objects[i] is buffer i's object and
    object_sizes the objects' sizes (both None for offset plans)."""

    def __init__(self, problem, offsets, objects=None, object_sizes=None, strategy="user"):
        if len(offsets) != len(problem):
            raise ValueError(f"{len(offsets)} offsets for {len(problem)} buffers")
        self.problem = problem
        self.offsets = list(offsets)
        self.objects = list(objects) if objects is not None else None
        self.object_sizes = list(object_sizes) if object_sizes is not None else None
        self.strategy = strategy
        self.winner = None
        self.footprint = max((o + _aligned(r) for o, r in zip(self.offsets, problem)),
                             default=0)

    @classmethod
    def _from_c(cls, problem, c, strategy, winner):
        n = c.n
        objects = sizes = None
        if c.object:
            objects, sizes = c.object[:n], c.object_size[:c.n_objects]
        p = cls(problem, c.offset[:n] if n else [], objects, sizes,
                dec(c.strategy) if c.strategy else strategy)
        p.footprint = c.footprint
        p.winner = winner
        return p

    def __repr__(self):
        return f"<memplan.Plan {self.strategy}: {self.footprint} bytes>"

    def _c(self):
        """A CPlan pointing into arrays this call keeps alive (returned)."""
        n = len(self.offsets)
        keep = [(ctypes.c_uint64 * max(1, n))(*self.offsets), enc(self.strategy)]
        c = _ffi.CPlan(n=n, offset=keep[0], footprint=self.footprint, strategy=keep[1])
        if self.objects is not None:
            keep.append((ctypes.c_size_t * max(1, n))(*self.objects))
            keep.append((ctypes.c_uint64 * max(1, len(self.object_sizes)))(*self.object_sizes))
            c.object, c.object_size, c.n_objects = keep[2], keep[3], len(self.object_sizes)
        return c, keep

    def check(self):
        """Proves the plan valid for its problem; ConflictError names the
        two buffers that overlap.  Returns CheckReport(footprint)."""
        c, _keep = self._c()
        rep = _ffi.CCheckReport()
        pr = self.problem
        _ffi.call("mp_plan_check", pr._arr, pr._n, ctypes.byref(c), ctypes.byref(rep))
        return CheckReport(rep.footprint)

    def to_csv(self):
        """The plan CSV text, byte for byte what write_csv and `memplan plan
        -o` write."""
        rows = ["id,offset,size,object" if self.objects is not None else "id,offset,size"]
        for i, (off, r) in enumerate(zip(self.offsets, self.problem)):
            row = f"{r.id},{off},{_aligned(r)}"
            rows.append(row + f",{self.objects[i]}" if self.objects is not None else row)
        return "\n".join(rows) + "\n"

    def write_csv(self, path):
        c, _keep = self._c()
        pr = self.problem
        _ffi.call("mp_plan_write_csv", fspath(path), pr._arr, pr._n, ctypes.byref(c))

    def write_svg(self, path, title="", lower_bound=None, names=None):
        """Draws the plan (time across, address up); the line is lower_bound
        (default: the bound of the plan's kind, objects for a shared-object
        plan, else offsets; docs/svg.md).  names: optional, one per record,
        shown in the tooltips and written on the largest buffers."""
        if lower_bound is None:
            b = self.problem.bounds()
            lower_bound = b.objects if self.objects is not None else b.offsets
        c, _keep = self._c()
        pr = self.problem
        if names is None:
            _ffi.call("mp_plan_write_svg", fspath(path), pr._arr, pr._n, ctypes.byref(c),
                      lower_bound, enc(title))
            return
        names = list(names)
        if len(names) != pr._n:
            raise ValueError(f"write_svg: {len(names)} names for {pr._n} records")
        arr = (ctypes.c_char_p * max(1, pr._n))(*[enc(n) if n else None for n in names])
        o = _ffi.CSvgOpts(enc(title), lower_bound, None, arr)
        _ffi.call("mp_plan_write_svg_opts", fspath(path), pr._arr, pr._n, ctypes.byref(c),
                  ctypes.byref(o))


def _aligned(r):
    a = r.align or 1
    return (r.size + a - 1) // a * a


def _as_record(r):
    if isinstance(r, (tuple, list)):
        if len(r) not in (4, 5):
            raise ValueError(f"a record is (id, first, last, size[, align]), got {r!r}")
        return tuple(int(x) for x in r) + ((0,) if len(r) == 4 else ())
    return (int(r.id), int(r.first), int(r.last), int(r.size), int(getattr(r, "align", 0) or 0))


_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def _free(ptr):
    """free() for arrays the library malloc'ed and handed over."""
    _libc.free(ctypes.cast(ptr, ctypes.c_void_p))


from .graphs import Graph, GraphPlan  # noqa: E402,F401  (re-exported)
from .recompute import BudgetError, Remat, RematPlan, policies  # noqa: E402,F401
