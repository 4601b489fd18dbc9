"""bench/torch/bench_fit.py -- issue 14's targets for memplan.torch.fit,
measured on the real CPU next to the plain training step and
torch.utils.checkpoint's checkpoint_sequential.

    /usr/bin/python3 bench/torch/bench_fit.py [--quick] [--models M,M]
        [--size MODEL=BATCHxDIM]... [--repeat R] [--threads N] [--json FILE]
        [--out MD] [--equal-memory] [--issue-sizes] [--command TEXT]
    /usr/bin/python3 bench/torch/bench_fit.py --from-json FILE [--out MD]

Per model (models.py): the torch thread count (the plain step timed at 1
and at the default count in a few interleaved rounds, the faster kept for
everything else; --threads N forces one); the plain step's peak
(memplan.torch.measure_peak); fit() at budgets of 1/3 and 1/2 of the plain
peak (BudgetError is a result; the peak is fit's own measured step);
checkpoint_sequential at k = 2, 4, 8 and at k = runs + 1 for each fit's
plan (as many checkpointed segments as the plan has runs; measure_peak).  Then every variant built is timed in the same R rounds
(timing.py; R = --repeat), the plain step twice per round ("plain" and
"plain again": the run's noise floor).  --equal-memory: fit again at the
measured peak of each checkpoint_sequential row on the Pareto front above
1/3 of the plain peak, timed in rounds of its own beside those rows.
--issue-sizes: the plain step and fit at 1/3 at the issue's sizes
(models.SIZES[m]["full"]), in a section of their own.

One JSON line per measurement goes to --json as soon as it is made; the
Markdown (report.py) is written at the end, whole or not at all.
--from-json rewrites the Markdown from a run's JSON lines (e.g. after
editing notes.md).  --quick: small sizes, and the sanity checks (a fit's
measured peak within its budget, every variant timed) fail the run.
The process's address space is capped at 80% of the machine's memory, so
that a runaway allocation crashes one variant rather than the run, and
each model's section ends by giving freed memory back (its resident size
is logged).
Exit status: 0 every variant measured, 1 some crashed (listed), 2 usage.
"""

import argparse
import contextlib
import datetime
import inspect
import json
import os
import statistics
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
import timing  # noqa: E402

FRACTIONS = (3, 2)         # fit budgets: plain peak // f
SEGMENTS = (2, 4, 8)       # checkpoint_sequential segment counts always run
PLAN_TARGET = ("resnet50", 32, 224)   # the issue's planning-time target
PROBE_ROUNDS = 3           # rounds of the plain step per thread count tried
DEFAULT_THREADS = torch.get_num_threads()   # torch's own choice, before any set
# the thread counts tried per model: 1 and one per core this process may run
# on (torch's own default is not that everywhere: 1 on this VM's OpenMP)
THREAD_COUNTS = sorted({1, len(os.sched_getaffinity(0))})
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


def fit_row(model, x, budget, args, keep):
    """fit's record at budget; its module goes to keep["module"]."""
    try:
        module, r = mpt.fit(model, x, budget, exact=False)
    except mpt.BudgetError as e:       # a result: the smallest peak fit reached
        return {"fits": False, "error": str(e), "min_peak": e.min_peak}
    assert same_output(model, module, x), "the fitted module's output differs from the model's"
    assert not args.quick or r.measured_peak <= budget, \
        "fit returned a module measured at %d bytes over its budget %d" % (r.measured_peak, budget)
    keep["module"] = module
    return dict(peak=r.measured_peak, fits=r.measured_peak <= budget, planned=r.planned_peak,
                extra_pct=100.0 * r.extra_flops / r.forward_flops, runs=r.checkpointed,
                candidates=r.candidates, attempts=r.attempts, fit_plain_peak=r.plain_peak,
                capture_s=r.capture_seconds, planning_s=r.planning_seconds,
                measuring_s=r.measuring_seconds, nested=r.nested, steps=r.steps,
                extra_time_pct=100.0 * r.extra_seconds / r.forward_seconds,
                chunked=r.chunked, plan_kind=r.kind, trials=[t._asdict() for t in r.trials],
                fit_time=r.measured_seconds, fit_plain_time=r.plain_seconds,
                fit_plain_planned=r.plain_planned)


