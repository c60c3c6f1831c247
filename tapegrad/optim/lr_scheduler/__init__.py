"""Learning-rate schedules with PyTorch's names, arguments and semantics (``torch.optim.lr_scheduler``).

Call ``scheduler.step()`` after ``optimizer.step()``: once per epoch for the epoch schedules, once per batch
for ``CyclicLR`` and ``OneCycleLR``; ``ReduceLROnPlateau.step(metric)`` takes the metric. Every schedule is
checkpointable (``state_dict()`` / ``load_state_dict()``, storable with ``tapegrad.save``).

>>> import tapegrad as tg
>>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=0.1)
>>> sched = tg.optim.lr_scheduler.MultiStepLR(opt, milestones=[2], gamma=0.1)
>>> for epoch in range(3):
...     sched.step()
>>> round(sched.get_last_lr()[0], 10)
0.01
"""

from .base import LRScheduler
from .combine import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR, OneCycleLR
from .decay import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "PolynomialLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "OneCycleLR",
    "SequentialLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
]
