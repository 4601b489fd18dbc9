"""bench/swap/bench.py -- AutoSwap (src/swap/, `memplan swap`) beside
zhang2019's Fig. 9 and Table II, on the corpus, and its selection time.

1. The paper's setting: VGG16 (CIFAR style: vgg16_bn's 13 convolutions and
   cifar.torch's 512-512-10 classifier) and torchvision's ResNet-50, both at
   32x32, batch 100, timed with the GTX 1080 Ti preset on the PCIe 3 link:
   the largest load reduction with no overhead per score (Table II), and
   the overhead for limits from the peak down to load_min (Fig. 9).
2. Every inference graph of the corpus trained (memplan's backward pass),
   H100 preset, PCIe 5: the no-overhead reduction of each score and BO.
3. The time of selection + BO (40 evaluations) on a synthetic chain of
   about 5000 variables (830 layers; the issue's target: under 2 s here).
4. Executed (`memplan swap --run`): small corpus graphs trained one step on
   this CPU's reference executor with the plans of BO (no overhead) and
   SWDOA (limit half-way to load_min), `cpu` device and `measured` link:
   outputs against the plain step, memory, measured stall vs simulated.
5. Keep, swap or recompute (`memplan swap --joint`): swap-only,
   recompute-only and joint plans along 12 limits, for the paper's two
   models (their preset and link) and every corpus graph (H100, PCIe 5).

Writes docs/benchmarks-swap.md and docs/img/swap-*.svg (atomically).
Run through bench/swap/run, which sets the paths.
"""

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
SCORES = ["doa", "aoa", "wdoa", "swdoa", "bo"]
PAPER = {"vgg16": (647, 447), "resnet50": (4418, 2906)}   # MB, Table II / sec. VI-B4


def log(msg):
    print(f"bench/swap: {msg}", file=sys.stderr, flush=True)


