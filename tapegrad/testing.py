"""Testing utilities: check gradients against central finite differences, the way tapegrad tests itself.

``gradcheck(fn, *inputs)`` compares reverse-mode vector-Jacobian products with central differences in
float64: the full Jacobian for small inputs and outputs, one random direction per input otherwise
(``<u, J^T v>`` against ``<v, J u>``). ``gradgradcheck`` does the same for the gradient itself, computed
through nested tapes, which checks second derivatives. Both take ``asarray=`` (e.g. ``cupy.asarray`` or
``array_api_strict.asarray``) to run ``fn`` on another array library: finite differences stay in NumPy float64
(complex128 for complex inputs), and only the inputs handed to ``fn`` and its results cross over.

Complex numbers are checked as pairs of reals, against tapegrad's convention (``docs/guide/complex.md``): a complex
input ``z = x + iy`` is perturbed in ``x`` and in ``y`` separately, and its gradient ``G`` must be
``dL/dx - i dL/dy``; a complex output ``w = a + ib`` is checked through ``a`` and ``b``, the real loss
``L = Re(sum(ct * w))`` of a cotangent ``ct = dL/da - i dL/db``. A real input's gradient must be real.
"""

from __future__ import annotations

import numpy as np

from ._scope import argnums_of, check_argnums, parse_argnums
from ._state import transform_argument
from ._tensor import Tensor
from .backend import to_numpy
from .errors import GradcheckError
from .ops import concatenate, real, reshape
from .ops._complex import is_complex
from .tape import record
from .transforms import jvp, vjp

__all__ = ["gradcheck", "gradgradcheck", "check_grads", "GradcheckError", "numerical_jacobian"]


def _as_inputs(inputs):
    arrays = []
    for x in inputs:
        a = to_numpy(x.numpy()) if isinstance(x, Tensor) else np.asarray(x)
        if a.dtype.kind not in "fc":
            a = a.astype(np.float64)
        # a private float64 (complex128) copy, perturbed in place
        arrays.append(np.array(a, dtype=np.complex128 if a.dtype.kind == "c" else np.float64))
    return arrays


def _coords(a):
    """The real coordinates of an array: itself, or (complex) its real and imaginary parts on a last axis, as
    a view, so that changing a coordinate changes the array."""
    if a.dtype.kind != "c":
        return a
    return np.ascontiguousarray(a).reshape(a.shape + (1,)).view(np.float64)


def _cotangent(v, is_complex):
    """The cotangent of a complex output whose real coordinates have the cotangent ``v`` (shape ``+ (2,)``)."""
    return v[..., 0] - 1j * v[..., 1] if is_complex else v


def _value(fn, arrays, asarray=None):
    # copies: an in-place update inside fn (x += 1 on a value not recorded) must not move the perturbed point
    out = fn(*[Tensor(a.copy() if asarray is None else asarray(a.copy())) for a in arrays])
    out = np.asarray(to_numpy(out.numpy()) if isinstance(out, Tensor) else out)
    return np.array(out, dtype=np.complex128 if out.dtype.kind == "c" else np.float64)


