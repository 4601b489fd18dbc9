"""memplan.torch -- memplan for PyTorch users.

    >>> import torch, torchvision, memplan.torch as mpt
    >>> model, x = torchvision.models.resnet18(), torch.randn(8, 3, 64, 64)
    >>> plain = mpt.measure_peak(model, x)            # one real training step
    >>> fitted, how = mpt.fit(model, x, budget=plain // 2)
    >>> how.measured_peak <= plain // 2
    True

fit() checkpoints the runs of nodes the C planner proposes and real measured
steps choose (docs/python.md);
the module it returns shares the model's parameters and trains to the same
loss and gradients.  report() tells what uses memory (memplan._report).
export_module() turns any nn.Module into a memplan-graph/1 dict.
"""

from ._fit import FitResult, fit  # noqa: F401
from ._fx import capture  # noqa: F401
from ._measure import default_loss, measure_peak, measure_step, measure_time  # noqa: F401
from .recompute import BudgetError  # noqa: F401
from .trace import export_module  # noqa: F401

try:
    from ._report import Report, report  # noqa: F401
except ImportError:      # the report lands separately
    pass
