"""Import an ONNX model as a memplan-graph/1 inference graph.

    graph = import_onnx("model.onnx")          # the dict export.py writes

The graph has the schema, tensor kinds, dtypes and shapes of the PyTorch
exporter's inference graphs (docs/graph-format.md); docs/onnx.md says how
each ONNX op is mapped and how the result compares with a torch export.
In short:

* Shapes come from ``onnx.shape_inference`` after *static folding*: tensors
  that do not depend on the graph inputs' values (initializers, Constant,
  Shape, and anything computed only from those -- the shape arithmetic that
  torch.onnx.export writes for ``x.view(x.size(0), -1)``) are evaluated with
  numpy where possible and handed back to shape inference as constants, so
  a Reshape or Slice whose arguments were computed gets a shape.  Static
  tensors are not activations: their nodes are dropped (fx-level graphs
  have no nodes for shape arithmetic either) and those a node reads become
  ``parameter`` tensors, as constants are in the torch exporter.
* Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout produce aliases
  of their input (views in PyTorch; they move no data).  Transpose, Slice,
  Split, Gather and every other op produce new tensors (ONNX runtimes copy).
* Ops memplan's graph layer knows get the torch exporter's spelling
  (``nn.Conv2d`` with its ``config``, ``operator.add``, ``torch.matmul``,
  ...), so the C side checks their shapes; others are kept as
  ``onnx::OpType``, which the C side accepts as an unknown op.

Only onnx and numpy are needed (no torch).  Errors are ``OnnxImportError``
with a message naming the file and, where there is one, the node.
"""

import math
import os

from . import GRAPH_FORMAT, __version__, ops
from .records import DTYPE_SIZE

# ONNX TensorProto element types memplan reads (docs/graph-format.md).
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64",
          9: "bool", 10: "float16", 11: "float64", 16: "bfloat16"}

# Largest static tensor the folder evaluates (shape arithmetic is tiny; a
# weight read through an Identity is not worth copying).
FOLD_MAX_ELEMENTS = 4096

# Inputs that, when static, are arguments rather than data (a Reshape's
# shape, a Clip's bounds): not listed as node inputs, their values go to
# attrs.args.  Every other input is data and is listed.
CONTROL_INPUTS = {
    "Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Expand": (1,), "Tile": (1,),
    "Slice": (1, 2, 3, 4), "Clip": (1, 2), "Pad": (1, 2, 3), "Resize": (1, 2, 3),
    "Upsample": (1,), "Split": (1,), "TopK": (1,), "Dropout": (1, 2), "Gather": (1,),
    "CumSum": (1,), "OneHot": (1, 2), "ReduceMean": (1,), "ReduceSum": (1,),
    "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,), "ReduceL2": (1,),
}

# Inputs that are never trainable parameters: batch-norm running statistics.
FROZEN_INPUTS = {"BatchNormalization": (3, 4)}

RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli"}


class OnnxImportError(Exception):
    """A file the importer cannot read or a model it cannot represent."""


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper   # noqa: F401
        import onnx.shape_inference  # noqa: F401
    except ImportError:
        raise OnnxImportError("the onnx package is missing for this interpreter "
                              "(run scripts/setup-torch)") from None
    return onnx


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _np_dtype(onnx, elem_type):
    """numpy dtype of an ONNX element type (onnx 1.12 and later)."""
    helper = getattr(onnx.helper, "tensor_dtype_to_np_dtype", None)
    return helper(elem_type) if helper else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]


# ---- loading and shape inference ----------------------------------------------

def load(path):
    """The ModelProto in ``path``; OnnxImportError if it is not one."""
    import warnings
    onnx = _onnx()
    try:
        with warnings.catch_warnings():    # protobuf warns about some damaged files
            warnings.simplefilter("ignore")
            model = onnx.load(path)
    except OSError as e:
        raise OnnxImportError("cannot read '%s': %s" % (path, e.strerror or e)) from None
    except Exception as e:        # protobuf's DecodeError and friends
        raise OnnxImportError("%s: not an ONNX model (%s)" % (path, _first_line(e))) from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxImportError("%s: not an ONNX model (no graph or no nodes)" % path)
    return model


def _infer(model, path):
    onnx = _onnx()
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:
        raise OnnxImportError("%s: ONNX shape inference failed: %s"
                              % (path, _first_line(e))) from None


def _default_domain(node):
    return node.domain in ("", "ai.onnx")


