"""What the op table cannot express about NumPy's functions as tapegrad ops: exact gradients at zeros of
prod and cumprod, the gradient of the order statistics, NaN handling, functions returning lists, indexed
updates with repeated indices, einsum's contraction order, functions without a gradient, errors, and
cross-checks against PyTorch where it has the same function.

Expected gradients here are derived by hand from the definition (or from a brute-force loop written here),
never copied from tapegrad's own output.
"""

import doctest
import itertools
import sys
import time

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad import tape
from tapegrad.backend.numpy_rules import numpy_rules
from tapegrad.ops.indexing import At


def _grad(fn, *xs, cotangent=None):
    ts = [tg.Tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in xs]
    with tape.record():
        out = fn(*ts)
    out.backward(np.ones(out.shape) if cotangent is None else cotangent)
    return [t.grad for t in ts]


# -- prod and cumprod at zeros -------------------------------------------------------------------------------
def _prod_of_others(x):
    return np.array([np.prod(np.delete(x, k)) for k in range(x.size)])


@pytest.mark.parametrize(
    "x",
    [[2.0, 3.0, 4.0], [2.0, 0.0, 3.0, 4.0], [0.0, 3.0, 0.0, 4.0], [0.0, 0.0, 0.0], [0.0], [5.0]],
    ids=["no zero", "one zero", "two zeros", "all zeros", "one element, zero", "one element"],
)
def test_prod_gradient_is_the_product_of_the_others_at_zeros(x):
    x = np.array(x)
    (g,) = _grad(tg.prod, x)
    np.testing.assert_array_equal(g, _prod_of_others(x))  # exact: no division took place


def test_prod_over_axes_with_zeros_matches_the_product_of_the_others():
    x = np.array([[[0.0, 2.0], [3.0, 0.0]], [[1.5, 2.0], [0.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]])
    (g,) = _grad(lambda t: tg.prod(t, axis=(1, -1), keepdims=True), x)
    expected = np.stack([_prod_of_others(block.ravel()).reshape(block.shape) for block in x])
    np.testing.assert_array_equal(g, expected)
    assert tg.gradgradcheck(lambda t: tg.prod(t, axis=(1, 2)), x)
    assert tg.gradgradcheck(lambda t: tg.nanprod(t, axis=0), x)


def _cumprod_gradient(x, g):
    # d/dx_k sum_i g_i prod_{j <= i} x_j, term by term
    return np.array(
        [sum(g[i] * np.prod([x[j] for j in range(i + 1) if j != k]) for i in range(k, x.size)) for k in range(x.size)]
    )


@pytest.mark.parametrize(
    "x", [[1.5, -2.0, 0.5, 3.0, 1.2], [1.5, 0.0, 2.0, 3.0, 0.5], [0.0, 2.0, 0.0, 3.0, 1.5, 0.7, 2.0, 0.0, 1.1]]
)
def test_cumprod_gradient_at_zeros_matches_the_definition(x):
    x = np.array(x)
    g = np.random.default_rng(0).standard_normal(x.size)
    (got,) = _grad(tg.cumprod, x, cotangent=g)
    np.testing.assert_allclose(got, _cumprod_gradient(x, g), rtol=1e-12, atol=1e-12)
    assert tg.gradgradcheck(tg.cumprod, x)


def test_cumsum_and_cumprod_flatten_without_an_axis():
    x = np.arange(6.0).reshape(2, 3) + 1
    np.testing.assert_array_equal(tg.cumsum(tg.Tensor(x)).numpy(), np.cumsum(x))
    np.testing.assert_array_equal(tg.cumprod(tg.Tensor(x), axis=-1).numpy(), np.cumprod(x, axis=-1))
    (g,) = _grad(tg.cumsum, x)
    np.testing.assert_array_equal(g, np.arange(6, 0, -1).reshape(2, 3))  # element k is in 6 - k totals


# -- order statistics -------------------------------------------------------------------------------------------
def test_median_sends_half_the_gradient_to_each_middle_element():
    (g,) = _grad(tg.median, [3.0, 1.0, 4.0, 2.0])
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.0, 0.5])  # the middle values 2 and 3
    (g,) = _grad(tg.median, [3.0, 1.0, 4.0, 2.0, 9.0])
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0, 0.0, 0.0])


