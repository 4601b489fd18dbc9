"""ViT-B/16 (torchvision) at batch 4, budget 1/3 of the plain peak
(docs/python.md, "fit's choice, measured"): (1) a relaxed bound on the
forward seconds any plan must recompute (every node's output and hidden
bytes droppable alone for its own seconds, a fractional knapsack); (2) the
first 3 fitting candidates in fit's ranking, built and their peaks
measured; (3) the plain model, the first two that fit and
checkpoint_sequential k=4's shape timed side by side (4 rounds).  Usage:
  MEMPLAN_LIB=build/libmemplan.so /usr/bin/python3 bench/fit/vit_third.py"""
import os
from vit import MiB, setup
from memplan import _choice, _fit
from memplan._timeline import Timeline
from memplan._measure import measure_peak
m, x, p, cands, fwd, none = setup()
plain = measure_peak(m, x)
excess = plain - none.peak
budget = plain // 3
limit = budget - excess
tl = Timeline([p])
print(f"plain measured {plain/MiB:.1f} planned {none.peak/MiB:.1f} budget {budget/MiB:.1f} limit {limit/MiB:.1f} fwd {fwd:.2f}s load {os.getloadavg()}", flush=True)
# (1) relaxed bound: every node's output and hidden bytes droppable alone
# for its own forward seconds (no run structure, inputs free): fractional knapsack
need = none.peak - limit
items = sorted(((p.remat.node_bytes(v) + p.hidden.get(v, 0), p.seconds[v]) for v in p.own), key=lambda t: -t[0] / (t[1] + 1e-9))
got = secs = 0.0
for b, s in items:
    if got >= need: break
    take = min(1.0, (need - got) / b) if b else 0
    got += take * b; secs += take * s
print(f"relaxed bound: drop {need/MiB:.1f} MiB -> at least {100*secs/fwd:.1f}% of fwd seconds", flush=True)
order = sorted(cands, key=lambda c: (c.extra_seconds, c.peak))
fitting = [c for c in order if c.runs and tl.peak(c, limit) <= limit][:3]
mods = []
for c in fitting:
    mod = _fit._build(m, p, c)
    pk = measure_peak(mod, x)
    print(f"cand {c.kind} runs {len(c.runs)} planned {tl.known(c)/MiB:.1f} measured {pk/MiB:.1f} fits {pk <= budget} extra {100*c.extra_seconds/fwd:.1f}%", flush=True)
    mods.append((c, mod, pk))
# k=4's shape of the bench (201.4 MiB): the sequential candidate planned ~203.7
k4 = min((c for c in cands if c.kind == "sequential" and abs(tl.peak(c, 10**12) - 203.7 * MiB) < 1.5 * MiB), key=lambda c: c.extra_seconds, default=None)
side = [("plain", m)]
fit_ok = [t for t in mods if t[2] <= budget][:2]
for i, (c, mod, pk) in enumerate(fit_ok):
    side.append((f"fit{i} {100*c.extra_seconds/fwd:.0f}% {pk/MiB:.1f}MiB", mod))
if k4 is not None:
    mod = _fit._build(m, p, k4); pk = measure_peak(mod, x)
    side.append((f"k4shape {100*k4.extra_seconds/fwd:.0f}% {pk/MiB:.1f}MiB", mod))
print("load", os.getloadavg(), flush=True)
times = _choice.retime([s[1] for s in side], (x,), rounds=4)
print("load", os.getloadavg(), flush=True)
for (n, _), t in zip(side, times):
    r = [a / b for a, b in zip(t, times[0])]
    print(f"  {n:28s} " + " ".join(f"{v:.2f}" for v in t) + f"  median {_choice._median(t):.2f}s  /plain per round " + " ".join(f"{v:.2f}" for v in r) + f" median {_choice._median(r):.2f}")
