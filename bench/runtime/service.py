"""A varying-shape inference service in a fresh process (bench/runtime/bench.py).

    /usr/bin/python3 bench/runtime/service.py {cnn,transformer} WARMUP REQUESTS

Requests come with shapes drawn at random (a fixed seed, so every allocator
sees the same sequence):
- cnn: torchvision ResNet-18 (weights=None, seed 0), eval(), batch size 1,
  2, 4 or 8 per request, 224x224;
- transformer: torch.nn.TransformerEncoder (d_model 256, 8 heads, 4 layers,
  feed-forward 1024, batch-first), eval(), batch 4, sequence length 32, 64,
  128 or 256 per request.
One fixed random input per shape is made before the loop.  Each request runs
under no_grad(), its output's bytes go into a SHA-256, and the output is
dropped before the next request.  Prints one JSON line on stdout like
workload.py: per-request times (ms), the median and the mean of the timed
requests, the checksum, VmHWM before the loop and after the warm-up, the peak
of the timed requests alone (VmHWM reset through /proc/self/clear_refs) and
VmRSS at the end.
"""
import hashlib
import json
import random
import sys
import time

import torch
import torchvision

from workload import reset_peak, vm


def main():
    kind, warmup, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(2)
    torch.manual_seed(0)
    if kind == "cnn":
        model = torchvision.models.resnet18(weights=None)
        shapes = [1, 2, 4, 8]
        inputs = {b: torch.randn(b, 3, 224, 224) for b in shapes}
    elif kind == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                                 dropout=0.0, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=4)
        shapes = [32, 64, 128, 256]
        inputs = {s: torch.randn(4, s, 256) for s in shapes}
    else:
        raise SystemExit("service.py: cnn or transformer, not " + kind)
    model.eval()
    rng = random.Random(1)
    order = [rng.choice(shapes) for _ in range(warmup + steps)]
    hwm_before = vm("VmHWM")
    hwm_warm, reset = -1, False
    times = []
    h = hashlib.sha256()
    total = 0.0
    with torch.no_grad():
        for i, s in enumerate(order):
            if i == warmup:
                hwm_warm, reset = vm("VmHWM"), reset_peak()
            t0 = time.perf_counter()
            y = model(inputs[s])
            times.append((time.perf_counter() - t0) * 1e3)
            h.update(y.contiguous().numpy().tobytes())
            total += float(y.double().sum())
            del y
    timed = sorted(times[warmup:])
    n = len(timed)
    med = timed[n // 2] if n % 2 else 0.5 * (timed[n // 2 - 1] + timed[n // 2])
    print(json.dumps({
        "model": kind, "batch": 0, "mode": "service", "warmup": warmup,
        "steps": steps, "times_ms": [round(t, 3) for t in times],
        "median_ms": round(med, 3), "mean_ms": round(sum(timed) / n, 3),
        "checksum": h.hexdigest()[:16], "value": repr(total),
        "shapes": order, "hwm_before_kib": hwm_before,
        "hwm_warmup_kib": hwm_warm, "hwm_timed_kib": vm("VmHWM") if reset else -1,
        "rss_end_kib": vm("VmRSS"),
        "torch": torch.__version__, "threads": torch.get_num_threads(),
    }), flush=True)


if __name__ == "__main__":
    main()
