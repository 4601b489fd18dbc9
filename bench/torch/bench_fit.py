"""bench/torch/bench_fit.py -- issue 14's targets for memplan.torch.fit,
measured on the real CPU next to the plain training step and
torch.utils.checkpoint's checkpoint_sequential.

    /usr/bin/python3 bench/torch/bench_fit.py [--quick] [--models M,M]
        [--size MODEL=BATCHxDIM]... [--repeat N] [--json FILE] [--out MD]
        [--command TEXT]
    /usr/bin/python3 bench/torch/bench_fit.py --from-json FILE [--out MD]

Per model (models.py): the plain step's peak (memplan.torch.measure_peak)
and median step time (measure_time); fit() at budgets of 1/3 and 1/2 of the
plain peak (BudgetError is a result); checkpoint_sequential at k = 2, 4, 8
and at memplan's number of runs.  One JSON line per measurement goes to
--json as soon as it is made; the Markdown (report.py) is written at the
end, whole or not at all.  --from-json rewrites the Markdown from a run's
JSON lines (e.g. after editing notes.md).  --quick: small sizes, and the
sanity checks (a fit's measured peak within its budget) fail the run.
Exit status: 0 every variant measured, 1 some crashed (listed), 2 usage.
"""

import argparse
import contextlib
import datetime
import inspect
import json
import os
import subprocess
import sys
import time

import torch
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

import memplan.torch as mpt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import models  # noqa: E402
import report  # noqa: E402

FRACTIONS = (3, 2)         # fit budgets: plain peak // f
SEGMENTS = (2, 4, 8)       # checkpoint_sequential segment counts always run
PLAN_TARGET = ("resnet50", 32, 224)   # the issue's planning-time target
START = time.perf_counter()
# torch 1.13's checkpoint_sequential takes no use_reentrant (2.0 added it).
NATIVE_NR = "use_reentrant" in inspect.signature(checkpoint_sequential).parameters


def log(msg):
    sys.stderr.write("[%7.1f s] %s\n" % (time.perf_counter() - START, msg))
    sys.stderr.flush()


# ------------------------------------------------------------- variants --

class Segmented(torch.nn.Module):
    """checkpoint_sequential(seq, segments, x, use_reentrant=False).  Where
    torch has no such argument this is its code with the non-reentrant
    checkpoint: the reentrant one gives the first segment's parameters no
    gradient when the input needs none.  Like torch's, it runs
    len(seq) // segments pieces per checkpointed segment and the last
    segment (the rest) plainly."""

    def __init__(self, seq, segments):
        super().__init__()
        self.seq = seq
        self.segments = segments

    def forward(self, x):
        if NATIVE_NR:
            return checkpoint_sequential(self.seq, self.segments, x, use_reentrant=False)
        size = len(self.seq) // self.segments
        end = -1
        for start in range(0, size * (self.segments - 1), size):
            end = start + size - 1
            x = checkpoint(self.seq[start:end + 1], x, use_reentrant=False)
        return self.seq[end + 1:](x)


@contextlib.contextmanager
def eval_mode(*modules):
    modes = [m.training for m in modules]
    try:
        for m in modules:
            m.eval()
        yield
    finally:
        for m, mode in zip(modules, modes):
            m.train(mode)


def same_output(a, b, x):
    """a(x) equals b(x): eval mode (dropout off, batch norm on its running
    statistics), so neither call changes the model."""
    with torch.no_grad(), eval_mode(a, b):
        return torch.allclose(a(x), b(x), rtol=1e-4, atol=1e-5)


def measured(module, x, repeat):
    return {"peak": mpt.measure_peak(module, x),
            "time": mpt.measure_time(module, x, repeat=repeat)}


def fit_row(model, x, budget, args):
    try:
        module, r = mpt.fit(model, x, budget, exact=False)
    except mpt.BudgetError as e:       # a result: the smallest peak fit reached
        return {"fits": False, "error": str(e), "min_peak": e.min_peak}
    assert same_output(model, module, x), "the fitted module's output differs from the model's"
    assert not args.quick or r.measured_peak <= budget, \
        "fit returned a module measured at %d bytes over its budget %d" % (r.measured_peak, budget)
    return dict(peak=r.measured_peak, fits=r.measured_peak <= budget, planned=r.planned_peak,
                extra_pct=100.0 * r.extra_flops / r.forward_flops, runs=r.checkpointed,
                candidates=r.candidates, attempts=r.attempts, fit_plain_peak=r.plain_peak,
                capture_s=r.capture_seconds, planning_s=r.planning_seconds,
                measuring_s=r.measuring_seconds, nested=r.nested, steps=r.steps,
                extra_time_pct=100.0 * r.extra_seconds / r.forward_seconds,
                chunked=r.chunked, plan_kind=r.kind,
                fit_time=r.measured_seconds, fit_plain_time=r.plain_seconds,
                time=mpt.measure_time(module, x, repeat=args.repeat))


