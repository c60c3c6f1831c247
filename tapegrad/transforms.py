"""Function transforms on top of the tape: grad, value_and_grad, vjp, jvp, linearize, jacobian, jacfwd, jacrev,
hessian, hvp (vmap is :mod:`tapegrad.batching`'s).

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
- **Forward mode.** ``jvp``, ``linearize`` and ``jacfwd`` propagate tangents beside the forward pass, one JVP
  rule per op (:mod:`tapegrad.forward`), with no tape; ``hvp`` is ``grad`` of ``f``'s derivative along ``v``
  (reverse over forward) and ``hessian`` is ``jacfwd(jacrev(f))`` (forward over reverse). ``jacfwd`` is
  ``vmap`` (:mod:`tapegrad.batching`) of ``jvp`` over the input's basis. The double-VJP columns (``u -> J^T u`` recorded once, then one replay per input
  element) remain for the complex Jacobians of a holomorphic ``f``.
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
    Scope,
    argnums_of,
    aux_out,
    check_argnums,
    connected,
    finish,
    functional_input,
    keeps_tensors,
    parse_argnums,
    per_argument,
    run,
    split_aux,
)
from ._state import is_recording, tracer
from ._tensor import Tensor
from ._tree import tree_flatten, tree_unflatten
from .backend import is_complex, is_floating
from .batching import vmap
from .errors import TapeError
from .forward import has_tangent, level, set_tangent, tangent_of
from .ops import real, reshape, stack, transpose
from .ops._batching import identity_basis

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacobian", "jacfwd", "jacrev", "hessian", "hvp"]


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
            else:  # a constant (a conversion of a value of f's would have raised: _state.warn_escape)
                flat = [np.zeros_like(x._data) for x in xs]
        recording = keeps_tensors()
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
        block = reshape(stack(rows) if len(rows) > 1 else rows[0], shape)  # one row (a gradient's): no copy
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

    ``mode="fwd"`` is :func:`jacfwd`: ``vmap`` of :func:`jvp` over the input's basis, every column in one batched
    forward pass. ``mode="rev"`` replays the recorded forward pass once per output element (rows, :func:`jacrev`).
    ``"auto"`` (the default) takes the batched columns unless ``f`` has at most two output elements (a gradient's
    rows are cheaper then). ``f``'s outputs are real; ``holomorphic=True`` gives the complex Jacobian
    ``∂f_i/∂z_j`` of a holomorphic ``f`` of complex arguments (JAX's semantics), by rows or, for ``mode="fwd"``
    or a tall Jacobian, by the double-VJP columns.

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
        batched = False
        with Scope(persistent=True) as t:
            res, specs, xs = run(t, f, args, kwargs, nums, "jacobian")
            out, aux = split_aux(res, has_aux, "jacobian")
            outs, ospec = tree_flatten(out, "jacobian: the output of f")
            _check_complex("jacobian", holomorphic, xs, outs)
            recording = keeps_tensors()
            live = [o for o in outs if connected(o) and o.size]
            m, n = sum(o.size for o in live), sum(x.size for x in xs)
            # every column in one batched forward pass (jacfwd), once this scope is closed
            batched = not holomorphic and (mode == "fwd" or (mode == "auto" and m > 2)) and not _unbatchable()
            # Measured: a column costs about 1.25 rows, plus one recorded reverse pass (about 8 rows).
            columns = mode == "fwd" or (mode == "auto" and 4 * m > 5 * n + 32)
            computed = iter((_columns if columns else _rows)(t, live, xs, recording) if live and not batched else [])
            blocks = []
            for o in outs if not batched else ():
                if connected(o) and o.size:
                    cols = next(computed)
                else:
                    cols = [np.zeros(np.shape(o) + x.shape, dtype=x.dtype) for x in xs]
                blocks.append(per_argument(specs, cols, many))
        if batched:
            try:
                return jacfwd(f, argnums, has_aux)(*args, **kwargs)
            except NotImplementedError:
                if mode == "fwd":
                    raise
            # an op forward mode or vmap has no rule for (several outputs, say): by rows, as it always could
            return jacobian(f, argnums, has_aux, "rev", holomorphic)(*args, **kwargs)
        recording = keeps_tensors()
        jac = finish(tree_unflatten(ospec, blocks), recording)
        return (jac, aux_out(aux, recording)) if has_aux else jac

    return jacobian_f


def _unbatchable() -> bool:
    """Whether vmap cannot batch here: a tape outside records (it would differentiate through the batch), or
    tg.compile traces."""
    return tracer() is not None or is_recording()


def jacrev(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Jacobian of ``f`` by reverse mode, one row per output element (JAX's ``jacrev``):
    ``jacobian(..., mode="rev")``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.jacrev(lambda x: x[:1] * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [2., 1.]])
    """
    return jacobian(f, argnums, has_aux, mode="rev", holomorphic=holomorphic)


