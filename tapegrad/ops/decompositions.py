"""Matrix decompositions: eigh, eig, svd, qr and lu, each one op with several outputs (its factors).

Each op declares its outputs in its row (``outputs=("w", "v")``): its forward returns the factors, the op a
tuple of tensors, and the tape records one entry whose rule gets every factor's cotangent at once (None for a
factor nobody used: the values alone, as ``eigvalsh`` and ``svdvals`` read them, take a shorter rule). The
rules are written in PyTorch's adjoint convention, with conjugate transposes, and conjugated into tapegrad's
(``adjoint_form``).

Where the derivative does not exist
-----------------------------------
- **Repeated eigenvalues or singular values** (within sqrt(eps) of the largest: closer, a rule dividing by
  their gap loses more than half its digits). What holds, exactly:

  - A loss of the values alone gets its exact gradient where it is symmetric in the repeated ones (their
    sum, any spectral function: eigvalsh, svdvals, norms). One that tells them apart (the largest eigenvalue
    at a tie) has no derivative there; its cotangent is averaged over each group of repeated values, so the
    gradient is the one that does not depend on the arbitrary basis, as tied maxima share theirs evenly.
  - The vectors of values that are not repeated are exact.
  - A loss that reads the vectors of a repeated value raises ``ValueError`` naming the op. Where turning the
    basis of their space changes the loss, its gradient does not exist. Where it does not (a projector
    V V^H, a reconstruction V diag(w) V^H or U diag(s) V^H), the gradient exists but is not a function of
    what the rule receives: the rule's terms for the pair are c_ij (w_j - w_i) / (w_j - w_i) with the
    numerator 0 at the point, and the limit c_ij depends on how the loss's cotangent changes as the values
    split (a second derivative of the loss), which a vector-Jacobian rule does not see. At the identity,
    sum(W * V diag(w) V^H) and sum(W * V diag(w)^2 V^H) give eigh the same cotangents when W's diagonal is 0
    (gw = 0, gV = 2 W V), and their gradients are W and 2 W: no rule returns both, so tapegrad refuses
    rather than pick one (PyTorch 2.13 returns NaN at the identity, and at a rotated repeated pair divides
    rounding by rounding). Values further apart than the tolerance are distinct, and the rule's answer is
    exact to about eps / gap (relative).

  One case is left that no rule can see: a loss whose cotangent on the vectors happens to be exactly 0 at
  the point while its gradient through them is not (V diag(w^2 - w) V^H at the identity) gets the gradient
  of its values alone.
- **Phases.** Complex eigenvectors and singular vectors are defined up to a phase each (real ones up to a
  sign); a loss that depends on the phase raises the same way. Test gauge-invariant functions (|V|^2, V V^H,
  U diag(s) V^H), as JAX and autograd do.
- **The extra columns** of ``svd(full_matrices=True)`` (U's beyond min(m, n)) and of ``qr(mode="complete")``
  with more rows than columns are an arbitrary basis of a complement: a nonzero cotangent there raises.
- **Rank.** svd's vectors of a rectangular (or complex) matrix need nonzero singular values; qr needs full rank
  (a zero on R's diagonal raises). Zero means within sqrt(eps) of the largest, as for repeated values.
- **Defective matrices.** eig's rule solves with the eigenvectors; where two of a repeated eigenvalue are
  parallel (a Jordan block) it raises, unless the loss reads the eigenvalues alone and all alike (the trace).
"""

import math
from collections import namedtuple

import numpy as np

from ..backend import dask_array as dask
from ..backend import to_numpy
from ..registry import defop
from ._complex import complex_dtype, data_of, finfo_eps, is_complex, like, real_if_complex
from ._matrix import adjoint_form, diag_embed, diag_part, diagonal, mH, native, triangle_read
from ._rules import constants, in_rule
from .linalg import _solve_op, _solve_triangular_op, check_matrices

EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
EigResult = namedtuple("EigResult", "eigenvalues eigenvectors")
SVDResult = namedtuple("SVDResult", "U S Vh")
QRResult = namedtuple("QRResult", "Q R")


