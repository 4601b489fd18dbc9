"""The ctypes layer under memplan.lib: finding libmemplan, its structs and
prototypes, and turning a failing status into a Python exception.

Nothing here is public API; memplan.lib, memplan.graphs and
memplan.recompute wrap it in Python objects.  The structs mirror
include/memplan.h and include/memplan_remat.h field for field: a change
there must be made here too (tests/python/test_lib.py compares the binding
with the CLI on the whole corpus, so a mismatch does not go unnoticed).
"""

import ctypes
import ctypes.util
import os

from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_size_t,
                    c_uint32, c_uint64, c_void_p)

u64 = c_uint64
size_t = c_size_t
NONE = ctypes.c_size_t(-1).value       # MP_GRAPH_NONE


class MemplanError(Exception):
    """A libmemplan call failed; str() is the library's message.

    ``status`` is the C status name (e.g. "MP_EPARSE")."""

    def __init__(self, message, status="MP_EINVAL"):
        super().__init__(message)
        self.status = status


class ParseError(MemplanError):
    """Malformed input: the message names the file, line and field."""


class ConflictError(MemplanError):
    """The plan checker found two live buffers overlapping."""


class NotFoundError(MemplanError, LookupError):
    """An unknown strategy, policy or op."""


class FileError(MemplanError, OSError):
    """A file could not be opened, read or written."""


_CLASSES = {2: MemoryError, 4: ParseError, 5: FileError, 6: ConflictError,
            7: NotFoundError}
_NAMES = {1: "MP_EINVAL", 2: "MP_ENOMEM", 3: "MP_EOVERFLOW", 4: "MP_EPARSE",
          5: "MP_EIO", 6: "MP_ECONFLICT", 7: "MP_ENOTFOUND"}


# ---- structs (include/memplan.h) ------------------------------------------

class Buffer(Structure):
    _fields_ = [("id", u64), ("first", u64), ("last", u64), ("size", u64), ("align", u64)]


class CPlan(Structure):
    _fields_ = [("n", size_t), ("offset", POINTER(u64)), ("footprint", u64),
                ("object", POINTER(size_t)), ("object_size", POINTER(u64)),
                ("n_objects", size_t), ("strategy", c_char_p)]


class CSvgOpts(Structure):
    _fields_ = [("title", c_char_p), ("lower_bound", u64), ("bound_name", c_char_p),
                ("names", POINTER(c_char_p))]


class CBounds(Structure):
    _fields_ = [("naive", u64), ("offsets", u64), ("objects", u64), ("peak_count", u64)]


class CStrategy(Structure):
    _fields_ = [("name", c_char_p), ("kind", c_int), ("source", c_char_p),
                ("summary", c_char_p), ("all_limit", size_t)]


class CAutoReport(Structure):
    _fields_ = [("winner", c_char_p), ("lower_bound", u64), ("optimal", c_int),
                ("tried", size_t)]


class CCheckReport(Structure):
    _fields_ = [("footprint", u64), ("first_bad", size_t), ("second_bad", size_t)]


class CTensor(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_char_p), ("dtype_size", u64),
                ("shape", POINTER(u64)), ("rank", size_t), ("numel", u64), ("bytes", u64),
                ("kind", c_int), ("alias_of", size_t), ("root", size_t), ("producer", size_t),
                ("trainable", c_int), ("grad_of", size_t)]


class CNode(Structure):
    _fields_ = [("name", c_char_p), ("op", c_char_p), ("inputs", POINTER(size_t)),
                ("n_inputs", size_t), ("outputs", POINTER(size_t)), ("n_outputs", size_t),
                ("step", size_t), ("inplace_capable", c_int), ("inplace", c_int),
                ("flops", u64), ("workspace", u64), ("backward_workspace", u64),
                ("scratch", size_t)]


class CGraphStats(Structure):
    _fields_ = [("tensors", size_t), ("nodes", size_t), ("steps", size_t),
                ("aliases", size_t), ("owned_bytes", u64), ("persistent_bytes", u64)]


class CBackwardOpts(Structure):
    _fields_ = [("add_loss", c_int), ("accumulate", c_int)]


class CBackwardStats(Structure):
    _fields_ = [("forward_nodes", size_t), ("backward_nodes", size_t),
                ("aggregations", size_t), ("pruned", size_t), ("param_grads", size_t)]


class CShareOpts(Structure):
    _fields_ = [("inplace", c_int), ("share", c_int), ("parallel", c_int),
                ("include_persistent", c_int)]


class CGraphPlan(Structure):
    _fields_ = [("n_tensors", size_t), ("storage", POINTER(size_t)),
                ("inplace_of", POINTER(size_t)), ("n_storages", size_t),
                ("storage_size", POINTER(u64)), ("offset", POINTER(u64)), ("footprint", u64),
                ("n_inplace", size_t), ("n_reused", size_t), ("placement", c_char_p)]


