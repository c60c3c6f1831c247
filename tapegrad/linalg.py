"""``tapegrad.linalg``: NumPy's ``numpy.linalg`` (and SciPy's triangular solves and matrix functions) on
tensors, differentiable, on stacked matrices with NumPy's broadcasting of the batch axes.

===================================  ======================================================================
functions                            gradient
===================================  ======================================================================
solve, inv                           ops with their own rules (solves, never an inverse a solve can replace)
det, slogdet                         the cofactor matrix, from the SVD at singular matrices; slogdet raises there
cholesky, solve_triangular           Murray's formula by triangular solves; the triangle that is read
cho_solve                            two triangular solves (SciPy's signature)
eigh, eigvalsh, eig, eigvals         ops; values exact at repeated ones, the vectors of a repeated value
svd, svdvals, qr, lu                 raise, as an arbitrary phase does (tapegrad.ops.decompositions); each
                                     one op with several outputs; lu is SciPy's P, L, U
pinv, lstsq                          Golub and Pereyra's pseudo-inverse derivative (constant rank)
vector_norm, matrix_norm, norm       the vector norm op (subgradient 0 at 0), svdvals, sums of |x|
matrix_power, multi_dot, cross       products (matrix_power < 0 through inv)
tensorsolve, tensorinv               reshapes around solve and inv
expm, logm                           the block-triangular Frechet trick (tapegrad.ops.matrix_functions)
===================================  ======================================================================

Complex matrices follow tapegrad's convention (``docs/guide/complex.md``). ``solve_triangular``, ``cho_solve``,
``expm`` and ``logm`` are SciPy's (``scipy.linalg``) when SciPy is installed; without it the triangular solves
fall back to a general solve with the triangle (the same answer, an LU factorisation's cost), and expm and
logm raise ``NotImplementedError``. On array API libraries the ops run with the library's ``linalg`` extension.

>>> import tapegrad as tg
>>> from tapegrad import linalg as la
>>> a = tg.Tensor([[3.0, 1.0], [1.0, 2.0]], requires_grad=True)
>>> tg.grad(lambda a: la.slogdet(a).logabsdet)(a.data)   # inv(a).T
array([[ 0.4, -0.2],
       [-0.2,  0.6]])
"""

from __future__ import annotations

import math

import numpy as np

from ._tensor import Tensor
from .backend import NUMPY, backend_of
from .ops._axes import ndim_of
from .ops._complex import finfo_eps, is_complex
from .ops.decompositions import (
    EighResult,
    EigResult,
    QRResult,
    SVDResult,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    lu,
    qr,
    svd,
    svdvals,
)
from .ops.determinants import SlogdetResult, det, slogdet
from .ops.elementwise import absolute, multiply, subtract
from .ops.linalg import (
    check_matrices,
    cholesky,
    inv,
    matmul,
    pinv,
    shape_of,
    solve,
    solve_triangular,
    vector_norm,
)
from .ops.matrix_functions import expm, logm
from .ops.reductions import max as amax
from .ops.reductions import min as amin
from .ops.reductions import sum as asum
from .ops.shape import expand_dims, getitem, reshape, stack, transpose

__all__ = [
    "solve",
    "inv",
    "pinv",
    "det",
    "slogdet",
    "cholesky",
    "solve_triangular",
    "cho_solve",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "svd",
    "svdvals",
    "qr",
    "lu",
    "lstsq",
    "norm",
    "vector_norm",
    "matrix_norm",
    "matrix_power",
    "multi_dot",
    "matmul",
    "cross",
    "tensorsolve",
    "tensorinv",
    "expm",
    "logm",
    "EighResult",
    "EigResult",
    "SVDResult",
    "QRResult",
    "SlogdetResult",
    "LinAlgError",
]

LinAlgError = np.linalg.LinAlgError


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """The solution of a x = b from a's Cholesky factor, with scipy.linalg.cho_solve's signature:
    ``(c, lower)`` where a = c c^H (lower) or c^H c (upper); only that triangle of c is read.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> c = la.cholesky(tg.Tensor([[4.0, 2.0], [2.0, 2.0]]))
    >>> la.cho_solve((c, True), tg.Tensor([6.0, 4.0]))
    Tensor([1., 1.])
    """
    c, lower = c_and_lower
    if lower:
        return solve_triangular(c, solve_triangular(c, b, lower=True), lower=True, trans="C")
    return solve_triangular(c, solve_triangular(c, b, lower=False, trans="C"), lower=False)