def _is_static(node, static):
    """A node whose outputs do not depend on the values of the graph inputs."""
    if node.op_type in RANDOM_OPS or not _default_domain(node):
        return False
    if node.op_type in ("Constant", "Shape", "Size"):
        return True                # shapes are fixed once inference is done
    ins = [i for i in node.input if i]
    return bool(ins) and all(i in static for i in ins)


def static_names(graph, weights=()):
    """Names of every static tensor of ``graph`` (see the module doc);
    ``weights``: initializers that _light made graph inputs."""
    static = {t.name for t in graph.initializer} | set(weights)
    for node in graph.node:
        if _is_static(node, static):
            static.update(o for o in node.output if o)
    return static


def fold(model, path):
    """(inferred graph, static values, weights): shape inference and static
    folding, repeated while shapes are missing and folding finds new values
    (Swin's window shapes need one pass per block).  The values also serve
    as the arguments of control inputs (a Clip's bounds)."""
    onnx = _onnx()
    light, weights = _light(onnx, model)
    values = {}
    inferred = _infer(light, path)
    for _ in range(len(model.graph.node)):     # each pass folds something new
        graph = inferred.graph
        found = evaluate(onnx, graph, weights, values)
        if not found or not _missing_shapes(graph, weights):
            break
        inferred = _infer(_with_constants(onnx, light, values), path)
    return inferred.graph, values, weights


def _light(onnx, model):
    """(copy, weights): model with the initializers too large to fold made
    typed graph inputs -- shape inference needs their shapes, not their
    values -- so that each inference pass serialises no weights."""
    light = onnx.ModelProto()
    light.CopyFrom(model)
    init = light.graph.initializer
    big = [t for t in init if math.prod(t.dims) > FOLD_MAX_ELEMENTS]
    small = [t for t in init if math.prod(t.dims) <= FOLD_MAX_ELEMENTS]
    declared = {v.name for v in light.graph.input}
    light.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                             for t in big if t.name not in declared)
    del init[:]
    init.extend(small)
    return light, {t.name for t in big}


def _missing_shapes(graph, weights):
    info = _tensor_info(graph)
    static = static_names(graph, weights)
    return any(o and o not in static and info.get(o, (None,))[0] is None
               for n in graph.node for o in n.output)


def _with_constants(onnx, model, values):
    """A copy of model whose folded tensors are initializers (their nodes
    removed), so that shape inference sees their values."""
    new = onnx.ModelProto()
    new.CopyFrom(model)
    kept = [n for n in new.graph.node if not all(o in values for o in n.output if o)]
    read = {i for n in kept for i in n.input} | {o.name for o in new.graph.output}
    del new.graph.node[:]
    new.graph.node.extend(kept)
    have = {t.name for t in new.graph.initializer}
    for name, value in values.items():
        if name in read and name not in have:
            new.graph.initializer.append(onnx.numpy_helper.from_array(value, name))
    return new


def _tensor_info(graph):
    """name -> (shape or None, dims problem or None, elem_type) from
    inputs, outputs, value_info and initializers."""
    info = {}
    for v in list(graph.input) + list(graph.value_info) + list(graph.output):
        info[v.name] = _value_shape(v)
    for t in graph.initializer:
        info[t.name] = (list(t.dims), None, t.data_type)
    return info


NO_SHAPE = (None, "has no shape after shape inference", None)


def _value_shape(v):
    if not v.type.HasField("tensor_type"):
        return None, "is not a tensor", None
    tt = v.type.tensor_type
    if not tt.HasField("shape"):
        return NO_SHAPE[:2] + (tt.elem_type,)
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            sym = d.dim_param or "?"
            return None, "has the symbolic dimension '%s' (export with fixed input shapes)" % sym, \
                tt.elem_type
        dims.append(d.dim_value)
    return dims, None, tt.elem_type


# ---- building the memplan graph --------------------------------------------------