def segment_counts(pieces, fit_rows):
    """(k to run, {k: why not}) for k in SEGMENTS and memplan's run counts."""
    wanted = list(SEGMENTS) + [r["runs"] for r in fit_rows if r.get("runs")]
    run, skipped = [], {}
    for k in dict.fromkeys(wanted):
        if k < 2:
            skipped[k] = "k=1 checkpoints nothing (the last segment runs plainly)"
        elif k > pieces:
            skipped[k] = "more segments than the Sequential's %d pieces" % pieces
        else:
            run.append(k)
    return run, skipped


def plan_only(name, batch, dim):
    """Capture and planning seconds of fit() at a size too slow to train
    here: the planner evaluates every candidate whatever the budget, so an
    unbounded budget (no measured step) times the same work."""
    model, x, _ = models.build(name, batch, dim)
    _, r = mpt.fit(model, x, budget=1 << 62, verify=False)
    return {"capture_s": r.capture_seconds, "planning_s": r.planning_seconds,
            "candidates": r.candidates, "plan_batch": batch, "plan_dim": dim}


# ---------------------------------------------------------------- driver --

class Recorder:
    """Writes each record as a JSON line the moment it exists."""

    def __init__(self, path):
        self.f = open(path, "w") if path else None
        self.records, self.crashed = [], 0

    def emit(self, rec):
        self.records.append(rec)
        if self.f:
            self.f.write(json.dumps(rec) + "\n")
            self.f.flush()

    def variant(self, base, label, kind, fn, fields=None):
        """Runs fn() -> row fields (added to base and fields); an exception
        other than a failed check becomes a crashed row, so one variant does
        not lose the run."""
        t0 = time.perf_counter()
        log("%s: %s ..." % (base["model"], label))
        try:
            row = fn()
        except AssertionError:
            raise
        except Exception as e:     # reported, and the exit status says so
            self.crashed += 1
            row = {"error": "%s: %s" % (type(e).__name__, e), "crashed": True}
        # the 1-minute load average: on a shared machine it says which times
        # other work slowed down
        row = dict(base, variant=label, kind=kind, seconds=time.perf_counter() - t0,
                   load=os.getloadavg()[0], **(fields or {}), **row)
        self.emit(row)
        log("%s: %s: %s" % (base["model"], label, summary(row)))
        return row


def summary(row):
    if row.get("error"):
        return row["error"].splitlines()[0][:160]
    parts = []
    if "peak" in row:
        parts.append("peak %.1f MiB" % (row["peak"] / 2.0 ** 20))
    if "time" in row:
        parts.append("step %.2f s" % row["time"])
    if "runs" in row:
        parts.append("%d runs, +%.1f%% FLOPs" % (row["runs"], row["extra_pct"]))
    if "planning_s" in row:
        parts.append("capture %.2f s, planning %.2f s" % (row["capture_s"], row["planning_s"]))
    return ", ".join(parts) + " (%.0f s)" % row["seconds"]