def test_percentile_gradient_has_the_linear_interpolation_weights():
    # 25th percentile of 4 values: virtual index 0.75 between the smallest (1) and the next (2)
    (g,) = _grad(lambda t: tg.percentile(t, 25), [4.0, 1.0, 3.0, 2.0])
    np.testing.assert_allclose(g, [0.0, 0.25, 0.0, 0.75], rtol=1e-12)
    (g,) = _grad(lambda t: tg.quantile(t, [0.0, 1.0], axis=0), [[2.0, 5.0], [1.0, 7.0], [3.0, 6.0]])
    np.testing.assert_array_equal(g, [[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]])  # min and max of each column


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods_match_numpy(method):
    x = np.random.default_rng(3).standard_normal((4, 5))
    for q in (0.0, 0.1, 0.375, 0.5, 0.62, 1.0, [0.3, 0.8]):
        got = tg.quantile(tg.Tensor(x), q, axis=1, method=method).numpy()
        np.testing.assert_allclose(got, np.quantile(x, q, axis=1, method=method), rtol=1e-14)


def test_order_statistics_of_a_slice_with_nan_are_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    for f, ref in [(tg.median, np.median), (lambda t, axis: tg.percentile(t, 40, axis=axis), None)]:
        got = f(tg.Tensor(x), axis=1).numpy()
        assert np.isnan(got[0]) and not np.isnan(got[1])
        if ref is not None:
            np.testing.assert_array_equal(got, ref(x, axis=1))


# -- NaN handling ----------------------------------------------------------------------------------------------
def test_fmax_and_fmin_return_the_number_and_send_it_the_gradient():
    x = np.array([np.nan, 1.0, np.nan, 2.0, 4.0])
    y = np.array([0.5, np.nan, np.nan, 3.0, 4.0])
    np.testing.assert_array_equal(tg.fmax(tg.Tensor(x), tg.Tensor(y)).numpy(), np.fmax(x, y))
    np.testing.assert_array_equal(tg.fmin(tg.Tensor(x), tg.Tensor(y)).numpy(), np.fmin(x, y))
    gx, gy = _grad(tg.fmax, x, y)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 1.0, 0.0, 0.5])  # both NaN: the NaN returned is x's
    np.testing.assert_array_equal(gy, [1.0, 0.0, 0.0, 1.0, 0.5])  # a tie shares
    gx, gy = _grad(tg.fmin, x, y)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 1.0, 1.0, 0.5])
    np.testing.assert_array_equal(gy, [1.0, 0.0, 0.0, 0.0, 0.5])
    gx, _ = _grad(lambda a, b: tg.fmax(a, np.nan), x, y)  # a NaN number on the other side
    np.testing.assert_array_equal(gx, np.ones(5))


def test_nan_reductions_give_nan_entries_a_zero_gradient():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [2.0, 5.0, 4.0]])
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        expected_max = np.nanmax(x, axis=1)
    np.testing.assert_array_equal(tg.nanmax(tg.Tensor(x), axis=1).numpy(), expected_max)
    for f in (tg.nansum, tg.nanmean, tg.nanprod, tg.nanmax, tg.nanmin):
        (g,) = _grad(lambda t, f=f: f(t[np.array([0, 2])], axis=1), x)
        assert np.all(g[np.isnan(x)] == 0) and np.all(np.isfinite(g)), f.__name__
    (g,) = _grad(lambda t: tg.nanvar(t[0], ddof=1) + tg.nanstd(t[2]), x)
    assert np.all(g[np.isnan(x)] == 0) and np.all(np.isfinite(g))
    np.testing.assert_allclose(g[0], [-2.0, 0.0, 2.0])  # d/dx sum((x - m)^2) / (n - 1) = 2 (x - m) / 1


def test_nan_to_num_passes_the_gradient_where_finite_only():
    x = np.array([np.nan, np.inf, -np.inf, 1.5])
    out = tg.nan_to_num(tg.Tensor(x), nan=-1.0, posinf=9.0)
    np.testing.assert_array_equal(out.numpy(), np.nan_to_num(x, nan=-1.0, posinf=9.0))
    (g,) = _grad(tg.nan_to_num, x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 1.0])


