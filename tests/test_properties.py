"""Every op in ``op_table.OPS`` as a property: hypothesis draws shapes (0-d to 4-d, broadcast pairs and
triples, size-1 axes), ``axis``/``keepdims`` (negative axes, tuples, None) and values inside the op's domain.

For every op, in one property per row: its value equals NumPy's; float32 gradients agree with float64 ones
within float32 tolerance; each gradient has its input's shape and dtype (inputs of mixed dtypes); and, in
two more, its gradient and its second derivative equal central finite differences in float64.
Also here: ``unbroadcast`` as the adjoint of broadcasting, and ``gradcheck`` catching a wrong rule.
"""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from op_table import OPS, shapes_and_kwargs

import tapegrad as tg
from tapegrad import strategies as tgst
from tapegrad import tape
from tapegrad._shapes import unbroadcast
from tapegrad.backend.numpy_rules import numpy_rules
from tapegrad.registry import defop

IDS = [case.name for case in OPS]
FEW = max(5, settings.default.max_examples // 3)  # for the costlier properties
HALF = max(6, settings.default.max_examples // 2)  # the values and dtypes: finite differences are the stronger check
COSTLY = 6  # finite differences of a row marked ``costly`` (its op takes milliseconds a call)


@st.composite
def op_inputs(draw, case, dtype=np.float64):
    """(arrays, kwargs) for one call of ``case``: shapes and keywords from its row, values from its domain."""
    shapes, kwargs = draw(shapes_and_kwargs(case))
    return draw(tgst.inputs(shapes, case.domain, dtype)), kwargs


def _grads(case, arrays, kwargs, cotangent):
    xs = [tg.Tensor(a, requires_grad=i not in case.constant_inputs) for i, a in enumerate(arrays)]
    with tape.record():
        out = case.fn(*xs, **kwargs)
    out.backward(np.asarray(cotangent, dtype=out.dtype))
    return [x.grad for x in xs]


@pytest.mark.parametrize("case", OPS, ids=IDS)
@settings(max_examples=HALF)
@given(data=st.data())
def test_value_gradients_and_dtypes(case, data):
    dtype = data.draw(tgst.dtypes(), label="dtype")
    arrays, kwargs = data.draw(op_inputs(case, dtype), label="arrays, kwargs")
    # the value, in the drawn dtype, against NumPy's
    out = case.fn(*[tg.Tensor(a) for a in arrays], **kwargs)
    expected = np.asarray(case.ref(*arrays, **kwargs))
    assert out.shape == expected.shape
    assert out.dtype == dtype
    tol = 2e-6 if dtype == np.float32 else 1e-12
    if case.value_scale is None:
        np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)
    else:  # an op that cancels digits: a few ulps of what its error is relative to, element by element
        bound = tol * (1 + np.abs(expected)) + 4 * np.finfo(dtype).eps * case.value_scale(arrays, kwargs)
        error = np.abs(out.numpy().astype(np.float64) - expected)
        assert np.all(error <= bound), (
            f"{case.name}: value off by {error.max():.3g} (bound {bound.flat[error.argmax()]:.3g})"
        )
    # float32's gradients agree with float64's, on the same (float32) values and one cotangent
    v = np.random.default_rng(0).uniform(0.5, 1.5, out.shape)
    single = [a.astype(np.float32) for a in arrays]
    g32 = _grads(case, single, kwargs, v)
    g64 = _grads(case, [a.astype(np.float64) for a in single], kwargs, v)
    cancelled = (0.0,) * len(arrays) if case.gradient_scale is None else case.gradient_scale(single, kwargs, v)
    for a, b, lost in zip(g32, g64, cancelled):
        if b is None:
            assert a is None
            continue
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * scale + 4 * np.finfo(np.float32).eps * lost)
    # each input its own dtype: the output follows NumPy's promotion, each gradient its input's shape and dtype
    dtypes = data.draw(st.tuples(*[tgst.dtypes()] * len(arrays)), label="dtypes")
    mixed = [a.astype(d) for a, d in zip(arrays, dtypes)]
    shape = case.fn(*[tg.Tensor(a) for a in mixed], **kwargs).shape
    for i, (a, g) in enumerate(zip(mixed, _grads(case, mixed, kwargs, np.ones(shape)))):
        if i in case.constant_inputs:
            assert g is None
        else:
            assert g is not None and g.shape == a.shape and g.dtype == a.dtype, (i, a.shape, a.dtype, g)


def _for_examples(case, check, examples):
    """Run ``check(data)`` for ``examples`` drawn examples, or ``COSTLY`` where the row says its op is costly."""
    settings(max_examples=min(examples, COSTLY) if case.costly else examples)(given(data=st.data())(check))()