class _Builder:
    """Tensors and nodes of the memplan graph, in the torch exporter's order
    (inputs first, then each node's new inputs and outputs as it runs)."""

    def __init__(self, path, graph, values, weights, same, opset):
        self.path = path
        self.opset = opset
        self.graph = graph
        self.values = values
        self.info = _tensor_info(graph)
        self.static = static_names(graph, weights)
        self.initializers = {t.name for t in graph.initializer} | weights
        self.same = same
        self.tensors, self.nodes, self.ids = [], [], {}

    def fail(self, msg, node=None):
        where = "" if node is None else "node '%s' (%s): " % (node_name(node, None), op_label(node))
        raise OnnxImportError("%s: %s%s" % (self.path, where, msg))

    def shape_dtype(self, name, node=None):
        shape, problem, elem = self.info.get(name, NO_SHAPE)
        if shape is None:
            self.fail("tensor '%s' %s" % (name, problem), node)
        if elem not in DTYPES:
            self.fail("tensor '%s' has ONNX element type %s, which memplan does not read"
                      % (name, elem), node)
        return shape, DTYPES[elem]

    def new_tensor(self, name, kind, node=None, alias_of=None, trainable=None):
        shape, dtype = self.shape_dtype(name, node)
        rec = {"id": len(self.tensors), "name": name, "shape": shape, "dtype": dtype,
               "bytes": 0 if alias_of is not None else math.prod(shape) * DTYPE_SIZE[dtype],
               "kind": kind, "alias_of": alias_of}
        if trainable is not None:
            rec["trainable"] = trainable
        self.tensors.append(rec)
        self.ids[name] = rec["id"]
        return rec["id"]

    def read(self, name, node, weight=True):
        """The tensor id of input ``name``; a static tensor becomes a
        parameter the first time it is read."""
        name = self.same.get(name, name)
        if name in self.ids:
            return self.ids[name]
        if name not in self.static:
            self.fail("reads '%s' before any node produces it (the nodes are not in "
                      "topological order, or the input is missing)" % name, node)
        trainable = weight and name in self.initializers and \
            DTYPES.get(self.info[name][2], "").startswith(("float", "bfloat"))
        return self.new_tensor(name, "parameter", node, trainable=bool(trainable))

    def root(self, tid):
        base = self.tensors[tid]["alias_of"]
        return tid if base is None else base


def _static_identities(graph, static):
    """Identity nodes on static tensors (torch.onnx.export writes them for
    weights shared by name): output name -> the name of the tensor they copy,
    so that one weight is one parameter."""
    same = {}
    for node in graph.node:
        if node.op_type == "Identity" and node.input and node.input[0] in static:
            src = node.input[0]
            same[node.output[0]] = same.get(src, src)
    return same


def op_label(node):
    """"Conv", or "com.example::Foo" outside the default domain."""
    if _default_domain(node):
        return node.op_type
    return "%s::%s" % (node.domain, node.op_type)


def node_name(node, index):
    """The node's name; unnamed: OpType_index, or its first output in errors."""
    if node.name:
        return node.name
    if index is not None:
        return "%s_%d" % (node.op_type, index)
    return "%s -> %s" % (node.op_type, node.output[0] if node.output else "?")


def import_onnx(path, name=None):
    """The memplan-graph/1 dict of the ONNX model in ``path``."""
    model = load(path)
    _reject_subgraphs(path, model.graph)
    # Identities are read from the file's graph: folding may have turned
    # them into initializers of their own.
    same = _static_identities(model.graph, static_names(model.graph))
    graph, values, weights = fold(model, path)
    b = _Builder(path, graph, values, weights, same, _opset(model))
    for v in graph.input:
        if v.name not in b.static:
            b.new_tensor(v.name, "input")
    for index, node in enumerate(graph.node):
        if node.output and all(o in b.static for o in node.output if o):
            continue
        _add_node(b, node, index, map_node(b, node))
    outputs = _finish(b, graph)
    return {"format": GRAPH_FORMAT, "model": _meta(path, name, model, b),
            "tensors": b.tensors, "nodes": b.nodes,
            "order": [n["id"] for n in b.nodes], "outputs": outputs, "loss": None}


def _reject_subgraphs(path, graph):
    for node in graph.node:
        for a in node.attribute:
            if a.g.node or a.graphs:
                raise OnnxImportError(
                    "%s: node '%s' (%s): ONNX control flow (ops with subgraphs) is not "
                    "supported" % (path, node_name(node, None), op_label(node)))


def _add_node(b, node, index, m):
    """Append the node m (a Mapped) describes."""
    inputs = []
    for i in m.data:
        tid = b.read(node.input[i], node, weight=m.weight(i))
        if tid not in inputs:
            inputs.append(tid)
    outs = []
    for k, out in enumerate(node.output):
        if not out:
            continue
        base = b.root(inputs[0]) if m.view and k == 0 else None
        outs.append(b.new_tensor(out, "activation", node, alias_of=base))
    attrs = _node_attrs(b, node, m, inputs, outs)
    b.nodes.append({"id": len(b.nodes), "name": node_name(node, index), "op": m.op,
                    "inputs": inputs, "outputs": outs, "attrs": attrs})