# -- forwards ---------------------------------------------------------------------------------------------
def _eigh(a, UPLO="L", *, xp=np):
    if UPLO == "L":
        w, v = xp.linalg.eigh(a)
    else:
        try:
            w, v = xp.linalg.eigh(a, UPLO=UPLO)
        except TypeError:  # the array API reads the lower triangle: that of a^H is the upper one of a
            w, v = xp.linalg.eigh(xp.conj(xp.swapaxes(a, -1, -2)))
    return native(xp, w), native(xp, v)


def _eig(a, *, xp=np):
    w, v = xp.linalg.eig(a)
    c = complex_dtype(xp, a.dtype)  # always complex, as JAX and PyTorch (NumPy: real when all eigenvalues are)
    return xp.astype(native(xp, w), c), xp.astype(native(xp, v), c)


def _svd(a, full_matrices=False, *, xp=np):
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return native(xp, u), native(xp, s), native(xp, vh)


def _qr(a, complete=False, *, xp=np):
    q, r = xp.linalg.qr(a, mode="complete" if complete else "reduced")
    return native(xp, q), native(xp, r)


def _lu(a):
    """P, L, U with a = P @ L @ U (SciPy's ``scipy.linalg.lu``): Gaussian elimination with partial pivoting on
    each square matrix of ``a``, batched (one vectorized step per column); NumPy arrays only."""
    if a.__class__ is not np.ndarray:
        raise NotImplementedError(
            f"lu: computed with NumPy, not on {type(a).__module__}.{type(a).__name__} arrays; convert the matrix to "
            "a NumPy array first (tg.Tensor(np.asarray(...)))"
        )
    u = np.array(a, dtype=np.result_type(a.dtype, np.float64) if a.dtype.kind in "biu" else a.dtype, copy=True)
    *batch, n, _ = u.shape
    lower = np.zeros_like(u)
    perm = np.broadcast_to(np.arange(n), (*batch, n)).copy()
    flat_u, flat_l, flat_p = u.reshape(-1, n, n), lower.reshape(-1, n, n), perm.reshape(-1, n)
    every = np.arange(flat_u.shape[0])
    for k in range(n):
        pivot = k + np.argmax(np.abs(flat_u[:, k:, k]), axis=-1)  # the largest entry of the column below k
        for m in (flat_u, flat_l, flat_p):
            m[every, k], m[every, pivot] = m[every, pivot].copy(), m[every, k].copy()
        head = flat_u[:, k, k]
        safe = np.where(head == 0, 1, head)
        factors = np.where((head == 0)[:, None], 0, flat_u[:, k + 1 :, k] / safe[:, None])
        flat_l[:, k + 1 :, k] = factors
        flat_u[:, k + 1 :, :] -= factors[:, :, None] * flat_u[:, k, None, :]
    flat_l[:, np.arange(n), np.arange(n)] = 1
    p = np.zeros_like(flat_u, dtype=flat_u.real.dtype)
    p[every[:, None], flat_p, np.arange(n)] = 1  # P[perm[j], j] = 1: row j of P^T a is row perm[j] of a
    shape = u.shape
    return p.reshape(shape), flat_l.reshape(shape), np.triu(flat_u.reshape(shape))


# -- checks where the derivative does not exist -------------------------------------------------------------
_UNDETERMINED = (
    "even for a loss that does not depend on the choice of basis in their space (a projector, a reconstruction "
    "such as V diag(w) V^H), the gradient at a repeated value depends on how the vectors' cotangent changes as "
    "the values split, which a rule does not see (at the identity, V diag(w) V^H and V diag(w)^2 V^H give the "
    "vectors the same cotangent and have different gradients)"
)


