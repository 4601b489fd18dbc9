"""The Markdown of bench/torch/bench_fit.py: every number and every verdict
line comes from the run's records; only the reading at the end
(bench/torch/notes.md) is hand-written, appended verbatim.

Runs since the interleaved timing (meta "timing": "rounds") time every
variant of a model in the same rounds (a "rounds" record of every step's
seconds); older runs timed each row alone (its own "time", a median): both
are read, the older without a noise floor (tolerance 0, said so).
"""

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
from run import write_atomic  # noqa: E402  (whole file or none: a temp file renamed)

MIB = float(1 << 20)
TIME_LIMIT = 1.4           # issue 14: a fitted step at most 1.4x the plain one
PLANNING_LIMIT = 2.0       # issue 14: under two seconds of planning (ResNet-50, batch 32)
TITLES = {"resnet50": "ResNet-50 (torchvision)", "vit_b_16": "ViT-B/16 (torchvision vit_b_16)",
          "lstm": "LSTM (4 stacked nn.LSTM, linear head)"}
TIMED = ("plain", "memplan", "segments", "memplan-eq")


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write(records, path):
    write_atomic(path, render(records))


def mib(b):
    return "%.1f" % (b / MIB)


def yes(flag):
    return "yes" if flag else "no"


def pct(v):
    return "%.1f%%" % (100.0 * v)


# ---------------------------------------------------------------- timing --

def noise_floor(times, a="plain", b="plain again"):
    """The relative tolerance a comparison of two medians of this run
    needs, from the same module timed twice per round: the larger of
    |median(b) / median(a) - 1| and the median over rounds of
    |b_r / a_r - 1| (one pair's typical deviation: a difference of medians
    this small is the noise of identical work).  None without both."""
    ta, tb = times.get(a) or [], times.get(b) or []
    if not ta or not tb:
        return None
    pairs = [abs(y / x - 1.0) for x, y in zip(ta, tb)]
    return max(abs(statistics.median(tb) / statistics.median(ta) - 1.0),
               statistics.median(pairs))


class Group:
    """One model at one size (section "main", or "issue" for the issue's
    sizes): its rows, and the times of each round set ("main", "equal")."""

    def __init__(self, section, model):
        self.section, self.model = section, model
        self.rows, self.sets, self.threads = [], {}, None

    def time(self, row, name="main"):
        """(median, min, max) seconds of a row's steps in a round set; an
        old record's own median (no spread) where the run had no rounds."""
        rounds = self.sets.get(name)
        if rounds is None:
            return (row["time"], None, None) if name == "main" and "time" in row else None
        return stats(rounds["times"].get(row["variant"]))

    def paired(self, a, b, name="main"):
        """a against b where both were timed in the same rounds: (the median
        over rounds of a_r / b_r, rounds in which a was slower, rounds);
        drift in load moves both steps of a round alike and drops out of
        the ratio, which a ratio of medians keeps.  Old records: (median a
        / median b, None, None)."""
        rounds = self.sets.get(name)
        ta = rounds["times"].get(a["variant"]) if rounds else None
        tb = rounds["times"].get(b["variant"]) if rounds else None
        if not ta or not tb or len(ta) != len(tb):
            return self.time(a, name)[0] / self.time(b, name)[0], None, None
        r = [x / y for x, y in zip(ta, tb)]
        return statistics.median(r), sum(x > 1.0 for x in r), len(r)

    def noise(self, name="main"):
        rounds = self.sets.get(name)
        return noise_floor(rounds["times"]) if rounds else None

    def plain(self):
        return next((r for r in self.rows if r["kind"] == "plain" and "peak" in r), None)

    def of(self, kind):
        return [r for r in self.rows if r["kind"] == kind]


def groups(records):
    out = {}
    for r in records:
        if "model" not in r or r.get("kind") == "plan-only":
            continue
        g = out.setdefault((r.get("section", "main"), r["model"]),
                           Group(r.get("section", "main"), r["model"]))
        if r["kind"] == "rounds":
            g.sets[r["set"]] = r
        elif r["kind"] == "threads":
            g.threads = r
        else:
            g.rows.append(r)
    return out


def stats(times):
    return (statistics.median(times), min(times), max(times)) if times else None