def _args(b, node, m):
    """attrs.args: tensors as {"tensor": id}, control inputs as values."""
    def ref(i):
        return {"tensor": b.read(node.input[i], node, weight=m.weight(i))}
    if m.make_args is not None:
        return m.make_args(ref)
    return [ref(i) if i in m.data else _json_value(b.values.get(n))
            for i, n in enumerate(node.input) if n]


def _json_value(v):
    """A folded value as JSON: small ones as lists, others as their shape."""
    if v is None:
        return {"constant": None}
    if v.size > 64:
        return {"constant": list(v.shape)}
    return _finite(v.tolist())


def _finite(x):
    """JSON has no NaN or infinity: those become strings, as in capture.py."""
    if isinstance(x, list):
        return [_finite(e) for e in x]
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


def _node_attrs(b, node, m, inputs, outs):
    T = b.tensors
    owned = [t for t in outs if T[t]["alias_of"] is None]
    in_shapes = [tuple(T[t]["shape"]) for t in inputs]
    out_shapes = [tuple(T[t]["shape"]) for t in owned]
    capable = len(owned) == len(outs) and bool(inputs) \
        and T[b.root(inputs[0])]["kind"] != "parameter" \
        and ops.inplace_capable(m.base, in_shapes, [T[t]["dtype"] for t in inputs],
                                out_shapes, [T[t]["dtype"] for t in owned])
    if not owned:
        cost = 0
    elif m.flops is not None:
        cost = m.flops
    else:
        cost = ops.flops(m.base, in_shapes, out_shapes)
    attrs = {"inplace_capable": bool(capable), "inplace": False, "flops": int(cost),
             "args": _args(b, node, m), "kwargs": m.kwargs}
    if m.config is not None:
        attrs["config"] = m.config
    attrs["onnx"] = {"op_type": node.op_type, "attributes": m.onnx_attrs}
    if not _default_domain(node):
        attrs["onnx"]["domain"] = node.domain
    return attrs


def _finish(b, graph):
    """Graph outputs: their roots become kind output; aliases take their
    root's kind (as the torch exporter's Recorder.finish)."""
    outputs = []
    for v in graph.output:
        name = b.same.get(v.name, v.name)
        if name not in b.ids and name not in b.static:
            b.fail("graph output '%s' is produced by no node" % v.name)
        tid = b.read(name, None, weight=False)
        outputs.append(tid)
        r = b.root(tid)
        if b.tensors[r]["kind"] == "activation":
            b.tensors[r]["kind"] = "output"
    for t in b.tensors:
        if t["alias_of"] is not None:
            t["kind"] = b.tensors[t["alias_of"]]["kind"]
    return outputs


def _opset(model):
    return next((o.version for o in model.opset_import if _default_domain(o)), 1)


def _meta(path, name, model, b):
    import onnx
    first = next((t for t in b.tensors if t["kind"] == "input"), None)
    shape = first["shape"] if first else []
    opset = _opset(model)
    producer = (model.producer_name + " " + model.producer_version).strip()
    return {"name": name or os.path.basename(path).rsplit(".", 1)[0],
            "batch": int(shape[0]) if shape else 1, "input_shape": shape, "train": False,
            "dtype": first["dtype"] if first else "float32", "level": "onnx",
            "exporter": "memplan.onnx_import " + __version__, "onnx": onnx.__version__,
            "opset": opset, "producer": producer, "source": os.path.basename(path)}


# ---- static folding: numpy for the shape arithmetic ------------------------------

def _attributes(node):
    """ONNX attributes as plain values (strings decoded, float32 rounded to
    7 digits, tensors as {"constant": dims})."""
    import onnx
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        out[a.name] = _plain(v)
    return out


def _plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return float("%.7g" % v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "dims"):                       # a TensorProto
        return {"constant": list(v.dims)}
    return v


def evaluate(onnx, graph, weights, values):
    """Evaluate the static nodes of ``graph`` that numpy can, small outputs
    only, into ``values`` (name -> array); returns how many are new."""
    static = static_names(graph, weights)
    info = _tensor_info(graph)
    inits = {t.name: t for t in graph.initializer}
    found = 0
    for node in graph.node:
        outs = [o for o in node.output if o]
        if not outs or all(o in values for o in outs) or not _is_static(node, static):
            continue
        try:
            result = _evaluate_node(onnx, node, info, values, inits)
        except Exception:          # an op or case the folder does not handle
            result = None
        if result is not None and result.size <= FOLD_MAX_ELEMENTS:
            values[outs[0]] = result
            found += 1
    return found