def _check_degenerate(op, degenerate, coupling, gauge, what):
    """Raise where a degenerate pair (off the diagonal) meets a nonzero ``coupling``: the cotangent of its
    vectors, given as one or more matrices (V^H gV for eigh and eig, J and K for svd). Where ``gauge`` (the
    part that turns the pair's basis, None for eig, whose bases are not unitary) is nonzero the loss depends on
    the basis; elsewhere it reads the vectors of a repeated value, whose gradient the cotangent does not
    determine (the module docstring)."""
    degenerate = to_numpy(data_of(degenerate))
    degenerate = degenerate & ~np.eye(degenerate.shape[-1], dtype=bool)
    if not degenerate.any():
        return
    coupling = [np.abs(to_numpy(data_of(c))) for c in coupling]
    size = max(np.max(c, initial=0.0) for c in coupling)
    tol = np.sqrt(finfo_eps(coupling[0].dtype)) * size
    if not size or not any(np.any(c[degenerate] > tol) for c in coupling):
        return
    if gauge is not None and np.any(np.abs(to_numpy(data_of(gauge)))[degenerate] > tol):
        raise ValueError(
            f"{op}: the matrix has repeated {what}, and the loss depends on the choice of basis in their space "
            "(turning the basis changes it), so its gradient does not exist there. Differentiate the values "
            f"alone ({'eigvalsh' if op == 'eigh' else 'svdvals' if op == 'svd' else 'eigvals'}), a function of the "
            "matrix computed without its vectors, or move the values apart"
        )
    raise ValueError(
        f"{op}: the matrix has repeated {what}, and the loss reads their vectors, so its gradient is not "
        f"determined here: {_UNDETERMINED}. Differentiate the values alone, a function of the matrix computed "
        "without its vectors (the matrix itself, expm, logm), or move the values apart"
    )


def _check_phase(op, im, scale):
    im, scale = to_numpy(data_of(im)), to_numpy(data_of(scale))
    size = np.max(np.abs(scale), initial=0.0)
    if size and np.any(np.abs(im) > np.sqrt(finfo_eps(im.dtype)) * size):
        raise ValueError(
            f"{op}: the loss depends on the phase of the complex vectors, which is arbitrary (each is "
            "defined up to a factor e^(i phi)), so its gradient does not exist; differentiate a function "
            "that does not depend on it, such as |V|^2 or V V^H"
        )


def _gap_mask(xp, values, gap):
    """Pairs whose gap is within sqrt(eps) of the largest value (the diagonal included), and that tolerance: a
    rule dividing by a smaller gap would lose more than half its digits, and values computed for a matrix with
    a repeated one differ by rounding, which a tolerance of n eps can miss."""
    top = xp.max(xp.absolute(values), axis=-1, keepdims=True)
    tol = xp.expand_dims(top, -1) * math.sqrt(finfo_eps(values.dtype))
    return xp.absolute(gap) <= tol, tol


def _shared(xp, g, degenerate):
    """The values' cotangent ``g`` averaged over each group of repeated values: a loss of the values alone
    that tells repeated ones apart (the largest eigenvalue at a tie) has no derivative there, and its
    gradient is then the one that does not depend on the arbitrary basis, as tied maxima share theirs
    evenly; a loss symmetric in them (their sum, any spectral function) has them equal already."""
    shares = xp.where(degenerate, xp.expand_dims(g, -2), 0)
    return xp.sum(shares, axis=-1) / xp.sum(xp.astype(degenerate, g.dtype), axis=-1)


def _divide_off_degenerate(xp, numerator, gap, degenerate):
    return xp.where(degenerate, 0, numerator / xp.where(degenerate, 1, gap))


# -- rules (adjoint convention, see the module docstring) ------------------------------------------------
@adjoint_form
def _eigh_vjp(xp, g, ans, a, UPLO="L"):
    (w, v), (gw, gv) = ans, g
    n = w.shape[-1]
    w = real_if_complex(xp, w)
    gap = xp.expand_dims(w, -2) - xp.expand_dims(w, -1)  # w_j - w_i
    degenerate, _ = _gap_mask(xp, w, gap)
    inner = None if gw is None else diag_embed(xp, _shared(xp, real_if_complex(xp, gw), degenerate), n)
    if gv is not None:  # the values alone (eigvalsh) need no more than V diag(gw) V^H
        vhgv = xp.matmul(mH(xp, v), gv)
        skew = (vhgv - mH(xp, vhgv)) * 0.5
        _check_degenerate("eigh", degenerate, [vhgv], skew, "eigenvalues")
        if is_complex(v):
            _check_phase("eigh", xp.imag(diagonal(xp, vhgv)), vhgv)
        off = _divide_off_degenerate(xp, skew, gap, degenerate)
        inner = off if inner is None else off + inner
    G = xp.matmul(xp.matmul(v, inner), mH(xp, v))
    return like(xp, triangle_read(xp, G, lower=UPLO == "L"), a)


def _zero_if_none(xp, g, of):
    """The cotangent ``g`` of output ``of``, zeros where nobody used it (for rules that read it anyway)."""
    if g is not None:
        return g
    return constants(xp, of).zeros(tuple(of.shape), dtype=data_of(of).dtype)