def segment_counts(pieces, fit_rows):
    """(k to run, {k: why not}) for k in SEGMENTS and, per fit's plan,
    k = runs + 1: checkpoint_sequential checkpoints all but its last
    segment, so that k has as many checkpointed segments as the plan has
    runs (the k whose shape fit's "sequential" plans take)."""
    wanted = list(SEGMENTS) + [r["runs"] + 1 for r in fit_rows if r.get("runs")]
    run, skipped = [], {}
    for k in dict.fromkeys(wanted):
        if k > pieces:
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

    def __init__(self, path, quick):
        self.f = open(path, "w") if path else None
        self.records, self.crashed, self.quick = [], 0, quick

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
        row = dict(base, variant=label, kind=kind, seconds=time.perf_counter() - t0,
                   load=os.getloadavg()[0], **(fields or {}), **row)
        self.emit(row)
        log("%s: %s: %s" % (base["model"], label, summary(row)))
        return row

    def rounds(self, base, name, model, entries, x, n, kind="rounds", extra=None):
        """Times entries [(label, module, threads)] in n interleaved rounds
        (timing.interleaved); one record of every step's seconds, with the
        fields extra(timings) adds."""
        t0, load0 = time.perf_counter(), os.getloadavg()[0]
        log("%s: %s, %d rounds of %s ..." % (base["model"], name, n,
                                              ", ".join(e[0] for e in entries)))
        out = timing.interleaved(model, entries, x, n)
        rec = dict(base, kind=kind, set=name, rounds=n, seconds=time.perf_counter() - t0,
                   load=[load0, os.getloadavg()[0]], **out, **(extra(out) if extra else {}))
        self.emit(rec)
        self.crashed += len(out["errors"])
        assert not self.quick or not out["errors"], "%s: steps failed in the rounds: %s" % (
            base["model"], out["errors"])
        log("%s: %s: %s (%.0f s)" % (base["model"], name, "; ".join(
            "%s %.2f s" % (k, statistics.median(v)) for k, v in out["times"].items() if v),
            rec["seconds"]))
        return rec


def summary(row):
    if row.get("error"):
        return row["error"].splitlines()[0][:160]
    parts = []
    if "peak" in row:
        parts.append("peak %.1f MiB" % (row["peak"] / 2.0 ** 20))
    if "fit_time" in row:
        parts.append("fit's step %.2f s" % row["fit_time"])
    if "runs" in row:
        parts.append("%d runs, +%.1f%% FLOPs" % (row["runs"], row["extra_pct"]))
    if "planning_s" in row:
        parts.append("capture %.2f s, planning %.2f s" % (row["capture_s"], row["planning_s"]))
    return ", ".join(parts) + " (%.0f s)" % row["seconds"]


