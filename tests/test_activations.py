"""Activations and erf beyond the op table: stability at ±1000, the error function without SciPy, and
PyTorch's values and gradients (when torch is installed) over several seeds."""

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import activations

ACTIVATIONS = {
    "softplus": tg.softplus,
    "softplus_beta": lambda x: tg.softplus(x, beta=3.0, threshold=5.0),
    "log_sigmoid": tg.log_sigmoid,
    "leaky_relu": lambda x: tg.leaky_relu(x, 0.1),
    "elu": lambda x: tg.elu(x, 0.7),
    "selu": tg.selu,
    "silu": tg.silu,
    "gelu": tg.gelu,
    "gelu_tanh": lambda x: tg.gelu(x, approximate="tanh"),
    "erf": tg.erf,
    "erfc": tg.erfc,
    "hardtanh": lambda x: tg.hardtanh(x, -2.0, 3.0),
    "relu6": tg.relu6,
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_inputs_give_finite_values_and_gradients_without_warnings(name, dtype):
    x = tg.Tensor(np.array([-1000.0, -50.0, -1.0, 0.0, 1.0, 50.0, 1000.0], dtype=dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow or invalid-value warning fails the test
        with tg.record():
            y = ACTIVATIONS[name](x)
            s = y.sum()
        s.backward()
    assert y.dtype == dtype and x.grad.dtype == dtype
    assert np.isfinite(y.data).all() and np.isfinite(x.grad).all()


def test_fallback_erf_matches_math_erf_elementwise(monkeypatch):
    monkeypatch.setattr(activations, "_SCIPY", [None])  # as without SciPy installed
    x = np.concatenate([np.linspace(-30, 30, 60001), [0.0, 1.5, -1.5, 1e-300, -1e-10, 26.5, 1000.0, -1000.0]])
    erf = tg.erf(tg.Tensor(x)).data
    erfc = tg.erfc(tg.Tensor(x)).data
    want_erf = np.array([math.erf(v) for v in x])
    want_erfc = np.array([math.erfc(v) for v in x])
    tiny = np.finfo(np.float64).tiny
    np.testing.assert_allclose(erf, want_erf, rtol=2e-15, atol=tiny)
    small = np.abs(x) < 1.5
    normal = want_erfc > 1e4 * tiny  # below that erfc is subnormal and has fewer digits to compare
    np.testing.assert_allclose(erfc[small], want_erfc[small], rtol=2e-14)
    np.testing.assert_allclose(erfc[~small & normal], want_erfc[~small & normal], rtol=2e-15)
    np.testing.assert_allclose(erfc[~normal], want_erfc[~normal], atol=1e4 * tiny)


def test_fallback_erf_keeps_float32_and_its_gradient_is_exact(monkeypatch):
    monkeypatch.setattr(activations, "_SCIPY", [None])
    x = np.linspace(-4, 4, 101)
    got = tg.erf(tg.Tensor(x.astype(np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.data, [math.erf(v) for v in x.astype(np.float32)], rtol=2e-6, atol=2e-7)
    assert tg.gradcheck(tg.erf, x[::10]) and tg.gradcheck(tg.erfc, x[::10])
    assert tg.gradgradcheck(lambda t: tg.gelu(t), x[::10])


def test_scipy_gives_the_values_when_it_is_installed():
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-6, 6, 13)
    np.testing.assert_array_equal(tg.erf(tg.Tensor(x)).data, special.erf(x))
    np.testing.assert_array_equal(tg.erfc(tg.Tensor(x)).data, special.erfc(x))


def test_bad_arguments_are_refused_with_the_op_name():
    with pytest.raises(ValueError, match="gelu: approximate must be"):
        tg.gelu(tg.Tensor([1.0]), approximate="fast")
    with pytest.raises(ValueError, match="hardtanh: min_val"):
        tg.hardtanh(tg.Tensor([1.0]), 1.0, -1.0)
    with pytest.raises(ValueError, match="softplus: beta"):
        tg.softplus(tg.Tensor([1.0]), beta=0)


def _torch_functions(torch):
    F = torch.nn.functional
    return {
        "softplus": F.softplus,
        "softplus_beta": lambda x: F.softplus(x, beta=3.0, threshold=5.0),
        "log_sigmoid": F.logsigmoid,
        "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
        "elu": lambda x: F.elu(x, 0.7),
        "selu": F.selu,
        "silu": F.silu,
        "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "erf": torch.erf,
        "erfc": torch.erfc,
        "hardtanh": lambda x: F.hardtanh(x, -2.0, 3.0),
        "relu6": F.relu6,
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_and_gradients_match_torch(seed, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    # wide values, the kinks themselves (0, the hardtanh edges) and the far tails
    x = np.concatenate([rng.normal(0, 3, 200), [0.0, -2.0, 3.0, 6.0, 5 / 3, -30.0, 30.0, -1000.0, 1000.0]]).astype(
        dtype
    )
    v = rng.normal(size=x.shape).astype(dtype)
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    for name, theirs in _torch_functions(torch).items():
        t = torch.tensor(x, requires_grad=True)
        (theirs(t) * torch.tensor(v)).sum().backward()
        ours = tg.Tensor(x, requires_grad=True)
        with tg.record():
            y = ACTIVATIONS[name](ours)
            s = (y * v).sum()
        s.backward()
        np.testing.assert_allclose(y.data, theirs(torch.tensor(x)).numpy(), **tol, err_msg=name)
        np.testing.assert_allclose(ours.grad, t.grad.numpy(), **tol, err_msg=name)
