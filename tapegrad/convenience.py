"""autograd's conveniences in tapegrad's vocabulary, built on the transforms and the one pytree module.

- :func:`elementwise_grad` (the sum of the Jacobian's columns, one reverse pass), :func:`grad_named` (by the
  argument's name: JAX's ``argnames``), :func:`multigrad_dict` (every argument, by name),
  :func:`make_vjp` (autograd's ``(vjp, ans)`` order), :func:`make_jvp`, :func:`make_hvp`,
  :func:`hessian_vector_product` (``(*args, v)``);
- :func:`flatten` and :func:`flatten_func`: a tree of arrays and numbers (lists, tuples, dicts, as the transforms
  take them, ``tapegrad._tree``) as one vector and back. Dicts keep their insertion order (autograd sorts their
  keys): ``unflatten(flatten(tree)[0])`` is ``tree`` either way. On recorded tensors both directions are recorded;
- :func:`fixed_point`: ``x* = f(a)(x*)`` iterated forward, differentiated in ``a`` by the implicit function
  theorem (its adjoint is a fixed point too), never through the iterations.

Results follow the transforms' contract: arrays outside a recording, recorded tensors inside one, so these
compose with ``grad`` and with each other.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._closure import closing_over, closure_of
from ._scope import argnums_of, check_argnums, parse_argnums
from ._state import is_recording
from ._tensor import Tensor
from ._tree import tree_flatten, tree_unflatten
from .custom import custom_op
from .ops import concatenate, reshape
from .transforms import grad, hvp, jvp, vjp

__all__ = [
    "elementwise_grad",
    "grad_named",
    "multigrad_dict",
    "make_vjp",
    "make_jvp",
    "make_hvp",
    "hessian_vector_product",
    "flatten",
    "flatten_func",
    "fixed_point",
]


def _only(args, nums, kwargs, f):
    """``f`` as a function of the arguments at ``nums`` alone, the others fixed to ``args``."""

    def g(*chosen):
        full = list(args)
        for i, v in zip(nums, chosen):
            full[i] = v
        return f(*full, **kwargs)

    return g


def make_vjp(f: Callable, argnums: int | Sequence[int] = 0, *, argnum: int | None = None) -> Callable:
    """autograd's ``make_vjp``: ``make_vjp(f)(*args)`` is ``(vjp, ans)``, ``vjp(g)`` the gradient of
    ``<g, f>`` in the argument ``argnums`` picks (a tuple of them for a tuple). :func:`tapegrad.vjp` is JAX's order.

    >>> import numpy as np, tapegrad as tg
    >>> vjp_fn, ans = tg.make_vjp(lambda x, y: x * y, argnum=1)(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    >>> ans, vjp_fn(np.array([1.0, 10.0]))
    (array([3., 8.]), array([ 1., 20.]))
    """
    nums, many = parse_argnums(argnums_of(argnums, argnum, "make_vjp"), "make_vjp")

    @functools.wraps(f)
    def made(*args, **kwargs):
        ans, vjp_fn = vjp(_only(args, nums, kwargs, f), *[args[i] for i in check_argnums(nums, len(args), "make_vjp")])

        def vjp_of(g):
            grads = vjp_fn(g)
            return grads if many else grads[0]

        vjp_of.release = vjp_fn.release
        return vjp_of, ans

    return made


def make_jvp(f: Callable, argnums: int | Sequence[int] = 0, *, argnum: int | None = None) -> Callable:
    """autograd's ``make_jvp``: ``make_jvp(f)(*args)`` is a function of a tangent ``v`` returning ``(ans, J v)``
    (one forward pass with tangents per call, as :func:`tapegrad.jvp`, which is JAX's ``jvp(f, primals,
    tangents)``).

    >>> import numpy as np, tapegrad as tg
    >>> jvp_fn = tg.make_jvp(lambda x: tg.sin(x) * 2.0)(np.array([0.0, np.pi]))
    >>> jvp_fn(np.array([1.0, 1.0]))
    (array([0.0000000e+00, 2.4492936e-16]), array([ 2., -2.]))
    """
    nums, many = parse_argnums(argnums_of(argnums, argnum, "make_jvp"), "make_jvp")

    @functools.wraps(f)
    def made(*args, **kwargs):
        positions = check_argnums(nums, len(args), "make_jvp")
        primals = tuple(args[i] for i in positions)

        def jvp_of(v):
            return jvp(_only(args, positions, kwargs, f), primals, tuple(v) if many else (v,))

        return jvp_of

    return made


def make_hvp(f: Callable, argnums: int = 0, *, argnum: int | None = None) -> Callable:
    """autograd's ``make_hvp``: ``make_hvp(f)(*args)`` is ``(hvp_fn, gradient)``, ``hvp_fn(v)`` the Hessian of a
    scalar ``f`` in argument ``argnums`` times ``v``; the gradient's tape is kept for every ``v``.

    >>> import numpy as np, tapegrad as tg
    >>> hvp_fn, g = tg.make_hvp(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
    >>> g, hvp_fn(np.array([1.0, 0.0]))
    (array([ 3., 12.]), array([6., 0.]))
    """
    argnums = argnums_of(argnums, argnum, "make_hvp")
    return make_vjp(grad(f, argnums), argnums)


def elementwise_grad(f: Callable, argnums: int | Sequence[int] = 0, *, argnum: int | None = None) -> Callable:
    """The sum of each column of ``f``'s Jacobian, in one reverse pass: the derivative of an elementwise ``f``
    at every element (autograd's ``elementwise_grad``; JAX's ``vmap(grad(f))`` for an elementwise ``f``).

    It is the VJP with a cotangent of ones: for an ``f`` that mixes elements it is not a derivative of each
    output, but ``grad(lambda x: f(x).sum())``. ``f`` returns a real value.

    >>> import numpy as np, tapegrad as tg
    >>> tg.elementwise_grad(tg.tanh)(np.array([0.0, 1.0]))   # 1 - tanh(x)^2
    array([1.       , 0.4199743])
    >>> tg.elementwise_grad(tg.elementwise_grad(lambda x: x ** 3))(np.array([1.0, 2.0]))   # 6 x
    array([ 6., 12.])
    """
    made = make_vjp(f, argnums_of(argnums, argnum, "elementwise_grad"))

    @functools.wraps(f)
    def elementwise_grad_f(*args, **kwargs):
        vjp_fn, ans = made(*args, **kwargs)
        leaves, spec = tree_flatten(ans, "elementwise_grad: the output of f")
        if any(np.iscomplexobj(a._data if isinstance(a, Tensor) else a) for a in leaves):
            raise TypeError("elementwise_grad: f returned a complex value; differentiate a real function of it")
        ones = [np.ones(np.shape(a), dtype=_real_dtype(a)) for a in leaves]
        return vjp_fn(tree_unflatten(spec, ones))

    return elementwise_grad_f


def _real_dtype(a):
    dtype = a.dtype if isinstance(a, (Tensor, np.ndarray, np.generic)) else np.float64
    return dtype if np.dtype(dtype).kind == "f" else np.float64


def grad_named(f: Callable, argnames: str | Sequence[str]) -> Callable:
    """The gradient with respect to the argument named ``argnames`` (a tuple of names: a tuple of gradients),
    passed by position or by keyword (autograd's ``grad_named``, JAX's ``grad(f, argnames=)``).

    >>> import numpy as np, tapegrad as tg
    >>> def loss(w, b, x):
    ...     return ((x * w + b) ** 2).sum()
    >>> tg.grad_named(loss, "b")(1.0, b=0.5, x=np.array([1.0, 2.0]))   # 2 sum(x w + b)
    array(8.)
    """
    sig = inspect.signature(f)
    names = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    positional = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for name in names:
        if name not in positional:
            raise ValueError(
                f"grad_named: {getattr(f, '__name__', repr(f))} has no argument named {name!r} "
                f"(its named positional arguments: {positional}); *args and **kwargs cannot be named"
            )
    nums = tuple(positional.index(n) for n in names)

    @functools.wraps(f)
    def grad_named_f(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return grad(f, nums if not isinstance(argnames, str) else nums[0])(*bound.args, **bound.kwargs)

    return grad_named_f


def multigrad_dict(f: Callable) -> Callable:
    """The gradients with respect to every argument at once, as a dict from the argument's name (defaults
    included; ``*args`` as a tuple and ``**kwargs`` as a dict), in ``f``'s order: autograd's ``multigrad_dict``.

    >>> import numpy as np, tapegrad as tg
    >>> g = tg.multigrad_dict(lambda w, b=1.0: (w * b) ** 2)(3.0)
    >>> g["w"], g["b"]
    (array(6.), array(18.))
    """
    sig = inspect.signature(f)

    @functools.wraps(f)
    def multigrad_dict_f(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)

        def of_dict(d):
            b = inspect.BoundArguments(sig, d)  # in f's order: the signature binds them back to positions
            return f(*b.args, **b.kwargs)

        return grad(of_dict)(values)

    return multigrad_dict_f


def hessian_vector_product(f: Callable, argnums: int = 0, *, argnum: int | None = None) -> Callable:
    """autograd's ``hessian_vector_product(f)(*args, v)``: the Hessian of a scalar ``f`` in argument
    ``argnums``, times ``v`` (the last argument); :func:`tapegrad.hvp` is ``hvp(f, x, v)``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.hessian_vector_product(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    nums, many = parse_argnums(argnums_of(argnums, argnum, "hessian_vector_product"), "hessian_vector_product")
    if many:
        raise TypeError(
            f"hessian_vector_product: argnums must be one int (got {nums}); for several arguments pass them as one "
            "tuple argument, or use tg.hvp on a tree"
        )
    (i,) = nums

    @functools.wraps(f)
    def hvp_f(*args_and_v, **kwargs):
        if len(args_and_v) < 2:
            raise TypeError("hessian_vector_product: call it with f's arguments and then the vector, (*args, v)")
        args, v = args_and_v[:-1], args_and_v[-1]
        (k,) = check_argnums((i,), len(args), "hessian_vector_product")
        return hvp(_only(args, (k,), kwargs, f), args[k], v)

    return hvp_f


def flatten(tree) -> tuple[Any, Callable]:
    """A tree of arrays and numbers (lists, tuples, dicts) as one vector, and the function that rebuilds the
    tree from such a vector: autograd's ``flatten``. On tensors inside ``record()`` both directions are recorded.

    >>> import numpy as np, tapegrad as tg
    >>> v, unflatten = tg.flatten({"w": np.ones((2, 2)), "b": 0.5})
    >>> v
    array([1. , 1. , 1. , 1. , 0.5])
    >>> unflatten(2 * v)["b"]
    array(1.)
    """
    leaves, spec = tree_flatten(tree, "flatten")
    shapes = [np.shape(leaf) for leaf in leaves]
    if any(isinstance(leaf, Tensor) for leaf in leaves):
        vector = concatenate([reshape(leaf, (-1,)) for leaf in leaves])
    elif leaves:
        vector = np.concatenate([np.ravel(np.asarray(leaf)) for leaf in leaves])
    else:
        vector = np.zeros(0)
    size = sum(math.prod(s) for s in shapes)

    def unflatten(v):
        """The tree, rebuilt from a vector of the flattened size."""
        if np.ndim(v) != 1 or np.shape(v)[0] != size:
            raise ValueError(f"unflatten: expected a vector of {size} elements, got shape {np.shape(v)}")
        pieces, k = [], 0
        for s in shapes:
            n = math.prod(s)
            pieces.append(v[k : k + n].reshape(s))
            k += n
        return tree_unflatten(spec, pieces)

    return vector, unflatten


def flatten_func(func: Callable, example) -> tuple[Callable, Callable, Any]:
    """``func`` of a tree as a function of one vector: ``(flat_func, unflatten, flat_example)``, where
    ``flat_func(v, *args)`` is ``flatten(func(unflatten(v), *args))[0]`` (autograd's ``flatten_func``).

    >>> import numpy as np, tapegrad as tg
    >>> loss = lambda p: (p["w"] ** 2).sum() + p["b"]
    >>> flat_loss, unflatten, v0 = tg.flatten_func(loss, {"w": np.array([1.0, 2.0]), "b": 3.0})
    >>> tg.grad(flat_loss)(v0)
    array([2., 4., 1.])
    """
    flat_example, unflatten = flatten(example)

    def flat_func(v, *args):
        return flatten(func(unflatten(v), *args))[0]

    return flat_func, unflatten, flat_example


def _distance(x, y):
    return float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) if np.size(x) else 0.0


