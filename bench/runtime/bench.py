"""Driver for bench/runtime/run: every workload x allocator in a fresh process.

    /usr/bin/python3 bench/runtime/bench.py --preload SO --micro BIN --period BIN
        --out FILE.md [--quick] [--workload MODEL:BATCH:MODE:WARMUP:STEPS ...]
        [--alloc NAME,NAME]

Peak RSS is the child's ru_maxrss (os.wait4).  Step times, the checksum,
VmHWM and VmRSS at the end come from workload.py's JSON line.  memplan's
counters come from its MEMPLAN_STATS file.  --workload (repeatable) replaces
the workload list and --alloc restricts the allocators (glibc always runs:
it is the reference); both are for checks of one workload, and skip the
micro-benchmarks.  Exit status 1 if any run failed or any checksum differs
from the glibc run of the same workload.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIBDIR = "/usr/lib/x86_64-linux-gnu"
SYSTEM_ALLOCATORS = [
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    ("mimalloc", "libmimalloc.so.2", "libmimalloc2.0"),
    ("tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
]
# (model, batch, mode, warm-up steps, timed steps).  memplan learns during
# the first 3 steps of an inference loop and replays from the 4th (training:
# from the 5th, since its first step allocates the optimizer state and is
# unlike the others; docs/arena.md), so warm-up 5 (training 6) leaves every
# timed step replayed, with a step to spare.  About 20 minutes on 2 cores.
FULL = [
    ("resnet50", 1, "infer", 5, 20),
    ("mobilenet_v2", 1, "infer", 5, 20),
    ("inception_v3", 1, "infer", 5, 15),
    ("resnet50", 32, "infer", 5, 10),
    ("mobilenet_v2", 32, "infer", 5, 10),
    ("inception_v3", 32, "infer", 5, 8),
    ("resnet18", 16, "train", 6, 10),
]
QUICK = [("mobilenet_v2", 1, "infer", 5, 5), ("transformer", 0, "service", 14, 2)]
# The varying-shape services (service.py; --services): a CNN with random
# batch sizes 1/2/4/8 and a Transformer encoder with random sequence lengths
# 32/64/128/256.  memplan learns their four patterns during the warm-up
# requests (docs/arena.md, "Several patterns").
SERVICES = [("cnn", 0, "service", 20, 16), ("transformer", 0, "service", 20, 16)]


def allocators(preload, quick, only=None):
    out = [("glibc", None)]
    if not quick:
        for name, so, _ in SYSTEM_ALLOCATORS:
            out.append((name, os.path.join(LIBDIR, so)))
    out.append(("memplan", preload))
    if only:
        out = [a for a in out if a[0] == "glibc" or a[0] in only]
    return out


def wl_key(wl):
    """The row name of a workload."""
    if wl[2] == "service":
        return "%s service" % wl[0]
    return "%s b%d %s" % (wl[0], wl[1], wl[2])


def parse_workload(spec):
    """MODEL:BATCH:MODE:WARMUP:STEPS -> a workload tuple."""
    f = spec.split(":")
    if len(f) != 5 or f[2] not in ("infer", "train", "service"):
        raise SystemExit("bench.py: --workload wants MODEL:BATCH:infer|train|service:WARMUP:STEPS, not " + spec)
    return (f[0], int(f[1]), f[2], int(f[3]), int(f[4]))


def run_period(binary, quick):
    """Runs bench_period; returns (rows, error)."""
    p = subprocess.run([binary] + (["--quick"] if quick else []), capture_output=True, text=True)
    rows = [dict(kv.split("=", 1) for kv in l.split() if "=" in kv)
            for l in p.stdout.splitlines() if l.startswith("case=")]
    return rows, ("" if p.returncode == 0 else "exit %d: %s" % (p.returncode, p.stderr.strip()))


def run_one(wl, alloc, so):
    model, batch, mode, warm, steps = wl
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("MEMPLAN_")}
    stats_path = None
    if so:
        if not os.path.exists(so):
            return {"error": "missing " + so}
        env["LD_PRELOAD"] = so
    if alloc == "memplan":
        fd, stats_path = tempfile.mkstemp(prefix="memplan-stats-")
        os.close(fd)
        env["MEMPLAN_STATS"] = stats_path
    cmd = ["/usr/bin/python3", os.path.join(HERE, "workload.py"), model,
           str(batch), mode, str(warm), str(steps)]
    if mode == "service":
        cmd = ["/usr/bin/python3", os.path.join(HERE, "service.py"), model, str(warm), str(steps)]
    load_before = os.getloadavg()[0]
    t0 = time.time()
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        p = subprocess.Popen(cmd, env=env, stdout=fo, stderr=fe)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(), fe.read().decode()
    res = {"wall_s": time.time() - t0, "maxrss_kib": ru.ru_maxrss, "rc": p.returncode,
           "load_before": load_before, "load_after": os.getloadavg()[0],
           "cpu_s": ru.ru_utime + ru.ru_stime}
    line = [l for l in out.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not line:
        res["error"] = "exit %d: %s" % (p.returncode, err.strip().splitlines()[-1:] or "")
    else:
        res.update(json.loads(line[-1]))
        # the workload resets the peak after its warm-up (workload.py)
        res["peak_kib"] = max(ru.ru_maxrss, res.get("hwm_warmup_kib", -1))
    if stats_path:
        st = {}
        with open(stats_path) as f:
            for l in f:
                parts = l.split()
                if len(parts) == 2 and not l.startswith("#"):
                    st[parts[0]] = parts[1]
        os.unlink(stats_path)
        res["memplan"] = st
    return res


def mib(kib):
    return kib / 1024.0


def pkg_version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                              capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for l in f:
            if l.startswith("model name"):
                cpu = l.split(":", 1)[1].strip()
                break
    mem = "?"
    with open("/proc/meminfo") as f:
        for l in f:
            if l.startswith("MemTotal"):
                mem = "%.1f GiB" % (int(l.split()[1]) / 1048576)
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "mem": mem, "glibc": pkg_version("libc6"),
            "torch": pkg_version("python3-torch"),
            "torchvision": pkg_version("python3-torchvision"),
            "openblas": pkg_version("libopenblas0"),
            **{n: pkg_version(p) for n, _, p in SYSTEM_ALLOCATORS}}


def run_micro(binary, allocs, records, quick):
    """Runs the micro-benchmark under every allocator, and in arena mode."""
    reps = "3" if quick else "7"
    iters = "20" if quick else "200"
    rows = []
    for alloc, so in allocs:
        env = {k: v for k, v in os.environ.items()
               if k != "LD_PRELOAD" and not k.startswith("MEMPLAN_")}
        if so:
            env["LD_PRELOAD"] = so
        if alloc == "memplan":
            env["MEMPLAN_SUMMARY"] = "1"
        p = subprocess.run([binary, "malloc", records, iters, reps], env=env,
                           capture_output=True, text=True)
        rows.append((alloc + " (malloc/free)", p.returncode, p.stdout.strip(),
                     p.stderr.strip()))
        if alloc == "memplan":
            # without the cache of mid-size blocks (preload/smallcache.c), and
            # blocks from 1 KiB in the arena, not only from 64 KiB
            for var, val, label in (("MEMPLAN_SMALL_CACHE", "0", "no mid-size cache"),
                                    ("MEMPLAN_THRESHOLD", "1K", "threshold 1 KiB")):
                e = dict(env, **{var: val})
                p = subprocess.run([binary, "malloc", records, iters, reps], env=e,
                                   capture_output=True, text=True)
                rows.append(("memplan, %s (malloc/free)" % label, p.returncode,
                             p.stdout.strip(), p.stderr.strip()))
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("MEMPLAN_")}
    for mode, label in (("arena", "mp_arena_* API, no preload"),
                        ("arena-mark", "mp_arena_* API + mark_iteration")):
        p = subprocess.run([binary, mode, records, iters, reps], env=env,
                           capture_output=True, text=True)
        rows.append((label, p.returncode, p.stdout.strip(), p.stderr.strip()))
    return rows


def med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def finish(a, lines, results, failures):
    """Writes the Markdown (and the raw results with --raw) through
    temporary files, reports what it wrote and any failure; the exit code."""
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.out)
    if a.raw:
        with open(a.raw + ".tmp", "w") as f:
            json.dump({"%s|%s" % k: v for k, v in results.items()}, f, indent=1)
        os.replace(a.raw + ".tmp", a.raw)
    print("bench/runtime: wrote %s" % a.out, file=sys.stderr)
    for f in failures:
        print("bench/runtime: FAILURE: " + f, file=sys.stderr)
    return 1 if failures else 0


def services(a):
    """--services: the varying-shape services and the micro-benchmark under
    every allocator, a.reps interleaved repetitions, medians."""
    allocs = allocators(a.preload, False)
    wls = [parse_workload(w) for w in a.workload] or SERVICES
    t_start = time.time()
    runs, failures = {}, []
    for rep in range(a.reps):
        for wl in wls:
            for alloc, so in allocs:
                r = run_one(wl, alloc, so)
                runs.setdefault((wl_key(wl), alloc), []).append(r)
                msg = ("error " + r["error"]) if "error" in r else (
                    "rss %.0f MiB (timed %.0f), mean %.1f ms, checksum %s%s" %
                    (mib(r["peak_kib"]), mib(r["hwm_timed_kib"]), r["mean_ms"], r["checksum"],
                     "" if "memplan" not in r else ", %s, %s arena, %s learning, %s unmatched, %s patterns" % (
                         r["memplan"].get("state"), r["memplan"].get("served_arena"),
                         r["memplan"].get("served_learning"), r["memplan"].get("fb_unmatched"),
                         r["memplan"].get("patterns"))))
                print("bench/runtime: rep %d %-22s %-9s %s (%.0f s, load %.1f)" % (
                    rep + 1, wl_key(wl), alloc, msg, r["wall_s"], r["load_after"]),
                    file=sys.stderr, flush=True)
                if "error" in r:
                    failures.append("%s under %s: %s" % (wl_key(wl), alloc, r["error"]))
    micro = {}
    for rep in range(a.reps):
        for name, rc, out, err in run_micro(a.micro, allocs, a.records, False):
            micro.setdefault(name, []).append((rc, out, err))
            print("bench/runtime: rep %d micro %-28s %s" % (rep + 1, name, out if rc == 0 else "error: " + err),
                  file=sys.stderr, flush=True)
            if rc != 0:
                failures.append("micro-benchmark %s: exit %d %s" % (name, rc, err))
    ref = {}
    for (key, alloc), rs in runs.items():
        for r in rs:
            if "error" in r:
                continue
            ref.setdefault(key, r["checksum"])
            if r["checksum"] != ref[key]:
                failures.append("%s under %s: checksum %s differs from %s" % (key, alloc, r["checksum"], ref[key]))
    m = machine()
    L = []
    w = L.append
    svc = all(wl[2] == "service" for wl in wls)
    w("# Runtime benchmarks: varying-shape services" if svc else
      "# Runtime benchmarks: repeated runs (%s)" % ", ".join(wl_key(wl) for wl in wls))
    w("")
    w("Generated by `%s` on %s (%.1f minutes, system clock date); %d interleaved repetitions" %
      (a.cmd, datetime.date.today().isoformat(), (time.time() - t_start) / 60, a.reps))
    w("(each repetition runs every workload under every allocator in turn), medians over them.")
    w("Machine: %s, %s logical cores, %s, kernel %s, glibc %s, python3-torch %s, torchvision %s;" %
      (m["cpu"], m["cores"], m["mem"], m["kernel"], m["glibc"], m["torch"], m["torchvision"]))
    w("%s. memplan: `%s` (Release), default settings." % (", ".join(
        "%s %s" % (n, m[n]) for n, _, _ in SYSTEM_ALLOCATORS), os.path.relpath(a.preload, ROOT)))
    w("")
    if any(wl[2] == "service" for wl in wls):
        w("Services (`bench/runtime/service.py`, one fresh process per cell): *cnn service*: ResNet-18")
        w("inference, each request at batch 1, 2, 4 or 8 drawn at random (fixed seed: every allocator")
        w("sees the same sequence); *transformer service*: a 4-layer `nn.TransformerEncoder` (d_model")
        w("256, 8 heads), batch 4, sequence length 32, 64, 128 or 256 drawn at random.")
    if not svc:
        w("Inference and training loops (`bench/runtime/workload.py`, one fresh process per cell, as")
        w("in docs/benchmarks-runtime.md; few steps: the whole-run peak is decided by the first ones).")
    w("%s." % ", ".join("%s: %d warm-up %s, %d timed" % (
        wl_key(wl), wl[3], "requests" if wl[2] == "service" else "steps", wl[4]) for wl in wls))
    w("*peak RSS*: whole run (`ru_maxrss`, VmHWM after the warm-up); *timed peak*: the timed")
    w("requests (steps) alone (VmHWM reset after the warm-up); *mean ms*: mean wall time of a timed request (step);")
    w("*load*: the 1-minute load average after the cell (median); above 2 on this 2-core machine")
    w("other work was running and the times are inflated. The ratio columns divide by glibc's median.")
    w("")
    w("| workload | allocator | peak RSS MiB | RSS / glibc | timed peak MiB | timed / glibc | mean ms | mean / glibc | median ms | checksums | load |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for wl in wls:
        key = wl_key(wl)
        ok = lambda alloc: [r for r in runs[(key, alloc)] if "error" not in r]
        g = ok("glibc")
        base = {k: med([r[k] for r in g]) for k in ("peak_kib", "hwm_timed_kib", "mean_ms")} if g else {}
        for alloc, _ in allocs:
            rs = ok(alloc)
            if not rs:
                w("| %s | %s | FAILED | | | | | | | | |" % (key, alloc))
                continue
            v = {k: med([r[k] for r in rs]) for k in ("peak_kib", "hwm_timed_kib", "mean_ms", "median_ms", "load_after")}
            same = all(r["checksum"] == ref[key] for r in rs)
            w("| %s | %s | %.0f | %s | %.0f | %s | %.1f | %s | %.1f | %s (%d runs)%s | %.1f |" % (
                key, alloc, mib(v["peak_kib"]), fmt_ratio(v["peak_kib"], base.get("peak_kib")),
                mib(v["hwm_timed_kib"]), fmt_ratio(v["hwm_timed_kib"], base.get("hwm_timed_kib")),
                v["mean_ms"], fmt_ratio(v["mean_ms"], base.get("mean_ms")), v["median_ms"],
                ref[key], len(rs), "" if same else " **MISMATCH**", v["load_after"]))
    w("")
    w("memplan's counters (`MEMPLAN_STATS`, last repetition): *arena*: requests served from the")
    w("region; *learning*: forwarded while learning; *unmatched*: forwarded in requests no learned")
    w("pattern matched (yet), or before the pattern was told; *patterns*: plans learned; *region*:")
    w("the region (the largest pattern's footprint).")
    w("")
    w("| workload | state | big | arena | learning | unmatched | other fallbacks | patterns | region MiB | learned peak MiB |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for wl in wls:
        rs = [r for r in runs[(wl_key(wl), "memplan")] if "memplan" in r]
        st = rs[-1]["memplan"] if rs else {}
        gi = lambda k: int(st.get(k, 0))
        other = sum(gi(k) for k in ("fb_too_large", "fb_cross", "fb_unforeseen", "fb_overlap"))
        w("| %s | %s | %s | %s | %s | %s | %d | %s | %.1f | %.1f |" % (
            wl_key(wl), st.get("state", "?"), st.get("big_requests", "?"), st.get("served_arena", "?"),
            st.get("served_learning", "?"), st.get("fb_unmatched", "?"), other, st.get("patterns", "?"),
            gi("region_bytes") / 1048576, gi("learned_peak_bytes") / 1048576))
    w("")
    w("## Micro-benchmark: alloc/free cost on the replayed trace")
    w("")
    w("`bench/runtime/replay.c` on `%s` (184 alloc+free pairs per iteration, 200" % os.path.relpath(a.records, ROOT))
    w("iterations per repetition, 7 repetitions per run; docs/benchmarks-runtime.md describes it).")
    w("Value: ns per alloc+free pair, median over the %d runs of each run's median (min and max of" % a.reps)
    w("the run medians).")
    w("")
    w("| allocator | ns per pair | min | max | / tcmalloc |")
    w("|---|---:|---:|---:|---:|")
    mm = {}
    for name, rs in micro.items():
        vals = [float(dict(kv.split("=", 1) for kv in out.split() if "=" in kv)["median_ns"])
                for rc, out, _ in rs if rc == 0]
        if vals:
            mm[name] = (med(vals), min(vals), max(vals))
    tc = mm.get("tcmalloc (malloc/free)", (0,))[0]
    for name in micro:
        if name not in mm:
            w("| %s | FAILED | | | |" % name)
            continue
        v = mm[name]
        w("| %s | %.1f | %.1f | %.1f | %s |" % (name, v[0], v[1], v[2], fmt_ratio(v[0], tc)))
    w("")
    if failures:
        w("## Failures")
        w("")
        for f in failures:
            w("- " + f)
        w("")
    return finish(a, L, runs, failures)


def fmt_ratio(x, base):
    return "%.2f" % (x / base) if base else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--micro", required=True)
    ap.add_argument("--records", default=os.path.join(
        ROOT, "bench/corpus/train/resnet18-b16.records.csv"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--raw", default="")
    ap.add_argument("--cmd", default="bench/runtime/run")
    ap.add_argument("--period", default="")
    ap.add_argument("--workload", action="append", default=[])
    ap.add_argument("--alloc", default="")
    ap.add_argument("--services", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.services:
        return services(a)

    only = [x for x in a.alloc.split(",") if x]
    allocs = allocators(a.preload, a.quick and not only, only)
    wls = [parse_workload(w) for w in a.workload] or (QUICK if a.quick else FULL)
    check = bool(a.workload or only)
    t_start = time.time()
    results = {}
    failures = []
    for wl in wls:
        key = wl_key(wl)
        for alloc, so in allocs:
            r = run_one(wl, alloc, so)
            results[(key, alloc)] = r
            msg = ("error " + r["error"]) if "error" in r else (
                "rss %.0f MiB (timed steps %.0f), median %.1f ms, checksum %s%s" %
                (mib(r["peak_kib"]), mib(r["hwm_timed_kib"]), r["median_ms"], r["checksum"],
                 "" if "memplan" not in r else ", %s, %s from the arena, %s learning" % (
                     r["memplan"].get("state"), r["memplan"].get("served_arena"),
                     r["memplan"].get("served_learning"))))
            print("bench/runtime: %-24s %-9s %s (%.0f s)" % (key, alloc, msg, r["wall_s"]),
                  file=sys.stderr, flush=True)
            if "error" in r:
                failures.append("%s under %s: %s" % (key, alloc, r["error"]))
        base = results[(key, "glibc")]
        for alloc, _ in allocs:
            r = results[(key, alloc)]
            if "error" in r or "error" in base:
                continue
            if r["checksum"] != base["checksum"]:
                failures.append("%s under %s: checksum %s (value %s) differs from glibc %s (value %s)"
                                % (key, alloc, r["checksum"], r["value"],
                                   base["checksum"], base["value"]))
    micro = [] if check else run_micro(a.micro, allocs, a.records, a.quick)
    for name, rc, out, err in micro:
        print("bench/runtime: micro %-28s %s" % (name, out if rc == 0 else "error: " + err),
              file=sys.stderr, flush=True)
        if rc != 0:
            failures.append("micro-benchmark %s: exit %d %s" % (name, rc, err))
    period, perr = ([], "") if check or not a.period else run_period(a.period, a.quick)
    for row in period:
        print("bench/runtime: period %-16s %s events, median %s s" %
              (row.get("case"), row.get("events"), row.get("median_s")), file=sys.stderr, flush=True)
    if perr:
        failures.append("bench_period: " + perr)
    elapsed = time.time() - t_start

    m = machine()
    L = []
    w = L.append
    w("# Runtime benchmarks: the drop-in allocator on PyTorch CPU" if not (a.quick or check)
      else "# Runtime benchmarks (%s run)" % ("check" if check else "quick"))
    w("")
    w("Generated by `%s` on %s (%.1f minutes, system clock date)." %
      (a.cmd, datetime.date.today().isoformat(), elapsed / 60))
    if not (a.quick or check):
        w("The tables are written by the script; the reading at the end is hand-written")
        w("(`bench/runtime/notes.md`, appended verbatim) and describes the run it was written for.")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    w("| CPU | %s, %s logical cores |" % (m["cpu"], m["cores"]))
    w("| memory | %s |" % m["mem"])
    w("| kernel | %s |" % m["kernel"])
    w("| glibc (libc6) | %s |" % m["glibc"])
    w("| python3-torch / torchvision | %s / %s (`torch.set_num_threads(2)`) |" % (m["torch"], m["torchvision"]))
    w("| libopenblas0 | %s |" % m["openblas"])
    for n, so, p in SYSTEM_ALLOCATORS:
        w("| %s | %s %s (`%s`) |" % (n, p, m[n], so))
    w("| memplan | `%s` (Release), default settings (threshold 64K, warm-up 2, strategy auto, trim on) |" %
      os.path.relpath(a.preload, ROOT))
    w("")
    w("## Workloads")
    w("")
    w("Each cell is one fresh `/usr/bin/python3 bench/runtime/workload.py` process. Inference:")
    w("`weights=None`, `eval()`, `torch.no_grad()`, one fixed random input (`torch.manual_seed(0)`),")
    w("224x224 (Inception v3: 299x299). Training: ResNet-18, cross-entropy on fixed random labels,")
    w("SGD (lr 0.01, momentum 0.9). memplan learns during the first three steps of an inference")
    w("loop and the first four of the training loop (its first step is unlike the others) and")
    w("replays from the next one; the warm-up steps cover that with a step to spare, so every")
    w("timed step of memplan is replayed (check *learning* in the counters below). Steps")
    w("(warm-up + timed) keep the run under 30 minutes on 2 cores:")
    w("")
    w("| workload | warm-up steps | timed steps |")
    w("|---|---|---|")
    for wl in wls:
        w("| %s | %d | %d |" % (wl_key(wl), wl[3], wl[4]))
    w("")
    w("- **peak RSS**: the peak resident set of the whole run (`ru_maxrss` of the child from")
    w("  `os.wait4`, and VmHWM after the warm-up), which includes the Python interpreter, torch's")
    w("  libraries and the weights (about 290-390 MiB before the first step; column *before loop*")
    w("  is VmHWM just before the first step). For memplan it includes the learning steps, which")
    w("  run on glibc: it cannot go much below glibc's own peak over those first steps.")
    w("- **timed peak**: the peak resident set of the timed steps alone (the workload resets")
    w("  VmHWM through `/proc/self/clear_refs` after the warm-up). For memplan these steps are")
    w("  replayed from the planned region, after `malloc_trim(0)` returned glibc's cache of the")
    w("  learning steps: this is the number the plan can lower.")
    w("- **step**: median wall time of the timed steps, measured inside the process with")
    w("  `time.perf_counter`. The ratio columns divide by glibc's value for the same workload.")
    w("- **checksum**: SHA-256 (first 16 hex digits) of the final output tensor's bytes")
    w("  (training: of every step's loss and the final fc weights). Every allocator must give")
    w("  glibc's checksum; a difference is a failure.")
    w("- **load avg after**: the 1-minute load average when the run ended. Above about 2 on")
    w("  this 2-core machine, something else was running and the step times of that cell are")
    w("  inflated (torch's OpenMP threads suffer badly from sharing cores).")
    w("")
    w("## Results")
    w("")
    w("| workload | allocator | peak RSS MiB | before loop MiB | RSS / glibc | timed peak MiB | timed / glibc | step ms (median) | step / glibc | checksum | load avg after |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for wl in wls:
        key = wl_key(wl)
        base = results[(key, "glibc")]
        for alloc, _ in allocs:
            r = results[(key, alloc)]
            if "error" in r:
                w("| %s | %s | FAILED: %s | | | | | | | | |" % (key, alloc, r["error"].replace("|", "/")))
                continue
            ok = "error" not in base and r["checksum"] == base["checksum"]
            w("| %s | %s | %.0f | %.0f | %s | %.0f | %s | %.1f | %s | %s%s | %.1f |" % (
                key, alloc, mib(r["peak_kib"]), mib(r["hwm_before_kib"]),
                fmt_ratio(r["peak_kib"], base.get("peak_kib", 0)), mib(r["hwm_timed_kib"]),
                fmt_ratio(r["hwm_timed_kib"], base.get("hwm_timed_kib", 0)), r["median_ms"],
                fmt_ratio(r["median_ms"], base.get("median_ms", 0)), r["checksum"],
                "" if ok else " **MISMATCH**", r["load_after"]))
    w("")
    w("## memplan's counters")
    w("")
    w("From `MEMPLAN_STATS` at exit (docs/preload.md). *big*: requests at or above the 64 KiB")
    w("threshold; *arena*: served from the planned region; *learning*: forwarded while")
    w("learning; fallbacks by reason; *period*: requests per detected iteration (the loop's")
    w("real iteration, or a shorter spurious period); *iterations*: iterations replayed; *learned")
    w("steps*: steps of the run minus iterations replayed (the steps, or parts of steps, spent")
    w("learning); *footprint* of the region vs the learned peak; *trims*: `malloc_trim(0)` calls")
    w("made when replay started (docs/preload.md).")
    w("")
    w("| workload | state | big | arena | learning | too large | cross | unforeseen | overlap | period | iterations | learned steps | replans | footprint MiB | learned peak MiB | peak backing MiB | trims |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for wl in wls:
        key = wl_key(wl)
        r = results[(key, "memplan")]
        st = r.get("memplan", {})
        if not st:
            w("| %s | no stats | | | | | | | | | | | | | | | |" % key)
            continue
        g = lambda k: st.get(k, "?")
        mb = lambda k: "%.1f" % (int(st[k]) / 1048576) if k in st else "?"
        learned = wl[3] + wl[4] - int(st["iterations"]) if "iterations" in st else "?"
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key, g("state"), g("big_requests"), g("served_arena"), g("served_learning"),
            g("fb_too_large"), g("fb_cross"), g("fb_unforeseen"), g("fb_overlap"),
            g("iteration_length"), g("iterations"), learned, g("reoptimizations"),
            mb("planned_footprint"), mb("learned_peak_bytes"), mb("peak_backing_bytes"),
            g("trims")))
    w("")
    if micro:
        w("## Micro-benchmark: alloc/free cost on a replayed trace")
        w("")
        w("`bench/runtime/replay.c` turns `%s` (the usage records of" % os.path.relpath(a.records, ROOT))
        w("one ResNet-18 batch-16 training step, from the exporter) into its alloc/free sequence")
        w("(at each logical time: the buffers that start, then the buffers that end) and replays it")
        w("%s times per repetition, writing one byte into each block. *malloc/free* calls the" %
          ("20" if a.quick else "200"))
        w("process's malloc, so it is run under each LD_PRELOAD allocator; *mp_arena_* API* calls")
        w("`mp_arena_alloc`/`mp_arena_free` directly (libmemplan.a, default options: every request")
        w("goes to the arena, no size threshold) and times only iterations after the arena is")
        w("replaying; *+ mark_iteration* also calls `mp_arena_mark_iteration` before each iteration. Value: ns per alloc+free pair, median of %s repetitions (min-max)." %
          ("3" if a.quick else "7"))
        w("")
        w("| allocator | ns per pair (median) | min | max | pairs per iteration | notes |")
        w("|---|---:|---:|---:|---:|---|")
        for name, rc, out, err in micro:
            if rc != 0:
                w("| %s | FAILED (exit %d) | | | | %s |" % (name, rc, err.replace("\n", " ")[:200]))
                continue
            d = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
            note = ""
            if "memplan" in name or "arena" in name:
                summ = [l for l in err.splitlines() if l.startswith("memplan") or "arena" in l]
                note = summ[-1].replace("|", "/")[:300] if summ else ""
            w("| %s | %s | %s | %s | %s | %s |" % (name, d.get("median_ns", "?"), d.get("min_ns", "?"),
                                                   d.get("max_ns", "?"), d.get("pairs", "?"), note))
        w("")
    if period:
        w("## Iteration detection speed")
        w("")
        w("`bench_period` (`bench/runtime/period.c`, Release): `mp_period_find` on symbol streams,")
        w("`mp_period_detect` on a training-like trace, and the replay arena's whole learning phase")
        w("(backing malloc, trace, every detection attempt; docs/arena.md). *find-periodic*: a")
        w("1000-symbol body with strays after a 3000-symbol warm-up; *find-random*: 64 symbols;")
        w("*find-constant*: one symbol; *detect-trace*: 24 events per iteration; *arena-aperiodic*:")
        w("random sizes and lifetimes until the arena gives up (`max_learn_events` = the event count),")
        w("the worst case of its schedule; *arena-periodic*: 100 weights, then iterations of 200")
        w("allocations, until replay (*events* = events traced up to the switch). Median of %s runs." %
          ("3" if a.quick else "5"))
        w("")
        w("| case | events | median s | min s | max s | ns per event | period found | detection attempts |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        for row in period:
            w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                row.get("case"), row.get("events"), row.get("median_s"), row.get("min_s"),
                row.get("max_s"), row.get("ns_per_event"),
                row.get("period") if row.get("found") == "1" else "none",
                row.get("detections", "")))
        w("")
    if failures:
        w("## Failures")
        w("")
        for f in failures:
            w("- " + f)
        w("")
    notes = os.path.join(HERE, "notes.md")
    if not (a.quick or check) and os.path.exists(notes):
        with open(notes) as f:
            L.append(f.read().rstrip("\n"))
        w("")
    return finish(a, L, results, failures)


if __name__ == "__main__":
    sys.exit(main())
