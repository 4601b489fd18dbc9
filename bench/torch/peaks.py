"""bench/torch/peaks.py -- memplan.torch.fit's planned peaks beside the measured ones.

    usage: /usr/bin/python3 bench/torch/peaks.py [--model vit_b_16|resnet50|vit_small]
               [--batch N] [--side PIXELS] [--layers L] [--sequential K,K] [--fractions F,F]
               [--saved-in-graph]

(PYTHONPATH=python and MEMPLAN_LIB=<build>/libmemplan.so, as bench/torch/run sets them.)
For one model and batch, per candidate: the peak fit plans for it
(memplan._fit.Planner.evaluate, as fit's _variant builds the planner: the
captured graph with the measured kernel workspaces and the hidden saved
bytes) and the peak measured on the module fit would build for it
(memplan._ckpt.rebuild; memplan.torch.measure_peak: torch.profiler's memory
events over one step).  Candidates: the plain step; checkpoint_sequential's
shapes at k segments of the model's top pieces (the least-recomputing
"sequential" candidate with k - 1 runs); and the candidate fit measures
first at a budget of 1/F of the plain step's measured peak (fit's ranking,
its "excess" margin: the plain step's measured minus planned peak).
vit_small: a ViT-B/16 with --layers encoder blocks (default 2), for quick
runs.  One line per candidate; diff = planned - measured.
"""

import argparse
import functools
import sys
import time

import torch
import torchvision

from memplan import _fit
from memplan._fit import _build, _variant
from memplan.torch import measure_peak

MiB = 2 ** 20


def build(name, batch, side, layers):
    torch.manual_seed(0)
    if name == "resnet50":
        model = torchvision.models.resnet50()
    elif name == "vit_b_16":
        model = torchvision.models.vit_b_16(image_size=side)
    else:
        model = torchvision.models.VisionTransformer(side, 16, layers, 12, 768, 3072)
    return model, torch.randn(batch, 3, side, side)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="vit_small", choices=("vit_b_16", "resnet50", "vit_small"))
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--side", type=int, default=224)
    ap.add_argument("--layers", type=int, default=2, help="vit_small's encoder blocks")
    ap.add_argument("--sequential", default="2,4,8",
                    help="checkpoint_sequential segment counts (0 or empty: none)")
    ap.add_argument("--fractions", default="2,3", help="fit budgets: plain peak / F")
    ap.add_argument("--saved-in-graph", action="store_true",
                    help="opaque nodes' saved bytes as graph outputs")
    args = ap.parse_args(argv)
    if args.saved_in_graph:
        _fit.profile_nodes = functools.partial(_fit.profile_nodes, saved_in_graph=True)
    torch.set_num_threads(2)
    model, x = build(args.model, args.batch, args.side, args.layers)
    t0 = time.perf_counter()
    planner, cands, fwd_s = _variant(model, x, args.model, {}, 0)
    print(f"{args.model} batch {args.batch} side {args.side}: {len(cands)} candidates, "
          f"captured and planned in {time.perf_counter() - t0:.1f} s", flush=True)
    plain = next(c for c in cands if not c.runs)
    rows = [("plain", plain)]
    seq = [c for c in cands if c.kind == "sequential"]
    for k in [int(v) for v in args.sequential.split(",") if v.strip() and int(v) > 0]:
        same = [c for c in seq if len(c.runs) == k - 1]
        if same:
            # the one over the most nodes: the model's top pieces
            rows.append((f"sequential k={k}",
                         max(same, key=lambda c: (sum(map(len, c.runs)), -c.peak))))
    measured = {}

    def measure(cand):
        if id(cand) not in measured:
            try:
                measured[id(cand)] = measure_peak(_build(model, planner, cand), x)
            except (IndexError, RuntimeError):
                measured[id(cand)] = None
        return measured[id(cand)]

    plain_measured = measure(plain)
    excess = plain_measured - plain.peak
    order = sorted(cands, key=lambda c: (fwd_s + c.extra_seconds, c.peak))
    for f in [int(v) for v in args.fractions.split(",") if v.strip()]:
        budget = plain_measured // f
        for pick in (c for c in order if c.runs and c.peak + excess <= budget):
            if measure(pick) is not None:      # fit skips what torch.fx cannot split
                rows.append((f"fit 1/{f} first trial", pick))
                break
    print(f"plain step: planned {plain.peak / MiB:.1f} MiB, measured {plain_measured / MiB:.1f}"
          f" (fit's excess {excess / MiB:+.1f})")
    print(f"{'candidate':24} {'runs':>4} {'kind':>10} {'planned':>9} {'measured':>9} "
          f"{'diff':>7} {'diff %':>7}")
    for label, cand in rows:
        m = measure(cand)
        if m is None:
            print(f"{label:24} {len(cand.runs):4d} {cand.kind:>10} (torch.fx cannot split it)")
            continue
        print(f"{label:24} {len(cand.runs):4d} {cand.kind:>10} {cand.peak / MiB:9.1f} "
              f"{m / MiB:9.1f} {(cand.peak - m) / MiB:+7.1f} {100 * (cand.peak - m) / m:+6.1f}%",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
