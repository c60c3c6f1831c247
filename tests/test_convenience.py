"""autograd's conveniences: elementwise_grad, grad_named, multigrad_dict, make_vjp, hessian_vector_product,
argnum=, flatten / flatten_func, fixed_point, check_grads and the functional optimizers; against finite
differences always, against HIPS autograd where it is installed (optional: skipped otherwise)."""

import gc
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.optim import functional
from tapegrad.testing import check_grads


def _autograd():
    return pytest.importorskip("autograd", reason="HIPS autograd is not installed: pip install autograd")


# -- elementwise_grad ---------------------------------------------------------------------------------------
def test_elementwise_grad_is_the_derivative_of_an_elementwise_function_at_every_element():
    x = np.linspace(-2.0, 2.0, 7)
    np.testing.assert_allclose(tg.elementwise_grad(tg.tanh)(x), 1 - np.tanh(x) ** 2, rtol=1e-12)
    second = tg.elementwise_grad(tg.elementwise_grad(lambda x: tg.sin(x) * x))(x)  # 2 cos x - x sin x
    np.testing.assert_allclose(second, 2 * np.cos(x) - x * np.sin(x), rtol=1e-10)


def test_elementwise_grad_of_a_mixing_function_is_the_sum_of_the_jacobian_columns():
    A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(tg.elementwise_grad(lambda x: A @ x)(np.zeros(2)), A.sum(axis=0))
    with pytest.raises(TypeError, match="elementwise_grad: f returned a complex value"):
        tg.elementwise_grad(lambda x: x * 1j)(np.ones(2))


def test_elementwise_grad_matches_autograd():
    ag = _autograd()
    anp = pytest.importorskip("autograd.numpy")
    x = np.linspace(-1.0, 1.5, 5)
    ours = tg.elementwise_grad(lambda x, y: tg.exp(x) * y + x**2, argnum=0)(x, 2.0)
    theirs = ag.elementwise_grad(lambda x, y: anp.exp(x) * y + x**2, 0)(x, 2.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-14)


# -- argnum, grad_named, multigrad_dict, make_vjp, hessian_vector_product --------------------------------------
def _loss(w, b, x=np.array([1.0, -2.0, 0.5])):
    return tg.sum(tg.tanh(x * w + b) ** 2)


def test_argnum_is_accepted_beside_argnums_and_both_together_are_refused():
    w, b = np.array([0.3, 0.1, -0.4]), 0.2
    np.testing.assert_allclose(tg.grad(_loss, argnum=1)(w, b), tg.grad(_loss, argnums=1)(w, b))
    np.testing.assert_allclose(tg.jacobian(tg.tanh, argnum=0)(w), np.diag(1 - np.tanh(w) ** 2))
    np.testing.assert_allclose(tg.hessian(_loss, argnum=0)(w, b), tg.hessian(_loss, 0)(w, b))
    with pytest.raises(TypeError, match="grad: pass argnums= or autograd's argnum=, not both"):
        tg.grad(_loss, argnums=1, argnum=0)


def test_grad_named_by_position_or_by_keyword_and_a_missing_name_is_refused():
    w, b = np.array([0.3, 0.1, -0.4]), 0.2
    expected = tg.grad(_loss, 1)(w, b)
    np.testing.assert_allclose(tg.grad_named(_loss, "b")(w, b), expected)
    np.testing.assert_allclose(tg.grad_named(_loss, "b")(w, b=b), expected)
    gw, gx = tg.grad_named(_loss, ("w", "x"))(w, b)  # a default argument can be differentiated too
    np.testing.assert_allclose(gw, tg.grad(_loss, 0)(w, b))
    tg.gradcheck(lambda x: _loss(w, b, x), np.array([1.0, -2.0, 0.5]))
    np.testing.assert_allclose(gx, tg.grad(lambda x: _loss(w, b, x))(np.array([1.0, -2.0, 0.5])))
    with pytest.raises(ValueError, match="grad_named: _loss has no argument named 'c'"):
        tg.grad_named(_loss, "c")


