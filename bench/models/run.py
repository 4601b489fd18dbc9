"""The model benchmark behind bench/run-models (see that script).

    /usr/bin/python3 bench/models/run.py --memplan BIN [--quick] [--reps R]
        [--out FILE] [--img-dir DIR] [--command TEXT]

Plans every entry of bench/corpus/ with 'BIN plan --strategy all --json'
(R times, median planning time per strategy), proves the best plan again
with 'BIN check', and writes Markdown (and, unless --quick, two SVG plots).
Exit status 1 if any plan was invalid or any strategy failed.
"""

import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

MIB = float(1 << 20)
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
QUICK = ["paper/mobilenet_v1", "inference/squeezenet1_1", "train/mobilenet_v2-b16"]
PAPER_MODELS = ["mobilenet_v1", "mobilenet_v2", "deeplab_v3", "inception_v3", "posenet", "blazeface"]
PAPER_TITLES = ["MobileNet v1", "MobileNet v2", "DeepLab v3", "Inception v3", "PoseNet", "BlazeFace"]


def log(msg):
    sys.stderr.write("run-models: %s\n" % msg)
    sys.stderr.flush()


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    except OSError as e:
        return 127, "", "%s: %s" % (cmd[0], e.strerror)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- corpus --

def corpus_entries(corpus):
    """[(stem, kind)] in a fixed order: paper, inference, train."""
    out = []
    for kind in ("paper", "inference", "train"):
        d = os.path.join(corpus, kind)
        if not os.path.isdir(d):
            continue
        names = sorted(f[:-len(".records.csv")] for f in os.listdir(d)
                       if f.endswith(".records.csv"))
        if kind == "paper":
            names.sort(key=lambda n: PAPER_MODELS.index(n) if n in PAPER_MODELS else 99)
        out += [("%s/%s" % (kind, n), kind) for n in names]
    return out


def plan_entry(memplan, path, reps, workdir):
    """Runs 'plan --strategy all --json' reps times; returns a dict."""
    runs = []
    for _ in range(reps):
        rc, out, err = run([memplan, "plan", "--strategy", "all", "--json", path])
        if rc != 0:
            return {"error": "memplan plan exit %d: %s" % (rc, err.strip())}
        runs.append(json.loads(out))
    first = runs[0]
    res = {"buffers": first["buffers"], "naive": first["naive"],
           "lb": first["lower_bound"], "olb": first["objects_lower_bound"],
           "best": first["best"], "skipped": first["skipped"], "strategies": {}}
    for r in first["results"]:
        ms = [next(x for x in run_["results"] if x["strategy"] == r["strategy"])["ms"]
              for run_ in runs]
        same = all(next(x for x in run_["results"] if x["strategy"] == r["strategy"])
                   ["footprint"] == r["footprint"] for run_ in runs)
        res["strategies"][r["strategy"]] = {
            "footprint": r["footprint"], "ratio": r["footprint"] / float(first["lower_bound"]),
            "valid": bool(r["valid"]) and same, "ms": statistics.median(ms),
            "repeatable": same}
    # The best plan, written and proved by the separate checker.
    plan = os.path.join(workdir, "best.plan.csv")
    rc, out, err = run([memplan, "plan", "--strategy", first["best"], "-o", plan, path])
    if rc != 0:
        res["check"] = "plan -o failed: " + err.strip()
        return res
    rc, out, err = run([memplan, "check", "--json", path, plan])
    try:
        c = json.loads(out)
    except ValueError:
        c = {"valid": False, "error": err.strip() or out.strip()}
    if rc == 0 and c.get("valid") and c.get("footprint") == res["strategies"][first["best"]]["footprint"]:
        res["check"] = "valid"
    else:
        res["check"] = "INVALID: %s" % (c.get("error") or "footprint differs")
    return res


# ------------------------------------------------------------- formatting --

def fr(x):
    """A ratio: '1 (=LB)' when exact."""
    if x == 1.0:
        return "1 (=LB)"
    return "%.6f" % x if x < 1.0001 else "%.4f" % x


