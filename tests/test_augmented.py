"""Augmented assignment (``x += y`` and the other ten): in place outside ``record()``, recorded out of place
inside it when a value is being recorded (autograd's and JAX's rebinding), refused on a leaf that requires a
gradient."""

import operator
import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg
from tapegrad.errors import NestedTensorError
from tapegrad.tensor_methods import AUGMENTED

# each augmented operator: (Python's in-place operator, its out-of-place one, x, y): float ones differentiable
FLOAT = {
    "__iadd__": (operator.iadd, operator.add),
    "__isub__": (operator.isub, operator.sub),
    "__imul__": (operator.imul, operator.mul),
    "__itruediv__": (operator.itruediv, operator.truediv),
    "__ipow__": (operator.ipow, operator.pow),
    "__imatmul__": (operator.imatmul, operator.matmul),
}
NO_GRADIENT = {  # piecewise constant or on integers: recorded, but no gradient to check
    "__ifloordiv__": (operator.ifloordiv, operator.floordiv),
    "__imod__": (operator.imod, operator.mod),
    "__iand__": (operator.iand, operator.and_),
    "__ior__": (operator.ior, operator.or_),
    "__ixor__": (operator.ixor, operator.xor),
}
INTEGER = {"__iand__", "__ior__", "__ixor__"}


def _xy(name, rng):
    if name in INTEGER:
        return rng.integers(0, 8, (2, 2)), rng.integers(0, 8, (2, 2))
    return rng.uniform(0.5, 2.0, (2, 2)), rng.uniform(0.5, 2.0, (2, 2))


def test_every_augmented_operator_of_python_that_tensors_have_is_in_the_table():
    assert set(AUGMENTED) == set(FLOAT) | set(NO_GRADIENT)
    for name in AUGMENTED:
        assert getattr(tg.Tensor, name).__name__ == name  # bound from the table, not left to Python's fallback


@pytest.mark.parametrize("name", sorted(AUGMENTED))
def test_outside_record_it_writes_in_place_as_numpy_does(name):
    in_place, out_of_place = {**FLOAT, **NO_GRADIENT}[name]
    x, y = _xy(name, np.random.default_rng(0))
    expected = out_of_place(x, y)
    t = tg.Tensor(x.copy())
    alias, memory = t, t.data
    t = in_place(t, tg.Tensor(y))
    assert t is alias and t.data is memory  # the same tensor and the same array: other references see it
    np.testing.assert_allclose(t.data, expected)


@pytest.mark.parametrize("name", sorted(FLOAT))
def test_inside_record_it_rebinds_a_recorded_value_and_the_gradient_is_exact(name):
    in_place, out_of_place = FLOAT[name]
    x, y = _xy(name, np.random.default_rng(1))

    def with_augmented(a, b):
        h = a * 1.5  # an op's output: the augmented assignment records
        h = in_place(h, b)
        return h.sum()

    xt, yt = tg.Tensor(x, requires_grad=True), tg.Tensor(y, requires_grad=True)
    with tg.record():
        h = xt * 1.5
        before = h
        h = in_place(h, yt)
        loss = h.sum()
    assert h is not before  # rebound: the value the tape saved is untouched
    np.testing.assert_allclose(before.data, 1.5 * x)
    np.testing.assert_allclose(h.data, out_of_place(1.5 * x, y))
    loss.backward()
    assert xt.grad is not None and yt.grad is not None
    tg.gradcheck(with_augmented, x, y)


@pytest.mark.parametrize("name", ["__ifloordiv__", "__imod__"])
def test_inside_record_the_piecewise_constant_operators_rebind_too(name):
    in_place, out_of_place = NO_GRADIENT[name]
    x, y = _xy(name, np.random.default_rng(2))
    w = tg.Tensor(x, requires_grad=True)
    with tg.record():
        h = w * 3.0
        before = h
        h = in_place(h, y)
    assert h is not before  # rebound, as autograd does; floor_divide's output is a constant (no gradient)
    np.testing.assert_allclose(h.data, out_of_place(3.0 * x, y))
    np.testing.assert_allclose(before.data, 3.0 * x)


