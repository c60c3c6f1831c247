"""Fused kernels (``tg.compile`` with the ``jit`` extra, numba): the same numbers as eager, runs that are
really fused, kernels shared by runs of one structure and cached on disk, and the program without numba.

The bound: a fused step rounds in its own dtype as NumPy's does, so arithmetic, comparisons and selects are
eager's to the bit; numba's transcendental functions (LLVM's libm) differ from NumPy's (its own SIMD loops)
by at most ``PER_OP`` ulps each (measured on 400,000 values: exp, log1p, expm1 1 ulp in float64, tanh 3;
float32 log 4), so a program's outputs are compared within ``ULPS`` ulps of the output's largest magnitude.
A sum or mean fused into the loop that computes what it reduces walks NumPy's pairwise tree: NumPy's to the bit.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from programs import programs

import tapegrad as tg
from tapegrad.compile import fuse, pairwise, vecmath

ULPS = 64  # ulps of an output's largest magnitude, through a random program of up to eight ops
PER_OP = 4  # ulps of one transcendental function against NumPy's


def assert_within_ulps(got, expected, ulps=ULPS, floor=0.0):
    """Within ``ulps`` of the output's largest magnitude, or of ``floor`` where that is larger."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected)
        return
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)])
    scale = max(np.max(np.abs(expected[finite]), initial=0.0), floor)
    bound = ulps * np.spacing(expected.dtype.type(scale)) if scale else 0
    assert np.all(np.abs(got[finite] - expected[finite]) <= bound), np.max(np.abs(got[finite] - expected[finite]))


def assert_same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def leaves(tree):
    return tg._tree.tree_flatten(tree)[0]


# -- without numba: the NumPy program ----------------------------------------------------------------------------
def test_without_numba_the_program_is_numpys_calls_and_fuse_true_says_what_to_install(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "ok", False)
    f = tg.compile(lambda x, y: tg.tanh(x * y + 1.0) - x)
    x, y = np.linspace(-2, 2, 7), np.linspace(1, 3, 7)
    assert_same(f(x, y), np.tanh(x * y + 1.0) - x)
    assert f.program.info["fused_runs"] == 0 and "def fused" not in f.source
    with pytest.raises(ImportError, match=r"pip install tapegrad\[jit\]"):
        tg.compile(lambda x: x, fuse=True)
    with pytest.raises(ValueError, match="fuse must be None"):
        tg.compile(lambda x: x, fuse="yes")


def test_tapegrad_fuse_0_in_the_environment_turns_the_default_off(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "ok", True)  # as if numba were installed
    monkeypatch.setenv("TAPEGRAD_FUSE", "0")
    assert tg.compile(lambda x: x).fuse is False
    monkeypatch.setenv("TAPEGRAD_FUSE", "1")
    assert tg.compile(lambda x: x).fuse is True
    assert tg.compile(lambda x: x, fuse=False).fuse is False