def _iterate(step, x, distance, tol, max_iter, what):
    for _ in range(max_iter):
        x, prev = step(x), x
        if distance(x, prev) <= tol:
            return x
    raise RuntimeError(
        f"fixed_point: the {what} did not converge within max_iter={max_iter} iterations (tolerance {tol}); "
        "check that f(a) is a contraction near the solution, or raise max_iter"
    )


# no forward-mode rule: its VJP iterates to convergence on values; hessian and jacobian take reverse mode's rows
@custom_op(save="a ans", register=False, name="fixed_point", broadcast=False, jvp=None)
def _fixed_point(a, x0, *, f, unflatten, distance, tol, max_iter):
    return _iterate(lambda x: np.asarray(f(unflatten(a))(x)), x0, distance, tol, max_iter, "forward iteration")


@_fixed_point.defvjp
def _fixed_point_vjp(xp, g, ans, a, x0, *, f, unflatten, distance, tol, max_iter):
    # Implicit function theorem at x* = F(a, x*): the cotangent of a is w J_a, where w = g + w J_x is itself a
    # fixed point, iterated with the VJPs of one step at (a, x*); the forward iterations are never replayed.
    step = lambda a, x: f(unflatten(a))(x)  # noqa: E731
    vjp_a, _ = make_vjp(step, 0)(a, ans)
    vjp_x, _ = make_vjp(step, 1)(a, ans)
    w = _iterate(lambda w: g + vjp_x(w), np.zeros_like(np.asarray(g)), distance, tol, max_iter, "adjoint iteration")
    return vjp_a(w), None