def spread(t):
    """'3.41 s [3.30-3.52]' (median [min-max]), or '3.41 s' for an old
    record's median alone."""
    if t is None:
        return "not timed"
    return "%.2f s" % t[0] + (" [%.2f-%.2f]" % t[1:] if t[1] is not None else "")


# ------------------------------------------------------------- sections --

def header(meta, end):
    # a run stopped before its end has no end record: its length is unknown
    took = "in %.1f minutes" % (end["seconds"] / 60.0) if end else \
        "(stopped before its end: the sections missing below were not run)"
    load_end = " ".join("%.2f" % v for v in end["load_end"]) if end else "?"
    impl = ("torch's own, use_reentrant=False" if meta["native_nr"] else
            "torch %s's checkpoint_sequential has no use_reentrant argument (2.0 added it), "
            "so the benchmark runs its code with the non-reentrant checkpoint "
            "(`Segmented` in bench_fit.py): the same segments" % meta["torch"])
    rounds = meta.get("timing") == "rounds"
    threads = ("%d for every model (--threads)" % meta["threads"] if meta.get("threads") else
               "per model, the faster plain step of %s threads (below; torch's own default "
               "here: %d)" % (" and ".join(map(str, meta["thread_counts"])),
                              meta["default_threads"])) if rounds else "%d" % meta["threads"]
    if rounds:
        timing = (
            "Step time: after every variant of a model is built, all of them are timed in the "
            "same %d rounds (bench/torch/timing.py): one warm-up step of each, then per round "
            "one training step of each in turn, the order rotated by one per round%s, gradients "
            "zeroed before each step as `memplan.torch.measure_time` does. A row's step is the "
            "median of its %d steps, [min-max] beside it. The plain step is timed twice per "
            "round ('plain' and 'plain again', apart in the order): their difference is the "
            "run's noise floor, the tolerance of every comparison below. memplan is compared "
            "with a checkpoint_sequential row per round: the median over rounds of memplan's "
            "step / the row's step in the same round (load that drifts moves both alike)."
            % (meta["repeat"], " and reversed every other round" if meta.get("order") else
               " (this run did not yet reverse it every other round)", meta["repeat"]))
    else:
        timing = ("Step time: `memplan.torch.measure_time`, the median of %d timed steps after "
                  "one warm-up, each row timed alone, one after another (a run from before "
                  "the interleaved timing: no spread, no noise floor)." % meta["repeat"])
    out = [
        "# memplan.torch.fit on real PyTorch: ResNet-50, ViT-B/16, LSTM (issue 14's targets)",
        "",
        "Generated by `%s` on %s %s; do not edit by hand (the reading at the end "
        "is `bench/torch/notes.md`, appended verbatim)." % (meta["command"], meta["date"], took),
        "",
        "- machine: %s, %s cores (lscpu), %.1f GiB; torch %s, torchvision %s; torch threads: "
        "%s" % (meta["cpu"], meta["cores"], meta["mem_gib"], meta["torch"], meta["torchvision"],
                threads),
        "- load average at the start: %s; at the end: %s (the machine was shared: times are "
        "noisy)" % (" ".join("%.2f" % v for v in meta["load_start"]), load_end),
        "- memplan revision %s; libmemplan `%s`" % (meta["rev"], meta["lib"])]
    if not rounds:
        out.append("- 'load' in the tables: the 1-minute load average when the row was "
                   "measured; rows measured under load > 2 time more than the work")
    return out + [
        "",
        "Peak: `memplan.torch.measure_peak`, the most bytes torch's CPU allocator held during "
        "one training step (forward, softmax cross-entropy, backward; after a warm-up step) above "
        "what was live when it began: parameters and their (zeroed) gradients are not in it. "
        "%s memplan rows: `memplan.torch.fit(model, x, budget)` with budget = "
        "plain peak / 3 (the issue's target) and / 2; their peak is fit's own measured step "
        "(FitResult.measured_peak), their time that of the returned module. "
        "checkpoint_sequential: on an nn.Sequential of the model's pieces (bench/torch/models.py; "
        "checked to compute the model's output), %s: k segments of len // k pieces are "
        "checkpointed except the last, which runs plainly and holds the remainder; k = 2, 4, 8 "
        "and, in runs since the interleaved timing, one more than each fit plan's runs (as many "
        "checkpointed segments as the plan has runs; before: k = the plan's runs). 'Extra FLOPs' "
        "is the planner's estimate of recomputation over one forward pass; 'recomputed fwd s %%' "
        "the forward seconds fit's plan recomputes, as measured per node at capture, over one "
        "forward pass (what fit ranks by). fit is called with exact=False (nn.LSTMs may be "
        "split over time chunks, a plan of the model as written preferred where one fits; no "
        "other model is affected). 'N runs (M nested)': M runs checkpointed again inside the N; "
        "'checkpoint_sequential's shape': fit's plan is one checkpoint_sequential makes on some "
        "segmentation of the model's modules; 'time chunks': the returned module runs its LSTMs "
        "over time chunks." % (timing, impl),
        ""]