@adjoint_form
def _eig_vjp(xp, g, ans, a):
    solve = in_rule(xp, _solve_op)
    w, v = ans
    n = w.shape[-1]
    gw, gv = _zero_if_none(xp, g[0], w), _zero_if_none(xp, g[1], v)
    vh = mH(xp, v)
    vhgv = xp.matmul(vh, gv)
    d = xp.real(diagonal(xp, vhgv))
    # the eigenvectors have unit norm: project the cotangent onto that constraint first
    r = vhgv - xp.matmul(vh, v) * xp.expand_dims(d, -2)
    wc = xp.conj(w)
    gap = xp.expand_dims(wc, -2) - xp.expand_dims(wc, -1)
    degenerate, _ = _gap_mask(xp, w, gap)
    inner = _divide_off_degenerate(xp, r, gap, degenerate) + diag_embed(xp, _shared(xp, gw, degenerate), n)
    if _defective(xp, v, degenerate):
        # V is singular, so V^{-H} inner V^H is out of reach; it is inner itself where inner is a multiple of
        # the identity and the loss reads no eigenvector (the eigenvalues alone, all alike: the trace)
        if np.any(to_numpy(data_of(gv)) != 0) or not _scalar_matrix(inner):
            raise ValueError(
                "eig: the matrix is defective (a repeated eigenvalue has fewer independent eigenvectors than its "
                "multiplicity, as in a Jordan block), where its eigenvalues and eigenvectors have no derivative "
                "(they move as a root of the perturbation); differentiate a function of the matrix itself (its "
                "trace, det, powers), or move the eigenvalues apart"
            )
        return like(xp, inner, a)
    _check_degenerate("eig", degenerate, [r], None, "eigenvalues")
    _check_phase("eig", xp.imag(diagonal(xp, vhgv)), vhgv)
    return like(xp, solve(vh, xp.matmul(inner, vh)), a)


def _defective(xp, v, degenerate) -> bool:
    """Whether two eigenvectors (unit columns of ``v``) of a repeated eigenvalue are parallel to rounding."""
    cos = np.abs(to_numpy(data_of(xp.matmul(mH(xp, v), v))))
    pairs = to_numpy(data_of(degenerate)) & ~np.eye(cos.shape[-1], dtype=bool)
    return bool(np.any(cos[pairs] > 1 - math.sqrt(finfo_eps(cos.dtype))))


def _scalar_matrix(m) -> bool:
    """Whether each matrix of ``m`` is c I (to rounding: averaged cotangents differ in their last bits)."""
    m = to_numpy(data_of(m))
    off = m - np.diagonal(m, axis1=-2, axis2=-1)[..., :1, None] * np.eye(m.shape[-1])
    return bool(np.all(np.abs(off) <= m.shape[-1] * finfo_eps(m.dtype) * np.max(np.abs(m), initial=0.0)))


def _leftover(op, g, what, instead=None):
    if np.any(to_numpy(data_of(g)) != 0):
        instead = instead or f"use the reduced factors ({'full_matrices=False' if op == 'svd' else 'mode=reduced'})"
        raise ValueError(f"{op}: the loss depends on {what}, so its gradient does not exist; {instead}")


