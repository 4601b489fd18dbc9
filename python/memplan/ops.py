"""Op names, in-place capability and FLOP estimates for exported nodes.

An exported node has a display name (``op``: "aten::convolution",
"nn.Conv2d", "F.relu", "Tensor.view", "operator.add") and a *base* name used
for the rules here: the last word, lower case, without a trailing "_" and
without the "i" of Python's in-place operators ("iadd" -> "add").
"""

import operator

# Elementwise ops whose output may be written over their first input: same
# shape and dtype, each output element depends only on the input element at
# the same position.  Deliberately short; the graph layer decides whether
# overwriting is safe (other readers, backward needs).
UNARY_INPLACE = {
    "relu", "relu6", "hardtanh", "sigmoid", "tanh", "hardswish",
    "hardsigmoid", "silu", "gelu", "elu", "leaky_relu", "neg", "exp",
    "threshold",
}
BINARY_INPLACE = {"add", "sub", "mul", "div", "truediv", "threshold_backward"}

CONV = {"convolution", "_convolution", "conv1d", "conv2d", "conv3d"}
CONV_T = {"convtranspose1d", "convtranspose2d", "conv_transpose1d", "conv_transpose2d"}

_INPLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ifloordiv, operator.imod, operator.ipow, operator.iand,
    operator.ior, operator.ixor, operator.ilshift, operator.irshift,
}


def display_name(fx_op, target, module=None):
    """The ``op`` string of a node from an fx node's op and target."""
    if fx_op == "call_module":
        cls = type(module)
        if cls.__module__.startswith("torch.nn"):
            return "nn." + cls.__name__
        return cls.__module__ + "." + cls.__name__
    if fx_op == "call_method":
        return "Tensor." + target
    schema = getattr(target, "_schema", None)
    if schema is not None:                       # an aten OpOverload
        name = schema.name
        if schema.overload_name:
            name += "." + schema.overload_name
        return name
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or str(target)
    if mod == "torch.nn.functional":
        return "F." + name
    if mod in ("_operator", "operator"):
        return "operator." + name
    if mod == "torch" or mod.startswith("torch.") or mod.startswith("torch._") or not mod:
        return "torch." + name
    return mod + "." + name


def base_name(op):
    """"aten::relu_" -> "relu", "operator.iadd" -> "add", "nn.ReLU" -> "relu"."""
    word = op.split("::")[-1]
    if op.startswith("aten::"):
        word = word.split(".")[0]
    else:
        word = word.split(".")[-1]
    word = word.lower().strip("_")
    if op.startswith("operator.") and word.startswith("i") and word[1:] in (
            "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and",
            "or", "xor", "lshift", "rshift"):
        word = word[1:]
    return word


def declared_inplace(fx_op, target, kwargs, module=None):
    """True when the traced program asked for the op to run in place."""
    if fx_op == "call_module":
        return bool(getattr(module, "inplace", False))
    if kwargs.get("inplace") is True:
        return True
    if target in _INPLACE_OPERATORS:
        return True
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return any(a.alias_info is not None and a.alias_info.is_write
                   for a in schema.arguments)
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    return name.endswith("_") and not name.endswith("__")


def inplace_capable(base, in_shapes, in_dtypes, out_shapes, out_dtypes):
    """Conservative: a listed elementwise op, one output, shapes all equal."""
    if len(out_shapes) != 1 or not in_shapes:
        return False
    if base in UNARY_INPLACE:
        pass
    elif base in BINARY_INPLACE:
        if any(s != out_shapes[0] for s in in_shapes):
            return False
    else:
        return False
    return in_shapes[0] == out_shapes[0] and in_dtypes[0] == out_dtypes[0]


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def flops(base, in_shapes, out_shapes, module=None, args=()):
    """A rough multiply-add count x2 for one node (docs/graph-format.md).

    in_shapes are the shapes of the tensor inputs in argument order (module
    parameters not included); out_shapes those of the outputs that own
    memory.  Views and aliases cost 0; anything not listed costs the number
    of output elements.
    """
    outn = sum(_numel(s) for s in out_shapes)
    try:
        if module is not None and hasattr(module, "weight") and base in CONV | CONV_T:
            w = tuple(module.weight.shape)
            if base in CONV_T:
                return 2 * _numel(in_shapes[0]) * _numel(w[1:])
            return 2 * outn * _numel(w[1:])
        if base in CONV and len(in_shapes) >= 2:
            transposed = len(args) > 6 and args[6] is True
            w = in_shapes[1]
            return 2 * (_numel(in_shapes[0]) if transposed else outn) * _numel(w[1:])
        if base == "convolution_backward" and len(in_shapes) >= 3:
            go, w = in_shapes[0], in_shapes[2]
            mask = args[-1] if args and isinstance(args[-1], (list, tuple)) else (True, True)
            return 2 * _numel(go) * _numel(w[1:]) * sum(1 for m in mask[:2] if m)
        if base == "linear":
            k = in_shapes[0][-1]
            return 2 * outn * k
        if base == "addmm" and len(in_shapes) >= 3:
            (m, k), n = in_shapes[1], in_shapes[2][1]
            return 2 * m * k * n + m * n
        if base == "mm":
            (m, k), n = in_shapes[0], in_shapes[1][1]
            return 2 * m * k * n
        if base in ("bmm", "baddbmm"):
            a = in_shapes[-2]
            return 2 * outn * a[-1]
        if base == "matmul":
            return 2 * outn * in_shapes[0][-1]
        if base == "multiheadattention":
            e = module.embed_dim
            q = in_shapes[0]
            tokens = _numel(q[:-1])
            length = q[1] if module.batch_first else q[0]
            return 2 * tokens * e * 4 * e + 2 * 2 * tokens * length * e
    except (IndexError, TypeError, ValueError, AttributeError):
        pass
    return outn