def bench_model(rec, name, batch, dim, args):
    base = {"model": name, "batch": batch, "dim": dim}
    model, x, seq = models.build(name, batch, dim)
    assert same_output(model, seq, x), "%s: the Sequential's output differs from the model's" % name
    rec.emit(dict(base, kind="check", variant="sequential", pieces=len(seq), same=True))
    plain = rec.variant(base, "plain", "plain", lambda: measured(model, x, args.repeat))
    if "peak" not in plain:
        return
    fits = [rec.variant(base, "memplan 1/%d" % f, "memplan",
                        lambda f=f: fit_row(model, x, plain["peak"] // f, args),
                        {"fraction": f, "budget": plain["peak"] // f})
            for f in FRACTIONS]
    ks, skipped = segment_counts(len(seq), fits)
    for k in ks:
        rec.variant(base, "checkpoint_sequential k=%d" % k, "segments",
                    lambda k=k: dict(measured(Segmented(seq, k), x, args.repeat), segments=k,
                                     checkpointed=(k - 1) * (len(seq) // k), pieces=len(seq)))
    for k, why in skipped.items():
        rec.emit(dict(base, kind="skipped", variant="checkpoint_sequential k=%d" % k, why=why))


def run_plan_target(rec, sizes, args):
    name, batch, dim = PLAN_TARGET
    if args.quick or name not in sizes or sizes[name] == (batch, dim):
        return
    rec.variant({"model": name, "batch": batch, "dim": dim},
                "planning only, batch %d" % batch, "plan-only",
                lambda: plan_only(name, batch, dim))


# ------------------------------------------------------------------ meta --

def sh(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, cwd=ROOT).stdout
    except OSError:
        return ""


def machine():
    lscpu = dict(line.split(":", 1) for line in sh(["lscpu"]).splitlines() if ":" in line)
    rev = sh(["git", "rev-parse", "--short", "HEAD"]).strip() or "unknown"
    if sh(["git", "status", "--porcelain"]).strip():
        rev += " + uncommitted changes (this checkout is shared)"
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 2.0 ** 20
    import torchvision
    return {"cpu": lscpu.get("Model name", "unknown").strip(),
            "cores": lscpu.get("CPU(s)", "?").strip(), "mem_gib": mem,
            "torch": torch.__version__, "torchvision": torchvision.__version__,
            "threads": torch.get_num_threads(), "rev": rev,
            "lib": os.environ.get("MEMPLAN_LIB", "(default)"),
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "load_start": list(os.getloadavg())}


def parse_sizes(args):
    mode = "quick" if args.quick else "full"
    sizes = {m: models.SIZES[m][mode] for m in args.models}
    for spec in args.size:
        try:
            name, dims = spec.split("=")
            batch, dim = (int(v) for v in dims.lower().split("x"))
        except ValueError:
            raise SystemExit("bench_fit: --size wants MODEL=BATCHxDIM, not %r" % spec)
        if name not in sizes:
            raise SystemExit("bench_fit: --size names %r, not one of --models" % name)
        sizes[name] = (batch, dim)
    return sizes


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes; sanity checks fail the run")
    p.add_argument("--models", default=",".join(models.BUILD),
                   type=lambda s: [m for m in s.split(",") if m])
    p.add_argument("--size", action="append", default=[], help="MODEL=BATCHxDIM (repeatable)")
    p.add_argument("--repeat", type=int, default=3, help="timed steps per median (>= 3)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", help="JSON lines of every measurement")
    p.add_argument("--out", help="the Markdown (default docs/benchmarks-torch.md; "
                   "build-bench-torch/quick/benchmarks-torch.md with --quick)")
    p.add_argument("--command", help="the command line to print in the report")
    p.add_argument("--from-json", help="only write the Markdown from this run's JSON lines")
    args = p.parse_args(argv)
    unknown = [m for m in args.models if m not in models.BUILD]
    if unknown or args.repeat < 3:
        p.error("unknown model %s" % unknown if unknown else "--repeat must be at least 3")
    args.out = args.out or os.path.join(
        ROOT, "build-bench-torch/quick" if args.quick else "docs", "benchmarks-torch.md")
    return args


def main(argv):
    args = parse(argv)
    if args.from_json:
        report.write(report.load(args.from_json), args.out)
        return 0
    torch.set_num_threads(args.threads)
    sizes = parse_sizes(args)
    rec = Recorder(args.json)
    rec.emit(dict(machine(), kind="meta", quick=args.quick, repeat=args.repeat,
                  command=args.command or " ".join(["bench/torch/bench_fit.py"] + argv),
                  sizes=sizes, issue_sizes={m: models.SIZES[m]["full"] for m in sizes},
                  describe={m: models.describe(m, *sizes[m]) for m in sizes},
                  fractions=FRACTIONS, native_nr=NATIVE_NR))
    for name, (batch, dim) in sizes.items():
        bench_model(rec, name, batch, dim, args)
    run_plan_target(rec, sizes, args)
    rec.emit({"kind": "end", "seconds": time.perf_counter() - START,
              "load_end": list(os.getloadavg()), "crashed": rec.crashed})
    report.write(rec.records, args.out)
    log("wrote %s" % args.out)
    return 1 if rec.crashed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
