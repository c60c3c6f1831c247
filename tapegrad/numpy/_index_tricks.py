"""``r_`` and ``c_``, NumPy's index expressions that concatenate (``np.r_[x, 0.0, 1:4]``), on the tape.

NumPy's ``np.r_`` and ``np.c_`` are objects, not functions, so NumPy never hands them to tapegrad: on
tensors they would build a constant (real NumPy's raise, naming them, inside ``record()``). These follow
NumPy's rules (``AxisConcatenator``) with tapegrad's ``concatenate``: slices become ``arange`` (or ``linspace``
for a complex step), scalars and arrays get ``ndmin`` dimensions, the first string sets ``axis``, ``ndmin`` and
``trans1d`` (``'0,2,0'``), and the result has NumPy's dtype. Without a tensor they are NumPy's own.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
>>> tg.grad(lambda x: np.sum(np.r_[x, 0.0, 3 * x] ** 2))(x)
array([20., 40.])
>>> np.c_[x, 2 * x].shape
(2, 2)
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._tree import holds_tensor
from ._arrays import asarray
from ._calculus import shape


class _Concatenator:
    """NumPy's ``AxisConcatenator`` on tensors: ``r_`` (axis 0) and ``c_`` (the last axis, at least 2-D)."""

    def __init__(self, numpy_object, name, axis, ndmin, trans1d):
        self._numpy, self._name = numpy_object, name
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        if not holds_tensor(key if isinstance(key, tuple) else (key,)):
            return self._numpy[key]
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, kinds = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError(f"np.{self._name}: special directives must be the first entry")
                axis, ndmin, trans1d = self._directive(item, ndmin, trans1d)
                continue
            if isinstance(item, slice):
                # NumPy's own arange (or linspace), with its ndmin and trans1d: a constant
                objs.append(self._numpy[f"0,{ndmin},{trans1d}", item])
                kinds.append(objs[-1].dtype)
            elif type(item) in np.ScalarType:
                objs.append(np.array(item, ndmin=ndmin))
                kinds.append(item)  # a Python scalar is weak in the result's dtype, as in NumPy
            else:
                obj = _at_least(asarray(item), ndmin, trans1d)
                objs.append(obj)
                kinds.append(obj.dtype)
        dtype = np.result_type(*kinds)
        objs = [o if o.dtype == dtype else ops.astype(o, dtype=dtype) for o in objs]
        return ops.concatenate(objs, axis=axis)

    def _directive(self, item, ndmin, trans1d):
        if item in ("r", "c"):
            raise TypeError(
                f"np.{self._name}[{item!r}, ...] builds a np.matrix, which tapegrad has no tensor for; "
                "leave out the directive (or reshape the result)"
            )
        try:
            values = [int(v) for v in item.split(",")]
        except ValueError:
            raise ValueError(f"np.{self._name}: unknown special directive {item!r}") from None
        if len(values) > 3:
            raise ValueError(f"np.{self._name}: unknown special directive {item!r}")
        defaults = (None, ndmin, trans1d)
        axis, ndmin, trans1d = (values + list(defaults[len(values) :]))[:3]
        return axis, ndmin, trans1d

    def __len__(self) -> int:
        return 0


def _at_least(x, ndmin, trans1d):
    """``x`` with ``ndmin`` dimensions, the new ones in front, then moved as NumPy's ``trans1d`` says."""
    dims = shape(x)
    missing = ndmin - len(dims)
    if missing <= 0:
        return x
    x = ops.reshape(x, (1,) * missing + dims)
    if trans1d == -1:
        return x
    k2, k1 = missing, trans1d if trans1d >= 0 else trans1d + missing + 1
    axes = list(range(ndmin))
    return ops.transpose(x, tuple(axes[:k1] + axes[k2:] + axes[k1:k2]))


r_ = _Concatenator(np.r_, "r_", axis=0, ndmin=1, trans1d=-1)
c_ = _Concatenator(np.c_, "c_", axis=-1, ndmin=2, trans1d=0)
