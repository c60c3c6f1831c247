"""Loss layers, each a module around the function of the same name in ``tapegrad.nn.functional``, with
PyTorch's constructor arguments: ``loss = nn.CrossEntropyLoss(label_smoothing=0.1); loss(logits, target)``.

``CrossEntropyLoss``, ``NLLLoss``, ``BCELoss``, ``BCEWithLogitsLoss``, ``MSELoss``, ``L1Loss``, ``HuberLoss``,
``SmoothL1Loss``, ``KLDivLoss``, ``CosineEmbeddingLoss``; all take ``reduction`` (``"mean"``, ``"sum"``,
``"none"``). Class weights are kept as given (constants, no gradient) and are not part of ``state_dict``.
"""

from __future__ import annotations

import tapegrad.nn.functional as F

from .._tensor import Tensor
from ._loss_functions import _REDUCTIONS, _check_reduction
from .module import Module

__all__ = [
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "MSELoss",
    "L1Loss",
    "HuberLoss",
    "SmoothL1Loss",
    "KLDivLoss",
    "CosineEmbeddingLoss",
]


class _Loss(Module):
    _allowed = _REDUCTIONS

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction(reduction, type(self).__name__, self._allowed)
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """``F.cross_entropy``: logits ``(N, C, *)`` against class indices or probabilities.

    >>> import numpy as np, tapegrad as tg
    >>> loss = tg.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    >>> round(loss(tg.Tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]]), np.array([1, 0])).item(), 6)
    0.372878
    """

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input: Tensor, target) -> Tensor:
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """``F.nll_loss``: log-probabilities ``(N, C, *)`` against class indices.

    >>> import numpy as np, tapegrad as tg
    >>> float(tg.nn.NLLLoss()(tg.Tensor(np.log([[0.5, 0.5]])), np.array([1])))
    0.6931471805599453
    """

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target) -> Tensor:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCELoss(_Loss):
    """``F.binary_cross_entropy``: probabilities against targets in [0, 1].

    >>> import tapegrad as tg
    >>> float(tg.nn.BCELoss()(tg.Tensor([0.5]), tg.Tensor([1.0])))
    0.6931471805599453
    """

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, target) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``F.binary_cross_entropy_with_logits``, with ``weight`` and ``pos_weight``.

    >>> import tapegrad as tg
    >>> float(tg.nn.BCEWithLogitsLoss(pos_weight=tg.Tensor([2.0]))(tg.Tensor([0.0]), tg.Tensor([1.0])))
    1.3862943611198906
    """

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class MSELoss(_Loss):
    """``F.mse_loss``.

    >>> import tapegrad as tg
    >>> tg.nn.MSELoss(reduction="sum")(tg.Tensor([1.0, 2.0]), tg.Tensor([0.0, 0.0]))
    Tensor(5.)
    """

    def forward(self, input: Tensor, target) -> Tensor:
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """``F.l1_loss``.

    >>> import tapegrad as tg
    >>> tg.nn.L1Loss()(tg.Tensor([1.0, -2.0]), tg.Tensor([0.0, 0.0]))
    Tensor(1.5)
    """

    def forward(self, input: Tensor, target) -> Tensor:
        return F.l1_loss(input, target, self.reduction)


class HuberLoss(_Loss):
    """``F.huber_loss`` with ``delta``.

    >>> import tapegrad as tg
    >>> tg.nn.HuberLoss(delta=2.0)(tg.Tensor([3.0]), tg.Tensor([0.0]))
    Tensor(4.)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target) -> Tensor:
        return F.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss`` with ``beta``.

    >>> import tapegrad as tg
    >>> tg.nn.SmoothL1Loss(beta=2.0)(tg.Tensor([3.0]), tg.Tensor([0.0]))
    Tensor(2.)
    """

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Tensor, target) -> Tensor:
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class KLDivLoss(_Loss):
    """``F.kl_div`` (``reduction="batchmean"`` is the divergence's definition).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.KLDivLoss(reduction="batchmean")(tg.Tensor(np.log([[0.5, 0.5]])), tg.Tensor([[0.5, 0.5]]))
    Tensor(0.)
    """

    _allowed = _REDUCTIONS + ("batchmean",)

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target) -> Tensor:
        return F.kl_div(input, target, self.reduction, self.log_target)


class CosineEmbeddingLoss(_Loss):
    """``F.cosine_embedding_loss`` with ``margin``.

    >>> import tapegrad as tg
    >>> tg.nn.CosineEmbeddingLoss()(tg.Tensor([[1.0, 0.0]]), tg.Tensor([[1.0, 0.0]]), [1])
    Tensor(0.)
    """

    def __init__(self, margin: float = 0.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)
