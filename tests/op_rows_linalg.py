"""Op-table rows for ``tapegrad.linalg``: one or more per op, each building a well-conditioned matrix from the
raw inputs inside ``fn`` (so finite differences and float32 stay meaningful) with the same NumPy steps in
``ref``: diagonally dominant for solves and inverses, X X^H + n I for cholesky, a spread diagonal plus a small
perturbation for distinct eigenvalues and singular values (and full rank for qr). Eigenvectors and singular
vectors are defined up to a sign (a phase), so rows check functions that do not depend on it (|V|^2, products
like U Vh), as JAX and autograd do. Batched shapes broadcast; the builders use ``tg.conj`` so that the same
rows run on complex inputs (tests/test_complex.py).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from op_rows_complex import parts
from op_table import OpCase

import tapegrad as tg
from tapegrad import linalg as la
from tapegrad.backend import NUMPY, backend_of

NO_SCIPY_BACKENDS = ("array_api_strict", "numpy_like")  # expm and logm are SciPy's, on NumPy arrays


# -- builders: the same steps on tensors (tg) and on arrays (np) ---------------------------------------------
def _xp(a):
    data = a._data if isinstance(a, tg.Tensor) else a  # the library only (a may be vmap's batch)
    return (backend_of(data) or NUMPY).xp, data


def _eye(a, m=None, n=None):
    """An identity (m x n) in a's library and dtype, as a constant tensor (or an array for arrays)."""
    xp, data = _xp(a)
    m = data.shape[-1] if m is None else m
    eye = xp.eye(m, m if n is None else n, dtype=data.dtype)
    return tg.Tensor(eye) if isinstance(a, tg.Tensor) else eye


def _spread(a, m, n, step):
    """diag(step, 2 step, ...) as an m x n matrix in a's library."""
    xp, data = _xp(a)
    d = xp.eye(m, n, dtype=data.dtype) * xp.reshape(xp.arange(1, n + 1, dtype=data.dtype), (1, n)) * step
    return tg.Tensor(d) if isinstance(a, tg.Tensor) else d


def _mH(a):
    if isinstance(a, tg.Tensor):
        return tg.swapaxes(tg.conj(a), -1, -2)
    return np.swapaxes(np.conj(a), -1, -2)


def _mm(a, b):
    return tg.matmul(a, b) if isinstance(a, tg.Tensor) else np.matmul(a, b)


def dominant(a):
    """a + 3n I: diagonally dominant for entries of size up to 2, so solves are well conditioned."""
    return a + _eye(a) * (3.0 * a.shape[-1])


def spd(a):
    """a a^H + m I (a of m rows): Hermitian positive definite."""
    m = a.shape[-2]
    return _mm(a, _mH(a)) + _eye(a, m, m) * float(m)


def separated(a):
    """diag(5, 10, ...) + 0.3 a: distinct singular values (and real eigenvalues), full rank, any m x n."""
    m, n = a.shape[-2:]
    return _spread(a, m, n, 5.0) + a * 0.3


def hermitian(a):
    """diag(5, 10, ...) + 0.3 (a + a^H) / 2: Hermitian with distinct eigenvalues."""
    n = a.shape[-1]
    return _spread(a, n, n, 5.0) + (a + _mH(a)) * 0.15


def rotating(a):
    """separated(a) plus a rotation in the first two axes: a complex-conjugate pair of distinct eigenvalues."""
    xp, data = _xp(a)
    n = a.shape[-1]
    first_two = xp.astype(xp.arange(n) < 2, data.dtype)
    r = (xp.eye(n, n, k=1, dtype=data.dtype) - xp.eye(n, n, k=-1, dtype=data.dtype)) * -6.0
    r = r * xp.reshape(first_two, (n, 1)) * xp.reshape(first_two, (1, n))
    return separated(a) + (tg.Tensor(r) if isinstance(a, tg.Tensor) else r)


