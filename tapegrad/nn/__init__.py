"""Neural-network building blocks: ``Module``, layers, activations and losses, PyTorch's names and arguments.

``Module`` finds parameters and submodules by attribute and keeps buffers (``register_buffer``);
``functional_call(model, params, args)`` runs a model on weights passed in (for the transforms and
``tg.compile``);
``state_dict()``/``load_state_dict()`` save and restore them under PyTorch's names (with clear errors for
missing, unexpected or mis-shaped keys), so weights copy between the two. Functions live in
``tapegrad.nn.functional`` (the losses are re-exported here), initialisers in ``tapegrad.nn.init``. This package
uses tapegrad's public ops only.

- containers: ``Sequential``, ``ModuleList``, ``ModuleDict``;
- linear and shape: ``Linear``, ``Identity``, ``Flatten``, ``Unflatten``, ``Embedding``, ``Dropout``;
- convolution and pooling: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``, ``MaxPool1d``/``2d``,
  ``AvgPool1d``/``2d``, ``AdaptiveAvgPool1d``/``2d``;
- normalisation: ``LayerNorm``, ``BatchNorm1d``, ``BatchNorm2d``, ``GroupNorm``;
- recurrent and attention: ``RNN``, ``GRU``, ``LSTM``, ``RNNCell``, ``GRUCell``, ``LSTMCell``, ``MultiheadAttention``;
- activations: ``ReLU``, ``Tanh``, ``Sigmoid``, ``GELU``, ``SiLU``, ``LeakyReLU``, ``ELU``, ``SELU``, ``Softplus``,
  ``Hardtanh``, ``ReLU6``, ``LogSigmoid``, ``Softmax``, ``LogSoftmax``;
- losses: ``CrossEntropyLoss``, ``NLLLoss``, ``BCELoss``, ``BCEWithLogitsLoss``, ``MSELoss``, ``L1Loss``,
  ``HuberLoss``, ``SmoothL1Loss``, ``KLDivLoss``, ``CosineEmbeddingLoss``.

>>> import numpy as np, tapegrad as tg
>>> model = tg.nn.Sequential(tg.nn.Linear(4, 16, rng=0), tg.nn.ReLU(), tg.nn.Linear(16, 3, rng=1))
>>> x, y = tg.Tensor(np.random.default_rng(0).normal(size=(8, 4))), np.arange(8) % 3
>>> with tg.record():
...     loss = tg.nn.CrossEntropyLoss()(model(x), y)
>>> loss.backward()
>>> [p.grad.shape for p in model.parameters()]
[(16, 4), (16,), (3, 16), (3,)]
"""

from . import functional, init, utils
from .activation import ELU, GELU, SELU, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, ReLU6, SiLU, Softmax, Softplus
from .attention import MultiheadAttention
from .containers import ModuleDict, ModuleList
from .conv import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    Conv1d,
    Conv2d,
    ConvTranspose1d,
    ConvTranspose2d,
    MaxPool1d,
    MaxPool2d,
)
from .functional import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .layers import Dropout, Linear, ReLU, Sequential, Sigmoid, Tanh
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .shape import Embedding, Flatten, Identity, Unflatten
from .stateless import functional_call, parameter_arrays

__all__ = [
    "Module",
    "functional_call",
    "parameter_arrays",
    "functional",
    "utils",
    "init",
    # containers
    "Sequential",
    "ModuleList",
    "ModuleDict",
    # linear, shape, lookup
    "Linear",
    "Identity",
    "Flatten",
    "Unflatten",
    "Embedding",
    "Dropout",
    # convolution and pooling
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    # normalisation
    "LayerNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "GroupNorm",
    # recurrent and attention
    "RNN",
    "GRU",
    "LSTM",
    "RNNCell",
    "GRUCell",
    "LSTMCell",
    "MultiheadAttention",
    # activations
    "ReLU",
    "Tanh",
    "Sigmoid",
    "GELU",
    "SiLU",
    "LeakyReLU",
    "ELU",
    "SELU",
    "Softplus",
    "Hardtanh",
    "ReLU6",
    "LogSigmoid",
    "Softmax",
    "LogSoftmax",
    # losses: classes and functions
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
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "huber_loss",
    "smooth_l1_loss",
    "kl_div",
    "cosine_embedding_loss",
]