# -- zero gradients -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "f", [tg.floor, tg.ceil, tg.round, tg.rint, tg.trunc, tg.fix, tg.sign, lambda t: tg.floor_divide(t, 0.3)]
)
def test_piecewise_constant_functions_have_gradient_zero(f):
    x = np.array([-1.7, -0.2, 0.6, 2.5])
    ref = getattr(np, f.__name__, lambda a: np.floor_divide(a, 0.3))
    np.testing.assert_array_equal(f(tg.Tensor(x)).numpy(), ref(x))
    np.testing.assert_array_equal(tg.grad(lambda t: f(t).sum())(x), np.zeros(4))  # zero, not an error
    np.testing.assert_array_equal(tg.grad(lambda t: (t - f(t)).sum())(x), np.ones(4))
    t = tg.Tensor(x, requires_grad=True)
    with tape.record() as rec:
        f(t)
    assert len(rec) == 0  # nothing recorded, nothing saved


def test_heaviside_gradient_goes_to_the_value_at_zero():
    gx, gh = _grad(tg.heaviside, [-1.0, 0.0, 2.0, 0.0], [0.3, 0.5, 0.7, 0.2])
    assert gx is None  # its derivative in x1 is 0 almost everywhere: no gradient
    np.testing.assert_array_equal(gh, [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(tg.grad(tg.heaviside)(np.array([1.0]), 0.5), [0.0])


def test_copysign_gradient_follows_the_sign_change():
    gx, gy = _grad(tg.copysign, [2.0, -3.0, 1.0], [-1.0, -1.0, 5.0])
    np.testing.assert_array_equal(gx, [-1.0, 1.0, 1.0])
    assert gy is None


def test_no_gradient_functions_take_axes():
    x = tg.Tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(tg.count_nonzero(x, axis=-1).numpy(), [2, 1])
    np.testing.assert_array_equal(tg.all(x, axis=0, keepdims=True).numpy(), [[False, False, True]])
    np.testing.assert_array_equal(tg.any(x, axis=(0, 1)).numpy(), True)
    np.testing.assert_array_equal(tg.argsort(x, axis=None).numpy(), np.argsort(x.numpy(), axis=None))
    assert not tg.isnan(x).requires_grad and tg.isfinite(x).dtype == bool


def test_sinc_has_its_second_derivative_at_zero():
    hess = tg.hessian(lambda t: tg.sinc(t).sum())(np.array([0.0, 1e-3, 0.5]))
    np.testing.assert_allclose(np.diag(hess)[0], -(np.pi**2) / 3, rtol=1e-12)
    assert tg.gradgradcheck(tg.sinc, np.array([0.0, 0.0099, 0.0101, -0.3, 1.7]))


# -- lists, tuples -------------------------------------------------------------------------------------------------
def test_splits_return_lists_of_tensors_that_carry_gradients():
    x = np.arange(10.0).reshape(2, 5)
    t = tg.Tensor(x, requires_grad=True)
    with tape.record():
        parts = tg.array_split(t, 3, axis=1)
        out = parts[0].sum() + 2 * parts[2].sum()
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 2), (2, 2), (2, 1)]
    out.backward()
    np.testing.assert_array_equal(t.grad, [[1, 1, 0, 0, 2], [1, 1, 0, 0, 2]])
    assert isinstance(tg.split(t, [1, 3], axis=1), list) and len(tg.hsplit(t, 5)) == 5
    assert isinstance(tg.meshgrid(t[0], t[1]), tuple) and isinstance(tg.broadcast_arrays(t, t[0]), tuple)
    with pytest.raises(ValueError, match="split: an axis of length 5 does not split into 2 equal sections"):
        tg.split(t, 2, axis=1)


def test_average_returns_the_sum_of_weights():
    a, w = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 3.0])
    avg, scale = tg.average(tg.Tensor(a), axis=1, weights=tg.Tensor(w), returned=True)
    expected, expected_scale = np.average(a, axis=1, weights=w, returned=True)
    np.testing.assert_array_equal(avg.numpy(), expected)
    np.testing.assert_array_equal(scale.numpy(), expected_scale)
    avg, scale = tg.average(tg.Tensor(a.astype(np.float32)), axis=0, returned=True)
    expected, expected_scale = np.average(a.astype(np.float32), axis=0, returned=True)
    np.testing.assert_array_equal(avg.numpy(), expected)
    np.testing.assert_array_equal(scale.numpy(), expected_scale)
    assert scale.dtype == expected_scale.dtype == np.float32
    with pytest.raises(ZeroDivisionError, match="average"):
        tg.average(tg.Tensor(a), axis=1, weights=[1.0, -1.0])


