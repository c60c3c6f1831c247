"""Shape ops: reshape, transpose, expand_dims, squeeze, broadcast_to, concatenate, stack, indexing, roll, and
the triangles tril and triu.

Their rules move the gradient back without touching values, so the tape saves shapes, never arrays.
Indexing scatters the gradient back with an add, so repeated integer indices accumulate. ``roll`` rolls it
back; ``tril`` and ``triu`` are projections, their own adjoints.
"""

import numpy as np

from ..backend.numpy_rules import numpy_rules
from ..registry import defop
from ._axes import ndim_of, normalize_axes
from ._batching import (
    broadcast_to_rule,
    concatenate_rule,
    expand_dims_rule,
    getitem_rule,
    reshape_rule,
    scatter_rule,
    squeeze_rule,
    stack_rule,
    transpose_rule,
)


def _inverse(axes):
    return None if axes is None else tuple(np.argsort(axes))


def _concatenate_vjp(xp, g, ans, *xs, argnum, axis=0):
    start = int(np.sum([xs[i].shape[axis] for i in range(argnum)], dtype=np.int64))
    stop = start + xs[argnum].shape[axis]
    return g[(slice(None),) * axis + (slice(start, stop), ...)]  # "...": the array API wants every axis indexed


# fmt: off
_reshape = defop("reshape", lambda x, shape, *, xp=np: xp.reshape(x, shape), lambda xp, g, ans, x, shape: xp.reshape(g, x.shape),
                 save="x.shape", view=True, linear=True, batch=reshape_rule)
_transpose = defop("transpose", lambda x, axes=None, *, xp=np: xp.transpose(x, axes),
                   lambda xp, g, ans, x, axes=None: xp.transpose(g, _inverse(axes)), view=True, linear=True, batch=transpose_rule)
_expand_dims = defop("expand_dims", lambda x, axis, *, xp=np: xp.expand_dims(x, axis),
                     lambda xp, g, ans, x, axis: xp.reshape(g, x.shape), save="x.shape", view=True, method=True, linear=True, batch=expand_dims_rule)
_squeeze = defop("squeeze", lambda x, axis=None, *, xp=np: xp.squeeze(x, axis),
                 lambda xp, g, ans, x, axis=None: xp.reshape(g, x.shape), save="x.shape", view=True, linear=True, batch=squeeze_rule)
_broadcast_to = defop("broadcast_to", lambda x, shape, *, xp=np: xp.broadcast_to(x, shape),
                      lambda xp, g, ans, x, shape: g, broadcast=True, view=True, method=True, linear=True, batch=broadcast_to_rule)
_concatenate = defop("concatenate", lambda *xs, axis=0, xp=np: xp.concatenate(xs, axis=axis), _concatenate_vjp,
                     inputs="*", save="*.shape", linear=True, batch=concatenate_rule)
_stack = defop("stack", lambda *xs, axis=0, xp=np: xp.stack(xs, axis=axis),
               lambda xp, g, ans, *xs, argnum, axis=0: g[(slice(None),) * axis + (argnum, ...)], inputs="*", linear=True, batch=stack_rule)
getitem = defop("getitem", lambda x, index, *, xp=None: x[index] if xp is None else xp.getitem(x, index),
                lambda xp, g, ans, x, index: xp.scatter(g, index=index, shape=x.shape), save="x.shape", view=True,
                doc="x[index] with basic slices, integer arrays (repeats accumulate) and boolean masks.\n\n"
                    ">>> import tapegrad as tg\n>>> tg.getitem(tg.Tensor([1.0, 2.0, 3.0]), index=slice(1, None))\nTensor([2., 3.])", linear=True, batch=getitem_rule)
scatter = defop("scatter", lambda g, index, shape, *, xp=numpy_rules: xp.scatter(g, index, shape),
                lambda xp, g, ans, x, index, shape: xp.getitem(g, index),
                doc="Zeros of ``shape`` with ``g`` added at ``index`` (repeats accumulate): the adjoint of indexing.\n\n"
                    ">>> import numpy as np, tapegrad as tg\n>>> tg.ops.scatter(tg.Tensor([1.0, 1.0]), index=np.array([0, 0]), shape=(2,))\nTensor([2., 0.])", linear=True, batch=scatter_rule)
# fmt: on


def reshape(x, shape):
    """Give x a new shape with the same number of elements (-1 infers one axis).

    >>> import tapegrad as tg
    >>> tg.reshape(tg.Tensor([1.0, 2.0, 3.0, 4.0]), (2, 2)).shape
    (2, 2)
    """
    return _reshape(x, shape=tuple(shape) if isinstance(shape, (list, tuple)) else (shape,))


def transpose(x, axes=None):
    """Permute the axes (None: reverse them).

    >>> import tapegrad as tg
    >>> tg.transpose(tg.Tensor([[1.0, 2.0]])).shape
    (2, 1)
    """
    if axes is not None:
        axes = tuple(int(a) % ndim_of(x) for a in axes)
        if sorted(axes) != list(range(ndim_of(x))):
            raise ValueError(f"transpose: axes {axes} are not a permutation of {ndim_of(x)} axes")
    return _transpose(x, axes=axes)


def swapaxes(x, axis1, axis2):
    """Exchange two axes.

    >>> import tapegrad as tg
    >>> tg.swapaxes(tg.Tensor([[[1.0, 2.0]]]), 0, 2).shape
    (2, 1, 1)
    """
    axes = list(range(ndim_of(x)))
    axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
    return _transpose(x, axes=tuple(axes))


def expand_dims(x, axis):
    """Insert a size-1 axis at ``axis``.

    >>> import tapegrad as tg
    >>> tg.expand_dims(tg.Tensor([1.0, 2.0]), 0).shape
    (1, 2)
    """
    return _expand_dims(x, axis=axis)


def squeeze(x, axis=None):
    """Remove size-1 axes (all of them, or those in ``axis``).

    >>> import tapegrad as tg
    >>> tg.squeeze(tg.Tensor([[1.0, 2.0]])).shape
    (2,)
    """
    return _squeeze(x, axis=normalize_axes(x, axis, "squeeze"))


def broadcast_to(x, shape):
    """Broadcast x to ``shape`` as NumPy does; the gradient is summed back.

    >>> import tapegrad as tg
    >>> tg.broadcast_to(tg.Tensor([1.0, 2.0]), (3, 2)).shape
    (3, 2)
    """
    return _broadcast_to(x, shape=tuple(shape) if isinstance(shape, (list, tuple)) else (shape,))


def concatenate(tensors, axis=0):
    """Join tensors along an existing axis.

    >>> import tapegrad as tg
    >>> tg.concatenate([tg.Tensor([1.0]), tg.Tensor([2.0, 3.0])])
    Tensor([1., 2., 3.])
    """
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("concatenate: needs at least one tensor")
    return _concatenate(tensors, axis=normalize_axes(tensors[0], axis, "concatenate")[0])


def stack(tensors, axis=0):
    """Join same-shaped tensors along a new axis.

    >>> import tapegrad as tg
    >>> tg.stack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    ndim = ndim_of(tensors[0]) + 1
    if not -ndim <= axis < ndim:
        raise ValueError(f"stack: axis {axis} is out of range for a result of {ndim} dimensions")
    return _stack(tensors, axis=int(axis) % ndim)
