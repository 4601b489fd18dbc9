"""The graph-layer benchmark behind bench/graph/run (see that script).

    /usr/bin/python3 bench/graph/run.py --memplan BIN [--quick] [--out FILE]
        [--command TEXT]

For every graph of bench/corpus/ it asks 'BIN graph --json' for the memory
of each stage -- none, in-place, sharing (the counter algorithm), sharing
that is safe for parallel execution (exact ancestor relation and path
colouring), every core planner placing the in-place storages -- in the
given order and in a searched order, on three kinds of graphs:

  forward    the fx-level inference graphs (batch 1), as exported;
  backward   the same graphs with memplan's own backward pass ('--train':
             softmax cross-entropy loss, explicit gradient graph);
  aten       PyTorch's own aten-level training graphs (forward + backward
             as recorded by make_fx), as exported.

Every plan is proven by the checker inside 'memplan graph'.  Writes one
Markdown file (temporary name, then rename).  Exit status 1 if any run
failed.
"""

import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

MIB = float(1 << 20)
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
QUICK = [("forward", "inference/squeezenet1_1"), ("backward", "inference/squeezenet1_1"),
         ("aten", "train/mobilenet_v2-b16")]


def log(msg):
    sys.stderr.write("graph-bench: %s\n" % msg)
    sys.stderr.flush()


def memplan_graph(memplan, path, extra):
    cmd = [memplan, "graph", "--json", "--inplace", "--share", "--parallel-safe",
           "--strategy", "all"] + extra + [path]
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        return None, "%s: exit %d: %s" % (" ".join(cmd[1:]), p.returncode, p.stderr.strip())
    out = json.loads(p.stdout)
    out["wall_s"] = time.time() - t0
    return out, None


def entries(corpus, quick):
    if quick:
        return QUICK
    out = []
    inf = sorted(f[:-len(".graph.json.gz")] for f in os.listdir(os.path.join(corpus, "inference"))
                 if f.endswith(".graph.json.gz"))
    out += [("forward", "inference/" + n) for n in inf]
    out += [("backward", "inference/" + n) for n in inf]
    trn = sorted(f[:-len(".graph.json.gz")] for f in os.listdir(os.path.join(corpus, "train"))
                 if f.endswith(".graph.json.gz"))
    out += [("aten", "train/" + n) for n in trn]
    return out


def stage_map(res):
    return {s["stage"]: s for s in res["stages"] if not s.get("skipped")}


def mib(x):
    return "%.2f" % (x / MIB)


def best_planner(st):
    best = None
    for k, s in st.items():
        if k.startswith("inplace+") and (best is None or s["footprint"] < best[1]):
            best = (k[len("inplace+"):], s["footprint"])
    return best


