"""Forward mode on complex numbers, under reverse mode's convention (JAX's; docs/guide/complex.md).

``tg.jvp(f, (z,), (t,))`` is the differential of ``f`` at ``z`` applied to ``t``, with C read as R^2: for a
holomorphic ``f`` that is ``f'(z) * t`` (``jax.jvp(jnp.exp, (z,), (t,))`` gives ``exp(z) * t``); for any other
``f`` it is the real-linear map ``t -> df/dx Re(t) + df/dy Im(t)``. Each is checked against central finite
differences along ``t`` in both real directions (``t`` real and ``t`` imaginary) and a mixed one, and against
reverse mode: ``Re sum(u * J t) == Re sum(J^T u * t)`` for every cotangent ``u``, the pairing under which a
VJP is the transpose of the JVP. The tests use only the public ``tg.jvp``, ``tg.vjp``, ``tg.hvp``, ``tg.hessian``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

Z = np.array([0.3 + 0.4j, -0.7 + 0.2j, 1.1 - 0.5j])
X = np.array([0.3, -0.5, 0.8])
DIRECTIONS = {"real": np.ones(3), "imaginary": 1j * np.ones(3), "mixed": np.array([0.5 - 0.3j, 1.2 + 0.7j, -0.4j])}

# name: (tapegrad's f, NumPy's f, its complex derivative where f is holomorphic, else None)
FUNCTIONS = {
    "exp": (tg.exp, np.exp, np.exp),
    "sin(z^2)": (lambda z: tg.sin(z * z), lambda z: np.sin(z * z), lambda z: 2 * z * np.cos(z * z)),
    "z^3 / (1 + z)": (
        lambda z: z**3 / (1 + z),
        lambda z: z**3 / (1 + z),
        lambda z: (2 * z**3 + 3 * z**2) / (1 + z) ** 2,
    ),
    "abs": (tg.absolute, np.abs, None),
    "conj": (tg.conj, np.conj, None),
    "real": (tg.real, np.real, None),
    "imag": (tg.imag, np.imag, None),
    "angle": (tg.angle, np.angle, None),
    "z * conj(z)": (lambda z: z * tg.conj(z), lambda z: z * np.conj(z), None),
    "sum |z|^2 (to a real scalar)": (lambda z: (tg.absolute(z) ** 2).sum(), lambda z: (np.abs(z) ** 2).sum(), None),
}


def _fd(f, x, t, h=1e-6):
    return (np.asarray(f(x + h * t)) - np.asarray(f(x - h * t))) / (2 * h)


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jvp_of_complex_functions_is_the_differential_along_each_real_direction(name, direction):
    f, numpy_f, derivative = FUNCTIONS[name]
    t = DIRECTIONS[direction]
    out, tangent = tg.jvp(f, (Z,), (t,))
    np.testing.assert_allclose(out, numpy_f(Z), rtol=1e-14)
    np.testing.assert_allclose(tangent, _fd(numpy_f, Z, t), rtol=1e-7, atol=1e-8)
    if derivative is not None:  # holomorphic: JAX's f'(z) * t, no conjugation
        np.testing.assert_allclose(tangent, derivative(Z) * t, rtol=1e-12)


def test_jvp_of_exp_is_jaxs_exp_z_times_t():
    t = np.array([1.0 + 2.0j, -0.5j, 3.0])
    np.testing.assert_allclose(tg.jvp(tg.exp, (Z,), (t,))[1], np.exp(Z) * t, rtol=1e-14)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jvp_is_the_transpose_of_vjp_under_the_real_pairing(name):
    f = FUNCTIONS[name][0]
    rng = np.random.default_rng(0)
    out, vjp_fn = tg.vjp(f, Z)
    t = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    u = rng.standard_normal(np.shape(out)) + (1j * rng.standard_normal(np.shape(out)) if np.iscomplexobj(out) else 0)
    (jt_u,) = vjp_fn(u)
    jt = tg.jvp(f, (Z,), (t,))[1]
    np.testing.assert_allclose(np.real(np.sum(u * jt)), np.real(np.sum(jt_u * t)), rtol=1e-12)


def test_jvp_from_real_to_complex_and_back():
    out, tangent = tg.jvp(lambda x: tg.exp(1j * x), (X,), (np.array([1.0, -2.0, 0.5]),))
    np.testing.assert_allclose(tangent, 1j * np.exp(1j * X) * [1.0, -2.0, 0.5], rtol=1e-14)
    assert np.iscomplexobj(tangent)
    f = lambda x: tg.real(tg.exp(1j * x) * tg.conj(tg.exp(2j * x * x)))  # noqa: E731  (real, complex inside)
    numpy_f = lambda x: np.real(np.exp(1j * x) * np.conj(np.exp(2j * x * x)))  # noqa: E731
    t = np.array([0.3, 1.0, -0.7])
    out, tangent = tg.jvp(f, (X,), (t,))
    assert not np.iscomplexobj(tangent)
    np.testing.assert_allclose(tangent, _fd(numpy_f, X, t), rtol=1e-7, atol=1e-9)


def test_jvp_with_several_primals_mixing_real_and_complex():
    f = lambda z, x: z * tg.exp(x) + tg.conj(z) * x  # noqa: E731
    numpy_f = lambda z, x: z * np.exp(x) + np.conj(z) * x  # noqa: E731
    tz, tx = np.array([0.5j, 1.0, -1.0 + 1.0j]), np.array([1.0, 0.0, -2.0])
    _, tangent = tg.jvp(f, (Z, X), (tz, tx))
    h = 1e-6
    expected = (numpy_f(Z + h * tz, X + h * tx) - numpy_f(Z - h * tz, X - h * tx)) / (2 * h)
    np.testing.assert_allclose(tangent, expected, rtol=1e-7, atol=1e-9)


def test_a_complex_tangent_for_a_real_primal_is_refused():
    with pytest.raises(TypeError, match="a complex tangent for a real primal of dtype float64"):
        tg.jvp(tg.sin, (X,), (1j * np.ones(3),))  # its imaginary part would be dropped in silence


# -- second order through complex intermediates ----------------------------------------------------------------
def _loss(x):  # a real loss of real inputs, complex in between
    return tg.real(tg.exp(1j * x) * tg.conj(tg.exp(2j * x * x))).sum() + (tg.absolute(x + 1j * x * x) ** 2).sum()


def _numpy_loss(x):
    return np.real(np.exp(1j * x) * np.conj(np.exp(2j * x * x))).sum() + (np.abs(x + 1j * x * x) ** 2).sum()


def _fd_hessian(f, x, h=1e-4):
    n = x.size
    e = np.eye(n)
    return np.array(
        [
            [
                (
                    f(x + h * (e[i] + e[j]))
                    - f(x + h * (e[i] - e[j]))
                    - f(x - h * (e[i] - e[j]))
                    + f(x - h * (e[i] + e[j]))
                )
                / (4 * h * h)
                for j in range(n)
            ]
            for i in range(n)
        ]
    )


def test_hessian_and_hvp_of_a_real_loss_with_complex_intermediates():
    H = tg.hessian(_loss)(X)
    assert not np.iscomplexobj(H)
    np.testing.assert_allclose(H, _fd_hessian(_numpy_loss, X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(H, H.T, rtol=1e-12)
    v = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(tg.hvp(_loss, X, v), H @ v, rtol=1e-12)
    np.testing.assert_allclose(tg.jvp(tg.grad(_loss), (X,), (v,))[1], H @ v, rtol=1e-12)


def test_the_recorded_gradient_of_a_real_input_through_complex_values_is_real():
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        g = tg.grad(lambda x: tg.real(tg.exp(1j * x)).sum())(x)  # recorded: a Hessian can follow
    assert g.dtype == np.float64
    np.testing.assert_allclose(g.data, -np.sin(X), rtol=1e-14)  # not -sin(x) + i cos(x)


def test_hvp_of_a_real_loss_of_complex_inputs_is_the_derivative_of_its_gradient():
    # grad f is df/dx - i df/dy; its derivative along v, in the same convention, is the R^2 Hessian times v
    f = lambda z: (tg.absolute(z) ** 4).sum() + tg.real(z * z * z).sum()  # noqa: E731
    v = np.array([1.0 + 0.5j, -0.3j, 0.2])
    hv = tg.hvp(f, Z, v)
    np.testing.assert_allclose(hv, _fd(tg.grad(f), Z, v), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(hv, tg.jvp(tg.grad(f), (Z,), (v,))[1], rtol=1e-12)
