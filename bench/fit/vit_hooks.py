"""ViT-B/16 at batch 4, budget 1/3, planned only (docs/python.md, "fit's
choice, measured"): fit's candidates, each with the cheap values outside
its runs (the outputs of ln_1, ln_2, mlp_0 and GELU) also dropped and
recomputed alone before their first gradient -- what saved-tensor hooks
could do and torch's checkpoint runs cannot (mlp_3 saves GELU's output,
so a run that drops it must rerun mlp_3).  The least forward seconds
recomputed within the budget, with and without.  Usage:
  MEMPLAN_LIB=build/libmemplan.so /usr/bin/python3 bench/fit/vit_hooks.py"""
from vit import MiB, setup
m, x, p, cands, fwd, none = setup()
plain = 549.2 * MiB
limit = plain / 3 - (plain - none.peak)
CHEAP = [("ln_2", "mlp_0", "mlp_1"), ("ln_2", "mlp_0", "mlp_1", "ln_1"), ("mlp_1",), ("mlp_0", "mlp_1")]
def evaluate(c, cheap):
    inruns = {v for r in c.runs for v in r}
    mm = p.mirror(c.runs, c.inner)
    hooks = [v for v in p.own if v not in inruns and any(p.nodes[v].name.endswith("_" + k) for k in cheap)]
    for v in hooks: mm[v] = max(mm[v], 1)
    e = p.remat.evaluate(p._rerun_whole(p.remat.plan_mirror(mm, "checkpoint"), c.runs, c.inner))
    pk = e.peak + p._hidden(c.runs, c.inner)
    return pk, c.extra_seconds + sum(p.seconds[v] for v in hooks), len(hooks)
print(f"fwd {fwd:.2f}s limit {limit/MiB:.1f}")
best0 = min((c for c in cands if c.runs and c.peak <= limit), key=lambda c: c.extra_seconds)
print(f"family alone: best planned {best0.peak/MiB:.1f} at {100*best0.extra_seconds/fwd:.1f}%  ({best0.kind}, {len(best0.runs)} runs)")
for cheap in CHEAP:
    best = None
    for c in cands:
        pk, s, n = evaluate(c, cheap)
        if pk <= limit and (best is None or s < best[1]):
            best = (pk, s, n, c)
    if best:
        pk, s, n, c = best
        print(f"with {cheap} dropped alone: planned {pk/MiB:.1f} at {100*s/fwd:.1f}% ({n} values, {c.kind} {len(c.runs)} runs, runs alone {100*c.extra_seconds/fwd:.1f}%)")
