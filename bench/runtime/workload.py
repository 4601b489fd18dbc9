"""One benchmark workload in a fresh process (run by bench/runtime/bench.py).

    /usr/bin/python3 bench/runtime/workload.py MODEL BATCH {infer,train} WARMUP STEPS

Builds a torchvision MODEL (weights=None, seed 0), a fixed random input, and
runs WARMUP + STEPS steps on 2 threads: inference is eval() under no_grad();
training is forward + cross-entropy + backward + SGD step.  Each step is timed
with perf_counter inside the process.  Prints one JSON line on stdout:
step times (ms), the median of the timed steps, a checksum of the final output
(inference) or of the loss sequence and final fc weights (training), VmHWM
(peak RSS, KiB) before the loop and after the warm-up steps, the peak RSS of
the timed steps alone, and VmRSS at the end.  The timed peak comes from
resetting the peak (writing 5 to /proc/self/clear_refs, Linux 4.0 and later)
after the warm-up: that also resets what the parent reads as ru_maxrss, so the
whole run's peak is max(ru_maxrss, hwm_warmup_kib).  If the reset fails,
hwm_timed_kib is -1 and nothing is reset.
"""
import hashlib
import json
import sys
import time

import torch
import torchvision


def vm(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def reset_peak():
    """Resets VmHWM; False if the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main():
    name, batch, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    warmup, steps = int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(2)
    torch.manual_seed(0)
    kw = {"weights": None}
    if name == "inception_v3":
        kw.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kw)
    side = 299 if name == "inception_v3" else 224
    x = torch.randn(batch, 3, side, side)
    hwm_before = vm("VmHWM")
    hwm_warm, reset = -1, False
    times = []
    h = hashlib.sha256()
    if mode == "infer":
        model.eval()
        with torch.no_grad():
            for i in range(warmup + steps):
                if i == warmup:
                    hwm_warm, reset = vm("VmHWM"), reset_peak()
                t0 = time.perf_counter()
                y = model(x)
                times.append((time.perf_counter() - t0) * 1e3)
        h.update(y.contiguous().numpy().tobytes())
        total = float(y.double().sum())
    else:
        model.train()
        target = torch.randint(0, 1000, (batch,))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        lossf = torch.nn.CrossEntropyLoss()
        losses = []
        for i in range(warmup + steps):
            if i == warmup:
                hwm_warm, reset = vm("VmHWM"), reset_peak()
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = lossf(model(x), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            times.append((time.perf_counter() - t0) * 1e3)
        h.update(torch.tensor(losses, dtype=torch.float64).numpy().tobytes())
        h.update(model.fc.weight.detach().contiguous().numpy().tobytes())
        total = losses[-1]
    timed = sorted(times[warmup:])
    n = len(timed)
    med = timed[n // 2] if n % 2 else 0.5 * (timed[n // 2 - 1] + timed[n // 2])
    print(json.dumps({
        "model": name, "batch": batch, "mode": mode, "warmup": warmup,
        "steps": steps, "times_ms": [round(t, 3) for t in times],
        "median_ms": round(med, 3), "mean_ms": round(sum(timed) / n, 3),
        "checksum": h.hexdigest()[:16],
        "value": repr(total), "hwm_before_kib": hwm_before,
        "hwm_warmup_kib": hwm_warm, "hwm_timed_kib": vm("VmHWM") if reset else -1,
        "rss_end_kib": vm("VmRSS"),
        "torch": torch.__version__, "threads": torch.get_num_threads(),
    }), flush=True)


if __name__ == "__main__":
    main()