def test_a_process_without_numba_compiles_and_runs_the_numpy_program(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        sys.modules["numba"] = None  # as if it were not installed: importing it raises ImportError
        import numpy as np, tapegrad as tg
        f = tg.compile(tg.value_and_grad(lambda x: (tg.tanh(x * 2.0 + 1.0) ** 2).sum()))
        x = np.linspace(-1, 1, 5)
        v, g = f(x)
        v2, g2 = tg.value_and_grad(lambda x: (tg.tanh(x * 2.0 + 1.0) ** 2).sum())(x)
        assert v.tobytes() == v2.tobytes() and g.tobytes() == g2.tobytes()
        print(f.program.info["fused_runs"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0"]


needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="fused kernels need the jit extra: pip install tapegrad[jit]"
)


# -- fused: the same numbers ---------------------------------------------------------------------------------------
@needs_numba
@settings(max_examples=max(6, settings.default.max_examples // 2))
@given(programs())
def test_random_programs_fused_equal_eager_within_the_bound(program):
    n = len(program.inputs)

    def loss(*xs):
        out = program(*xs)
        return (out * np.linspace(0.5, 1.5, out.size).reshape(out.shape)).sum()

    vg = tg.value_and_grad(loss, argnums=tuple(range(n)))
    step = tg.compile(vg, check=False, fuse=True)
    for args in (program.inputs, [np.cos(a) + 0.1 * a for a in program.inputs]):
        for got, expected in zip(leaves(step(*args)), leaves(vg(*args))):
            # floor=1: an output far smaller than the program's values carries their rounding, not its own
            # (the gradient of tanh(tanh(x)) is a product of 1 - t**2 near saturation, which cancels)
            assert_within_ulps(got, expected, floor=1.0)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_each_transcendental_function_is_within_its_ulp_bound_of_numpys(dtype):
    x = np.random.default_rng(3).standard_normal(4000).astype(dtype) * 3
    for f in (tg.exp, tg.tanh, tg.sin, lambda x: tg.log(tg.abs(x) + 0.5)):
        compiled = tg.compile(lambda x, f=f: f(x) + 0.0, fuse=True, check=False)
        compiled(x)
        got, expected = compiled(x), np.asarray(f(tg.Tensor(x)).data)
        assert compiled.program.info["fused_runs"] == 1
        ulps = np.abs(got.astype(np.float64) - expected) / np.spacing(np.abs(expected))
        assert ulps.max() <= PER_OP


def _run(f, *args, fused_at_least=1):
    compiled = tg.compile(f, fuse=True, check=False)
    got = compiled(*args)
    again = compiled(*args)  # the program itself (the first call is the trace)
    assert compiled.program.info["fused_runs"] >= fused_at_least, compiled.source
    return got, again


@needs_numba
def test_arithmetic_is_eagers_to_the_bit_with_nan_inf_broadcasting_and_mixed_dtypes():
    x = np.array([[1.5, -np.inf, np.nan, 0.0], [-0.0, 2.0, 3.25, np.inf]], dtype=np.float32)
    row = np.array([2, -3, 0, 7], dtype=np.int16)  # broadcast along the rows, another dtype
    col = np.array([[0.5], [np.nan]])  # float64: the result is float64

    def f(x, row, col):
        a = x * row + 1.5  # float32 (the int16 and the Python float take x's dtype)
        b = tg.maximum(a, -a) - x / 4.0
        return b, b * col - 2.0

    got, again = _run(f, x, row, col)
    expected = f(tg.Tensor(x), tg.Tensor(row), tg.Tensor(col))
    for g, a, e in zip(got, again, expected):
        assert_same(g, e.data)
        assert_same(a, e.data)


@needs_numba
def test_integers_booleans_and_0d_inputs_in_a_fused_kernel():
    i = np.array([[3, -4, 5], [0, 7, -1]], dtype=np.int64)
    k = np.array(2, dtype=np.int32)  # 0-d
    s = np.array(0.25)  # 0-d float64

    def f(i, k, s):
        j = i * k + 1 - i  # int64
        mask = j > 2
        return j, mask, tg.where(mask, j * s, -s)

    got, again = _run(f, i, k, s)
    expected = f(tg.Tensor(i), tg.Tensor(k), tg.Tensor(s))
    for g, a, e in zip(got, again, expected):
        assert_same(g, e.data)
        assert_same(a, e.data)


@needs_numba
def test_a_program_of_0d_values_fuses():
    def f(a, b):
        return tg.tanh(a * b + 1.0) * a - b

    a, b = np.array(0.5), np.array(-1.25)
    got, again = _run(f, a, b)
    assert_within_ulps(got, np.tanh(a * b + 1.0) * a - b, ulps=2)
    assert np.shape(got) == () and np.shape(again) == ()


@needs_numba
def test_a_masked_gradient_keeps_its_zeros_where_the_cotangent_is_not_finite():
    """relu's gradient is a select: inf or NaN where the mask is off must give 0, never NaN (g * mask would)."""

    def f(x, g):
        return tg.grad(lambda x: (tg.relu(x) * g).sum())(x)

    x = np.array([-1.0, 2.0, -3.0, 4.0])
    g = np.array([np.inf, 1.0, np.nan, -2.0])
    got, _ = _run(f, x, g)
    assert_same(got, np.array([0.0, 1.0, 0.0, -2.0]))


@needs_numba
def test_compiled_sgd_training_fused_follows_the_numpy_program():
    rng = np.random.default_rng(0)
    params = {
        "W1": rng.standard_normal((6, 16)) * 0.3,
        "b1": np.zeros(16),
        "W2": rng.standard_normal((16, 3)) * 0.3,
        "b2": np.zeros(3),
    }
    X, Y = rng.standard_normal((32, 6)), rng.standard_normal((32, 3))

    def loss(p, x, y):
        h = tg.relu(x @ p["W1"] + p["b1"])
        return ((h @ p["W2"] + p["b2"] - y) ** 2).mean()

    def step(p, x, y):
        value, g = tg.value_and_grad(loss)(p, x, y)
        return value, {k: p[k] - 0.1 * g[k] for k in p}

    fused = tg.compile(step, donate_argnums=0, fuse=True)
    plain = tg.compile(step, donate_argnums=0, fuse=False)
    pf = {k: v.copy() for k, v in params.items()}
    pp = {k: v.copy() for k, v in params.items()}
    for i in range(0, 32, 8):
        lf, pf = fused(pf, X[i : i + 8], Y[i : i + 8])
        lp, pp = plain(pp, X[i : i + 8], Y[i : i + 8])
        assert_same(lf, lp)  # the elementwise work is arithmetic and a select, the mean NumPy's sum: to the bit
    for k in params:
        assert_same(pf[k], pp[k])
    assert fused.program.info["fused_runs"] >= 2, fused.source


def test_the_walk_of_numpys_pairwise_tree_is_numpys_sum_to_the_bit():
    rng = np.random.default_rng(2)
    for n in [*range(1, 300), 1000, 4097, 100_003]:
        for dtype in (np.float64, np.float32):
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dtype)  # cancellation
            got = pairwise.pairwise_sum(x)
            assert got.dtype == dtype and got == np.sum(x), (n, dtype)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(6,), (5000,), (37, 2900), (4096, 1), (3, 1, 7), (1, 200)])
def test_a_sum_or_mean_ending_a_run_is_its_loops_accumulator_and_numpys_to_the_bit(dtype, shape):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6, shape)).astype(dtype)
    w = rng.standard_normal(shape[-1:]).astype(dtype)  # broadcast

    def f(x, w):
        return tg.sum(x * w - 1.5), tg.mean(x * x, axis=tuple(range(len(shape))), keepdims=True)

    compiled = tg.compile(f, fuse=True)
    compiled(x, w)
    got = compiled(x, w)
    assert compiled.program.info["fused_runs"] == 2 and compiled.source.count("after_leaf(") == 2, compiled.source
    for g, e in zip(got, f(tg.Tensor(x), tg.Tensor(w))):
        assert_same(g, e.data)