def memplan(binary, *args):
    r = subprocess.run([binary, "swap", "--json", *args], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"memplan swap {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def cifar_vgg16():
    import torch.nn as nn
    import torchvision

    class VGG16Cifar(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torchvision.models.vgg16_bn().features
            self.classifier = nn.Sequential(
                nn.Dropout(0.5), nn.Linear(512, 512), nn.BatchNorm1d(512), nn.ReLU(inplace=True),
                nn.Dropout(0.5), nn.Linear(512, 10))

        def forward(self, x):
            return self.classifier(self.features(x).flatten(1))

    return VGG16Cifar()


def export_paper_models(out_dir, batch, size):
    import torch
    import torchvision
    from memplan.trace import export_module
    models = {"vgg16": cifar_vgg16(), "resnet50": torchvision.models.resnet50(num_classes=10)}
    paths = {}
    for name, m in models.items():
        torch.manual_seed(0)
        g = export_module(m, torch.randn(batch, 3, size, size), name)
        paths[name] = os.path.join(out_dir, f"{name}.graph.json")
        with open(paths[name], "w") as f:
            json.dump(g, f)
    return paths


def mib(b):
    return b / 2 ** 20


def paper_section(binary, paths, steps):
    rows, curves = [], {}
    for name, path in paths.items():
        log(f"{name}: no-overhead")
        d = memplan(binary, path)
        rows.append((name, d))
        curve = []
        for k in range(steps + 1):
            limit = d["peak"] - (d["peak"] - d["load_min"]) * k // steps
            limit = max(limit, d["load_min"])
            log(f"{name}: limit {mib(limit):.1f} MiB")
            curve.append((limit, memplan(binary, "--mode", "limit", "--limit", str(limit), path)))
        curves[name] = curve
    return rows, curves


def table_no_overhead(rows):
    out = ["| model | peak load | load_min | " + " | ".join(SCORES) + " | paper | footprint: no swap "
           "/ BO, SmartPool / BO, auto |",
           "|---|---:|---:|" + "---:|" * len(SCORES) + "---|---|"]
    for name, d in rows:
        cells = []
        for s in d["scores"]:
            cut = 100.0 * (d["peak"] - s["peak"]) / d["peak"] if d["peak"] else 0
            cells.append(f"{mib(s['peak']):.0f} MiB (-{cut:.1f}%)")
        p = PAPER.get(name)
        paper = f"{p[0]} -> {p[1]} MB (-{100 * (p[0] - p[1]) / p[0]:.1f}%)" if p else ""
        bo = d["scores"][-1]
        foot = (f"{mib(d['footprint_auto']):.0f} / {mib(bo['footprint_smartpool']):.0f} / "
                f"{mib(bo['footprint_auto']):.0f} MiB")
        out.append(f"| {name} | {mib(d['peak']):.0f} MiB | {mib(d['load_min']):.0f} MiB | "
                   + " | ".join(cells) + f" | {paper} | {foot} |")
    return out


def table_curve(name, curve):
    out = [f"**{name}**: overhead (% of the iteration) per limit; `NO`: the simulation missed the limit",
           "", "| limit | " + " | ".join(SCORES) + " |", "|---:|" + "---:|" * len(SCORES)]
    for limit, d in curve:
        cells = [f"{100 * s['overhead']:.1f}" + ("" if s["limit_met"] else " NO") for s in d["scores"]]
        out.append(f"| {mib(limit):.0f} MiB | " + " | ".join(cells) + " |")
    return out


def svg_axes(title, xlabel, xmin, xmax, ymax, w=640, h=360, l=60, r=110, t=30, b=45):
    """An SVG's frame shared by the curve pictures: white page, title, axes
    with six ticks each, labels.  Returns the parts so far and the x and y
    maps from data to pixels."""
    def px(x):
        return l + (x - xmin) / (xmax - xmin) * (w - l - r)

    def py(y):
        return h - b - y / ymax * (h - t - b)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="18" text-anchor="middle">{title}</text>',
             f'<line x1="{l}" y1="{h - b}" x2="{w - r}" y2="{h - b}" stroke="black"/>',
             f'<line x1="{l}" y1="{t}" x2="{l}" y2="{h - b}" stroke="black"/>']
    for k in range(6):
        x = xmin + (xmax - xmin) * k / 5
        parts.append(f'<text x="{px(x):.1f}" y="{h - b + 16}" text-anchor="middle">{x:.0f}</text>')
        y = ymax * k / 5
        parts.append(f'<text x="{l - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.0f}</text>')
    parts.append(f'<text x="{(l + w - r) / 2}" y="{h - 8}" text-anchor="middle">{xlabel}</text>')
    parts.append(f'<text x="14" y="{(t + h - b) / 2}" transform="rotate(-90 14 {(t + h - b) / 2})" '
                 f'text-anchor="middle">overhead (%)</text>')
    return parts, px, py


def svg_curve(name, curve):
    """Fig. 9's picture: overhead against the limit, one line per score."""
    w, r, t = 640, 110, 30
    xs = [mib(limit) for limit, _ in curve]
    ys = [[100 * s["overhead"] for s in d["scores"]] for _, d in curve]
    ymax = max(1.0, max(max(v) for v in ys)) * 1.05
    xmin, xmax = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728"]
    parts, px, py = svg_axes(f"{name}: overhead vs memory load limit (1080 Ti preset, PCIe 3)",
                             "limit (MiB)", xmin, xmax, ymax)
    for k, score in enumerate(SCORES):
        pts = " ".join(f"{px(x):.1f},{py(v[k]):.1f}" for x, v in zip(xs, ys))
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colors[k]}" stroke-width="2"/>')
        parts.append(f'<text x="{w - r + 10}" y="{t + 16 * k + 10}" fill="{colors[k]}">{score}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def corpus_section(binary, quick):
    files = sorted(glob.glob(os.path.join(ROOT, "bench", "corpus", "inference", "*.graph.json.gz")))
    if quick:
        files = files[:3]
    out = ["| model | peak load | load_min | best score | its cut | BO | BO's cut | select ms (all) |",
           "|---|---:|---:|---|---:|---:|---:|---:|"]
    for f in files:
        name = os.path.basename(f).split(".")[0]
        log(f"corpus {name}")
        d = memplan(binary, "--device", "h100", "--link", "pcie5", f)
        by = {s["score"]: s for s in d["scores"]}
        best = min(SCORES[:4], key=lambda s: by[s]["peak"])
        cut = lambda s: 100.0 * (d["peak"] - by[s]["peak"]) / d["peak"] if d["peak"] else 0
        ms = sum(s["ms"] for s in d["scores"])
        out.append(f"| {name} | {mib(d['peak']):.1f} MiB | {mib(d['load_min']):.1f} MiB | {best} | "
                   f"-{cut(best):.1f}% | {mib(by['bo']['peak']):.1f} MiB | -{cut('bo'):.1f}% | "
                   f"{ms:.0f} |")
    return out


METHODS = ["swap", "recompute", "joint"]


def joint(binary, path, *args):
    return memplan(binary, "--joint", *args, path)


def joint_counts(d):
    """Limits where each method is feasible, and where joint is strictly
    faster than both pure methods (an infeasible one counts as slower)."""
    pts = d["points"][1:]          # the first is the plain peak: nothing to do
    feas = {m: sum(p[m]["feasible"] for p in pts) for m in METHODS}
    better = sum(1 for p in pts if p["joint"]["feasible"] and all(
        not p[m]["feasible"] or p["joint"]["total_ns"] < p[m]["total_ns"] for m in ("swap", "recompute")))
    worse = sum(1 for p in pts for m in ("swap", "recompute")
                if p[m]["feasible"] and (not p["joint"]["feasible"] or p["joint"]["total_ns"] > p[m]["total_ns"]))
    return len(pts), feas, better, worse


def table_joint_curve(name, d):
    out = [f"**{name}** ({d['candidates']} recompute candidates): overhead (% of the plain "
           "step) per limit; `-`: infeasible; the joint plan's recompute plan and swap count", "",
           "| limit | swap only | recompute only | joint | joint's plan |", "|---:|---:|---:|---:|---|"]
    for p in d["points"]:
        cell = lambda c: f"{100 * c['overhead']:.1f}" if c["feasible"] else "-"
        j = p["joint"]
        plan = f"{j['recompute']} + {j['swapped']} swapped" if j["feasible"] else ""
        out.append(f"| {mib(p['limit']):.1f} MiB | {cell(p['swap'])} | {cell(p['recompute'])} | "
                   f"**{cell(j)}** | {plan} |")
    return out


def svg_joint(name, d, setting):
    """Trade-off curves: overhead against the limit, one line per method
    (infeasible points left out)."""
    w, r, t = 640, 110, 30
    pts = d["points"]
    xs = [mib(p["limit"]) for p in pts]
    vals = [100 * p[m]["overhead"] for p in pts for m in METHODS if p[m]["feasible"]]
    ymax = max(1.0, max(vals) if vals else 1.0) * 1.05
    xmin, xmax = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    colors = {"swap": "#1f77b4", "recompute": "#ff7f0e", "joint": "#2ca02c"}
    parts, px, py = svg_axes(f"{name}: keep, swap or recompute ({setting})", "memory load limit (MiB)",
                             xmin, xmax, ymax)
    for k, m in enumerate(METHODS):
        line = [(px(mib(p["limit"])), py(100 * p[m]["overhead"])) for p in pts if p[m]["feasible"]]
        if line:
            pl = " ".join(f"{x:.1f},{y:.1f}" for x, y in line)
            parts.append(f'<polyline points="{pl}" fill="none" stroke="{colors[m]}" '
                         f'stroke-width="{3 if m == "joint" else 2}"/>')
            parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colors[m]}"/>' for x, y in line]
        parts.append(f'<text x="{w - r + 10}" y="{t + 16 * k + 10}" fill="{colors[m]}">{m}'
                     f'{" only" if m != "joint" else ""}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


RUN_MODELS = ["squeezenet1_1", "shufflenet_v2_x1_0", "resnet18", "mobilenet_v2"]


def run_section(binary, quick):
    out = ["| model | plan | swapped | outputs identical | device pool + persistent | simulated peak load "
           "| step ms (plain) | stall ms measured | simulated |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in RUN_MODELS[:2] if quick else RUN_MODELS:
        f = os.path.join(ROOT, "bench", "corpus", "inference", f"{name}.graph.json.gz")
        base = memplan(binary, "--score", "doa", "--device", "cpu", "--link", "measured", f)
        limit = (base["peak"] + base["load_min"]) // 2
        for label, args in (("bo, no overhead", ["--score", "bo"]),
                            (f"swdoa, limit {mib(limit):.1f} MiB", ["--score", "swdoa", "--mode", "limit",
                                                                  "--limit", str(limit)])):
            log(f"run {name} {label}")
            d = memplan(binary, "--run", "--device", "cpu", "--link", "measured", *args, f)
            s, r = d["scores"][0], d["run"]["runs"][0]
            out.append(f"| {name} | {label} | {r['swapped']} | {r['identical']}/{r['outputs']} | "
                       f"{mib(r['device_bytes'] + r['persistent_bytes']):.2f} MiB | {mib(s['peak']):.2f} MiB | "
                       f"{1e3 * r['seconds']:.0f} ({1e3 * d['run']['plain_seconds']:.0f}) | "
                       f"{1e3 * r['stall_seconds']:.1f} | {r['simulated_stall_ns'] / 1e6:.1f} |")
    return out


def joint_section(binary, paths, quick):
    """The paper's models (1080 Ti, PCIe 3) in full; every corpus graph
    (H100, PCIe 5) summarised."""
    paper = {name: joint(binary, path) for name, path in paths.items()}
    files = sorted(glob.glob(os.path.join(ROOT, "bench", "corpus", "inference", "*.graph.json.gz")))
    if quick:
        files = files[:2]
    rows = ["| model | plain peak | nothing fits below | limits | swap only feasible | recompute only "
            "feasible | joint feasible | joint strictly faster than both | joint slower than one |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    corpus = {}
    for f in files:
        name = os.path.basename(f).split(".")[0]
        log(f"joint {name}")
        d = joint(binary, f, "--device", "h100", "--link", "pcie5")
        corpus[name] = d
        n, feas, better, worse = joint_counts(d)
        rows.append(f"| {name} | {mib(d['plain_peak']):.1f} MiB | {mib(d['least_peak']):.1f} MiB | {n} | "
                    f"{feas['swap']} | {feas['recompute']} | {feas['joint']} | {better} | {worse} |")
    return paper, corpus, rows


def chain_graph(layers, batch=64, width=512):
    """A chain of linear+relu layers: 2 activations and 1 weight per layer."""
    tensors = [{"id": 0, "name": "x", "shape": [batch, width], "dtype": "float32",
                "bytes": batch * width * 4, "kind": "input", "alias_of": None}]
    nodes, prev = [], 0
    for i in range(layers):
        w, h, a = len(tensors), len(tensors) + 1, len(tensors) + 2
        tensors.append({"id": w, "name": f"w{i}", "shape": [width, width], "dtype": "float32",
                        "bytes": width * width * 4, "kind": "parameter", "alias_of": None,
                        "trainable": True})
        tensors.append({"id": h, "name": f"h{i}", "shape": [batch, width], "dtype": "float32",
                        "bytes": batch * width * 4, "kind": "activation", "alias_of": None})
        tensors.append({"id": a, "name": f"a{i}", "shape": [batch, width], "dtype": "float32",
                        "bytes": batch * width * 4, "kind": "activation", "alias_of": None})
        nodes.append({"id": len(nodes), "name": f"fc{i}", "op": "nn.Linear", "inputs": [prev, w],
                      "outputs": [h], "attrs": {"config": {"in_features": width,
                                                           "out_features": width, "bias": False}}})
        nodes.append({"id": len(nodes), "name": f"relu{i}", "op": "nn.ReLU", "inputs": [h],
                      "outputs": [a], "attrs": {}})
        prev = a
    tensors[prev]["kind"] = "output"
    return {"format": "memplan-graph/1", "model": {"name": f"chain{layers}"}, "tensors": tensors,
            "nodes": nodes, "order": list(range(len(nodes))), "outputs": [prev], "loss": None}


def speed_section(binary, tmp, layers):
    path = os.path.join(tmp, "chain.graph.json")
    with open(path, "w") as f:
        json.dump(chain_graph(layers), f)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        d = memplan(binary, "--score", "bo", "--min-size", "1", path)
        times.append(time.perf_counter() - t0)
    times.sort()
    bo = d["scores"][0]
    return [f"Synthetic chain of {layers} linear+ReLU layers (batch 64, width 512), trained: "
            f"{d['variables']} variables, {d['ops']} ops, {d['candidates']} candidates.  "
            f"`memplan swap --score bo --min-size 1` (read, backward pass, timing, candidates, "
            f"scores, BO with 40 simulated evaluations, output): median of 3 runs "
            f"**{times[1]:.2f} s** (selection + BO alone: {bo['ms'] / 1000:.2f} s)."]


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def write_atomic(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "memplan"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks-swap.md"))
    ap.add_argument("--img", default=os.path.join(ROOT, "docs", "img"))
    ap.add_argument("--quick", action="store_true", help="small sizes, a few corpus graphs")
    ap.add_argument("--cmd", default="bench/swap/run")
    a = ap.parse_args()
    batch, steps, layers = (8, 3, 200) if a.quick else (100, 10, 830)
    with tempfile.TemporaryDirectory() as tmp:
        log("exporting the paper's models")
        paths = export_paper_models(tmp, batch, 32)
        rows, curves = paper_section(a.bin, paths, steps)
        corpus = corpus_section(a.bin, a.quick)
        speed = speed_section(a.bin, tmp, layers)
        joints = joint_section(a.bin, paths, a.quick)
        runs = run_section(a.bin, a.quick)
    for name, curve in curves.items():
        write_atomic(os.path.join(a.img, f"swap-{name}.svg"), svg_curve(name, curve))
    for name, d in joints[0].items():
        write_atomic(os.path.join(a.img, f"swap-joint-{name}.svg"), svg_joint(name, d, "1080 Ti preset, PCIe 3"))
    for name in ("resnet50", "vit_b_16"):
        if name in joints[1]:
            write_atomic(os.path.join(a.img, f"swap-joint-corpus-{name}.svg"),
                         svg_joint(name, joints[1][name], "H100 preset, PCIe 5"))
    doc = render(a, rows, curves, corpus, speed, batch, joints, runs)
    write_atomic(a.out, doc)
    log(f"wrote {a.out}")


def render(a, rows, curves, corpus, speed, batch, joints, runs):
    lines = ["# Swapping: AutoSwap beside zhang2019", "",
             f"Produced by `{a.cmd}` on {machine()}. Every number is a simulation "
             "(`memplan swap`, docs/swap.md): op times from a device model, transfers from "
             "a link model; nothing here ran on a GPU.", "",
             "## The paper's setting: VGG16 and ResNet-50, 32x32, batch " + str(batch), "",
             "GTX 1080 Ti preset (25% of its peak FLOP/s, from zhang2019 sec. VI-B3), PCIe 3 "
             "(SINGA's measured 47.2 us + 13.2 GB/s out, 9.7 us + 12.2 GB/s in). Peak load "
             "with no swapping, and with the largest cut that causes no stall (Table II); the "
             "last column places the device residencies of BO's plan (SmartPool after AutoSwap, "
             "sec. V) beside the no-swap plan:", ""]
    lines += table_no_overhead(rows)
    lines += ["", "Overhead as the limit goes from the peak down to load_min (Fig. 9):", ""]
    for name, curve in curves.items():
        lines += [f"![{name}](img/swap-{name}.svg)", ""] + table_curve(name, curve) + [""]
    lines += ["## Every corpus graph, trained, H100 preset, PCIe 5", "",
              "The largest load reduction with no stall: the best of the four scores and BO.", ""]
    lines += corpus + ["", "## Selection time", ""] + speed + [""]
    lines += ["## Executed on this CPU", "",
              "`memplan swap --run` (docs/swap.md, \"Executed for real\"): each plan run for real on "
              "the reference executor, with a device pool, a host pool and two copy threads. The `cpu` "
              "device preset and the `measured` link time the plan on this machine. Its outputs are "
              "compared bit for bit with the plain step's. Step times and stalls are single runs on a "
              "shared 2-core machine.", ""] + runs + [""]
    paper, jcorpus, jrows = joints
    lines += ["## Keep, swap or recompute", "",
              "`memplan swap --joint` (src/swap/joint.c, docs/swap.md): at each of 12 memory load "
              "limits, from the plain step's peak down to the least any candidate reaches, the "
              "fastest swap-only plan (AutoSwap, limit mode, SWDOA), the fastest recompute-only plan "
              "(the recompute candidates that fit alone) and the joint plan (every candidate, "
              "swapping on top where it does not fit alone). Overheads are simulated step time over "
              "the plain step's compute time; recomputation is timed like every other op. Default "
              "candidate size (1 MiB).", ""]
    for name, d in paper.items():
        lines += [f"![{name} joint](img/swap-joint-{name}.svg)", ""] + table_joint_curve(name, d) + [""]
    lines += ["Every corpus graph, trained, H100 preset, PCIe 5: per graph, the 11 limits below "
              "the plain peak, where each method is feasible, where the joint plan is strictly "
              "faster than both pure methods (an infeasible one counts as slower), and where it is "
              "slower than one (must be 0: the joint candidates include both).", ""] + jrows + [""]
    for name in ("resnet50", "vit_b_16"):
        if name in jcorpus:
            lines += [f"![{name} joint](img/swap-joint-corpus-{name}.svg)", ""]
    notes = os.path.join(ROOT, "bench", "swap", "notes.md")
    if not a.quick and os.path.exists(notes):        # the reading, appended verbatim
        with open(notes) as f:
            lines += [f.read()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