# -- indexed updates ----------------------------------------------------------------------------------------------------
def test_index_update_with_repeats_lets_the_last_write_win_and_take_the_gradient():
    x, v, idx = np.array([1.0, 2.0, 3.0, 4.0]), np.array([8.0, 9.0, 7.0]), np.array([0, 0, 2])
    g = np.array([10.0, 20.0, 30.0, 40.0])
    out = tg.index_update(tg.Tensor(x), idx, tg.Tensor(v))
    np.testing.assert_array_equal(out.numpy(), [9.0, 2.0, 7.0, 4.0])
    gx, gv = _grad(lambda a, b: tg.index_update(a, idx, b), x, v, cotangent=g)
    np.testing.assert_array_equal(gx, [0.0, 20.0, 0.0, 40.0])  # overwritten: no gradient
    np.testing.assert_array_equal(gv, [0.0, 10.0, 30.0])  # the first write to 0 was lost
    gx, gv = _grad(lambda a, b: tg.index_update(a, slice(1, 3), b), x, np.array(5.0), cotangent=g)
    np.testing.assert_array_equal(gx, [10.0, 0.0, 0.0, 40.0])
    np.testing.assert_array_equal(gv, 50.0)  # broadcast to both places


def test_index_add_with_repeats_accumulates():
    x, v, idx = np.array([1.0, 2.0, 3.0]), np.array([8.0, 9.0, 7.0]), np.array([0, 0, 2])
    g = np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(tg.index_add(tg.Tensor(x), idx, tg.Tensor(v)).numpy(), [18.0, 2.0, 10.0])
    gx, gv = _grad(lambda a, b: tg.index_add(a, idx, b), x, v, cotangent=g)
    np.testing.assert_array_equal(gx, g)
    np.testing.assert_array_equal(gv, [10.0, 10.0, 30.0])
    m = np.zeros((3, 2))
    _, gv = _grad(lambda a, b: tg.index_add(a, (np.array([1, 1]), slice(None)), b), m, np.array(1.0))
    np.testing.assert_array_equal(gv, 4.0)  # a scalar added at four places


def test_indexed_updates_have_second_derivatives():
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    idx = (np.array([0, 2, 0]), slice(1, None))
    assert tg.gradgradcheck(lambda a, b: tg.index_update(a, idx, b) ** 3, x, v)
    assert tg.gradgradcheck(lambda a, b: tg.sin(tg.index_add(a * b[0, 0], idx, b * a[1:, :2])), x, v)


def test_at_spells_the_updates_as_jax_does(backend):
    x = tg.Tensor(backend.asarray(np.array([1.0, 2.0, 3.0])), requires_grad=True)
    v = tg.Tensor(backend.asarray(np.array([5.0, 6.0])), requires_grad=True)
    with tape.record():
        added, written, got = At(x)[np.array([2, 2])].add(v), At(x)[0].set(7.0), At(x)[1:].get()
        out = added.sum() + 2 * written.sum() + got.sum()
    np.testing.assert_array_equal(backend.to_numpy(added.data), [1.0, 2.0, 14.0])
    np.testing.assert_array_equal(backend.to_numpy(written.data), [7.0, 2.0, 3.0])
    np.testing.assert_array_equal(backend.to_numpy(got.data), [2.0, 3.0])
    out.backward()
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [1.0, 1 + 2 + 1, 1 + 2 + 1])
    np.testing.assert_array_equal(backend.to_numpy(v.grad), [1.0, 1.0])


# -- einsum ---------------------------------------------------------------------------------------------------------------
def test_einsum_repeated_indices_put_the_gradient_on_the_diagonal():
    x = np.arange(9.0).reshape(3, 3)
    (g,) = _grad(lambda t: tg.einsum("ii->i", t), x, cotangent=np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, np.diag([1.0, 2.0, 3.0]))
    (g,) = _grad(lambda t: tg.einsum("ii", t), x)
    np.testing.assert_array_equal(g, np.eye(3))
    (g,) = _grad(lambda t: tg.einsum("ij->", t), x)
    np.testing.assert_array_equal(g, np.ones((3, 3)))


def test_einsum_passes_optimize_forward_and_backward(monkeypatch):
    seen = []

    def spy(*args, optimize=False, **kwargs):
        seen.append(optimize)
        return np.einsum(*args, optimize=optimize, **kwargs)

    monkeypatch.setattr(numpy_rules, "einsum", spy, raising=False)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) for s in [(3, 4), (4, 5), (5, 2)]]
    grads = _grad(lambda a, b, c: tg.einsum("ij,jk,kl->il", a, b, c, optimize="optimal"), *xs)
    assert seen == ["optimal"] * 3  # one einsum per operand's gradient
    expected = np.ones((3, 2)) @ (xs[1] @ xs[2]).T
    np.testing.assert_allclose(grads[0], expected, rtol=1e-12)


