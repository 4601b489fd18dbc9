"""ViT-B/16 (torchvision) at batch 4 as fit captures it, for vit_third.py
and vit_hooks.py: the model, its input, the planner and candidates."""
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from memplan import _fit  # noqa: E402

MiB = 2**20


def setup():
    """(model, input, planner, candidates, one forward pass's seconds, the
    candidate of no checkpointing)."""
    torch.set_num_threads(2)
    torch.manual_seed(0)
    m = torchvision.models.vit_b_16()
    x = torch.randn(4, 3, 224, 224)
    p, cands, fwd = _fit._variant(m, (x,), "vit", {}, 0)
    return m, x, p, cands, fwd, next(c for c in cands if not c.runs)