@adjoint_form
def _svd_vjp(xp, g, ans, a, full_matrices=False):
    m, n = a.shape[-2:]
    k = min(m, n)
    u, s, vh = ans
    s = real_if_complex(xp, s)
    if g[0] is None and g[2] is None:  # the values alone (svdvals): U diag(gs) V^H
        return like(xp, _svd_values(xp, u[..., :, :k], s, vh[..., :k, :], real_if_complex(xp, g[1])), a)
    gu, gs, gvh = (_zero_if_none(xp, gi, x) for gi, x in zip(g, ans))
    gs = real_if_complex(xp, gs)
    if full_matrices:
        if m > k:
            _leftover("svd", gu[..., :, k:], "the columns of U beyond min(m, n), an arbitrary basis of a complement")
            u, gu = u[..., :, :k], gu[..., :, :k]
        if n > k:
            _leftover("svd", gvh[..., k:, :], "the rows of Vh beyond min(m, n), an arbitrary basis of a complement")
            vh, gvh = vh[..., :k, :], gvh[..., :k, :]
    v, gv = mH(xp, vh), mH(xp, gvh)
    J, K = xp.matmul(mH(xp, u), gu), xp.matmul(vh, gv)
    sj, si = xp.expand_dims(s, -2), xp.expand_dims(s, -1)
    gap = sj * sj - si * si
    degenerate, _ = _gap_mask(xp, s * s, gap)
    numerator = (J - mH(xp, J)) * sj + (K - mH(xp, K)) * si
    _check_degenerate("svd", degenerate, [J, K], (J - mH(xp, J)) + (K - mH(xp, K)), "singular values")
    # zero to within the tolerance of a repeated value: a rank below min(m, n), where 1 / s is meaningless
    zero = s <= xp.max(s, axis=-1, keepdims=True) * math.sqrt(finfo_eps(s.dtype))
    if (m != n or is_complex(u)) and np.any(to_numpy(data_of(zero))):
        _leftover(
            "svd",
            xp.where(xp.expand_dims(zero, -2), xp.concatenate([gu, mH(xp, gvh)], axis=-2), 0),
            "the singular vectors of a rank-deficient matrix, which are arbitrary where the singular value is 0",
            "differentiate the singular values, or a matrix of full rank",
        )
    sinv = xp.where(zero, 0, 1 / xp.where(zero, 1, s))
    diag = _shared(xp, gs, degenerate)
    if is_complex(u):
        _check_phase("svd", xp.imag(diagonal(xp, J)) + xp.imag(diagonal(xp, K)), J)
        diag = diag + 1j * xp.imag(diagonal(xp, J)) * sinv
    inner = _divide_off_degenerate(xp, numerator, gap, degenerate) + diag_embed(xp, diag, k)
    ga = xp.matmul(xp.matmul(u, inner), vh)
    if m > k:  # (I - U U^H) gU S^{-1} V^H
        ga = ga + xp.matmul((gu - xp.matmul(u, J)) * xp.expand_dims(sinv, -2), vh)
    if n > k:  # U S^{-1} gV^H (I - V V^H)
        gvh_ = mH(xp, gv)
        ga = ga + xp.matmul(u, xp.expand_dims(sinv, -1) * (gvh_ - xp.matmul(xp.matmul(gvh_, v), vh)))
    return like(xp, ga, a)


def _svd_values(xp, u, s, vh, gs):
    degenerate, _ = _gap_mask(xp, s * s, xp.expand_dims(s * s, -2) - xp.expand_dims(s * s, -1))
    return xp.matmul(u * xp.expand_dims(_shared(xp, gs, degenerate), -2), vh)


def _check_rank(r, gq, gr):
    """Raise where R's leading square block has a diagonal entry at 0 (to sqrt(eps) of the largest) and the
    loss reads Q or R: the rule solves with that block, and past the rank Q's columns are arbitrary."""
    d = np.abs(np.diagonal(to_numpy(data_of(r)), axis1=-2, axis2=-1))
    if not np.any(d <= d.max(axis=-1, keepdims=True, initial=0.0) * math.sqrt(finfo_eps(d.dtype))):
        return
    if np.any(to_numpy(data_of(gq)) != 0) or np.any(to_numpy(data_of(gr)) != 0):
        raise ValueError(
            "qr: the matrix has rank below min(m, n) (R has a 0 on its diagonal, to rounding), where Q and R have "
            "no derivative (Q's columns past the rank are an arbitrary basis); differentiate a function of a "
            "matrix of full rank, or use svd or pinv"
        )


def _qr_tall(xp, st, q, r, gq, gr):
    # gA = (gQ + Q copyltu(M)) R^{-H}, M = gR R^H - Q^H gQ (m >= n; J. Townsend's derivation)
    M = xp.matmul(gr, mH(xp, r)) - xp.matmul(mH(xp, q), gq)
    upper = xp.triu(M, k=1)
    d = diag_part(xp, M)
    W = gq + xp.matmul(q, upper + mH(xp, upper) + (xp.real(d) if is_complex(d) else d))
    return mH(xp, st(r, mH(xp, W), lower=False))


