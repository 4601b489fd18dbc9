"""Measuring a real PyTorch training step: its peak memory and its time.

The peak is measured, not modelled, on the device the step runs on (its
first input's, else its first parameter's: device_of).  On the CPU,
torch.profiler with profile_memory records every allocation and free of
torch's CPU allocator as a kineto "[memory]" event with a signed byte
count; the running sum of those events over one step (forward, loss,
backward) is the memory the step allocated above what was live when it
started, and its maximum is the step's peak.  On a CUDA device, the
caching allocator's own statistics give the same two numbers
(memory_allocated before and after, max_memory_allocated after
reset_peak_memory_stats): bytes of live tensors, not what the allocator
reserves from the driver.  Gradients exist before the step (zeroed, not
None), so the peak is that of the activations, the gradient temporaries
and the kernels' workspaces: the memory recomputation can change.  Times
wait for the device (torch.cuda.synchronize) before the clock is read.
The model is given back exactly as it was (parameters, buffers,
gradients, mode).
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
        target = torch.arange(out.shape[0], device=out.device) % out.shape[1]
        return torch.nn.functional.cross_entropy(out, target)
    return out.float().sum()


def device_of(model=None, inputs=()):
    """The device a step of model on inputs runs on: the first input
    tensor's, else the first parameter's, else the CPU."""
    for t in as_tuple(inputs):
        if isinstance(t, torch.Tensor):
            return t.device
    for p in model.parameters() if model is not None else ():
        return p.device
    return torch.device("cpu")


def sync(device):
    """Waits for device's queued work (a CUDA device runs it after the
    call returns): a clock read after sync() includes it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def allocated_during(fn, device):
    """(peak, end): the bytes torch allocated on device above what was live
    when fn() started, at the highest point and when it returned (the
    module's docstring says how, per device type)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return (torch.cuda.max_memory_allocated(device) - base,
                torch.cuda.memory_allocated(device) - base)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return peak_and_end(prof)


def timed(fn, device):
    """Seconds fn() takes, the device's queued work included."""
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


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
    if events:      # torch 2 names the start in ns, 1.13 in us
        start = "start_ns" if hasattr(events[0], "start_ns") else "start_us"
        events.sort(key=lambda e: getattr(e, start)())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak, live


def measure_peak(model, inputs, loss_fn=None):
    """Peak bytes allocated by one training step of model on inputs (after
    a warm-up step), by torch.profiler's memory events.  model unchanged."""
    return measure_step(model, inputs, loss_fn, repeat=0)[0]


def measure_time(model, inputs, loss_fn=None, repeat=3):
    """Median seconds of a training step (forward, loss, backward) over
    repeat steps after a warm-up.  model unchanged."""
    inputs, loss_fn = as_tuple(inputs), loss_fn or default_loss
    device, times = device_of(model, inputs), []
    with frozen(model):
        model.train()
        _zero_grads(model)
        _step(model, inputs, loss_fn)
        for _ in range(repeat):
            _zero_grads(model)
            times.append(timed(lambda: _step(model, inputs, loss_fn), device))
    times.sort()
    return times[len(times) // 2]


def measure_step(model, inputs, loss_fn=None, repeat=2):
    """(peak bytes, seconds) of a training step: a warm-up step, one step
    profiled for its peak (as measure_peak), then the least of `repeat`
    timed steps (the least: on a shared machine other work only ever adds
    time; None with repeat=0).  2 + repeat steps in all; model unchanged."""
    inputs, loss_fn = as_tuple(inputs), loss_fn or default_loss
    device, times = device_of(model, inputs), []
    with frozen(model):
        model.train()
        _zero_grads(model)
        _step(model, inputs, loss_fn)
        _zero_grads(model)
        peak, _ = allocated_during(lambda: _step(model, inputs, loss_fn), device)
        for _ in range(repeat):
            _zero_grads(model)
            times.append(timed(lambda: _step(model, inputs, loss_fn), device))
    return peak, min(times) if times else None
