"""Optimizers, gradient clipping and learning-rate schedules for training with tapegrad.

Optimizers follow PyTorch's published update equations and API: ``opt.zero_grad()`` sets gradients to None,
``opt.step()`` updates every parameter that has a gradient in place (bumping its version, so a stale tape
refuses to replay), parameter groups carry their own hyperparameters, and ``state_dict()`` /
``load_state_dict()`` save and restore everything needed to resume training exactly. A step either updates
everything or, when it raises, nothing; ``load_state_dict`` checks a state as the constructor checks its
arguments before it changes anything.

>>> import numpy as np, tapegrad as tg
>>> w = tg.Tensor([3.0], requires_grad=True)
>>> opt = tg.optim.SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     with tg.record():
...         loss = (w * w).sum()
...     loss.backward(); opt.step()
>>> w.data   # each step halves w: w -= 0.25 * 2w
array([0.375])
"""

from . import functional, lr_scheduler
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .clip import (
    clip_by_total_norm,
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .lbfgs import LBFGS
from .lr_scheduler import *  # noqa: F403  (every schedule; lr_scheduler.__all__ lists them once)
from .optimizer import Optimizer
from .rmsprop import Adadelta, Adagrad, RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "RAdam",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "LBFGS",
    "clip_by_total_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "clip_grads_with_norm_",
    "clip_grad_norm",
    "clip_grad_value",
    "lr_scheduler",
    "functional",
] + lr_scheduler.__all__
