"""Interleaved step timing for bench/torch/bench_fit.py: every variant of a
model is timed in the same rounds (one training step of each in turn, the
order rotated per round and reversed every other round), so load that
drifts over minutes slows every variant alike instead of the one that
happened to run then, and no variant always runs right after the same
other one (an order effect an interleaving with a fixed cycle keeps).

The variants share the model's parameters and buffers (fit's modules,
checkpoint_sequential's Sequential), so one memplan._fx.frozen(model) gives
the model back exactly as it was; gradients are zeroed before each step as
memplan.torch.measure_time does, and only one step's activations exist at a
time.
"""

import torch

from memplan._fx import frozen
from memplan._measure import _zero_grads, default_loss, timed


def _step(module, x, threads):
    if threads and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    _zero_grads(module)
    return timed(lambda: default_loss(module(x)).backward(), x.device)   # a GPU's kernels too


def interleaved(model, entries, x, rounds):
    """entries: [(label, module, threads or None)], each module sharing
    model's parameters.  One warm-up step of each, then `rounds` rounds of
    one timed step of each, round r starting at entry r mod len(entries),
    odd rounds in the reverse order.
    Returns {"order", "times": {label: [seconds per round]}, "warmup":
    {label: seconds}, "errors": {label: message}}: an entry whose step
    raises is dropped from the later rounds, its error kept.  The thread
    count is left as the last entry set it; model is unchanged."""
    live = list(entries)
    out = {"order": [e[0] for e in entries], "times": {e[0]: [] for e in entries},
           "warmup": {}, "errors": {}}

    def run(entry, into):
        label, module, threads = entry
        try:
            into(_step(module, x, threads))
        except Exception as e:          # kept as the entry's result
            out["errors"][label] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
            live.remove(entry)

    with frozen(model):
        model.train()
        for e in list(live):
            run(e, lambda s, label=e[0]: out["warmup"].__setitem__(label, s))
        for r in range(rounds):
            turn = [e for e in entries[r % len(entries):] + entries[:r % len(entries)]
                    if e in live]
            if r % 2:
                turn.reverse()
            for e in turn:
                run(e, out["times"][e[0]].append)
    return out

