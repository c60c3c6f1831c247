"""Gradients at the edges of the ops' domains, where a rule can go quietly wrong: the sign of complex numbers,
masks and ties at NaN, a batch that is all padding, and the linear-algebra rules at singular matrices. Each
test states what the right answer is (finite differences, a closed form, PyTorch where it is installed) and
checks tapegrad against it; where the derivative does not exist, it checks the error names the op and why.
Degenerate eigenvalues and singular values are tested in tests/test_linalg.py, beside the decompositions' other
edges.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.numpy._table import MAIN, NOGRAD_FUNCTIONS
from tapegrad.registry import NONDIFF

try:
    import torch
except ImportError:  # the test extra has no PyTorch: the cross-checks skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(23)


# -- sign of complex numbers: z / |z|, smooth away from 0 --------------------------------------------------------
Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 2.0 - 1.0j, -3.0 + 0.0j])
A, B = RNG.standard_normal(4), RNG.standard_normal(4)


def _real_loss(f):
    """A real loss of f(z) that reads both parts of it."""
    return lambda z: tg.sum(tg.real(f(z)) * A + tg.imag(f(z)) * B)


def test_sign_of_a_complex_tensor_has_the_gradient_of_z_over_its_modulus():
    g = tg.grad(_real_loss(tg.sign))(Z)
    np.testing.assert_allclose(g, tg.grad(_real_loss(lambda z: z / tg.absolute(z)))(Z), rtol=1e-13)
    assert np.all(np.abs(g) > 1e-3)  # not the zero a constant would give
    assert tg.gradcheck(_real_loss(tg.sign), Z)  # both real directions, by finite differences
    assert tg.gradcheck(lambda z: tg.sign(z) * tg.conj(tg.sign(z * 2.0)), Z)
    assert tg.gradgradcheck(_real_loss(tg.sign), Z)
    # NumPy's np.sign on a tensor is the same op
    np.testing.assert_allclose(tg.grad(_real_loss(tnp.sign))(Z), g, rtol=1e-13)


def test_sign_at_zero_has_gradient_zero_and_of_reals_stays_a_constant():
    g = tg.grad(_real_loss(tg.sign))(np.array([0j, 1j, 0j, 2.0 + 0j]))
    assert g[0] == 0 and g[2] == 0 and np.all(np.isfinite(g))
    x = tg.Tensor([-2.0, 0.0, 3.0], requires_grad=True)
    with tg.record():
        s = tg.sign(x)
    assert not s.requires_grad  # piecewise constant on the reals: nothing recorded


@needs_torch
def test_sign_of_complex_agrees_with_pytorchs_sgn():
    t = torch.tensor(Z, requires_grad=True)
    s = torch.sgn(t)
    (s.real * torch.tensor(A) + s.imag * torch.tensor(B)).sum().backward()
    # PyTorch's gradient is the conjugate of tapegrad's (docs/guide/complex.md)
    np.testing.assert_allclose(tg.grad(_real_loss(tg.sign))(Z), np.conj(t.grad.numpy()), rtol=1e-12)


def _nondiff_public_functions():
    """tapegrad's public functions of the ops registered without a gradient, and NumPy's pass-throughs."""
    out = {name: getattr(tg, name) for name in NONDIFF if callable(getattr(tg, name, None))}
    out.update({f"np.{name}": MAIN[name] for name in NOGRAD_FUNCTIONS if name in MAIN})
    return out


def _call_on(f, z):
    """f(z), or f(z, z) / f(z, 2.0) for the binary ones; None when f takes no such arguments."""
    for args in ((z,), (z, 2.0), (z, z)):
        try:
            return f(*args)
        except TypeError:
            continue
        except (ValueError, AttributeError, IndexError):
            return None
    return None


def _values_of(out):
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o.data if isinstance(o, tg.Tensor) else o) for o in items]


NONDIFF_FUNCTIONS = _nondiff_public_functions()


@pytest.mark.parametrize("name", sorted(NONDIFF_FUNCTIONS))
def test_a_function_without_a_gradient_is_locally_constant_on_complex_input(name):
    # A function registered without a gradient must be piecewise constant wherever it accepts complex input:
    # moving z a little along either real direction leaves every floating output unchanged (sign did not: its
    # value on complex numbers is z / |z|). A function that records its result has a rule, checked elsewhere.
    f = NONDIFF_FUNCTIONS[name]
    z0 = np.array([1.3 + 2.7j, -0.4 - 1.2j, 0.7 + 0.1j])
    with tg.record():
        out = _call_on(f, tg.Tensor(z0, requires_grad=True))
    if out is None or any(isinstance(o, tg.Tensor) and o.requires_grad for o in _flat(out)):
        return
    base = _values_of(out)
    for step in (1e-7, 1e-7j):
        moved = _values_of(_call_on(f, tg.Tensor(z0 + step)))
        for a, b in zip(base, moved):
            if np.issubdtype(a.dtype, np.inexact):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} changes with its complex input")


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# -- NaN: a result that is NaN because an input is NaN sends the gradient there ----------------------------------
NAN = np.nan
X_NAN = np.array([1.0, NAN, 3.0, 2.0])


def _grad_at_nan(f, x=X_NAN):
    """The gradient of sum(w * f(x)), w = 1, 2, ...: where the gradient of each output went."""

    def loss(x):
        out = f(x)
        return tg.sum(out * np.arange(1.0, out.size + 1).reshape(out.shape))

    with np.errstate(all="raise"):  # no 0/0 or g/0 on the way
        return tg.grad(loss)(x)


@pytest.mark.parametrize(
    "f,expected",
    [
        (tg.max, [0, 1, 0, 0]),
        (tg.min, [0, 1, 0, 0]),
        (tg.amax, [0, 1, 0, 0]),
        (tnp.max, [0, 1, 0, 0]),
        (np.maximum.reduce, [0, 1, 0, 0]),
        (lambda x: tg.max(tg.stack([x, x * 2.0])), [0, 1.5, 0, 0]),  # two NaNs share it: 1/2 + 2 * 1/2
        (lambda x: tg.relu(x), [1, 2, 3, 4]),  # max(NaN, 0) is the NaN x
        (lambda x: tg.maximum(x, np.array([2.0, 0.5, 0.5, 2.0])), [0, 2, 3, 2]),
        (lambda x: tg.minimum(x, np.array([2.0, 0.5, 0.5, 2.0])), [1, 2, 0, 2]),
        (tg.median, [0, 1, 0, 0]),  # the NaN sorts last; NumPy's median is NaN
        (lambda x: tg.quantile(x, 0.3), [0, 1, 0, 0]),
        (tg.sort, [1, 4, 3, 2]),
        (lambda x: tg.clip(x, 0.0, 2.5), [1, 2, 0, 4]),
        (lambda x: tg.nn.functional.max_pool1d(tg.reshape(x, (1, 1, 4)), 2), [0, 1, 2, 0]),
    ],
    ids=[
        "max", "min", "amax", "np.max", "maximum.reduce", "max-two-nans", "relu", "maximum", "minimum", "median",
        "quantile", "sort", "clip", "max_pool1d",
    ],
)  # fmt: skip
def test_the_gradient_of_a_nan_result_goes_to_the_nan(f, expected):
    np.testing.assert_array_equal(_grad_at_nan(f), expected)


def test_maximum_of_two_nans_sends_the_gradient_to_the_first_as_numpy_returns_it():
    x, y = np.array([NAN, 1.0, NAN]), np.array([NAN, NAN, 0.0])
    gx, gy = tg.grad(lambda x, y: tg.sum(tg.maximum(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [1, 0, 1])
    np.testing.assert_array_equal(gy, [0, 1, 0])
    gx, gy = tg.grad(lambda x, y: tg.sum(tg.minimum(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [1, 0, 1])
    np.testing.assert_array_equal(gy, [0, 1, 0])


def test_the_nan_skipping_reductions_of_a_slice_of_nan_only_send_the_gradient_to_its_nans():
    x = np.array([[NAN, NAN], [1.0, NAN]])
    for f in (tg.nanmax, tg.nanmin):
        np.testing.assert_array_equal(_grad_at_nan(lambda x, f=f: f(x, axis=1), x), [[0.5, 0.5], [2, 0]])
    for f in (tnp.nanmedian, lambda x, axis: tnp.nanquantile(x, 0.3, axis=axis)):
        g = _grad_at_nan(lambda x, f=f: f(x, axis=1), x)
        assert g[0].sum() == 1 and set(g[0]) == {0.0, 1.0}  # one of the NaNs, with the whole gradient
        np.testing.assert_array_equal(g[1], [2, 0])


def test_the_inf_norm_of_a_vector_holding_nan_sends_the_gradient_there():
    g = _grad_at_nan(lambda x: tg.linalg.vector_norm(x, ord=np.inf))
    assert np.isnan(g[1]) and np.all(g[[0, 2, 3]] == 0)  # |x|'s derivative at NaN is NaN: the NaN shows


@needs_torch
def test_max_of_a_nan_agrees_with_pytorch():
    for x in (X_NAN, np.array([NAN, 1.0, NAN])):
        t = torch.tensor(x, requires_grad=True)
        torch.max(t).backward()
        np.testing.assert_array_equal(tg.grad(tg.max)(x), t.grad.numpy())


@pytest.mark.parametrize("f", [tg.absolute, tg.fabs], ids=["absolute", "fabs"])
def test_the_gradient_of_abs_at_zero_is_a_select_even_under_an_infinite_cotangent(f):
    # sqrt(|x|) at 0: the cotangent reaching |x| is infinite, and a select (not g * sign(x)) keeps the 0 exact
    with np.errstate(divide="ignore"):
        g = tg.grad(lambda x: tg.sum(tg.sqrt(f(x))))(np.array([0.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 0.25])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint8, np.complex128])
@pytest.mark.parametrize("exponent", [2, 2.0, 3, 0.5, -1])
def test_power_is_numpys_to_the_bit_its_dtype_and_the_sign_of_zero_included(dtype, exponent):
    """``x ** 2`` is computed as a square (NumPy's own fast path): the values, dtypes and zeros' signs must be
    ``np.power``'s for every exponent and dtype."""
    values = [-0.0, 0.0, 1.5, -2.5, 3.0, 1e200, -1e-200, np.inf, -np.inf, np.nan, 127.0, -128.0]
    with np.errstate(all="ignore"):
        x = np.array(values).astype(dtype) if np.dtype(dtype).kind in "fc" else np.arange(-8, 9).astype(dtype)
        if np.dtype(dtype).kind in "iu" and (exponent == -1 or exponent == 0.5):
            x = x[x > 0] if exponent == -1 else x
        try:
            want = np.power(x, exponent)
        except (ValueError, OverflowError) as refused:  # integers to a negative power: refused, by both
            with pytest.raises(type(refused)):
                tg.power(tg.Tensor(x), exponent)
            return
        got = tg.power(tg.Tensor(x), exponent).data
        via_operator = (tg.Tensor(x) ** exponent).data
    for out in (got, via_operator):
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)
        assert np.array_equal(np.signbit(out.real), np.signbit(want.real))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128, np.int64, np.bool_])
