"""NumPy's polynomial functions on tensors, composed of tapegrad's ops: ``polyval`` (Horner's scheme),
``polyadd``, ``polysub``, ``polymul`` (a convolution), ``polydiv`` (long division), ``polyder``, ``polyint``,
``poly``, ``roots`` (the eigenvalues of the companion matrix), ``polyfit`` (least squares) and ``vander``.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> tg.grad(lambda c: np.polyval(c, 2.0))(np.array([1.0, 0.0, 0.0]))   # d/dc of c0 x^2 + c1 x + c2
array([4., 2., 1.])
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from ..linalg import eigvals, lstsq
from ._calculus import data, shape
from ._signatures import unsupported


def vander(x, N=None, increasing=False):
    """NumPy's ``np.vander`` on tensors: the powers of ``x`` as columns (running products, exact at 0)."""
    if len(shape(x)) != 1:
        raise ValueError("np.vander: x must be a one-dimensional array or sequence")
    n = shape(x)[0]
    N = n if N is None else N
    if N == 0:
        return ops.zeros_like(np.zeros((n, 0)))
    column = ops.reshape(x, (n, 1))
    ones = np.ones((n, 1), dtype=np.result_type(data(x).dtype, np.int8))
    parts = [ones] + ([ops.broadcast_to(column, (n, N - 1))] if N > 1 else [])
    powers = ops.cumprod(ops.concatenate(parts, axis=1), axis=1)
    return powers if increasing else ops.flip(powers, axis=1)


def polyval(p, x):
    """NumPy's ``np.polyval`` on tensors: Horner's scheme."""
    y = ops.zeros_like(x)
    for i in range(shape(p)[0]):
        y = ops.add(ops.multiply(y, x), ops.getitem(p, index=i))
    return y


def _front_padded(a, n):
    return ops.concatenate([np.zeros(n - shape(a)[0], dtype=data(a).dtype), a]) if shape(a)[0] < n else a


def polyadd(a1, a2):
    """NumPy's ``np.polyadd`` on tensors."""
    a1, a2 = ops.atleast_1d(a1), ops.atleast_1d(a2)
    n = max(shape(a1)[0], shape(a2)[0])
    return ops.add(_front_padded(a1, n), _front_padded(a2, n))


def polysub(a1, a2):
    """NumPy's ``np.polysub`` on tensors."""
    a1, a2 = ops.atleast_1d(a1), ops.atleast_1d(a2)
    n = max(shape(a1)[0], shape(a2)[0])
    return ops.subtract(_front_padded(a1, n), _front_padded(a2, n))


def polymul(a1, a2):
    """NumPy's ``np.polymul`` on tensors: a convolution of the coefficients."""
    return ops.convolve(ops.atleast_1d(a1), ops.atleast_1d(a2))


def polyder(p, m=1):
    """NumPy's ``np.polyder`` on tensors."""
    if m < 0:
        raise ValueError("np.polyder: order of derivative must be positive (see polyint)")
    for _ in range(m):
        n = shape(p)[0] - 1
        p = ops.multiply(ops.getitem(p, index=slice(0, n)), np.arange(n, 0, -1, dtype=float))
    return p


def polyint(p, m=1, k=None):
    """NumPy's ``np.polyint`` on tensors; the integration constants ``k`` may be tensors."""
    if m < 0:
        raise ValueError("np.polyint: order of integral must be positive (see polyder)")
    k = [0.0] * m if k is None else (list(k) if isinstance(k, (list, tuple)) or len(shape(k)) else [k] * m)
    if len(k) != m:
        raise ValueError("np.polyint: k must be a scalar or a sequence of length m")
    for i in range(m):
        n = shape(p)[0]
        p = ops.concatenate([ops.divide(p, np.arange(n, 0, -1, dtype=float)), ops.reshape(k[i], (1,))])
    return p