@pytest.mark.parametrize("case", OPS, ids=IDS)
def test_gradient_matches_finite_differences(case):
    def check(data):
        arrays, kwargs = data.draw(op_inputs(case), label="arrays, kwargs")
        assert tg.gradcheck(lambda *xs: case.fn(*xs, **kwargs), *arrays)

    _for_examples(case, check, settings.default.max_examples)


@pytest.mark.parametrize("case", OPS, ids=IDS)
def test_second_derivative_matches_finite_differences(case):
    def check(data):
        arrays, kwargs = data.draw(op_inputs(case), label="arrays, kwargs")
        assert tg.gradgradcheck(lambda *xs: case.fn(*xs, **kwargs), *arrays)

    _for_examples(case, check, FEW)


@st.composite
def _shape_and_target(draw):
    target = draw(tgst.shapes())
    return draw(tgst.shapes_broadcasting_to(target)), target


@given(_shape_and_target(), st.integers(0, 2**32 - 1))
def test_unbroadcast_is_the_adjoint_of_broadcasting(shapes, seed):
    shape, target = shapes
    rng = np.random.default_rng(seed)
    g, u = rng.standard_normal(target), rng.standard_normal(shape)
    back = unbroadcast(numpy_rules, g, shape)
    assert back.shape == shape
    np.testing.assert_allclose(np.sum(g * np.broadcast_to(u, target)), np.sum(back * u), rtol=1e-10, atol=1e-10)
    # the same helper on tensors (a recorded replay) gives the same values
    recorded = unbroadcast(tg.ops.tensor_rules, tg.Tensor(g), shape)
    assert recorded.shape == shape
    np.testing.assert_allclose(recorded.numpy(), back, rtol=1e-12, atol=1e-12)


@given(
    _shape_and_target(),
    st.sampled_from(["f4", "f8", "c16", "i8", "?", "O"]),
    st.sampled_from(["c", "strided", "scalar"]),
)
@example(((2, 1, 3), (4, 2, 5, 3)), "f4", "c")  # kept, stretched and new axes at once
def test_the_rules_broadcast_to_is_numpys_read_only_view(shapes, dtype, layout):
    """The rules' ``broadcast_to`` builds the view itself: the same shape, strides, values, base memory and
    read-only flag as ``np.broadcast_to``, and the same refusal of a shape that does not broadcast."""
    shape, target = shapes
    x = np.arange(np.prod(shape) * 2).astype(dtype)[::2].reshape(shape)  # strided: not one block
    if layout == "c":
        x = np.array(x, order="C")
    elif layout == "scalar":
        x, target = x.reshape(-1)[0] if x.size else np.float64(1.5).astype(dtype), shape
    got, want = numpy_rules.broadcast_to(x, target), np.broadcast_to(x, target)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert [s for s, n in zip(got.strides, target) if n > 1] == [s for s, n in zip(want.strides, target) if n > 1]
    assert not got.flags.writeable
    np.testing.assert_array_equal(got, want)
    if got.size and layout != "scalar":
        assert np.shares_memory(got, x)
    if target and target[-1] not in (0, 1):  # a size that does not broadcast: NumPy's own error
        with pytest.raises(ValueError):
            numpy_rules.broadcast_to(np.zeros(target[-1] + 1, dtype), target)


# -- gradcheck itself --------------------------------------------------------------------------------
_wrong_exp = defop("wrong_exp", np.exp, lambda xp, g, ans, x: g * ans * 2.001, save="ans", register=False)
_wrong_mul = defop(
    "wrong_mul",
    np.multiply,
    lambda xp, g, ans, x, y: g * y,
    lambda xp, g, ans, x, y: g * x * 2.001,  # the second input's rule is off
    save="x y",
    broadcast=True,
    register=False,
)


@given(tgst.shapes(max_dims=3).flatmap(lambda s: tgst.values(s, "positive")))
def test_gradcheck_catches_a_wrong_rule_and_names_input_index_and_ops(x):
    with pytest.raises(tg.GradcheckError) as err:
        tg.gradcheck(lambda t: tg.sin(_wrong_exp(t)), x)
    message = str(err.value)
    assert "input 0" in message and "at index (" in message
    assert "wrong_exp, sin" in message  # the tape's ops, in order


def test_gradcheck_names_the_wrong_input_and_its_worst_element():
    x, y = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 5.0])
    with pytest.raises(tg.GradcheckError, match=r"input 1 at index \(1,\)") as err:
        tg.gradcheck(lambda a, b: _wrong_mul(a, b), x, y)
    assert "analytic" in str(err.value) and "numeric" in str(err.value) and "wrong_mul" in str(err.value)


def test_strategies_are_not_a_runtime_dependency():
    code = "import sys, tapegrad; assert 'hypothesis' not in sys.modules, 'import tapegrad imported hypothesis'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