def _abs2(v):
    if isinstance(v, tg.Tensor):
        return tg.real(v * tg.conj(v))
    return np.real(v * np.conj(v))


def _cat(parts, axis=-1):
    if isinstance(parts[0], tg.Tensor):
        return tg.concatenate([tg.reshape(p, tuple(p.shape[:-2]) + (-1,)) for p in parts], axis=axis)
    return np.concatenate([np.reshape(p, p.shape[:-2] + (-1,)) for p in parts], axis=axis)


# -- how the property tests draw shapes ------------------------------------------------------------------
def _batch(max_dims=1):
    return st.lists(st.integers(1, 2), min_size=0, max_size=max_dims).map(tuple)


def _square(n_min=1, n_max=3):
    return st.tuples(_batch(), st.integers(n_min, n_max)).map(lambda bn: bn[0] + (bn[1], bn[1]))


def _one_matrix(square=True, batch=True, **kwargs):
    def draw():
        shapes = (
            (_square() if batch else st.integers(1, 2).map(lambda n: (n, n)))
            if square
            else st.tuples(_batch(), st.integers(1, 3), st.integers(1, 3)).map(lambda t: t[0] + (t[1], t[2]))
        )
        return st.tuples(st.tuples(shapes), st.fixed_dictionaries({k: st.sampled_from(v) for k, v in kwargs.items()}))

    return draw


@st.composite
def _solve_shapes(draw):
    """a (..., n, n) and b: (n,) or (..., n, k), batch axes broadcasting (NumPy 2's rule for b)."""
    n = draw(st.integers(1, 3))
    batch_a = draw(_batch(2))
    if draw(st.booleans()):
        return (batch_a + (n, n), (n,)), {}
    batch_b = draw(st.sampled_from([batch_a, batch_a[1:], tuple(1 for _ in batch_a)]))
    return (batch_a + (n, n), batch_b + (n, draw(st.integers(1, 2)))), {}


def _draw_solve():
    return _solve_shapes()


def _kw(**choices):
    return st.fixed_dictionaries({k: st.sampled_from(v) for k, v in choices.items()})


@st.composite
def _triangular_shapes(draw):
    (shapes, _) = draw(_solve_shapes())
    return shapes, draw(_kw(lower=[True, False], trans=[0, 1, 2, "N", "T", "C"], unit_diagonal=[False, True]))


@st.composite
def _norm_shapes(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    ndim = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1), st.just(tuple(range(ndim)))))
    ords = [2, 1, 3.0, 1.5]
    return (shape,), {"ord": draw(st.sampled_from(ords)), "axis": axis, "keepdims": draw(st.booleans())}


@st.composite
def _matrix_norm_shapes(draw):
    batch = draw(_batch())
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    ords = ["fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]
    return (batch + (m, n),), {"ord": draw(st.sampled_from(ords)), "keepdims": draw(st.booleans())}


@st.composite
def _triangle_draw(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3).map(tuple))
    return (shape,), {"k": draw(st.integers(-2, 2))}


# -- the functions under test and their NumPy references ------------------------------------------------------
def _solve(a, b):
    return la.solve(dominant(a), b)


def _solve_ref(a, b):
    return np.linalg.solve(dominant(a), b)


def _triangular(a, b, **k):
    return la.solve_triangular(dominant(a), b, **k)


def _triangular_ref(a, b, lower=False, trans=0, unit_diagonal=False):
    t = np.tril(dominant(a)) if lower else np.triu(dominant(a))
    if unit_diagonal:
        eye = np.eye(t.shape[-1], dtype=t.dtype)
        t = t - t * eye + eye
    if trans in (1, "T"):
        t = np.swapaxes(t, -1, -2)
    elif trans in (2, "C"):
        t = np.conj(np.swapaxes(t, -1, -2))
    return np.linalg.solve(t, b)