@adjoint_form
def _qr_vjp(xp, g, ans, a, complete=False):
    st = in_rule(xp, _solve_triangular_op)
    m, n = a.shape[-2:]
    q, r = ans
    gq, gr = _zero_if_none(xp, g[0], q), _zero_if_none(xp, g[1], r)
    if complete and m > n:
        _leftover("qr", gq[..., :, n:], "the columns of Q beyond n, an arbitrary basis of a complement")
        q, gq, r, gr = q[..., :, :n], gq[..., :, :n], r[..., :n, :], gr[..., :n, :]
    _check_rank(r, gq, gr)
    if m >= n:
        return like(xp, _qr_tall(xp, st, q, r, gq, gr), a)
    # wide: a = [X | Y] with X = Q B square and Y = Q D, D = Q^H Y
    b, dd = r[..., :, :m], r[..., :, m:]
    gb, gd = gr[..., :, :m], gr[..., :, m:]
    y = xp.matmul(q, dd)
    gx = _qr_tall(xp, st, q, b, gq + xp.matmul(y, mH(xp, gd)), gb)
    return like(xp, xp.concatenate([gx, xp.matmul(q, gd)], axis=-1), a)


@adjoint_form
def _lu_vjp(xp, g, ans, a):
    # a = P L U; with X = L^{-1} P^T dA U^{-1}: dL = L tril(X, -1), dU = triu(X) U, so
    # gA = P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H} (P is piecewise constant: its cotangent is dropped)
    st = in_rule(xp, _solve_triangular_op)
    p, lower, upper = ans
    _, gl, gu = g
    if gl is None and gu is None:
        return None
    _check_lu_rank(upper)
    if gl is None:
        inner = xp.triu(xp.matmul(gu, mH(xp, upper)))
    elif gu is None:
        inner = xp.tril(xp.matmul(mH(xp, lower), gl), k=-1)
    else:
        inner = xp.tril(xp.matmul(mH(xp, lower), gl), k=-1) + xp.triu(xp.matmul(gu, mH(xp, upper)))
    right = mH(xp, st(upper, mH(xp, inner), lower=False))  # inner U^{-H}
    left = st(mH(xp, lower), right, lower=False, unit_diagonal=True)  # L^{-H} inner U^{-H}
    return like(xp, xp.matmul(p, left), a)


def _check_lu_rank(upper):
    d = np.abs(np.diagonal(to_numpy(data_of(upper)), axis1=-2, axis2=-1))
    if np.any(d <= d.max(axis=-1, keepdims=True, initial=0.0) * math.sqrt(finfo_eps(d.dtype))):
        raise ValueError(
            "lu: the matrix is singular (U has a 0 on its diagonal, to rounding), where L and U have no "
            "derivative (the factorization is not unique); differentiate a function of an invertible matrix, "
            "or use svd or pinv"
        )


# Every forward factors each matrix of a stack (NumPy's linalg, lu's batched elimination): vmap's batch axes
# are more leading axes (batch="leading").
# fmt: off
_eigh_op = defop("eigh", _eigh, _eigh_vjp, save="x.shape ans", outputs=("eigenvalues", "eigenvectors"),
                 refuses={"dask": dask.LINALG}, jvp="transpose", batch="leading")
_eig_op = defop("eig", _eig, _eig_vjp, save="x.shape ans", outputs=("eigenvalues", "eigenvectors"),
                refuses={"dask": dask.LINALG}, jvp="transpose", batch="leading")
_svd_op = defop("svd", _svd, _svd_vjp, save="x.shape ans", outputs=("U", "S", "Vh"), refuses={"dask": dask.LINALG},
                jvp="transpose", batch="leading")
_qr_op = defop("qr", _qr, _qr_vjp, save="x.shape ans", outputs=("Q", "R"), refuses={"dask": dask.LINALG},
               jvp="transpose", batch="leading")
_lu_op = defop("lu", _lu, _lu_vjp, save="x.shape ans", outputs=("P", "L", "U"), refuses={"dask": dask.LINALG},
               jvp="transpose", batch="leading")
# fmt: on


# -- the public functions ------------------------------------------------------------------------------------
def eigh(a, UPLO="L"):
    """Eigenvalues (ascending, real) and orthonormal eigenvectors of each Hermitian matrix, as NumPy's
    EighResult. Only the ``UPLO`` triangle ('L' or 'U') is read, and the gradient is that of the function NumPy
    computes (see ``cholesky``). Eigenvectors are defined up to sign (phase): differentiate functions that do
    not depend on it. At repeated eigenvalues the values and the vectors of the values that are not repeated
    are exact, and a loss that reads the vectors of a repeated one raises ValueError: its gradient there is not
    determined by what the rule sees, even when it does not depend on the basis (this module's docstring).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.eigh(tg.Tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
    Tensor([1., 2.])
    """
    check_matrices(a, "eigh")
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return EighResult(*_eigh_op(a, UPLO=UPLO))


