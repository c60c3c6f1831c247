"""Determinants: ``det`` and ``slogdet``, with what their gradients are at singular matrices.

- ``det``'s gradient is the cofactor matrix ``C = adj(a)^T``, a polynomial in ``a`` that exists everywhere
  (``det(a) a^{-T}`` where ``a`` is invertible). The rule computes ``det(a) a^{-T}`` where LU finds every
  matrix of the batch invertible, and otherwise from the SVD ``a = U diag(s) V^H``:
  ``C = det(U) det(V^H) conj(U) diag(p) conj(V^H)`` with ``p_i`` the product of the other singular values (no
  division), stable at any rank. For ``[[1, 2], [2, 4]]`` that is ``[[4, -2], [-2, 1]]``, as JAX gives. A
  replay recorded for second derivatives computes the same through ops (the inverse only where a is well
  conditioned, see ``_inverse_or_none``), so the second derivative at a singular matrix goes through
  ``svd``'s rule: exact for a real matrix of rank n - 1, refused (naming ``det``) for a complex one or a rank
  below n - 1.
- ``slogdet``'s ``logabsdet`` is -inf at a singular matrix, where it has no derivative: the rule raises
  ``ValueError`` naming ``slogdet`` when the loss reads it (or, for complex ``a``, the phase ``sign``) of a
  singular matrix. A real ``sign`` is piecewise constant: gradient 0, at singular matrices too.

Both are holomorphic (``docs/guide/complex.md``): their rules are transposes, with no conjugation.
"""

import math
from collections import namedtuple

import numpy as np

from ..backend import all_finite, to_numpy
from ..backend import dask_array as dask
from ..registry import defop
from ._complex import finfo_eps, is_complex, like, real_if_complex
from ._matrix import mT, native
from ._rules import constants, data, in_rule, recorded
from .cumulative import _product_of_others
from .decompositions import svd
from .linalg import _inv_op, check_matrices

SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")


def _det(a, *, xp=np):
    return native(xp, xp.linalg.det(a))


def _slogdet(a, *, xp=np):
    sign, logabsdet = xp.linalg.slogdet(a)
    return native(xp, sign), native(xp, logabsdet)


def _singular_values(ns, a):
    svdvals = getattr(ns.linalg, "svdvals", None)  # the array API's name; NumPy's older spelling otherwise
    return native(ns, svdvals(a) if svdvals is not None else ns.linalg.svd(a, compute_uv=False))


def _inverse_or_none(ns, a, well_conditioned):
    """inv(a) when LU inverts every matrix of array ``a`` to finite numbers, else None (``ns``: its library).

    ``det(a) inv(a)`` is accurate at any condition (LU's tiny pivot cancels between the two), but its
    derivative is not: its terms grow as cond(a)^2 and cancel to a result of order cond(a), so a replay
    recorded for second derivatives takes the inverse only for ``well_conditioned`` matrices, cond(a) below
    1 / sqrt(eps) (a relative error below sqrt(eps) then)."""
    if well_conditioned:
        s = _singular_values(ns, a)
        if not bool(ns.all(s[..., -1] > s[..., 0] * math.sqrt(finfo_eps(a.dtype)))):
            return None
    try:
        inv = native(ns, ns.linalg.inv(a))
    except np.linalg.LinAlgError:
        return None
    return inv if all_finite(inv) else None


def _check_second_derivative(ns, a):
    """Refuse what ``svd``'s rule cannot differentiate in the cofactor matrix of a singular ``a`` (an array):
    the singular vectors of two or more zero singular values (rank n - 2 or less), whose cotangent there is 0
    while the cofactor's derivative is not, and the phase of a complex one's."""
    s = _singular_values(ns, a)
    zero = to_numpy(s <= s[..., :1] * math.sqrt(finfo_eps(a.dtype)))
    if is_complex(a) or np.any(zero.sum(axis=-1) > 1):
        raise ValueError(
            "det: second derivatives at a singular matrix go through its SVD, whose rule needs a real matrix of "
            f"rank n - 1 (this one is {'complex' if is_complex(a) else 'of rank n - 2 or less'}); the gradient "
            "itself, the cofactor matrix, is exact at any rank"
        )


