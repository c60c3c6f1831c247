"""Evaluating lazy values: :func:`compute` turns the Dask arrays of a step (a loss, its gradients) into NumPy
arrays in one pass over the data.

Tensors whose arrays are Dask's record ops that build Dask graphs; ``backward()`` leaves lazy gradients in
``.grad`` (graphs that reuse the forward's). Nothing is computed until asked: :func:`compute` hands every lazy
array it is given to one ``dask.compute``, so the tasks the loss and the gradients share (reading a chunk of
the data, the forward's intermediates) run once, on Dask's threaded scheduler, or on a cluster when a
``dask.distributed.Client`` is active. A tensor given to it is also made concrete in place (its data and its
``.grad``), so that a tensor kept afterwards (a loss appended to a history, a parameter) holds values, not a
graph: nothing of the step's graph outlives it.

Dask is imported only when a lazy array is met.

>>> import numpy as np, dask.array as da, tapegrad as tg
>>> X = tg.Tensor(da.ones((4, 2), chunks=2))
>>> w = tg.Tensor(np.array([1.0, -1.0]), requires_grad=True)
>>> with tg.record():
...     loss = ((X @ w) ** 2).sum() + (w * w).sum()
>>> loss.backward()
>>> type(w.grad).__name__
'Array'
>>> tg.compute(loss, w)
(Tensor(2., requires_grad=True), Tensor([ 1., -1.], requires_grad=True))
>>> w.grad
array([ 2., -2.])
"""

from __future__ import annotations

import numpy as np

from ._tensor import Tensor
from ._tree import tree_flatten, tree_unflatten
from .backend import is_lazy

__all__ = ["compute"]


def compute(*values, **dask_kwargs) -> tuple:
    """The values of lazy (Dask) arrays, computed in one pass: ``tg.compute(loss, W.grad)``.

    Each of ``values`` is a tensor, an array, or a list, tuple or dict of them; the result is a tuple with
    the same structure where every lazy array is now its NumPy value and anything else is as given. A tensor
    is made concrete in place (its data and its ``.grad``) and returned itself, so ``tg.compute(loss, *params)``
    evaluates the loss and the parameters' gradients together and leaves no graph on them. Keyword arguments go
    to ``dask.compute`` (``scheduler=``, ...); a ``dask.distributed.Client``, when one is active, runs it.

    >>> import numpy as np, dask.array as da
    >>> total, doubled = compute(da.arange(4.0, chunks=2).sum(), {"x": 2 * da.ones(2)})
    >>> float(total), doubled
    (6.0, {'x': array([2., 2.])})
    """
    leaves, spec = tree_flatten(values, "compute")
    slots = []  # (tensor or None, attribute, position among the lazy arrays)
    lazy = []
    for i, leaf in enumerate(leaves):
        parts = ((leaf, "_data"), (leaf, "grad")) if isinstance(leaf, Tensor) else ((None, i),)
        for owner, where in parts:
            a = getattr(owner, where) if owner is not None else leaf
            if is_lazy(a):
                slots.append((owner, where, len(lazy)))
                lazy.append(a)
    if not lazy:
        return tuple(tree_unflatten(spec, leaves))
    import dask  # optional: only when a lazy array is met

    done = [np.asarray(a) for a in dask.compute(*lazy, **dask_kwargs)]  # 0-d results come as NumPy scalars
    lazy = None  # the graphs go as soon as they are computed
    for owner, where, k in slots:
        if owner is None:
            leaves[where] = done[k]
        else:
            setattr(owner, where, done[k])  # the same values, now held as arrays: no version change
    return tuple(tree_unflatten(spec, leaves))