class COrderOpts(Structure):
    _fields_ = [("lookahead", size_t), ("max_passes", size_t), ("include_persistent", c_int)]


class COrderReport(Structure):
    _fields_ = [("given_peak", u64), ("searched_peak", u64), ("passes", size_t)]


class CExecOpts(Structure):
    _fields_ = [("seed", u64), ("plan", POINTER(CGraphPlan)), ("poison", c_int),
                ("init", c_void_p)]


class CExecResult(Structure):
    _fields_ = [("n_tensors", size_t), ("data", POINTER(c_void_p)), ("bytes", POINTER(u64)),
                ("arena_bytes", u64), ("seconds", c_double)]


# ---- structs (include/memplan_remat.h) -------------------------------------

class CRematOpts(Structure):
    _fields_ = [("add_loss", c_int), ("accumulate", c_int), ("include_persistent", c_int),
                ("inplace", c_int), ("share", c_int), ("strategy", c_char_p)]


class CRematAction(Structure):
    _fields_ = [("kind", c_int), ("node", size_t)]


class CRematPlan(Structure):
    _fields_ = [("policy", c_char * 64), ("n_forward", size_t), ("mirror", POINTER(c_uint32)),
                ("n_actions", size_t), ("action", POINTER(CRematAction))]


class CRematEval(Structure):
    _fields_ = [("peak", u64), ("lower_bound", u64), ("forward_flops", u64),
                ("extra_flops", u64), ("recomputed", size_t), ("kept", size_t),
                ("nodes", size_t)]


class CRematFit(Structure):
    _fields_ = [("feasible", c_int), ("min_peak", u64), ("candidates", size_t),
                ("eval", CRematEval)]


class CChain(Structure):
    _fields_ = [("n", size_t), ("fwd_flops", POINTER(u64)), ("bwd_flops", POINTER(u64)),
                ("out_bytes", POINTER(u64)), ("all_bytes", POINTER(u64)),
                ("first_node", POINTER(size_t)), ("grad_flops", POINTER(u64))]


PROGRESS = ctypes.CFUNCTYPE(None, c_void_p, size_t, size_t)