# Ops with several outputs (``Op.outputs``) run with ``use=``: "all" reads every output, "values" and "vectors"
# one of them (the other's cotangent is None in the rule), "reused" reads each output twice.
def _eigh(a, UPLO="L", use="all"):
    w, v = la.eigh(hermitian(a), UPLO=UPLO)
    return _used(tg, w, _abs2(v), use)


def _eigh_ref(a, UPLO="L", use="all"):
    w, v = np.linalg.eigh(hermitian(a), UPLO=UPLO)
    return _used(np, w, _abs2(v), use)


def _used(xp, values, vectors, use):
    """What a row of an op with several outputs reads of them: values (..., n) and vectors (..., n, n)."""
    if use == "values":
        return values
    if use == "vectors":
        return vectors
    if use == "reused":
        values, vectors = values * values + values, vectors * vectors + vectors
    return xp.concatenate([xp.expand_dims(values, -2), vectors], axis=-2)


def _eig(a, build="separated"):
    # LAPACK's order of the eigenvalues can jump under a small change of the matrix: check functions of the
    # spectrum that do not depend on it (power sums, and |V|^2 weighted by the eigenvalues), nor on the phases
    w, v = la.eig(separated(a) if build == "separated" else rotating(a))
    n = a.shape[-1]
    sums = [tg.sum(w ** (j + 1), axis=-1, keepdims=True) for j in range(n)]
    weighted = tg.squeeze(tg.matmul(v * tg.conj(v), tg.expand_dims(w, -1)), -1)
    return parts(tg.concatenate(sums + [weighted], axis=-1))


def _eig_ref(a, build="separated"):
    w, v = np.linalg.eig(separated(a) if build == "separated" else rotating(a))
    n = a.shape[-1]
    sums = [np.sum(w ** (j + 1), axis=-1, keepdims=True) for j in range(n)]
    weighted = ((v * np.conj(v)) @ w[..., None])[..., 0]
    return parts(np.concatenate(sums + [weighted], axis=-1).astype(np.result_type(a.dtype, np.complex64)))


def _svd(a, full_matrices=False, use="all"):
    u, s, vh = la.svd(separated(a), full_matrices=full_matrices)
    if use == "values":
        return s
    k = s.shape[-1]
    return tg.concatenate(
        [
            s,
            tg.reshape(_abs2(u[..., :, :k]), tuple(u.shape[:-2]) + (-1,)),
            tg.reshape(_abs2(vh[..., :k, :]), tuple(u.shape[:-2]) + (-1,)),
        ],
        axis=-1,
    )


def _svd_ref(a, full_matrices=False, use="all"):
    u, s, vh = np.linalg.svd(separated(a), full_matrices=full_matrices)
    if use == "values":
        return s
    k = s.shape[-1]
    batch = u.shape[:-2]
    return np.concatenate(
        [s, _abs2(u[..., :, :k]).reshape(batch + (-1,)), _abs2(vh[..., :k, :]).reshape(batch + (-1,))], axis=-1
    )


def _qr_invariant(q, r, m, n, diagonal):
    # Q and R are unique up to the signs of R's diagonal, and LAPACK's choice jumps where a column below the
    # diagonal is exactly 0: check Q scaled by diag(R) and R divided by it, which do not depend on the signs
    k = min(m, n)
    q, r = q[..., :, :k], r[..., :k, :]
    d = diagonal(r[..., :, :k])
    expand = tg.expand_dims if isinstance(q, tg.Tensor) else np.expand_dims
    return _cat([q * expand(d, -2), r / expand(d, -1)])


def _qr(a, mode="reduced"):
    q, r = la.qr(separated(a), mode=mode)
    return _qr_invariant(q, r, *a.shape[-2:], lambda t: tg.sum(tg.tril(tg.triu(t)), axis=-2))


def _qr_ref(a, mode="reduced"):
    q, r = np.linalg.qr(separated(a), mode=mode)
    return _qr_invariant(q, r, *a.shape[-2:], lambda t: np.diagonal(t, axis1=-2, axis2=-1))