def fms(x):
    if x < 1:
        return "%.3f" % x
    if x < 100:
        return "%.2f" % x
    return "%.0f" % x


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


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
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = ", memory %.1f GiB" % (kb / 1048576.0)
    except (OSError, ValueError, IndexError):
        pass
    cc = "unknown"
    cache = os.path.join(ROOT, "build-bench", "CMakeCache.txt")
    comp = "cc"
    if os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_C_COMPILER:"):
                    comp = line.split("=", 1)[1].strip()
    rc, out, _ = run([comp, "--version"]) if os.path.exists(comp) or "/" not in comp else (1, "", "")
    if rc == 0 and out:
        cc = out.splitlines()[0]
    rc, out, _ = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    rev = out.strip() if rc == 0 else "unknown"
    rc, out, _ = run(["git", "-C", ROOT, "status", "--porcelain"])
    if rc == 0 and out.strip():
        rev += " + uncommitted changes"
    return {"cpu": "%s, %d logical cores online%s" % (cpu, os.cpu_count() or 0, mem),
            "os": "%s %s %s" % (platform.system(), platform.release(), platform.machine()),
            "cc": cc, "rev": rev,
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "load": " ".join("%.2f" % x for x in os.getloadavg())}


def read_paper(path):
    rows = []
    with open(path) as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            rows.append(row)
    return rows


def planning_table(md_path):
    """Section 1's median planning-time table of docs/benchmarks-planning.md:
    {strategy: [(n, ms)]}."""
    out, ns, on = {}, None, False
    with open(md_path) as f:
        for line in f:
            if line.startswith("### Planning time, milliseconds (median)"):
                on = True
                continue
            if on and line.startswith("#"):
                break
            if not on or not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "strategy":
                ns = [int(10 ** int(c.split("^")[1])) for c in cells[1:] if c.startswith("n=10^")]
                continue
            if ns is None or cells[0].startswith("---"):
                continue
            pts = []
            for n, c in zip(ns, cells[1:]):
                m = re.match(r"([0-9.]+)", c)
                if m:
                    pts.append((n, float(m.group(1))))
            out[cells[0]] = pts
    return out


# -------------------------------------------------------------------- SVG --

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8", "#98df8a", "#ff9896"]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_planning_time(data, path):
    strategies = [s for s in data if data[s]]
    W, H, L, R, T, B = 960, 560, 80, 310, 50, 60
    xs = [n for s in strategies for n, _ in data[s]]
    ys = [ms for s in strategies for _, ms in data[s]]
    x0, x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    px = lambda n: L + (math.log10(n) - x0) / (x1 - x0) * (W - L - R)
    py = lambda ms: H - B - (math.log10(ms) - y0) / (y1 - y0) * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="24" font-size="15">Planning time vs. number of buffers '
         '(generated DNN-shaped instances, log-log)</text>' % L]
    for e in range(x0, x1 + 1):
        x = px(10 ** e)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, T, x, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">10^%d</text>' % (x, H - B + 18, e))
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, y, W - R, y))
        lab = ("%g" % 10 ** e) if e >= 0 else "0." + "0" * (-e - 1) + "1"
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, y + 4, lab))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>'
             % (L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">buffers n</text>' % ((L + W - R) / 2, H - 18))
    o.append('<text transform="translate(20,%d) rotate(-90)" text-anchor="middle">'
             'median planning time, ms</text>' % ((T + H - B) / 2))
    for i, s in enumerate(strategies):
        c = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6,3"' if s.startswith("objects-") else ""
        pts = " ".join("%.1f,%.1f" % (px(n), py(ms)) for n, ms in data[s])
        o.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (pts, c, dash))
        for n, ms in data[s]:
            o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(n), py(ms), c))
        ly = T + 10 + i * 18
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                 % (W - R + 15, ly, W - R + 40, ly, c, dash))
        label = s + (" (n &lt;= 5000 only)" if len(data[s]) == 1 else "")
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 46, ly + 4, label))
    o.append('<text x="%d" y="%d" font-size="11" fill="#555">solid: offsets; dashed: shared '
             'objects</text>' % (W - R + 15, T + 10 + len(strategies) * 18 + 6))
    o.append("</svg>")
    write_atomic(path, "\n".join(o) + "\n")


