"""Linear algebra ops: matrix products, solves, inverses, Cholesky, norms, pseudo-inverses (determinants are in
``determinants``, the decompositions in ``decompositions``).

Every op takes stacked (batched) matrices in its last two axes, with NumPy's broadcasting of the batch axes;
the rules compute in the output's batch shape and the replay sums broadcast batch axes back (``unbroadcast``).
The rules are tapegrad's convention for complex numbers (``docs/guide/complex.md``): the transposes of the
holomorphic ops (``inv``, ``solve``, ``matmul``) have no conjugation; the others (``cholesky``,
``pinv``) are written with conjugate transposes, PyTorch's adjoint convention, and conjugated once
(``adjoint_form``). A real input that meets complex values gets the real part of its gradient.

Rules call other ops through :func:`~tapegrad.ops._rules.in_rule`, so second derivatives run through those ops'
own rules; no rule forms an inverse that a solve can replace.

The matrix product's rules promote 1-D operands the way ``np.matmul`` does, compute in the output's batch shape,
and leave summing over broadcast batch dimensions to the replay's ``unbroadcast``.
"""

import math

import numpy as np

from ..backend import dask_array as dask
from ..registry import defnondiff, defop
from ._axes import kept_shape, normalize_axes
from ._batching import matmul_rule, solve_rule
from ._complex import is_complex, like, real_if_complex
from ._matrix import adjoint_form, diag_part, is_numpy, mH, mT, native, scipy_linalg, triangle_read
from ._rules import data, in_rule, recorded