def sizes_table(meta):
    out = ["| model | size run | issue's size | |", "|---|---|---|---|"]
    for m, size in meta["sizes"].items():
        issue = meta["issue_sizes"][m]
        note = "the issue's size" if list(size) == list(issue) else (
            "quick smoke test" if meta["quick"] else "reduced for time (see the reading)")
        if meta.get("issue_run") and list(size) != list(issue):
            note += "; also run at the issue's size (plain and 1/3, below)"
        out.append("| %s | %s | batch %d, %s %d | %s |" % (
            m, meta["describe"][m], issue[0], "T =" if m == "lstm" else "side", issue[1], note))
    return out + [""]


def peak_cell(r):
    if "peak" in r:
        return mib(r["peak"])
    if "min_peak" in r:
        return "BudgetError (least %s)" % mib(r["min_peak"])
    return "error"


def _plan_kind(r):
    """', checkpoint_sequential's shape' / ', time chunks' for fit rows that say so."""
    out = ", checkpoint_sequential's shape" if r.get("plan_kind") == "sequential" else ""
    chunks = r.get("chunked")
    if chunks is True:                  # runs before the number was kept
        return out + ", time chunks"
    return out + (f", {chunks} time chunks" if chunks else "")


def what_cell(r):
    if "runs" in r:
        return "%d runs%s%s" % (r["runs"], " (%d nested)" % r["nested"] if r.get("nested") else "",
                                _plan_kind(r))
    return "%d of %d pieces" % (r["checkpointed"], r["pieces"]) if "checkpointed" in r else ""


