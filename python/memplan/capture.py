"""From a traced torch.fx GraphModule to a memplan-graph/1 graph.

``Recorder`` is a ShapeProp (torch.fx.passes.shape_prop) that, while it runs
the module on real example inputs, also records every tensor and node:
shapes and dtypes from the values, aliases from storage identity (an output
sharing storage with one of the node's inputs is a view of it), in-place
flags, FLOP estimates and the node's non-tensor arguments.  The same code
serves fx-level inference graphs (symbolic_trace) and aten-level training
graphs (make_fx).  Rules: docs/graph-format.md.
"""

import math
import operator

import torch
import torch.fx
from torch.fx.node import map_aggregate, map_arg
from torch.fx.passes.shape_prop import ShapeProp, _extract_tensor_metadata

from . import ops


class ExportError(Exception):
    """A model or input the exporter cannot handle; the message says why."""


class TRef:
    """Stands for a recorded tensor inside a mirrored value structure."""
    __slots__ = ("tid",)

    def __init__(self, tid):
        self.tid = tid


def _walk(value, leaf):
    """Call leaf(x) for every non-container x in value, in a fixed order."""
    if isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, leaf)
    elif isinstance(value, dict):
        for v in value.values():
            _walk(v, leaf)
    else:
        leaf(value)


def _tensors(value):
    out = []
    _walk(value, lambda x: out.append(x) if isinstance(x, torch.Tensor) else None)
    return out


def _trefs(struct):
    out = []
    _walk(struct, lambda x: out.append(x.tid) if isinstance(x, TRef) else None)
    return out


def _mirror(value, fn):
    """value with every tensor replaced by fn(tensor), containers kept."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return [_mirror(v, fn) for v in value] if isinstance(value, list) else \
            tuple(_mirror(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _mirror(v, fn) for k, v in value.items()}
    return value


def _storage_ptr(t):
    if t.numel() == 0 or t.layout != torch.strided:
        return None
    get = getattr(t, "untyped_storage", None) or getattr(t, "_storage", None) or t.storage
    ptr = get().data_ptr()
    return ptr or None


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def jsonable(x):
    """A JSON-safe form of a node argument (tensors as {"tensor": id})."""
    if isinstance(x, TRef):
        return {"tensor": x.tid}
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, torch.dtype):
        return _dtype_name(x)
    if isinstance(x, slice):
        return {"slice": [jsonable(x.start), jsonable(x.stop), jsonable(x.step)]}
    if x is Ellipsis:
        return "..."
    if isinstance(x, torch.Tensor):
        return {"constant": list(x.shape)}
    return str(x)


def module_config(module):
    """A leaf module's simple hyper-parameters (kernel_size, stride, ...)."""
    cfg = {}
    for k, v in vars(module).items():
        if k.startswith("_") or k == "training":
            continue
        if isinstance(v, (bool, int, float, str)) or (
                isinstance(v, tuple) and all(isinstance(e, (int, float)) for e in v)):
            cfg[k] = jsonable(v)
    return cfg