def test_multigrad_dict_gives_every_argument_s_gradient_by_name():
    w, b = np.array([0.3, 0.1, -0.4]), 0.2
    g = tg.multigrad_dict(_loss)(w, b)
    assert list(g) == ["w", "b", "x"]
    np.testing.assert_allclose(g["w"], tg.grad(_loss, 0)(w, b))
    np.testing.assert_allclose(g["b"], tg.grad(_loss, 1)(w, b))


def test_make_vjp_returns_vjp_then_value_and_matches_autograd():
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    vjp_fn, ans = tg.make_vjp(lambda x, y: tg.sin(x) * y, argnum=1)(x, y)
    np.testing.assert_allclose(ans, np.sin(x) * y)
    np.testing.assert_allclose(vjp_fn(np.array([1.0, 10.0])), np.sin(x) * [1.0, 10.0])
    both, _ = tg.make_vjp(lambda x, y: tg.sin(x) * y, argnums=(0, 1))(x, y)
    gx, gy = both(np.ones(2))
    np.testing.assert_allclose(gx, np.cos(x) * y)
    ag = _autograd()
    anp = pytest.importorskip("autograd.numpy")
    their_vjp, their_ans = ag.make_vjp(lambda x, y: anp.sin(x) * y, 0)(x, y)
    ours, _ = tg.make_vjp(lambda x, y: tg.sin(x) * y)(x, y)
    np.testing.assert_allclose(ours(np.array([2.0, -3.0])), their_vjp(np.array([2.0, -3.0])), rtol=1e-14)


def test_make_jvp_and_make_hvp_match_jvp_and_the_hessian():
    w, b, v = np.array([0.3, 0.1, -0.4]), 0.2, np.array([1.0, -1.0, 2.0])
    ans, tangent = tg.make_jvp(_loss)(w, b)(v)
    np.testing.assert_allclose(ans, _loss(w, b).data)
    np.testing.assert_allclose(tangent, tg.grad(_loss)(w, b) @ v, rtol=1e-12)
    hvp_fn, g = tg.make_hvp(_loss)(w, b)
    np.testing.assert_allclose(g, tg.grad(_loss)(w, b))
    for u in (v, np.array([0.0, 1.0, 0.0])):  # one forward pass, several vectors
        np.testing.assert_allclose(hvp_fn(u), tg.hessian(_loss)(w, b) @ u, rtol=1e-12)
    ag = _autograd()
    anp = pytest.importorskip("autograd.numpy")
    their_hvp, their_g = ag.make_hvp(lambda w: anp.sum(anp.tanh(np.array([1.0, -2.0, 0.5]) * w + b) ** 2))(w)
    np.testing.assert_allclose(hvp_fn(v), their_hvp(v), rtol=1e-12)


def test_hessian_vector_product_takes_the_vector_last_and_matches_the_hessian():
    w, b, v = np.array([0.3, 0.1, -0.4]), 0.2, np.array([1.0, -1.0, 2.0])
    np.testing.assert_allclose(tg.hessian_vector_product(_loss)(w, b, v), tg.hessian(_loss)(w, b) @ v, rtol=1e-12)
    with pytest.raises(TypeError, match=r"\(\*args, v\)"):
        tg.hessian_vector_product(_loss)(w)
    with pytest.raises(TypeError, match="hessian_vector_product: argnums must be one int"):
        tg.hessian_vector_product(_loss, (0, 1))


