"""Function transforms on top of the tape: grad, value_and_grad, vjp, jvp, jacobian, hessian, hvp.

Contract
--------
- **Arguments** may be tensors, arrays, Python numbers, or lists/tuples/dicts of them. The arguments being
  differentiated reach ``f`` as tensors (integer data becomes float64); the others are passed as given.
  Gradients mirror the structure of their argument; Jacobians mirror the output's structure, with the
  argument's structure at each output leaf and arrays of shape ``out.shape + arg.shape``.
- **Results** are NumPy arrays. Called while a tape records (inside ``record()``, or inside another
  transform) they are tensors recorded on it, so transforms compose: ``grad(grad(f))``,
  ``hessian(f) == jacobian(jacobian(f))``.
- **Tapes.** Each call records on tapes of its own and releases every one of them before returning, also
  when ``f`` raises; the tape ``vjp`` returns inside ``vjp_fn`` is released when ``vjp_fn`` is dropped (or by
  ``vjp_fn.release()``). A tape the thread kept for a later ``loss.backward()`` is kept through the call.
- **Forward mode.** ``jvp`` uses the double-VJP trick rather than a tangent pass: ``u -> J^T u`` computed on
  a recorded replay is linear in the cotangent ``u``, and the gradient in ``u`` of ``Re sum(J^T u * t)`` is
  ``J t`` (for complex values too: the VJP is the JVP's transpose under that real pairing, JAX's). It costs
  one forward and two reverse passes, and needs no second table of forward rules: every op whose rule is
  written with ``xp`` (all built-in ops, and custom ops written that way) supports it. ``jacobian`` uses
  the same recorded ``u -> J^T u`` to compute tall Jacobians column by column.
"""

from __future__ import annotations

import functools
import math
import numbers
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._scope import (
    Scope, argnums_of, aux_out, check_escape, connected, finish, parse_argnums, per_argument, run, split_aux,
)  # fmt: skip
from ._state import ESCAPED, is_recording
from ._tensor import Tensor
from ._tree import tree_flatten, tree_unflatten
from .backend import is_complex
from .errors import TapeError
from .ops import real, reshape, stack, transpose

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp"]


def value_and_grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    *,
    argnum: int | Sequence[int] | None = None,
) -> Callable:
    """A function returning ``(f(*args), grad(f)(*args))`` with one forward and one reverse pass.

    With ``has_aux=True``, ``f`` returns ``(output, aux)`` and the result is ``((output, aux), gradient)``.
    ``f`` returns a real scalar; for a holomorphic ``f`` of complex arguments, ``holomorphic=True`` gives the
    complex derivative ``f'(z)`` (JAX's semantics). Gradients of complex arguments follow tapegrad's convention
    (``docs/guide/complex.md``).

    >>> import numpy as np, tapegrad as tg
    >>> value, g = tg.value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
    >>> value, g
    (array(5.), array([2., 4.]))
    """
    nums, many = parse_argnums(argnums_of(argnums, argnum, "grad"), "grad")

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        before = ESCAPED.get()
        with Scope() as t:
            res, specs, xs = run(t, f, args, kwargs, nums, "grad")
            out, aux = split_aux(res, has_aux, "grad")
            if not isinstance(out, (Tensor, numbers.Number, np.ndarray, np.generic)) or isinstance(out, bool):
                hint = " (did it forget to return?)" if out is None else ""
                raise TypeError(f"grad: f must return a scalar tensor or number, got {type(out).__name__}{hint}")
            shape = tuple(out.shape) if isinstance(out, Tensor) else np.shape(out)
            if math.prod(shape) != 1:
                raise ValueError(f"grad requires a scalar output; use jacobian or vjp (f returned shape {shape})")
            _check_complex("grad", holomorphic, xs, [out])
            if connected(out):
                seed = np.ones_like(out._data) if holomorphic else None  # 1 + 0j: the derivative itself
                flat = t.gradient(out, xs, output_gradients=seed, unconnected="zero")
            else:
                check_escape("grad", before)
                flat = [np.zeros_like(x._data) for x in xs]
        recording = is_recording()
        value = finish(out, recording)
        grads = finish(per_argument(specs, flat, many), recording)
        return ((value, aux_out(aux, recording)) if has_aux else value), grads

    return value_and_grad_f


def grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    *,
    argnum: int | Sequence[int] | None = None,
) -> Callable:
    """The gradient of a scalar function, as a function of the same arguments.

    ``argnums`` picks the argument (or a tuple of arguments, giving a tuple of gradients); each gradient has
    its argument's structure. With ``has_aux=True``, ``f`` returns ``(output, aux)`` and so does the result,
    as ``(gradient, aux)``. ``holomorphic=True``: see :func:`value_and_grad`. ``argnum=`` is autograd's
    spelling of ``argnums=`` (every transform that takes ``argnums`` takes it).

    >>> import numpy as np, tapegrad as tg
    >>> tg.grad(lambda x: x ** 3)(2.0)
    array(12.)
    >>> tg.grad(tg.grad(lambda x: x ** 3))(2.0)
    array(12.)
    >>> g = tg.grad(lambda p, x: (p["w"] * x + p["b"]).sum())({"w": np.ones(2), "b": 0.5}, np.array([3.0, 4.0]))
    >>> g["w"], g["b"]
    (array([3., 4.]), array(2.))
    """
    vg = value_and_grad(f, argnums_of(argnums, argnum, "grad"), has_aux, holomorphic)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_f


def _stack(rows, shape, recording, last=0):
    """Stack ``rows`` into ``shape``. With ``last``, the rows are columns: ``shape`` is ``x.shape + o.shape``
    and the block is transposed to ``o.shape + x.shape``."""
    if recording and any(isinstance(r, Tensor) for r in rows):
        block = reshape(stack(rows), shape)
    else:
        block = np.stack([r._data if isinstance(r, Tensor) else r for r in rows]).reshape(shape)
    if last:
        k = len(shape) - last
        axes = tuple(range(k, len(shape))) + tuple(range(k))
        block = transpose(block, axes) if isinstance(block, Tensor) else block.transpose(axes)
    return block


def _onehot(k, like):
    e = np.zeros(like.size, dtype=like.dtype)
    e[k] = 1
    return e.reshape(like.shape)


def _rows(t, live, xs, recording):
    """Reverse mode: one replay of the forward tape per output element."""
    blocks = []
    for o in live:
        rows = [t.gradient(o, xs, output_gradients=_onehot(k, o), unconnected="zero") for k in range(o.size)]
        blocks.append([_stack([r[j] for r in rows], o.shape + x.shape, recording) for j, x in enumerate(xs)])
    return blocks


def _columns(t, live, xs, recording):
    """Forward mode: record ``u -> J^T u`` once (a replay on a second tape), then one replay of that per
    input element."""
    with Scope(persistent=True) as outer:
        with outer:
            us = [Tensor(np.zeros(o.shape, dtype=o.dtype)) for o in live]
            outer.watch(*us)
            vjps = t.gradient(live, xs, output_gradients=us, unconnected="zero")
        blocks = [[None] * len(xs) for _ in live]
        for j, (x, v) in enumerate(zip(xs, vjps)):
            if connected(v):
                cols = [outer.gradient(v, us, output_gradients=_onehot(k, x)) for k in range(x.size)]
            else:
                cols = [[None] * len(live) for _ in range(x.size)]  # J^T u does not depend on u: a zero block
            for i, o in enumerate(live):
                c = [np.zeros(o.shape, dtype=o.dtype) if col[i] is None else col[i] for col in cols]
                blocks[i][j] = _stack(c, x.shape + o.shape, recording, last=len(o.shape))
    return blocks


def jacobian(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    mode: str = "auto",
    holomorphic: bool = False,
    *,
    argnum: int | Sequence[int] | None = None,
) -> Callable:
    """The Jacobian of ``f``: for an output of shape ``(m...)`` and an argument of shape ``(n...)``, ``(m..., n...)``.

    ``mode="rev"`` replays the recorded forward pass once per output element (rows). ``mode="fwd"`` records
    ``u -> J^T u`` once, a second reverse pass, and replays that once per input element (columns, the
    double-VJP trick of :func:`jvp`). ``"auto"`` (the default) takes columns for a tall Jacobian, when its
    ``m`` output elements and ``n`` input elements have ``m > 1.25 n + 8`` (from measured costs). Rows and
    columns are computed one at a time: a rule takes a cotangent in its output's shape, so a batch of them
    would need every rule to broadcast over a leading axis. ``f``'s outputs are real; ``holomorphic=True`` gives
    the complex Jacobian ``∂f_i/∂z_j`` of a holomorphic ``f`` of complex arguments (JAX's semantics).

    >>> import numpy as np, tapegrad as tg
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> tg.jacobian(lambda x: A @ x)(np.zeros(2))
    array([[1., 2.],
           [3., 4.],
           [5., 6.]])
    """
    nums, many = parse_argnums(argnums_of(argnums, argnum, "jacobian"), "jacobian")
    if mode not in ("auto", "rev", "fwd"):
        raise ValueError(f"jacobian: mode must be 'auto', 'rev' or 'fwd', got {mode!r}")

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        with Scope(persistent=True) as t:
            res, specs, xs = run(t, f, args, kwargs, nums, "jacobian")
            out, aux = split_aux(res, has_aux, "jacobian")
            outs, ospec = tree_flatten(out, "jacobian: the output of f")
            _check_complex("jacobian", holomorphic, xs, outs)
            recording = is_recording()
            live = [o for o in outs if connected(o) and o.size]
            m, n = sum(o.size for o in live), sum(x.size for x in xs)
            # Measured: a column costs about 1.25 rows, plus one recorded reverse pass (about 8 rows).
            columns = mode == "fwd" or (mode == "auto" and 4 * m > 5 * n + 32)
            computed = iter((_columns if columns else _rows)(t, live, xs, recording) if live else [])
            blocks = []
            for o in outs:
                if connected(o) and o.size:
                    cols = next(computed)
                else:
                    cols = [np.zeros(np.shape(o) + x.shape, dtype=x.dtype) for x in xs]
                blocks.append(per_argument(specs, cols, many))
        recording = is_recording()
        jac = finish(tree_unflatten(ospec, blocks), recording)
        return (jac, aux_out(aux, recording)) if has_aux else jac

    return jacobian_f


