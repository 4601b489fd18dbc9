#!/usr/bin/python3
"""browser.py MEMPLAN OUTDIR -- loads `memplan report` pages in headless
Chromium and checks the DOM the page's script leaves behind.

Pages: MobileNet v2's records, a training graph whose names are hostile
markup (tests/report/evil.json), and a trace.  For each: the script ran to
its end (<html data-rendered="1">) with no error (data-errors="0": the page
counts window errors and console.error), its #selftest (zoom in, hover a
buffer for its tooltip, reset, zoom to the peak) passed, the table has its rows, the plan
has one rect.buf per buffer of the page's data and names on the largest,
the load curve and its peak mark are drawn, the peak list has its rows, and
no name became markup.  A page whose data is broken on purpose must report
an error, so the error check can fail.  Screenshots go to OUTDIR.  Exit 77
(skipped) when Chromium is not installed."""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(exe, page, shot=None, hash=""):
    args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--user-data-dir=" + os.path.join(os.path.dirname(page), "profile")]
    if shot:
        args += ["--screenshot=" + shot, "--window-size=1200,2000"]
    else:
        args += ["--dump-dom"]
    out = subprocess.run(args + ["file://" + page + hash], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=90, check=True)
    return out.stdout.decode("utf-8", "replace")


FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAILED:", what, file=sys.stderr)


def data_of(page):
    text = open(page, encoding="utf-8").read()
    m = re.search(r'<script id="mp-data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def check_page(exe, page, label, rows, shot):
    dom = browse(exe, page, hash="#selftest")
    d = data_of(page)
    root = re.search(r"<html[^>]*>", dom).group(0)
    check('data-rendered="1"' in root, label + ": the script did not finish")
    check('data-errors="0"' in root, label + ": script errors " + root)
    check('data-selftest="ok"' in root, label + ": zoom/hover self-test: " + root)
    check(len(re.findall(r'<tr class="row', dom)) == rows, label + ": %d table rows" % rows)
    check(dom.count('<tr class="row best') == 1, label + ": one best row")
    nbuf = len(d["b"])
    check(nbuf > 0 and len(re.findall(r'<rect class="buf"', dom)) == nbuf,
          label + ": %d rect.buf in svg#plan" % nbuf)
    check('<svg id="plan"' in dom and 'class="peak-band"' in dom, label + ": plan and peak band")
    labels = re.search(r'<g class="labels"[^>]*>(.*?)</g>', dom, re.S)
    check(labels and labels.group(1).count("<text") >= 1, label + ": names on the largest buffers")
    load = re.search(r'<svg id="load".*?</svg>', dom, re.S)
    check(load and re.search(r'class="curve"[^>]*d="M[^"]+Z"', load.group(0)),
          label + ": load curve drawn")
    check(load and "<circle" in load.group(0) and ">peak " in load.group(0),
          label + ": peak marked on the load curve")
    if d["kind"] == "trace":
        want = None
    else:   # buffers live at the peak, at most 100 listed
        t = d["peak"]["t"]
        want = min(100, sum(1 for b in d["b"] if b[1] <= t <= b[2]))
    got = len(re.findall(r'<tr class="peak-row"', dom))
    check(got > 0 and (want is None or got == want), label + ": peak list has %d rows" % got)
    check(dom.count("<script") == 3, label + ": exactly the page's 3 script elements")
    browse(exe, page, shot)
    check(os.path.getsize(shot) > 10000, label + ": screenshot " + shot)
    return dom


def main():
    memplan, outdir = sys.argv[1], sys.argv[2]
    exe = chromium()
    if not exe:
        print("report_browser: SKIPPED: chromium not found (scripts/setup-debian installs it)")
        return 77
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="mp-report-")
    try:
        run = lambda *a: subprocess.run([memplan] + list(a), check=True, stdout=subprocess.DEVNULL)
        strategies = subprocess.run([memplan, "strategies"], check=True, stdout=subprocess.PIPE)
        n_strategies = len(re.findall(r"^[a-z]", strategies.stdout.decode(), re.M)) - 1
        run("models", "--write", tmp)
        pages = {}
        for name, args in (("records", [os.path.join(tmp, "mobilenet_v2.records.csv")]),
                           ("graph", ["--train", os.path.join(HERE, "evil.json")]),
                           ("trace", [os.path.join(TESTS, "cli", "trace", "loop.trace")])):
            pages[name] = os.path.join(tmp, name + ".html")
            run("report", "-o", pages[name], *args)
        check_page(exe, pages["records"], "records", n_strategies,
                   os.path.join(outdir, "report-records.png"))
        # none, in-place, sharing, every planner, order search + auto
        dom = check_page(exe, pages["graph"], "graph", n_strategies + 4,
                         os.path.join(outdir, "report-graph.png"))
        check("<img" not in dom and '<b>"bold"' not in dom, "graph: a name became markup")
        check(dom.count('<tr class="train-row"') == 5, "graph: recompute and swap rows")
        evil = 'h2</script><script>alert("x")</script>\'q\''
        check(html.escape(evil, quote=False) in dom, "graph: the hostile name shown as text")
        check_page(exe, pages["trace"], "trace", n_strategies,
                   os.path.join(outdir, "report-trace.png"))
        # The error check itself: a page whose data does not parse.
        broken = os.path.join(tmp, "broken.html")
        text = open(pages["records"], encoding="utf-8").read()
        open(broken, "w", encoding="utf-8").write(
            text.replace('type="application/json">{', 'type="application/json">{,', 1))
        root = re.search(r"<html[^>]*>", browse(exe, broken)).group(0)
        check('data-errors="0"' not in root and "data-errors" in root,
              "broken page: the error was not counted: " + root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("report_browser: %s" % ("%d failed" % len(FAILED) if FAILED else "all passed"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