@needs_numba
def test_a_value_numpy_would_sum_in_another_order_keeps_numpys_sum():
    x = np.asfortranarray(np.random.default_rng(3).standard_normal((300, 40)))  # F-ordered: so is x * 2.0

    def f(x):
        return tg.sum(x * 2.0 + 1.0)

    compiled = tg.compile(f, fuse=True)
    compiled(x)
    assert_same(compiled(x), f(tg.Tensor(x)).data)
    assert "add_reduce" in compiled.source and "after_leaf(" not in compiled.source, compiled.source


def _tanh_ulps(got, x):
    """ulps of ``got`` from ``tanh(x)`` computed in long double, counted in the float64 result's spacing."""
    exact = np.tanh(x.astype(np.longdouble))
    return np.abs(got.astype(np.longdouble) - exact) / np.spacing(np.abs(exact).astype(np.float64))


def _whole_float64_range():
    rng = np.random.default_rng(4)
    bits = rng.integers(0, 0x7FF0000000000000, 20000, dtype=np.int64)  # every exponent, subnormals too
    x = np.concatenate([bits.view(np.float64), rng.standard_normal(4000) * 4, np.geomspace(1e-310, 25, 2000)])
    x = np.concatenate([x, np.linspace(17, 21, 401), [5e-324, 2.2250738585072014e-308, 1e-8, 0.55, 19.06, 1e300]])
    return np.concatenate([x, -x])


def test_the_vectorisable_tanh_is_within_its_ulp_bound_over_the_float64_range():
    x = _whole_float64_range()
    got = np.array([vecmath.tanh(v) for v in x.tolist()])
    assert _tanh_ulps(got, x).max() <= vecmath.TANH_ULPS
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1e300, -1e300]
    got = np.array([vecmath.tanh(v) for v in special])
    assert_same(got, np.tanh(special))
    signed = ~np.isnan(got)  # a NaN's sign is NumPy's loop's choice (it varies with the loop taken)
    assert np.array_equal(np.signbit(got[signed]), np.signbit(np.tanh(special))[signed])