def numerical_jacobian(fn, arrays, i, eps, asarray=None):
    """d fn / d arrays[i] by central differences: shape ``out.shape + arrays[i].shape``, where a complex
    array counts as its real coordinates (a last axis of 2: real part, imaginary part)."""
    x = _coords(arrays[i])
    out0 = _coords(_value(fn, arrays, asarray))
    jac = np.zeros(out0.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        old = x[idx]
        x[idx] = old + eps
        hi = _coords(_value(fn, arrays, asarray))
        x[idx] = old - eps
        lo = _coords(_value(fn, arrays, asarray))
        x[idx] = old
        jac[(...,) + idx] = (hi - lo) / (2 * eps)
    return jac


def _reverse(fn, arrays, cotangent, asarray=None):
    """Derivatives of <cotangent, fn(x)> along every input's real coordinates, and the op names the tape
    recorded. ``cotangent`` is given on the output's real coordinates."""
    xs = [
        transform_argument(Tensor(a.copy() if asarray is None else asarray(a.copy()), requires_grad=True))
        for a in arrays
    ]
    with record(persistent=True) as t:
        out = fn(*xs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    ops = [e.op for e in t.entries]
    if out.requires_grad:
        ct = np.asarray(_cotangent(cotangent, is_complex(out)), dtype=_numpy_dtype(out.dtype))
        out.backward(ct if asarray is None else asarray(ct))
    t.release()
    grads = []
    for a, x in zip(arrays, xs):
        if x.grad is None:
            grads.append(np.zeros(_coords(a).shape))
            continue
        if x.grad.shape != x.shape:
            raise GradcheckError(f"gradient of shape {x.grad.shape} for an input of shape {x.shape}; ops: {ops}")
        g = np.asarray(to_numpy(x.grad))
        if a.dtype.kind == "c":  # G = dL/dx - i dL/dy: the derivatives along (x, y) are (Re G, -Im G)
            grads.append(np.stack([g.real, -g.imag], axis=-1).astype(np.float64))
        elif g.dtype.kind == "c":
            raise GradcheckError(f"a real input of shape {x.shape} got a complex gradient; ops: {ops}")
        else:
            grads.append(np.asarray(g, dtype=np.float64))
    return grads, ops


def _numpy_dtype(dtype):
    # the NumPy dtype of any library's dtype (the cotangent is made in NumPy, then handed over)
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(str(dtype).rsplit(".", 1)[-1])


def _fail(kind, i, index, analytic, numeric, ops, atol, rtol):
    return GradcheckError(
        f"gradcheck failed ({kind}) for input {i} at index {index}: analytic {analytic!r} vs numeric "
        f"{numeric!r} (atol={atol}, rtol={rtol}).\nOps on the tape, in order: {', '.join(ops) or '(none)'}"
    )


def gradcheck(
    fn,
    *inputs,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    seed: int = 0,
    full_jacobian_max: int = 256,
    asarray=None,
) -> bool:
    """Check ``fn``'s reverse-mode gradients against central finite differences, in float64.

    Inputs are arrays or tensors (converted to float64 copies). Returns True, or raises
    :class:`GradcheckError` naming the input, the worst element, analytic vs numeric value and the tape's ops.

    >>> import tapegrad as tg
    >>> tg.gradcheck(lambda x, y: (x * y).sum(axis=0), [[1.0, 2.0], [3.0, 4.0]], [0.5, -1.0])
    True
    """
    arrays = _as_inputs(inputs)
    rng = np.random.default_rng(seed)
    out0 = _coords(_value(fn, arrays, asarray))
    size_in = int(np.sum([_coords(a).size for a in arrays]))
    if out0.size * size_in <= full_jacobian_max:
        # Full Jacobian: one backward per output element, one pair of evaluations per input element.
        rows = []
        ops: list = []
        for k in range(max(out0.size, 1)):
            v = np.zeros(out0.size)
            if out0.size:
                v[k] = 1.0
            grads, ops = _reverse(fn, arrays, v.reshape(out0.shape), asarray)
            rows.append(grads)
        for i in range(len(arrays)):
            numeric = numerical_jacobian(fn, arrays, i, eps, asarray).reshape(out0.size, *_coords(arrays[i]).shape)
            analytic = np.stack([r[i] for r in rows]) if out0.size else numeric
            _compare("full Jacobian", i, analytic, numeric, ops, atol, rtol, out_shape=out0.shape)
        return True
    # One random cotangent v; per-element differences of <v, f> for small inputs, a direction u otherwise.
    v = rng.standard_normal(out0.shape)
    grads, ops = _reverse(fn, arrays, v, asarray)
    for i, array in enumerate(arrays):
        x = _coords(array)
        if x.size <= full_jacobian_max:
            numeric = np.zeros_like(x)
            for idx in np.ndindex(*x.shape):
                old = x[idx]
                x[idx] = old + eps
                hi = np.sum(v * _coords(_value(fn, arrays, asarray)))
                x[idx] = old - eps
                lo = np.sum(v * _coords(_value(fn, arrays, asarray)))
                x[idx] = old
                numeric[idx] = (hi - lo) / (2 * eps)
            _compare("vector-Jacobian product", i, grads[i], numeric, ops, atol, rtol)
        else:
            u = rng.standard_normal(x.shape)
            saved = x.copy()
            x += eps * u
            hi = _coords(_value(fn, arrays, asarray))
            x[...] = saved - eps * u
            lo = _coords(_value(fn, arrays, asarray))
            x[...] = saved
            numeric = np.sum(v * (hi - lo)) / (2 * eps)
            analytic = np.sum(u * grads[i])
            if not np.isclose(analytic, numeric, atol=atol * np.sqrt(x.size), rtol=rtol):
                raise _fail("random direction <u, J^T v> vs <v, J u>", i, "(all)", analytic, numeric, ops, atol, rtol)
    return True


def _compare(kind, i, analytic, numeric, ops, atol, rtol, out_shape=None):
    analytic = np.asarray(analytic, dtype=np.float64)
    bad = ~np.isclose(analytic, numeric, atol=atol, rtol=rtol)
    if bad.any():
        err = np.where(bad, np.abs(analytic - numeric), -1.0)
        worst = np.unravel_index(int(np.argmax(err)), err.shape)
        index = tuple(int(w) for w in worst)
        if out_shape is not None:  # a Jacobian row: name the input's element, then the output's
            out_index = tuple(int(w) for w in np.unravel_index(index[0], out_shape)) if out_shape else ()
            index = f"{index[1:]} (of the output's element {out_index})"
        raise _fail(kind, i, index, float(analytic[worst]), float(numeric[worst]), ops, atol, rtol)


def gradgradcheck(
    fn, *inputs, eps: float = 1e-6, atol: float = 1e-4, rtol: float = 1e-3, seed: int = 0, asarray=None
) -> bool:
    """Check second derivatives: the gradient of ``<v, fn(x)>``, computed on nested tapes, against finite
    differences of itself (so every rule's own rule is exercised).

    >>> import tapegrad as tg
    >>> tg.gradgradcheck(lambda x: (x ** 3).sum(), [1.0, 2.0])
    True
    """
    arrays = _as_inputs(inputs)
    out0 = _value(fn, arrays, asarray)
    v = _cotangent(np.random.default_rng(seed + 1).standard_normal(_coords(out0).shape), out0.dtype.kind == "c")

    def gradient_of(*xs):
        with record() as inner:
            for x in xs:
                inner.watch(x)
            out = fn(*xs)
            ct = np.asarray(v, dtype=_numpy_dtype(out.dtype))
            s = (out * (ct if asarray is None else asarray(ct))).sum()
            if is_complex(s):
                s = real(s)  # the real loss L = Re <v, fn(x)> of a complex output
        grads = inner.gradient(s, list(xs), unconnected="zero")  # real inputs get real gradients
        flat = [reshape(g if isinstance(g, Tensor) else Tensor(g), (-1,)) for g in grads]
        return concatenate(flat)

    return gradcheck(gradient_of, *arrays, eps=eps, atol=atol, rtol=rtol, seed=seed, asarray=asarray)


def check_grads(
    f,
    argnums=0,
    modes=("fwd", "rev"),
    order: int = 2,
    *,
    argnum=None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    seed: int = 0,
):
    """autograd's curried check, ``check_grads(f, modes=["fwd", "rev"], order=2)(*args)``: returns True or raises
    :class:`GradcheckError`.

    ``"rev"`` checks reverse mode (:func:`gradcheck`, VJPs against central differences) and ``"fwd"`` forward mode
    (``tg.jvp`` in a random direction against a central difference along it); ``order=2`` then checks the
    derivative of that VJP (or JVP) in both its arguments, and so on up to ``order``. ``argnums`` (or autograd's
    ``argnum``) picks the arguments checked; ``f`` returns an array or a tensor.

    >>> import numpy as np, tapegrad as tg
    >>> from tapegrad.testing import check_grads
    >>> check_grads(lambda x: tg.sin(x) * x, modes=["rev", "fwd"], order=2)(np.array([0.3, 1.2]))
    True
    """
    nums, _ = parse_argnums(argnums_of(argnums, argnum, "check_grads"), "check_grads")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes or any(m not in ("fwd", "rev") for m in modes):
        raise ValueError(f"check_grads: modes must name 'fwd' and/or 'rev', got {modes!r}")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be an int >= 1, got {order!r}")
    tol = {"eps": eps, "atol": atol, "rtol": rtol}

    def checker(*args, **kwargs):
        positions = check_argnums(nums, len(args), "check_grads")

        def chosen(*xs):
            full = list(args)
            for i, x in zip(positions, xs):
                full[i] = x
            return f(*full, **kwargs)

        _check(chosen, _as_inputs([args[i] for i in positions]), modes, order, np.random.default_rng(seed), tol)
        return True

    return checker


def _flat(out):
    """One tensor of every output's elements (a tuple of gradients, a tangent), for :func:`gradcheck`."""
    outs = out if isinstance(out, tuple) else (out,)
    return concatenate([reshape(o if isinstance(o, Tensor) else Tensor(np.asarray(o)), (-1,)) for o in outs])


def _check(f, xs, modes, order, rng, tol):
    if "rev" in modes:
        gradcheck(f, *xs, **tol, seed=int(rng.integers(2**31)))
    if "fwd" in modes:
        _check_jvp(f, xs, rng, tol)
    if order == 1:
        return
    out_shape = np.shape(_value(f, xs))
    if "rev" in modes:  # the VJP, in x and in its cotangent
        v = rng.standard_normal(out_shape)
        _check(lambda *a: _flat(vjp(f, *a[:-1])[1](a[-1])), [*xs, v], modes, order - 1, rng, tol)
    if "fwd" in modes:  # the JVP, in x and in its tangents
        us = [_direction(rng, x) for x in xs]
        n = len(xs)
        _check(lambda *a: _flat(jvp(f, a[:n], a[n:])[1]), [*xs, *us], modes, order - 1, rng, tol)


def _direction(rng, x):
    """A random tangent for ``x``: complex for a complex ``x``, so that forward mode is checked along both parts."""
    u = rng.standard_normal(x.shape)
    return u + 1j * rng.standard_normal(x.shape) if x.dtype.kind == "c" else u


def _check_jvp(f, xs, rng, tol):
    """``J u`` from ``tg.jvp`` against ``(f(x + eps u) - f(x - eps u)) / 2 eps`` in a random direction ``u``."""
    eps, atol, rtol = tol["eps"], tol["atol"], tol["rtol"]
    us = [_direction(rng, x) for x in xs]
    _, tangent = jvp(f, tuple(Tensor(x) for x in xs), tuple(us))
    tangent = np.asarray(tangent._data if isinstance(tangent, Tensor) else tangent)
    tangent = tangent.astype(np.complex128 if tangent.dtype.kind == "c" else np.float64)  # an imaginary part kept
    hi = _value(f, [x + eps * u for x, u in zip(xs, us)])
    lo = _value(f, [x - eps * u for x, u in zip(xs, us)])
    numeric = (hi - lo) / (2 * eps)
    bad = ~np.isclose(tangent, numeric, atol=atol, rtol=rtol)
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, np.abs(tangent - numeric), -1.0))), bad.shape)
        raise GradcheckError(
            f"check_grads failed (forward mode, tg.jvp in a random direction) at output index "
            f"{tuple(int(w) for w in worst)}: analytic {tangent[worst].item()!r} vs numeric "
            f"{numeric[worst].item()!r} (atol={atol}, rtol={rtol})"
        )