def hessian(
    f: Callable, argnums: int | Sequence[int] = 0, holomorphic: bool = False, *, argnum: int | None = None
) -> Callable:
    """The Hessian of a scalar ``f``: the Jacobian of its Jacobian (reverse over reverse); ``holomorphic=True``
    for a holomorphic ``f`` of complex arguments.

    >>> import numpy as np, tapegrad as tg
    >>> A = np.array([[1.0, 2.0], [0.0, 3.0]])
    >>> tg.hessian(lambda x: x @ (A @ x))(np.ones(2))   # A + A^T
    array([[2., 2.],
           [2., 6.]])
    """
    argnums = argnums_of(argnums, argnum, "hessian")
    return jacobian(jacobian(f, argnums, holomorphic=holomorphic), argnums, holomorphic=holomorphic)


def _check_complex(what, holomorphic, xs, outs) -> None:
    """Without ``holomorphic``, outputs are real (a complex one has no gradient); with it, inputs and outputs are
    complex (JAX's rules)."""
    if holomorphic:
        for x in xs:
            if not is_complex(x._data):
                raise TypeError(
                    f"{what}: holomorphic=True needs complex inputs, got one of dtype {x.dtype}; convert it "
                    "(x.astype(np.complex128)), or leave holomorphic out for a real function"
                )
        for o in outs:
            if isinstance(o, Tensor) and not is_complex(o._data):
                raise TypeError(f"{what}: holomorphic=True needs complex outputs, got one of dtype {o.dtype}")
        return
    for o in outs:
        if is_complex(o._data if isinstance(o, Tensor) else np.asarray(o)):
            raise TypeError(
                f"{what}: f returned a complex value ({np.asarray(o._data if isinstance(o, Tensor) else o).dtype}), "
                "which has no gradient: differentiate a real loss (tg.real, tg.absolute, abs(z) ** 2), pass "
                "holomorphic=True for a holomorphic f, or use vjp with a cotangent"
            )


def _operand(v, dtype=None):
    """A tangent or direction as an operand: a tensor stays a tensor (an outer tape may be differentiating
    with respect to it), anything else becomes an array."""
    if isinstance(v, Tensor):
        return v if dtype is None or v.dtype == dtype else v.astype(dtype)
    return np.asarray(v, dtype=dtype)


def hvp(f: Callable, x, v) -> Any:
    """The Hessian of a scalar ``f`` at ``x`` times ``v`` (same structure as ``x``), without forming the Hessian.

    Reverse over reverse: the gradient of ``<grad f(x), v>``, two reverse passes whatever the size of ``x``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 1.0]))   # 6 x * v
    array([ 6., 12.])
    """
    xleaves, xspec = tree_flatten(x, "hvp: x")
    vleaves, vspec = tree_flatten(v, "hvp: v")
    if vspec != xspec or any(np.shape(a) != np.shape(b) for a, b in zip(xleaves, vleaves)):
        raise ValueError("hvp: v must have the structure and shapes of x")
    g = grad(f)

    def g_dot_v(x):
        gleaves, _ = tree_flatten(g(x), "hvp")
        total = 0.0
        for gi, vi in zip(gleaves, vleaves):
            total = total + _pairing(gi, _operand(vi))
        return total

    return grad(g_dot_v)(x)


def _pairing(a, b):
    """``<a, b> = Re(sum(a * b))``, the real pairing under which a VJP is the transpose of the JVP (JAX's
    convention): real-valued for complex values too, so that its gradient exists."""
    p = (a * b).sum()
    return real(p) if is_complex(p._data if isinstance(p, Tensor) else np.asarray(p)) else p