@pytest.mark.parametrize("shape, axis", [((), None), ((7,), None), ((0, 3), 1), ((5, 3, 4), (0, 2)), ((6, 9), -1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_mean_is_numpys_to_the_bit_and_its_dtype(dtype, shape, axis, keepdims):
    """The mean's forward takes NumPy's own steps (sum, then divide) without its wrappers on float arrays: its
    values and dtypes must be ``np.mean``'s, the empty slice's NaN and the other dtypes' paths included."""
    x = (RNG.standard_normal(shape) * 1e3).astype(dtype)
    if dtype is np.complex128:
        x = x + 1j * RNG.standard_normal(shape)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the empty slice's mean warns in both
        want = np.mean(x, axis=axis, keepdims=keepdims)
        got = tg.mean(tg.Tensor(x), axis=axis, keepdims=keepdims).data
    assert got.dtype == want.dtype and got.shape == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [None, 1])
def test_a_float32_mean_over_more_than_2_to_the_24_elements_is_numpys_to_the_bit(axis):
    """NumPy divides a float32 sum by its count as an intp, so in float64, then rounds: past 2**24 elements the
    count is not a float32, and a division in float32 was an ulp off (0.49997297 for NumPy's 0.49997294)."""
    x = np.random.default_rng(0).random((1, 2**24 + 1), dtype=np.float32)
    want = np.mean(x, axis=axis)
    got = tg.mean(tg.Tensor(x), axis=axis).data
    assert got.dtype == want.dtype and got.shape == np.shape(want)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