class Recorder(ShapeProp):
    """Runs a GraphModule like ShapeProp and records the memplan graph.

    placeholder_info: one dict per placeholder, in graph order, with "kind"
    (input or parameter), "name" and optionally "trainable".
    """

    def __init__(self, gm, placeholder_info=None):
        super().__init__(gm)
        self.placeholder_info = placeholder_info or []
        self.tensors = []
        self.nodes = []
        self.outputs = []
        self.struct = {}        # fx node -> its value with tensors as TRef
        self.persistent = {}    # id(parameter object) -> tensor id
        self.keep = []          # keeps parameter objects alive (stable ids)
        self.nplaceholder = 0
        self.placeholder_tids = []   # tensor ids of each placeholder, in order
        self.output_struct = None
        self.loss = None             # the loss tensor id (training graphs)

    # -- tensors --------------------------------------------------------
    def new_tensor(self, name, t, kind, alias_of=None, trainable=None):
        rec = {"id": len(self.tensors), "name": name, "shape": list(t.shape),
               "dtype": _dtype_name(t.dtype),
               "bytes": 0 if alias_of is not None else t.numel() * t.element_size(),
               "kind": kind, "alias_of": alias_of}
        if trainable is not None:
            rec["trainable"] = bool(trainable)
        self.tensors.append(rec)
        return rec["id"]

    def param_tensor(self, name, t):
        key = id(t)
        if key not in self.persistent:
            self.persistent[key] = self.new_tensor(
                name, t, "parameter", trainable=bool(t.requires_grad))
            self.keep.append(t)
        return self.persistent[key]

    def root(self, tid):
        base = self.tensors[tid]["alias_of"]
        return tid if base is None else base

    # -- running --------------------------------------------------------
    def run_node(self, n):
        if n.op == "placeholder":
            return self._placeholder(n)
        if n.op == "get_attr":
            value = torch.fx.Interpreter.run_node(self, n)
            self.struct[n] = _mirror(value, lambda t: TRef(self.param_tensor(str(n.target), t)))
            return value
        if n.op == "output":
            value = torch.fx.Interpreter.run_node(self, n)
            self.output_struct = map_arg(n.args[0], lambda a: self.struct[a])
            self.outputs = _trefs(self.output_struct)
            return value
        return self._call(n)

    def _placeholder(self, n):
        value = torch.fx.Interpreter.run_node(self, n)
        info = {}
        if self.nplaceholder < len(self.placeholder_info):
            info = self.placeholder_info[self.nplaceholder]
        self.nplaceholder += 1
        kind = info.get("kind", "input")
        name = info.get("name", n.name)

        def make(t):
            if kind == "parameter":
                tid = self.new_tensor(name, t, kind, trainable=info.get("trainable", True))
                self.persistent[id(t)] = tid
                self.keep.append(t)
                return TRef(tid)
            return TRef(self.new_tensor(name, t, kind))
        self.struct[n] = _mirror(value, make)
        self.placeholder_tids.append(_trefs(self.struct[n]))
        return value

    def _call(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        if n.target is operator.getitem and isinstance(args[0], (list, tuple, dict)):
            value = torch.fx.Interpreter.run_node(self, n)
            self.struct[n] = self.struct[n.args[0]][args[1]]
            return value

        module = self.fetch_attr(n.target) if n.op == "call_module" else None
        arg_struct = map_arg((n.args, n.kwargs), lambda a: self.struct[a])
        arg_tids = _trefs(arg_struct)
        obj = {}
        for inp in n.all_input_nodes:
            for t, tid in zip(_tensors(self.env[inp]), _trefs(self.struct[inp])):
                obj[tid] = t
        param_tids = []
        if module is not None:
            for pname, p in list(module.named_parameters()) + list(module.named_buffers()):
                tid = self.param_tensor("%s.%s" % (n.target, pname), p)
                param_tids.append(tid)
                obj[tid] = p
        ptrs = {}
        for tid, t in obj.items():
            p = _storage_ptr(t)
            if p is not None:
                ptrs.setdefault(p, []).append(tid)
        declared = ops.declared_inplace(n.op, n.target, kwargs, module)

        try:
            value = torch.fx.Interpreter.run_node(self, n)
        except Exception as e:  # a model failing on these inputs
            text = str(e).strip().splitlines()
            raise ExportError("node %s (%s) failed on this input: %s" % (
                n.name, ops.display_name(n.op, n.target, module),
                text[0] if text else type(e).__name__)) from None
        found = []
        meta = map_aggregate(value, lambda x: (found.append(1), _extract_tensor_metadata(x))[1]
                             if isinstance(x, torch.Tensor) else x)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(value)

        outs = _tensors(value)
        if not outs:                 # shape arithmetic, asserts: not a graph node
            self.struct[n] = value
            return value

        op = ops.display_name(n.op, n.target, module)
        out_tids, ran_inplace = [], False
        for i, t in enumerate(outs):
            name = n.name if len(outs) == 1 else "%s.%d" % (n.name, i)
            p = _storage_ptr(t)
            match = max(ptrs[p]) if p in ptrs else None
            if match is None:
                tid = self.new_tensor(name, t, "activation")
            else:
                base = self.root(match)
                ran_inplace = ran_inplace or declared
                if declared and self.tensors[base]["kind"] not in ("parameter", "gradient"):
                    tid = self.new_tensor(name, t, "activation")   # functional: fresh
                else:
                    tid = self.new_tensor(name, t, self.tensors[base]["kind"], alias_of=base)
            out_tids.append(tid)
        it = iter(out_tids)
        self.struct[n] = _mirror(value, lambda t: TRef(next(it)))

        self.nodes.append(self._node(n, op, module, arg_struct, arg_tids, param_tids,
                                     out_tids, ran_inplace))
        return value

    def _node(self, n, op, module, arg_struct, arg_tids, param_tids, out_tids, ran_inplace):
        base = ops.base_name(op)
        T = self.tensors
        in_shapes = [tuple(T[t]["shape"]) for t in arg_tids]
        in_dtypes = [T[t]["dtype"] for t in arg_tids]
        owned = [t for t in out_tids if T[t]["alias_of"] is None]
        out_shapes = [tuple(T[t]["shape"]) for t in owned]
        out_dtypes = [T[t]["dtype"] for t in owned]
        capable = (ran_inplace and len(owned) == len(out_tids)) or (
            len(owned) == len(out_tids) and bool(arg_tids)
            and T[self.root(arg_tids[0])]["kind"] not in ("parameter", "gradient")
            and ops.inplace_capable(base, in_shapes, in_dtypes, out_shapes, out_dtypes))
        cost = ops.flops(base, in_shapes, out_shapes, module, n.args) if owned else 0
        attrs = {"inplace_capable": bool(capable), "inplace": bool(ran_inplace),
                 "flops": int(cost),
                 "args": jsonable(arg_struct[0]), "kwargs": jsonable(arg_struct[1])}
        if module is not None:
            attrs["module"] = str(n.target)
            attrs["config"] = module_config(module)
        inputs = []
        for t in arg_tids + param_tids:
            if t not in inputs:
                inputs.append(t)
        return {"id": len(self.nodes), "name": n.name, "op": op,
                "inputs": inputs, "outputs": out_tids, "attrs": attrs}

    # -- result ---------------------------------------------------------
    def finish(self, grad_of=None):
        """Set output and gradient kinds; give aliases their base's kind.

        grad_of: {output tensor id: parameter tensor id} (training).
        """
        grad_of = grad_of or {}
        for tid in self.outputs:
            r = self.root(tid)
            if tid in grad_of:
                for x in {tid, r}:
                    self.tensors[x]["kind"] = "gradient"
                    self.tensors[x]["grad_of"] = grad_of[tid]
            elif self.tensors[r]["kind"] == "activation":
                self.tensors[r]["kind"] = "output"
        for t in self.tensors:
            if t["alias_of"] is not None:
                base = self.tensors[t["alias_of"]]
                t["kind"] = base["kind"]
                if "grad_of" in base:
                    t["grad_of"] = base["grad_of"]

    def to_graph(self, model_meta):
        from . import GRAPH_FORMAT
        return {"format": GRAPH_FORMAT, "model": model_meta,
                "tensors": self.tensors, "nodes": self.nodes,
                "order": [nd["id"] for nd in self.nodes], "outputs": self.outputs,
                "loss": self.loss}