@needs_numba
def test_a_large_chain_through_tanh_is_one_vectorised_loop_within_the_bound(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "vtanh", True)  # whatever NumPy's tanh is on this machine
    n = fuse.LARGE + 1001
    x = np.resize(_whole_float64_range(), n)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 30.0]
    w = np.random.default_rng(5).integers(-3, 4, n).astype(np.int32)  # another dtype: cast in the loop
    b = np.array([0.25])  # broadcast

    def f(x, w, b):
        h = tg.tanh(x)
        return tg.tanh(h * w - b) * 2.0, h

    compiled = tg.compile(f, fuse=True, check=False)
    compiled(x, w, b)
    out = compiled(x, w, b)
    assert compiled.program.info["fused_runs"] == 1 and "vtanh(" in compiled.source, compiled.source
    assert " tanh(" not in compiled.source, compiled.source  # no NumPy call left between fused loops
    assert_same(np.signbit(out[1][:6]), np.signbit(np.tanh(x[:6])))
    assert _tanh_ulps(out[1], x)[~np.isnan(x)].max() <= vecmath.TANH_ULPS
    assert_same(np.isnan(out[1]), np.isnan(x))
    for got, expected in zip(out, f(tg.Tensor(x), tg.Tensor(w), tg.Tensor(b))):
        assert_within_ulps(got, expected.data, ulps=4 * vecmath.TANH_ULPS)


@needs_numba
@pytest.mark.parametrize("inner", [2**15 + 3, 2**15 + 4])
def test_a_loop_through_tanh_in_two_halves_computes_every_element_of_every_row(monkeypatch, inner):
    monkeypatch.setitem(fuse._NUMBA, "vtanh", True)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, inner))
    row, col = rng.standard_normal((1, inner)), rng.standard_normal((3, 1))  # broadcast along each axis

    def f(x, row, col):
        return tg.tanh(x * row + col) - x, x * 2.0 + 1.0

    compiled = tg.compile(f, fuse=True, check=False)
    compiled(x, row, col)
    got = compiled(x, row, col)
    assert "h = o0.shape[1] // 2" in compiled.source and "o0[i0, h + h]" in compiled.source, compiled.source
    for g, e in zip(got, f(tg.Tensor(x), tg.Tensor(row), tg.Tensor(col))):
        assert_within_ulps(g, e.data, ulps=4 * vecmath.TANH_ULPS)


@needs_numba
def test_a_large_tanh_stays_numpys_call_where_numpys_loop_is_faster(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "vtanh", False)
    x = np.linspace(-3, 3, fuse.LARGE)
    compiled = tg.compile(lambda x: tg.tanh(x * 2.0 + 1.0) - x, fuse=True, check=False)
    compiled(x)
    assert_same(compiled(x), np.tanh(x * 2.0 + 1.0) - x)
    assert "vtanh(" not in compiled.source and " tanh(" in compiled.source, compiled.source


@needs_numba
def test_a_sum_ending_a_run_through_the_vectorised_tanh_is_numpys_sum(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "vtanh", True)
    x = np.random.default_rng(6).standard_normal(fuse.LARGE + 7)
    compiled = tg.compile(lambda x: (tg.tanh(x * 1.5) - x).sum(), fuse=True, check=False)
    compiled(x)
    got = compiled(x)
    assert "vtanh(" in compiled.source and "after_leaf(" not in compiled.source, compiled.source
    t = np.tanh(x * 1.5)
    assert abs(got - (t - x).sum()) <= 8 * vecmath.TANH_ULPS * np.spacing(np.abs(t).sum())


def _large_chain(cycles, xp_tanh):
    def loss(x, w, b, c):
        for _ in range(cycles):
            x = xp_tanh(x * w + b) - c
        return x.sum()

    return loss


