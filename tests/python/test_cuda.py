"""memplan.torch on a CUDA device (skipped where torch sees none: CI and
the development VM have no GPU; run on a lent one, docs/python.md).

fit's measurements there come from the caching allocator's statistics
(torch.cuda.max_memory_allocated) and its clocks wait for the device; a
fitted module must keep its measured peak within the budget and train like
the unmodified model.  cuDNN is made deterministic, so a plan's
recomputation runs the same kernels as the first pass; the comparison
still allows float rounding (kernels may be chosen per shape).
"""

import copy
import os
import sys
import unittest

import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import memplan.torch as mpt                     # noqa: E402
from memplan._measure import allocated_during, device_of   # noqa: E402
from test_fit import ResNetish                  # noqa: E402
from test_torch import LSTMNet, train           # noqa: E402

CUDA = torch.cuda.is_available()


def trains_alike(test, model, fitted, x, tol=1e-4):
    """After 3 SGD steps of fitted (sharing model's parameters) and of a copy
    of model taken now: losses and parameters equal to tol (relative)."""
    ref = copy.deepcopy(model)
    a, b = train(ref, (x,)), train(fitted, (x,))
    for la, lb in zip(a, b):
        test.assertLess(abs(la - lb), tol * max(1.0, abs(la)), (a, b))
    for (k, p), q in zip(ref.named_parameters(), model.parameters()):
        test.assertTrue(torch.allclose(p, q, rtol=tol, atol=tol * 1e-2), k)


@unittest.skipUnless(CUDA, "no CUDA device")
class OnCuda(unittest.TestCase):
    def setUp(self):
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        self.dev = torch.device("cuda")

    def test_meter_counts_what_a_step_allocates(self):
        """allocated_during on CUDA: a 64 MiB tensor made and freed inside
        fn is its peak and not its end; one kept is both."""
        keep = []
        peak, end = allocated_during(
            lambda: torch.empty(16 << 20, device=self.dev).fill_(1.0), self.dev)
        self.assertEqual((peak, end), (64 << 20, 0))
        peak, end = allocated_during(
            lambda: keep.append(torch.empty(16 << 20, device=self.dev)), self.dev)
        self.assertEqual((peak, end), (64 << 20, 64 << 20))
        self.assertEqual(device_of(None, (keep[0],)).type, "cuda")

    def test_fit_resnetish_keeps_the_budget_and_trains_alike(self):
        torch.manual_seed(0)
        model = ResNetish(blocks=6, c=32).to(self.dev)
        x = torch.randn(16, 3, 64, 64, device=self.dev)
        plain = mpt.measure_peak(model, x)
        budget = int(plain * 0.7)
        fitted, how = mpt.fit(model, x, budget)
        self.assertLessEqual(how.measured_peak, budget)
        self.assertGreater(how.checkpointed, 0)
        trains_alike(self, model, fitted, x)

    def test_fit_resnet18_at_a_half(self):
        torch.manual_seed(0)
        model = torchvision.models.resnet18().to(self.dev)
        x = torch.randn(32, 3, 128, 128, device=self.dev)
        plain = mpt.measure_peak(model, x)
        fitted, how = mpt.fit(model, x, plain // 2)
        self.assertLessEqual(how.measured_peak, plain // 2)
        self.assertGreater(how.measured_seconds, 0)
        trains_alike(self, model, fitted, x)

    def test_fit_lstm_in_time_chunks(self):
        torch.manual_seed(0)
        model = LSTMNet(layers=3, f=32, h=256).to(self.dev)
        x = torch.randn(32, 128, 32, device=self.dev)
        plain = mpt.measure_peak(model, x)
        budget = int(plain * 0.45)
        fitted, how = mpt.fit(model, x, budget, exact=False)
        self.assertLessEqual(how.measured_peak, budget)
        trains_alike(self, model, fitted, x, tol=1e-3)


if __name__ == "__main__":
    unittest.main()
