"""The report of bench/remat/run (see that script): reads the JSON lines of
bench_remat and writes docs/benchmarks-remat.md with log-log SVG plots.

    /usr/bin/python3 bench/remat/report.py --json FILE [--out MD] [--img DIR]
        [--command TEXT] [--seconds S] [--notes FILE]

Plain standard library; the SVG is written by hand like bench/models/run.py.
Every number in the Markdown comes from the JSON lines; the reading at the
end (bench/remat/notes.md) is hand-written and appended verbatim.
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GIB = float(1 << 30)
MIB = float(1 << 20)

# the models benchmark's SVG helpers: escaping, and files written whole or not at all
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
from run import esc, write_atomic  # noqa: E402
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"]

# stage key -> (label in tables and plots, chen2016's name where it has one)
STAGES = [
    ("no-optimisation", "no optimisation"),
    ("inplace", "inplace"),
    ("sharing", "sharing"),
    ("none", "sharing, placed"),
    ("cheap", "drop bn-relu (cheap)"),
    ("budget", "sublinear (budget)"),
    ("sqrt", "sqrt"),
    ("logn", "logn"),
    ("logn=2", "logn=2"),
    ("revolve", "revolve"),
    ("optimal", "optimal"),
]
LABEL = dict(STAGES)
POLICIES = ["none", "cheap", "budget", "sqrt", "logn", "logn=2", "revolve", "optimal"]


def log(msg):
    sys.stderr.write("remat-report: %s\n" % msg)
    sys.stderr.flush()


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        return p.returncode, p.stdout, p.stderr
    except OSError as e:
        return 1, "", str(e)


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            mem = "%.1f GiB" % (int(f.readline().split()[1]) / 1048576.0)
    except (OSError, ValueError, IndexError):
        pass
    rc, out, _ = run(["cc", "--version"])
    cc = out.splitlines()[0] if rc == 0 and out else "unknown"
    rc, out, _ = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    rev = out.strip() if rc == 0 else "unknown"
    rc, out, _ = run(["git", "-C", ROOT, "status", "--porcelain"])
    if rc == 0 and out.strip():
        rev += " + uncommitted changes"
    return {"cpu": cpu, "nproc": os.cpu_count() or 0, "mem": mem,
            "os": "%s %s %s" % (platform.system(), platform.release(), platform.machine()),
            "cc": cc, "rev": rev,
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "load": " ".join("%.2f" % x for x in os.getloadavg())}


# ------------------------------------------------------------------ data --

def load(path):
    rows = []
    with open(path) as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                log("%s:%d: unreadable line (%s)" % (path, i + 1, e))
    return rows


def by_model(rows, section):
    """{model: {"param": x, "family": f, "info": row, "config": row, stage: row}} in order."""
    out = {}
    for r in rows:
        if r.get("section") != section or "model" not in r:
            continue
        m = out.setdefault(r["model"], {"param": r.get("param"), "family": r.get("family"),
                                        "grid": []})
        st = r.get("stage", "info")
        if st == "budget-grid":
            m["grid"].append(r)
        elif st == "revolve-cost":
            m.setdefault("revolve_cost", []).append(r)
        else:
            m[st] = r
    return out


def ok(r):
    return r is not None and r.get("status", "ok") == "ok" and "peak" in r


def peak(m, st):
    r = m.get(st)
    return r["peak"] if ok(r) else None


def bad(r):
    """The cell of a row that is not a measurement."""
    if not r:
        return "-"
    return "skipped" if r.get("status") == "skipped" else "error"


def gib(x):
    return "-" if x is None else ("%.2f" % (x / GIB) if x >= 0.01 * GIB else "%.4f" % (x / GIB))


def mib(x):
    return "-" if x is None else "%.2f" % (x / MIB)


def pct(r):
    return "%.1f" % r["extra_pct"] if ok(r) else "-"


def fit_slope(pts):
    """Least squares of log y on log x: slope, and the number of points."""
    pts = [(x, y) for x, y in pts if x and y and x > 0 and y > 0]
    if len(pts) < 2:
        return None
    lx = [math.log(x) for x, _ in pts]
    ly = [math.log(y) for _, y in pts]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    if sxx == 0:
        return None
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx


def verdict_range(ratios):
    vals = [float(r.split(": ")[1][:-1]) for r in ratios]
    if not vals:
        return ""
    if all(2 <= v <= 3 for v in vals):
        return " -- within the paper's range"
    if all(v > 3 for v in vals):
        return " -- more than the paper's 2-3x at every depth"
    if all(v < 2 for v in vals):
        return " -- **below** the paper's 2-3x at every depth"
    return " -- partly outside the paper's 2-3x"


def errors(rows):
    out = []
    for r in rows:
        if r.get("status") == "error":
            out.append("%s %s %s: %s" % (r.get("section"), r.get("model", ""), r.get("stage", ""),
                                         r.get("error", "")))
    return out


# ------------------------------------------------------------------- svg --

def svg_loglog(series, title, xlabel, ylabel, path, yunit=GIB, marks=None):
    """series: [(label, [(x, bytes)], dashed)]; log2 axes; slope in the legend.
    marks: [(label, y bytes)] horizontal reference lines."""
    series = [(l, [(x, y) for x, y in p if x and y], d) for l, p, d in series]
    series = [s for s in series if s[1]]
    if not series:
        return False
    W, H, L, R, T, B = 960, 560, 80, 330, 50, 60
    xs = [x for _, p, _ in series for x, _ in p]
    ys = [y / yunit for _, p, _ in series for _, y in p] + [y / yunit for _, y in (marks or [])]
    x0, x1 = math.floor(math.log2(min(xs)) + 0.01), math.ceil(math.log2(max(xs)) - 0.01)
    y0, y1 = math.floor(math.log2(min(ys)) + 0.01), math.ceil(math.log2(max(ys)) - 0.01)
    if x1 == x0:
        x1 += 1
    if y1 == y0:
        y1 += 1
    px = lambda x: L + (math.log2(x) - x0) / (x1 - x0) * (W - L - R)
    py = lambda y: H - B - (math.log2(y) - y0) / (y1 - y0) * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="24" font-size="15">%s</text>' % (L, esc(title))]
    for e in range(x0, x1 + 1):
        x = px(2 ** e)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, T, x, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (x, H - B + 18, 2 ** e))
    ystep = 1 if y1 - y0 <= 12 else 2
    for e in range(y0, y1 + 1, ystep):
        y = py(2.0 ** e)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, y, W - R, y))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (L - 6, y + 4, 2.0 ** e))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>'
             % (L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s (log scale)</text>'
             % ((L + W - R) / 2, H - 18, esc(xlabel)))
    o.append('<text transform="translate(20,%d) rotate(-90)" text-anchor="middle">%s (log scale)</text>'
             % ((T + H - B) / 2, esc(ylabel)))
    for label, y in marks or []:
        yy = py(y / yunit)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-dasharray="2,4"/>'
                 % (L, yy, W - R, yy))
        o.append('<text x="%d" y="%.1f" font-size="11">%s</text>' % (L + 6, yy - 4, esc(label)))
    for i, (label, pts, dashed) in enumerate(series):
        c = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6,3"' if dashed else ""
        pts = sorted(pts)
        o.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                 % (" ".join("%.1f,%.1f" % (px(x), py(y / yunit)) for x, y in pts), c, dash))
        for x, y in pts:
            o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y / yunit), c))
        s = fit_slope(pts)
        ly = T + 10 + i * 18
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                 % (W - R + 15, ly, W - R + 40, ly, c, dash))
        o.append('<text x="%d" y="%d">%s%s</text>' % (W - R + 46, ly + 4, esc(label),
                                                     "" if s is None else " (slope %.2f)" % s))
    o.append('<text x="%d" y="%d" font-size="11" fill="#555">slope: least squares of log peak on '
             'log %s</text>' % (W - R + 15, T + 10 + len(series) * 18 + 6, esc(xlabel.split(" ")[0])))
    o.append("</svg>")
    write_atomic(path, "\n".join(o) + "\n")
    return True


def svg_tradeoff(points, title, path):
    """Scatter: x extra forward FLOPs %, y peak / planned peak without
    recomputation; points: [(policy, x, y)]."""
    if not points:
        return False
    W, H, L, R, T, B = 960, 560, 80, 230, 50, 60
    xmax = max(10.0, max(x for _, x, _ in points))
    xmax = math.ceil(xmax / 25.0) * 25.0
    ymax = max(1.0, max(y for _, _, y in points))
    ymax = math.ceil(ymax * 10) / 10.0
    px = lambda x: L + x / xmax * (W - L - R)
    py = lambda y: H - B - y / ymax * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="24" font-size="15">%s</text>' % (L, esc(title))]
    k = 0
    while k * 25 <= xmax + 1e-9:
        x = px(k * 25)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, T, x, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%d%%</text>' % (x, H - B + 18, k * 25))
        k += 1
    k = 0
    while k * 0.1 <= ymax + 1e-9:
        y = py(k * 0.1)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>'
                 % (L, y, W - R, y, "#888" if abs(k * 0.1 - 1) < 1e-9 else "#ddd"))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (L - 6, y + 4, k * 0.1))
        k += 1
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>'
             % (L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">extra forward FLOPs (%% of one forward '
             'pass)</text>' % ((L + W - R) / 2, H - 18))
    o.append('<text transform="translate(20,%d) rotate(-90)" text-anchor="middle">peak / peak '
             'without recomputation</text>' % ((T + H - B) / 2))
    pols = []
    for p, _, _ in points:
        if p not in pols:
            pols.append(p)
    for i, p in enumerate(pols):
        c = PALETTE[i % len(PALETTE)]
        for q, x, y in points:
            if q == p:
                o.append('<circle cx="%.1f" cy="%.1f" r="3.2" fill="%s" fill-opacity="0.75"/>'
                         % (px(x), py(y), c))
        ly = T + 10 + i * 18
        o.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (W - R + 22, ly, c))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 32, ly + 4, esc(p)))
    o.append("</svg>")
    write_atomic(path, "\n".join(o) + "\n")
    return True


# ---------------------------------------------------------------- tables --

def policy_table(models, xname, present, title, cell):
    """One row per model, one column per policy present: cell(row), or why it failed."""
    cols = [s for s in POLICIES if s in present]
    md = ["", title, "", "| %s | %s |" % (xname, " | ".join(LABEL[s] for s in cols)), "|---:|" + "---|" * len(cols)]
    for name, m in models.items():
        md.append("| %s | %s |" % (fmt_param(m), " | ".join(cell(m[s]) if ok(m.get(s)) else bad(m.get(s))
                                                          for s in cols)))
    return md


def model_tables(models, xname, with_cheap=True):
    """Memory (GiB), extra FLOPs (%) and planning seconds per model."""
    stages = [s for s, _ in STAGES if with_cheap or s != "cheap"]
    present = [s for s in stages if any(m.get(s) for m in models.values())]
    md = ["Feature-map memory, GiB (parameters and their gradients excluded; 'sharing' is the "
          "counter algorithm laid end to end, every other column is placed by the strategy and "
          "checked):", "",
          "| %s | fwd nodes | cuts | %s |" % (xname, " | ".join(LABEL[s] for s in present)),
          "|---:|---:|---:|" + "---:|" * len(present)]
    for name, m in models.items():
        info = m.get("info", {})
        md.append("| %s | %s | %s | %s |" % (
            fmt_param(m), info.get("forward_nodes", "-"), info.get("cuts", "-"),
            " | ".join(gib(peak(m, s)) for s in present)))
    md += policy_table(models, xname, present,
                       "Extra forward FLOPs (% of one forward pass), recomputed nodes, planning seconds "
                       "(policy + transform + sharing + placement + check):",
                       lambda r: "%s%% / %d / %.2fs" % (pct(r), r["recomputed"], r["seconds"]))
    md += policy_table(models, xname, present,
                       "Lower bound (most bytes live at once in the transformed graph's in-place storages; "
                       "no placement does better) against the placed peak, GiB:",
                       lambda r: "%s / %s" % (gib(r["lower_bound"]), gib(r["peak"])))
    return md


def fmt_param(m):
    p = m.get("param")
    return "%g" % p if p is not None else "-"


def slopes_line(models, stages):
    out = []
    for s in stages:
        sl = fit_slope([(m["param"], peak(m, s)) for m in models.values()])
        if sl is not None:
            out.append("%s %.2f" % (LABEL[s], sl))
    return ", ".join(out) if out else "(fewer than two points: no fit)"


def plot_models(models, stages, title, xlabel, path):
    series = []
    for s in stages:
        pts = [(m["param"], peak(m, s)) for m in models.values()]
        series.append((LABEL[s], pts, s in ("no-optimisation", "inplace", "sharing")))
    return svg_loglog(series, title, xlabel, "feature-map memory, GiB", path)


# ------------------------------------------------------------------ main --

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks-remat.md"))
    ap.add_argument("--img", default=None, help="directory of the SVG files (default: docs/img "
                    "beside --out)")
    ap.add_argument("--command", default="bench/remat/run")
    ap.add_argument("--seconds", type=float, default=None, help="wall time of the whole run")
    ap.add_argument("--notes", default=os.path.join(ROOT, "bench", "remat", "notes.md"))
    a = ap.parse_args()
    rows = load(a.json)
    img = a.img or os.path.join(os.path.dirname(os.path.abspath(a.out)), "img")
    rel = os.path.relpath(img, os.path.dirname(os.path.abspath(a.out)))
    mc = machine()
    timing = {r["part"]: r["seconds"] for r in rows if r.get("section") == "timing"}
    runrow = next((r for r in rows if r.get("section") == "run"), {})
    quick = runrow.get("quick")
    total = a.seconds if a.seconds is not None else timing.get("total", 0.0)

    resnet = by_model(rows, "resnet")
    lstm_all = by_model(rows, "lstm")
    lstm_fm = {k: v for k, v in lstm_all.items() if v["family"] == "lstm-fm"}
    lstm = {k: v for k, v in lstm_all.items() if v["family"] == "lstm"}
    execm = by_model(rows, "exec")
    corpus = by_model(rows, "corpus")
    chain = by_model(rows, "chain")

    md = ["# Recomputation benchmark: chen2016's ResNet and LSTM, the corpus, chains", "",
          "Generated by `%s` on %s in %.1f minutes%s; Release build; do not edit by hand "
          "(the reading at the end is `bench/remat/notes.md`, appended verbatim)." % (
              a.command, mc["date"], total / 60.0, " (**quick subset**)" if quick else ""),
          "",
          "- machine: %s, %d logical cores (`nproc`), memory %s; %s; %s" % (
              mc["cpu"], mc["nproc"], mc["mem"], mc["os"], mc["cc"]),
          "- memplan revision: %s; load average at the end: %s" % (mc["rev"], mc["load"]),
          "- time per part: %s" % ", ".join("%s %.1f s" % (k, v) for k, v in timing.items()),
          ]
    if runrow.get("big_strategy"):
        md.append("- placement strategy: `auto`, except forward graphs of more than %d nodes, "
                  "placed by `%s` (see the 'info' strategy column below)" % (
                      runrow.get("big_nodes", 0), runrow["big_strategy"]))
    else:
        md.append("- placement strategy: `auto` everywhere")
    md += ["",
           "Every plan is made by `mp_remat_policy`, turned into a graph by the mirror transform, "
           "shared (in-place + the counter algorithm), placed and proven by `mp_graph_plan_check` "
           "inside `mp_remat_evaluate`. Memory is the feature-map memory of chen2016 sec. 5.1: "
           "activations and their gradients, inputs and the loss; parameters and parameter "
           "gradients are persistent and not counted. 'Extra FLOPs' is the recompute nodes' FLOPs "
           "over one forward pass (chen2016's 'one extra forward' is 100%).", ""]

    # ---- claims
    md += ["## chen2016's claims next to memplan's numbers", ""]
    claims = []
    if resnet:
        ratios = ["D=%g: %.2fx" % (m["param"], peak(m, "no-optimisation") / peak(m, "sharing"))
                  for m in resnet.values() if peak(m, "no-optimisation") and peak(m, "sharing")]
        claims.append("**Fig. 5a, ResNet: 'the system optimizations ... reduce the memory cost by "
                      "factor of two to three'.** memplan, no optimisation / sharing: %s%s." % (
                          ", ".join(ratios),
                          verdict_range(ratios)))
        big = max(resnet.values(), key=lambda m: m["param"] or 0)
        b = big.get("budget")
        if ok(b):
            verdict = ("met" if b["peak"] < 7e9 else "**missed**") if big["param"] >= 1000 else \
                "not measured (no depth near 1000 in this run)"
            claims.append("**Fig. 5a: 'we can train a 1000 layer ResNet using less than 7GB'** (feature "
                          "maps; the paper's Fig. 5b total adds parameters and workspace). memplan, "
                          "sublinear (budget) at D=%g, the deepest measured: %.2f GiB = %.2f GB, +%.1f%% forward FLOPs: target "
                          "%s. Sharing alone at that depth: %s GiB." % (
                              big["param"], b["peak"] / GIB, b["peak"] / 1e9, b["extra_pct"], verdict,
                              gib(peak(big, "sharing"))))
        sl_share = fit_slope([(m["param"], peak(m, "sharing")) for m in resnet.values()])
        sl_sub = fit_slope([(m["param"], peak(m, "budget")) for m in resnet.values()])
        if sl_share is not None and sl_sub is not None:
            claims.append("**Fig. 5a: sharing 'still exhibits a linear trend', the sublinear plan "
                          "'gives sub-linear memory trend'.** memplan's fitted slopes of log memory "
                          "on log depth: sharing %.2f, sublinear (budget) %.2f (sqrt(n) would be "
                          "0.5)." % (sl_share, sl_sub))
    for fam, models in (("lstm-fm", lstm_fm), ("lstm", lstm)):
        if not models:
            continue
        ratios = []
        for m in models.values():
            s, b = peak(m, "sharing"), peak(m, "budget")
            best = min([peak(m, p) for p in POLICIES if peak(m, p)] or [None]) if True else None
            if s and b:
                ratios.append("T=%g: %.2fx (best policy %.2fx)" % (m["param"], s / b, s / best if best else 0))
        verdict = ""
        if ratios:
            verdict = " -- target met at every T" if all(float(r.split(": ")[1].split("x")[0]) > 4
                                                          for r in ratios) else \
                " -- **target missed** where below 4x"
        claims.append("**Fig. 6, %s: 'the sub-linear plan gives more than 4x reduction over the "
                      "optimized memory plan'.** memplan, sharing / sublinear (budget): %s%s." % (
                          "LSTM (feature-map accounting, `lstm-fm`)" if fam == "lstm-fm" else
                          "LSTM as memplan trains it (`lstm`, per-step weight-gradient contributions)",
                          ", ".join(ratios) or "no data", verdict))
    ex = [r for m in execm.values() for p, r in m.items() if p in POLICIES and ok(r)]
    full = ["D=%g +%.0f%%" % (m["param"], m["budget"]["extra_pct"])
            for m in resnet.values() if ok(m.get("budget"))]
    full += ["T=%g +%.0f%%" % (m["param"], m["budget"]["extra_pct"])
             for m in lstm_fm.values() if ok(m.get("budget"))]
    if full or ex:
        step = ["%s %+.0f%%" % (r["model"], 100.0 * (r["seconds_run"] / r["seconds_none"] - 1))
                for r in ex if r["stage"] == "budget" and r.get("seconds_none")]
        claims.append("**Fig. 7: the sublinear plan costs 'roughly 30%% of additional runtime'** "
                      "(one extra forward pass; a training step costs about three). memplan's "
                      "budget plans recompute, in forward passes (FLOP estimate): %s -- about "
                      "a third of that per training step if the backward pass costs twice the "
                      "forward. The reference executor at reduced scale measured per training "
                      "step (plan vs. the same graph without recomputation, best of repeated "
                      "runs): %s." % (", ".join(full) or "-", ", ".join(step) or "-"))
    md += ["- " + c for c in claims] + [""]

    # ---- resnet
    if resnet:
        md += ["## ResNet (chen2016 Fig. 5a): batch 32, 3x224x224", "",
               "The network of the paper's released example (dmlc/mxnet-memonger, "
               "`example_resnet.py`): 7x7/2 conv-bn-relu stem, 3x3/2 max pooling, four stages of "
               "bottleneck units (conv-bn-relu 1x1, 3x3, 1x1 at widths w, w, 4w, w = 64..512; "
               "a conv-bn-relu projection shortcut in each stage's first unit; stride 2 from the "
               "second stage), global average pooling, a 1000-way linear layer, softmax "
               "cross-entropy (added by `mp_remat_new`). Depth counts conv-bn-relu as one layer "
               "(the paper's footnote) on the main path, plus stem and classifier: D = 3U + 2 for U "
               "units. The paper only says it increases 'the depth of each residual stage'; memplan "
               "splits U = round((D-2)/3) in the proportions of ResNet-200's [3, 24, 36, 3] (the "
               "example's configuration, reproduced exactly at D = 200), largest remainders first:",
               "",
               "| D | units per stage | fwd nodes | training nodes | fwd GFLOPs |",
               "|---:|---|---:|---:|---:|"]
        for m in resnet.values():
            cfg, info = m.get("config", {}), m.get("info", {})
            md.append("| %g | %s | %s | %s | %s |" % (
                m["param"], "/".join(str(u) for u in cfg.get("units", [])),
                info.get("forward_nodes", "-"), info.get("train_nodes", "-"),
                "%.0f" % (info["forward_flops"] / 1e9) if "forward_flops" in info else "-"))
        md += [""] + model_tables(resnet, "D")
        stages = ["no-optimisation", "inplace", "sharing", "none", "cheap", "budget", "sqrt",
                  "revolve", "optimal"]
        if plot_models(resnet, stages, "ResNet, batch 32, 224x224: feature-map memory vs depth",
                       "layers D", os.path.join(img, "remat-resnet.svg")):
            md += ["", "![ResNet memory vs depth](%s/remat-resnet.svg)" % rel]
        md += ["", "Fitted slopes (log memory on log depth): %s." % slopes_line(resnet, stages), ""]

    # ---- lstm
    for fam, models, title in (("lstm-fm", lstm_fm, "LSTM (chen2016 Fig. 6), feature-map accounting"),
                               ("lstm", lstm, "LSTM as memplan's backward pass trains it")):
        if not models:
            continue
        md += ["## %s: 4 layers, hidden 1024, batch 64" % title, ""]
        if fam == "lstm-fm":
            md += ["The network of the paper's example (`example_lstm.py`, `concat_decode=False`, "
                   "`use_loss=True`): per step a linear embedding of the 50-dim input (1024, no "
                   "bias), four LSTM layers (per gate an input-to-hidden and a hidden-to-hidden "
                   "linear and their sum; sigmoid/tanh; c = f*c + i*g; h = o*tanh(c)), a 5000-way "
                   "classifier with softmax cross-entropy at every step; the per-step losses are "
                   "summed by a chain of additions into memplan's one loss. In `lstm-fm` only the "
                   "embedding is trainable: every gradient still flows through every step and every "
                   "gradient op reads the same forward values, but no per-step weight-gradient "
                   "contributions exist -- MXNet, the paper's system, adds each step's weight "
                   "gradient in place into the one persistent gradient buffer, so its feature-map "
                   "memory has none either.", ""]
        else:
            md += ["The same network with every weight trainable, as `mp_remat_new` builds it: a "
                   "weight shared by T steps receives T gradient contributions (each the weight's "
                   "size: 4 MiB per gate matrix, 19.5 MiB for the classifier), each added as it "
                   "arrives into the weight's persistent gradient (`mp_backward_opts_t.accumulate`), "
                   "as MXNet does; what remains in the peak beyond `lstm-fm` is the forward values "
                   "the weight gradients read (every linear's input).", ""]
        md += model_tables(models, "T", with_cheap=True)
        stages = ["no-optimisation", "inplace", "sharing", "none", "cheap", "budget", "sqrt",
                  "revolve", "optimal"]
        fn = "remat-%s.svg" % fam
        if plot_models(models, stages, "%s: memory vs unrolled steps" % (
                "LSTM (lstm-fm)" if fam == "lstm-fm" else "LSTM (memplan's training graph)"),
                "steps T", os.path.join(img, fn)):
            md += ["", "![LSTM memory vs steps](%s/%s)" % (rel, fn)]
        md += ["", "Fitted slopes (log memory on log T): %s." % slopes_line(models, stages), ""]

    # ---- exec
    if execm:
        md += ["## Executed at reduced scale: the plans run", "",
               "The reference executor (`mp_exec_run`, float32 CPU kernels) runs every policy's "
               "transformed graph on its placed plan, with poisoning (each tensor's memory filled "
               "with NaNs before its producer runs), and compares every output (loss and every "
               "parameter gradient) byte for byte with the naive run of the training graph without "
               "recomputation. ResNet-small: the ResNet above at batch 8, 3x64x64, widths 16..128 (x4 "
               "in the bottleneck), 10 classes; LSTM-small: batch 16, input 16, embedding and hidden "
               "128, 4 layers, 64 classes, `-fm` as `lstm-fm` above, the others with every weight "
               "trainable (so every weight gradient is compared). Times are the least of repeated "
               "runs, each allocating and first touching its arena (a smaller arena is faster to "
               "set up, which can make a plan with recomputation run faster than without on "
               "cheap graphs). 'step' is the time of the plan over the time of the same graph "
               "without recomputation; 'measured extra' is their difference over the time of one "
               "forward pass, in the unit of the FLOP estimate beside it.", "",
               "| model | policy | planned peak KiB | arena KiB | arena = plan | outputs identical | "
               "recomputed | est. extra | measured extra | step | run s |",
               "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|"]
        for name, m in execm.items():
            for p in POLICIES:
                r = m.get(p)
                if not r:
                    continue
                if not ok(r):
                    md.append("| %s | %s | error: %s | | | | | | | | |" % (name, p, esc(r.get("error", ""))))
                    continue
                md.append("| %s | %s | %.1f | %.1f | %s | %s | %d | %.1f%% | %s | %s | %.4f |" % (
                    name, p, r["peak"] / 1024.0, r["arena_bytes"] / 1024.0,
                    "yes" if r["arena_matches"] else "**no**",
                    "%d/%d" % (r["outputs_compared"] - r["outputs_differ"], r["outputs_compared"])
                    if not r["outputs_differ"] else "**%d of %d differ**" % (r["outputs_differ"],
                                                                             r["outputs_compared"]),
                    r["recomputed"], r["extra_pct"],
                    "%.1f%%" % r["measured_extra_pct"] if r.get("measured_extra_pct") is not None else "-",
                    "%.2fx" % (r["seconds_run"] / r["seconds_none"]) if r.get("seconds_none") else "-",
                    r["seconds_run"]))
        md.append("")

    # ---- corpus
    if corpus:
        md += ["## Corpus: every forward graph trained (batch 1), every policy", "",
               "Each inference graph of `bench/corpus/inference` gets memplan's loss and backward "
               "pass (`mp_remat_new`). Cells: peak / peak of the plan without recomputation "
               "('sharing, placed'), then extra forward FLOPs. 'cuts' is the number of cut points "
               "(values that alone carry the forward pass across a step); the chain policies need "
               "them.", "",
               "| graph | fwd nodes | cuts | no recompute MiB | %s |" % " | ".join(
                   LABEL[p] for p in POLICIES if p != "none"),
               "|---|---:|---:|---:|" + "---|" * (len(POLICIES) - 1)]
        points = []
        best_ratio = []
        for name, m in corpus.items():
            base = peak(m, "none")
            info = m.get("info", {})
            cells = []
            for p in POLICIES:
                if p == "none":
                    continue
                r = m.get(p)
                if ok(r) and base:
                    cells.append("%.2f / +%.0f%%" % (r["peak"] / base, r["extra_pct"]))
                    points.append((LABEL[p], r["extra_pct"], r["peak"] / base))
                else:
                    cells.append(bad(r))
            bests = [peak(m, p) for p in POLICIES if p != "none" and peak(m, p)]
            if base and bests:
                best_ratio.append(min(bests) / base)
            md.append("| %s | %s | %s | %s | %s |" % (name, info.get("forward_nodes", "-"),
                                                      info.get("cuts", "-"), mib(base), " | ".join(cells)))
        if best_ratio:
            gm = math.exp(sum(math.log(x) for x in best_ratio) / len(best_ratio))
            md += ["", "Geometric mean over %d graphs of the best policy's peak / no recomputation: "
                   "%.3f." % (len(best_ratio), gm)]
        if svg_tradeoff(points, "Corpus, batch 1: memory vs extra compute, every policy",
                        os.path.join(img, "remat-corpus.svg")):
            md += ["", "![corpus trade-off](%s/remat-corpus.svg)" % rel]
        grid = [(name, g) for name, m in corpus.items() for g in m["grid"]]
        if grid:
            md += ["", "The budget policy's grid (Alg. 3 with Appendix A: B0 = sqrt(x*y) from a "
                   "B = 0 run, six B on [B0/sqrt2, sqrt2*B0]); each point's peak / no recomputation "
                   "and extra FLOPs; **bold**: the point the budget policy keeps:", "",
                   "| graph | B0 MiB | " + " | ".join("B%d" % i for i in range(6)) + " |",
                   "|---|---:|" + "---|" * 6]
            for name, m in corpus.items():
                if not m["grid"]:
                    continue
                base = peak(m, "none")
                b = m.get("budget")
                cells = []
                for g in m["grid"]:
                    if ok(g) and base:
                        c = "%.2f / +%.0f%%" % (g["peak"] / base, g["extra_pct"])
                        if ok(b) and g["peak"] == b["peak"] and g["extra_flops"] == b["extra_flops"]:
                            c = "**" + c + "**"
                        cells.append(c)
                    else:
                        cells.append("error" if g.get("status") == "error" else "-")
                md.append("| %s | %s | %s |" % (name, mib(m["grid"][0].get("B0")), " | ".join(cells)))
        dv = [(name, m["dp_vs_alg3"]) for name, m in corpus.items()
              if m.get("dp_vs_alg3", {}).get("status") == "ok"]
        if dv:
            wins = sum(1 for _, d in dv if d["dp_feasible"] and d["dp_extra"] <= d["alg3_extra"])
            md += ["", "The chain DP against Alg. 3 + grid (the issue's target: never more extra "
                   "compute at the same measured peak). Budget = the peak the `budget` policy "
                   "measures; the DP's plan is `mp_remat_fit` restricted to `optimal` under that "
                   "budget. The DP recomputes no more on **%d of %d** graphs:" % (wins, len(dv)), "",
                   "| graph | Alg. 3 + grid: peak MiB, extra | DP at that budget: peak MiB, extra | |",
                   "|---|---|---|---|"]
            for name, d in dv:
                f = d["forward_flops"] or 1
                a3 = "%s, +%.1f%%" % (mib(d["alg3_peak"]), 100.0 * d["alg3_extra"] / f)
                if d["dp_feasible"]:
                    dp = "%s, +%.1f%%" % (mib(d["dp_peak"]), 100.0 * d["dp_extra"] / f)
                    mark = "" if d["dp_extra"] <= d["alg3_extra"] else "**DP recomputes more**"
                else:
                    dp = "no plan fits (least %s)" % mib(d["dp_min_peak"])
                    mark = "**DP misses**"
                md.append("| %s | %s | %s | %s |" % (name, a3, dp, mark))
        md.append("")

    # ---- chains
    if chain:
        md += ["## Uniform chains: recompute counts next to Revolve's optimum", "",
               "A chain of n linear layers (batch 16, width 64; the loss adds a stage). For each "
               "policy: values kept from the first forward pass, stage recomputations, and "
               "Revolve's least number of recomputations t(n, s) with s = that many checkpoint "
               "slots (`mp_revolve_cost`); then t(n, s) for a few s.", "",
               "| n | stages | %s | t(n,s) for s = %s |" % (
                   " | ".join("%s kept / recomputed / t(n, kept)" % p for p in
                              ["sqrt", "logn", "logn=2", "revolve", "optimal"]), "1, 2, 3, log n, sqrt n"),
               "|---:|---:|" + "---|" * 6]
        for name, m in chain.items():
            cells = []
            for p in ["sqrt", "logn", "logn=2", "revolve", "optimal"]:
                r = m.get(p)
                if ok(r):
                    t = r.get("revolve_at_kept")
                    cells.append("%d / %d / %s" % (r["kept"], r["recomputed"], "inf" if t is None else t))
                else:
                    cells.append("error" if r else "-")
            rc = ", ".join("s=%d: %s" % (c["slots"], "inf" if c.get("cost") is None else c["cost"])
                           for c in m.get("revolve_cost", []))
            md.append("| %g | %s | %s | %s |" % (m["param"], m.get("info", {}).get("stages", "-"),
                                                 " | ".join(cells), rc))
        md.append("")

    errs = errors(rows)
    md += ["## Failures", ""] + (["- " + esc(e) for e in errs] if errs else ["None."]) + [""]
    if not quick and a.notes and os.path.exists(a.notes):
        with open(a.notes) as f:
            md += [f.read().rstrip("\n"), ""]
    write_atomic(a.out, "\n".join(md))
    log("wrote %s (%d rows, %d failures)" % (a.out, len(rows), len(errs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
