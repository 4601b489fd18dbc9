"""fit's choice on ResNet-50 at 1/2 of the plain peak (docs/python.md,
"fit's choice, measured"): fit runs with the finalists it timed again
recorded; then the first two finalists, and the first one twice (the
noise floor: a module against itself), are timed side by side for 6
rounds (memplan._choice.retime).  Usage, from the repository root:
  MEMPLAN_LIB=build/libmemplan.so B=16 PLAIN=1314.9 /usr/bin/python3 bench/fit/tie.py
B: batch; PLAIN: the plain step's measured peak in MiB at that batch
(memplan.torch.measure_peak; 1314.9 at 16)."""
import sys, time, os, torch, torchvision
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
torch.set_num_threads(2)
from memplan import _choice
import memplan.torch as mpt
MiB = 2**20
batch = int(os.environ.get("B", 16))
m = torchvision.models.resnet50()
x = torch.randn(batch, 3, 224, 224)
plain = float(os.environ.get("PLAIN", 1314.9)) * MiB
seen = {}
orig_choose = _choice.choose
def spy(final, times=None):
    seen["final"], seen["times"] = final, times
    return orig_choose(final, times)
_choice.choose = spy
t0 = time.time()
print("load", os.getloadavg(), flush=True)
fitted, how = mpt.fit(m, x, int(plain / 2))
print(f"fit {time.time()-t0:.0f}s measuring {how.measuring_seconds:.1f}s steps {how.steps} attempts {how.attempts} pick {how.kind} runs {how.checkpointed} peak {how.measured_peak/MiB:.1f}", flush=True)
for f in seen["final"]:
    print(f"  finalist first {f[0]:.3f}s rank {f[1]} peak {f[2]/MiB:.1f} kind {f[3].kind} runs {len(f[3].runs)}")
print("  retimed:", seen["times"])
fin = [f[4] for f in seen["final"]]
if len(fin) >= 2:
    mods = [fin[0], fin[1], fin[0]]
    names = ["A", "B", "A'"]
else:
    mods = [fin[0], m, fin[0]]; names = ["A", "plain", "A'"]
print("load", os.getloadavg(), flush=True)
times = _choice.retime(mods, (x,), rounds=6)
print("load", os.getloadavg(), flush=True)
for n, t in zip(names, times):
    print(f"  {n}: " + " ".join(f"{v:.3f}" for v in t) + f"  median {_choice._median(t):.3f}")
for i, j in ((1, 0), (2, 0), (1, 2)):
    r = [a / b for a, b in zip(times[i], times[j])]
    print(f"  {names[i]}/{names[j]} per round: " + " ".join(f"{v:.3f}" for v in r) + f"  median {_choice._median(r):.3f}")