@pytest.mark.parametrize("name", sorted(INTEGER))
def test_inside_record_bitwise_operators_on_integers_stay_in_place(name):
    in_place, out_of_place = NO_GRADIENT[name]
    x, y = _xy(name, np.random.default_rng(2))
    t = tg.Tensor(x.copy())
    memory = t.data
    with tg.record():
        t = in_place(t, tg.Tensor(y))  # integers are never recorded: nothing to rebind
    assert t.data is memory
    np.testing.assert_array_equal(t.data, out_of_place(x, y))


@pytest.mark.parametrize("name", sorted(AUGMENTED))
def test_on_a_leaf_that_requires_a_gradient_it_is_refused_and_the_user_can_go_on(name):
    in_place, _ = {**FLOAT, **NO_GRADIENT}[name]
    symbol = AUGMENTED[name][1]
    w = tg.Tensor(np.ones(2), requires_grad=True)
    with tg.record():
        with pytest.raises(
            RuntimeError, match=re.escape(f"in-place {symbol} on a leaf that requires a gradient (shape (2,))")
        ):
            in_place(w, 2.0)
        loss = (w * 3.0).sum()  # the block goes on
    loss.backward()
    np.testing.assert_allclose(w.grad, [3.0, 3.0])
    np.testing.assert_allclose(w.data, [1.0, 1.0])  # nothing was written


def test_a_constant_accumulator_takes_a_recorded_value_on_the_tape():
    # writing y's value into an unrecorded tensor in place would drop y's gradient in silence
    w = tg.Tensor([1.0, 2.0], requires_grad=True)
    acc = tg.zeros(2)
    with tg.record():
        total = acc
        total += w * w
        total *= w
        loss = total.sum()
    np.testing.assert_allclose(acc.data, [0.0, 0.0])  # the constant itself is left as it is
    loss.backward()
    np.testing.assert_allclose(w.grad, 3 * np.array([1.0, 2.0]) ** 2)


def test_constants_inside_record_are_still_updated_in_place():
    c = tg.Tensor([1.0, 2.0])
    memory = c.data
    with tg.record():
        c += np.array([1.0, 1.0])
    assert c.data is memory
    np.testing.assert_allclose(c.data, [2.0, 3.0])


def _rnn_loglik(W, U, xs):
    # autograd's recurrent-network idiom: loglik = 0.0, then loglik += per step
    h = tg.zeros(W.shape[0])
    loglik = 0.0
    for x in xs:
        h = tg.tanh(W @ h + U @ x)
        h += 0.1 * x[: W.shape[0]]  # a residual added in place, as ports of autograd code write it
        loglik += tg.log_softmax(h).sum()
        loglik -= 0.01 * (h * h).sum()
    return loglik


def test_a_recurrent_loglik_accumulated_with_augmented_assignment_has_the_exact_gradient():
    rng = np.random.default_rng(3)
    W, U = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3, 4)) * 0.5
    xs = [tg.Tensor(rng.normal(size=4)) for _ in range(4)]
    tg.gradcheck(lambda W, U: _rnn_loglik(W, U, xs), W, U)
    g = tg.grad(lambda W: _rnn_loglik(W, tg.Tensor(U), xs))(W)
    assert g.shape == (3, 3) and np.abs(g).sum() > 0


def test_augmented_assignment_to_a_slice_outside_record_is_numpy_s():
    x = tg.Tensor(np.ones(4))
    memory = x.data
    x[1:3] += 2.0  # the view x[1:3] is updated in place, then written back onto itself
    assert x.data is memory
    np.testing.assert_array_equal(x.data, [1.0, 3.0, 3.0, 1.0])


