"""The incomplete gamma and beta functions' derivatives in their parameters (tapegrad/ops/_incomplete.py).

Against mpmath where it is installed (relative error 1e-10 over a grid crossing the series/fraction
boundaries), else against central differences of SciPy's own values; then every argument's gradient, first
and second order, by finite differences, through tapegrad.scipy.special and SciPy's ufuncs on tensors.
"""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.ops.special as sp

scipy_special = pytest.importorskip("scipy.special", reason="tapegrad.scipy needs SciPy (the scipy extra)")
special = pytest.importorskip("tapegrad.scipy.special")
from tapegrad.ops._incomplete import betainc_dab, gammainc_da  # noqa: E402

A = np.array([0.1, 0.7, 3.0, 12.0, 50.0])
X = np.array([1e-3, 0.4, 2.5, 13.0, 60.0, 100.0])
B_X = np.array([0.01, 0.3, 0.5, 0.8, 0.99])


def _gamma_reference(mpmath, a, x, n):
    mpmath.mp.dps = 40
    if x < a + 1:  # the side where the function is not close to 1, so its derivative is computed accurately
        return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a, n))
    return -float(mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf, regularized=True), a, n))


def _beta_reference(mpmath, a, b, x, na, nb):
    mpmath.mp.dps = 40
    if x < (a + 1) / (a + b + 2):
        return float(mpmath.diff(lambda s, u: mpmath.betainc(s, u, 0, x, regularized=True), (a, b), (na, nb)))
    one_minus = 1 - mpmath.mpf(x)
    return -float(mpmath.diff(lambda s, u: mpmath.betainc(u, s, 0, one_minus, regularized=True), (a, b), (na, nb)))


@pytest.mark.parametrize("n", [1, 2])
def test_gammainc_derivative_in_a_matches_mpmath(n):
    mpmath = pytest.importorskip("mpmath")
    a, x = np.meshgrid(A, X)
    got = gammainc_da(a, x, n)
    want = np.vectorize(lambda a, x: _gamma_reference(mpmath, a, x, n))(a, x)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)


@pytest.mark.parametrize("na,nb", [(1, 0), (0, 1), (2, 0), (1, 1), (0, 2)])
def test_betainc_derivatives_in_a_and_b_match_mpmath(na, nb):
    mpmath = pytest.importorskip("mpmath")
    a, b, x = np.meshgrid(A[:4], A[1:], B_X, indexing="ij")
    got = betainc_dab(a, b, x, na, nb)
    want = np.vectorize(lambda a, b, x: _beta_reference(mpmath, a, b, x, na, nb))(a, b, x)
    # relative, except where the mixed derivative vanishes (I_x(a, a) at x = 1/2 is 1/2 for every a)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13 * np.max(np.abs(want)))


def test_derivatives_match_central_differences_of_scipy():
    a, x = np.meshgrid(np.array([0.3, 1.5, 6.0, 20.0]), np.array([0.05, 1.0, 7.0, 30.0]))
    h = 1e-6 * a
    fd = (scipy_special.gammainc(a + h, x) - scipy_special.gammainc(a - h, x)) / (2 * h)
    np.testing.assert_allclose(gammainc_da(a, x, 1), fd, rtol=1e-5, atol=1e-9)
    b, y = 2.5, np.linspace(0.05, 0.95, 4)[:, None]
    fd = (scipy_special.betainc(a + h, b, y) - scipy_special.betainc(a - h, b, y)) / (2 * h)
    np.testing.assert_allclose(betainc_dab(a, b, y, 1, 0), fd, rtol=1e-5, atol=1e-9)
    fd = (scipy_special.betainc(b, a + h, y) - scipy_special.betainc(b, a - h, y)) / (2 * h)
    np.testing.assert_allclose(betainc_dab(b, a, y, 0, 1), fd, rtol=1e-5, atol=1e-9)


def test_edges_of_the_domain():
    np.testing.assert_array_equal(gammainc_da(np.array([2.0, 2.0]), np.array([0.0, np.inf]), 1), [0.0, 0.0])
    assert np.isnan(gammainc_da(np.array(-1.0), np.array(1.0), 1))  # outside SciPy's domain: NaN, as its value
    np.testing.assert_array_equal(betainc_dab(2.0, 3.0, np.array([0.0, 1.0]), 1, 0), [0.0, 0.0])
    assert np.isnan(betainc_dab(2.0, 3.0, np.array(1.5), 0, 1))


A2, X2 = np.array([0.6, 2.0, 7.0]), np.array([0.3, 4.0, 6.5])  # both sides of x = a + 1


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_gradients_in_every_argument_first_and_second_order(name):
    f = getattr(special, name)
    assert tg.gradcheck(f, A2, X2)
    assert tg.gradgradcheck(f, A2, X2)
    assert tg.gradgradcheck(lambda a, x: sp._gammainc_da(a, x, n=1), A2, X2)  # third derivatives of P
    want = -_hessian_fd(lambda s: scipy_special.gammaincc(s, 2.0), 1.5)
    assert tg.hessian(lambda a: special.gammainc(a, 2.0))(1.5) == pytest.approx(want, rel=1e-5)


def _hessian_fd(f, at, h=1e-4):
    return (f(at + h) - 2 * f(at) + f(at - h)) / (h * h)


def test_betainc_gradients_in_every_argument_first_and_second_order():
    b, x = np.array([3.0, 0.8, 9.0]), np.array([0.2, 0.5, 0.95])
    assert tg.gradcheck(special.betainc, A2, b, x)
    assert tg.gradgradcheck(special.betainc, A2, b, x)
    want = _hessian_fd(lambda s: scipy_special.betainc(2.0, s, 0.4), 3.0)
    assert tg.hessian(lambda s: special.betainc(2.0, s, 0.4))(3.0) == pytest.approx(want, rel=1e-5)


def test_scipy_ufuncs_on_tensors_take_gradients_in_the_parameters():
    a = tg.Tensor(A2, requires_grad=True)
    with tg.record():
        y = scipy_special.gammainc(a, X2)
    assert isinstance(y, tg.Tensor) and y.requires_grad
    np.testing.assert_allclose(y.data, scipy_special.gammainc(A2, X2), rtol=1e-14)
    assert tg.gradcheck(lambda a, x: scipy_special.gammaincc(a, x), A2, X2)
    assert tg.gradcheck(lambda a, b: scipy_special.betainc(a, b, 0.3), A2, np.array([1.0, 2.0, 4.0]))
    g = tg.grad(lambda a: scipy_special.gammainc(a, X2).sum())(A2)
    np.testing.assert_allclose(g, gammainc_da(A2, X2, 1), rtol=1e-13)


def test_memory_after_backward():
    import gc  # noqa: PLC0415
    import weakref  # noqa: PLC0415

    a = tg.Tensor(A2, requires_grad=True)
    with tg.record():
        y = special.betainc(a, 2.0, 0.4).sum()
    ref = weakref.ref(y)
    y.backward()
    del y
    gc.collect()
    assert ref() is None and a.grad is not None
