"""Helpers of the linear-algebra and FFT rules: which function a rule calls, matrix transposes, triangles.

A rule that needs another linear-algebra op (the rule of ``cholesky`` needs triangular solves) calls
:func:`tapegrad.ops._rules.in_rule`: on a plain replay that is the op's forward in the replay's array library
(NumPy speed), on a replay recorded for higher derivatives it is the differentiable op itself, so second
derivatives and Hessians go through its own rule. Everything else a rule calls goes through ``xp`` (matmul, where, tril, conj, ...).
"""

import functools

import numpy as np

from ._complex import is_complex


def is_numpy(xp) -> bool:
    """Whether ``xp`` computes with NumPy itself (NumPy's module, or the plain replay's namespace)."""
    return xp is np or getattr(xp, "name", None) == "numpy"


def native(xp, out):
    """A result of ``xp.linalg`` or ``xp.fft`` as an array of ``xp``'s library (a library with NumPy's API
    may hand back plain NumPy arrays from its submodules)."""
    return out if is_numpy(xp) else xp.asarray(out)


@functools.cache
def scipy_linalg():
    """``scipy.linalg`` when SciPy is installed, else None."""
    try:
        import scipy.linalg
    except ImportError:
        return None
    return scipy.linalg


def mT(xp, a):
    """Transpose of the last two axes."""
    return xp.swapaxes(a, -1, -2)


def mH(xp, a):
    """Conjugate transpose of the last two axes (the transpose for real arrays)."""
    return xp.swapaxes(xp.conj(a), -1, -2) if is_complex(a) else xp.swapaxes(a, -1, -2)


def diag_part(xp, a):
    """The diagonal of the last two axes as a matrix (zeros elsewhere)."""
    return xp.tril(xp.triu(a))


def diagonal(xp, a):
    """The diagonal of a square matrix (last two axes) as a vector."""
    return xp.sum(diag_part(xp, a), axis=-2)


def diag_embed(xp, v, n):
    """A vector of length ``n`` on the diagonal of an ``n x n`` matrix (batched)."""
    return diag_part(xp, xp.broadcast_to(xp.expand_dims(v, -2), tuple(v.shape[:-1]) + (n, n)))


def triangle_read(xp, G, lower):
    """The gradient for a function that reads only one triangle of a Hermitian input (eigh, cholesky), from
    ``G``, its gradient as a Hermitian matrix: twice the strict triangle plus the real diagonal."""
    strict = xp.tril(G, k=-1) if lower else xp.triu(G, k=1)
    d = diag_part(xp, G)
    return strict * 2 + (xp.real(d) if is_complex(d) else d)


def adjoint_form(rule):
    """A rule written in the adjoint (PyTorch's) convention, with conjugate transposes, as a rule of
    tapegrad's convention: conj(rule(conj(g))). Real arrays skip both conjugations. For an op with several
    outputs ``g`` is the tuple of their cotangents, each conjugated (None stays None)."""

    def vjp(xp, g, ans, *xs, **params):
        if g.__class__ is tuple:  # several outputs: a cotangent each (None for one nobody used), ans a tuple
            if any(is_complex(a) for a in (*g, *ans) if a is not None):
                g = tuple([None if gi is None else xp.conj(gi) for gi in g])
                out = rule(xp, g, ans, *xs, **params)
                return None if out is None else xp.conj(out)
            return rule(xp, g, ans, *xs, **params)
        if is_complex(g) or is_complex(ans):
            return xp.conj(rule(xp, xp.conj(g), ans, *xs, **params))
        return rule(xp, g, ans, *xs, **params)

    vjp.__name__ = rule.__name__
    return vjp


def last_axis(index, ndim, axis):
    """An index selecting ``index`` (a slice) along ``axis`` of an ``ndim``-d array."""
    return (slice(None),) * (axis % ndim) + (index, Ellipsis)
