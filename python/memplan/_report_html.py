"""The HTML page of a memplan.torch report (memplan/_report.py).

One self-contained file: inline CSS, two inline SVG pictures (the load
curve drawn here, the best plan drawn by the library), no script and no
reference to anything outside the page.  Every name from the model is
escaped (esc).
"""

import html
import math
import os
import re
import tempfile

from . import lib
from ._report import fmt_bytes, peak_caption, plan_problem, totals

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}
td,th{padding:2px 10px;text-align:right;white-space:nowrap}
th{background:#f0f0f0}td.l,th.l{text-align:left}
tr:nth-child(even) td{background:#fafafa}
tr.gradient td{color:#7a2e00}
.bar{display:inline-block;height:.7em;background:#6b8fd6;margin-right:4px}
.note{color:#555}svg{max-width:100%;height:auto}
"""


def esc(s):
    """s as HTML text or attribute value: & < > " ' escaped."""
    return html.escape(str(s), quote=True)


def render(r, depth):
    mode = "training step (forward, loss, backward)" if r.train else "inference"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>memplan report: {esc(r.name)}</title><style>{_CSS}</style></head><body>",
             f"<h1>memplan report: {esc(r.name)}</h1>",
             f'<p class="note">{esc(mode)}; {len(r.graph.nodes)} ops, {len(r.curve)} steps. '
             f"Capture {r.capture_s:.2f} s (tracing, running the model once); planning "
             f"{r.planning_s:.3f} s; analysis {r.analysis_s:.3f} s.</p>"]
    parts += _totals(r) + _plans(r)
    parts += ["<h2>Load curve</h2>", curve_svg(r),
              '<p class="note">Bytes live at each step with no memory reuse (the usage '
              "records); its maximum is the lower bound.</p>"]
    parts += _modules(r, depth) + _live(r) + _picture(r)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _table(head, rows, left=1, classes=None):
    """An HTML table; cells are escaped here, except those given as
    _Raw (markup this module made)."""
    out = ["<table><tr>" + "".join(f'<th{" class=l" if i < left else ""}>{esc(h)}</th>'
                                   for i, h in enumerate(head)) + "</tr>"]
    for k, row in enumerate(rows):
        cls = f' class="{esc(classes[k])}"' if classes else ""
        cells = "".join(f'<td{" class=l" if i < left else ""}>'
                        f"{c.markup if isinstance(c, _Raw) else esc(c)}</td>"
                        for i, c in enumerate(row))
        out.append(f"<tr{cls}>{cells}</tr>")
    return "\n".join(out + ["</table>"])


class _Raw:
    __slots__ = ("markup",)

    def __init__(self, markup):
        self.markup = markup


def _totals(r):
    rows = [(k, fmt_bytes(v), f"{v:,}") for k, v in totals(r)]
    rows.append(("best plan / lower bound", f"{r.ratio:.3f}", ""))
    return ["<h2>Totals</h2>", _table(["", "size", "bytes"], rows),
            '<p class="note">Activations are every tensor an op produces (and the inputs); '
            "parameters and their gradients live through the whole step and are not planned. "
            "In-place ops can take a plan below the first bound, never below the second.</p>"]


def _plans(r):
    rows = [(p.label, p.placement, fmt_bytes(p.footprint),
             f"{p.footprint / max(1, r.lower_bound):.3f}", f"{p.seconds * 1e3:.1f}")
            for p in r.plans]
    return ["<h2>Plans (each proved by the checker)</h2>",
            _table(["plan", "placement", "footprint", "/ lower bound", "ms"], rows, left=2)]


def _modules(r, depth):
    head = ["module", "activations", "%"] + (["forward", "backward"] if r.train else []) + \
        ["own", "params", "tensors"]
    rows = []
    for m in r.modules:
        if depth is not None and m.depth > depth:
            continue
        pct = 100 * m.bytes / r.naive_bytes if r.naive_bytes else 0
        name = _Raw(f'<span style="padding-left:{1.2 * m.depth:.1f}em">'
                    f"{esc(r.module_label(m.path))}</span>")
        row = [name, _Raw(f'<span class="bar" style="width:{pct * 0.8:.1f}px"></span>'
                          f"{esc(fmt_bytes(m.bytes))}"), f"{pct:.1f}"]
        if r.train:
            row += [fmt_bytes(m.forward_bytes), fmt_bytes(m.backward_bytes)]
        rows.append(row + [fmt_bytes(m.own_bytes), fmt_bytes(m.param_bytes), m.tensors])
    note = ("Bytes of the activations each module produced, its submodules included; "
            "<i>own</i>: produced by its own code. % of the naive total.")
    if not r.scoped:
        note += " Functions outside modules could not be placed: (functional)."
    return ["<h2>Activation memory by module</h2>", f'<p class="note">{note}</p>',
            _table(head, rows)]


def _live(r):
    rows = [(t.id, t.name, t.node, t.op, r.module_label(t.module),
             "x".join(map(str, t.shape)) or "scalar", t.dtype, fmt_bytes(t.bytes), t.role)
            for t in r.live_at_peak]
    return ["<h2>Live at the peak</h2>", f"<p>{esc(peak_caption(r))}</p>",
            _table(["tensor id", "tensor", "node", "op", "module", "shape", "dtype", "bytes",
                    "role"], rows, left=7, classes=[t.role for t in r.live_at_peak])]


def _picture(r):
    svg = plan_svg(r)
    if not svg:
        return []
    return [f"<h2>The best plan: {esc(r.plan_label)} ({esc(r.plan.placement)})</h2>",
            '<p class="note">Each tensor is a rectangle: time across in half-steps (step s is '
            "2s; an op writing over its input writes at 2s+1), its place in the arena up. "
            "Hover a rectangle for its tensor.</p>", svg]


def plan_svg(r):
    """The best plan drawn by the library (lib.Plan.write_svg), with the
    tensors' names in the tooltips and on the largest ones, ready to
    inline; "" with no tensors."""
    problem, offsets = plan_problem(r.graph, r.plan)
    if not len(problem):
        return ""
    plan = lib.Plan(problem, offsets, strategy=r.plan.placement)
    plan.check()
    names = {t.id: t.name for t in r.graph.tensors}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "plan.svg")
        plan.write_svg(path, title=r.name, lower_bound=problem.bounds().offsets,
                       names=[names.get(rec.id, "") for rec in problem])
        with open(path, encoding="utf-8") as f:
            svg = f.read()
    svg = re.sub(r"<\?xml[^>]*\?>\s*", "", svg)
    return svg.replace(' xmlns="http://www.w3.org/2000/svg"', "", 1)


# -- the load curve ----------------------------------------------------------

def _unit(top):
    for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if top >= size:
            return name, size
    return "B", 1


def nice_ticks(top, want=6, integer=False):
    """Tick values 0, d, 2d, ... reaching top, with d = 1, 2 or 5 x 10^k
    (at least 1 when integer)."""
    if top <= 0:
        return [0]
    raw = top / want
    mag = 10 ** math.floor(math.log10(raw))
    d = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    if integer:
        d = max(1, round(d))
    n = math.ceil(top / d - 1e-9)
    return [round(i * d, 12) for i in range(n + 1)]


def curve_svg(r, w=960, h=340):
    """The load curve as an inline SVG: step s spans [s, s+1); the peak
    marked, the best plan's arena and the backward pass drawn as lines."""
    n = len(r.curve)
    if not n:
        return "<p>No steps.</p>"
    left, right, top_m, bottom = 90, 30, 30, 50
    uname, usize = _unit(max(r.peak_bytes, r.footprint))
    yt = nice_ticks(max(r.peak_bytes, r.footprint, 1) / usize)
    ymax = yt[-1] * usize or 1
    xt = nice_ticks(n, 10, integer=True)

    def x(s):
        return left + (w - left - right) * s / max(xt[-1], 1)

    def y(b):
        return h - bottom - (h - top_m - bottom) * b / ymax
    out = [f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" '
           'font-size="12" role="img">', f"<title>live bytes per step: {esc(r.name)}</title>",
           _axes(x, y, xt, yt, usize, uname, w, h, left, bottom)]
    path = [f"M{x(0):.1f} {y(0):.1f}"]
    for s, v in enumerate(r.curve):
        path.append(f"V{y(v):.1f}H{x(s + 1):.1f}")
    path.append(f"V{y(0):.1f}Z")
    out.append(f'<path d="{"".join(path)}" fill="#c9d7f2" stroke="#2f5bb7" stroke-width="1"/>')
    out += _marks(r, x, y, w)
    out.append("</svg>")
    return "\n".join(out)


def _axes(x, y, xt, yt, usize, uname, w, h, left, bottom):
    g = ['<g stroke="#ddd">']
    g += [f'<line x1="{left}" x2="{x(xt[-1]):.1f}" y1="{y(v * usize):.1f}" '
          f'y2="{y(v * usize):.1f}"/>' for v in yt]
    g.append("</g>")
    g += [f'<text x="{left - 6}" y="{y(v * usize) + 4:.1f}" text-anchor="end">{v:g}</text>'
          for v in yt]
    g += [f'<line x1="{x(s):.1f}" x2="{x(s):.1f}" y1="{h - bottom}" y2="{h - bottom + 5}" '
          f'stroke="#555"/><text x="{x(s):.1f}" y="{h - bottom + 18}" '
          f'text-anchor="middle">{s:g}</text>' for s in xt]
    g.append(f'<path d="M{left} {y(yt[-1] * usize):.1f}V{h - bottom}H{x(xt[-1]):.1f}" '
             'fill="none" stroke="#555"/>')
    g.append(f'<text x="{(left + x(xt[-1])) / 2:.1f}" y="{h - 12}" text-anchor="middle">'
             "step</text>")
    g.append(f'<text transform="translate(20 {(h - bottom) / 2 + 10:.1f}) rotate(-90)" '
             f'text-anchor="middle">live bytes ({uname})</text>')
    return "\n".join(g)


def _marks(r, x, y, w):
    out = []
    if r.backward_step is not None:
        bx = x(r.backward_step)
        out.append(f'<line x1="{bx:.1f}" x2="{bx:.1f}" y1="{y(0):.1f}" y2="30" stroke="#7a2e00" '
                   f'stroke-dasharray="3 3"/><text x="{bx + 4:.1f}" y="42" fill="#7a2e00">'
                   "backward</text>")
    fy = y(r.footprint)
    out.append(f'<line x1="{x(0):.1f}" x2="{x(len(r.curve)):.1f}" y1="{fy:.1f}" y2="{fy:.1f}" '
               'stroke="#1a7f37" stroke-dasharray="7 4"><title>best plan arena '
               f"{esc(fmt_bytes(r.footprint))}</title></line>")
    px, py = x(r.peak_step + 0.5), y(r.peak_bytes)
    anchor = "end" if px > w / 2 else "start"
    dx = -8 if anchor == "end" else 8
    label = f"peak {fmt_bytes(r.peak_bytes)} at step {r.peak_step} ({r.peak_node})"
    out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="#b03020"><title>'
               f"{esc(label)}</title></circle>")
    out.append(f'<text x="{px + dx:.1f}" y="{py - 6:.1f}" text-anchor="{anchor}" '
               f'fill="#b03020">{esc(label)}</text>')
    out.append(f'<text x="{x(len(r.curve)):.1f}" y="{fy + 14:.1f}" text-anchor="end" '
               f'fill="#1a7f37">best plan {esc(fmt_bytes(r.footprint))}</text>')
    return out