def _pivoted(a):
    """dominant(a) with its rows reversed: LU's partial pivoting swaps them back (P is not the identity)."""
    d = dominant(a)
    return tg.flip(d, axis=-2) if isinstance(d, tg.Tensor) else np.flip(d, axis=-2)


def _lu(a, use="all"):
    p, lower, upper = la.lu(_pivoted(a))
    return _lu_used(tg, p, lower, upper, use)


def _lu_ref(a, use="all"):
    m = _pivoted(a)
    flat = m.reshape((-1,) + m.shape[-2:])
    p, lower, upper = (np.stack(f).reshape(m.shape) for f in zip(*(_scipy().lu(x) for x in flat)))
    return _lu_used(np, p, lower, upper, use)


def _lu_used(xp, p, lower, upper, use):
    if use == "L":
        return lower
    if use == "U":
        return upper
    if use == "reused":  # each factor twice, P too (it gets no gradient)
        return xp.matmul(p, xp.matmul(lower, upper)) + lower * upper + lower
    return xp.concatenate([lower, upper], axis=-1)


def _scipy():
    import scipy.linalg  # only the references of expm and logm need SciPy

    return scipy.linalg


def _vector_norm_draw():
    return _norm_shapes()


_SQUARE_EXAMPLES = ((((3, 3),), {}), (((2, 3, 3),), {}))