def poly(seq_of_zeros):
    """NumPy's ``np.poly`` on tensors, of a 1-D sequence of roots (of a square matrix: its eigenvalues')."""
    roots = seq_of_zeros
    if len(shape(roots)) == 2 and shape(roots)[0] == shape(roots)[1] and shape(roots)[0] > 0:
        roots = eigvals(roots)
    elif len(shape(roots)) != 1:
        raise ValueError("np.poly: input must be 1d or non-empty square 2d array.")
    coefficients = np.ones(1)
    for i in range(shape(roots)[0]):
        coefficients = ops.convolve(coefficients, ops.stack([1.0, ops.negative(ops.getitem(roots, index=i))]))
    return coefficients


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's ``np.polyfit`` on tensors: least squares on the scaled Vandermonde matrix (tapegrad.linalg's
    ``lstsq``), differentiable in ``x``, ``y`` and ``w``."""
    if full or cov:
        raise unsupported(
            "polyfit",
            "full=True or cov=True",
            "only the coefficients are returned",
            "Compute the residuals from np.polyval",
        )
    lhs = vander(x, deg + 1)
    rhs = y
    if w is not None:
        lhs = ops.multiply(lhs, ops.reshape(w, (-1, 1)))
        rhs = ops.multiply(rhs, w if len(shape(y)) == 1 else ops.reshape(w, (-1, 1)))
    if rcond is None:
        rcond = shape(lhs)[0] * np.finfo(float).eps
    scale = ops.sqrt(ops.sum(ops.multiply(lhs, lhs), axis=0))
    c = lstsq(ops.divide(lhs, scale), rhs, rcond)[0]
    return ops.divide(c, scale) if len(shape(c)) == 1 else ops.divide(c, ops.reshape(scale, (-1, 1)))


def polydiv(u, v):
    """NumPy's ``np.polydiv`` on tensors: the quotient and remainder of long division (NumPy's algorithm)."""
    u, v = ops.atleast_1d(u), ops.atleast_1d(v)
    m, n = shape(u)[0] - 1, shape(v)[0] - 1
    if n < 0 or m < 0:
        raise ValueError("np.polydiv: the polynomials must have at least one coefficient")
    scale = ops.divide(1.0, ops.getitem(v, index=0))
    r, q = u, []
    for k in range(m - n + 1):
        d = ops.multiply(scale, ops.getitem(r, index=k))
        q.append(d)
        r = ops.subtract(r, ops.pad(ops.multiply(d, v), (k, m - n - k)))
    q = ops.stack(q) if q else ops.zeros_like(np.zeros(1))
    kept = data(r)
    start = 0
    while start < len(kept) - 1 and np.allclose(kept[start], 0, rtol=1e-14):
        start += 1
    return q, ops.getitem(r, index=slice(start, None))


def roots(p):
    """NumPy's ``np.roots`` on tensors: the eigenvalues of the companion matrix (tapegrad.linalg's ``eigvals``:
    distinct roots); the zeros NumPy strips are read from the values."""
    p = ops.atleast_1d(p)
    nonzero = np.flatnonzero(data(p))
    if nonzero.size == 0:
        return np.array([])
    trailing = shape(p)[0] - nonzero[-1] - 1
    p = ops.getitem(p, index=slice(int(nonzero[0]), int(nonzero[-1]) + 1))
    n = shape(p)[0]
    if n < 2:
        found = np.zeros(0)
    else:
        top = ops.reshape(
            ops.negative(ops.divide(ops.getitem(p, index=slice(1, None)), ops.getitem(p, index=0))), (1, -1)
        )
        companion = ops.concatenate([top, np.eye(n - 2, n - 1)], axis=0) if n > 2 else top
        found = eigvals(companion)
        if not np.any(np.imag(data(found))):  # real roots come back real, as NumPy's eigvals gives them
            found = ops.real(found)
    return ops.concatenate([found, np.zeros(trailing, dtype=data(found).dtype)]) if trailing else found