def test_einsum_optimize_picks_a_cheaper_order_for_three_operands():
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((48, 48)) for _ in range(3)]
    _, report = np.einsum_path("ij,jk,kl->il", *xs, optimize="greedy")
    assert "Optimized FLOP count" in report  # pairwise: two matrix products instead of one 4-deep loop

    def timed(optimize):
        start = time.perf_counter()
        for _ in range(3):
            _grad(lambda a, b, c: tg.einsum("ij,jk,kl->il", a, b, c, optimize=optimize), *xs)
        return time.perf_counter() - start

    timed(True)  # warm up
    assert timed(True) * 3 < timed(False)  # 48^4 multiply-adds per einsum without, 2 * 48^3 with


def test_einsum_errors_name_the_operands():
    with pytest.raises(ValueError, match="einsum: 'ij,jk' names 2 operands, got 1"):
        tg.einsum("ij,jk", tg.Tensor(np.ones((2, 2))))
    with pytest.raises(TypeError, match="each operand is followed by a list of its subscripts"):
        tg.einsum(tg.Tensor(np.ones(2)), "i")
    with pytest.raises(ValueError, match=r"subscript 52 .* not within the valid range \[0, 52\)"):
        tg.einsum(tg.Tensor(np.ones(2)), [52])


@pytest.mark.parametrize(
    "sublists, subscripts, shapes",
    [
        (([0, 1], [1, 2], [0, 2]), "ij,jk->ik", [(2, 3), (3, 4)]),  # a matrix product, output given
        (([0, 1], [1, 2]), "ij,jk", [(2, 3), (3, 4)]),  # implicit output
        (([0, 1], [0, 1], []), "ij,ij->", [(2, 3), (2, 3)]),  # a full contraction
        (([Ellipsis, 1], [1, 2], [Ellipsis, 2]), "...j,jk->...k", [(2, 3), (3, 4)]),
        (([30, 3], [3, 40], [30, 40]), "eD,Do->eo", [(2, 3), (3, 4)]),  # 0-25 are 'A'-'Z', 26-51 'a'-'z'
    ],
    ids=["explicit", "implicit", "contraction", "ellipsis", "upper and lower letters"],
)
@pytest.mark.parametrize("how", ["tg.einsum", "tapegrad.numpy.einsum", "np.einsum on tensors"])
def test_einsum_takes_numpys_sublist_form_with_the_gradient_of_the_string_form(sublists, subscripts, shapes, how):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s) for s in shapes)
    einsum = {"tg.einsum": tg.einsum, "tapegrad.numpy.einsum": tnp.einsum, "np.einsum on tensors": np.einsum}[how]

    def sublist_form(x, y):
        return einsum(x, sublists[0], y, *sublists[1:])

    np.testing.assert_allclose(np.einsum(a, sublists[0], b, *sublists[1:]), np.einsum(subscripts, a, b), rtol=1e-12)
    for got, expected in zip(_grad(sublist_form, a, b), _grad(lambda x, y: tg.einsum(subscripts, x, y), a, b)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert tg.gradcheck(sublist_form, a, b)


# -- errors and backends ------------------------------------------------------------------------------------------------------
def test_unsupported_modes_and_inputs_raise_clearly():
    x = tg.Tensor(np.ones((3, 3)))
    with pytest.raises(NotImplementedError, match="pad: mode 'mean' has no gradient rule"):
        tg.pad(x, 1, mode="mean")
    with pytest.raises(NotImplementedError, match="pad: reflect_type='odd'"):
        tg.pad(x, 1, mode="reflect", reflect_type="odd")
    with pytest.raises(TypeError, match="convolve: complex inputs are not supported"):
        tg.convolve(tg.Tensor(np.ones(2, complex)), tg.Tensor(np.ones(2)))
    with pytest.raises(NotImplementedError, match="quantile: method 'weibull'"):
        tg.quantile(x, 0.5, method="weibull")
    with pytest.raises(ValueError, match="percentile: the quantiles must lie in"):
        tg.percentile(x, 120)
    with pytest.raises(ValueError, match="diagonal: axis1 and axis2 cannot be the same"):
        tg.diagonal(x, axis1=1, axis2=-1)


def test_the_new_functions_keep_their_library(backend):
    x = tg.Tensor(backend.asarray(np.array([[0.5, -1.5, 2.0], [1.0, 0.0, -0.25]])), requires_grad=True)
    if backend.name == "dask":  # Dask has no sort: its unsupported ops raise (tapegrad.backend.dask_array)
        with pytest.raises(NotImplementedError, match="the dask backend"):
            tg.sort(x, axis=1)
        return
    with tape.record():
        parts = [
            tg.sort(x, axis=1),
            tg.cumprod(x, axis=0),
            tg.prod(x, axis=1, keepdims=True),
            tg.median(x, axis=0),
            tg.take_along_axis(x, backend.asarray(np.array([[2, 2, 0]])), axis=1),
            tg.index_update(x, (slice(None), np.array([0, 0])), 3.0),
            tg.floor(x) * x,
            tg.flip(tg.roll(x, 1, axis=1), axis=0),
        ]
        out = sum(p.sum() for p in parts)
    out.backward()
    assert backend.is_native(x.grad) and x.grad.shape == (2, 3)
    ref = _grad(
        lambda t: sum(
            p.sum()
            for p in [
                tg.sort(t, axis=1),
                tg.cumprod(t, axis=0),
                tg.prod(t, axis=1, keepdims=True),
                tg.median(t, axis=0),
                tg.take_along_axis(t, np.array([[2, 2, 0]]), axis=1),
                tg.index_update(t, (slice(None), np.array([0, 0])), 3.0),
                tg.floor(t) * t,
                tg.flip(tg.roll(t, 1, axis=1), axis=0),
            ]
        ),
        backend.to_numpy(x.data),
    )[0]
    np.testing.assert_allclose(backend.to_numpy(x.grad), ref, rtol=1e-12)


def test_aliases_are_the_same_functions():
    pairs = [(tg.amax, tg.max), (tg.amin, tg.min), (tg.radians, tg.deg2rad), (tg.degrees, tg.rad2deg)]
    pairs += [(tg.mod, tg.remainder), (tg.around, tg.round), (tg.row_stack, tg.vstack)]
    assert all(a is b for a, b in pairs)


def test_every_new_docstring_example_runs():
    # functions made by defop/defnondiff: their code (so their docstrings, for pytest) is not their module's
    made = [(n, getattr(tg.ops, n)) for n in tg.ops.__all__]
    names = [n for n, f in made if f.__globals__ is not vars(sys.modules[f.__module__]) and f.__doc__]
    assert len(names) > 50
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failed = []
    for name in names:
        for test in finder.find(getattr(tg.ops, name), name, globs={}):
            if runner.run(test, out=lambda s: None).failed:
                failed.append(name)
    assert not failed, f"docstring examples that fail: {failed}"


# -- cross-checks against PyTorch -------------------------------------------------------------------------------------------------
def _torch_cases(torch):
    F = torch.nn.functional
    unit, pos, real = "unit", "pos", "real"
    return [
        ("tan", tg.tan, torch.tan, unit),
        ("arcsin", tg.arcsin, torch.asin, unit),
        ("arccos", tg.arccos, torch.acos, unit),
        ("arctan", tg.arctan, torch.atan, real),
        ("sinh", tg.sinh, torch.sinh, real),
        ("cosh", tg.cosh, torch.cosh, real),
        ("arcsinh", tg.arcsinh, torch.asinh, real),
        ("arccosh", lambda x: tg.arccosh(x + 1), lambda x: torch.acosh(x + 1), pos),
        ("arctanh", tg.arctanh, torch.atanh, unit),
        ("log1p", tg.log1p, torch.log1p, pos),
        ("expm1", tg.expm1, torch.expm1, real),
        ("log2", tg.log2, torch.log2, pos),
        ("log10", tg.log10, torch.log10, pos),
        ("exp2", tg.exp2, torch.exp2, real),
        ("square", tg.square, torch.square, real),
        ("reciprocal", tg.reciprocal, torch.reciprocal, pos),
        ("sinc", tg.sinc, torch.sinc, real),
        ("deg2rad", tg.deg2rad, torch.deg2rad, real),
        ("rad2deg", tg.rad2deg, torch.rad2deg, real),
        ("nan_to_num", tg.nan_to_num, torch.nan_to_num, real),
        ("arctan2", lambda x: tg.arctan2(x, x[::-1] + 3), lambda x: torch.atan2(x, x.flip(0) + 3), real),
        ("hypot", lambda x: tg.hypot(x, x[::-1]), lambda x: torch.hypot(x, x.flip(0)), pos),
        ("logaddexp", lambda x: tg.logaddexp(x, x[::-1]), lambda x: torch.logaddexp(x, x.flip(0)), real),
        ("logaddexp2", lambda x: tg.logaddexp2(x, x[::-1]), lambda x: torch.logaddexp2(x, x.flip(0)), real),
        ("copysign", lambda x: tg.copysign(x, x[::-1]), lambda x: torch.copysign(x, x.flip(0)), real),
        ("float_power", lambda x: tg.float_power(x, x[::-1]), lambda x: torch.float_power(x, x.flip(0)), pos),
        ("fmax", lambda x: tg.fmax(x, x[::-1] * 0.9), lambda x: torch.fmax(x, x.flip(0) * 0.9), real),
        ("fmin", lambda x: tg.fmin(x, x[::-1] * 0.9), lambda x: torch.fmin(x, x.flip(0) * 0.9), real),
        ("remainder", lambda x: tg.remainder(x * 3, x[::-1]), lambda x: torch.remainder(x * 3, x.flip(0)), pos),
        ("fmod", lambda x: tg.fmod(x * 3, x[::-1] - 3), lambda x: torch.fmod(x * 3, x.flip(0) - 3), pos),
        ("prod", lambda x: tg.prod(tg.reshape(x, (2, 3)), axis=1), lambda x: x.reshape(2, 3).prod(1), "zeros"),
        ("cumsum", tg.cumsum, lambda x: torch.cumsum(x, 0), real),
        ("cumprod", tg.cumprod, lambda x: torch.cumprod(x, 0), "zeros"),
        ("std", lambda x: tg.std(x, ddof=1), lambda x: torch.std(x, correction=1), real),
        ("nansum", tg.nansum, torch.nansum, real),
        ("nanmean", tg.nanmean, torch.nanmean, real),
        ("median", tg.median, lambda x: torch.quantile(x, 0.5), real),  # torch.median picks the lower one
        ("percentile", lambda x: tg.percentile(x, 30), lambda x: torch.quantile(x, 0.3), real),
        (
            "quantile",
            lambda x: tg.quantile(x, [0.1, 0.9]),
            lambda x: torch.quantile(x, torch.tensor([0.1, 0.9], dtype=x.dtype)),
            real,
        ),
        ("amax", tg.amax, torch.amax, real),
        (
            "sort",
            lambda x: tg.sort(x) * tg.Tensor(np.arange(6.0)),
            lambda x: torch.sort(x).values * torch.arange(6.0),
            real,
        ),
        ("flip", lambda x: tg.flip(x) * tg.Tensor(np.arange(6.0)), lambda x: x.flip(0) * torch.arange(6.0), real),
        ("roll", lambda x: tg.roll(x, 2) * tg.Tensor(np.arange(6.0)), lambda x: x.roll(2) * torch.arange(6.0), real),
        ("rot90", lambda x: tg.rot90(tg.reshape(x, (2, 3))), lambda x: torch.rot90(x.reshape(2, 3)), real),
        ("tile", lambda x: tg.tile(x, (2, 1)), lambda x: torch.tile(x, (2, 1)), real),
        ("repeat", lambda x: tg.repeat(x, 2), lambda x: torch.repeat_interleave(x, 2), real),
        (
            "take_along_axis",
            lambda x: tg.take_along_axis(x, np.array([5, 0, 0]), 0),
            lambda x: torch.take_along_dim(x, torch.tensor([5, 0, 0]), 0),
            real,
        ),
        ("outer", lambda x: tg.outer(x, x[:3]), lambda x: torch.outer(x, x[:3]), real),
        ("kron", lambda x: tg.kron(tg.reshape(x, (2, 3)), x[:2]), lambda x: torch.kron(x.reshape(2, 3), x[:2]), real),
        (
            "tensordot",
            lambda x: tg.tensordot(tg.reshape(x, (2, 3)), tg.reshape(x, (3, 2)), ([1, 0], [0, 1])),
            lambda x: torch.tensordot(x.reshape(2, 3), x.reshape(3, 2), ([1, 0], [0, 1])),
            real,
        ),
        (
            "einsum",
            lambda x: tg.einsum("ii->i", tg.reshape(x[:4], (2, 2))),
            lambda x: torch.einsum("ii->i", x[:4].reshape(2, 2)),
            real,
        ),
        (
            "trace",
            lambda x: tg.trace(tg.reshape(x, (2, 3)), 1),
            lambda x: torch.diagonal(x.reshape(2, 3), 1).sum(),
            real,
        ),
        ("diagflat", lambda x: tg.diagflat(x[:3], 1), lambda x: torch.diagflat(x[:3], 1), real),
        ("tril", lambda x: tg.tril(tg.reshape(x, (2, 3)), 1), lambda x: torch.tril(x.reshape(2, 3), 1), real),
        ("vdot", lambda x: tg.vdot(x, x[::-1]), lambda x: torch.vdot(x, x.flip(0)), real),
        (
            "correlate",
            lambda x: tg.correlate(x, x[:3] * 2),
            lambda x: F.conv1d(x[None, None], x[:3][None, None] * 2)[0, 0],
            real,
        ),
        (
            "convolve",
            lambda x: tg.convolve(x, x[:3] * 2),
            lambda x: F.conv1d(x[None, None], x[:3].flip(0)[None, None] * 2, padding=2)[0, 0],
            real,
        ),
        (
            "pad",
            lambda x: tg.pad(tg.reshape(x, (2, 3)), ((0, 0), (2, 2)), mode="reflect"),
            lambda x: F.pad(x.reshape(1, 2, 3), (2, 2), mode="reflect")[0],
            real,
        ),
        (
            "pad",
            lambda x: tg.pad(tg.reshape(x, (2, 3)), ((0, 0), (1, 3)), mode="edge"),
            lambda x: F.pad(x.reshape(1, 2, 3), (1, 3), mode="replicate")[0],
            real,
        ),
        (
            "pad",
            lambda x: tg.pad(tg.reshape(x, (2, 3)), ((0, 0), (2, 1)), mode="wrap"),
            lambda x: F.pad(x.reshape(1, 2, 3), (2, 1), mode="circular")[0],
            real,
        ),
    ]


def _torch_input(domain):
    rng = np.random.default_rng(7)
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, 6)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, 6)
    if domain == "zeros":
        return np.array([1.5, 0.0, -2.0, 0.5, 0.0, 0.0])
    return rng.standard_normal(6)


