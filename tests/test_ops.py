"""Every registered op at fixed inputs: value against NumPy, gradient and second derivative against finite
differences, gradient shape and dtype, float32 against float64. Rows come from ``op_table.OPS``.

Tests taking the ``backend`` fixture run once per array backend (NumPy and array_api_strict by default, see
tests/backends.py): inputs are made in that library, results must stay in it, values are compared in NumPy."""

import numpy as np
import pytest
from backends import subset
from op_table import OPS, draw_values

import tapegrad as tg
from tapegrad import tape

CASES = [(case, shapes, kwargs) for case in OPS for shapes, kwargs in case.examples]
IDS = [f"{case.name}-{'x'.join(map(str, shapes))}-{kwargs}" for case, shapes, kwargs in CASES]


def test_every_registered_op_has_a_row():
    missing = set(tg.REGISTRY) - {case.name for case in OPS}
    assert not missing, f"ops without a row in tests/op_table.py: {sorted(missing)}"


def _unsupported(case, shapes, kwargs, backend):
    """True (after checking the op says so) when ``backend`` lacks a function the op needs. Dask refuses some
    ops only for some parameters (pad's reflecting modes): there an example that computes is checked as usual."""
    if backend.name not in case.unsupported:
        return False
    xs = [tg.Tensor(backend.asarray(a)) for a in _inputs(case, shapes)]
    if backend.name == "dask":  # some examples of a function composed of ops may compute: then they are checked
        try:
            case.fn(*xs, **kwargs)
        except NotImplementedError as err:
            assert "the dask backend" in str(err), err
            return True
        return False
    # A function composed of ops (median of sort) names the op Dask cannot run
    with pytest.raises(NotImplementedError, match="the dask backend" if backend.name == "dask" else case.name):
        case.fn(*xs, **kwargs)
    return True


def _finite_differences(backend):
    if subset(backend.name):
        pytest.skip("dask runs the op table's finite-difference checks with TAPEGRAD_BACKENDS=dask (tests/backends.py)")


def _inputs(case, shapes, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [draw_values(rng, s, case.domain, dtype) for s in shapes]


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_value_matches_numpy(case, shapes, kwargs, dtype, backend):
    if _unsupported(case, shapes, kwargs, backend):
        return
    arrays = _inputs(case, shapes, dtype)
    out = case.fn(*[tg.Tensor(backend.asarray(a)) for a in arrays], **kwargs)
    expected = case.ref(*arrays, **kwargs)
    assert out.shape == np.shape(expected)
    assert backend.is_native(out.data) and out.dtype == backend.dtype(dtype)
    got = backend.to_numpy(out.data)
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
def test_gradient_matches_finite_differences(case, shapes, kwargs, backend):
    _finite_differences(backend)
    if _unsupported(case, shapes, kwargs, backend):
        return
    assert tg.gradcheck(lambda *xs: case.fn(*xs, **kwargs), *_inputs(case, shapes), asarray=backend.asarray)


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
def test_second_derivative_matches_finite_differences(case, shapes, kwargs, backend):
    _finite_differences(backend)
    if _unsupported(case, shapes, kwargs, backend):
        return
    assert tg.gradgradcheck(lambda *xs: case.fn(*xs, **kwargs), *_inputs(case, shapes), asarray=backend.asarray)


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradient_has_input_shape_and_dtype(case, shapes, kwargs, dtype, backend):
    if _unsupported(case, shapes, kwargs, backend):
        return
    xs = [tg.Tensor(backend.asarray(a), requires_grad=True) for a in _inputs(case, shapes, dtype)]
    with tape.record():
        out = case.fn(*xs, **kwargs)
    out.backward(backend.asarray(np.ones(out.shape, dtype=dtype)))
    for i, x in enumerate(xs):
        if i in case.constant_inputs:
            assert x.grad is None
        else:
            assert x.grad is not None and x.grad.shape == x.shape and x.grad.dtype == backend.dtype(dtype)
            assert backend.is_native(x.grad)  # the gradient stayed in the inputs' library (on the GPU for CuPy)


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
def test_float32_gradient_agrees_with_float64(case, shapes, kwargs, backend):
    _finite_differences(backend)
    if _unsupported(case, shapes, kwargs, backend):
        return
    grads = {}
    for dtype in (np.float64, np.float32):
        xs = [tg.Tensor(backend.asarray(a), requires_grad=True) for a in _inputs(case, shapes, dtype)]
        with tape.record():
            out = case.fn(*xs, **kwargs)
        out.backward(backend.asarray(np.ones(out.shape, dtype=dtype)))
        grads[dtype] = [None if x.grad is None else backend.to_numpy(x.grad) for x in xs]
    for g64, g32 in zip(grads[np.float64], grads[np.float32]):
        if g64 is None:
            assert g32 is None
            continue
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-4)