def svg_ratio_plot(entries, results, strategies, path):
    """Dot plot: one row per corpus entry, footprint / offset LB per strategy,
    offsets in the left panel, shared objects in the right; within a row each
    strategy has its own small vertical offset so equal values stay visible."""
    rows = [e for e, _ in entries if "strategies" in results[e]]
    groups = [[s for s in strategies if not s.startswith("objects-")],
              [s for s in strategies if s.startswith("objects-")]]
    caps = [1.5, 2.0]
    titles = ["offset strategies", "shared-object strategies"]
    L, PW, GAP, R, T, rowh = 215, 300, 50, 20, 62, 22
    W = L + 2 * PW + GAP + R
    legend_h = 18 * ((max(len(g) for g in groups) + 1) // 2) + 28
    H = T + rowh * len(rows) + 40 + legend_h
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="11">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="14">Footprint / offset lower bound per corpus entry '
         '(1 = at the bound; values past the right edge drawn at it)</text>']
    bottom = T + rowh * len(rows)
    for j, e in enumerate(rows):
        y = T + rowh * j
        if j % 2 == 0:
            o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#f3f3f3"/>'
                     % (10, y, W - R - 10, rowh))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                 % (L - 6, y + rowh / 2 + 4, esc(e)))
    colour = {}
    for gi, group in enumerate(groups):
        x0 = L + gi * (PW + GAP)
        cap = caps[gi]
        px = lambda r, x0=x0, cap=cap: x0 + (min(r, cap) - 1.0) / (cap - 1.0) * PW
        o.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="12">%s</text>'
                 % (x0 + PW / 2, T - 26, titles[gi]))
        step = 0.1 if cap <= 1.5 else 0.2
        k = 0
        while 1.0 + k * step <= cap + 1e-9:
            t = 1.0 + k * step
            x = px(t)
            o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>'
                     % (x, T, x, bottom, "#888" if k == 0 else "#ddd"))
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>' % (x, T - 6, t))
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>' % (x, bottom + 14, t))
            k += 1
        if gi == 1:  # the objects lower bound of each row, as a grey tick
            for j, e in enumerate(rows):
                x = px(results[e]["olb"] / float(results[e]["lb"]))
                o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" '
                         'stroke-width="1.5"/>' % (x, T + rowh * j + 1, x, T + rowh * (j + 1) - 1))
        for i, st in enumerate(group):
            c = PALETTE[(i + 6 * gi) % len(PALETTE)]
            colour[st] = c
            dy = (i - (len(group) - 1) / 2.0) * (rowh - 6) / max(1, len(group) - 1)
            for j, e in enumerate(rows):
                r = results[e]["strategies"].get(st)
                if not r:
                    continue
                x, y = px(r["ratio"]), T + rowh * j + rowh / 2 + dy
                o.append('<circle cx="%.1f" cy="%.1f" r="2.6" fill="%s"/>' % (x, y, c))
        ly = bottom + 34
        for i, st in enumerate(group):
            lx = x0 + (i % 2) * (PW / 2)
            yy = ly + (i // 2) * 18
            o.append('<circle cx="%.1f" cy="%d" r="4" fill="%s"/>' % (lx + 4, yy - 4, colour[st]))
            o.append('<text x="%.1f" y="%d" font-size="10">%s</text>'
                     % (lx + 12, yy, st.replace("objects-", "obj-")))
        if gi == 1:
            yy = ly + ((len(group) + 1) // 2) * 18
            o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-width="1.5"/>'
                     % (x0 + 4, yy - 10, x0 + 4, yy + 2))
            o.append('<text x="%.1f" y="%d" font-size="10">objects lower bound</text>' % (x0 + 12, yy))
    o.append("</svg>")
    write_atomic(path, "\n".join(o) + "\n")


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------------ main --

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memplan", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--out")
    ap.add_argument("--img-dir", default=os.path.join(ROOT, "docs", "img"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "bench", "corpus"))
    ap.add_argument("--planning", default=os.path.join(ROOT, "docs", "benchmarks-planning.md"))
    ap.add_argument("--command", default="bench/run-models")
    a = ap.parse_args()
    reps = a.reps or (1 if a.quick else 5)
    out = a.out or os.path.join(ROOT, "build-bench" if a.quick else "docs",
                                "benchmarks-models-quick.md" if a.quick else "benchmarks-models.md")
    mach = machine()
    rc, sout, _ = run([a.memplan, "strategies"])
    if rc != 0:
        log("cannot run '%s strategies'" % a.memplan)
        return 2
    strategies = [l.split()[0] for l in sout.splitlines()[1:] if l.strip()]
    strategies = [s for s in strategies if s != "auto"]
    offs = [s for s in strategies if not s.startswith("objects-")]
    objs = [s for s in strategies if s.startswith("objects-")]

    entries = corpus_entries(a.corpus)
    if a.quick:
        entries = [e for e in entries if e[0] in QUICK]
        if len(entries) != len(QUICK):
            log("quick corpus entries missing under %s" % a.corpus)
            return 2
    if not entries:
        log("no corpus under %s: run bench/corpus/regenerate" % a.corpus)
        return 2
    results = {}
    bad = []
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="run-models.") as work:
        for k, (e, _) in enumerate(entries):
            t = time.time()
            r = plan_entry(a.memplan, os.path.join(a.corpus, e + ".records.csv"), reps, work)
            results[e] = r
            if "error" in r:
                bad.append("%s: %s" % (e, r["error"]))
                log("[%d/%d] %s: ERROR %s" % (k + 1, len(entries), e, r["error"]))
                continue
            for s in strategies:
                if s not in r["strategies"] and s not in r["skipped"]:
                    bad.append("%s: %s did not run" % (e, s))
            for s, x in r["strategies"].items():
                if not x["valid"]:
                    bad.append("%s: %s invalid%s" % (e, s, "" if x["repeatable"] else " (not repeatable)"))
            if r["check"] != "valid":
                bad.append("%s: memplan check of the best plan (%s): %s" % (e, r["best"], r["check"]))
            log("[%d/%d] %s: %d buffers, best %s %.4f, %s (%.1f s)" % (
                k + 1, len(entries), e, r["buffers"], r["best"],
                r["strategies"][r["best"]]["ratio"], r["check"], time.time() - t))
    elapsed = time.time() - t_start
    ok = [e for e, _ in entries if "strategies" in results[e]]

    w = []
    p = w.append
    p("# Memory planning on real models\n")
    p("Generated by `bench/run-models` (bench/models/run.py); do not edit by hand.%s\n"
      % (" **Quick run** (%d entries, %d rep)." % (len(entries), reps) if a.quick else ""))
    p("- command: `%s`" % a.command)
    p("- date: %s" % mach["date"])
    p("- revision: %s" % mach["rev"])
    p("- CPU: %s" % mach["cpu"])
    p("- OS: %s" % mach["os"])
    p("- compiler: %s; build: Release (build-bench/)" % mach["cc"])
    p("- planner: `memplan plan --strategy all --json RECORDS` (every strategy; the CLI runs the "
      "plan checker on each plan); planning time = median of %d runs of the CLI's own per-strategy "
      "time; the best plan is written with `-o` and proved again by `memplan check`" % reps)
    p("- corpus: bench/corpus/ (bench/corpus/MANIFEST.md; rebuilt by `bench/corpus/regenerate`): "
      "%d entries; records are activations only (no weights or weight gradients)" % len(entries))
    p("- whole run: %.1f s; load average at the end: %s\n" % (elapsed, mach["load"]))

    # Findings.
    p("## Findings of this run (computed)\n")
    nvalid = sum(1 for e in ok for x in results[e]["strategies"].values() if x["valid"])
    nplans = sum(len(results[e]["strategies"]) for e in ok)
    p("- plans: %d, proved valid: %d; invalid plans, failures or check disagreements: %d%s"
      % (nplans, nvalid, len(bad), "" if not bad else " (" + "; ".join(bad[:10]) + ")"))
    atlb = [e for e in ok if results[e]["strategies"][results[e]["best"]]["footprint"] == results[e]["lb"]]
    p("- the best strategy reaches the offset lower bound on %d of %d entries" % (len(atlb), len(ok)))
    notlb = sorted(((results[e]["strategies"][results[e]["best"]]["ratio"], e) for e in ok
                    if e not in atlb), reverse=True)
    if notlb:
        p("- entries where no strategy reaches it (best ratio, bytes above the bound): " +
          ", ".join("%s %s, +%d B (%s)" % (
              e, fr(r), results[e]["strategies"][results[e]["best"]]["footprint"] - results[e]["lb"],
              results[e]["best"]) for r, e in notlb))
    wins = {}
    for e in ok:
        wins[results[e]["best"]] = wins.get(results[e]["best"], 0) + 1
    p("- best strategy per entry (first in the fixed order on ties): " +
      ", ".join("%s %d" % (s, n) for s, n in sorted(wins.items(), key=lambda x: -x[1])))
    slow = sorted(((x["ms"], e, s) for e in ok for s, x in results[e]["strategies"].items()),
                  reverse=True)[:3]
    p("- slowest cells: " + ", ".join("%s on %s %s ms" % (s, e, fms(ms)) for ms, e, s in slow))
    skipped = ["%s (%s)" % (e, ", ".join(results[e]["skipped"])) for e in ok if results[e]["skipped"]]
    if skipped:
        p("- skipped by `all` above their size limit: " + "; ".join(skipped))
    p("")

    # Summary per strategy.
    p("## Summary per strategy\n")
    p("Ratio = footprint / offset lower bound (max live bytes), over the %d entries; for shared-object "
      "strategies also against the objects lower bound, which they can reach while the offset bound "
      "is out of their reach in general. \"at LB\" = footprint equal to the bound.\n" % len(ok))
    p("| strategy | entries | geo-mean ratio | worst ratio (entry) | at offset LB | geo-mean / objects LB | at objects LB | invalid | total ms (sum of medians) |")
    p("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for s in strategies:
        xs = [(results[e]["strategies"][s]["ratio"], e) for e in ok if s in results[e]["strategies"]]
        if not xs:
            p("| %s | 0 | | | | | | | |" % s)
            continue
        g = geomean([r for r, _ in xs])
        worst = max(xs)
        at = sum(1 for e in ok if s in results[e]["strategies"]
                 and results[e]["strategies"][s]["footprint"] == results[e]["lb"])
        inv = sum(1 for e in ok if s in results[e]["strategies"] and not results[e]["strategies"][s]["valid"])
        tot = sum(results[e]["strategies"][s]["ms"] for e in ok if s in results[e]["strategies"])
        summary[s] = (g, worst)
        if s in objs:
            go = geomean([results[e]["strategies"][s]["footprint"] / float(results[e]["olb"])
                          for e in ok if s in results[e]["strategies"]])
            ato = sum(1 for e in ok if s in results[e]["strategies"]
                      and results[e]["strategies"][s]["footprint"] == results[e]["olb"])
            ostr = "%.4f | %d" % (go, ato)
        else:
            ostr = "- | -"
        p("| %s | %d | %.4f | %.4f (%s) | %d | %s | %d | %s |" % (
            s, len(xs), g, worst[0], worst[1], at, ostr, inv, fms(tot)))
    p("")

    # Paper side by side.
    paper_file = os.path.join(ROOT, "bench", "models", "pisarchyk2020-tables.csv")
    if all(("paper/" + m) in results and "strategies" in results["paper/" + m] for m in PAPER_MODELS):
        rows = read_paper(paper_file)
        p("## Beside pisarchyk2020 Tables 1-2\n")
        p("The paper's figures (Pisarchyk and Lee, *Efficient Memory Management for Deep Neural Net "
          "Inference*, 2020, sec. 6, Tables 1-2, printed \"in MB\", which are MiB) from "
          "bench/models/pisarchyk2020-tables.csv, beside memplan's footprint / 2^20 on its built-in "
          "rebuilds of the same six models (bench/corpus/paper/; how each rebuild was made and "
          "why some do not match: docs/paper-tables.md). p = paper, m = memplan; **bold** where "
          "memplan's figure, rounded to the paper's three decimals, differs. Where the lower bound "
          "or naive total differ, the records differ, and the strategy rows are not a like-for-like "
          "comparison.\n")
        for table, title in (("offsets", "Offset calculation (Table 2)"),
                             ("objects", "Shared objects (Table 1)")):
            p("### %s\n" % title)
            p("| strategy (paper row) | " + " | ".join("p %s | m %s" % (t, t) for t in PAPER_TITLES) + " |")
            p("|---" * (1 + 2 * len(PAPER_MODELS)) + "|")
            for row in [r for r in rows if r["table"] == table]:
                cells = []
                for m in PAPER_MODELS:
                    res = results["paper/" + m]
                    s = row["strategy"]
                    if s == "lower-bound":
                        v = res["lb"] if table == "offsets" else res["olb"]
                    elif s == "naive":
                        v = res["naive"]
                    else:
                        v = res["strategies"][s]["footprint"]
                    mine = "%.3f" % (v / MIB)
                    cells.append(row[m])
                    cells.append(mine if mine == row[m] else "**%s**" % mine)
                name = row["paper_row"] + ("" if row["strategy"] in ("lower-bound", "naive")
                                           else " / `%s`" % row["strategy"])
                p("| %s | %s |" % (name, " | ".join(cells)))
            p("")
        # Counting exact matches.
        match = total = 0
        for row in rows:
            for m in PAPER_MODELS:
                res = results["paper/" + m]
                s = row["strategy"]
                v = (res["lb"] if row["table"] == "offsets" else res["olb"]) if s == "lower-bound" \
                    else res["naive"] if s == "naive" else res["strategies"][s]["footprint"]
                total += 1
                match += ("%.3f" % (v / MIB)) == row[m]
        p("memplan reproduces %d of the paper's %d printed figures to the digit.\n" % (match, total))

    # Per-entry tables.
    p("## Every entry\n")
    p("### Corpus entries and the best plan\n")
    p("| entry | buffers | naive MiB | offset LB MiB | objects LB MiB | best strategy | best MiB | best / LB | `memplan check` of the best plan |")
    p("|---|---|---|---|---|---|---|---|---|")
    for e, _ in entries:
        r = results[e]
        if "strategies" not in r:
            p("| %s | error: %s | | | | | | | |" % (e, esc(r["error"])))
            continue
        b = r["strategies"][r["best"]]
        p("| %s | %d | %.3f | %.3f | %.3f | %s | %.3f | %s | %s |" % (
            e, r["buffers"], r["naive"] / MIB, r["lb"] / MIB, r["olb"] / MIB, r["best"],
            b["footprint"] / MIB, fr(b["ratio"]), r["check"]))
    p("")

    def table(title, cols, cell, note=""):
        p("### %s\n" % title)
        if note:
            p(note + "\n")
        p("| entry | " + " | ".join(cols) + " |")
        p("|---" * (len(cols) + 1) + "|")
        for e, _ in entries:
            r = results[e]
            if "strategies" not in r:
                continue
            vals = []
            for s in cols:
                x = r["strategies"].get(s)
                if x is None:
                    vals.append("skipped" if s in r["skipped"] else "FAILED")
                elif not x["valid"]:
                    vals.append("INVALID")
                else:
                    vals.append(cell(r, s, x))
            p("| %s | %s |" % (e, " | ".join(vals)))
        p("")

    def ratio_cell(r, s, x):
        best = min(y["footprint"] for y in r["strategies"].values() if y["valid"])
        t = fr(x["ratio"])
        return "**%s**" % t if x["footprint"] == best else t

    table("Footprint / offset LB: offset strategies", offs, ratio_cell,
          "Bold: the smallest valid footprint of the entry over all strategies. " +
          ("Every plan was proved valid by the checker." if not bad else
           "INVALID: the checker rejected the plan."))
    table("Footprint / offset LB: shared-object strategies", objs, ratio_cell)
    table("Footprint, MiB", strategies, lambda r, s, x: "%.3f" % (x["footprint"] / MIB))
    table("Planning time, ms (median of %d)" % reps, strategies, lambda r, s, x: fms(x["ms"]),
          "The CLI's time for each strategy (mp_plan_compute end to end), not counting reading "
          "the file or checking the plan.")

    if not a.quick:
        p("## Plots\n")
        syn = planning_table(a.planning) if os.path.exists(a.planning) else {}
        if syn:
            svg_planning_time(syn, os.path.join(a.img_dir, "planning-time.svg"))
            p("![planning time vs n](img/planning-time.svg)\n")
            p("Planning time versus n on the generated DNN-shaped instances of "
              "[benchmarks-planning.md](benchmarks-planning.md) (section 1; its table as of that "
              "file's run, `bench/run`), log-log, one line per strategy; objects-mincostflow has "
              "one point because `all` skips it above 5000 buffers.\n")
        plot_strats = [s for s in strategies if s not in ("naive", "objects-naive")]
        svg_ratio_plot(entries, results, plot_strats, os.path.join(a.img_dir, "footprint-ratio.svg"))
        p("![footprint / LB per model](img/footprint-ratio.svg)\n")
        p("Footprint / offset lower bound for every corpus entry and strategy (the naive baselines "
          "left out; left: offset strategies, right: shared objects, against the same offset "
          "bound; within a row each strategy sits at its own height; the grey tick in the right "
          "panel is the entry's shared-objects lower bound).\n")

    notes = os.path.join(ROOT, "bench", "models", "notes.md")
    if not a.quick and os.path.exists(notes):
        with open(notes) as f:
            p(f.read().rstrip("\n") + "\n")
    write_atomic(out, "\n".join(w) + "\n")
    log("wrote %s (%.1f s)" % (os.path.relpath(out, os.getcwd()), elapsed))
    if bad:
        log("%d invalid plans or failures:" % len(bad))
        for b in bad:
            log("  " + b)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