def _matmul_vjp_x(xp, g, ans, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * y
    if y.ndim == 1:  # (..., m, k) @ (k,) -> (..., m)
        return xp.expand_dims(g, -1) * y
    if x.ndim == 1:  # (k,) @ (..., k, n) -> (..., n)
        if y.ndim == 2:  # y @ g, one op (under vmap, one product for the batch of vectors g)
            return xp.matmul(y, g)
        return xp.squeeze(xp.matmul(y, xp.expand_dims(g, -1)), -1)
    if _column_major(x):  # x is A.T (W.T @ h): (y g^T)^T, in x's layout, so that A's gradient is A's own layout
        return mT(xp, xp.matmul(y, mT(xp, g)))
    return xp.matmul(g, mT(xp, y))


def _column_major(a) -> bool:
    """Whether the last two axes of ``a`` (a NumPy array, or a recorded replay's tensor of one) run down its
    columns: a transposed matrix, ``W.T``.

    A product's gradient for such an operand is computed transposed, as PyTorch's does: ``(g^T x)^T`` is the
    same matrix as ``x^T g``, but its memory runs as ``W``'s, so ``x @ W.T`` (every ``nn.Linear``) gives ``W``
    its gradient without a copy across the rows (at 784 x 512 that copy costs half a product)."""
    if a.__class__ is not np.ndarray:
        a = data(a)  # a recorded replay's too (tg.compile traces one): its programs make eager's NumPy calls
        if a.__class__ is not np.ndarray:  # another library's arrays: as written
            return False
    shape, strides = a.shape, a.strides
    return shape[-1] > 1 and shape[-2] > 1 and strides[-2] < strides[-1]


def _matmul_vjp_y(xp, g, ans, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * x
    if x.ndim == 1:
        if y.ndim == 2 and recorded(xp) and isinstance(data(x), np.ndarray):  # one op: under vmap, one einsum
            return xp.einsum("i,j->ij", x, g)  # (faster than NumPy's broadcast product of (B, m, 1) and (B, 1, n))
        return xp.expand_dims(x, -1) * xp.expand_dims(g, -2)
    if y.ndim == 1:
        if x.ndim == 2:  # (m, k) @ (k,) -> (m,): x^T g is g @ x, one op (hvp and hessian replay it on tensors)
            return xp.matmul(g, x)
        return xp.squeeze(xp.matmul(xp.swapaxes(x, -1, -2), xp.expand_dims(g, -1)), -1)
    if _column_major(y):  # y is W.T (x @ W.T, nn.Linear's product): (g^T x)^T, in y's layout (see above)
        return mT(xp, xp.matmul(mT(xp, g), x))
    return xp.matmul(mT(xp, x), g)


matmul = defop(
    "matmul",
    np.matmul,
    _matmul_vjp_x,
    _matmul_vjp_y,
    save="x y",
    broadcast=True,
    doc="Matrix product (x @ y) for 1-D, 2-D and batched operands.\n\n"
    ">>> import tapegrad as tg\n>>> tg.matmul(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[3.0], [4.0]]))\nTensor([[11.]])",
    linear="each",
    batch=matmul_rule,
)


def shape_of(a) -> tuple:
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def check_matrices(a, op, square=True):
    """NumPy's LinAlgError, naming the op and the shape, unless ``a`` is a stack of (square) matrices."""
    shape = shape_of(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{op}: needs a matrix (or a stack of them) of at least 2 dimensions, got shape {shape}"
        )
    if square and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(f"{op}: needs square matrices in the last two axes, got shape {shape}")


# -- forwards: NumPy's functions, or the same names in another array library (xp=) ----------------------------


def _solve(a, b, *, xp=np):
    return native(xp, xp.linalg.solve(a, b))  # NumPy 2's rule: b is a vector only when it is 1-D


def _inv(a, *, xp=np):
    return native(xp, xp.linalg.inv(a))


def _cholesky(a, upper=False, *, xp=np):
    if upper and not is_numpy(xp):  # NumPy reads the upper triangle for upper=True; the lower one of a^H is it
        return xp.conj(mT(xp, native(xp, xp.linalg.cholesky(xp.conj(mT(xp, a))))))
    return native(xp, xp.linalg.cholesky(a, upper=upper))


def _solve_triangular(a, b, lower=False, trans=0, unit_diagonal=False, *, xp=np):
    vector = b.ndim == 1
    if vector:
        b = xp.expand_dims(b, -1)
    batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    sl = scipy_linalg() if is_numpy(xp) else None
    if sl is not None:
        a, b = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
        x = np.empty(batch + b.shape[-2:], dtype=np.result_type(a.dtype, b.dtype, np.float32))
        for i in np.ndindex(*batch):  # one matrix at a time, as SciPy itself does (and older SciPy needs)
            x[i] = sl.solve_triangular(
                a[i], b[i], trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False
            )
    else:  # no SciPy (or another array library): a general solve with the triangle, the same answer
        t = xp.tril(a) if lower else xp.triu(a)
        if unit_diagonal:
            eye = xp.eye(a.shape[-1], dtype=t.dtype)
            t = t - t * eye + eye
        if trans:
            t = xp.conj(mT(xp, t)) if trans == 2 else mT(xp, t)
        x = native(xp, xp.linalg.solve(t, b))
    return x[..., 0] if vector else x


def _vector_norm(x, axis=None, keepdims=False, ord=2, *, xp=np):
    return native(xp, xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord))


def _pinv(a, rcond=None, hermitian=False, *, xp=np):
    if is_numpy(xp):
        return np.linalg.pinv(a, rcond=1e-15 if rcond is None else rcond, hermitian=hermitian)
    return native(xp, xp.linalg.pinv(a, rtol=rcond))


# -- rules ---------------------------------------------------------------------------------------------------
def _solve_vjp(xp, g, ans, a, b):
    solve = in_rule(xp, _solve_op)
    at = mT(xp, a)
    if b.ndim == 1:  # x = A^{-1} b for each batch of A: the cotangent is a stack of vectors
        gb = xp.squeeze(solve(at, xp.expand_dims(g, -1)), -1)
        ga = -(xp.expand_dims(gb, -1) * xp.expand_dims(ans, -2))
    else:
        gb = solve(at, g)
        ga = -xp.matmul(gb, mT(xp, ans))
    return like(xp, ga, a), like(xp, gb, b)


def _solve_jvp(xp, ts, ans, a, b):
    ta, tb = ts  # x = A^{-1} b: dx = A^{-1} (db - dA x)
    if ta is None:
        return in_rule(xp, _solve_op)(a, tb)
    solve = in_rule(xp, _solve_op)
    if b.ndim == 1:  # a vector b for each batch of A: the right-hand sides are a stack of vectors
        rhs = -xp.matmul(ta, xp.expand_dims(ans, -1))
        rhs = rhs if tb is None else rhs + xp.expand_dims(tb, -1)
        return xp.squeeze(solve(a, rhs), -1)
    dax = xp.matmul(ta, ans)
    return solve(a, -dax if tb is None else tb - dax)


def _inv_jvp(xp, ts, ans, a):
    return -xp.matmul(xp.matmul(ans, ts[0]), ans)


def _inv_vjp(xp, g, ans, a):
    at = mT(xp, ans)
    return like(xp, -xp.matmul(xp.matmul(at, g), at), a)


def _solve_triangular_vjp(xp, g, ans, a, b, lower=False, trans=0, unit_diagonal=False):
    st = in_rule(xp, _solve_triangular_op)
    kw = {"lower": lower, "unit_diagonal": unit_diagonal}
    vector = b.ndim == 1
    if vector:
        g, x = xp.expand_dims(g, -1), xp.expand_dims(ans, -1)
    else:
        x = ans
    # x = op(A)^{-1} b: the gradient of b is op(A)^{-T} g; that of M = op(A) is -gb x^T
    if trans == 0:
        gb = st(a, g, trans=1, **kw)
    elif trans == 1:
        gb = st(a, g, trans=0, **kw)
    else:
        gb = xp.conj(st(a, xp.conj(g), trans=0, **kw))
    gm = -xp.matmul(gb, mT(xp, x))
    ga = gm if trans == 0 else (mT(xp, gm) if trans == 1 else xp.conj(mT(xp, gm)))
    ga = xp.tril(ga, k=-1 if unit_diagonal else 0) if lower else xp.triu(ga, k=1 if unit_diagonal else 0)
    return like(xp, ga, a), like(xp, xp.squeeze(gb, -1) if vector else gb, b)


@adjoint_form
def _cholesky_vjp(xp, g, ans, a, upper=False):
    # Murray's formula (arXiv:1602.07527) by triangular solves: G = L^{-H} herm(Phi(L^H gL)) L^{-1}
    st = in_rule(xp, _solve_triangular_op)
    L, gl = (mH(xp, ans), mH(xp, g)) if upper else (ans, g)
    k = xp.matmul(mH(xp, L), gl)
    phi = xp.tril(k, k=-1) + diag_part(xp, k) * 0.5
    h = (phi + mH(xp, phi)) * 0.5
    y = st(L, h, lower=True, trans=2)
    G = mH(xp, st(L, mH(xp, y), lower=True, trans=2))
    return like(xp, triangle_read(xp, G, lower=not upper), a)


def _kept(xp, g, shape, axis, keepdims):
    return g if keepdims else xp.reshape(g, kept_shape(shape, axis))


def _sign_of(xp, x, ax):
    """sign(x) for real x; conj(z)/|z| (0 at 0) for complex z: the gradient of |x| in tapegrad's convention."""
    if not is_complex(x):
        return xp.sign(x)
    zero = ax == 0
    return xp.where(zero, 0, xp.conj(x) / xp.where(zero, 1, ax))


def _vector_norm_vjp(xp, g, ans, x, axis=None, keepdims=False, ord=2):
    g = real_if_complex(xp, _kept(xp, g, x.shape, axis, keepdims))
    n = _kept(xp, ans, x.shape, axis, keepdims)
    zero = n == 0
    if ord == 2:  # g x / |x|, and the subgradient 0 at x = 0 (never NaN)
        scale = xp.where(zero, 0, g / xp.where(zero, 1, n))
        return scale * (xp.conj(x) if is_complex(x) else x)
    ax = xp.absolute(x)
    if ord == 1:
        return g * _sign_of(xp, x, ax)
    if ord in (math.inf, -math.inf):  # the extreme element(s), ties sharing the gradient evenly, or the NaNs
        at = xp.logical_or(ax == n, ax != ax)
        ties = xp.sum(xp.astype(at, ax.dtype), axis=axis, keepdims=True)
        return xp.where(at, g / ties, 0) * _sign_of(xp, x, ax)
    # a p-norm: (|x| / n)^(p - 1) sign(x); 0 where x or the norm is 0
    off = ax == 0
    ratio = xp.where(off, 1, ax) / xp.where(zero, 1, n)
    return xp.where(zero, 0, xp.where(off, 0, g * ratio ** (ord - 1) * _sign_of(xp, x, ax)))


@adjoint_form
def _pinv_vjp(xp, g, ans, a, rcond=None, hermitian=False):
    # Golub and Pereyra: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, for a constant rank
    mm = xp.matmul
    if hermitian:  # the matrix NumPy inverts: the lower triangle, mirrored
        low = xp.tril(a, k=-1)
        d = diag_part(xp, a)
        a = low + mH(xp, low) + (xp.real(d) if is_complex(d) else d)
    p, ph, gh = ans, mH(xp, ans), mH(xp, g)
    ghppt = mm(gh, mm(p, ph))
    pphgh = mm(mm(ph, p), gh)
    ga = -mm(mm(ph, g), ph) + ghppt - mm(mm(a, p), ghppt) + pphgh - mm(mm(pphgh, p), a)
    if hermitian:  # NumPy reads the lower triangle of a Hermitian input
        ga = triangle_read(xp, (ga + mH(xp, ga)) * 0.5, lower=True)
    return like(xp, ga, a)


_DASK = {"dask": dask.LINALG}
# fmt: off
_solve_op = defop("solve", _solve, _solve_vjp, joint=True, inputs=("x", "y"), save="x y.shape ans", broadcast=True,
                  refuses=_DASK, jvp=_solve_jvp, batch=solve_rule(_solve))
_inv_op = defop("inv", _inv, _inv_vjp, save="x.shape ans", refuses=_DASK, jvp=_inv_jvp, batch="leading")
_cholesky_op = defop("cholesky", _cholesky, _cholesky_vjp, save="x.shape ans", refuses=_DASK, jvp="transpose", batch="leading")
_solve_triangular_op = defop("solve_triangular", _solve_triangular, _solve_triangular_vjp, joint=True,
                             inputs=("x", "y"), save="x y.shape ans", broadcast=True, refuses=_DASK, jvp="transpose",
                             batch=solve_rule(_solve_triangular))
_vector_norm_op = defop("vector_norm", _vector_norm, _vector_norm_vjp, save="x ans", refuses=_DASK, jvp="transpose", batch="axis")
_pinv_op = defop("pinv", _pinv, _pinv_vjp, save="x ans", refuses=_DASK, jvp="transpose", batch="leading")
_count_nonzero = defnondiff("vector_norm_count", lambda x, axis=None, keepdims=False, *, xp=np: _vector_norm(
    x, axis=axis, keepdims=keepdims, ord=0, xp=xp), doc="vector_norm with ord=0: the count of nonzero elements.")
# fmt: on


# -- the public functions ------------------------------------------------------------------------------------
def solve(a, b):
    """The solution x of a @ x = b for stacked square a; b is a vector only when it is 1-D (NumPy 2's rule),
    otherwise a stack of matrices (..., M, K); batch axes broadcast.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.solve(tg.Tensor([[2.0, 0.0], [0.0, 4.0]]), tg.Tensor([2.0, 2.0]))
    Tensor([1. , 0.5])
    """
    check_matrices(a, "solve")
    bshape, n = shape_of(b), shape_of(a)[-1]
    if not bshape or (len(bshape) == 1 and bshape[0] != n) or (len(bshape) > 1 and bshape[-2] != n):
        raise ValueError(
            f"solve: b of shape {bshape} does not fit a of shape {shape_of(a)}: b must be ({n},) or (..., {n}, K); "
            f"write b[..., None] for a stack of vectors"
        )
    return _solve_op(a, b)


def inv(a):
    """The inverse of each square matrix in the last two axes.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.inv(tg.Tensor([[2.0, 0.0], [0.0, 4.0]]))
    Tensor([[0.5 , 0.  ],
            [0.  , 0.25]])
    """
    check_matrices(a, "inv")
    return _inv_op(a)


def cholesky(a, upper=False):
    """The Cholesky factor of each Hermitian positive-definite matrix: lower L with a = L L^H, or with
    ``upper=True`` upper U with a = U^H U. Like NumPy, only that triangle of a is read, and the gradient is
    that of the function NumPy computes: twice the strict triangle and the real diagonal of the symmetric
    (Hermitian) gradient, so a symmetric a built from other tensors (X @ X.T + c I) gets exact gradients.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.cholesky(tg.Tensor([[4.0, 2.0], [2.0, 2.0]]))
    Tensor([[2., 0.],
            [1., 1.]])
    """
    check_matrices(a, "cholesky")
    return _cholesky_op(a, upper=bool(upper))


_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """The solution x of op(a) @ x = b for triangular a, with scipy.linalg.solve_triangular's arguments:
    ``trans`` 0/'N' (a), 1/'T' (a^T) or 2/'C' (a^H); ``lower``; ``unit_diagonal`` (the diagonal is taken as 1).
    Only the triangle is read, and only it gets a gradient. b is a vector only when it is 1-D; batch axes
    broadcast. With SciPy installed it runs SciPy's triangular solve; without it (and on other array libraries)
    a general solve with the triangle, the same answer at the cost of an LU factorisation.
    ``overwrite_b`` and ``check_finite`` are accepted for SciPy's signature and ignored (b is never changed).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.solve_triangular(tg.Tensor([[2.0, 0.0], [1.0, 1.0]]), tg.Tensor([2.0, 3.0]), lower=True)
    Tensor([1., 2.])
    """
    check_matrices(a, "solve_triangular")
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    bshape, n = shape_of(b), shape_of(a)[-1]
    if not bshape or (len(bshape) == 1 and bshape[0] != n) or (len(bshape) > 1 and bshape[-2] != n):
        raise ValueError(f"solve_triangular: b of shape {bshape} does not fit a of shape {shape_of(a)}")
    return _solve_triangular_op(a, b, lower=bool(lower), trans=_TRANS[trans], unit_diagonal=bool(unit_diagonal))


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """The vector norm over ``axis`` (None: all elements): ord 2 (default), 1, inf, -inf, 0 (the count of
    nonzero elements: a constant, like tg.sign it carries no gradient), or any other p: (sum |x|^p)^(1/p).
    At x = 0 the gradient is the subgradient 0, never NaN; ord=inf shares it evenly between tied extremes.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.vector_norm(tg.Tensor([3.0, 4.0]))
    Tensor(5.)
    """
    if isinstance(ord, str) or ord is None:
        raise ValueError(f"vector_norm: ord must be a number, got {ord!r} (matrix norms: tg.linalg.matrix_norm)")
    axis = normalize_axes(x, axis, "vector_norm")
    if ord == 0:
        return _count_nonzero(x, axis=axis, keepdims=bool(keepdims))
    return _vector_norm_op(x, axis=axis, keepdims=bool(keepdims), ord=float(ord))


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """The Moore-Penrose pseudo-inverse of each matrix (singular values below rcond (or rtol) times the largest
    are cut, NumPy's default 1e-15). Its gradient assumes the rank does not change nearby (it is not
    continuous where it does). ``hermitian=True`` reads only the lower triangle, as NumPy does.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.pinv(tg.Tensor([[2.0, 0.0]]))
    Tensor([[0.5],
            [0. ]])
    """
    check_matrices(a, "pinv", square=bool(hermitian))
    if rcond is not None and rtol is not None:
        raise ValueError("pinv: give rcond or rtol, not both")
    cut = rtol if rcond is None else rcond
    return _pinv_op(a, rcond=None if cut is None else float(cut), hermitian=bool(hermitian))