@needs_numba
def test_a_large_value_and_gradient_is_one_loop_its_loss_summed_after(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "vtanh", True)
    rng = np.random.default_rng(8)
    n = fuse.LARGE + 3
    x, w, b, c = rng.standard_normal(n), 1.0 + 0.1 * rng.standard_normal(n), *(0.1 * rng.standard_normal((2, n)))
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    loss = _large_chain(3, tg.tanh)
    step = tg.compile(tg.value_and_grad(loss, argnums=(0, 1, 2, 3)), fuse=True, check=False)
    step(x, w, b, c)
    value, grads = step(x, w, b, c)
    # the forward and the gradient in one loop: the forward's intermediates are never stored
    assert step.program.info["fused_runs"] == 1, step.source
    assert step.source.index("fused(") < step.source.index("add_reduce("), step.source
    with np.errstate(invalid="ignore"):  # inf - inf in eager's gradient, as in the program's
        expected = tg.value_and_grad(loss, argnums=(0, 1, 2, 3))(x, w, b, c)
    assert np.isnan(value) and np.isnan(expected[0])
    for g, e in zip(grads, expected[1]):
        assert_within_ulps(g, e, ulps=16 * vecmath.TANH_ULPS)
    tail = [a[4:] for a in (x, w, b, c)]  # finite: the loss is a number
    step(*tail)
    got = step(*tail)[0]
    assert abs(got - loss(*map(tg.Tensor, tail)).data) <= 16 * vecmath.TANH_ULPS * np.spacing(float(n))


@needs_numba
def test_a_large_sum_read_by_the_steps_after_it_stays_before_them(monkeypatch):
    monkeypatch.setitem(fuse._NUMBA, "vtanh", True)  # the loop cannot end in the sum: it would move if it could
    n = fuse.LARGE + 5
    x = np.linspace(-1, 1, n)

    def f(x):
        y = tg.tanh(x * 3.0) + 1.0
        s = y.sum()
        return (y * s - x) * 0.5, s

    got, again = _run(f, x, fused_at_least=2)
    expected = f(tg.Tensor(x))
    for g, a, e in zip(got, again, expected):
        assert_within_ulps(g, e.data, ulps=8 * vecmath.TANH_ULPS)
        assert_within_ulps(a, e.data, ulps=8 * vecmath.TANH_ULPS)


@needs_numba
def test_a_fused_sum_keeps_nan_inf_and_numpys_zero():
    def f(x):
        return tg.sum(x * 2.0), tg.sum(x * -1.0 + 0.0)  # -0.0 times 2.0 is -0.0

    for x in (np.array([1.0, np.inf, 2.0]), np.array([np.inf, -np.inf]), np.array([np.nan, 1.0]), -np.zeros(3000)):
        _, got = _run(f, x, fused_at_least=2)  # the program (the first call is the trace)
        for g, e in zip(got, f(tg.Tensor(x))):
            assert_same(g, e.data)
            assert np.signbit(g) == np.signbit(e.data)  # NumPy's sum of zeros is +0.0, whatever their signs


@needs_numba
def test_a_constant_array_of_one_value_is_a_number_in_the_loop():
    def f(x, w):
        return tg.sum(tg.tanh(x * w))

    x, w = np.linspace(-2, 2, 40), np.linspace(1, 2, 40)
    compiled = tg.compile(tg.grad(f, argnums=(0, 1)), fuse=True)
    compiled(x, w)
    got = compiled(x, w)
    expected = tg.grad(f, argnums=(0, 1))(x, w)
    for g, e in zip(got, expected):
        assert_within_ulps(g, e, ulps=8)
    kernels = compiled.source.split("# fused kernels")[1]
    assert "1.0 *" in kernels or "* 1.0" in kernels, compiled.source  # the gradient's ones: no array read


# -- the kernels: shared, cached, shown ------------------------------------------------------------------------------
def _chain(cycles):
    def chain(x, w):
        for _ in range(cycles):
            x = tg.tanh(x * w + 0.1)
        return x.sum()

    return tg.value_and_grad(chain, argnums=(0, 1))


def _arithmetic_chain(cycles):
    def chain(x, w, b):
        for _ in range(cycles):
            x = x * w + b - 0.25 * x
        return (x * x).sum()

    return tg.value_and_grad(chain, argnums=(0, 1, 2))


