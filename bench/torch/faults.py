"""bench/torch/faults.py -- what glibc's page faults do to a CPU training
step: ResNet-50 at batch 16 (two threads), fit at the bench's 1/3 budget,
the plain step and checkpoint_sequential k=8 timed in interleaved rounds
(timing.py), with the minor page faults each step took.

glibc serves a block above its mmap threshold with a fresh mapping and
unmaps it on free, so a step that frees and re-allocates large activations
zero-fills them again every step.  Run it as is, then with the threshold
raised so freed memory stays in the heap:

    PYTHONPATH=python /usr/bin/python3 bench/torch/faults.py
    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736 \\
        PYTHONPATH=python /usr/bin/python3 bench/torch/faults.py

(docs/benchmarks-torch.md's reading has both runs.)  About 4 minutes each.
"""

import os
import resource
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402

import models  # noqa: E402
import timing  # noqa: E402
from bench_fit import FRACTIONS, Segmented  # noqa: E402
import memplan.torch as mpt  # noqa: E402

ROUNDS = 5


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main():
    torch.set_num_threads(2)
    model, x, seq = models.build("resnet50", 16, 224)
    budget = mpt.measure_peak(model, x) // FRACTIONS[0]     # the bench's 1/3 budget
    module, r = mpt.fit(model, x, budget, exact=False)
    print("fit at %d bytes: %d runs, measured %d bytes" % (
        budget, len(module.memplan_runs), r.measured_peak), flush=True)
    entries = [("plain", model, None), ("fit 1/3", module, None),
               ("checkpoint_sequential k=8", Segmented(seq, 8), None),
               ("plain again", model, None)]
    faults, step = {}, timing._step

    def counted(m, inputs, threads):
        f0 = minor_faults()
        s = step(m, inputs, threads)
        faults.setdefault(id(m), []).append(minor_faults() - f0)
        return s
    timing._step = counted
    try:
        t = timing.interleaved(model, entries, x, ROUNDS)["times"]
    finally:
        timing._step = step
    print("MALLOC_MMAP_THRESHOLD_=%s" % os.environ.get("MALLOC_MMAP_THRESHOLD_",
                                                        "(glibc's default)"))
    for label, m, _ in entries:
        print("%-26s median %.3f s [%s]  minor faults per step: median %d" % (
            label, statistics.median(t[label]), " ".join("%.2f" % v for v in t[label]),
            statistics.median(faults[id(m)])))
    ratios = [a / b for a, b in zip(t["fit 1/3"], t["plain"])]
    print("fit 1/3 / plain per round: %s; median %.3f" % (
        " ".join("%.3f" % v for v in ratios), statistics.median(ratios)))


if __name__ == "__main__":
    main()