# ---- prototypes -------------------------------------------------------------
# name: (restype, argtypes).  Status-returning functions have restype c_int
# and go through call(), which raises on failure.
P = POINTER
_PROTOS = {
    "mp_version": (c_char_p, []),
    "mp_last_error": (c_char_p, []),
    "mp_problem_validate": (c_int, [P(Buffer), size_t]),
    "mp_bounds_compute": (c_int, [P(Buffer), size_t, P(CBounds)]),
    "mp_strategy_count": (size_t, []),
    "mp_strategy_info": (P(CStrategy), [size_t]),
    "mp_plan_compute": (c_int, [P(Buffer), size_t, c_char_p, P(CPlan)]),
    "mp_plan_auto": (c_int, [P(Buffer), size_t, P(CPlan), P(CAutoReport)]),
    "mp_plan_free": (None, [P(CPlan)]),
    "mp_plan_check": (c_int, [P(Buffer), size_t, P(CPlan), P(CCheckReport)]),
    "mp_records_read": (c_int, [c_char_p, P(P(Buffer)), P(size_t)]),
    "mp_records_write": (c_int, [c_char_p, P(Buffer), size_t]),
    "mp_plan_write_csv": (c_int, [c_char_p, P(Buffer), size_t, P(CPlan)]),
    "mp_plan_read_csv": (c_int, [c_char_p, P(Buffer), size_t, P(CPlan)]),
    "mp_plan_write_svg": (c_int, [c_char_p, P(Buffer), size_t, P(CPlan), u64, c_char_p]),
    "mp_plan_write_svg_opts": (c_int, [c_char_p, P(Buffer), size_t, P(CPlan), P(CSvgOpts)]),
    "mp_graph_load": (c_int, [c_char_p, P(c_void_p)]),
    "mp_graph_parse": (c_int, [c_char_p, size_t, c_char_p, P(c_void_p)]),
    "mp_graph_free": (None, [c_void_p]),
    "mp_graph_save": (c_int, [c_void_p, c_char_p]),
    "mp_graph_tensor_count": (size_t, [c_void_p]),
    "mp_graph_node_count": (size_t, [c_void_p]),
    "mp_graph_model_name": (c_char_p, [c_void_p]),
    "mp_graph_tensor": (P(CTensor), [c_void_p, size_t]),
    "mp_graph_node": (P(CNode), [c_void_p, size_t]),
    "mp_graph_order": (P(size_t), [c_void_p, P(size_t)]),
    "mp_graph_outputs": (P(size_t), [c_void_p, P(size_t)]),
    "mp_graph_loss": (size_t, [c_void_p]),
    "mp_graph_stats": (c_int, [c_void_p, P(CGraphStats)]),
    "mp_graph_lifetimes": (None, [c_void_p, P(u64), P(u64)]),
    "mp_graph_records": (c_int, [c_void_p, c_int, P(P(Buffer)), P(size_t)]),
    "mp_graph_backward": (c_int, [c_void_p, P(CBackwardOpts), P(c_void_p), P(CBackwardStats)]),
    "mp_graph_share": (c_int, [c_void_p, P(CShareOpts), P(CGraphPlan)]),
    "mp_graph_plan_place": (c_int, [c_void_p, P(CGraphPlan), c_char_p]),
    "mp_graph_plan_check": (c_int, [c_void_p, P(CGraphPlan), c_int]),
    "mp_graph_plan_free": (None, [P(CGraphPlan)]),
    "mp_graph_peak": (c_int, [c_void_p, P(size_t), c_int, P(u64)]),
    "mp_graph_order_search": (c_int, [c_void_p, P(COrderOpts), P(size_t), P(COrderReport)]),
    "mp_graph_with_order": (c_int, [c_void_p, P(size_t), P(c_void_p)]),
    "mp_exec_supported": (c_int, [c_void_p]),
    "mp_exec_run": (c_int, [c_void_p, P(CExecOpts), P(CExecResult)]),
    "mp_exec_result_free": (None, [P(CExecResult)]),
    "mp_remat_opts_default": (None, [P(CRematOpts)]),
    "mp_remat_new": (c_int, [c_void_p, P(CRematOpts), P(c_void_p)]),
    "mp_remat_free": (None, [c_void_p]),
    "mp_remat_graph": (c_void_p, [c_void_p]),
    "mp_remat_forward_count": (size_t, [c_void_p]),
    "mp_remat_node_flops": (u64, [c_void_p, size_t]),
    "mp_remat_node_bytes": (u64, [c_void_p, size_t]),
    "mp_remat_cuts": (P(size_t), [c_void_p, P(size_t)]),
    "mp_remat_plan_free": (None, [P(CRematPlan)]),
    "mp_remat_plan_mirror": (c_int, [c_void_p, P(c_uint32), c_char_p, P(CRematPlan)]),
    "mp_remat_plan_validate": (c_int, [c_void_p, P(CRematPlan)]),
    "mp_remat_apply": (c_int, [c_void_p, P(CRematPlan), P(c_void_p)]),
    "mp_remat_evaluate": (c_int, [c_void_p, P(CRematPlan), P(CRematEval)]),
    "mp_remat_policy": (c_int, [c_void_p, c_char_p, P(CRematPlan)]),
    "mp_remat_policy_name": (c_char_p, [size_t]),
    "mp_remat_fit": (c_int, [c_void_p, c_char_p, u64, PROGRESS, c_void_p, P(CRematPlan),
                             P(CRematFit)]),
    "mp_remat_chain": (c_int, [c_void_p, P(CChain)]),
    "mp_remat_alg3": (c_int, [c_void_p, u64, P(c_uint32), P(u64), P(u64)]),
    "mp_chain_free": (None, [P(CChain)]),
}


def _candidates():
    """Where libmemplan may be, most explicit first (docs/python.md)."""
    env = os.environ.get("MEMPLAN_LIB")
    if env:
        yield env
        return
    try:
        from . import _install   # written by `cmake --install` only
        yield os.path.join(_install.LIBDIR, "libmemplan.so.0")
    except ImportError:
        pass
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for build in ("build", "build-rel", "build-test-release"):
        yield os.path.join(root, build, "libmemplan.so")
    found = ctypes.util.find_library("memplan")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            dll = ctypes.CDLL(path)
        except OSError as e:
            raise MemplanError(f"cannot load libmemplan from {path}: {e}", "MP_EIO") from None
        for name, (res, args) in _PROTOS.items():
            fn = getattr(dll, name)
            fn.restype, fn.argtypes = res, args
        return dll, os.path.realpath(path) if os.path.sep in path else path
    raise MemplanError("libmemplan not found (tried " + ", ".join(tried) +
                       "); build it (cmake --build build) or set MEMPLAN_LIB", "MP_EIO")


_dll = None
_path = None


def dll():
    """The loaded library (loaded on first use)."""
    global _dll, _path
    if _dll is None:
        _dll, _path = _load()
    return _dll


def path():
    dll()
    return _path


def call(name, *args):
    """Calls a status-returning function; raises the matching error."""
    status = getattr(dll(), name)(*args)
    if status != 0:
        raise error(status)


def error(status):
    msg = dll().mp_last_error().decode("utf-8", "replace")
    cls = _CLASSES.get(status, MemplanError)
    if cls is MemoryError:
        return MemoryError(msg)
    return cls(msg, _NAMES.get(status, "MP_E?"))


def enc(s):
    return s.encode("utf-8") if isinstance(s, str) else s


def dec(b):
    return b.decode("utf-8", "replace") if b is not None else None


def fspath(p):
    return os.fsencode(os.fspath(p))