def test_reused_input_accumulates_across_paths(backend):
    a = np.array([1.0, 2.0])
    x = tg.Tensor(backend.asarray(a), requires_grad=True)
    with tape.record():
        y = (x * x + x.exp() * x).sum()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), 2 * a + np.exp(a) * (1 + a))


def test_stable_reductions_at_large_inputs(backend):
    big = tg.Tensor(backend.asarray(np.array([1000.0, 1000.0, -1000.0])), requires_grad=True)
    with tape.record():
        out = tg.logsumexp(big) + tg.softmax(big)[0] + tg.log_softmax(big)[2] + tg.sigmoid(big).sum()
    out.backward()
    assert np.isfinite(out.item()) and np.all(np.isfinite(backend.to_numpy(big.grad)))
    np.testing.assert_allclose(tg.logsumexp(big).item(), 1000 + np.log(2))


def test_tied_maxima_share_the_gradient(backend):
    x = tg.Tensor(backend.asarray(np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 2.0]])), requires_grad=True)
    with tape.record():
        y = x.max(axis=1).sum() + tg.maximum(x, 2.0).sum()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), [[1.5, 0, 1.5], [0, 1.0, 1.0]])


def test_repeated_integer_indices_accumulate(backend):
    x = tg.Tensor(backend.asarray(np.array([1.0, 2.0, 3.0])), requires_grad=True)
    mask = x > 1.5
    if backend.name == "dask":  # a lazy mask selects a number of elements Dask knows only once computed
        with pytest.raises(NotImplementedError, match="getitem: the dask backend needs an index known"):
            x[mask]
        mask = backend.to_numpy(mask.data)
    with tape.record():
        y = x[np.array([0, 0, 2, 0])].sum() + x[mask].sum()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), [3.0, 1.0, 2.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda x: 2 * x,
        lambda x: np.ones(3) + x,
        lambda x: np.ones(3) - x,
        lambda x: 1.0 / x,
        lambda x: 2.0**x,
        lambda x: np.eye(3) @ x,
        lambda x: x ** tg.Tensor(2.0),
    ],
    ids=["scalar*", "array+", "array-", "scalar/", "scalar**", "array@", "**tensor"],
)
def test_reflected_operators_return_tensors(make):
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tape.record():
        y = make(x)
    assert isinstance(y, tg.Tensor) and y.requires_grad
    y.backward(np.ones(y.shape))
    assert x.grad.shape == (3,)


def test_mixed_dtypes_follow_numpy_promotion_and_grads_keep_input_dtype():
    a = tg.Tensor(np.ones(3, np.float32), requires_grad=True)
    b = tg.Tensor(np.ones(3, np.float64), requires_grad=True)
    with tape.record():
        y = a * b
    assert y.dtype == np.float64
    y.backward(np.ones(3))
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    assert (tg.Tensor(np.ones(2, np.float32)) * 2.0).dtype == np.float32


def test_comparisons_and_argmax_carry_no_gradient():
    x = tg.Tensor([1.0, 3.0, 2.0], requires_grad=True)
    with tape.record() as t:
        outs = [x < 2, x <= 2, x > 2, x >= 2, x == 2, x != 2, x.argmax(), x.argmin(), tg.sign(x)]
    assert len(t) == 0
    assert all(not o.requires_grad for o in outs)
    assert x.argmax().item() == 1 and x.argmin().item() == 0
    np.testing.assert_array_equal((x > 1.5).numpy(), [False, True, True])


def test_methods_and_functions_agree():
    a = np.random.default_rng(1).uniform(0.5, 2, (2, 3))
    x = tg.Tensor(a)
    pairs = [
        (x.exp(), tg.exp(x)),
        (x.log(), tg.log(x)),
        (x.sum(axis=1), tg.sum(x, axis=1)),
        (x.T, tg.transpose(x)),
        (x.reshape(3, 2), tg.reshape(x, (3, 2))),
        (x.max(0), tg.max(x, 0)),
        (x.softmax(0), tg.softmax(x, 0)),
        (x.var(ddof=1), tg.var(x, ddof=1)),
    ]
    for m, f in pairs:
        np.testing.assert_array_equal(m.numpy(), f.numpy())