def with_plain_again(entries, model):
    """entries with "plain again" (the model once more) half-way down the
    list: the rotation keeps the cyclic order, so with four entries or more
    the two are never timed one right after the other."""
    mid = max(1, (len(entries) + 1) // 2)
    return entries[:mid] + [("plain again", model, None)] + entries[mid:]


def choose_threads(rec, base, model, x, args):
    """The thread count every step of this model runs at: --threads, or
    the faster plain step of THREAD_COUNTS in PROBE_ROUNDS rounds."""
    counts = THREAD_COUNTS
    if args.threads or len(counts) == 1:
        n = args.threads or counts[0]
        rec.emit(dict(base, kind="threads", chosen=n, forced=bool(args.threads)))
        return n
    label = {n: "plain, %d thread%s" % (n, "s" if n > 1 else "") for n in counts}

    def chosen(out):
        medians = {n: statistics.median(out["times"][label[n]])
                   for n in counts if out["times"][label[n]]}
        return {"forced": False, "counts": counts,
                "chosen": min(medians, key=medians.get) if medians else counts[-1]}

    probe = rec.rounds(base, "threads", model, [(label[n], model, n) for n in counts], x,
                       PROBE_ROUNDS, kind="threads", extra=chosen)
    log("%s: %d thread(s) for every step" % (base["model"], probe["chosen"]))
    return probe["chosen"]


def bench_model(rec, section, name, batch, dim, args):
    """Every row of one model at one size; section "issue" (the issue's
    sizes): the plain step and fit at 1/3 only."""
    base = {"model": name, "batch": batch, "dim": dim, "section": section}
    model, x, seq = models.build(name, batch, dim)
    assert same_output(model, seq, x), "%s: the Sequential's output differs from the model's" % name
    rec.emit(dict(base, kind="check", variant="sequential", pieces=len(seq), same=True))
    base["threads"] = choose_threads(rec, base, model, x, args)
    torch.set_num_threads(base["threads"])
    plain = rec.variant(base, "plain", "plain", lambda: {"peak": mpt.measure_peak(model, x)})
    if "peak" not in plain:
        return
    entries = [("plain", model, None)]
    fits = []
    for f in FRACTIONS if section == "main" else FRACTIONS[:1]:
        keep = {}
        fits.append(rec.variant(base, "memplan 1/%d" % f, "memplan",
                                lambda f=f, keep=keep: fit_row(model, x, plain["peak"] // f,
                                                               args, keep),
                                {"fraction": f, "budget": plain["peak"] // f}))
        if "module" in keep:
            entries.append((fits[-1]["variant"], keep["module"], None))
    segs = {}
    if section == "main":
        ks, skipped = segment_counts(len(seq), fits)
        for k in ks:
            label, module = "checkpoint_sequential k=%d" % k, Segmented(seq, k)
            row = rec.variant(base, label, "segments",
                              lambda k=k, module=module: dict(
                                  peak=mpt.measure_peak(module, x), segments=k,
                                  checkpointed=(k - 1) * (len(seq) // k), pieces=len(seq)))
            if "peak" in row:
                segs[label] = (row, module)
                entries.append((label, module, None))
        for k, why in skipped.items():
            rec.emit(dict(base, kind="skipped", variant="checkpoint_sequential k=%d" % k, why=why))
    done = rec.rounds(base, "main", model, with_plain_again(entries, model), x, args.repeat)
    if args.equal_memory and section == "main":
        equal_memory(rec, base, model, x, segs, done, plain["peak"] // FRACTIONS[0], args)


def pareto(rows, med):
    """The rows no other row beats on both peak and median step time."""
    def beats(o, s):
        return (o["peak"] <= s["peak"] and med[o["variant"]] <= med[s["variant"]]
                and (o["peak"] < s["peak"] or med[o["variant"]] < med[s["variant"]]))
    return [s for s in rows if not any(beats(o, s) for o in rows)]


def equal_memory(rec, base, model, x, segs, done, floor, args):
    """fit at the measured peak of every checkpoint_sequential row on the
    Pareto front above floor bytes, each timed beside its row in rounds of
    their own."""
    med = {k: statistics.median(v) for k, v in done["times"].items() if v}
    rows = [row for row, _ in segs.values() if row["variant"] in med]
    front = sorted((s for s in pareto(rows, med) if s["peak"] > floor), key=lambda s: s["peak"])
    entries = [("plain", model, None)]
    for s in front:
        keep = {}
        row = rec.variant(base, "memplan at %s's peak" % s["variant"], "memplan-eq",
                          lambda s=s, keep=keep: fit_row(model, x, s["peak"], args, keep),
                          {"budget": s["peak"], "equal_to": s["variant"]})
        entries.append((s["variant"], segs[s["variant"]][1], None))
        if "module" in keep:
            entries.append((row["variant"], keep["module"], None))
    if front:
        rec.rounds(base, "equal", model, with_plain_again(entries, model), x, args.repeat)


def run_plan_target(rec, sizes, args):
    name, batch, dim = PLAN_TARGET
    if (args.quick or args.issue_sizes or name not in sizes or sizes[name] == (batch, dim)):
        return
    torch.set_num_threads(args.threads or THREAD_COUNTS[-1])
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
    if sh(["git", "status", "--porcelain", "--untracked-files=no"]).strip():
        rev += " + uncommitted changes (this checkout is shared)"
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 2.0 ** 20
    import torchvision
    return {"cpu": lscpu.get("Model name", "unknown").strip(),
            "cores": lscpu.get("CPU(s)", "?").strip(), "mem_gib": mem,
            "torch": torch.__version__, "torchvision": torchvision.__version__,
            "default_threads": DEFAULT_THREADS, "thread_counts": THREAD_COUNTS, "rev": rev,
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
    p.add_argument("--repeat", type=int, default=5,
                   help="interleaved timing rounds, one step of each variant per round (>= 3)")
    p.add_argument("--threads", type=int,
                   help="torch threads for every model (default: per model, the faster "
                   "plain step of %s)" % " and ".join(map(str, THREAD_COUNTS)))
    p.add_argument("--equal-memory", action="store_true",
                   help="also fit at each Pareto-front checkpoint_sequential row's peak")
    p.add_argument("--issue-sizes", action="store_true",
                   help="also the plain step and fit at 1/3 at the issue's sizes")
    p.add_argument("--json", help="JSON lines of every measurement")
    p.add_argument("--out", help="the Markdown (default docs/benchmarks-torch.md; "
                   "build-bench-torch/quick/benchmarks-torch.md with --quick)")
    p.add_argument("--command", help="the command line to print in the report")
    p.add_argument("--from-json", help="only write the Markdown from this run's JSON lines")
    args = p.parse_args(argv)
    unknown = [m for m in args.models if m not in models.BUILD]
    if unknown:
        p.error("unknown model %s" % unknown)
    if args.repeat < 3:
        p.error("--repeat must be at least 3")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be at least 1")
    args.out = args.out or os.path.join(
        ROOT, "build-bench-torch/quick" if args.quick else "docs", "benchmarks-torch.md")
    return args


def cap_memory(share=0.8):
    """Address space capped at share of the machine's memory: a runaway
    allocation then fails inside one variant (a crashed row naming it)
    instead of the kernel's OOM killer ending the run (2026-11-28: killed
    at 24 GB resident in its last fit, which alone peaks at 4.6 GB)."""
    try:
        import resource
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = int(total * share)
        if hard == resource.RLIM_INFINITY or cap < hard:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


def release_memory():
    """What a finished model's variants held, given back to the system
    (glibc keeps freed heap pages; later sections then start lower)."""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def rss_mib():
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) // 1024 for l in f if l.startswith("VmRSS"))
    except (OSError, StopIteration):
        return None


def main(argv):
    args = parse(argv)
    if args.from_json:
        report.write(report.load(args.from_json), args.out)
        return 0
    cap_memory()
    sizes = parse_sizes(args)
    issue = {m: tuple(models.SIZES[m]["full"]) for m in sizes} if args.issue_sizes else {}
    rec = Recorder(args.json, args.quick)
    rec.emit(dict(machine(), kind="meta", quick=args.quick, repeat=args.repeat,
                  command=args.command or " ".join(["bench/torch/bench_fit.py"] + argv),
                  sizes=sizes, issue_sizes={m: models.SIZES[m]["full"] for m in sizes},
                  describe={m: models.describe(m, *sizes[m]) for m in sizes},
                  describe_issue={m: models.describe(m, *issue[m]) for m in issue},
                  fractions=FRACTIONS, native_nr=NATIVE_NR, timing="rounds",
                  order="rotated, reversed every other round",
                  threads=args.threads, probe_rounds=PROBE_ROUNDS,
                  equal_memory=args.equal_memory, issue_run=bool(issue)))
    for section, at in (("main", sizes), ("issue", issue)):
        for name, (batch, dim) in at.items():
            bench_model(rec, section, name, batch, dim, args)
            release_memory()
            log("%s: resident %s MiB after its %s section" % (name, rss_mib(), section))
    run_plan_target(rec, sizes, args)
    rec.emit({"kind": "end", "seconds": time.perf_counter() - START,
              "load_end": list(os.getloadavg()), "crashed": rec.crashed})
    report.write(rec.records, args.out)
    log("wrote %s" % args.out)
    return 1 if rec.crashed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
