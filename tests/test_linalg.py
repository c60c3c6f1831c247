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


def test_eigenvectors_at_degenerate_eigenvalues_raise_unless_the_loss_ignores_the_basis():
    with pytest.raises(ValueError, match="eigh: the matrix has degenerate eigenvalues"):
        tg.grad(lambda a: la.eigh(a).eigenvectors[1, 0])(DEGENERATE)  # turns with the basis of the pair

    # the projector onto the degenerate eigenspace does not depend on the basis: its gradient exists
    def projector(a):
        v = la.eigh(a).eigenvectors[:, :2]
        return (v @ v.T * np.arange(9.0).reshape(3, 3)).sum()

    g = tg.grad(projector)(DEGENERATE)
    assert np.all(np.isfinite(g))
    eps, e = 1e-6, RNG.standard_normal((3, 3))
    e = e + e.T
    fd = (projector(tg.Tensor(DEGENERATE + eps * e)).item() - projector(tg.Tensor(DEGENERATE - eps * e)).item()) / (
        2 * eps
    )
    np.testing.assert_allclose(np.sum(np.tril(g) * e), fd, atol=1e-6)  # only the lower triangle is read


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
