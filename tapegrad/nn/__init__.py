"""Neural-network building blocks: ``Module``, layers, activations and losses.

``Module`` finds parameters and submodules by attribute; ``state_dict()``/``load_state_dict()`` save and
restore them (with clear errors for missing, unexpected or mis-shaped keys). Losses live in
``tapegrad.nn.functional`` and are re-exported here. This package uses tapegrad's public ops only.

>>> import numpy as np, tapegrad as tg
>>> model = tg.nn.Sequential(tg.nn.Linear(4, 16, rng=0), tg.nn.ReLU(), tg.nn.Linear(16, 3, rng=1))
>>> x, y = tg.Tensor(np.random.default_rng(0).normal(size=(8, 4))), np.arange(8) % 3
>>> with tg.tape.record():
...     loss = tg.nn.cross_entropy(model(x), y)
>>> loss.backward()
>>> [p.grad.shape for p in model.parameters()]
[(16, 4), (16,), (3, 16), (3,)]
"""

from . import functional, utils
from .functional import binary_cross_entropy_with_logits, cross_entropy, mse_loss
from .layers import Dropout, Linear, ReLU, Sequential, Sigmoid, Tanh
from .module import Module

__all__ = [
    "Module",
    "Linear",
    "Sequential",
    "ReLU",
    "Tanh",
    "Sigmoid",
    "Dropout",
    "functional",
    "utils",
    "mse_loss",
    "cross_entropy",
    "binary_cross_entropy_with_logits",
]