def _models_run():
    """bench/models/run.py, for the helpers both benchmarks share."""
    spec = importlib.util.spec_from_file_location(
        "memplan_models_run", os.path.join(ROOT, "bench", "models", "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_M = _models_run()


def geomean(xs):
    return _M.geomean([x for x in xs if x > 0])


machine = _M.machine


def table(kind, rows):
    lines = ["| graph | nodes | none | in-place | sharing | ∥ ancestor | ∥ colour | "
             "best planner | bound | none / sharing | searched: bound | searched: best | "
             "order gain |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for name, g, s in rows:
        st, ss = stage_map(g), stage_map(s)
        bp, sbp = best_planner(st), best_planner(ss)
        none = st["none"]["footprint"]
        share = st["share"]["footprint"]
        gain = 100.0 * (1 - ss_bound(s) / g["lower_bound_inplace"]) if g["lower_bound_inplace"] else 0
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s (%s) | %s | %.2f | %s | %s | %.1f%% |" % (
            name, g["nodes"], mib(none), mib(st["inplace"]["footprint"]), mib(share),
            mib(st["share-parallel-ancestor"]["footprint"]),
            mib(st["share-parallel-colour"]["footprint"]), mib(bp[1]), bp[0],
            mib(g["lower_bound_inplace"]), none / share if share else 0,
            mib(ss_bound(s)), mib(sbp[1]), gain))
    return lines


def ss_bound(s):
    return s["lower_bound_inplace"]


def planner_table(rows):
    """Per graph, every core planner's footprint over the in-place bound."""
    names = []
    for _, g, _ in rows:
        for k in stage_map(g):
            if k.startswith("inplace+") and k[len("inplace+"):] not in names:
                names.append(k[len("inplace+"):])
    lines = ["Each planner placing the in-place storages, per graph (footprint / bound; "
             "1.000 = optimal; - = skipped at this size):", "",
             "| graph | bound MiB | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for name, g, _ in rows:
        st, lb = stage_map(g), g["lower_bound_inplace"]
        cells = []
        for n in names:
            s = st.get("inplace+" + n)
            cells.append("%.3f" % (s["footprint"] / lb) if s and lb else "-")
        lines.append("| %s | %s | %s |" % (name, mib(lb), " | ".join(cells)))
    return lines


def summary(kind, rows):
    def gm(key):
        return geomean([stage_map(g)["none"]["footprint"] / stage_map(g)[key]["footprint"]
                        for _, g, _ in rows if stage_map(g)[key]["footprint"]])
    planners = {}
    for _, g, _ in rows:
        for k, s in stage_map(g).items():
            if k.startswith("inplace+") and g["lower_bound_inplace"]:
                planners.setdefault(k[len("inplace+"):], []).append(
                    s["footprint"] / g["lower_bound_inplace"])
    lines = ["Geometric means over the %d %s graphs: none / in-place %.2f, none / sharing %.2f, "
             "none / parallel-safe sharing (ancestor) %.2f, (colour) %.2f, none / best planner %.2f; "
             "searched order lowers the in-place bound by %.1f%% (geomean of bound ratios %.4f)." % (
                 len(rows), kind, gm("inplace"), gm("share"), gm("share-parallel-ancestor"),
                 gm("share-parallel-colour"),
                 geomean([stage_map(g)["none"]["footprint"] / best_planner(stage_map(g))[1]
                          for _, g, _ in rows]),
                 100 * (1 - geomean([ss_bound(s) / g["lower_bound_inplace"]
                                     for _, g, s in rows if g["lower_bound_inplace"]])),
                 geomean([ss_bound(s) / g["lower_bound_inplace"]
                          for _, g, s in rows if g["lower_bound_inplace"]])),
             "",
             "| planner (placing in-place storages) | geomean footprint / bound | worst | graphs |",
             "|---|---:|---:|---:|"]
    for k in sorted(planners, key=lambda k: (geomean(planners[k]), k)):
        v = planners[k]
        lines.append("| %s | %.4f | %.4f | %d |" % (k, geomean(v), max(v), len(v)))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memplan", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--command", default="bench/graph/run")
    a = ap.parse_args()
    corpus = os.path.join(ROOT, "bench", "corpus")
    out = a.out or os.path.join(ROOT, "docs", "benchmarks-graph.md")
    t_start = time.time()
    rows = {"forward": [], "backward": [], "aten": []}
    failed = []
    work = entries(corpus, a.quick)
    for i, (kind, stem) in enumerate(work):
        path = os.path.join(corpus, stem + ".graph.json.gz")
        extra = ["--train"] if kind == "backward" else []
        log("[%d/%d] %s %s" % (i + 1, len(work), kind, stem))
        g, err = memplan_graph(a.memplan, path, extra)
        s, err2 = (None, None) if err else memplan_graph(a.memplan, path, extra + ["--order", "search"])
        if err or err2:
            failed.append(err or err2)
            log("FAILED: %s" % (err or err2))
            continue
        rows[kind].append((stem.split("/", 1)[1], g, s))
    minutes = (time.time() - t_start) / 60
    md = ["# Graph-layer benchmark: in-place, sharing, planners and order search",
          "",
          "Generated by `%s` on %s (%.1f minutes), Release build." % (
              a.command, datetime.date.today().isoformat(), minutes),
          "Machine: %(cpu)s; %(os)s; %(cc)s; memplan %(rev)s; load average at the end "
          "%(load)s." % machine(),
          "The reading at the end is hand-written (`bench/graph/notes.md`, appended verbatim).",
          "",
          "Each graph is planned by `memplan graph --json --inplace --share --parallel-safe "
          "--strategy all [--train] [--order search] GRAPH`. Memory is MiB of activations "
          "(parameters and parameter gradients are persistent and not planned; graph inputs "
          "and outputs are planned and never reused). Columns:",
          "",
          "- **none**: every tensor its own memory; **in-place**: outputs written over inputs "
          "when the op allows it and no other reader is pending; **sharing**: the counter "
          "algorithm (chen2016 §3, the MXNet note) with in-place; **∥ ancestor / ∥ colour**: "
          "sharing that never lets two ops that could run in parallel share memory (exact "
          "ancestor relation / the note's path colouring).",
          "- **best planner**: the smallest of every core planner (offsets and shared objects) "
          "placing the in-place storages; **bound**: the offsets lower bound of those storages "
          "(most bytes live at one step) -- no placement in this order can go below it.",
          "- **searched**: the same after `--order search` (memory-aware topological order); "
          "**order gain**: how much lower the bound of the searched order is.",
          ""]
    titles = {"forward": "Forward (inference) graphs, batch 1",
              "backward": "Training graphs built by memplan's backward pass (`--train`), batch 1",
              "aten": "PyTorch's aten-level training graphs (make_fx), as exported"}
    for kind in ("forward", "backward", "aten"):
        if not rows[kind]:
            continue
        md += (["## " + titles[kind], ""] + table(kind, rows[kind]) + [""] +
               summary(kind, rows[kind]) + [""] + planner_table(rows[kind]) + [""])
    if failed:
        md += ["## Failures", ""] + ["- " + f for f in failed] + [""]
    notes = os.path.join(ROOT, "bench", "graph", "notes.md")
    if not a.quick and os.path.exists(notes):
        with open(notes) as f:
            md += [f.read().rstrip("\n"), ""]
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".bench-graph-")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(md))
    os.rename(tmp, out)
    log("wrote %s (%d graphs, %d failed, %.1f min)" % (out, sum(map(len, rows.values())),
                                                       len(failed), minutes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