ROWS = (
    OpCase(
        "solve",
        _solve,
        _solve_ref,
        examples=(
            (((3, 3), (3,)), {}),
            (((3, 3), (3, 2)), {}),
            (((2, 3, 3), (3,)), {}),
            (((2, 3, 3), (1, 3, 2)), {}),
            (((1, 3, 3), (2, 3, 1)), {}),
        ),
        draw=_draw_solve,
    ),
    OpCase(
        "inv",
        lambda a: la.inv(dominant(a)),
        lambda a: np.linalg.inv(dominant(a)),
        examples=_SQUARE_EXAMPLES,
        draw=_one_matrix(),
    ),
    OpCase(
        "det",
        lambda a: la.det(dominant(a)),
        lambda a: np.linalg.det(dominant(a)),
        examples=_SQUARE_EXAMPLES,
        draw=_one_matrix(),
    ),
    OpCase(
        "slogdet",
        lambda a, sign=1.0: la.slogdet(dominant(a) * sign).logabsdet,
        lambda a, sign=1.0: np.linalg.slogdet(dominant(a) * sign).logabsdet,
        examples=((((3, 3),), {}), (((2, 3, 3),), {"sign": -1.0})),
        draw=_one_matrix(sign=[1.0, -1.0]),
    ),
    OpCase(
        "cholesky",
        lambda a, upper=False: la.cholesky(spd(a), upper=upper),
        lambda a, upper=False: np.linalg.cholesky(spd(a), upper=upper),
        examples=((((3, 3),), {}), (((2, 3, 3),), {"upper": True}), (((3, 2),), {})),
        draw=_one_matrix(square=False, upper=[False, True]),
    ),
    OpCase(
        "solve_triangular",
        _triangular,
        _triangular_ref,
        examples=(
            (((3, 3), (3,)), {"lower": True}),
            (((2, 3, 3), (3, 2)), {"trans": "T", "unit_diagonal": True}),
            (((3, 3), (2, 3, 1)), {"lower": True, "trans": 2}),
        ),
        draw=lambda: _triangular_shapes(),
    ),
    OpCase(
        "eigh",
        _eigh,
        _eigh_ref,
        examples=(
            (((3, 3),), {}),
            (((2, 3, 3),), {"UPLO": "U"}),
            (((2, 3, 3),), {"use": "values"}),
            (((3, 3),), {"use": "vectors"}),
            (((2, 3, 3),), {"use": "reused"}),
        ),
        draw=_one_matrix(UPLO=["L", "U"], use=["all", "values", "vectors", "reused"]),
    ),
    OpCase(
        "eig",
        _eig,
        _eig_ref,
        examples=((((3, 3),), {}), (((2, 3, 3),), {"build": "rotating"})),
        draw=_one_matrix(build=["separated", "rotating"]),
    ),
    OpCase(
        "svd",
        _svd,
        _svd_ref,
        examples=(
            (((3, 3),), {}),
            (((2, 4, 3),), {}),
            (((3, 2),), {"full_matrices": True}),
            (((2, 3),), {}),
            (((2, 4, 3),), {"use": "values", "full_matrices": True}),
        ),
        draw=_one_matrix(square=False, full_matrices=[False, True], use=["all", "values"]),
    ),
    OpCase(
        "lu",
        _lu,
        _lu_ref,
        examples=(
            (((3, 3),), {}),
            (((2, 3, 3),), {"use": "L"}),
            (((2, 1, 3, 3),), {"use": "U"}),
            (((3, 3),), {"use": "reused"}),
        ),
        draw=_one_matrix(use=["all", "L", "U", "reused"]),
        unsupported=NO_SCIPY_BACKENDS,
    ),
    OpCase(
        "qr",
        _qr,
        _qr_ref,
        examples=(
            (((3, 3),), {}),
            (((2, 4, 3),), {}),
            (((2, 3),), {"mode": "complete"}),
            (((3, 2),), {"mode": "complete"}),
        ),
        draw=_one_matrix(square=False, mode=["reduced", "complete"]),
    ),
    OpCase(
        "pinv",
        lambda a: la.pinv(separated(a)),
        lambda a: np.linalg.pinv(separated(a)),
        examples=((((3, 3),), {}), (((2, 4, 3),), {}), (((2, 3),), {})),
        draw=_one_matrix(square=False),
    ),
    OpCase(
        "vector_norm",
        lambda x, ord=2, axis=None, keepdims=False: la.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims),
        lambda x, ord=2, axis=None, keepdims=False: np.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims),
        domain="nonzero",
        examples=(
            (((3, 4),), {}),
            (((2, 3, 4),), {"ord": 1, "axis": 1}),
            (((3, 4),), {"ord": 3.0, "axis": (0, 1), "keepdims": True}),
        ),
        draw=_vector_norm_draw,
    ),
    OpCase(
        "vector_norm",  # the maximum and minimum of |x|: shifted so that |x| has no ties
        lambda x, ord=np.inf, axis=-1: la.vector_norm(x + 3.0, ord=ord, axis=axis),
        lambda x, ord=np.inf, axis=-1: np.linalg.vector_norm(x + 3.0, ord=ord, axis=axis),
        domain="distinct",
        examples=((((3, 4),), {}), (((2, 3),), {"ord": -np.inf, "axis": 0})),
        draw=lambda: st.tuples(
            st.tuples(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)), _kw(ord=[np.inf, -np.inf])
        ),
    ),
    OpCase(
        "expm",
        lambda a: la.expm(a * 0.5),
        lambda a: _scipy().expm(a * 0.5),
        examples=_SQUARE_EXAMPLES,
        draw=_one_matrix(),
        unsupported=NO_SCIPY_BACKENDS,
    ),
    OpCase(
        "logm",
        lambda a: la.logm(dominant(a * 0.1)),
        lambda a: _scipy().logm(dominant(a * 0.1).astype(np.float64)).astype(a.dtype),
        examples=((((2, 2),), {}), (((2, 2, 2),), {})),  # SciPy's logm is slow: small matrices
        draw=_one_matrix(batch=False),  # and one at a time
        unsupported=NO_SCIPY_BACKENDS,
    ),
    OpCase("tril", ref=np.tril, examples=((((3, 4),), {}), (((2, 3, 3),), {"k": -1})), draw=_triangle_draw),
    OpCase("triu", ref=np.triu, examples=((((3, 4),), {}), (((2, 3, 3),), {"k": 1})), draw=_triangle_draw),
)
