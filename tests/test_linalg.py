"""tapegrad.linalg beyond the op table: PyTorch's values and gradients, NumPy's semantics (batched b, the
triangle that is read), what happens where a derivative does not exist (degenerate eigenvalues, phases,
arbitrary complements, rank), the gradient of norms at 0, the fallback without SciPy, second derivatives
through the rules of other ops, and float32 kept float32. The op table (tests/op_rows_linalg.py) checks every
op against finite differences, first and second order, on every backend."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import linalg as la

RNG = np.random.default_rng(7)
A = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
SPD = A @ np.swapaxes(A, -1, -2) + 3 * np.eye(3)
TALL = RNG.standard_normal((2, 4, 3))


def _sym(a):
    """a a^T + 3 I, for a tapegrad or a torch tensor."""
    if isinstance(a, tg.Tensor):
        return a @ tg.swapaxes(a, -1, -2) + 3.0 * np.eye(3)
    return a @ a.mT + 3.0 * a.new_tensor(np.eye(3))


# -- PyTorch -----------------------------------------------------------------------------------------------
TORCH_CASES = {
    "solve": (lambda a: la.solve(a, A[0, :, :2]), lambda t, a: t.linalg.solve(a, t.tensor(A[0, :, :2])), A),
    "inv": (la.inv, lambda t, a: t.linalg.inv(a), A),
    "det": (la.det, lambda t, a: t.linalg.det(a), A),
    "slogdet": (lambda a: la.slogdet(a).logabsdet, lambda t, a: t.linalg.slogdet(a).logabsdet, -A),
    # torch's gradients of cholesky and eigh are symmetric, tapegrad's read one triangle as NumPy does: compare
    # them through a symmetric construction, where the chain rule makes them agree
    "cholesky": (lambda a: la.cholesky(_sym(a)), lambda t, a: t.linalg.cholesky(_sym(a)), A),
    "cholesky_upper": (
        lambda a: la.cholesky(_sym(a), upper=True),
        lambda t, a: t.linalg.cholesky(_sym(a), upper=True),
        A,
    ),
    "eigvalsh": (lambda a: la.eigvalsh(_sym(a)), lambda t, a: t.linalg.eigvalsh(_sym(a)), A),
    "eigh_vectors": (
        lambda a: la.eigh(_sym(a)).eigenvectors ** 2,
        lambda t, a: t.linalg.eigh(_sym(a)).eigenvectors ** 2,
        A,
    ),
    "svdvals": (la.svdvals, lambda t, a: t.linalg.svdvals(a), TALL),
    "svd_vectors": (
        lambda a: la.svd(a, full_matrices=False).U ** 2,
        lambda t, a: t.linalg.svd(a, full_matrices=False).U ** 2,
        TALL,
    ),
    "qr": (lambda a: la.qr(a).R, lambda t, a: t.linalg.qr(a).R, TALL),
    "pinv": (la.pinv, lambda t, a: t.linalg.pinv(a), TALL),
    "lstsq": (
        lambda a: la.lstsq(a[0], TALL[1, :, :2])[0],
        lambda t, a: t.linalg.lstsq(a[0], t.tensor(TALL[1, :, :2])).solution,
        TALL,
    ),
    "matrix_power": (lambda a: la.matrix_power(a, -3), lambda t, a: t.linalg.matrix_power(a, -3), A),
    "expm": (lambda a: la.expm(a * 0.3), lambda t, a: t.linalg.matrix_exp(a * 0.3), A),
    "multi_dot": (
        lambda a: la.multi_dot([a[0], a[1], a[0]]),
        lambda t, a: t.linalg.multi_dot([a[0], a[1], a[0]]),
        A,
    ),
    "cross": (lambda a: la.cross(a, a**2), lambda t, a: t.linalg.cross(a, a**2), A),
    "norm_fro": (la.norm, lambda t, a: t.linalg.norm(a), A),
    "norm_nuc": (lambda a: la.norm(a, "nuc", axis=(1, 2)), lambda t, a: t.linalg.norm(a, "nuc", dim=(1, 2)), A),
    "norm_2": (lambda a: la.matrix_norm(a, ord=2), lambda t, a: t.linalg.matrix_norm(a, ord=2), A),
    "norm_-2": (lambda a: la.matrix_norm(a, ord=-2), lambda t, a: t.linalg.matrix_norm(a, ord=-2), A),
    "norm_1": (lambda a: la.matrix_norm(a, ord=1), lambda t, a: t.linalg.matrix_norm(a, ord=1), A),
    "norm_inf": (lambda a: la.matrix_norm(a, ord=np.inf), lambda t, a: t.linalg.matrix_norm(a, ord=float("inf")), A),
    "vector_norm_3": (
        lambda a: la.vector_norm(a, ord=3, axis=1),
        lambda t, a: t.linalg.vector_norm(a, ord=3, dim=1),
        A,
    ),
    "vector_norm_inf": (
        lambda a: la.vector_norm(a, ord=np.inf, axis=-1),
        lambda t, a: t.linalg.vector_norm(a, ord=float("inf"), dim=-1),
        A,
    ),
    "tensorinv": (lambda a: la.tensorinv(a[0], ind=1), lambda t, a: t.linalg.tensorinv(a[0], ind=1), A),
    "tensorsolve": (
        lambda a: la.tensorsolve(a[0], A[1, 0]),
        lambda t, a: t.linalg.tensorsolve(a[0], t.tensor(A[1, 0])),
        A,
    ),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs, a = TORCH_CASES[name]
    t = torch.tensor(a, requires_grad=True)
    out_t = theirs(torch, t)
    w = RNG.standard_normal(tuple(out_t.shape))
    (out_t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours(tg.Tensor(a)).numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.grad(lambda a: (ours(a) * w).sum())(a), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_complex_eig_matches_torch_as_the_conjugate():
    torch = pytest.importorskip("torch")
    a = A[0] + 1j * RNG.standard_normal((3, 3))
    w = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    t = torch.tensor(a, requires_grad=True)
    vals, vecs = torch.linalg.eig(t)
    order = np.argsort(vals.detach().numpy().real)
    (torch.real(vals[order] * torch.tensor(w)) + vecs.abs().sum(0)[order]).sum().backward()
    ours = la.eig(tg.Tensor(a))
    mine_order = np.argsort(ours.eigenvalues.data.real)
    np.testing.assert_allclose(ours.eigenvalues.data[mine_order], vals.detach().numpy()[order], rtol=1e-10)

    def loss(m):
        v, V = la.eig(m)
        return (tg.real(v[mine_order] * w) + tg.absolute(V).sum(axis=0)[mine_order]).sum()

    np.testing.assert_allclose(tg.grad(loss)(a), np.conj(t.grad.numpy()), rtol=1e-8, atol=1e-10)


# -- NumPy's semantics ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("product", ["x @ W.T", "W.T @ h"])
def test_a_transposed_operand_gets_its_gradient_in_its_own_layout(product, batch):
    # The product's rule computes a transposed operand's gradient transposed ((g^T x)^T, as PyTorch's does), so
    # W (used as W.T, as every nn.Linear does) gets it laid out as W is, with no copy across the rows; the
    # values are the product's rule's, against finite differences and against the plain NumPy formula
    rng = np.random.default_rng(0)
    x, h, W = (rng.standard_normal(batch + s) for s in ((3, 4), (5, 3), (5, 4)))
    f = (lambda W: tg.Tensor(x) @ W.mT) if product == "x @ W.T" else (lambda W: W.mT @ tg.Tensor(h))
    assert tg.gradcheck(lambda W: f(W) ** 2, W)
    assert tg.gradcheck(lambda W: tg.grad(lambda W: (f(W) ** 3).sum())(W), W)  # second derivatives
    w = tg.Tensor(W, requires_grad=True)
    with tg.record():
        out = f(w)
        loss = (out**2).sum()
    loss.backward()
    g = 2 * out.data
    expected = np.swapaxes(g, -1, -2) @ x if product == "x @ W.T" else h @ np.swapaxes(g, -1, -2)
    np.testing.assert_allclose(w.grad, expected, rtol=1e-12)
    assert w.grad.strides == W.strides


@pytest.mark.parametrize("operand", [0, 1])
def test_the_products_rule_gives_a_transposed_operand_its_gradient_in_its_layout(operand):
    # (g^T x)^T rather than x^T g: W's gradient through W.T then needs a straight copy into W's layout, not one
    # across its rows (which costs half the product at 784 x 512); on a C-ordered operand, C-ordered as before
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((6, 5)), rng.standard_normal((5, 4))
    g = rng.standard_normal((6, 4))
    rule = tg.matmul.op.vjps[operand]
    for a, b in ((x, y), (np.asfortranarray(x), np.asfortranarray(y))):
        got = rule(np, g, None, a, b)
        want = g @ b.T if operand == 0 else a.T @ g
        np.testing.assert_allclose(got, want, rtol=1e-13)
        assert got.strides == (a, b)[operand].strides


def test_solve_takes_b_as_a_vector_only_when_it_is_1d():
    a = tg.Tensor(A)
    b = RNG.standard_normal(3)
    np.testing.assert_allclose(la.solve(a, b).numpy(), np.linalg.solve(A, b))  # (2, 3): b for each batch
    assert la.solve(a, tg.Tensor(RNG.standard_normal((3, 4)))).shape == (2, 3, 4)
    assert la.solve(a, tg.Tensor(RNG.standard_normal((1, 3, 1)))).shape == (2, 3, 1)
    with pytest.raises(ValueError, match=r"b\[\.\.\., None\]"):
        la.solve(a, tg.Tensor(RNG.standard_normal((2, 3))))  # a stack of vectors is (..., n, 1), as in NumPy 2
    # the batch axes broadcast, and the gradient is summed back to b's shape
    g = tg.grad(lambda b: la.solve(a, b).sum())(b)
    np.testing.assert_allclose(
        g, np.linalg.solve(np.swapaxes(A, -1, -2), np.ones((2, 3, 1)))[..., 0].sum(0), rtol=1e-12
    )


def test_cholesky_and_eigh_read_one_triangle_and_give_its_gradient():
    upper_changed = SPD[0] + np.triu(np.ones((3, 3)), 1)  # the upper triangle is never read
    np.testing.assert_array_equal(la.cholesky(tg.Tensor(upper_changed)).numpy(), np.linalg.cholesky(SPD[0]))
    g = tg.grad(lambda a: la.cholesky(a).sum())(upper_changed)
    assert np.all(np.triu(g, 1) == 0)
    g = tg.grad(lambda a: la.eigvalsh(a, UPLO="U")[-1])(SPD[0])
    assert np.all(np.tril(g, -1) == 0)
    # through a symmetric construction the chain rule gives the symmetric (Hermitian) gradient
    x = RNG.standard_normal((3, 3))
    g_tri = tg.grad(lambda x: la.eigvalsh(x @ x.T)[-1])(x)
    _, v = np.linalg.eigh(x @ x.T)
    np.testing.assert_allclose(g_tri, 2 * np.outer(v[:, -1], v[:, -1]) @ x, rtol=1e-10)


def test_eig_is_always_complex_and_float32_stays_single_precision():
    w, v = la.eig(tg.Tensor(np.diag([1.0, 2.0])))
    assert w.dtype == np.complex128 and v.dtype == np.complex128  # NumPy would give float64 here
    a32 = SPD.astype(np.float32)
    for f in [la.inv, la.cholesky, la.eigvalsh, la.svdvals, la.det, la.pinv, la.expm, la.logm, la.norm]:
        x = tg.Tensor(a32, requires_grad=True)
        with tg.tape.record():
            y = f(x).sum()
        y.backward()
        assert y.dtype == np.float32 and x.grad.dtype == np.float32, f.__name__
    assert la.eig(tg.Tensor(a32)).eigenvalues.dtype == np.complex64


def test_errors_name_the_function_and_the_shape():
    with pytest.raises(np.linalg.LinAlgError, match=r"inv: needs square matrices .* \(2, 3\)"):
        la.inv(tg.Tensor(np.ones((2, 3))))
    with pytest.raises(np.linalg.LinAlgError, match="cholesky: needs a matrix"):
        la.cholesky(tg.Tensor(np.ones(3)))
    with pytest.raises(ValueError, match="eigh: UPLO"):
        la.eigh(tg.Tensor(SPD), UPLO="X")
    with pytest.raises(ValueError, match="qr: mode"):
        la.qr(tg.Tensor(SPD), mode="raw")
    with pytest.raises(ValueError, match="matrix_norm: ord"):
        la.matrix_norm(tg.Tensor(SPD), ord=3)
    with pytest.raises(ValueError, match="vector_norm: ord"):
        la.vector_norm(tg.Tensor(SPD), ord="fro")


# -- where the derivative does not exist -----------------------------------------------------------------------
DEGENERATE = np.diag([1.0, 1.0, 3.0])


def test_eigvalsh_and_svdvals_are_exact_at_repeated_values():
    # d lambda_k / dA = v_k v_k^T; summed over a repeated pair it is the projector on its eigenspace
    g = tg.grad(lambda a: la.eigvalsh(a)[:2].sum())(DEGENERATE)
    np.testing.assert_allclose(g, np.diag([1.0, 1.0, 0.0]), atol=1e-12)
    g = tg.grad(lambda a: la.svdvals(a).sum())(np.eye(3))  # the nuclear norm at the identity: the identity
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    assert tg.gradcheck(lambda a: la.eigvalsh(a).sum(), DEGENERATE + 0.1 * np.ones((3, 3)))


def _rotated(values, m, n, seed=0):
    """Q1 [diag(values); 0] Q2^T: an m x n matrix with exactly those singular values, in random bases."""
    rng = np.random.default_rng(seed)
    q1, q2 = np.linalg.qr(rng.standard_normal((m, m)))[0], np.linalg.qr(rng.standard_normal((n, n)))[0]
    core = np.zeros((m, n))
    core[np.arange(len(values)), np.arange(len(values))] = values
    return q1 @ core @ q2.T


def _svd_reconstruction(w, full_matrices):
    def loss(a):
        u, s, vh = la.svd(a, full_matrices=full_matrices)
        k = s.shape[-1]
        return tg.sum(w * (u[..., :, :k] @ (s[..., :, None] * vh[..., :k, :])))  # sum(W * A)

    return loss


def _eigh_reconstruction(w):
    def loss(a):
        values, v = la.eigh(a)
        return tg.sum(w * (v @ (values[:, None] * v.T)))  # sum(W * A), A read from its lower triangle

    return loss


def _lower_read(w):
    """The gradient of sum(W * A) for the A eigh reconstructs from the lower triangle of its input."""
    return np.tril(w + w.T, -1) + np.diag(np.diag(w))


SVD_SHAPES = [(3, 3, (2.0, 2.0, 1.0)), (4, 3, (2.0, 2.0, 1.0)), (3, 4, (1.0, 1.0, 1.0)), (4, 4, (3.0, 1.0, 1.0, 1.0))]


@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("m,n,values", SVD_SHAPES, ids=["square", "tall", "wide", "square-triple"])
def test_the_reconstruction_through_svd_is_exact_where_the_values_split_and_refused_where_they_repeat(
    m, n, values, full_matrices
):
    w = np.random.default_rng(1).standard_normal((m, n))
    loss = _svd_reconstruction(w, full_matrices)
    for split in (1e-3, 1e-6):  # apart by more than sqrt(eps): the rule is exact, to about eps / split
        spread = np.array(values) * (1 + split * np.arange(len(values)))
        np.testing.assert_allclose(tg.grad(loss)(_rotated(spread, m, n)), w, atol=1e-12 / split)
    # repeated exactly: U diag(S) Vh is A, yet its gradient there is not a function of the cotangents (below)
    with pytest.raises(ValueError, match="svd: the matrix has repeated singular values, and the loss reads"):
        tg.grad(loss)(_rotated(values, m, n))


@pytest.mark.parametrize("values", [(2.0, 2.0, 1.0), (1.0, 1.0, 1.0), (-1.0, 3.0, 3.0)], ids=["pair", "eye", "top"])
def test_the_reconstruction_through_eigh_is_exact_where_the_values_split_and_refused_where_they_repeat(values):
    w = np.random.default_rng(2).standard_normal((3, 3))
    q = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))[0]
    for split in (1e-3, 1e-6):
        spread = np.array(values) + split * np.arange(3)
        np.testing.assert_allclose(tg.grad(_eigh_reconstruction(w))(q @ np.diag(spread) @ q.T), _lower_read(w),
                                   atol=1e-12 / split)  # fmt: skip
    with pytest.raises(ValueError, match="eigh: the matrix has repeated eigenvalues, and the loss reads"):
        tg.grad(_eigh_reconstruction(w))(q @ np.diag(values) @ q.T)


def test_at_a_repeated_value_two_basis_independent_losses_give_the_same_cotangents_and_different_gradients():
    # Why the rules refuse: at the identity, sum(W * V diag(w) V^T) = sum(W * A) and
    # sum(W * V diag(w)^2 V^T) = sum(W * A @ A) hand eigh the same cotangents (W symmetric, 0 on its diagonal)
    # and have the gradients W and 2 W; the same for U diag(s) Vh and U diag(s)^2 Vh = A (A^T A)^(1/2) in svd.
    w = np.array([[0.0, 1.0, -2.0], [1.0, 0.0, 0.5], [-2.0, 0.5, 0.0]])
    values, vectors = np.linalg.eigh(np.eye(3))
    cotangents = []
    for p in (1, 2):
        _, back = tg.vjp(lambda lam, v, p=p: tg.sum(w * (v @ (lam[:, None] ** p * v.T))), values, vectors)
        cotangents.append(back(np.array(1.0)))
    for a, b in zip(*cotangents):
        np.testing.assert_array_equal(a, b)
    eps, e = 1e-6, np.random.default_rng(4).standard_normal((3, 3))
    for p, scale in ((1, 1.0), (2, 2.0)):
        f = lambda a, p=p: np.sum(w * np.linalg.matrix_power(a, p))  # noqa: E731
        fd = (f(np.eye(3) + eps * e) - f(np.eye(3) - eps * e)) / (2 * eps)
        np.testing.assert_allclose(fd, scale * np.sum(w * e), rtol=1e-8)  # gradients W and 2 W
    u, s, vh = np.linalg.svd(np.eye(3))
    cotangents = []
    for p in (1, 2):
        _, back = tg.vjp(lambda u, s, vh, p=p: tg.sum(w * (u @ (s[:, None] ** p * vh))), u, s, vh)
        cotangents.append(back(np.array(1.0)))
    for a, b in zip(*cotangents):
        np.testing.assert_array_equal(a, b)


def test_a_loss_that_turns_with_the_basis_of_a_repeated_value_is_refused():
    with pytest.raises(ValueError, match="eigh: the matrix has repeated eigenvalues, and the loss depends on the"):
        tg.grad(lambda a: la.eigh(a).eigenvectors[1, 0])(DEGENERATE)
    with pytest.raises(ValueError, match="svd: the matrix has repeated singular values, and the loss depends on"):
        tg.grad(lambda a: la.svd(a).U[0, 1] ** 2)(_rotated((2.0, 2.0, 1.0), 3, 3))

    # the projector onto the repeated eigenspace does not turn with the basis, but reads its vectors: refused
    def projector(a):
        v = la.eigh(a).eigenvectors[:, :2]
        return (v @ v.T * np.arange(9.0).reshape(3, 3)).sum()

    with pytest.raises(ValueError, match="eigh: the matrix has repeated eigenvalues, and the loss reads"):
        tg.grad(projector)(DEGENERATE)


def test_the_vectors_of_values_that_do_not_repeat_are_exact_beside_ones_that_do():
    q = np.linalg.qr(np.random.default_rng(5).standard_normal((3, 3)))[0]
    a = q @ np.diag([1.0, 2.0, 2.0]) @ q.T
    assert tg.gradcheck(lambda a: tg.outer(la.eigh(a).eigenvectors[:, 0], la.eigh(a).eigenvectors[:, 0]), a)
    b = _rotated((3.0, 1.0, 1.0), 4, 3)
    assert tg.gradcheck(lambda b: tg.outer(la.svd(b).U[:, 0], la.svd(b).Vh[0]), b)


def test_a_loss_of_the_values_that_tells_repeated_ones_apart_shares_the_cotangent_evenly():
    # the largest eigenvalue at a tie has no derivative: its gradient is the projector's average, whichever
    # basis LAPACK returns (a subgradient, as tied maxima share theirs)
    q = np.linalg.qr(np.random.default_rng(6).standard_normal((3, 3)))[0]
    a = q @ np.diag([1.0, 3.0, 3.0]) @ q.T
    projector = q[:, 1:] @ q[:, 1:].T
    np.testing.assert_allclose(tg.grad(lambda a: la.eigvalsh(a)[-1])(a), _lower_read(projector / 2), atol=1e-12)
    np.testing.assert_allclose(tg.grad(lambda a: la.svdvals(a)[0])(np.eye(2)), np.eye(2) / 2, atol=1e-12)


def test_the_vectors_of_the_nonzero_singular_values_of_a_rank_deficient_matrix_are_exact():
    b = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])  # rank 1
    assert tg.gradcheck(lambda b: la.svd(b, full_matrices=False).U[:, 0] ** 2, b)
    with pytest.raises(ValueError, match="svd: the loss depends on the singular vectors of a rank-deficient"):
        tg.grad(lambda b: (la.svd(b, full_matrices=False).U[:, 1] ** 2 * np.arange(3.0)).sum())(b)


def test_a_loss_that_depends_on_the_phase_of_complex_vectors_raises():
    h = SPD[0] + 1j * (np.triu(np.ones((3, 3)), 1) - np.tril(np.ones((3, 3)), -1))
    with pytest.raises(ValueError, match="phase"):
        tg.grad(lambda a: tg.real(la.eigh(a).eigenvectors[0, 0] * (1 + 1j)))(h)
    with pytest.raises(ValueError, match="phase"):
        tg.grad(lambda a: tg.real(la.svd(a).U[0, 0] * (1 + 1j)))(h)
    assert np.all(np.isfinite(tg.grad(lambda a: tg.absolute(la.eigh(a).eigenvectors[0, 0]))(h)))


def test_the_arbitrary_columns_of_full_factors_raise():
    with pytest.raises(ValueError, match="svd: the loss depends on the columns of U beyond"):
        tg.grad(lambda a: (la.svd(a, full_matrices=True).U ** 2)[..., -1].sum())(TALL)
    assert np.all(np.isfinite(tg.grad(lambda a: la.svd(a, full_matrices=True).S.sum())(TALL)))
    with pytest.raises(ValueError, match="qr: the loss depends on the columns of Q beyond"):
        tg.grad(lambda a: la.qr(a, mode="complete").Q[..., -1].sum())(TALL)
    g = tg.grad(lambda a: la.qr(a, mode="complete").R.sum())(TALL)
    np.testing.assert_allclose(g, tg.grad(lambda a: la.qr(a).R.sum())(TALL), rtol=1e-12)


# -- singular matrices: det's cofactor matrix, slogdet's refusal, and every rule that solves ----------------------
def _cofactors(a):
    """The cofactor matrix from its definition, (-1)^(i+j) times the minors (any rank, any dtype)."""
    n = a.shape[-1]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, -2), j, -1))
    return out


_R = np.random.default_rng(11)
RANK_1 = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
SINGULAR = {
    "jax-example": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "rank-3-of-4": _R.standard_normal((4, 3)) @ _R.standard_normal((3, 4)),
    "rank-2-of-4": _R.standard_normal((4, 2)) @ _R.standard_normal((2, 4)),
    "zero": np.zeros((3, 3)),
    "batch": np.stack([np.eye(3), np.diag([1.0, 2.0, 0.0]), np.ones((3, 3))]),
    "complex": (_R.standard_normal((3, 2)) + 1j * _R.standard_normal((3, 2))) @ _R.standard_normal((2, 3)),
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_the_gradient_of_det_at_a_singular_matrix_is_the_cofactor_matrix(name):
    a = SINGULAR[name]
    np.testing.assert_allclose(tg.grad(lambda a: tg.real(la.det(a)).sum())(a), _cofactors(a), atol=1e-13)
    assert tg.gradcheck(la.det, a)  # det is a polynomial: finite differences agree at any rank


def test_the_gradient_of_det_at_a_singular_matrix_is_what_jax_gives_in_either_precision():
    for dtype in (np.float64, np.float32):
        g = tg.grad(la.det)(np.array([[1.0, 2.0], [2.0, 4.0]], dtype=dtype))
        assert g.dtype == dtype
        np.testing.assert_allclose(g, [[4.0, -2.0], [-2.0, 1.0]], rtol=1e-6)


def test_second_derivatives_of_det_at_a_singular_matrix_are_exact_at_rank_n_minus_1_and_refused_below():
    for a in (SINGULAR["jax-example"], SINGULAR["rank-3-of-4"], np.diag([1.0, 1.0, 0.0])):
        assert tg.gradgradcheck(la.det, a)
    for name in ("rank-2-of-4", "zero", "complex"):
        with pytest.raises(ValueError, match="det: second derivatives at a singular matrix"):
            tg.hessian(lambda a: tg.real(la.det(a)))(SINGULAR[name])


def test_slogdet_at_a_singular_matrix_refuses_logabsdet_and_gives_a_real_sign_gradient_0():
    a = SINGULAR["jax-example"]
    with pytest.raises(ValueError, match=r"slogdet: the matrix is singular \(det = 0, so logabsdet = -inf\)"):
        tg.grad(lambda a: la.slogdet(a).logabsdet)(a)
    np.testing.assert_array_equal(tg.grad(lambda a: la.slogdet(a).sign)(a), 0)
    with pytest.raises(ValueError, match="slogdet: .* and the phase of det have no derivative"):
        tg.grad(lambda a: tg.real(la.slogdet(a).sign))(np.array([[1.0, 2.0j], [1.0, 2.0j]]))  # LU's pivot: 0
    # a batch whose singular matrix's logabsdet is not read: the others' gradients, exact
    batch = np.stack([SPD[0], np.zeros((3, 3))])
    g = tg.grad(lambda b: la.slogdet(b).logabsdet[0])(batch)
    np.testing.assert_allclose(g[0], np.linalg.inv(SPD[0]).T, rtol=1e-12)
    np.testing.assert_array_equal(g[1], 0)


def _defective():
    return np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 5.0]])  # a Jordan block beside a 5


# Every rule that solves or inverts in its backward (or whose forward does), at a singular or degenerate input:
# either a finite answer (checked against finite differences where it exists) or an error naming the op.
AT_SINGULAR = [
    ("inv", lambda a: la.inv(a), SINGULAR["jax-example"], "inv of inputs"),
    ("solve", lambda a: la.solve(a, np.ones(2)), SINGULAR["jax-example"], "solve of inputs"),
    ("solve-b", lambda b: la.solve(SINGULAR["jax-example"], b), np.ones(2), "solve of inputs"),
    ("det", lambda a: la.det(a), SINGULAR["rank-3-of-4"], None),
    ("slogdet", lambda a: la.slogdet(a).logabsdet, SINGULAR["jax-example"], "slogdet: the matrix is singular"),
    ("cholesky", lambda a: la.cholesky(a), SINGULAR["jax-example"], "cholesky of inputs"),
    ("solve_triangular", lambda a: la.solve_triangular(a, np.ones(2), lower=True), np.diag([1.0, 0.0]) + np.tri(2, k=-1), "solve_triangular of inputs"),
    ("cho_solve", lambda a: la.cho_solve((a, True), np.ones(2)), np.diag([1.0, 0.0]) + np.tri(2, k=-1), "solve_triangular of inputs"),
    ("matrix_power", lambda a: la.matrix_power(a, -2), SINGULAR["jax-example"], "inv of inputs"),
    ("tensorinv", lambda a: la.tensorinv(a, ind=1), SINGULAR["jax-example"], "inv of inputs"),
    ("tensorsolve", lambda a: la.tensorsolve(a, np.ones(2)), SINGULAR["jax-example"], "solve of inputs"),
    ("eig-values", lambda a: tg.real(la.eigvals(a)), _defective(), "eig: the matrix is defective"),
    ("eig-one-value", lambda a: tg.real(la.eigvals(a)[:1]), _defective()[:2, :2], None),  # shared: their mean's
    ("eig-vectors", lambda a: tg.real(la.eig(a).eigenvectors[1, 1]), _defective(), "eig: the matrix is defective"),
    ("eig-trace", lambda a: tg.real(tg.sum(la.eigvals(a))), _defective(), None),
    ("eig-trace-of-3", lambda a: tg.real(tg.sum(la.eigvals(a) * 0.1)), np.diag([2.0, 2.0, 2.0, 5.0]) + np.diag([1.0, 1.0, 0.0], k=1), None),
    ("qr", lambda a: la.qr(a).Q, RANK_1, "qr: the matrix has rank below"),
    ("qr-R", lambda a: la.qr(a).R, RANK_1, "qr: the matrix has rank below"),
    ("svd-zero-vector", lambda a: la.svd(a, full_matrices=False).U[:, 1] ** 2, RANK_1, "svd: the loss depends on the"),
    ("svd-values", lambda a: la.svdvals(a)[:1], RANK_1, None),
    ("logm", lambda a: la.logm(a), SINGULAR["jax-example"], "logm: the matrix is singular"),
    ("pinv", lambda a: la.pinv(a) @ np.ones(2), np.diag([2.0, 0.0]), None),
    ("lstsq", lambda b: la.lstsq(RANK_1, b)[0], np.ones(3), None),
]  # fmt: skip


# pinv keeps its rank along diag(1, 0); a shift moves both eigenvalues of the Jordan block alike
ALONG = {"pinv": np.diag([1.0, 0.0]), "eig-one-value": np.eye(2)}


@pytest.mark.parametrize("name,f,a,message", AT_SINGULAR, ids=[c[0] for c in AT_SINGULAR])
@pytest.mark.filterwarnings("ignore:The logm input matrix is exactly singular")
def test_a_rule_that_solves_at_a_singular_input_is_exact_or_raises_naming_its_op(name, f, a, message):
    def loss(a):
        out = f(a)
        return tg.sum(tg.real(out) * np.arange(1.0, out.size + 1).reshape(out.shape))

    if message is None:
        with np.errstate(all="raise"):  # no NaN or inf on the way
            g = tg.grad(loss)(a)
        assert np.all(np.isfinite(g))
        if name in ALONG:  # differentiable along some directions only
            e = ALONG[name]
            fd = (loss(tg.Tensor(a + 1e-6 * e)).item() - loss(tg.Tensor(a - 1e-6 * e)).item()) / 2e-6
            np.testing.assert_allclose(np.sum(g * e), fd, rtol=1e-6)
        else:
            assert tg.gradcheck(loss, a)
        return
    with pytest.raises(Exception) as info:  # noqa: PT011  (the type varies: LinAlgError, ValueError)
        tg.grad(loss)(a)
    assert str(info.value).startswith(message), str(info.value)


# -- norms at 0 -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "norm,zero",
    [
        (lambda x: la.norm(x), True),
        (lambda x: la.vector_norm(x, ord=1), True),
        (lambda x: la.vector_norm(x, ord=3), True),
        (lambda x: la.vector_norm(x, ord=np.inf), True),
        (lambda x: la.matrix_norm(x, ord="fro"), True),
        (lambda x: la.matrix_norm(x, ord=1), True),
        (lambda x: la.matrix_norm(x, ord="nuc"), False),  # U V^T for the SVD LAPACK gives: a subgradient
        (lambda x: la.matrix_norm(x, ord=2), False),
    ],
    ids=["2", "1", "3", "inf", "fro", "matrix-1", "nuc", "matrix-2"],
)
def test_norms_at_zero_have_a_finite_subgradient(norm, zero):
    with np.errstate(all="raise"):  # no 0/0 anywhere on the way
        g = tg.grad(norm)(np.zeros((3, 3)))
    if zero:
        np.testing.assert_array_equal(g, 0)
    # a subgradient: norm(x) >= norm(0) + <g, x> for every x (the norm is convex)
    for x in RNG.standard_normal((5, 3, 3)):
        assert norm(tg.Tensor(x)).item() >= np.sum(g * x) - 1e-12


def test_the_2_norm_at_zero_has_gradient_zero_and_finite_second_derivatives():
    np.testing.assert_array_equal(tg.grad(lambda x: la.norm(x))(np.zeros(3)), np.zeros(3))
    # |x| is not differentiable at 0, so |x|^2 through it loses its Hessian 2 I there (it is 0, not NaN);
    # write (x * x).sum() for a squared norm. Away from 0 the Hessian is exact.
    assert np.all(tg.hessian(lambda x: la.vector_norm(x) ** 2)(np.zeros(3)) == 0)
    np.testing.assert_allclose(tg.hessian(lambda x: la.vector_norm(x) ** 2)(np.ones(3)), 2 * np.eye(3), atol=1e-12)


def test_the_count_norm_is_a_constant():
    x = tg.Tensor([1.0, 0.0, -2.0], requires_grad=True)
    with tg.tape.record():
        n = la.vector_norm(x, ord=0)
    assert n.item() == 2.0 and not n.requires_grad
    assert la.norm(x, 0).item() == 2.0


# -- without SciPy ----------------------------------------------------------------------------------------------
def test_triangular_solves_fall_back_to_a_solve_without_scipy(monkeypatch):
    lower = np.tril(A) + 2 * np.eye(3)
    b = RNG.standard_normal((3, 2))
    cases = [dict(lower=True), dict(lower=False, trans="T"), dict(lower=True, trans="C", unit_diagonal=True)]
    with_scipy = [
        (
            la.solve_triangular(tg.Tensor(lower), b, **k).numpy(),
            tg.grad(lambda a, k=k: la.solve_triangular(a, b, **k).sum())(lower),
        )
        for k in cases
    ]
    monkeypatch.setattr("tapegrad.ops.linalg.scipy_linalg", lambda: None)
    monkeypatch.setattr("tapegrad.ops.matrix_functions.scipy_linalg", lambda: None)
    for k, (value, grad) in zip(cases, with_scipy):
        np.testing.assert_allclose(la.solve_triangular(tg.Tensor(lower), b, **k).numpy(), value, rtol=1e-12)
        np.testing.assert_allclose(
            tg.grad(lambda a, k=k: la.solve_triangular(a, b, **k).sum())(lower), grad, rtol=1e-10
        )
    np.testing.assert_allclose(
        la.cho_solve((la.cholesky(tg.Tensor(SPD[0])), True), b).numpy(), np.linalg.solve(SPD[0], b), rtol=1e-12
    )
    with pytest.raises(NotImplementedError, match="expm"):
        la.expm(tg.Tensor(SPD))


def test_cho_solve_matches_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    b = RNG.standard_normal((3, 2))
    for lower in (True, False):
        c = la.cholesky(tg.Tensor(SPD[0]), upper=not lower)
        np.testing.assert_allclose(
            la.cho_solve((c, lower), b).numpy(), scipy_linalg.cho_solve((c.numpy(), lower), b), rtol=1e-12
        )
        assert tg.gradcheck(lambda a, lower=lower: la.cho_solve((la.cholesky(a, upper=not lower), lower), b), SPD[0])


# -- second derivatives ------------------------------------------------------------------------------------------
def test_hessian_of_log_det_is_minus_the_kronecker_of_the_inverse():
    # d^2 log det A / dA_ij dA_kl = -inv(A)_li inv(A)_jk
    a = SPD[0]
    h = tg.hessian(lambda a: la.slogdet(a).logabsdet)(a)
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(h, -np.einsum("li,jk->ijkl", inv, inv), rtol=1e-9, atol=1e-12)
