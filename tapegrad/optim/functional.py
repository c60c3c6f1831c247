"""Functional optimizers with HIPS autograd's signature: ``adam(grad, x0, callback=None, num_iters=, step_size=)``.

``grad(x, i)`` returns the gradient at ``x`` on iteration ``i`` (``tg.grad(objective)`` of an
``objective(x, i)``); ``x0`` is an array or a tree of them (lists, tuples, dicts), flattened with
:func:`tapegrad.flatten` and rebuilt for ``grad`` and ``callback(x, i, g)``, which is called before each step.
Each returns the final ``x``, in ``x0``'s structure. The update equations are autograd's
(``autograd.misc.optimizers``), so results agree with it to rounding; they differ from the class optimizers'
(PyTorch's) where autograd's do:

- ``sgd``: the velocity is an exponential average, ``v = mass * v - (1 - mass) * g``, ``x += step_size * v``
  (PyTorch's ``SGD(momentum=)`` sums, ``v = mass * v + g``, a step ``1 / (1 - mass)`` times larger in a steady state);
- ``rmsprop``: the average of squared gradients starts at one (PyTorch's at zero) and ``eps`` is added to its root;
- ``adam``: as Kingma and Ba's, bias-corrected, with ``eps`` added to the corrected root.

For training modules, ``tapegrad.optim``'s classes (``Adam``, ``SGD``, ...) update parameters in place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tree import tree_flatten
from ..convenience import flatten

__all__ = ["sgd", "rmsprop", "adam"]


def _on_trees(optimize):
    """An optimizer of flat float vectors made one of trees (autograd's ``unflatten_optimizer``)."""

    @functools.wraps(optimize)
    def on_trees(grad: Callable, x0: Any, callback: Callable | None = None, *args, **kwargs):
        x, unflatten = flatten(x0)
        x = np.array(x, dtype=np.result_type(x, np.float64))

        spec = tree_flatten(x0, optimize.__name__)[1]

        def flat_grad(v, i):
            tree = _aligned(grad(unflatten(v), i), x0)
            if tree_flatten(tree, optimize.__name__)[1] != spec:  # numbers in the right count, paired wrongly
                raise ValueError(
                    f"{optimize.__name__}: grad(x, i) returned a {type(tree).__name__} of another structure than "
                    f"x's {type(x0).__name__}: it must return a gradient with x's structure (keys) and shapes"
                )
            g, _ = flatten(tree)
            g = np.asarray(g, dtype=x.dtype)
            if g.shape != x.shape:
                raise ValueError(
                    f"{optimize.__name__}: grad(x, i) returned {g.size} numbers for an x of {x.size}: it must return "
                    "a gradient with x's structure and shapes"
                )
            return g

        flat_callback = None if callback is None else (lambda v, i, g: callback(unflatten(v), i, unflatten(g)))
        return unflatten(optimize(flat_grad, x, flat_callback, *args, **kwargs))

    return on_trees


def _aligned(g, x):
    """``g`` with its dicts' keys in ``x``'s order (a gradient built by hand may list the same keys otherwise,
    which flattening would pair with the wrong parameters), and its lists and tuples as ``x``'s."""
    if isinstance(x, dict) and isinstance(g, dict) and g.keys() == x.keys():
        return {k: _aligned(g[k], x[k]) for k in x}
    if isinstance(x, (list, tuple)) and isinstance(g, (list, tuple)) and len(g) == len(x):
        items = [_aligned(gi, xi) for gi, xi in zip(g, x)]
        return x._make(items) if hasattr(x, "_make") else type(x)(items)
    return g


@_on_trees
def sgd(grad, x, callback=None, num_iters: int = 200, step_size: float = 0.1, mass: float = 0.9):
    """Gradient descent with momentum, autograd's convention: ``v = mass * v - (1 - mass) * g``, ``x += step_size * v``.

    >>> import numpy as np, tapegrad as tg
    >>> g = tg.grad(lambda x, i: ((x - 3.0) ** 2).sum())
    >>> tg.optim.functional.sgd(g, np.zeros(2), num_iters=300).round(6)
    array([3., 3.])
    """
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@_on_trees
def rmsprop(
    grad, x, callback=None, num_iters: int = 100, step_size: float = 0.1, gamma: float = 0.9, eps: float = 1e-8
):
    """RMSprop, autograd's convention: ``avg = gamma * avg + (1 - gamma) * g**2`` from ``avg = 1``,
    ``x -= step_size * g / (sqrt(avg) + eps)``.

    >>> import numpy as np, tapegrad as tg
    >>> g = tg.grad(lambda p, i: ((p["w"] - 3.0) ** 2).sum())   # x0 a tree: grad and the result are trees too
    >>> tg.optim.functional.rmsprop(g, {"w": np.zeros(2)}, num_iters=200, step_size=0.02)["w"].round(2)
    array([3., 3.])
    """
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@_on_trees
def adam(
    grad,
    x,
    callback=None,
    num_iters: int = 100,
    step_size: float = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
):
    """Adam (Kingma and Ba), autograd's signature: ``adam(grad, x0, callback=None, num_iters=100, step_size=0.001)``.

    >>> import numpy as np, tapegrad as tg
    >>> seen = []
    >>> g = tg.grad(lambda x, i: ((x - 3.0) ** 2).sum())
    >>> x = tg.optim.functional.adam(g, np.zeros(2), lambda x, i, g: seen.append(i), num_iters=500, step_size=0.1)
    >>> x.round(3), len(seen)
    (array([3., 3.]), 500)
    """
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m  # first moment
        v = (1 - b2) * (g**2) + b2 * v  # second moment
        mhat = m / (1 - b1 ** (i + 1))  # bias corrections
        vhat = v / (1 - b2 ** (i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return x
