"""Tracing a model into a recorded graph: inference and training.

Inference: torch.fx symbolic tracing (module-level graph: leaf torch.nn
modules, torch functions, Tensor methods), then a Recorder (a ShapeProp) run
on the example input.  Training: make_fx (torch.fx.experimental.proxy_tensor)
over one step -- forward in train mode, cross-entropy loss, autograd.grad
with respect to every parameter -- which yields aten-level forward and
backward ops; the Recorder then runs that graph the same way.
"""

import contextlib
import dis
import inspect

import torch
import torch.fx
import torch.nn.functional as F

from . import __version__
from .capture import ExportError, Recorder


@contextlib.contextmanager
def py311_unpack_fix():
    """Let fx trace ``a, b = proxy`` on Python 3.11.

    torch 1.13's Proxy.__iter__ finds the caller's bytecode instruction as
    ``instructions[f_lasti // 2]``, which is wrong from Python 3.11 on (inline
    cache entries), so tuple unpacking of a proxy (ShuffleNet's
    ``x1, x2 = x.chunk(2, dim=1)``, ViT's ``n, c, h, w = x.shape``,
    ``x, _ = attention(...)``) fails.  This replaces it, while tracing, by a
    version that finds the instruction by its offset.
    """
    proxy_cls = torch.fx.proxy.Proxy
    original = proxy_cls.__iter__

    def proxy_iter(self):
        caller = inspect.currentframe().f_back
        for inst in dis.get_instructions(caller.f_code):
            if inst.offset == caller.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)

    proxy_cls.__iter__ = proxy_iter
    try:
        yield
    finally:
        proxy_cls.__iter__ = original


def _propagate(rec, *inputs):
    """Run the recorder; fx's Interpreter appends context lines to errors."""
    try:
        with torch.no_grad():
            rec.propagate(*inputs)
    except ExportError as e:
        raise ExportError(_first_line(e)) from None


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def trace_inference(model, example):
    """A finished Recorder for ``model(example)`` in eval mode."""
    model.eval()
    try:
        with py311_unpack_fix():
            gm = torch.fx.symbolic_trace(model)
    except Exception as e:
        raise ExportError("torch.fx cannot trace the model: %s" % _first_line(e)) from None
    rec = Recorder(gm, [{"kind": "input", "name": "input"}])
    _propagate(rec, example)
    rec.finish()
    return rec


def _logits(out):
    """Main and auxiliary logits of a model's output, main first."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [out[k] for k in ("out", "aux") if k in out and out[k] is not None]
    if isinstance(out, (list, tuple)):
        return [o for o in out if isinstance(o, torch.Tensor)]
    raise ExportError("cannot find logits in a model output of type %s" % type(out).__name__)


def make_targets(model, example):
    """Fixed integer class targets shaped like the main logits minus dim 1."""
    model.eval()
    with torch.no_grad():
        main = _logits(model(example))[0]
    shape = (main.shape[0],) + tuple(main.shape[2:])
    n = 1
    for d in shape:
        n *= d
    return (torch.arange(n, dtype=torch.long) % main.shape[1]).reshape(shape)


def trace_training(model, example, targets):
    """A finished Recorder for one training step (forward, loss, backward).

    Loss: cross-entropy of the main logits plus 0.3 x that of any auxiliary
    logits (GoogLeNet, Inception v3, segmentation aux heads), so every
    parameter gets a gradient.
    """
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils.stateless import functional_call

    model.train()
    pnames = [k for k, _ in model.named_parameters()]
    bnames = [k for k, _ in model.named_buffers()]
    params = [p.detach().clone().requires_grad_(True) for _, p in model.named_parameters()]
    bufs = [b.detach().clone() for _, b in model.named_buffers()]

    def step(x, t, ps, bs):
        state = dict(zip(pnames, ps))
        state.update(zip(bnames, bs))
        outs = _logits(functional_call(model, state, (x,)))
        loss = F.cross_entropy(outs[0], t)
        for aux in outs[1:]:
            loss = loss + 0.3 * F.cross_entropy(aux, t)
        grads = torch.autograd.grad(loss, ps, allow_unused=True)
        return (loss,) + tuple(grads)

    try:
        gm = make_fx(step)(example, targets, params, bufs)
    except ExportError:
        raise
    except Exception as e:
        hint = " (batch norm in train mode needs --batch 2 or more)" \
            if "more than 1 value per channel" in str(e) else ""
        raise ExportError("make_fx cannot trace a training step: %s%s"
                          % (_first_line(e), hint)) from None
    info = [{"kind": "input", "name": "input"}, {"kind": "input", "name": "target"}]
    info += [{"kind": "parameter", "name": k, "trainable": True} for k in pnames]
    info += [{"kind": "parameter", "name": k, "trainable": False} for k in bnames]
    rec = Recorder(gm, info)
    _propagate(rec, example, targets, *params, *bufs)
    loss_tid = rec.output_struct[0].tid
    grad_of = {}
    for k, g in enumerate(rec.output_struct[1:]):
        if g is not None:
            grad_of[g.tid] = rec.placeholder_tids[2 + k][0]
    rec.finish(grad_of)
    rec.loss = loss_tid
    return rec


def model_meta(name, example, train, level, **extra):
    import torchvision
    meta = {"name": name, "batch": int(example.shape[0]),
            "input_shape": list(example.shape), "train": bool(train),
            "dtype": str(example.dtype).replace("torch.", ""),
            "level": level,
            "exporter": "memplan.export " + __version__,
            "torch": torch.__version__, "torchvision": torchvision.__version__}
    meta.update(extra)
    return meta


def export_module(model, example, name="model", train=False, **extra):
    """The memplan-graph/1 dict of ``model`` run on ``example``."""
    if train:
        targets = make_targets(model, example)
        rec = trace_training(model, example, targets)
        return rec.to_graph(model_meta(name, example, True, "aten", **extra))
    rec = trace_inference(model, example)
    return rec.to_graph(model_meta(name, example, False, "fx", **extra))
