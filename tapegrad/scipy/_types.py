"""What ``tapegrad.scipy``'s functions return: SciPy's types on arrays, tensors on tensors (the rule of
``tapegrad.numpy``, docs/guide/numpy.md, "Which type comes back").

Given no tensor (arrays, numbers, lists of them), a function of ``tapegrad.scipy`` returns what SciPy returns,
an array or NumPy's scalar, inside ``record()`` or not, so that results go on to matplotlib or SciPy as an
autograd program expects; given a tensor, it returns a tensor, recorded.

>>> import numpy as np, tapegrad as tg
>>> from tapegrad.scipy import special
>>> type(special.gammaln(np.ones(2))).__name__, type(special.gammaln(1.0)).__name__
('ndarray', 'float64')
>>> type(special.gammaln(tg.Tensor(np.ones(2)))).__name__
'Tensor'
"""

from __future__ import annotations

import functools

from .._tensor import Tensor
from .._tree import holds_tensor
from ..forward import has_tangent


def _plain(value):
    if isinstance(value, Tensor):
        data = value.data
        return data[()] if data.ndim == 0 else data  # a 0-d result is NumPy's scalar, as SciPy gives it
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _differentiated(value) -> bool:
    """Whether ``value`` (a tensor, or a tuple of them) carries a gradient: recorded, a leaf that needs one, a
    tangent, or vmap's batch. A function may compute one from a tensor of its callable's closure (odeint's
    ``func``), with no tensor among its arguments; as an array it would be a constant."""
    if isinstance(value, tuple):
        return any(_differentiated(v) for v in value)
    return isinstance(value, Tensor) and (
        value._node is not None or value.requires_grad or value.__class__ is not Tensor or has_tangent(value)
    )


def like_scipy(f):
    """``f``, returning SciPy's types (arrays, NumPy's scalars) where no argument holds a tensor and nothing
    it returns carries a gradient."""

    @functools.wraps(f)
    def g(*args, **kwargs):
        out = f(*args, **kwargs)
        if any(holds_tensor(a) for a in args) or any(holds_tensor(v) for v in kwargs.values()):
            return out
        return out if _differentiated(out) else _plain(out)

    return g
