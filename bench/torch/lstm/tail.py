"""bench/torch/lstm/tail.py -- the bench LSTM in time chunks, every chunk
checkpointed but a kept tail: planned and measured peaks, and step times
side by side (issue 14: fit at 1/3 of the plain peak took 1.88x the plain
step).

    usage: /usr/bin/python3 bench/torch/lstm/tail.py [--batch N] [--steps T]
               [--chunks C] [--prefixes J,J] [--time ROUNDS] [--threads N]

(PYTHONPATH=python and MEMPLAN_LIB=<build>/libmemplan.so, as bench/torch/run
sets them.)  The model is bench/torch/models.py's LSTM, captured as fit
captures it with exact=False (memplan._fit._variant, its nn.LSTMs traced in
C time chunks).  A plan "prefix J" checkpoints the first J leaf calls of the
chain in forward order, one run each, without the leading nodes a run would
keep (a layer's concatenated output): the rest, the last layer's last
chunks and the head, runs plainly.  Per plan: the planner's peak
(Candidate.peak), the peak on its timeline (Planner.timeline_peak), what
fit adds to it (the plain chunked step's measured minus planned peak), the
measured peak (memplan.torch.measure_peak) and the forward seconds it
recomputes.  --time R: R rounds of one step of each module in turn (the
plain model, the chunked one unchecked, each prefix, checkpoint_sequential
k=4 as bench_fit.py runs it); medians, and ratios to the plain step's.
"""

import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import models  # noqa: E402
from bench_fit import Segmented  # noqa: E402
from memplan import _fit, _timeline  # noqa: E402
from memplan._fx import rnn_chunks  # noqa: E402
from memplan._measure import _zero_grads, default_loss  # noqa: E402
from memplan.torch import measure_peak  # noqa: E402

MiB = 2 ** 20


def kept_tail_runs(planner, j):
    """The first j leaf calls, one run each, each without the leading nodes
    whose values it would keep."""
    runs = []
    for call in planner._leaf_calls()[:j]:
        m = planner.mirror([call])
        i = 0
        while i < len(call) - 1 and not m[call[i]] and not planner.hidden.get(call[i]):
            i += 1
        runs.append(call[i:])
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=128, help="sequence length T")
    ap.add_argument("--chunks", type=int, default=8, help="at most this many time chunks")
    ap.add_argument("--prefixes", default="32,28,27,26", help="J: calls checkpointed")
    ap.add_argument("--time", type=int, default=0, help="rounds of timed steps (0: none)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, x, seq = models.build("lstm", args.batch, args.steps)
    plain = measure_peak(model, x)
    chunks = rnn_chunks(model, x, most=args.chunks)
    planner, cands, fwd_s = _fit._variant(model, x, "lstm", chunks, 1)
    tl = _timeline.Timeline([planner, planner])
    none = next(c for c in cands if not c.runs)
    excess = plain - none.peak
    print(f"lstm batch {args.batch} T={args.steps}, {planner.chunks} chunks: plain "
          f"{plain / MiB:.1f} MiB (1/3: {plain / 3 / MiB:.1f}); the chunked plain step planned "
          f"{none.peak / MiB:.1f} (fit's excess {excess / MiB:+.1f})", flush=True)
    rows = [("plain", model), ("chunked, nothing checkpointed", _fit._build(model, planner, none))]
    print(f"{'plan':12} {'runs':>4} {'planned':>8} {'timeline':>8} {'+excess':>8} "
          f"{'measured':>8} {'recomputed fwd s':>16}")
    for j in [int(v) for v in args.prefixes.split(",") if v.strip()]:
        c = planner.evaluate(kept_tail_runs(planner, j))
        module = _fit._build(model, planner, c)
        peak = tl.exact(c)
        print(f"prefix {j:<5d} {len(c.runs):4d} {c.peak / MiB:8.1f} {peak / MiB:8.1f} "
              f"{(peak + excess) / MiB:8.1f} {measure_peak(module, x) / MiB:8.1f} "
              f"{100 * c.extra_seconds / fwd_s:15.0f}%", flush=True)
        rows.append((f"prefix {j}", module))
    rows.append(("checkpoint_sequential k=4", Segmented(seq, 4)))
    if not args.time:
        return 0
    times = {label: [] for label, _ in rows}
    model.train()
    for _ in range(args.time):
        for label, module in rows:
            _zero_grads(model)
            t0 = time.perf_counter()
            default_loss(module(x)).backward()
            times[label].append(time.perf_counter() - t0)
    base = statistics.median(times["plain"])
    for label, _ in rows:
        med = statistics.median(times[label])
        print(f"{label:30} step median {med:6.2f} s  {med / base:5.2f}x  (all: "
              f"{', '.join('%.2f' % t for t in times[label])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