def row_cells(g, r, plain, name="main"):
    has = "peak" in r
    t, tp = g.time(r, name), g.time(plain, name)
    extra = "%.1f" % r["extra_pct"] if "extra_pct" in r else ("0.0" if r["kind"] == "plain" else "")
    cells = [r["variant"], peak_cell(r) if r["kind"] != "again" else "(plain's)",
             "%.2f" % (r["peak"] / plain["peak"]) if has else "",
             "%.2f" % t[0] if t else ""] + (
                 ["%.2f-%.2f" % t[1:] if t else ""] if g.sets else []) + [
             "%.2f" % (t[0] / tp[0]) if t and tp else "", extra, what_cell(r)]
    fits = [yes(has and r["peak"] <= plain["peak"] // f) if r["kind"] != "again" else ""
            for f in (3, 2)]
    return cells + fits + (["%.1f" % r["load"] if "load" in r else ""] if not g.sets else [])


def model_table(g, rows, plain, name="main"):
    # old runs: no spread, and the load when each row was timed alone
    spread_col = (" min-max s |", "---:|") if g.sets else ("", "")
    load_col = ("", "") if g.sets else (" load |", "---:|")
    head = ("| variant | peak MiB | / plain | step s |%s / plain | extra FLOPs %% "
            "| checkpointed | fits 1/3 | fits 1/2 |%s" % (spread_col[0], load_col[0]))
    rule = "|---|---:|---:|---:|%s---:|---:|---|---|---|%s" % (spread_col[1], load_col[1])
    out = [head, rule]
    for r in rows:
        if "peak" in r or "min_peak" in r or r.get("error") or r["kind"] == "again":
            out.append("| " + " | ".join(row_cells(g, r, plain, name)) + " |")
    return out + [""]


def with_again(g, rows, name="main"):
    """rows with a 'plain again' row after the plain one where the round
    set has one."""
    rounds = g.sets.get(name)
    if not rounds or not rounds["times"].get("plain again"):
        return rows
    i = next((i + 1 for i, r in enumerate(rows) if r["kind"] == "plain"), 0)
    return rows[:i] + [{"variant": "plain again", "kind": "again"}] + rows[i:]


def threads_lines(g):
    """The thread count this model's steps ran at, and why."""
    th = g.threads
    if th is None:
        return []
    if th.get("forced"):
        return ["- threads: %d (--threads)" % th["chosen"]]
    if "times" not in th:
        return ["- threads: %d (the only count tried)" % th["chosen"]]
    return ["- threads: %d, every step of this model (the plain step, median [min-max] of %d "
            "interleaved rounds: %s)" % (th["chosen"], th["rounds"], ", ".join(
                "%s %s" % (label.split(", ")[1], spread(stats(th["times"][label])))
                for label in th["order"]))]


def rounds_lines(g, name="main"):
    """How a round set ran, and its noise floor."""
    out = []
    rounds = g.sets.get(name)
    if rounds is None:
        return out
    out.append("- %d rounds of %d variants, %.0f s; load average %.2f at the start, %.2f at "
               "the end" % (rounds["rounds"], len(rounds["order"]), rounds["seconds"],
                            rounds["load"][0], rounds["load"][1]))
    tol = noise_floor(rounds["times"])
    if tol is not None:
        a, b = (statistics.median(rounds["times"][k]) for k in ("plain", "plain again"))
        out.append("- noise floor: plain %.2f s, plain again %.2f s (ratio %.3f); per round "
                   "the two differ by %s (median); tolerance **%s**" % (
                       a, b, b / a, pct(statistics.median(
                           [abs(y / x - 1) for x, y in zip(rounds["times"]["plain"],
                                                          rounds["times"]["plain again"])])),
                       pct(tol)))
    out += ["- %s: its step failed in the rounds: `%s`" % kv for kv in rounds["errors"].items()]
    return out


def fit_details(rows):
    fitted = [r for r in rows if "planned" in r]
    out = ["| fit | budget MiB | planned MiB | measured MiB | fit's plain MiB | candidates "
           "| modules measured | steps | recomputed fwd s % | capture s | planning s "
           "| measuring s |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"] if fitted else []
    for r in fitted:
        out.append("| %s | %s | %s | %s | %s | %d | %d | %s | %s | %.2f | %.2f | %.1f |" % (
            r["variant"], mib(r["budget"]), mib(r["planned"]), mib(r["peak"]),
            mib(r["fit_plain_peak"]), r["candidates"], r["attempts"], r.get("steps", ""),
            "%.0f" % r["extra_time_pct"] if "extra_time_pct" in r else "",
            r["capture_s"], r["planning_s"], r["measuring_s"]))
    errors = ["- %s: `%s`" % (r["variant"], r["error"]) for r in rows if "min_peak" in r]
    return out + ([""] if out else []) + errors + ([""] if errors else [])


# -------------------------------------------------------------- verdicts --

def kname(s):
    return "k=%d" % s["segments"]


def per_round(p):
    """'1.03x (slower in 3 of 5 rounds)' from Group.paired."""
    return "%.2fx" % p[0] + (" (slower in %d of %d rounds)" % p[1:] if p[1] is not None else "")


def slower(p, tol):
    """From Group.paired: "yes" when the median round's ratio is beyond
    tol and memplan was slower in every round; "unsure" when beyond tol
    but faster in some round (not shown slower: the rule fit itself uses to
    call two steps indistinguishable, a sign test that five rounds pass at
    p = 1/32); "no" within tol.  Old records (no rounds): beyond tol is
    "yes"."""
    if p[0] <= 1 + tol:
        return "no"
    return "yes" if p[1] is None or p[1] == p[2] else "unsure"


def same_shape(fit, seg):
    """fit's plan is checkpoint_sequential's shape with k - 1 runs and the
    same measured peak to the byte: most likely the very plan of the row."""
    return (fit.get("plan_kind") == "sequential" and fit.get("runs") == seg["segments"] - 1
            and fit["peak"] == seg["peak"])


def against_segments(g, fit, segs, tol):
    """The issue's third target, read as: where memplan holds as much
    memory as a checkpoint_sequential row or more, its step is no slower
    than that row's by more than tol, per round (Group.paired).  (text,
    holds)."""
    timed = [s for s in segs if "peak" in s and g.time(s)]
    rivals = [s for s in timed if s["peak"] <= fit["peak"]]
    if not rivals:
        least = min(timed, key=lambda s: s["peak"], default=None)
        return ("no checkpoint_sequential row runs in as little memory" +
                (" (least: %s, %s MiB)" % (kname(least), mib(least["peak"])) if least else "") +
                ": holds vacuously"), True

    paired = [g.paired(fit, s) for s in rivals]

    def cite(s, p):
        return "%s (%s MiB, %s: memplan %s%s)" % (
            kname(s), mib(s["peak"]), spread(g.time(s)), per_round(p),
            "; the same plan: %s's shape, same peak to the byte" % kname(s)
            if same_shape(fit, s) else "")
    lost = [s for s, p in zip(rivals, paired) if slower(p, tol) == "yes"]
    unsure = [s for s, p in zip(rivals, paired) if slower(p, tol) == "unsure"]
    return ("rows at memplan's peak or below: %s; %s" % (
        ", ".join(cite(s, p) for s, p in zip(rivals, paired)),
        "**slower** than %s beyond the tolerance in every round: fails" % ", ".join(
            kname(s) for s in lost) if lost else
        "beyond the tolerance against %s but faster in some round: not shown slower, "
        "holds" % ", ".join(kname(s) for s in unsure) if unsure else
        "no slower within the tolerance: holds")), not lost


def fastest_within(g, fit, segs, budget):
    """The fastest checkpoint_sequential row that fits budget, and memplan's
    step beside it."""
    ok = sorted((s for s in segs if "peak" in s and g.time(s) and s["peak"] <= budget),
                key=lambda s: g.time(s)[0])
    if not ok:
        least = min((s for s in segs if "peak" in s), key=lambda s: s["peak"], default=None)
        return ("no checkpoint_sequential row fits the budget" +
                (" (least: %s, %s MiB)" % (kname(least), mib(least["peak"])) if least else ""))
    s, mine = ok[0], g.time(fit) if "peak" in fit else None
    return ("fastest checkpoint_sequential row within the budget: %s (%s MiB, %s)%s" % (
        kname(s), mib(s["peak"]), spread(g.time(s)),
        "; memplan %s = %.2fx it" % (spread(mine), mine[0] / g.time(s)[0]) if mine else ""))


def strictly(g, fit, segs, tol):
    """The reading this report does not judge by, for information: rows
    holding more memory than memplan and faster beyond the tolerance."""
    tf = g.time(fit)[0]
    faster = [s for s in segs if "peak" in s and g.time(s) and s["peak"] > fit["peak"]
              and tf > g.time(s)[0] * (1 + tol)]
    if not faster:
        return []
    return ["  (for information, not a target: faster rows that hold more memory than memplan: "
            "%s.)" % ", ".join("%s (%s MiB, %.2f s)" % (kname(s), mib(s["peak"]),
                                                       g.time(s)[0]) for s in faster)]


def tolerance(g, name="main"):
    tol = g.noise(name)
    return (tol, "tolerance %s" % pct(tol)) if tol is not None else (
        0.0, "no noise floor in this run: tolerance 0")


def verdict(g, fit):
    """Lines for one fit row: budget, time, checkpoint_sequential; and
    whether all hold."""
    segs = g.of("segments")
    head = "memplan 1/%d (budget %s MiB)" % (fit["fraction"], mib(fit["budget"]))
    if "peak" not in fit or g.time(fit) is None or g.time(g.plain()) is None:
        why = ("BudgetError" if "min_peak" in fit else "not timed" if "peak" in fit else
               "crashed (`%s`)" % fit.get("error"))
        return ["%s: %s -- **not met**; %s." % (head, why, fastest_within(g, fit, segs,
                                                                          fit["budget"]))], False
    tol, tol_text = tolerance(g)
    ratio = g.time(fit)[0] / g.time(g.plain())[0]
    near = (" (not decisive: %.1fx lies within the tolerance of it)" % TIME_LIMIT
            if abs(ratio / TIME_LIMIT - 1) <= tol else "")
    if g.section == "issue":
        vs, vs_ok = "not run at this size", True
    else:
        vs, vs_ok = against_segments(g, fit, segs, tol)
    ok = fit["fits"] and ratio <= TIME_LIMIT and vs_ok
    lines = ["%s: measured %s MiB -- within budget: %s; step %s = %.2fx plain -- <= %.1fx: "
             "%s%s; against checkpoint_sequential (%s): %s. **%s**" % (
                 head, mib(fit["peak"]), yes(fit["fits"]), spread(g.time(fit)), ratio,
                 TIME_LIMIT, yes(ratio <= TIME_LIMIT), near, tol_text, vs,
                 "all hold" if ok else "not all hold")]
    if g.section != "issue":
        lines.append("  (%s.)" % fastest_within(g, fit, segs, fit["budget"]))
        lines += strictly(g, fit, segs, tol)
    return lines, ok


def equal_verdict(g, fit):
    """--equal-memory: fit at a checkpoint_sequential row's measured peak,
    timed beside it in rounds of their own: no slower within that set's
    tolerance."""
    seg = next((s for s in g.of("segments") if s["variant"] == fit["equal_to"]), None)
    head = "memplan at %s's peak (%s MiB)" % (fit["equal_to"].split()[-1], mib(fit["budget"]))
    if "peak" not in fit:
        return "%s: %s -- **not met**" % (head, "BudgetError (least %s MiB)" % mib(
            fit["min_peak"]) if "min_peak" in fit else "crashed (`%s`)" % fit.get("error"))
    tm, ts = g.time(fit, "equal"), g.time(seg, "equal") if seg else None
    if tm is None or ts is None:
        return "%s: measured %s MiB; not timed beside its row" % (head, mib(fit["peak"]))
    tol, tol_text = tolerance(g, "equal")
    p = g.paired(fit, seg, "equal")
    verdict = {"no": "no slower: **holds**",
               "unsure": "beyond the tolerance but faster in some round: not shown slower, "
                         "**holds**",
               "yes": "slower in every round: **fails**"}[slower(p, tol)]
    return ("%s: measured %s MiB, step %s against %s's %s: per round %s (%s)%s: %s" % (
        head, mib(fit["peak"]), spread(tm), kname(seg), spread(ts), per_round(p), tol_text,
        "; the same plan: %s's shape, same peak to the byte" % kname(seg)
        if same_shape(fit, seg) else "", verdict))


def planning_lines(records):
    out = []
    for r in records:
        if r.get("model") == "resnet50" and "planning_s" in r and r["batch"] == 32:
            out.append("- ResNet-50 batch %d, %s: planning %.2f s (capture, one forward pass "
                       "recorded: %.2f s) -- under %.0f s of planning: %s" % (
                           r["batch"], r["variant"], r["planning_s"], r["capture_s"],
                           PLANNING_LIMIT, yes(r["planning_s"] < PLANNING_LIMIT)))
    return out


def targets(gs, records):
    out = ["## Issue 14's targets, verdicts generated from the numbers", "",
           "At budget = plain peak / 3 (the 1/2 budget is shown the same way): (1) the measured "
           "peak within the budget; (2) the step at most %.1fx the plain step; (3) \"never "
           "slower than checkpoint_sequential at the same or higher memory\", read as: for "
           "every checkpoint_sequential row whose measured peak is at most memplan's, "
           "the median over rounds of memplan's step / that row's step in the same round at most "
           "1 + tolerance, or beyond it but with memplan faster in some round (not shown slower: the "
           "rule fit uses to call two steps indistinguishable). The tolerance is "
           "the model's noise floor (under each model's table): the plain step timed twice per "
           "round, the larger of |median(plain again) / median(plain) - 1| and the median over "
           "rounds of |plain again / plain - 1|. Where no checkpoint_sequential row runs in as "
           "little memory as memplan, (3) holds vacuously. The fastest checkpoint_sequential "
           "row within the same budget is shown beside each. Runs from before the interleaved timing "
           "have no noise floor: tolerance 0." % TIME_LIMIT, ""]
    for (section, m), g in gs.items():
        if section != "main":
            continue
        if g.plain() is None:
            out.append("- %s: the plain step was not measured." % m)
            continue
        for fit in g.of("memplan"):
            lines, _ = verdict(g, fit)
            out += ["- %s, %s" % (m, lines[0])] + lines[1:]
        out += ["- %s, %s" % (m, equal_verdict(g, fit)) for fit in g.of("memplan-eq")]
    issue = [(m, g) for (section, m), g in gs.items() if section == "issue"]
    if issue:
        out += ["", "At the issue's sizes (plain and 1/3 only; checkpoint_sequential not run):", ""]
    for m, g in issue:
        for fit in g.of("memplan"):
            lines, _ = verdict(g, fit)
            out += ["- %s at %s, %s" % (m, describe_row(fit), lines[0])] + lines[1:]
        if g.plain() is None:
            out.append("- %s at the issue's size: the plain step was not measured." % m)
    return out + planning_lines(records) + [""]


def describe_row(r):
    return "T=%d, batch %d" % (r["dim"], r["batch"]) if r["model"] == "lstm" else \
        "batch %d, side %d" % (r["batch"], r["dim"])


# ------------------------------------------------------------------ page --

def equal_table(g):
    """--equal-memory: each checkpoint_sequential row on the front beside
    fit at its peak, times from their own rounds."""
    eq = g.of("memplan-eq")
    if not eq:
        return []
    out = ["### fit at the peaks of checkpoint_sequential's Pareto front (--equal-memory)", "",
           "For each checkpoint_sequential row that no other row beats on both peak and step "
           "(above 1/3 of the plain peak): fit with budget = that row's measured peak, then the "
           "plain step, those rows and these modules timed in rounds of their own.", ""]
    out += rounds_lines(g, "equal")
    rows = []
    for fit in eq:
        seg = next((s for s in g.of("segments") if s["variant"] == fit["equal_to"]), None)
        if seg:
            rows += [seg, fit]
    return out + [""] + model_table(g, with_again(g, [g.plain()] + rows, "equal"), g.plain(),
                                    "equal") + fit_details(eq)


def model_section(g, meta):
    plain, m = g.plain(), g.model
    check = next((r for r in g.rows if r["kind"] == "check"), None)
    if g.section == "issue":
        title = "## At the issue's size: %s, %s" % (TITLES.get(m, m), meta["describe_issue"][m])
    else:
        title = "## %s: %s" % (TITLES.get(m, m), meta["describe"][m])
    out = [title, ""]
    if check:
        out += ["The Sequential of %d pieces computes the model's output (checked with "
                "torch.allclose before measuring)." % check["pieces"], ""]
    if plain is None:
        return out + ["The plain step was not measured: %s" % g.rows[-1].get("error", "?"), ""]
    out += model_table(g, with_again(g, [r for r in g.rows if r["kind"] in TIMED[:3]]), plain)
    timing_text = threads_lines(g) + rounds_lines(g)
    out += timing_text + ([""] if timing_text else [])
    out += fit_details(g.of("memplan"))
    tail = ["- %s skipped: %s" % (r["variant"], r["why"]) for r in g.of("skipped")]
    tail += ["- %s crashed: `%s`" % (r["variant"], r["error"]) for r in g.rows if r.get("crashed")]
    return out + tail + ([""] if tail else []) + equal_table(g)


def plan_only_section(records):
    rows = [r for r in records if r.get("kind") == "plan-only"]
    if not rows:
        return []
    out = ["## Planning time at the issue's size", "",
           "fit() with no measured step (verify=False) and an unbounded budget: the planner "
           "evaluates every candidate whatever the budget, so this is the same capture and "
           "planning work as a real fit at this size.", ""]
    for r in rows:
        out.append("- %s %s: " % (r["model"], r["variant"]) + (
            "capture %.2f s, planning %.2f s, %d candidates" % (
                r["capture_s"], r["planning_s"], r["candidates"]) if "planning_s" in r
            else "`%s`" % r.get("error")))
    return out + [""]


def render(records):
    meta = next(r for r in records if r.get("kind") == "meta")
    end = next((r for r in records if r.get("kind") == "end"), None)
    gs = groups(records)
    out = header(meta, end) + sizes_table(meta) + targets(gs, records)
    for g in gs.values():
        out += model_section(g, meta)
    out += plan_only_section(records)
    notes = os.path.join(HERE, "notes.md")
    if os.path.exists(notes) and not meta["quick"]:
        with open(notes) as f:
            out += [f.read().rstrip("\n")]
    return "\n".join(out) + "\n"