def _cofactor(xp, a, det):
    """``adj(a)^T``: ``det(a) a^{-T}`` when every matrix is invertible, else from the SVD (module docstring)."""
    inv = _inverse_or_none(constants(xp, a), data(a), well_conditioned=recorded(xp))
    if inv is not None:
        if recorded(xp):  # through the op, so that second derivatives go through inv's rule
            inv = _inv_op(a)
        return xp.expand_dims(xp.expand_dims(det, -1), -1) * mT(xp, inv)
    if recorded(xp):
        _check_second_derivative(constants(xp, a), data(a))
        u, s, vh = svd(a, full_matrices=False)
        scale = _det_op(u) * _det_op(vh)
    else:
        u, s, vh = (native(xp, f) for f in xp.linalg.svd(a, full_matrices=False))
        scale = native(xp, xp.linalg.det(u)) * native(xp, xp.linalg.det(vh))
    if is_complex(u):
        u, vh = xp.conj(u), xp.conj(vh)
    others = _product_of_others(xp, s, (s.ndim - 1,))
    return xp.expand_dims(xp.expand_dims(scale, -1), -1) * xp.matmul(u * xp.expand_dims(others, -2), vh)


def _det_vjp(xp, g, ans, a):
    return like(xp, xp.expand_dims(xp.expand_dims(g, -1), -1) * _cofactor(xp, a, ans), a)


def _slogdet_vjp(xp, g, ans, a):
    # log det A = logabsdet + i theta is holomorphic with derivative A^{-T}; sign = e^{i theta}
    (sign, logabsdet), (gsign, glog) = ans, g
    phase = is_complex(sign) and gsign is not None  # a real sign is piecewise constant: no gradient
    if glog is None and not phase:
        return None
    glog = None if glog is None else real_if_complex(xp, glog)
    c = xp.imag(gsign * sign) * 1j if phase else None
    c = glog if c is None else (c if glog is None else glog + c)
    singular = np.real(to_numpy(data(logabsdet))) == -np.inf  # LU found a zero pivot
    if singular.any():
        # what the loss reads of a singular matrix: logabsdet, and for complex a the phase (sign is 0 there)
        read = np.zeros(singular.shape, bool) if glog is None else to_numpy(data(glog)) != 0
        if phase:
            read = read | (to_numpy(data(gsign)) != 0)
        if np.any(read[singular]):
            raise ValueError(
                "slogdet: the matrix is singular (det = 0, so logabsdet = -inf), where log|det| "
                f"{'and the phase of det have' if is_complex(sign) else 'has'} no derivative; differentiate det "
                "(its gradient at a singular matrix is the cofactor matrix), or keep the matrix invertible (add a "
                "multiple of the identity)"
            )
        # those matrices get gradient 0 (their cotangent is 0): invert the identity in their place
        ns = constants(xp, a)
        eye = ns.eye(a.shape[-1], dtype=data(a).dtype)
        a = xp.where(ns.asarray(np.expand_dims(singular, (-1, -2))), eye, a)
    return like(xp, xp.expand_dims(xp.expand_dims(c, -1), -1) * mT(xp, in_rule(xp, _inv_op)(a)), a)


# fmt: off
_det_op = defop("det", _det, _det_vjp, save="x ans", refuses={"dask": dask.LINALG}, jvp="transpose",
                batch="leading")
_slogdet_op = defop("slogdet", _slogdet, _slogdet_vjp, save="x ans", outputs=("sign", "logabsdet"),
                    refuses={"dask": dask.LINALG}, jvp="transpose", batch="leading")
# fmt: on


def det(a):
    """The determinant of each square matrix. Its gradient is the cofactor matrix, det(a) inv(a)^T where a is
    invertible, and from the SVD where it is not: exact at singular matrices too (this module's docstring).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.det(tg.Tensor([[2.0, 1.0], [1.0, 3.0]]))
    Tensor(5.)
    >>> tg.grad(la.det)(tg.Tensor([[1.0, 2.0], [2.0, 4.0]]))  # singular: the cofactor matrix
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    check_matrices(a, "det")
    return _det_op(a)


def slogdet(a):
    """(sign, logabsdet) of each square matrix, det = sign * exp(logabsdet), as NumPy's SlogdetResult. For a
    real a the sign is piecewise constant (gradient 0); for a complex a it is det / |det|, differentiable. At a
    singular matrix logabsdet is -inf and has no gradient: differentiating it there raises ValueError.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> sign, logdet = la.slogdet(tg.Tensor([[2.0, 0.0], [0.0, 3.0]]))
    >>> float(sign), round(float(logdet), 6)
    (1.0, 1.791759)
    """
    check_matrices(a, "slogdet")
    return SlogdetResult(*_slogdet_op(a))