def eigvalsh(a, UPLO="L"):
    """The eigenvalues of each Hermitian matrix, ascending; the gradient V diag(g) V^H is exact where
    eigenvalues repeat for a loss symmetric in them (their sum); one that tells them apart has no derivative
    there, and gets the cotangent shared evenly over them (as tied maxima do).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.eigvalsh(tg.Tensor([[2.0, 1.0], [1.0, 2.0]]))
    Tensor([1., 3.])
    """
    return eigh(a, UPLO).eigenvalues


def eig(a):
    """Eigenvalues and eigenvectors (unit norm, columns) of each square matrix, always complex (as in JAX and
    PyTorch; NumPy returns real arrays when every eigenvalue is real), as NumPy's EigResult. The eigenvalues are
    holomorphic where they are distinct; the eigenvectors are defined up to a phase each.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.eig(tg.Tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
    Tensor([2.+0.j, 1.+0.j], dtype=complex128)
    """
    check_matrices(a, "eig")
    return EigResult(*_eig_op(a))


def eigvals(a):
    """The eigenvalues of each square matrix (complex).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.eigvals(tg.Tensor([[0.0, -1.0], [1.0, 0.0]]))
    Tensor([0.+1.j, 0.-1.j], dtype=complex128)
    """
    return eig(a).eigenvalues


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition a = U diag(S) Vh of each matrix, as NumPy's SVDResult (S descending and
    real); ``compute_uv=False`` gives S alone (``svdvals``). With ``full_matrices=True`` (NumPy's default) U and
    Vh are square, and their columns (rows) beyond min(m, n) get no gradient (a nonzero cotangent there raises).
    At repeated singular values, S and the vectors of the values that are not repeated are exact, and a loss
    that reads the vectors of a repeated one raises ValueError, even U diag(S) Vh: its gradient there is not
    determined by what the rule sees (this module's docstring). ``hermitian`` is accepted for NumPy's signature;
    the decomposition is the general one either way.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.svd(tg.Tensor([[3.0, 0.0], [0.0, -2.0]])).S
    Tensor([3., 2.])
    """
    check_matrices(a, "svd", square=False)
    full = bool(full_matrices) and bool(compute_uv)
    u, s, vh = _svd_op(a, full_matrices=full)
    return SVDResult(u, s, vh) if compute_uv else s


def svdvals(a):
    """The singular values of each matrix, descending; the gradient U diag(g) V^H is exact where they repeat
    for a loss symmetric in them (the nuclear norm); one that tells them apart gets the cotangent shared evenly.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.svdvals(tg.Tensor([[0.0, 2.0], [1.0, 0.0]]))
    Tensor([2., 1.])
    """
    return svd(a, full_matrices=False, compute_uv=False)


def qr(a, mode="reduced"):
    """QR decomposition of each matrix, as NumPy's QRResult: ``mode`` 'reduced' (Q m x k, R k x n, k = min(m,
    n)), 'complete' (Q m x m; its columns beyond n get no gradient) or 'r' (R alone). The gradient needs R's
    leading square block invertible (full rank).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> abs(la.qr(tg.Tensor([[3.0], [4.0]])).R)
    Tensor([[5.]])
    """
    check_matrices(a, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r' ('raw' has no gradient), got {mode!r}")
    complete = mode == "complete"
    q, r = _qr_op(a, complete=complete)
    return r if mode == "r" else QRResult(q, r)


def lu(a):
    """LU decomposition with partial pivoting of each square matrix, as SciPy's ``scipy.linalg.lu``: ``P, L,
    U`` with ``a = P @ L @ U``, P a permutation matrix, L unit lower triangular, U upper triangular (batched over
    leading axes). The gradient of L and U needs an invertible matrix (a 0 on U's diagonal raises); P is
    piecewise constant and gets none.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> p, l, u = la.lu(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> u
    Tensor([[3.        , 4.        ],
            [0.        , 0.66666667]])
    """
    check_matrices(a, "lu")
    return _lu_op(a)