def hessian(
    f: Callable, argnums: int | Sequence[int] = 0, holomorphic: bool = False, *, argnum: int | None = None
) -> Callable:
    """The Hessian of a scalar ``f``: forward over reverse, ``jacfwd(jacrev(f))`` (JAX's), every column of it in
    one batched pass; ``holomorphic=True`` for a holomorphic ``f`` of complex arguments (reverse over reverse).

    Forward over reverse rather than reverse over forward: ``f``'s own forward and reverse passes run once, on one
    example, and only the tangents carry the ``n`` columns (one batched pass); reverse over ``jacfwd`` would record
    every batched op and replay that tape once per element of the gradient, ``n`` replays.

    >>> import numpy as np, tapegrad as tg
    >>> A = np.array([[1.0, 2.0], [0.0, 3.0]])
    >>> tg.hessian(lambda x: x @ (A @ x))(np.ones(2))   # A + A^T
    array([[2., 2.],
           [2., 6.]])
    """
    argnums = argnums_of(argnums, argnum, "hessian")
    if holomorphic:  # complex Jacobians of a holomorphic f: reverse over reverse, as before
        return jacobian(jacobian(f, argnums, holomorphic=True), argnums, holomorphic=True)
    batched = jacfwd(jacrev(f, argnums), argnums)
    by_rows = jacrev(jacrev(f, argnums), argnums)

    @functools.wraps(f)
    def hessian_f(*args, **kwargs):
        # under a tape that records (grad of hessian) or tg.compile's trace, vmap does not batch yet: reverse over
        # reverse, one row per element
        if _unbatchable():
            return by_rows(*args, **kwargs)
        try:
            return batched(*args, **kwargs)
        except NotImplementedError:  # an op without a forward-mode rule (fixed_point's): by rows, as always
            return by_rows(*args, **kwargs)

    return hessian_f


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

    Reverse over forward: the gradient of ``f``'s derivative along ``v``, ``<grad f(x), v>``, which is ``H v``
    since the Hessian is symmetric. One forward pass records ``f``'s ops with their tangent rules' ops, and one
    reverse pass replays them (on arrays, unless a tape outside differentiates the result), whatever the size of
    ``x``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 1.0]))   # 6 x * v
    array([ 6., 12.])
    """
    xleaves, xspec = tree_flatten(x, "hvp: x")
    vleaves, vspec = tree_flatten(v, "hvp: v")
    if vspec != xspec or any(np.shape(a) != np.shape(b) for a, b in zip(xleaves, vleaves)):
        raise ValueError("hvp: v must have the structure and shapes of x")
    return grad(functools.partial(_slope, f, xspec, vleaves))(x)


def _slope(f, xspec, vleaves, x):
    """``f``'s derivative at ``x`` along ``v``: a scalar recorded on ``grad``'s tape with the tangent rules' ops.
    Faster than the tangent of ``grad f`` (forward over reverse), whose reverse pass would run every rule on
    tensors with tangents: here only the forward pass carries tangents, and the reverse pass is a plain one."""
    xs, _ = tree_flatten(x, "hvp: x")
    with level("hvp") as lv:
        for xi, vi in zip(xs, vleaves):  # grad's own tensors for this call: the tangent goes on them directly
            set_tangent(xi, lv, _tangent(vi, xi))
        out = f(tree_unflatten(xspec, xs))
        if not isinstance(out, (Tensor, numbers.Number, np.ndarray, np.generic)) or isinstance(out, bool):
            hint = " (did it forget to return?)" if out is None else ""
            raise TypeError(f"hvp: f must return a scalar tensor or number, got {type(out).__name__}{hint}")
        shape = tuple(out.shape) if isinstance(out, Tensor) else np.shape(out)
        if math.prod(shape) != 1:
            raise ValueError(
                f"hvp requires a scalar f (f returned shape {shape}); for a vector f, the derivative of its "
                "Jacobian along v is tg.jvp(tg.jacrev(f), (x,), (v,))[1]"
            )
        t = tangent_of(out, lv)
    return 0.0 if t is None else t  # None: f does not depend on x, its Hessian is zero


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


def _primal(leaf, what):
    """What ``f`` gets for one primal leaf in forward mode: a tensor of its own (its tangent is put on it), still
    connected to an outer tape or level that differentiates ``leaf``."""
    if isinstance(leaf, Tensor):
        if not is_floating(leaf._data):
            raise TypeError(f"{what}: cannot differentiate with respect to a tensor of dtype {leaf.dtype}; "
                            "pass floating-point data, e.g. x.astype(np.float64)")  # fmt: skip
        if leaf._node is not None or leaf.requires_grad or has_tangent(leaf):
            return functional_input(leaf)
        return leaf.detach()  # vmap's batched tensor stays batched
    data = np.asarray(leaf)
    return Tensor._wrap(data if data.dtype.kind in "fc" else data.astype(np.float64))


def _check_tangents(what, primals, tangents):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{what}: primals and tangents must be tuples of arguments, e.g. {what}(f, (x,), (t,))")
    pleaves, pspec = tree_flatten(tuple(primals), f"{what}: primals")
    tleaves, tspec = tree_flatten(tuple(tangents), f"{what}: tangents")
    if tspec != pspec or any(np.shape(a) != np.shape(b) for a, b in zip(pleaves, tleaves)):
        raise ValueError(
            f"{what}: tangents must have the structure and shapes of primals (shapes "
            f"{[np.shape(a) for a in pleaves]}), got shapes {[np.shape(b) for b in tleaves]}"
        )
    return pleaves, pspec, tleaves


def _forward(f, pleaves, pspec, tleaves, what):
    """``f`` on the primals with their tangents at a new level: ``(result, its leaves' tangents, spec)``."""
    with level(what) as lv:
        xs = [_primal(p, what) for p in pleaves]
        for x, t in zip(xs, tleaves):
            if t is not None:  # None: a zero tangent (jacfwd's other arguments)
                set_tangent(x, lv, _tangent(t, x))
        res = f(*tree_unflatten(pspec, xs))
        outs, ospec = tree_flatten(res, f"{what}: the output of f")
        touts = []
        for o in outs:
            t = tangent_of(o, lv)
            if t is None:
                d = o._data if isinstance(o, Tensor) else np.asarray(o)
                t = np.zeros(np.shape(d), dtype=d.dtype if is_floating(d) else np.float64)
            touts.append(t)
    return res, touts, ospec


def jvp(f: Callable, primals: Sequence, tangents: Sequence) -> tuple:
    """Forward mode: ``(f(*primals), J t)`` for tangents ``t`` with the structure of ``primals``.

    One forward pass, each op's tangent computed beside its value by the op's JVP rule (:mod:`tapegrad.forward`);
    nothing is recorded. Inside another transform (``grad`` of ``jvp``, ``jvp`` of ``jvp``) the tangents are
    themselves differentiable. Complex values follow tapegrad's convention (docs/guide/complex.md).

    >>> import numpy as np, tapegrad as tg
    >>> out, tangent = tg.jvp(lambda x: tg.sin(x) * 2.0, (np.array([0.0, np.pi]),), (np.array([1.0, 1.0]),))
    >>> tangent   # 2 cos(x) * t
    array([ 2., -2.])
    """
    pleaves, pspec, tleaves = _check_tangents("jvp", primals, tangents)
    res, touts, ospec = _forward(f, pleaves, pspec, tleaves, "jvp")
    recording = keeps_tensors()
    return finish(res, recording), finish(tree_unflatten(ospec, touts), recording)


def linearize(f: Callable, *primals) -> tuple:
    """``(f(*primals), f_jvp)``: ``f_jvp(*tangents)`` is ``J t`` at ``primals`` (JAX's ``linearize``).

    ``f_jvp`` runs forward mode at the primals again for each call (tapegrad keeps no linearized program), so
    it costs one :func:`jvp`; the value is computed once.

    >>> import numpy as np, tapegrad as tg
    >>> y, f_jvp = tg.linearize(tg.exp, np.array([0.0, 1.0]))
    >>> f_jvp(np.array([1.0, 1.0]))
    array([1.        , 2.71828183])
    """
    if not primals:
        raise TypeError("linearize: give the primals, e.g. linearize(f, x)")
    value = f(*[_primal(p, "linearize") if isinstance(p, Tensor) else p for p in primals])
    recording = keeps_tensors()

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: f_jvp takes {len(primals)} tangent(s), one per primal; got {len(tangents)}")
        return jvp(f, primals, tangents)[1]

    return finish(value, recording), f_jvp


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``f`` by forward mode (JAX's ``jacfwd``): ``vmap`` of :func:`jvp` over the basis of each
    argument's tangents, every column in one batched forward pass. Arrays of shape ``out.shape + arg.shape``.
    Traced by ``tg.compile`` it takes reverse mode's rows (the same Jacobian), as :func:`hessian` does.

    >>> import numpy as np, tapegrad as tg
    >>> tg.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    nums, many = parse_argnums(argnums, "jacfwd")
    by_rows = jacobian(f, argnums, has_aux, mode="rev")

    @functools.wraps(f)
    def jacfwd_f(*args, **kwargs):
        if tracer() is not None:
            # traced by tg.compile, the batched columns would be one step whose function keeps the arguments of
            # the trace (the primals are in its closure): reverse mode's rows, the same Jacobian, as hessian does
            return by_rows(*args, **kwargs)
        args = list(args)
        nums_ = check_argnums(nums, len(args), "jacfwd")
        specs, flat = [], []
        for i in nums_:
            leaves, spec = tree_flatten(args[i], f"jacfwd: argument {i}")
            specs.append((spec, len(leaves)))
            flat.extend(leaves)
        flat = [_primal_leaf(x) for x in flat]
        fspec = tree_flatten(tuple(flat), "jacfwd")[1]
        aux_box = []

        def g(*leaves):
            k = 0
            for i, (spec, n) in zip(nums_, specs):
                args[i] = tree_unflatten(spec, list(leaves[k : k + n]))
                k += n
            out, aux = split_aux(f(*args, **kwargs), has_aux, "jacfwd")
            aux_box[:] = [aux]
            return out

        recording = keeps_tensors()
        per_leaf, ospec = [], None
        for j, x in enumerate(flat):
            shape, dtype = np.shape(x), x.dtype
            n = math.prod(shape)

            def column(t, *primals, j=j):
                ts = [None] * len(flat)
                ts[j] = t
                _, touts, tspec = _forward(g, list(primals), fspec, ts, "jacfwd")
                return tree_unflatten(tspec, touts)

            # the primals are vmap's (shared) arguments, not column's closure: a tape or a tangent outside that
            # carries them differentiates through the columns (grad of jacfwd, jacfwd of jacfwd)
            axes = (0,) + (None,) * len(flat)
            if n:
                with identity_basis(n, dtype) as eye:  # matmul's batching rule knows it: A @ e_i is A's column i
                    cols = vmap(column, in_axes=axes, out_axes=-1, loop=True)(eye.reshape((n,) + shape), *flat)
            else:
                _, touts, tspec = _forward(g, flat, fspec, [None] * len(flat), "jacfwd")
                cols = tree_unflatten(tspec, touts)
            leaves, ospec = tree_flatten(cols, "jacfwd")
            per_leaf.append([
                reshape(c, c.shape[:-1] + shape) if isinstance(c, Tensor) else np.reshape(c, np.shape(c)[:-1] + shape)
                if n else np.zeros(np.shape(c) + shape, dtype=getattr(c, "dtype", None)) for c in leaves
            ])  # fmt: skip
        blocks = [per_argument(specs, [cols[i] for cols in per_leaf], many) for i in range(len(per_leaf[0]))]
        jac = finish(tree_unflatten(ospec, blocks), recording)
        return (jac, aux_out(aux_box[0], recording)) if has_aux else jac

    return jacfwd_f


def _primal_leaf(x):
    if isinstance(x, Tensor):
        return x
    x = np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(np.float64)


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
        return finish(per_argument(specs, flat, True), keeps_tensors())

    vjp_fn.release = t.release
    weakref.finalize(vjp_fn, t.release)
    recording = keeps_tensors()
    value = finish(out, recording)
    return (value, vjp_fn, aux_out(aux, recording)) if has_aux else (value, vjp_fn)