def _tangent(t, x):
    """A tangent (or direction) for primal ``x``, in its dtype; a complex one for a real primal is refused (its
    imaginary part would be dropped), as JAX refuses mismatched dtypes."""
    if not is_complex(x._data) and is_complex(t._data if isinstance(t, Tensor) else np.asarray(t)):
        raise TypeError(
            f"a complex tangent for a real primal of dtype {x.dtype}: its imaginary part has no direction to go; "
            "make the primal complex (x.astype(np.complex128)) or pass a real tangent"
        )
    return _operand(t, x.dtype)


def jvp(f: Callable, primals: Sequence, tangents: Sequence) -> tuple:
    """Forward mode: ``(f(*primals), J t)`` for tangents ``t`` with the structure of ``primals``.

    Computed by the double-VJP trick (see the module docstring): one forward and two reverse passes.

    >>> import numpy as np, tapegrad as tg
    >>> out, tangent = tg.jvp(lambda x: tg.sin(x) * 2.0, (np.array([0.0, np.pi]),), (np.array([1.0, 1.0]),))
    >>> tangent   # 2 cos(x) * t
    array([ 2., -2.])
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples of arguments, e.g. jvp(f, (x,), (t,))")
    pleaves, pspec = tree_flatten(tuple(primals), "jvp: primals")
    tleaves, tspec = tree_flatten(tuple(tangents), "jvp: tangents")
    if tspec != pspec or any(np.shape(a) != np.shape(b) for a, b in zip(pleaves, tleaves)):
        raise ValueError("jvp: tangents must have the structure and shapes of primals")
    with Scope() as inner, Scope() as outer:
        res, _, xs = run(inner, f, primals, {}, range(len(primals)), "jvp")
        outs, ospec = tree_flatten(res, "jvp: the output of f")
        live = [o for o in outs if connected(o)]
        with outer:
            us = [Tensor(np.zeros(o.shape, dtype=o.dtype)) for o in live]
            outer.watch(*us)
            s = 0.0
            if live:
                # J^T u, recorded on `outer` as a function of u; its VJP with the tangent t is J t.
                vjps = inner.gradient(live, xs, output_gradients=us, unconnected="zero")
                for gi, ti, x in zip(vjps, tleaves, xs):
                    s = s + _pairing(gi, _tangent(ti, x))
        jts = outer.gradient(s, us, unconnected="zero") if connected(s) else [np.zeros(u.shape) for u in us]
    recording = is_recording()
    it = iter(jts)
    touts = [next(it) if connected(o) else np.zeros(np.shape(o)) for o in outs]
    return finish(res, recording), finish(tree_unflatten(ospec, touts), recording)


def vjp(f: Callable, *primals, has_aux: bool = False) -> tuple:
    """``(f(*primals), vjp_fn)``: ``vjp_fn(cotangent)`` gives a tuple with ``J^T cotangent`` for each primal.

    The cotangent has the structure of the output. ``vjp_fn`` may be called several times; its tape is
    released when ``vjp_fn`` is dropped, or at once with ``vjp_fn.release()``. With ``has_aux=True`` the
    result is ``(output, vjp_fn, aux)``.

    >>> import numpy as np, tapegrad as tg
    >>> out, vjp_fn = tg.vjp(lambda x, y: x * y, np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    >>> vjp_fn(np.array([1.0, 10.0]))
    (array([ 3., 40.]), array([ 1., 20.]))
    """
    scope = Scope(persistent=True)
    t = scope.tape
    scope.__enter__()
    try:
        res, specs, xs = run(t, f, primals, {}, range(len(primals)), "vjp")
        out, aux = split_aux(res, has_aux, "vjp")
        outs, ospec = tree_flatten(out, "vjp: the output of f")
    except BaseException:
        scope.__exit__()
        raise
    scope.keep()  # the tape lives on in vjp_fn

    def vjp_fn(cotangent):
        cleaves, cspec = tree_flatten(cotangent, "vjp_fn: the cotangent")
        if cspec != ospec or any(np.shape(c) != np.shape(o) for c, o in zip(cleaves, outs)):
            raise ValueError(
                f"vjp_fn: the cotangent must have the structure and shapes of f's output "
                f"(shapes {[np.shape(o) for o in outs]}), got shapes {[np.shape(c) for c in cleaves]}"
            )
        if t.state != "recording":
            raise TapeError("vjp_fn: its tape was released; call vjp again")
        pairs = [(o, c) for o, c in zip(outs, cleaves) if connected(o)]
        if pairs:
            flat = t.gradient([o for o, _ in pairs], xs, output_gradients=[c for _, c in pairs], unconnected="zero")
        else:
            flat = [np.zeros_like(x._data) for x in xs]
        return finish(per_argument(specs, flat, True), is_recording())

    vjp_fn.release = t.release
    weakref.finalize(vjp_fn, t.release)
    recording = is_recording()
    value = finish(out, recording)
    return (value, vjp_fn, aux_out(aux, recording)) if has_aux else (value, vjp_fn)