def _evaluate_node(onnx, node, info, values, inits):
    import numpy as np
    op = node.op_type
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    if op == "Constant":
        return _constant(onnx, a)
    if op in ("Shape", "Size"):
        shape = info.get(node.input[0], (None,))[0]
        if shape is None:
            return None
        if op == "Size":
            return np.array(int(np.prod(shape)), dtype=np.int64)
        return np.array(shape[a.get("start", 0):a.get("end", len(shape))], dtype=np.int64)
    x = [_value(onnx, n, values, inits) if n else None for n in node.input]
    if any(v is None for v, n in zip(x, node.input) if n):
        return None
    fn = _EVAL.get(op)
    return None if fn is None else np.asarray(fn(np, onnx, x, a))


def _value(onnx, name, values, inits):
    """A static value: folded already, or a small initializer; else None."""
    if name in values:
        return values[name]
    t = inits.get(name)
    if t is None or math.prod(t.dims) > FOLD_MAX_ELEMENTS:
        return None
    return onnx.numpy_helper.to_array(t)


def _constant(onnx, a):
    import numpy as np
    if "value" in a:
        return onnx.numpy_helper.to_array(a["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in a:
            return np.array(a[key], dtype=dtype)
    return None


def _axes(x, a, k=1):
    """Axes from attribute 'axes' (older opsets) or input k (newer)."""
    if len(x) > k and x[k] is not None:
        return [int(v) for v in x[k].reshape(-1)]
    return a.get("axes")


def _unsqueeze(np, x, a):
    out, axes = x[0], _axes(x, a)
    rank = out.ndim + len(axes)
    for ax in sorted(ax % rank for ax in axes):
        out = np.expand_dims(out, ax)
    return out


def _squeeze(np, x, a):
    axes = _axes(x, a)
    return np.squeeze(x[0]) if axes is None else np.squeeze(x[0], tuple(axes))


def _slice(np, x, a):
    data = x[0]
    if len(x) == 1:                      # opset < 10: attributes
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = list(x[1]), list(x[2])
        axes = list(x[3]) if len(x) > 3 and x[3] is not None else None
        steps = list(x[4]) if len(x) > 4 and x[4] is not None else None
    index = [slice(None)] * data.ndim
    for k, ax in enumerate(axes if axes is not None else range(len(starts))):
        index[int(ax)] = slice(int(starts[k]), int(ends[k]), int(steps[k]) if steps else 1)
    return data[tuple(index)]


def _reshape(np, x, a):
    shape = [int(d) for d in x[1]]
    if not a.get("allowzero", 0):        # 0 copies the input's dimension
        shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x[0].reshape(shape)


def _div(np, x, a):
    if np.issubdtype(x[0].dtype, np.integer):    # ONNX integer division truncates
        return np.trunc(np.true_divide(x[0], x[1])).astype(x[0].dtype)
    return x[0] / x[1]


def _constant_of_shape(np, onnx, x, a):
    fill = onnx.numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return np.full([int(d) for d in x[0]], fill.reshape(-1)[0], dtype=fill.dtype)


def _nary(fn):
    def run(np, onnx, x, a):
        out = x[0]
        for v in x[1:]:
            out = fn(np)(out, v)
        return out
    return run


_EVAL = {
    "Identity": lambda np, onnx, x, a: x[0],
    "Gather": lambda np, onnx, x, a: np.take(x[0], x[1], axis=a.get("axis", 0)),
    "Unsqueeze": lambda np, onnx, x, a: _unsqueeze(np, x, a),
    "Squeeze": lambda np, onnx, x, a: _squeeze(np, x, a),
    "Concat": lambda np, onnx, x, a: np.concatenate(x, axis=a["axis"]),
    "Slice": lambda np, onnx, x, a: _slice(np, x, a),
    "Reshape": lambda np, onnx, x, a: _reshape(np, x, a),
    "Cast": lambda np, onnx, x, a: x[0].astype(_np_dtype(onnx, a["to"])),
    "Transpose": lambda np, onnx, x, a: np.transpose(x[0], a.get("perm")),
    "Range": lambda np, onnx, x, a: np.arange(x[0], x[1], x[2]).astype(x[0].dtype),
    "ConstantOfShape": _constant_of_shape,
    "Expand": lambda np, onnx, x, a: x[0] * np.ones([int(d) for d in x[1]], x[0].dtype),
    "Add": lambda np, onnx, x, a: x[0] + x[1],
    "Sub": lambda np, onnx, x, a: x[0] - x[1],
    "Mul": lambda np, onnx, x, a: x[0] * x[1],
    "Div": lambda np, onnx, x, a: _div(np, x, a),
    "Mod": lambda np, onnx, x, a: (np.fmod if a.get("fmod") else np.mod)(x[0], x[1]),
    "Neg": lambda np, onnx, x, a: -x[0],
    "Abs": lambda np, onnx, x, a: np.abs(x[0]),
    "Sqrt": lambda np, onnx, x, a: np.sqrt(x[0]),
    "Floor": lambda np, onnx, x, a: np.floor(x[0]),
    "Ceil": lambda np, onnx, x, a: np.ceil(x[0]),
    "Equal": lambda np, onnx, x, a: np.equal(x[0], x[1]),
    "Less": lambda np, onnx, x, a: np.less(x[0], x[1]),
    "Greater": lambda np, onnx, x, a: np.greater(x[0], x[1]),
    "Not": lambda np, onnx, x, a: np.logical_not(x[0]),
    "Where": lambda np, onnx, x, a: np.where(x[0], x[1], x[2]),
    "Min": _nary(lambda np: np.minimum),
    "Max": _nary(lambda np: np.maximum),
}


# ---- op mapping -------------------------------------------------------------------

class Mapped:
    """How one ONNX node appears in the memplan graph: the op spelling, the
    base name for ops.py's rules, the listed (data) input positions, whether
    output 0 is a view of input 0, and its attributes."""

    def __init__(self, op, base, data, view=False, config=None, kwargs=None,
                 args=None, flops=None):
        self.op, self.base, self.data, self.view = op, base, data, view
        self.config = config
        self.kwargs = kwargs or {}
        self.make_args = args       # ref -> args list; None: every input in order
        self.flops = flops          # None: ops.flops(base, ...)
        self.frozen = ()            # inputs never trainable (FROZEN_INPUTS)
        self.onnx_attrs = {}

    def weight(self, i):
        return i not in self.frozen


def map_node(b, node):
    """The Mapped of a (non-static) node."""
    _check_outputs(b, node)
    a = _attributes(node)
    data = _data_inputs(b, node)
    fn = _MAPPERS.get(node.op_type) if _default_domain(node) else None
    m = fn(b, node, a, data) if fn else None
    if m is None:
        m = _generic(node, data)
    m.onnx_attrs = a
    m.frozen = FROZEN_INPUTS.get(node.op_type, ()) if _default_domain(node) else ()
    return m


def _check_outputs(b, node):
    """Shapes of every output first, so a missing one names this node."""
    for out in node.output:
        if out:
            b.shape_dtype(out, node)


def _data_inputs(b, node):
    control = CONTROL_INPUTS.get(node.op_type, ())
    return [i for i, n in enumerate(node.input)
            if n and not (i in control and n in b.static)]


def _generic(node, data):
    """An op the C side does not know: kept as onnx::OpType (or
    domain::OpType); never a view, rough FLOPs (output elements)."""
    domain = "onnx" if _default_domain(node) else node.domain
    base = BASE_NAMES.get(node.op_type, node.op_type.lower())
    return Mapped("%s::%s" % (domain, node.op_type), base, data)


# ops.py's base names (in-place lists, FLOPs) for ONNX ops spelt differently.
BASE_NAMES = {"LeakyRelu": "leaky_relu", "Clip": "hardtanh", "HardSigmoid": "hardsigmoid",
              "HardSwish": "hardswish"}

# One-to-one ops: the torch exporter's spelling and the base name.
SIMPLE = {
    "Relu": ("nn.ReLU", "relu"), "Sigmoid": ("nn.Sigmoid", "sigmoid"),
    "Tanh": ("nn.Tanh", "tanh"), "HardSwish": ("nn.Hardswish", "hardswish"),
    "Add": ("operator.add", "add"), "Sub": ("operator.sub", "sub"),
    "Mul": ("operator.mul", "mul"), "Div": ("operator.truediv", "truediv"),
    "Pow": ("operator.pow", "pow"), "MatMul": ("torch.matmul", "matmul"),
}


def _shape(b, node, i):
    return b.shape_dtype(node.input[i], node)[0]


def _out_shape(b, node):
    return b.shape_dtype(node.output[0], node)[0]


def _sym_pads(a, nd):
    """PyTorch's symmetric padding of a conv or pool, None when ONNX's
    padding has no PyTorch equivalent (asymmetric, SAME_*)."""
    auto = a.get("auto_pad", "NOTSET")
    if auto == "VALID":
        return [0] * nd
    if auto != "NOTSET":
        return None
    pads = a.get("pads", [0] * 2 * nd)
    return pads[:nd] if pads[:nd] == pads[nd:] else None


def _conv(b, node, a, data):
    w = _shape(b, node, 1)
    pads = _sym_pads(a, len(w) - 2)
    if len(w) != 4 or len(_shape(b, node, 0)) != 4 or pads is None:
        return None
    g = a.get("group", 1)
    return Mapped("nn.Conv2d", "conv2d", data, config={
        "in_channels": w[1] * g, "out_channels": w[0], "kernel_size": w[2:],
        "stride": a.get("strides", [1, 1]), "padding": pads,
        "dilation": a.get("dilations", [1, 1]), "groups": g, "padding_mode": "zeros"})


def _conv_transpose(b, node, a, data):
    # FLOPs of a transposed convolution: ops.flops reads aten::convolution's
    # `transposed` argument (position 6) to count input elements instead.
    shapes = [_shape(b, node, i) for i in data]
    cost = ops.flops("convolution", shapes, [_out_shape(b, node)], args=(0,) * 6 + (True,))
    return Mapped("onnx::ConvTranspose", "convtranspose", data, flops=cost)


def _batchnorm(b, node, a, data):
    x = _shape(b, node, 0)
    if len(x) != 4 or len(node.output) > 1:
        return None
    return Mapped("nn.BatchNorm2d", "batchnorm2d", data, config={
        "num_features": x[1], "eps": a.get("epsilon", 1e-5),
        "momentum": float("%.7g" % (1 - a.get("momentum", 0.9))),
        "affine": True, "track_running_stats": True})


def _gemm(b, node, a, data):
    """Gemm as nn.Linear when it is one (y = x W^T + b); else onnx::Gemm."""
    x, w = _shape(b, node, 0), _shape(b, node, 1)
    c = _shape(b, node, 2) if len(node.input) > 2 and node.input[2] else [w[0]]
    linear = (a.get("transA", 0) == 0 and a.get("transB", 0) == 1 and a.get("alpha", 1.0) == 1
              and a.get("beta", 1.0) == 1 and len(x) == 2 and c == [w[0]]
              and node.input[1] in b.static)
    if linear:
        return Mapped("nn.Linear", "linear", data,
                      config={"in_features": w[1], "out_features": w[0]})
    m, k = (x[1], x[0]) if a.get("transA", 0) else (x[0], x[1])
    n = w[0] if a.get("transB", 0) else w[1]
    return Mapped("onnx::Gemm", "gemm", data,
                  flops=ops.flops("addmm", [(n,), (m, k), (k, n)], [(m, n)]))


def _pool(op, base):
    def mapper(b, node, a, data):
        k = a.get("kernel_shape", [])
        pads = _sym_pads(a, len(k))
        if (len(k) != 2 or pads is None or len(node.output) > 1 or a.get("storage_order", 0)
                or any(p > kk // 2 for p, kk in zip(pads, k))):
            return None            # no PyTorch equivalent: kept as an ONNX op
        cfg = {"kernel_size": k, "stride": a.get("strides", [1, 1]), "padding": pads,
               "ceil_mode": bool(a.get("ceil_mode", 0))}
        if base == "maxpool2d":
            cfg["dilation"] = a.get("dilations", [1, 1])
        else:
            cfg["count_include_pad"] = bool(a.get("count_include_pad", 0))
        return Mapped(op, base, data, config=cfg)
    return mapper


def _global_avg(b, node, a, data):
    if len(_shape(b, node, 0)) != 4:
        return None
    return Mapped("nn.AdaptiveAvgPool2d", "adaptiveavgpool2d", data,
                  config={"output_size": [1, 1]})


def _flatten(b, node, a, data):
    rank = len(_shape(b, node, 0))
    axis = a.get("axis", 1) % rank if rank else 0
    if axis == 1 and rank >= 2:        # torch.flatten(x, 1): the same shape
        return Mapped("torch.flatten", "flatten", data, view=True,
                      args=lambda ref: [ref(0), 1])
    return _reshape_view(b, node, a, data)


def _reshape_view(b, node, a, data):
    """Reshape, Squeeze, Unsqueeze, odd Flattens: Tensor.reshape, a view."""
    out = _out_shape(b, node)
    return Mapped("Tensor.reshape", "reshape", data[:1], view=True,
                  args=lambda ref: [ref(0), out])


def _concat(b, node, a, data):
    return Mapped("torch.cat", "cat", data,
                  args=lambda ref: [[ref(i) for i in data], a["axis"]])


def _transpose(b, node, a, data):
    perm = a.get("perm") or list(range(len(_shape(b, node, 0))))[::-1]
    return Mapped("torch.permute", "permute", data, args=lambda ref: [ref(0), perm])


def _softmax(b, node, a, data):
    rank = len(_shape(b, node, 0))
    axis = a.get("axis", -1 if b.opset >= 13 else 1)
    # Before opset 13 Softmax flattens from `axis`: PyTorch's only on the last.
    if b.opset < 13 and axis % rank != rank - 1:
        return None
    return Mapped("nn.Softmax", "softmax", data, config={"dim": axis})


def _layernorm(b, node, a, data):
    x = _shape(b, node, 0)
    if len(node.output) > 1 or len(data) < 2:
        return None
    axis = a.get("axis", -1) % len(x)
    return Mapped("nn.LayerNorm", "layernorm", data, config={
        "normalized_shape": x[axis:], "eps": a.get("epsilon", 1e-5),
        "elementwise_affine": True})


def _clip(b, node, a, data):
    lo, hi = _clip_bounds(b, node, a)
    if lo == 0 and hi == 6 and data == [0]:
        return Mapped("nn.ReLU6", "relu6", data)
    return None


def _clip_bounds(b, node, a):
    if "min" in a or "max" in a:           # opset < 11: attributes
        return a.get("min"), a.get("max")
    bounds = []
    for i in (1, 2):
        v = b.values.get(node.input[i]) if len(node.input) > i and node.input[i] else None
        bounds.append(None if v is None else float(v.reshape(-1)[0]))
    return tuple(bounds)


def _hardsigmoid(b, node, a, data):
    # PyTorch's hardsigmoid is ONNX's with alpha 1/6, beta 0.5.
    if abs(a.get("alpha", 0.2) - 1 / 6) < 1e-6 and a.get("beta", 0.5) == 0.5:
        return Mapped("nn.Hardsigmoid", "hardsigmoid", data)
    return None


def _reduce_mean(b, node, a, data):
    axes = a.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1] in b.values:
        axes = [int(v) for v in b.values[node.input[1]].reshape(-1)]
    kwargs = {"keepdim": bool(a.get("keepdims", 1))}
    if axes is not None:
        kwargs["dim"] = axes
    return Mapped("Tensor.mean", "mean", data[:1], kwargs=kwargs)


def _resize(b, node, a, data):
    return Mapped("F.interpolate", "interpolate", data[:1],
                  kwargs={"mode": a.get("mode", "nearest"), "size": _out_shape(b, node)[2:]})


def _simple(op_type):
    op, base = SIMPLE[op_type]
    return lambda b, node, a, data: Mapped(op, base, data)


def _view(op):
    return lambda b, node, a, data: Mapped(op, op.split(".")[-1].lower(), data[:1], view=True)


def _dropout(b, node, a, data):
    """Eval-mode Dropout: output 0 is its input.  With its mask output too
    it is not nn.Dropout (one output) for the C side's shape check."""
    op = "nn.Dropout" if len([o for o in node.output if o]) == 1 else "onnx::Dropout"
    return Mapped(op, "dropout", data[:1], view=True)


_MAPPERS = {
    "Conv": _conv, "ConvTranspose": _conv_transpose, "BatchNormalization": _batchnorm,
    "Gemm": _gemm, "MaxPool": _pool("nn.MaxPool2d", "maxpool2d"),
    "AveragePool": _pool("nn.AvgPool2d", "avgpool2d"), "GlobalAveragePool": _global_avg,
    "Flatten": _flatten, "Reshape": _reshape_view, "Squeeze": _reshape_view,
    "Unsqueeze": _reshape_view, "Identity": _view("nn.Identity"),
    "Dropout": _dropout, "Concat": _concat, "Transpose": _transpose,
    "Softmax": _softmax, "LayerNormalization": _layernorm, "Clip": _clip,
    "HardSigmoid": _hardsigmoid, "ReduceMean": _reduce_mean, "Resize": _resize,
    "Upsample": _resize,
}
_MAPPERS.update({k: _simple(k) for k in SIMPLE})