def matrix_norm(x, keepdims=False, ord="fro"):
    """The matrix norm of the last two axes: 'fro' (default), 'nuc', 1, -1, 2, -2, inf or -inf (NumPy's
    ``ord``). 2, -2 and 'nuc' come from the singular values, whose ties share the gradient evenly; 1 and inf
    from sums of |x| (subgradient 0 at 0).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.matrix_norm(tg.Tensor([[3.0, 0.0], [0.0, 4.0]]), ord=2)
    Tensor(4.)
    """
    check_matrices(x, "matrix_norm", square=False)
    if ord == "fro":
        out = vector_norm(x, axis=(-2, -1))
    elif ord == "nuc":
        out = asum(svdvals(x), axis=-1)
    elif ord in (2, -2):
        out = (amax if ord == 2 else amin)(svdvals(x), axis=-1)
    elif ord in (1, -1):
        out = (amax if ord == 1 else amin)(asum(absolute(x), axis=-2), axis=-1)
    elif ord in (math.inf, -math.inf):
        out = (amax if ord > 0 else amin)(asum(absolute(x), axis=-1), axis=-1)
    else:
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    return expand_dims(expand_dims(out, -1), -1) if keepdims else out


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's ``linalg.norm``: a vector norm over one axis, a matrix norm over two, or (``axis=None``,
    ``ord=None``) the 2-norm of all elements. See vector_norm and matrix_norm for the ords and the gradient
    at 0 (the subgradient 0, never NaN).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.norm(tg.Tensor([[1.0, 2.0], [2.0, 4.0]]))
    Tensor(5.)
    """
    ndim = ndim_of(x)
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        if ndim not in (1, 2):
            raise ValueError(f"norm: an ord needs a 1-D or 2-D input or an axis, got {ndim} dimensions")
        axis = tuple(range(ndim))
    elif not isinstance(axis, (tuple, list)):
        axis = (axis,)
    axis = tuple(axis)
    if len(axis) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: ord {ord!r} is a matrix norm; give two axes for it")
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError(f"norm: axis must be an int or a pair of ints, got {axis!r}")
    row, col = (int(a) % ndim for a in axis)
    if row == col:
        raise ValueError(f"norm: the two axes {axis} are the same axis")
    others = [i for i in range(ndim) if i not in (row, col)]
    out = matrix_norm(transpose(x, tuple(others) + (row, col)), ord="fro" if ord is None else ord)
    if keepdims:
        shape = shape_of(x)
        out = reshape(out, tuple(1 if i in (row, col) else n for i, n in enumerate(shape)))
    return out


def matrix_power(a, n):
    """a raised to the integer power n by repeated squaring (as NumPy); n < 0 inverts first, n = 0 gives the
    identity (a constant: its gradient is 0).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.matrix_power(tg.Tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
    Tensor([[1., 3.],
            [0., 1.]])
    """
    check_matrices(a, "matrix_power")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}")
    n = int(n)
    if n == 0:
        data = a._data if isinstance(a, Tensor) else np.asarray(a)
        xp = (backend_of(data) or NUMPY).xp
        return Tensor(xp.zeros(tuple(data.shape), dtype=data.dtype) + xp.eye(data.shape[-1], dtype=data.dtype))
    if n < 0:
        a, n = inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z = result = None
    while n > 0:  # the bits of n from the lowest, as NumPy does
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def _chain_order(dims):
    """The cheapest order of a matrix chain with sizes ``dims`` (n + 1 of them): the split of each span."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays):
    """The product of two or more matrices in the cheapest order, as NumPy (a 1-D first argument is a row
    vector, a 1-D last one a column vector); batch axes broadcast.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.multi_dot([tg.Tensor([1.0, 2.0]), tg.Tensor([[1.0], [1.0]]), tg.Tensor([3.0])])
    Tensor(9.)
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: needs at least two arrays")
    first_vector, last_vector = ndim_of(arrays[0]) == 1, ndim_of(arrays[-1]) == 1
    if first_vector:
        arrays[0] = expand_dims(arrays[0], 0)
    if last_vector:
        arrays[-1] = expand_dims(arrays[-1], -1)
    for i, m in enumerate(arrays):
        if ndim_of(m) < 2:
            raise ValueError(f"multi_dot: argument {i} has {ndim_of(m)} dimensions; only the first and last may be 1-D")
    dims = [shape_of(arrays[0])[-2]] + [shape_of(m)[-1] for m in arrays]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))

    out = product(0, len(arrays) - 1)
    if first_vector:
        out = getitem(out, index=(Ellipsis, 0, slice(None)))
    if last_vector:
        out = getitem(out, index=(Ellipsis, 0))
    return out


def cross(x1, x2, axis=-1):
    """The cross product of 3-vectors along ``axis`` (np.linalg.cross; the inputs broadcast).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.cross(tg.Tensor([1.0, 0.0, 0.0]), tg.Tensor([0.0, 1.0, 0.0]))
    Tensor([0., 0., 1.])
    """
    n1, n2 = ndim_of(x1), ndim_of(x2)
    if not isinstance(axis, (int, np.integer)) or not -min(n1, n2) <= axis < (0 if n1 != n2 else n1):
        raise ValueError(f"cross: axis {axis!r} must count from the end, within both inputs ({n1} and {n2} dims)")
    axis = int(axis) - (n1 if axis >= 0 else 0)
    for x in (x1, x2):
        if shape_of(x)[axis] != 3:
            raise ValueError(f"cross: needs 3-vectors along axis {axis}, got shapes {shape_of(x1)} and {shape_of(x2)}")
    after = (slice(None),) * (-axis - 1)
    a = [getitem(x1, index=(Ellipsis, i) + after) for i in range(3)]
    b = [getitem(x2, index=(Ellipsis, i) + after) for i in range(3)]
    parts = [
        subtract(multiply(a[(i + 1) % 3], b[(i + 2) % 3]), multiply(a[(i + 2) % 3], b[(i + 1) % 3])) for i in range(3)
    ]
    return stack(parts, axis=axis)


def tensorsolve(a, b, axes=None):
    """The x with tensordot(a, x, x.ndim) = b (NumPy's algorithm: a reshape around solve).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.tensorsolve(tg.Tensor([[2.0, 0.0], [0.0, 4.0]]), tg.Tensor([2.0, 2.0]))
    Tensor([1. , 0.5])
    """
    an = ndim_of(a)
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k % an)
            order.insert(an, k % an)
        a = transpose(a, tuple(order))
    shape = shape_of(a)[-(an - ndim_of(b)) :] if an > ndim_of(b) else ()
    size = int(np.prod(shape, dtype=np.int64))
    if int(np.prod(shape_of(a), dtype=np.int64)) != size * size:
        raise LinAlgError(
            f"tensorsolve: a of shape {shape_of(a)} is not square as a matrix once b's axes are split off"
        )
    return reshape(solve(reshape(a, (size, size)), reshape(b, (-1,))), shape)


def tensorinv(a, ind=2):
    """The inverse of a as a tensor: tensordot(tensorinv(a, ind), a, ind) is the identity (NumPy's algorithm).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.tensorinv(tg.Tensor([[2.0, 0.0], [0.0, 4.0]]), ind=1)
    Tensor([[0.5 , 0.  ],
            [0.  , 0.25]])
    """
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    shape = shape_of(a)
    size = int(np.prod(shape[ind:], dtype=np.int64))
    return reshape(inv(reshape(a, (size, -1))), shape[ind:] + shape[:ind])


def lstsq(a, b, rcond=None):
    """The least-squares solution of a x = b, as NumPy's (x, residuals, rank, s): x = pinv(a) b with singular
    values below rcond (default eps * max(M, N)) times the largest cut; residuals (the squared 2-norm of each
    column of b - a x) when M > N and a has full rank, else empty; rank and s (the singular values) as NumPy.
    x, residuals and s are differentiable (for a constant rank); batch axes broadcast.

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> x, res, rank, s = la.lstsq(tg.Tensor([[1.0], [1.0]]), tg.Tensor([1.0, 3.0]))
    >>> x, res, rank
    (Tensor([2.]), Tensor([2.]), 1)
    """
    check_matrices(a, "lstsq", square=False)
    m, n = shape_of(a)[-2:]
    bshape = shape_of(b)
    if not bshape or (len(bshape) == 1 and bshape[0] != m) or (len(bshape) > 1 and bshape[-2] != m):
        raise ValueError(
            f"lstsq: b of shape {bshape} does not fit a of shape {shape_of(a)}: b must be ({m},) or (..., {m}, K)"
        )
    if rcond is None:
        rcond = finfo_eps(getattr(a, "dtype", np.float64)) * max(m, n)
    x = matmul(pinv(a, rcond=rcond), b)
    s = svdvals(a)
    sd = s._data
    xp = (backend_of(sd) or NUMPY).xp
    ranks = xp.sum(xp.astype(sd > xp.max(sd, axis=-1, keepdims=True) * rcond, xp.int64), axis=-1)
    rank = int(ranks) if ndim_of(ranks) == 0 else Tensor(ranks)
    if m > n and bool(xp.all(ranks == n)):
        r = subtract(b, matmul(a, x))
        r = absolute(r) if is_complex(r) else r
        residuals = asum(multiply(r, r), axis=-1 if ndim_of(b) == 1 else -2)
        if ndim_of(b) == 1:
            residuals = reshape(residuals, tuple(shape_of(residuals)) + (1,))
    else:
        residuals = Tensor(xp.zeros((0,), dtype=sd.dtype))
    return x, residuals, rank, s