@needs_numba
def test_a_chains_cycles_on_small_arrays_are_one_call_on_the_arena():
    """On small arrays a kernel's call costs more than its loop: the planned values are read and written through
    the arena, and consecutive runs of one structure are one call. Arithmetic only, so eager's to the bit, on
    every call (traced, checked against eager, then run by the kernels' machine code) and from threads (each
    on an arena of its own while another holds the program's)."""
    f = _arithmetic_chain(80)
    step = tg.compile(f, fuse=True)
    rng = np.random.default_rng(3)
    problems = [[rng.uniform(0.5, 1.0, (2, 3)) for _ in range(3)] for _ in range(4)]
    expected = [f(*args) for args in problems]

    def check(got, want):
        assert got[0] == want[0]
        for g, e in zip(got[1], want[1]):
            np.testing.assert_array_equal(g, e)

    for _ in range(3):
        check(step(*problems[0]), expected[0])
    source = step.program.source.split("# fused kernels")[0]
    calls = [line for line in source.splitlines() if line.lstrip().startswith("fused")]
    assert any(" runs of " in line for line in calls), source
    assert "arena_float64" in source and len(calls) <= 8 < step.program.info["fused_runs"], source
    got = [None] * len(problems)

    def work(i):
        for _ in range(10):
            got[i] = step(*problems[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(problems))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, e in zip(got, expected):
        check(g, e)


@needs_numba
def test_a_kernel_wrapped_before_the_first_run_stays_wrapped():
    """After its first run a program calls its kernels by their machine code, but a wrapper put in a kernel's
    place (a profiler's timer, functools.wraps copying the dispatcher's attributes) is left as it is."""
    step = tg.compile(_arithmetic_chain(20), fuse=True)
    args = [np.full((2, 3), 0.75) for _ in range(3)]
    step(*args)  # traced: the program has not run yet
    namespace = step.program._fn.__globals__
    calls = {}

    def counted(name, f):
        @functools.wraps(f)
        def call(*a):
            calls[name] = calls.get(name, 0) + 1
            return f(*a)

        return call

    names = [k for k in namespace if k.startswith("fused")]
    assert names
    namespace.update({k: counted(k, namespace[k]) for k in names})
    step(*args)
    first = dict(calls)
    step(*args)
    assert first and all(calls[k] == 2 * first[k] for k in first), (first, calls)


@needs_numba
def test_runs_are_bounded_and_runs_of_one_structure_share_one_kernel():
    step = tg.compile(_chain(60), fuse=True)
    x, w = np.linspace(0.1, 0.4, 4), np.full(4, 0.9)
    value, grads = step(x, w)
    expected = _chain(60)(x, w)
    assert_within_ulps(value, expected[0])
    for g, e in zip(grads, expected[1]):
        assert_within_ulps(g, e)
    program = step.program
    runs = program.info["fused_runs"]
    kernels = program.source.count("\ndef fused")
    assert runs >= 2 * 60 * 7 // fuse.MAX_RUN // 2  # bounded: never one kernel for the whole chain
    assert kernels <= runs // 2, (runs, kernels)  # the cycles' runs share kernels


@needs_numba
def test_the_source_shows_the_program_then_each_kernels_loop():
    step = tg.compile(lambda x, b: tg.relu(x + b) * 2.0, fuse=True)
    step(np.ones((2, 3)), np.zeros(3))
    source = step.source
    program, kernels = source.split("# fused kernels")
    assert "fused(" in program and "# fused 3 ops: add, relu, multiply" in program
    assert "for i0 in range(o0.shape[0]):" in kernels and "for i1 in range(o0.shape[1]):" in kernels
    assert "x1 = a1[i1]" in kernels  # the bias, broadcast along the rows
    assert "np.maximum(" in kernels


@needs_numba
def test_a_second_process_loads_the_kernels_from_the_disk_cache(tmp_path):
    code = textwrap.dedent(
        """
        import numpy as np, tapegrad as tg
        from tapegrad.compile import fuse, pairwise
        f = tg.compile(lambda x, w: tg.tanh(x * w + 0.5) * w - x, fuse=True)
        f(np.ones(3), np.full(3, 2.0))  # the trace (eager's results)
        f(np.ones(3), np.full(3, 2.0))  # the program: its kernel compiled, or loaded
        hits = sum(sum(k.stats.cache_hits.values()) for k in fuse.KERNELS.values())
        misses = sum(sum(k.stats.cache_misses.values()) for k in fuse.KERNELS.values())
        print(hits, misses)
        """
    )
    env = dict(os.environ, TAPEGRAD_CACHE=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert first.stdout.split() == ["0", "1"]  # compiled, and written to the cache
    assert second.stdout.split() == ["1", "0"]  # loaded: nothing compiled
    assert list(tmp_path.glob("k_*.py"))