def _closure_of(f, a, x0) -> tuple:
    """The tensors one step ``f(a)(x0)`` reads from its closure that a tape or a tangent differentiates: the
    iteration's op would read them as constants."""
    leaves, spec = tree_flatten(a, "fixed_point: a")
    values = tree_unflatten(spec, [leaf._data if isinstance(leaf, Tensor) else leaf for leaf in leaves])
    return closure_of(lambda: f(values)(x0._data if isinstance(x0, Tensor) else x0))


def fixed_point(f: Callable, a, x0, distance: Callable = _distance, tol: float = 1e-10, max_iter: int = 10_000) -> Any:
    """The fixed point ``x* = f(a)(x*)``, iterated from ``x0`` until ``distance(x, x_prev) <= tol`` (autograd's
        ``fixed_point(f, a, x0, distance, tol)``; the default distance is the largest absolute difference).

        Its gradient in ``a`` (an array or a tree of them) comes from the implicit function theorem: one more
        fixed-point iteration, of the adjoint ``w = g + w ∂f/∂x``, with the VJPs of one step at ``x*``. The memory
        used does not grow with the number of iterations; ``x0`` (an array) gets no gradient. A tensor ``f`` reads from its
    closure that a tape differentiates gets its gradient as if it were passed in ``a`` (``tapegrad._closure``). A map that does not converge
        within ``max_iter`` raises ``RuntimeError``. ``f(a)`` is written with tapegrad's functions (``tg.*`` or
        ``tapegrad.numpy``), as any function ``grad`` differentiates.

        >>> import numpy as np, tapegrad as tg
        >>> sqrt = lambda a: tg.fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, np.ones_like(a))  # Newton
        >>> sqrt(np.array([4.0, 9.0]))
        array([2., 3.])
        >>> tg.grad(lambda a: sqrt(a).sum())(np.array([4.0, 9.0]))   # 1 / (2 sqrt(a))
        array([0.25      , 0.16666667])
    """
    closure = _closure_of(f, a, x0)
    if closure:  # tensors f(a) reads from its closure that a tape or a tangent differentiates: inputs, as a is
        step = closing_over(lambda a, x, f=f: f(a)(x), closure)
        f, a = (lambda tree: lambda x: step(tree[0], x, *tree[1:])), (a, *closure)
    flat_a, unflatten = flatten(a)
    if not isinstance(flat_a, Tensor):
        flat_a = np.asarray(flat_a, dtype=np.result_type(flat_a, np.float64))
    if isinstance(x0, (list, tuple, dict)):
        raise TypeError(
            f"fixed_point: x0 is an array (got a {type(x0).__name__}); for a tree of arrays, iterate on the vector "
            "of tg.flatten(x0) and unflatten inside f(a)"
        )
    x0 = x0._data if isinstance(x0, Tensor) else np.asarray(x0, dtype=np.float64)
    out = _fixed_point(flat_a, x0, f=f, unflatten=unflatten, distance=distance, tol=tol, max_iter=max_iter)
    return out if is_recording() else out._data