@pytest.mark.parametrize("index", [1, [0, 2], np.array([True, False, True, False])], ids=["int", "list", "mask"])
def test_item_assignment_is_refused_with_the_recorded_spelling_and_nothing_is_written(index):
    x = tg.Tensor(np.ones(4))
    with pytest.raises(TypeError, match=r"tensors take no item assignment.*x = x.at\[index\].add\(v\)"):
        x[index] += 1.0  # a copy was updated, which Python would write back: refused, x unchanged
    with pytest.raises(TypeError, match=r"x\[index\] = v on a tensor of shape \(4,\)"):
        x[index] = 5.0
    np.testing.assert_array_equal(x.data, np.ones(4))


def test_augmented_assignment_to_a_slice_inside_record_is_refused_and_at_add_records_it():
    w = tg.Tensor(np.ones(3), requires_grad=True)
    with tg.record():
        h = w * 2.0
        with pytest.raises(TypeError, match=r"x = x.at\[index\].add\(v\)"):
            h[0:2] += 1.0  # the slice was rebound to a new value, which cannot be written into h
        h = h.at[0:2].add(h[0:2] ** 2)
        loss = h.sum()
    loss.backward()
    np.testing.assert_allclose(w.grad, [2.0 + 8.0, 2.0 + 8.0, 2.0])  # d/dw (2w + 4w^2) and 2w


@pytest.mark.parametrize("name", sorted(set(FLOAT) - {"__imatmul__"}))
def test_a_rebinding_broadcasts_and_a_reused_input_gets_both_paths(name):
    in_place, out_of_place = FLOAT[name]
    rng = np.random.default_rng(4)
    x, y = rng.uniform(0.6, 1.3, (3, 1)), rng.uniform(0.6, 1.3, (2, 1, 4))  # h ** h stays moderate

    def f(a, b):
        h = a * b  # (2, 3, 4)
        h = in_place(h, a)  # a broadcast into h's shape (in place, as NumPy's, where f runs unrecorded)
        h = in_place(h, h)  # h op= h: the same value on both sides
        return h.sum(axis=(0, 2), keepdims=True)

    tg.gradcheck(f, x, y)
    tg.gradgradcheck(f, x, y)


@st.composite
def _x_and_y(draw):
    """An op's name, then x and a y that broadcasts into x's shape (so NumPy's in-place update takes it too)."""
    name = draw(st.sampled_from(sorted(set(FLOAT) - {"__imatmul__"})))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
    y_shape = draw(hnp.broadcastable_shapes(shape, max_dims=len(shape), max_side=3))
    assume(np.broadcast_shapes(shape, y_shape) == shape)
    x = draw(hnp.arrays(np.float64, shape, elements=st.floats(0.5, 1.5)))
    y = draw(hnp.arrays(np.float64, y_shape, elements=st.floats(0.5, 1.5)))
    return name, x, y


@given(_x_and_y())
def test_recorded_and_in_place_augmented_assignment_agree_and_the_recorded_one_is_exact(drawn):
    name, x, y = drawn
    in_place, out_of_place = FLOAT[name]

    def f(a, b):
        h = a * 1.0
        h = in_place(h, b)
        return h

    plain = f(tg.Tensor(x), tg.Tensor(y))  # in place, unrecorded
    a = tg.Tensor(x, requires_grad=True)
    with tg.record():
        recorded = f(a, tg.Tensor(y))
    np.testing.assert_allclose(recorded.data, plain.data, rtol=1e-15)
    np.testing.assert_allclose(recorded.data, out_of_place(x, y), rtol=1e-15)
    tg.gradcheck(f, x, y)


@pytest.mark.parametrize("check", [True, False])
def test_a_compiled_function_rebinds_a_constant_that_takes_a_traced_value(check):
    # written in place, the trace's values became a constant of the program: every later call returned the
    # first call's result (in silence with check=False, as a misleading "NumPy on a traced value" otherwise)
    def f(x):
        h = tg.zeros(3)
        h += tg.sin(x)
        h *= x
        return h.sum()

    step = tg.compile(f, check=check)
    for scale in (1.0, 2.0, 3.0):
        x = np.array([0.1, 0.2, 0.3]) * scale
        np.testing.assert_allclose(np.asarray(step(x)), np.sum(np.sin(x) * x))
    assert step.trace_count == 1
    constant = tg.zeros(3)
    with pytest.raises(tg.TracingError, match=r"in-place \+= of a traced value"):
        tg.compile(lambda x: (x.__iadd__(constant), x)[1])(tg.Tensor(np.ones(3)))  # x itself traced: refused