def test_gradients_agree_with_torch():
    torch = pytest.importorskip("torch")
    failed = []
    for name, tg_fn, torch_fn, domain in _torch_cases(torch):
        x = _torch_input(domain)
        xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        out_t = torch_fn(xt)
        w = np.random.default_rng(1).standard_normal(tuple(out_t.shape))
        (out_t * torch.tensor(w)).sum().backward()
        (g,) = _grad(tg_fn, x, cotangent=w)
        value = tg_fn(tg.Tensor(x)).numpy()
        if not (
            np.allclose(value, out_t.detach().numpy(), rtol=1e-10)
            and np.allclose(g, xt.grad.numpy(), rtol=1e-9, atol=1e-12)
        ):
            failed.append(name)
    assert not failed, f"disagree with torch: {failed}"


def test_second_derivatives_agree_with_torch():
    torch = pytest.importorskip("torch")
    for name, tg_fn, torch_fn, domain in itertools.islice(_torch_cases(torch), None, None, 4):
        x = _torch_input(domain)
        xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        out = torch_fn(xt).sum()
        (g,) = torch.autograd.grad(out, xt, create_graph=True)
        if g.requires_grad:
            expected = torch.autograd.grad((g * torch.arange(6.0, dtype=torch.float64)).sum(), xt, allow_unused=True)[0]
            expected = np.zeros(6) if expected is None else expected.numpy()
        else:  # linear: the gradient is a constant
            expected = np.zeros(6)
        got = tg.grad(lambda t, f=tg_fn: (tg.grad(lambda u: f(u).sum())(t) * tg.Tensor(np.arange(6.0))).sum())(x)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=name)


def test_vdot_vecdot_and_vecmat_conjugate_their_first_complex_input_as_numpy_does():
    rng = np.random.default_rng(0)
    a, b = (
        rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3)),
        rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3)),
    )
    np.testing.assert_allclose(tg.vdot(tg.Tensor(a), tg.Tensor(b)).numpy(), np.vdot(a, b))
    np.testing.assert_allclose(tg.vecdot(tg.Tensor(a), tg.Tensor(b)).numpy(), np.vecdot(a, b))
    m = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    np.testing.assert_allclose(tg.vecmat(tg.Tensor(a), tg.Tensor(m)).numpy(), np.vecmat(a, m))
    assert tg.gradcheck(lambda x, y: tg.vdot(x, y), a, b)
