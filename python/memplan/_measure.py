"""Measuring a real PyTorch training step: its peak memory and its time.

The peak is measured, not modelled: torch.profiler with profile_memory
records every allocation and free of torch's CPU allocator as a kineto
"[memory]" event with a signed byte count; the running sum of those events
over one step (forward, loss, backward) is the memory the step allocated
above what was live when it started, and its maximum is the step's peak.
Gradients exist before the step (zeroed, not None), so the peak is that of
the activations, the gradient temporaries and the allocator's transients:
the memory recomputation can change.  The model is given back exactly as
it was (parameters, buffers, gradients, mode).
"""

import time

import torch
from torch.profiler import ProfilerActivity, profile

from ._fx import as_tuple, frozen


def default_loss(out):
    """Softmax cross-entropy of logits [N, K] against fixed classes (what
    memplan's planner models); the sum of the output for other shapes."""
    out = out[0] if isinstance(out, (tuple, list)) else out
    if out.dim() == 2:
        target = torch.arange(out.shape[0]) % out.shape[1]
        return torch.nn.functional.cross_entropy(out, target)
    return out.float().sum()


def _step(model, inputs, loss_fn):
    loss = loss_fn(model(*inputs))
    loss.backward()
    return loss


def _zero_grads(model):
    for p in model.parameters():
        if p.requires_grad:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            else:
                p.grad.zero_()


def peak_and_end(prof):
    """(peak, last) of the running sum of a profile's memory events: bytes
    allocated above the start at the highest point and at the end."""
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_us())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak, live


def _peak_of(prof):
    return peak_and_end(prof)[0]


def measure_peak(model, inputs, loss_fn=None):
    """Peak bytes allocated by one training step of model on inputs (after
    a warm-up step), by torch.profiler's memory events.  model unchanged."""
    return measure_step(model, inputs, loss_fn, repeat=0)[0]


def measure_time(model, inputs, loss_fn=None, repeat=3):
    """Median seconds of a training step (forward, loss, backward) over
    repeat steps after a warm-up.  model unchanged."""
    inputs, loss_fn = as_tuple(inputs), loss_fn or default_loss
    times = []
    with frozen(model):
        model.train()
        _zero_grads(model)
        _step(model, inputs, loss_fn)
        for _ in range(repeat):
            _zero_grads(model)
            t0 = time.perf_counter()
            _step(model, inputs, loss_fn)
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def measure_step(model, inputs, loss_fn=None, repeat=2):
    """(peak bytes, seconds) of a training step: a warm-up step, one step
    profiled for its peak (as measure_peak), then the least of `repeat`
    timed steps (the least: on a shared machine other work only ever adds
    time; None with repeat=0).  2 + repeat steps in all; model unchanged."""
    inputs, loss_fn = as_tuple(inputs), loss_fn or default_loss
    times = []
    with frozen(model):
        model.train()
        _zero_grads(model)
        _step(model, inputs, loss_fn)
        _zero_grads(model)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            _step(model, inputs, loss_fn)
        for _ in range(repeat):
            _zero_grads(model)
            t0 = time.perf_counter()
            _step(model, inputs, loss_fn)
            times.append(time.perf_counter() - t0)
    return _peak_of(prof), min(times) if times else None
