"""bench/torch/gpu.py -- memplan.torch.fit on a CUDA device: the same
questions as bench_fit.py (does fit's measured step keep to the budget,
at what step time, against checkpoint_sequential), asked of a GPU's
caching allocator instead of the CPU's.

    python3 bench/torch/gpu.py [--size MODEL=BATCHxDIM]... [--repeat R]
        [--json FILE] [--out MD]

Per model (models.py, on torch.device("cuda")): the plain step's peak and
time (memplan.torch.measure_step: torch.cuda.max_memory_allocated above
the memory live before the step); fit(exact=False) at 1/3 and 1/2 of the
plain peak; checkpoint_sequential at k = 2, 4, 8 (bench_fit.Segmented);
fit again at each checkpoint_sequential row's peak; then every module in
the same R rounds of one step each (timing.interleaved, which waits for
the device before reading the clock), the plain step twice.  One JSON
line per measurement to --json; a Markdown summary to --out (default:
stdout).  Exit status 0 when every fit measured within its budget, 1 if
any fit returned a module over it or anything crashed, 2 without CUDA.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

import memplan.torch as mpt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
import timing  # noqa: E402
from bench_fit import Segmented, same_output  # noqa: E402

SIZES = {"resnet50": (64, 224), "vit_b_16": (32, 224), "lstm": (64, 256)}
FRACTIONS = (3, 2)
SEGMENTS = (2, 4, 8)
MIB = 1 << 20


def log(msg):
    print("[%7.1f s] %s" % (time.perf_counter() - START, msg), file=sys.stderr, flush=True)


def fit_row(model, x, budget):
    """fit's record at budget and its module (None where BudgetError)."""
    try:
        module, r = mpt.fit(model, x, budget, exact=False)
    except mpt.BudgetError as e:
        return {"fits": False, "error": str(e)}, None
    return {"budget": budget, "peak": r.measured_peak, "fits": r.measured_peak <= budget,
            "planned": r.planned_peak, "same_output": same_output(model, module, x),
            "capture_s": r.capture_seconds, "planning_s": r.planning_seconds,
            "measuring_s": r.measuring_seconds, "attempts": r.attempts,
            "candidates": r.candidates, "kind": r.kind, "chunked": r.chunked,
            "runs": r.checkpointed, "nested": r.nested, "fit_time": r.measured_seconds}, module


def bench(name, batch, dim, repeat, emit):
    device = torch.device("cuda")
    model, x, seq = models.build(name, batch, dim)
    model, x = model.to(device), x.to(device)       # seq shares model's modules
    base = {"model": name, "batch": batch, "dim": dim, "device": torch.cuda.get_device_name()}
    plain, plain_s = mpt.measure_step(model, x)
    emit(dict(base, variant="plain", peak=plain, seconds=plain_s))
    log("%s: plain %.1f MiB, %.3f s" % (name, plain / MIB, plain_s))
    entries, segs = [("plain", model, None)], {}
    for k in SEGMENTS:
        label = "checkpoint_sequential k=%d" % k
        if len(seq) // k == 0:
            emit(dict(base, variant=label, skipped="%d pieces" % len(seq)))
            continue
        module = Segmented(seq, k)
        try:
            peak = mpt.measure_peak(module, x)
        except RuntimeError as e:       # torch refuses this segmentation (an in-place
            emit(dict(base, variant=label, error=str(e).splitlines()[0]))   # op at a cut)
            log("%s: %s: %s" % (name, label, str(e).splitlines()[0]))
            continue
        segs[k] = peak
        entries.append((label, module, None))
        emit(dict(base, variant=label, peak=peak))
    budgets = [("memplan 1/%d" % f, plain // f) for f in FRACTIONS]
    budgets += [("memplan at k=%d's peak" % k, segs[k]) for k in SEGMENTS if segs.get(k, plain) < plain]
    for label, budget in budgets:
        t0 = time.perf_counter()
        row, module = fit_row(model, x, budget)
        emit(dict(base, variant=label, wall_s=time.perf_counter() - t0, **row))
        log("%s: %s: %s" % (name, label, json.dumps(row)))
        if module is not None:
            entries.append((label, module, None))
    entries.append(("plain again", model, None))
    out = timing.interleaved(model, entries, x, repeat)
    med = {k: statistics.median(v) for k, v in out["times"].items() if v}
    emit(dict(base, variant="rounds", rounds=repeat, **out))
    for k, v in med.items():
        log("%s: %s median %.4f s (%.2fx plain)" % (name, k, v, v / med["plain"]))
    return med


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", action="append", default=[], metavar="MODEL=BATCHxDIM")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    sizes = dict(SIZES)
    if args.size:
        sizes = {}
        for s in args.size:
            m, _, bd = s.partition("=")
            b, _, d = bd.partition("x")
            if m not in models.BUILD or not b.isdigit() or not d.isdigit():
                ap.error("--size %r: MODEL=BATCHxDIM, MODEL one of %s" % (s, ", ".join(models.BUILD)))
            sizes[m] = (int(b), int(d))
    return args, sizes


def main(argv):
    args, sizes = parse(argv)
    if not torch.cuda.is_available():
        print("gpu.py: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = False
    records, bad = [], 0
    f = open(args.json, "w") if args.json else None

    def emit(rec):
        records.append(rec)
        if f:
            f.write(json.dumps(rec) + "\n")
            f.flush()
    emit({"kind": "meta", "torch": torch.__version__, "device": torch.cuda.get_device_name(),
          "sizes": sizes, "repeat": args.repeat})
    lines = ["| model | variant | peak MiB | budget MiB | step vs plain |", "|---|---|---|---|---|"]
    for name, (batch, dim) in sizes.items():
        try:
            med = bench(name, batch, dim, args.repeat, emit)
        except Exception as e:          # one model's crash is a result, not the run's end
            import traceback
            traceback.print_exc()
            emit({"model": name, "crashed": "%s: %s" % (type(e).__name__, e)})
            bad += 1
            continue
        for r in records:
            if r.get("model") != name or "peak" not in r:
                continue
            bad += r.get("fits") is False and "error" not in r
            ratio = med.get(r["variant"], 0) / med["plain"] if r["variant"] in med else None
            lines.append("| %s %dx%d | %s | %.1f | %s | %s |" % (
                name, batch, dim, r["variant"], r["peak"] / MIB,
                "%.1f" % (r["budget"] / MIB) if "budget" in r else "",
                "%.2fx" % ratio if ratio else ""))
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as o:
            o.write(text)
    else:
        print(text)
    return 1 if bad else 0


START = time.perf_counter()

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