# -- flatten and flatten_func ---------------------------------------------------------------------------------
def test_flatten_gives_a_float_vector_and_an_unflatten_that_rebuilds_the_tree():
    v, unflatten = tg.flatten({"a": 1.0})
    assert isinstance(v, np.ndarray) and v.dtype == np.float64 and v.tolist() == [1.0]
    tree = {"w": np.arange(6.0).reshape(2, 3), "b": [0.5, (np.ones(2),)]}
    v, unflatten = tg.flatten(tree)
    assert v.shape == (9,)
    back = unflatten(v * 2)
    np.testing.assert_array_equal(back["w"], 2 * tree["w"])
    assert back["b"][0] == 1.0 and isinstance(back["b"][1], tuple)
    with pytest.raises(ValueError, match=r"unflatten: expected a vector of 9 elements, got shape \(3,\)"):
        unflatten(np.ones(3))
    with pytest.raises(TypeError, match="flatten: cannot differentiate with respect to a str"):
        tg.flatten({"a": "text"})


def test_flatten_on_recorded_tensors_is_recorded_both_ways():
    tree = {"w": np.array([1.0, 2.0]), "b": 3.0}
    g = tg.grad(lambda p: (tg.flatten(p)[0] ** 2).sum())(tree)
    np.testing.assert_allclose(g["w"], [2.0, 4.0])
    np.testing.assert_allclose(g["b"], 6.0)
    flat_loss, unflatten, v0 = tg.flatten_func(lambda p: (p["w"] ** 3).sum() * p["b"], tree)
    tg.gradcheck(flat_loss, v0)


def test_flatten_agrees_with_autograd_on_trees_with_sorted_keys():
    _autograd()
    from autograd.misc import flatten as ag_flatten

    tree = {"a": np.arange(3.0), "b": [1.5, np.ones((2, 2))]}
    np.testing.assert_array_equal(tg.flatten(tree)[0], ag_flatten(tree)[0])


# -- fixed_point ----------------------------------------------------------------------------------------------
def _newton_sqrt(a):
    return tg.fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, np.ones_like(a))


def test_fixed_point_gradient_by_the_implicit_function_theorem():
    a = np.array([4.0, 2.0, 0.5])
    np.testing.assert_allclose(_newton_sqrt(a), np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(lambda a: _newton_sqrt(a).sum())(a), 0.5 / np.sqrt(a), rtol=1e-9)
    tg.gradcheck(lambda a: _newton_sqrt(a) * a, a)
    hessian = tg.hessian(lambda a: _newton_sqrt(a).sum())(a)  # the rule is differentiable again
    np.testing.assert_allclose(hessian, np.diag(-0.25 * a**-1.5), rtol=1e-8, atol=1e-12)


def test_fixed_point_of_a_contraction_with_a_tree_parameter_against_finite_differences():
    rng = np.random.default_rng(0)
    params = {"W": 0.3 * rng.normal(size=(3, 3)), "b": rng.normal(size=3)}

    def solve(W, b):
        return tg.fixed_point(lambda p: lambda x: tg.tanh(p["W"] @ x + p["b"]), {"W": W, "b": b}, np.zeros(3))

    tg.gradcheck(lambda W, b: solve(W, b), params["W"], params["b"])


def test_a_tensor_of_fs_closure_that_the_tape_records_gets_its_gradient_from_fixed_point():
    # w from f's closure, not from a: as differentiable as if it were passed in a (the oracle), where the
    # iteration's op read it as a constant and w got no gradient, with no error
    a0, w0 = np.array([0.2, 0.1]), np.array([0.5, -0.3])
    closed = lambda a, w: tg.fixed_point(lambda a: lambda z: tg.tanh(a * z + w), a, np.zeros(2)).sum()  # noqa: E731
    given = lambda a, w: tg.fixed_point(  # noqa: E731
        lambda p: lambda z: tg.tanh(p[0] * z + p[1]), (a, w), np.zeros(2)
    ).sum()
    want = tg.grad(given, argnums=(0, 1))(a0, w0)
    for got in (tg.grad(closed, argnums=(0, 1))(a0, w0), tg.grad(lambda w: closed(a0, w))(w0)):
        got = got if isinstance(got, tuple) else (want[0], got)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-9)
    tg.gradcheck(lambda w: closed(a0, w), w0)
    np.testing.assert_allclose(
        tg.hessian(lambda w: closed(a0, w))(w0), tg.hessian(lambda w: given(a0, w))(w0), rtol=1e-8
    )
    a, w = tg.Tensor(a0, requires_grad=True), tg.Tensor(w0, requires_grad=True)
    with tg.record() as t:
        loss = closed(a, w)
    assert [e.op for e in t.entries].count("fixed_point") == 1
    loss.backward()
    np.testing.assert_allclose(w.grad, want[1], rtol=1e-9)
    np.testing.assert_allclose(a.grad, want[0], rtol=1e-9)


