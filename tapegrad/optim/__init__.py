"""Optimizers, gradient clipping and learning-rate schedules for training with tapegrad.

Optimizers follow PyTorch's published update equations and API: ``opt.zero_grad()`` sets gradients to None,
``opt.step()`` updates every parameter that has a gradient in place (bumping its version, so a stale tape
refuses to replay), parameter groups carry their own hyperparameters, and ``state_dict()`` /
``load_state_dict()`` save and restore everything needed to resume training exactly.

>>> import numpy as np, tapegrad as tg
>>> w = tg.Tensor([3.0], requires_grad=True)
>>> opt = tg.optim.SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     with tg.tape.record():
...         loss = (w * w).sum()
...     loss.backward(); opt.step()
>>> w.data   # each step halves w: w -= 0.25 * 2w
array([0.375])
"""

from .adam import Adam, AdamW
from .clip import clip_grad_norm, clip_grad_value
from .lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR
from .optimizer import Optimizer
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "clip_grad_norm",
    "clip_grad_value",
    "LRScheduler",
    "StepLR",
    "CosineAnnealingLR",
]
