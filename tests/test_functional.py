"""The functional transforms against finite differences and closed forms, their structures, and their tapes."""

import collections
import contextlib
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import tape
from tapegrad.testing import numerical_jacobian

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
S = RNG.standard_normal((4, 4))


def smooth(x):
    """A scalar function of a vector with nonzero second derivatives everywhere."""
    return (tg.tanh(A @ x) ** 2).sum() + tg.logsumexp(x * x) + (tg.sin(x) * x).sum()


def vector_fn(x):
    return tg.tanh(A @ x) * (A @ tg.exp(0.3 * x))


def fd_grad(f, x, eps=1e-6):
    return numerical_jacobian(lambda t: f(t), [np.array(x, dtype=np.float64)], 0, eps)


# -- against finite differences -------------------------------------------------------------------------
def test_grad_matches_finite_differences():
    x = RNG.standard_normal(4)
    np.testing.assert_allclose(tg.grad(smooth)(x), fd_grad(smooth, x), rtol=1e-6, atol=1e-8)


def test_jacobian_matches_finite_differences_and_has_out_shape_then_in_shape():
    x = RNG.standard_normal(4)
    jac = tg.jacobian(vector_fn)(x)
    assert jac.shape == (3, 4)
    np.testing.assert_allclose(jac, fd_grad(vector_fn, x), rtol=1e-6, atol=1e-8)
    m = RNG.standard_normal((2, 3))
    jac2 = tg.jacobian(lambda m: tg.exp(m).sum(axis=0))(m)
    assert jac2.shape == (3, 2, 3)
    np.testing.assert_allclose(jac2, fd_grad(lambda m: tg.exp(m).sum(axis=0), m), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("m, n", [(12, 2), (2, 12), (5, 5)])
def test_jacobian_rows_and_columns_agree_and_auto_picks_either(m, n):
    B = RNG.standard_normal((m, n))

    def f(p):
        z = B @ (p["x"] * p["s"])
        return {"z": tg.tanh(z) * tg.exp(0.1 * z), "total": z.sum()}

    p = {"x": RNG.standard_normal(n), "s": 1.5}
    rev, fwd, auto = (tg.jacobian(f, mode=mode)(p) for mode in ("rev", "fwd", "auto"))
    for o in ("z", "total"):
        for i in ("x", "s"):
            assert rev[o][i].shape == fwd[o][i].shape == auto[o][i].shape
            np.testing.assert_allclose(fwd[o][i], rev[o][i], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(auto[o][i], rev[o][i], rtol=1e-12, atol=1e-14)
    numeric = fd_grad(lambda x: f({"x": x, "s": 1.5})["z"], p["x"])
    np.testing.assert_allclose(fwd["z"]["x"], numeric, rtol=1e-6, atol=1e-8)
    # both modes are differentiable again: a Hessian by forward over reverse equals reverse over reverse
    x4 = RNG.standard_normal(4)
    np.testing.assert_allclose(tg.jacobian(tg.jacobian(smooth), mode="fwd")(x4), tg.hessian(smooth)(x4), rtol=1e-10)


def test_hessian_matches_finite_differences_of_the_gradient():
    x = RNG.standard_normal(4)
    numeric = fd_grad(lambda t: tg.Tensor(tg.grad(smooth)(t.numpy())), x, eps=1e-5)
    H = tg.hessian(smooth)(x)
    np.testing.assert_allclose(H, numeric, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(H, H.T, atol=1e-12)


def test_transforms_of_a_matrix_vector_chain_match_finite_differences():
    # sum(tanh(B @ tanh(B @ x)) ** 2) with B square and not symmetric: the rules the transforms replay on tensors
    # for a matrix times a vector (x^T g as g @ x), x ** 2 and a full sum, so a transposed B would show
    B = RNG.standard_normal((5, 5)) + 2.0 * np.triu(np.ones((5, 5)))
    x, v = RNG.standard_normal(5), RNG.standard_normal(5)

    def f(x):
        return (tg.tanh(B @ tg.tanh(B @ x)) ** 2).sum()

    numeric = fd_grad(lambda t: tg.Tensor(tg.grad(f)(t.numpy())), x, eps=1e-5)
    H = tg.hessian(f)(x)
    np.testing.assert_allclose(tg.grad(f)(x), fd_grad(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, numeric, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(tg.jacrev(tg.grad(f))(x), H, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.hvp(f, x, v), H @ v, rtol=1e-10, atol=1e-12)
    inner = lambda x: tg.tanh(B @ tg.tanh(B @ x))  # noqa: E731
    J = fd_grad(inner, x)
    for mode in ("rev", "fwd"):
        np.testing.assert_allclose(tg.jacobian(inner, mode=mode)(x), J, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jvp(inner, (x,), (v,))[1], J @ v, rtol=1e-6, atol=1e-8)


def test_jacobian_of_several_inputs_and_outputs_by_columns_and_rows():
    B = RNG.standard_normal((4, 3))

    def f(x, y):
        return tg.tanh(B @ x) * y[0], (x**2).sum() * y

    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    by = {mode: tg.jacobian(f, argnums=(0, 1), mode=mode)(x, y) for mode in ("fwd", "rev", "auto")}
    fwd = tg.jacfwd(f, argnums=(0, 1))(x, y)
    for o, out_shape in enumerate([(4,), (2,)]):
        for i, arg in enumerate([x, y]):
            g = (lambda a, o=o: f(a, y)[o]) if i == 0 else (lambda a, o=o: f(x, a)[o])
            numeric = fd_grad(g, arg)
            assert fwd[o][i].shape == out_shape + arg.shape
            np.testing.assert_allclose(fwd[o][i], numeric, rtol=1e-6, atol=1e-8)
            for mode in by:
                np.testing.assert_allclose(by[mode][o][i], fwd[o][i], rtol=1e-12, atol=1e-14)


# -- against closed forms ---------------------------------------------------------------------------------
def test_jacobian_of_a_linear_map_is_its_matrix():
    np.testing.assert_array_equal(tg.jacobian(lambda x: A @ x)(RNG.standard_normal(4)), A)
    # and of x -> x A (a row vector times A) is A^T
    np.testing.assert_array_equal(tg.jacobian(lambda x: x @ A)(RNG.standard_normal(3)), A.T)


def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose():
    H = tg.hessian(lambda x: x @ (S @ x))(RNG.standard_normal(4))
    np.testing.assert_allclose(H, S + S.T, rtol=1e-12, atol=1e-12)


def test_hvp_equals_hessian_times_v():
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)
    np.testing.assert_allclose(tg.hvp(smooth, x, v), tg.hessian(smooth)(x) @ v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.hvp(lambda x: x @ (S @ x), x, v), (S + S.T) @ v, rtol=1e-12)


def test_jvp_equals_jacobian_times_tangent():
    x, t = RNG.standard_normal(4), RNG.standard_normal(4)
    out, jt = tg.jvp(vector_fn, (x,), (t,))
    np.testing.assert_allclose(out, vector_fn(tg.Tensor(x)).numpy())
    np.testing.assert_allclose(jt, tg.jacobian(vector_fn)(x) @ t, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jt, fd_grad(vector_fn, x) @ t, rtol=1e-6, atol=1e-8)


def test_jvp_with_two_primals_sums_both_directions():
    x, y, tx, ty = (RNG.standard_normal(3) for _ in range(4))
    _, jt = tg.jvp(lambda x, y: x * tg.sin(y), (x, y), (tx, ty))
    np.testing.assert_allclose(jt, tx * np.sin(y) + x * np.cos(y) * ty)


def test_vjp_equals_cotangent_times_jacobian_and_can_be_called_again():
    x, c = RNG.standard_normal(4), RNG.standard_normal(3)
    out, vjp_fn = tg.vjp(vector_fn, x)
    J = tg.jacobian(vector_fn)(x)
    (g,) = vjp_fn(c)
    np.testing.assert_allclose(g, c @ J, rtol=1e-12)
    np.testing.assert_allclose(vjp_fn(2 * c)[0], 2 * c @ J, rtol=1e-12)
    np.testing.assert_allclose(out, vector_fn(tg.Tensor(x)).numpy())


def test_second_derivative_by_composing_grad():
    x = 0.7
    np.testing.assert_allclose(tg.grad(tg.grad(tg.sin))(x), -np.sin(x))
    np.testing.assert_allclose(tg.grad(tg.grad(tg.grad(lambda x: x**4)))(x), 24 * x)


def test_transforms_return_tensors_inside_an_outer_record_and_compose_with_it():
    x = tg.Tensor([0.3, -0.5], requires_grad=True)
    with tape.record() as t:
        g = tg.grad(lambda x: (x**3).sum())(x)  # 3 x^2, recorded on t
        s = g.sum()
    assert isinstance(g, tg.Tensor)
    np.testing.assert_allclose(g.numpy(), 3 * x.data**2)
    np.testing.assert_allclose(t.gradient(s, x), 6 * x.data)


def _cube_sin(x):
    return tg.sin(x) * x**2


# each transform's result as a function of x, called inside the user's record() block
_INSIDE_A_BLOCK = {
    "grad": lambda x: tg.grad(lambda x: _cube_sin(x).sum())(x),
    "value_and_grad's value": lambda x: tg.value_and_grad(lambda x: _cube_sin(x).sum())(x)[0],
    "vjp": lambda x: tg.vjp(_cube_sin, x)[1](np.ones(3))[0],
    "hvp": lambda x: tg.hvp(lambda x: _cube_sin(x).sum(), x, np.ones(3)),
    "jacrev": lambda x: tg.jacrev(_cube_sin)(x),
    "hessian": lambda x: tg.hessian(lambda x: _cube_sin(x).sum())(x),
    "jvp": lambda x: tg.jvp(_cube_sin, (x,), (np.ones(3),))[1],
}


@pytest.mark.parametrize("when", ["inside the block", "after it"])
@pytest.mark.parametrize("name", sorted(_INSIDE_A_BLOCK))
def test_a_transforms_result_recorded_by_an_outer_block_can_call_backward(name, when):
    # A transform's own tape is released on its way out; the block around it recorded the same ops, so the
    # result's backward() replays the block's tape (grad, the value, vjp and hvp raised "released" before)
    h, x0 = _INSIDE_A_BLOCK[name], RNG.standard_normal(3)
    x = tg.Tensor(x0, requires_grad=True)
    with tape.record():
        out = h(x)
        seed = np.random.default_rng(1).standard_normal(out.shape)
        if when == "inside the block":
            out.backward(seed)
    if when == "after it":
        out.backward(seed)
    expected = numerical_jacobian(lambda a: (np.asarray(h(a)) * seed).sum(), [x0.copy()], 0, 1e-6)
    np.testing.assert_allclose(x.grad, expected, atol=1e-6)


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("name", sorted(_INSIDE_A_BLOCK))
def test_a_transforms_result_replays_its_block_once_as_any_value_of_it(name, nested):
    # A second backward() raises, whichever tape the first replayed: a transform's result once found the next
    # block out (held, still recording) and replayed it too, doubling .grad silently
    h = _INSIDE_A_BLOCK[name]
    x = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    with tape.record(), tape.record() if nested else contextlib.nullcontext():
        out = h(x)
    out.backward(np.ones(out.shape))
    first = x.grad.copy()
    with pytest.raises(tg.TapeError, match="already called"):
        out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(x.grad, first)


def test_a_value_whose_tape_replayed_is_not_replayed_again_by_an_enclosing_tape():
    # z.backward() consumed the inner tape; y.backward() replayed the outer one, which recorded y too, and
    # counted x's gradient twice, silently: a tape that replayed (or failed) is the error's reason
    x = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    with tape.record() as outer, tape.record() as inner:
        y = tg.sin(x) * x
        z = (y * 2.0).sum()
    z.backward()
    assert inner.state == "replayed"
    first = x.grad.copy()
    with pytest.raises(tg.TapeError, match="already called"):
        y.backward(np.ones(3))
    np.testing.assert_array_equal(x.grad, first)
    assert outer.state == "recording"  # the user's to replay for what it recorded


def test_a_value_of_a_tape_the_user_released_says_so_whatever_became_of_the_blocks_around_it():
    # the enclosing block's state explains only a transform's own tape, which the user never handled
    x = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    with tape.record() as outer:
        with tape.record() as inner:
            y = (x * x).sum()
        z = (x * 3.0).sum()
    z.backward()
    assert outer.state == "replayed"
    inner.release()
    with pytest.raises(tg.TapeError, match=r"released \(release\(\) was called\)"):
        y.backward()


def test_backward_of_vjps_output_in_a_block_replays_the_block_and_vjp_fn_still_works():
    # vjp keeps its own tape for vjp_fn; backward() of its output replays the user's block (freeing it, once),
    # where it replayed vjp's tape: the block kept its saved arrays and a second backward() doubled .grad
    x = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    with tape.record() as t:
        out, vjp_fn = tg.vjp(_cube_sin, x)
    out.backward(np.ones(3))
    assert t.state == "replayed" and t.saved_bytes() == 0
    expected = np.cos(x.data) * x.data**2 + 2 * x.data * np.sin(x.data)
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)
    with pytest.raises(tg.TapeError, match="already called"):
        out.backward(np.ones(3))
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], expected, rtol=1e-12)


def test_a_transforms_result_after_its_blocks_replay_failed_names_the_failure():
    x = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    with tape.record():
        g = tg.grad(lambda x: _cube_sin(x).sum())(x)
        s = g.sum()
    hook = x.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        s.backward()
    hook.remove()
    with pytest.raises(tg.TapeError, match="failed"):  # it said "release() was called", which the user never did
        g.backward(np.ones(3))


def test_a_create_graph_replay_gives_each_leaf_a_gradient_of_its_own():
    # a + b hands both leaves one cotangent: each .grad (and each of grad's results) is a tensor of its own,
    # the user's to change, as a plain replay's are; they were one tensor, and writing b.grad changed a.grad
    c = RNG.standard_normal((3, 2))
    a0, b0 = RNG.standard_normal(3), RNG.standard_normal(3)
    a, b = tg.Tensor(a0, requires_grad=True), tg.Tensor(b0, requires_grad=True)
    with tape.record():
        ((a + b) @ c).sum().backward(create_graph=True)
        ga, gb = tg.grad(lambda a, b: (((a + b) @ c) ** 2).sum(), argnums=(0, 1))(a, b)
        assert a.grad is not b.grad and not np.shares_memory(a.grad.data, b.grad.data)
        assert ga is not gb and not np.shares_memory(ga.data, gb.data)
        b.grad.data[0] = 100.0
        np.testing.assert_allclose(a.grad.data, c.sum(axis=1), rtol=1e-12)
        a.grad = b.grad = None
        second = (ga * gb).sum()
    second.backward()  # the copies still differentiate

    def expected(a_):
        g = 2 * ((a_ + b0) @ c) @ c.T
        return (g * g).sum()

    np.testing.assert_allclose(a.grad, numerical_jacobian(expected, [a0.copy()], 0, 1e-6), atol=1e-6)
    with tape.record() as t:  # a plain replay's gradient() of two recorded values: two arrays (it was one)
        u, v = a * 2.0, b * 2.0
        gu, gv = t.gradient(((u + v) @ c).sum(), [u, v])
    assert not np.shares_memory(gu, gv)
    np.testing.assert_allclose(gu, c.sum(axis=1), rtol=1e-12)


def test_a_transforms_result_whose_outer_block_was_released_refuses_backward():
    x = tg.Tensor(2.0, requires_grad=True)
    with tape.record() as t:
        g = tg.grad(lambda x: x**3)(x)
    t.release()
    with pytest.raises(tg.TapeError, match="released"):
        g.backward()
    assert x.grad is None


def test_a_transforms_result_whose_outer_block_was_dropped_says_so():
    # The context keeps the latest block's tape only: the error names that, not the transform's own release
    x = tg.Tensor(2.0, requires_grad=True)
    with tape.record():
        g = tg.grad(lambda x: x**3)(x)
    with tape.record():
        x * 2.0
    with pytest.raises(tg.TapeError, match="dropped before backward"):
        g.backward()


def test_a_tape_that_did_not_record_a_value_is_never_the_one_its_backward_replays():
    # Only a tape holding the value's entry may stand in for the value's own: t2 recorded t1's recorded replay
    # (so t1 counts t2 as a tape it was nested in) but not y, and replaying t2 from y would give x no gradient
    x = tg.Tensor(2.0, requires_grad=True)
    with tape.record(persistent=True) as t1:
        y = x**3
    with tape.record():
        g = t1.gradient(y, x)  # 3 x^2, recorded on t2 and on t1
    t1.release()
    with pytest.raises(tg.TapeError, match="released"):
        y.backward()
    assert x.grad is None
    g.backward()  # t2 holds g's entries
    assert float(x.grad) == 12.0


def test_transforms_compose_with_each_other():
    x, t = RNG.standard_normal(4), RNG.standard_normal(4)
    H = tg.hessian(smooth)(x)
    np.testing.assert_allclose(tg.jvp(tg.grad(smooth), (x,), (t,))[1], H @ t, rtol=1e-10)  # forward over reverse
    c = RNG.standard_normal(3)
    np.testing.assert_allclose(tg.jacobian(lambda c: tg.vjp(vector_fn, x)[1](c)[0])(c), tg.jacobian(vector_fn)(x).T)
    g = tg.grad(lambda x: tg.jvp(vector_fn, (x,), (t,))[1].sum())(x)  # reverse over forward
    numeric = fd_grad(lambda y: tg.Tensor(tg.jvp(vector_fn, (y.numpy(),), (t,))[1].sum()), x)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


# -- structures ------------------------------------------------------------------------------------------
def test_grad_mirrors_dicts_lists_tuples_and_scalars():
    Point = collections.namedtuple("Point", "a b")
    params = {"w": np.array([1.0, 2.0]), "rest": [3.0, (np.array(4.0), Point(5.0, 6.0))]}

    def f(p):
        b, (c, pt) = p["rest"]
        return (p["w"] ** 2).sum() * b + c * pt.a + pt.b**2

    g = tg.grad(f)(params)
    assert set(g) == {"w", "rest"} and isinstance(g["rest"], list) and isinstance(g["rest"][1], tuple)
    assert isinstance(g["rest"][1][1], Point)
    np.testing.assert_allclose(g["w"], 2 * params["w"] * 3.0)
    assert g["rest"][0] == 5.0 and g["rest"][1][0] == 5.0
    assert g["rest"][1][1] == Point(4.0, 12.0)


def test_argnums_tuple_gives_one_gradient_per_argument_and_same_tensor_twice_is_two_arguments():
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    gx, gy = tg.grad(lambda x, y, k: (x * y * k).sum(), argnums=(0, 1))(x, y, 2.0)
    np.testing.assert_allclose(gx, 2 * y)
    np.testing.assert_allclose(gy, 2 * x)
    t = tg.Tensor(x)
    g0, g1 = tg.grad(lambda a, b: (a * b * b).sum(), argnums=(0, 1))(t, t)
    np.testing.assert_allclose(g0, x**2)  # d/da of a b^2, at a = b = x
    np.testing.assert_allclose(g1, 2 * x**2)
    assert tg.grad(lambda a, b: a * b, argnums=1)(3.0, 4.0) == 3.0


def test_integer_inputs_become_float_and_unused_arguments_get_zeros():
    g = tg.grad(lambda x, y: (x * 2.0).sum(), argnums=(0, 1))(np.array([1, 2]), np.array([5.0, 6.0]))
    assert g[0].dtype == np.float64
    np.testing.assert_array_equal(g[0], [2.0, 2.0])
    np.testing.assert_array_equal(g[1], [0.0, 0.0])
    np.testing.assert_array_equal(tg.grad(lambda x: 3.0)(np.ones(2)), [0.0, 0.0])  # a constant output


def test_float32_gradients_stay_float32():
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert tg.grad(lambda x: (x * x).sum())(x).dtype == np.float32


def test_value_and_grad_and_has_aux():
    x = np.array([1.0, -2.0])
    value, g = tg.value_and_grad(lambda x: (x**2).sum())(x)
    assert value == 5.0 and isinstance(value, np.ndarray)
    np.testing.assert_array_equal(g, 2 * x)
    (value, aux), g = tg.value_and_grad(lambda x: ((x**2).sum(), {"y": x * 3, "tag": "ok"}), has_aux=True)(x)
    assert isinstance(aux["y"], np.ndarray)  # tensors in aux leave as arrays, the rest as it is
    np.testing.assert_array_equal(aux["y"], 3 * x)
    assert aux["tag"] == "ok" and value == 5.0
    g2, aux2 = tg.grad(lambda x: ((x**2).sum(), x.shape), has_aux=True)(x)
    np.testing.assert_array_equal(g2, 2 * x)
    assert aux2 == (2,)


def test_jacobian_of_a_dict_output_with_respect_to_a_dict_input():
    d = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    jac = tg.jacobian(lambda d: {"p": d["a"] * d["b"], "q": d["a"].sum()})(d)
    np.testing.assert_array_equal(jac["p"]["a"], np.diag(d["b"]))
    np.testing.assert_array_equal(jac["p"]["b"], np.diag(d["a"]))
    np.testing.assert_array_equal(jac["q"]["a"], [1.0, 1.0])
    np.testing.assert_array_equal(jac["q"]["b"], [0.0, 0.0])


def test_hessian_of_a_function_of_two_blocks():
    H = tg.hessian(lambda p: (p[0] ** 2 * p[1]).sum())([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    np.testing.assert_array_equal(H[0][0], np.diag([6.0, 8.0]))  # d2/dx2 of x^2 y = 2y
    np.testing.assert_array_equal(H[0][1], np.diag([2.0, 4.0]))  # d2/dxdy = 2x
    np.testing.assert_array_equal(H[1][1], np.zeros((2, 2)))


# -- errors ----------------------------------------------------------------------------------------------
def test_clear_errors():
    with pytest.raises(ValueError, match=r"grad requires a scalar output; use jacobian or vjp .*\(3,\)"):
        tg.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(TypeError, match="has_aux=True needs f to return a pair"):
        tg.grad(lambda x: x.sum(), has_aux=True)(np.ones(3))
    with pytest.raises(ValueError, match="argnums 2 is out of range for a call with 2 positional"):
        tg.grad(lambda x, y: x, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="cannot differentiate with respect to a str"):
        tg.grad(lambda x: 1.0)({"a": "text"})
    with pytest.raises(TypeError, match="dtype int64"):
        tg.grad(lambda x: x.sum())(tg.Tensor(np.arange(3)))
    with pytest.raises(ValueError, match="mode must be 'auto', 'rev' or 'fwd'"):
        tg.jacobian(smooth, mode="forward")
    with pytest.raises(ValueError, match="structure and shapes of x"):
        tg.hvp(smooth, np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match=r"hvp requires a scalar f \(f returned shape \(3,\)\)"):
        tg.hvp(vector_fn, np.ones(4), np.ones(4))
    with pytest.raises(TypeError, match="hvp: f must return a scalar tensor or number, got NoneType"):
        tg.hvp(lambda x: None, np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="tangents must have the structure"):
        tg.jvp(vector_fn, (np.ones(4),), (np.ones(4), np.ones(4)))
    _, vjp_fn = tg.vjp(vector_fn, np.ones(4))
    with pytest.raises(ValueError, match="cotangent must have the structure and shapes"):
        vjp_fn(np.ones(4))


# -- tapes are released ------------------------------------------------------------------------------------
TRANSFORMS = {
    "grad": lambda f, x: tg.grad(f)(x),
    "value_and_grad": lambda f, x: tg.value_and_grad(f)(x),
    "jacobian": lambda f, x: tg.jacobian(f)(x),
    "jacobian_fwd": lambda f, x: tg.jacobian(lambda x: f(x) * x, mode="fwd")(x),
    "hessian": lambda f, x: tg.hessian(f)(x),
    "hvp": lambda f, x: tg.hvp(f, x, np.ones_like(x)),
    "jvp": lambda f, x: tg.jvp(f, (x,), (np.ones_like(x),)),
    "vjp": lambda f, x: tg.vjp(f, x)[1](np.array(1.0)),
    "jacfwd": lambda f, x: tg.jacfwd(f)(x),
    "linearize": lambda f, x: tg.linearize(f, x)[1](np.ones_like(x)),
}
TAPELESS = {"jvp", "jacfwd", "linearize"}  # forward mode: tangents beside the forward pass, no tape at all


def _note_tape(tapes):
    current = tape.current()
    if current is not None:
        tapes.append(weakref.ref(current))


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_tape_is_released_on_success(name):
    tapes, probes = [], []

    def f(x):
        _note_tape(tapes)
        h = tg.exp(x) * x
        probes.append(weakref.ref(h.data))
        return h.sum()

    TRANSFORMS[name](f, np.array([0.5, -1.0]))
    assert bool(tapes) != (name in TAPELESS) and all(t() is None for t in tapes)
    assert all(p() is None for p in probes)
    assert tape.current() is None


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_tape_is_released_when_f_raises(name):
    tapes = []

    def f(x):
        _note_tape(tapes)
        (tg.exp(x) * x).sum()
        raise FloatingPointError("inside f")

    try:
        TRANSFORMS[name](f, np.array([0.5, -1.0]))
    except FloatingPointError as err:
        assert "inside f" in str(err)
        assert tape.current() is None
        assert all(t().state == "released" and len(t()) == 0 for t in tapes)  # the traceback still holds them
    else:
        pytest.fail("the exception was swallowed")
    assert bool(tapes) != (name in TAPELESS) and all(t() is None for t in tapes)


def test_vjp_fn_keeps_its_tape_until_dropped_or_released():
    seen = []
    _, vjp_fn = tg.vjp(lambda x: (seen.append(weakref.ref(tape.current())), tg.exp(x))[1], np.array([1.0]))
    vjp_fn(np.array([1.0]))
    assert seen[0]() is not None and len(seen[0]()) > 0
    del vjp_fn
    assert seen[0]() is None
    _, vjp_fn = tg.vjp(lambda x: (seen.append(weakref.ref(tape.current())), tg.exp(x))[1], np.array([1.0]))
    vjp_fn.release()
    assert len(seen[1]()) == 0
    with pytest.raises(tg.TapeError, match="released"):
        vjp_fn(np.array([1.0]))


def test_a_transform_between_a_block_and_its_backward_keeps_the_users_tape():
    w = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tape.record():
        loss = (w * w).sum()
    tg.grad(lambda x: (x**2).sum())(np.ones(2))
    tg.vjp(lambda x: x * 2, np.ones(2))
    loss.backward()
    np.testing.assert_array_equal(w.grad, [2.0, 4.0])


def test_repeated_transforms_hold_no_memory_afterwards():
    x = RNG.standard_normal(20_000)  # intermediates of 160 kB each

    def f(x):
        h = tg.exp(tg.sin(x)) * x
        return (h * h).sum()

    kept = []
    tg.hessian(lambda x: f(x[:3]))(x[:3])  # warm up
    gc.disable()  # freed by reference counting alone: no reference cycle may hold a recorded array
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            kept.append(tg.grad(f)(x))
            kept.append(tg.hvp(f, x, x))
            kept.append(tg.jvp(f, (x,), (x,))[1])
            kept.append(tg.vjp(f, x)[1](np.array(1.0))[0])
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
        gc.enable()
    results = sum(k.nbytes for k in kept)
    assert held < results + 100_000, (held, results)  # the results themselves, and nothing recorded