def test_fixed_point_keeps_no_iteration_on_the_tape_and_refuses_a_map_that_does_not_converge():
    a = tg.Tensor(np.array([4.0]), requires_grad=True)
    with tg.record() as t:
        x = _newton_sqrt(a)
        loss = (x * x).sum()
    names = [e.op for e in t.entries]
    assert names.count("fixed_point") == 1 and "divide" not in names  # the iterations are not recorded
    probe = weakref.ref(x)
    del x
    loss.backward()
    gc.collect()
    assert probe() is None
    np.testing.assert_allclose(a.grad, [1.0])  # d(x*^2)/da = 1
    with pytest.raises(RuntimeError, match="fixed_point: the forward iteration did not converge within max_iter=50"):
        tg.fixed_point(lambda a: lambda x: 2.0 * x + a, np.ones(1), np.ones(1), max_iter=50)
    with pytest.raises(TypeError, match="fixed_point: x0 is an array \\(got a dict\\)"):
        tg.fixed_point(lambda a: lambda x: x, np.ones(1), {"x": np.ones(1)})


def test_fixed_point_matches_autograd():
    ag = _autograd()
    anp = pytest.importorskip("autograd.numpy")
    from autograd.misc.fixed_points import fixed_point as ag_fixed_point

    def distance(x, y):
        return anp.max(anp.abs(x - y))

    a = np.array([4.0, 2.0])
    theirs = ag.grad(
        lambda a: anp.sum(ag_fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, np.ones(2), distance, 1e-12))
    )(a)
    np.testing.assert_allclose(tg.grad(lambda a: _newton_sqrt(a).sum())(a), theirs, rtol=1e-9)


# -- check_grads ----------------------------------------------------------------------------------------------
def test_check_grads_passes_a_right_rule_in_both_modes_to_second_order():
    assert check_grads(lambda x, y: tg.sin(x) * y, argnum=0, modes=["fwd", "rev"], order=2)(np.array([0.3, 1.1]), 2.0)


@pytest.mark.parametrize("modes,order", [(["rev"], 1), (["fwd"], 1), (["rev"], 2)])
def test_check_grads_fails_a_wrong_rule(modes, order):
    op = tg.custom_op(save="x", register=False, name="wrong_cube")(lambda x: x**3)
    if order == 1:
        op.defvjp(lambda xp, g, ans, x: g * 3.001 * x**2)  # first derivative off by 0.03%
    else:
        op.defvjp(lambda xp, g, ans, x: g * 3.0 * x * xp.abs(x))  # right at x > 0, its derivative wrong at x < 0
    x = np.array([0.7, -1.3])
    with pytest.raises(tg.GradcheckError):
        check_grads(op, modes=modes, order=order)(x)


def test_check_grads_refuses_unknown_modes():
    with pytest.raises(ValueError, match="check_grads: modes must name 'fwd' and/or 'rev'"):
        check_grads(tg.sin, modes=["backward"])


# -- the functional optimizers, with autograd's equations -----------------------------------------------------
def _objective(p, i):
    return ((p["w"] - np.array([1.0, -2.0])) ** 2).sum() + tg.sum(p["b"] ** 4) + 0.01 * i * p["b"][0]


