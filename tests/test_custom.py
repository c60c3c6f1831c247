"""User-defined ops (@custom_op + defvjp): recorded, checked, differentiated twice, registered like the rest."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import tape


@tg.custom_op(save="x ans", register=False)
def log1pexp(x):
    """softplus, log(1 + e^x), without overflow for large x."""
    return np.logaddexp(0.0, x)


@log1pexp.defvjp
def log1pexp_vjp(xp, g, ans, x):
    return g * xp.exp(x - ans)  # sigmoid(x) = e^x / (1 + e^x) = exp(x - softplus(x)); x - ans <= 0


@tg.custom_op(register=False)
def round_ste(x):
    """Round to the nearest integer; the backward pretends it is the identity (straight-through estimator)."""
    return np.round(x)


@round_ste.defvjp
def round_ste_vjp(xp, g, ans, x):
    return g


@tg.custom_op(save="x y ans", register=False)
def hypot(x, y):
    return np.hypot(x, y)


@hypot.defvjp
def hypot_vjp(xp, g, ans, x, y):
    return g * x / ans, g * y / ans


@tg.custom_op(save="x", register=False)
def scaled_square(x, *, scale=1.0):
    return scale * x * x


@scaled_square.defvjp
def scaled_square_vjp(xp, g, ans, x, scale=1.0):
    return g * 2.0 * scale * x


def test_log1pexp_passes_gradcheck_and_gradgradcheck():
    x = np.array([-3.0, -0.2, 0.0, 1.5, 4.0])
    assert tg.gradcheck(log1pexp, x)
    assert tg.gradgradcheck(log1pexp, x)


def test_log1pexp_is_stable_where_the_naive_formula_overflows():
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning, forward or backward
        value, g = tg.value_and_grad(lambda x: log1pexp(x).sum())(x)
        h = tg.hvp(lambda x: log1pexp(x).sum(), x, np.ones_like(x))
    sig = np.exp(-np.logaddexp(0.0, -x))  # the reference sigmoid, computed stably in NumPy
    np.testing.assert_allclose(g, sig, rtol=1e-15, atol=0)
    np.testing.assert_allclose(h, sig * (1 - sig), rtol=1e-12, atol=0)
    assert value == pytest.approx(1040.0 + np.log(2.0) + 2 * np.log1p(np.exp(-40.0)), rel=1e-15)


def test_a_deliberately_wrong_rule_fails_gradcheck():
    @tg.custom_op(save="x ans", register=False)
    def bad(x):
        return np.logaddexp(0.0, x)

    @bad.defvjp
    def bad_vjp(xp, g, ans, x):
        return g * xp.exp(x - ans) * 1.001

    with pytest.raises(tg.GradcheckError, match="bad"):
        tg.gradcheck(bad, np.array([0.5, -1.0]))


def test_straight_through_estimator_passes_the_gradient_through_round():
    x = tg.Tensor([0.4, 1.6, -2.3], requires_grad=True)
    with tape.record() as t:
        y = round_ste(x)
        loss = (y * y).sum()
    assert [e.op for e in t.entries][:2] == ["round_ste", "multiply"]
    np.testing.assert_array_equal(y.numpy(), [0.0, 2.0, -2.0])
    loss.backward()
    np.testing.assert_array_equal(x.grad, 2 * np.round(x.data))  # d(y^2)/dy, passed straight through round
    with pytest.raises(tg.GradcheckError):  # it is not round's true derivative (zero almost everywhere)
        tg.gradcheck(round_ste, np.array([0.4, 1.6]))


def test_two_inputs_one_rule_returning_both_gradients_with_broadcasting():
    x, y = np.array([[3.0], [1.0]]), np.array([4.0, 2.0, -1.0])
    assert tg.gradcheck(hypot, x, y)
    assert tg.gradgradcheck(hypot, x, y)
    gx, gy = tg.grad(lambda x, y: hypot(x, y).sum(), argnums=(0, 1))(x, y)
    assert gx.shape == (2, 1) and gy.shape == (3,)


def test_keyword_only_parameters_reach_forward_and_rule():
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(scaled_square(tg.Tensor(x), scale=3.0).numpy(), 3 * x * x)
    np.testing.assert_array_equal(tg.grad(lambda x: scaled_square(x, scale=3.0).sum())(x), 6 * x)


def test_keyword_only_parameters_of_an_op_with_two_inputs():
    @tg.custom_op(save="x y", register=False)
    def weighted_sum(x, y, *, a=1.0):
        return a * x + y * y

    @weighted_sum.defvjp
    def weighted_sum_vjp(xp, g, ans, x, y, a=1.0):
        return a * g, 2.0 * g * y

    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    gx, gy = tg.grad(lambda x, y: weighted_sum(x, y, a=3.0).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    np.testing.assert_array_equal(gy, 2 * y)
    assert tg.gradgradcheck(lambda x, y: weighted_sum(x, y, a=3.0) * x, x, y)


def test_custom_ops_work_in_every_transform():
    x, v = np.array([0.3, -1.2]), np.array([1.0, 2.0])
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(tg.jacobian(log1pexp)(x), np.diag(sig))
    np.testing.assert_allclose(tg.hessian(lambda x: log1pexp(x).sum())(x), np.diag(sig * (1 - sig)))
    np.testing.assert_allclose(tg.jvp(log1pexp, (x,), (v,))[1], sig * v)


def test_registered_by_default_in_the_same_registry_and_shown_by_name():
    @tg.custom_op(save="x")
    def cube_user(x):
        return x**3

    @cube_user.defvjp
    def cube_user_vjp(xp, g, ans, x):
        return 3.0 * g * x * x

    try:
        assert tg.REGISTRY["cube_user"] is cube_user.op and cube_user.op.name == "cube_user"
        assert cube_user.__doc__ is None and cube_user.__name__ == "cube_user"
        with pytest.raises(ValueError, match="already registered"):
            tg.custom_op(save="x")(cube_user.forward).defvjp(cube_user_vjp)
    finally:
        del tg.REGISTRY["cube_user"]  # the suite's op table must not see a test's op


def test_clear_errors():
    @tg.custom_op(register=False)
    def norule(x):
        return x

    with pytest.raises(TypeError, match="no backward rule yet: define one with @norule.defvjp"):
        norule(tg.Tensor(1.0))
    with pytest.raises(TypeError, match="named positional inputs"):
        tg.custom_op()(lambda *xs: xs[0])
    with pytest.raises(ValueError, match="unknown names in save"):
        tg.custom_op(save="z", register=False)(lambda x: x).defvjp(lambda xp, g, ans, x: g)
    with pytest.raises(ValueError, match="already has a rule"):
        log1pexp.defvjp(log1pexp_vjp)


def _op(forward, rule, save=(), **kw):
    op = tg.custom_op(save=save, register=False, name="user_op", **kw)(forward)
    op.defvjp(rule)
    return op


# (forward, a wrong rule, the error it must raise): a user's rule is checked as it runs, as PyTorch checks a
# Function's backward; unchecked, each of these gave .grad a wrong shape (or a wrong value) with no error
WRONG_RULES = {
    "a scalar for a vector": (lambda x: 3.0 * x, lambda xp, g, ans, x: 3.0, "shape \\(\\) for input 0 \\(x\\), of shape \\(3,\\)"),
    "the wrong length": (lambda x: 3.0 * x, lambda xp, g, ans, x: g[:2], "shape \\(2,\\) for input 0 \\(x\\)"),
    "(1,), which broadcasts": (lambda x: 3.0 * x, lambda xp, g, ans, x: g[:1] * 3.0, "shape \\(1,\\) for input 0"),
    "a reduction's g unbroadcast": (lambda x: np.sum(x), lambda xp, g, ans, x: g, "shape \\(\\) for input 0"),
    "a list": (lambda x: 3.0 * x, lambda xp, g, ans, x: [3.0, 3.0, 3.0], "type list for input 0"),
    "one gradient for two inputs": (lambda x, y: x * y, lambda xp, g, ans, x, y: (g,), "a sequence of 1; .* tuple of 2"),
    "a gradient, not a tuple": (lambda x, y: x * y, lambda xp, g, ans, x, y: g, "type ndarray; .* tuple of 2"),
    "the second input's wrong": (lambda x, y: x * y, lambda xp, g, ans, x, y: (g, g.sum()), "for input 1 \\(y\\)"),
}  # fmt: skip


@pytest.mark.parametrize("case", WRONG_RULES)
def test_a_users_rule_that_returns_a_wrong_shape_raises_naming_the_op_and_the_input(case):
    forward, rule, message = WRONG_RULES[case]
    op = _op(forward, rule)
    args = [tg.Tensor(np.ones(3), requires_grad=True) for _ in range(op.op.arity)]
    with tg.record():
        loss = op(*args).sum()
    with pytest.raises((ValueError, TypeError), match="user_op: its rule returned .*" + message):
        loss.backward()
    assert all(a.grad is None for a in args)
    with tg.record():  # the user goes on: the other ops still differentiate
        again = (args[0] * 2.0).sum()
    again.backward()
    np.testing.assert_array_equal(args[0].grad, [2.0, 2.0, 2.0])


@pytest.mark.parametrize(
    "rule",
    [
        lambda xp, g, ans, x, y: (g * y, g * x),  # in the output's broadcast shape: the tape sums it back
        lambda xp, g, ans, x, y: (g * y, (g * x).sum(axis=0)),  # in the input's own shape
    ],
)
def test_a_users_rule_may_return_the_output_shape_where_inputs_broadcast(rule):
    mul = _op(lambda x, y: x * y, rule, save="x y")
    gx, gy = tg.grad(lambda a, b: mul(a, b).sum(), argnums=(0, 1))(np.ones((2, 3)), np.arange(3.0))
    np.testing.assert_array_equal(gx, np.broadcast_to(np.arange(3.0), (2, 3)))
    np.testing.assert_array_equal(gy, [2.0, 2.0, 2.0])


def test_a_checked_rule_still_gets_none_for_what_it_did_not_save():
    seen = []

    def rule(xp, g, ans, x, y):
        seen.append((x, y.shape))
        return None, g * 2.0

    op = _op(lambda x, y: x * 2.0 + y * 2.0, rule, save="y")
    assert tg.grad(lambda b: op(np.ones(2), b).sum())(np.ones(2)).tolist() == [2.0, 2.0]
    assert seen == [(None, (2,))]


def test_a_python_number_gradient_of_a_scalar_input_becomes_an_array():
    triple = _op(lambda x: 3.0 * x, lambda xp, g, ans, x: 3.0)  # (ignores g: right only for one use)
    x = tg.Tensor(2.0, requires_grad=True)
    with tg.record():
        y = triple(x) + triple(x)  # two contributions: added as arrays
    y.backward()
    assert isinstance(x.grad, np.ndarray) and x.grad == 6.0


def test_save_of_a_shape_takes_a_python_number():
    # "y.shape" of a Python number: the shape and dtype of the array NumPy makes of it (a crash before)
    op = _op(lambda x, y: x * y, lambda xp, g, ans, x, y: (g * 2.0, None), save="y.shape")
    assert tg.grad(lambda a: op(a, 2.0).sum())(np.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_defop_checks_rules_defined_outside_tapegrad_and_not_its_own():
    wrong = tg.defop("wrong_demo", lambda x: 2.0 * x, lambda xp, g, ans, x: g[:1], register=False)
    with pytest.raises(ValueError, match="wrong_demo: its rule returned a gradient of shape \\(1,\\)"):
        tg.grad(lambda x: wrong(x).sum())(np.ones(3))
    assert not hasattr(tg.exp.op.vjps[0], "__wrapped__")  # built-in rules run as they are
    assert wrong.op.vjps[0].__wrapped__.__name__ == "<lambda>"
