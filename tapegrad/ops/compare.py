"""Results with no gradient: comparisons, argmax/argmin and nonzero. They are never recorded (``sign``, a
constant for real input only, is in ``complex_numbers``)."""

import numpy as np

from .._tensor import Tensor
from ..backend import NUMPY, backend_of
from ..registry import defnondiff
from ._axes import normalize_axes
from ._batching import flat_index_rule

less = defnondiff("less", np.less, doc="x < y, elementwise (no gradient).")
less_equal = defnondiff("less_equal", np.less_equal, doc="x <= y, elementwise (no gradient).")
greater = defnondiff("greater", np.greater, doc="x > y, elementwise (no gradient).")
greater_equal = defnondiff("greater_equal", np.greater_equal, doc="x >= y, elementwise (no gradient).")
equal = defnondiff("equal", np.equal, doc="x == y, elementwise (no gradient).")
not_equal = defnondiff("not_equal", np.not_equal, doc="x != y, elementwise (no gradient).")


def _arg(name):
    def forward(x, axis=None, keepdims=False, *, xp=np):
        return getattr(xp, name)(x, axis=axis, keepdims=keepdims)

    # axis=None searches the flattened example: the batching rule flattens behind the batch axes
    return defnondiff(name, forward, batch=flat_index_rule(lambda x, **kw: forward(x, **kw), name))


_argmax = _arg("argmax")
_argmin = _arg("argmin")


def argmax(x, axis=None, keepdims=False):
    """Index of the maximum along ``axis`` (no gradient).

    >>> import tapegrad as tg
    >>> tg.argmax(tg.Tensor([1.0, 3.0, 2.0])).item()
    1
    """
    if axis is not None:
        (axis,) = normalize_axes(x, axis, "argmax")
    return _argmax(x, axis=axis, keepdims=keepdims)


def argmin(x, axis=None, keepdims=False):
    """Index of the minimum along ``axis`` (no gradient).

    >>> import tapegrad as tg
    >>> tg.argmin(tg.Tensor([1.0, 3.0, 2.0])).item()
    0
    """
    if axis is not None:
        (axis,) = normalize_axes(x, axis, "argmin")
    return _argmin(x, axis=axis, keepdims=keepdims)


def nonzero(a):
    """The indices of ``a``'s nonzero elements, one integer tensor per axis, as ``np.nonzero`` (no gradient);
    in ``a``'s array library.

    >>> import tapegrad as tg
    >>> tg.nonzero(tg.Tensor([[0.0, 2.0], [3.0, 0.0]]))
    (Tensor([0, 1]), Tensor([1, 0]))
    """
    data = a._data if isinstance(a, Tensor) else np.asarray(a)
    b = backend_of(data)
    if b is None or b is NUMPY:
        return tuple(Tensor._wrap(i) for i in np.nonzero(data))
    if data.ndim == 0:
        raise ValueError(f"nonzero of a 0-d {b.name} array: index it as a 1-d one (reshape(x, (1,)))")
    return tuple(Tensor._wrap(i) for i in b.xp.nonzero(data))