@pytest.mark.parametrize(
    "name,kwargs",
    [("sgd", {"step_size": 0.05, "mass": 0.8}), ("rmsprop", {"step_size": 0.01}), ("adam", {"step_size": 0.05})],
)
def test_the_functional_optimizers_follow_autograd_s_equations(name, kwargs):
    x0 = {"w": np.zeros(2), "b": np.array([0.5, -0.3])}
    calls = []
    ours = getattr(functional, name)(
        tg.grad(_objective), x0, lambda x, i, g: calls.append((i, g["w"].copy())), num_iters=30, **kwargs
    )
    assert [i for i, _ in calls] == list(range(30)) and set(ours) == {"w", "b"}
    assert ((ours["w"] - [1.0, -2.0]) ** 2).sum() < ((x0["w"] - [1.0, -2.0]) ** 2).sum()
    _autograd()
    import autograd
    import autograd.numpy as anp
    from autograd.misc import optimizers

    def their_objective(p, i):
        return anp.sum((p["w"] - np.array([1.0, -2.0])) ** 2) + anp.sum(p["b"] ** 4) + 0.01 * i * p["b"][0]

    theirs = getattr(optimizers, name)(autograd.grad(their_objective), x0, num_iters=30, **kwargs)
    for k in ("w", "b"):
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-12, atol=1e-14)


def test_a_functional_optimizer_refuses_a_gradient_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"adam: grad\(x, i\) returned 3 numbers for an x of 2"):
        functional.adam(lambda x, i: np.ones(3), np.zeros(2), num_iters=1)


@pytest.mark.parametrize("name", ["sgd", "rmsprop", "adam"])
def test_a_functional_optimizer_pairs_a_hand_built_gradient_by_key_and_refuses_another_structure(name):
    # flattened in its own insertion order, a dict gradient listing x's keys otherwise (as autograd, which sorts
    # them, accepts) updated each parameter with another's gradient, in silence where the shapes matched
    x0 = {"w": np.array([1.0, 2.0]), "b": np.array([-3.0, 0.5])}
    optimize = getattr(functional, name)
    by_hand = optimize(lambda x, i: {"b": 2 * x["b"], "w": 2 * (x["w"] - 1.0)}, x0, num_iters=5)
    traced = optimize(tg.grad(lambda x, i: ((x["w"] - 1.0) ** 2).sum() + (x["b"] ** 2).sum()), x0, num_iters=5)
    for k in x0:
        np.testing.assert_allclose(by_hand[k], traced[k], rtol=1e-12)
    assert list(by_hand) == ["w", "b"]
    with pytest.raises(ValueError, match=rf"{name}: grad\(x, i\) returned a list of another structure than x's dict"):
        optimize(lambda x, i: [x["w"], x["b"]], x0, num_iters=1)
    pair = optimize(lambda x, i: [x[0], x[1]], (np.ones(2), np.ones(1)), num_iters=1)  # a list for a tuple: autograd's
    assert isinstance(pair, tuple) and pair[0].shape == (2,)


def test_check_grads_on_complex_inputs_keeps_the_imaginary_part_and_moves_along_it():
    # the tangent was cast to float64 (its imaginary part dropped) and the direction was real: a right
    # function failed at order 2, and a rule wrong in the imaginary direction passed forward mode
    z = np.array([0.3 - 0.7j, 1.2 + 1.2j, -0.7 + 0.3j])
    assert check_grads(lambda z: tg.abs(z) ** 2, modes=["fwd", "rev"], order=2)(z)
    op = tg.custom_op(save="x", register=False, name="wrong_square")(lambda x: x * x)
    op.defvjp(lambda xp, g, ans, x: g * (2 * x).real)  # the imaginary part of the derivative lost
    with pytest.raises(tg.GradcheckError, match=r"forward mode.*analytic \("):
        check_grads(op, modes=["fwd"], order=1)(z)