def test_in_place_and_recorded_differ_only_where_numpy_keeps_the_shape_and_dtype():
    # the recording guide's claim: NumPy's in-place update refuses a larger shape or an integer result's
    # promotion, and rounds to x's dtype; recorded, x += y is x + y's shape and dtype
    w = tg.Tensor(np.ones(2), requires_grad=True)
    for x, y in [(np.ones(2), np.ones((3, 2))), (np.arange(2), np.full(2, 0.5))]:
        with pytest.raises((ValueError, TypeError)):
            h = tg.Tensor(x)
            h += y
        with tg.record():
            h = tg.Tensor(x)
            h += w * y
        assert h.shape == np.broadcast_shapes(x.shape, y.shape) and h.dtype == np.float64
    h = tg.Tensor(np.ones(2, dtype=np.float32))
    h += np.ones(2)
    assert h.dtype == np.float32
    with tg.record():
        h += w
    assert h.dtype == np.float64


def _shifted_square(x):
    x += 1.0  # autograd's programs update their argument so: a rebinding there
    x *= x
    return x.sum()


def test_a_transforms_own_argument_is_rebound_as_autograd_does():
    # the leaf tg.grad makes of f's argument was refused as a user's parameter would be ("inside record()")
    x = np.array([1.0, 2.0])
    expected = 2 * (x + 1.0)
    np.testing.assert_allclose(tg.grad(_shifted_square)(x), expected)
    np.testing.assert_allclose(tg.value_and_grad(_shifted_square)(x)[1], expected)
    np.testing.assert_allclose(tg.compile(tg.grad(_shifted_square))(x), expected)
    np.testing.assert_allclose(x, [1.0, 2.0])  # the caller's array is left as it was
    # the numerical side of gradcheck runs fn on copies: fn's in-place update moved its perturbed point
    assert tg.gradcheck(_shifted_square, tg.Tensor(x))
    from tapegrad.testing import check_grads

    assert check_grads(_shifted_square, modes=["rev"], order=2)(x)  # forward mode refuses x += y by name
    w = tg.Tensor(x, requires_grad=True)  # a leaf of the user's is still refused
    with pytest.raises(RuntimeError, match=r"in-place \+= on a leaf that requires a gradient"):
        with tg.record():
            _shifted_square(w)


def test_a_transforms_argument_rebinds_as_autograd_s_own_program_does():
    autograd = pytest.importorskip("autograd", reason="autograd (the test extra) is the reference")
    x = np.array([0.5, -1.5])
    np.testing.assert_allclose(tg.grad(_shifted_square)(x), autograd.grad(_shifted_square)(x), rtol=1e-12)


def test_a_list_holding_a_recorded_tensor_is_refused_as_the_operator_refuses_it():
    # acc += [w[0] * 2, w[1]] wrote the values into the constant in place: the gradient through them was dropped
    # in silence (and the constant changed), where acc + [...] raises
    w = tg.Tensor([1.0, 2.0], requires_grad=True)
    acc = tg.zeros(2)
    with tg.record():
        total = acc
        with pytest.raises(NestedTensorError, match=r"add: an input is a list holding tensors.*tg\.stack"):
            total += [w[0] * 2, w[1]]
        total += tg.stack([w[0] * 2, w[1]])
        loss = (total * w).sum()
    np.testing.assert_allclose(acc.data, [0.0, 0.0])
    loss.backward()
    np.testing.assert_allclose(w.grad, [4.0, 4.0])
    c = tg.Tensor([1.0, 2.0])
    with tg.record():
        c += [tg.Tensor(1.0), 2.0]  # constants only: in place, as before
    np.testing.assert_allclose(c.data, [2.0, 4.0])
