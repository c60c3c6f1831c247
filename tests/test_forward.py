"""Forward mode (``tapegrad.forward``): every op in ``op_table.OPS`` as a property of its JVP rule.

For every row, hypothesis draws shapes, keywords and values as the reverse-mode properties do
(``test_properties.py``), a random tangent per differentiable input and a random cotangent, and checks in float64:

- the JVP equals central finite differences along the tangent;
- the JVP is the transpose of the VJP: ``Re <J t, u> == Re <t, J^T u>`` (to rounding);
- second order: the JVP of the JVP equals finite differences of the JVP.

Complex inputs (every row that takes them, as ``test_complex.py`` draws them) are checked the same way under
tapegrad's convention. The meta-test fails for a registered op with neither a rule nor a derivation; a check
with a wrong rule shows that the properties can fail.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_table import OPS, shapes_and_kwargs
from test_complex import FIRST, _accepts_complex, _complex_inputs

import tapegrad as tg
from tapegrad import strategies as tgst
from tapegrad._state import FORWARD, TRACING
from tapegrad.forward import derivation
from tapegrad.registry import defop

IDS = [case.name for case in OPS]
FEW = max(3, settings.default.max_examples // 5)


def _split(case, arrays):
    """The differentiable inputs, and a function of them alone (the constant ones closed over)."""
    free = [i for i in range(len(arrays)) if i not in case.constant_inputs]

    def of(kwargs):
        def f(*xs):
            full = list(arrays)
            for i, x in zip(free, xs):
                full[i] = x
            return case.fn(*full, **kwargs)

        return f

    return [arrays[i] for i in free], of


def _random_like(rng, a):
    a = np.asarray(a)
    t = rng.standard_normal(a.shape)
    return t + 1j * rng.standard_normal(a.shape) if np.iscomplexobj(a) else t


def _value(f, xs):
    return np.asarray(f(*[tg.Tensor(x) for x in xs]).numpy())


def _pair(a, b):
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def check_jvp(f, xs, seed=0, second=False):
    """The JVP of ``f`` at ``xs`` against finite differences and against the VJP; with ``second``, the JVP of
    the JVP against finite differences of the JVP. Raises AssertionError naming what is off."""
    rng = np.random.default_rng(seed)
    ts = [_random_like(rng, x) for x in xs]
    out, jt = tg.jvp(f, tuple(xs), tuple(ts))
    expected = _value(f, xs)
    assert np.shape(out) == expected.shape and np.shape(jt) == expected.shape, (np.shape(jt), expected.shape)
    h = 1e-6

    def central(step):
        up = _value(f, [x + step * t for x, t in zip(xs, ts)])
        down = _value(f, [x - step * t for x, t in zip(xs, ts)])
        return (up - down) / (2 * step)

    # Richardson's extrapolation of two central differences cancels their h**2 error, which a product of 34 twos
    # with two zeros (a JVP of exactly 0, and a third derivative of 2**33) makes 5e-4 at h = 1e-6
    numeric = (4 * central(h / 2) - central(h)) / 3
    scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
    np.testing.assert_allclose(jt, numeric, rtol=1e-4, atol=1e-5 * scale, err_msg="JVP vs finite differences")
    # the transpose of the VJP under the real pairing (tapegrad's convention, JAX's)
    u = _random_like(rng, expected)
    _, vjp_fn = tg.vjp(f, *xs)
    back = vjp_fn(u)
    lhs = _pair(jt, u)
    rhs = sum(_pair(t, np.conj(0) + b) for t, b in zip(ts, back))
    assert abs(lhs - rhs) <= 1e-8 * (1 + abs(lhs) + abs(rhs)), f"<J t, u> = {lhs} but <t, J^T u> = {rhs}"
    if second:
        s = [_random_like(rng, x) for x in xs]

        def g(*ys):
            return tg.jvp(f, ys, tuple(ts))[1]

        _, jjt = tg.jvp(g, tuple(xs), tuple(s))
        h2 = 1e-5
        numeric2 = (
            np.asarray(g(*[x + h2 * v for x, v in zip(xs, s)])) - np.asarray(g(*[x - h2 * v for x, v in zip(xs, s)]))
        ) / (2 * h2)
        scale2 = max(1.0, float(np.max(np.abs(numeric2), initial=0.0)))
        np.testing.assert_allclose(jjt, numeric2, rtol=1e-3, atol=1e-4 * scale2, err_msg="second-order JVP")
    return True


@st.composite
def _inputs(draw, case):
    shapes, kwargs = draw(shapes_and_kwargs(case))
    return draw(tgst.inputs(shapes, case.domain, np.float64)), kwargs


@pytest.mark.parametrize("case", OPS, ids=IDS)
@settings(max_examples=FEW)
@given(data=st.data())
def test_jvp_matches_finite_differences_and_the_vjp(case, data):
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    xs, of = _split(case, arrays)
    if xs:
        assert check_jvp(of(kwargs), xs, seed=data.draw(st.integers(0, 2**16), label="seed"))


@pytest.mark.parametrize("case", OPS, ids=IDS)
@settings(max_examples=max(2, FEW // 2))
@given(data=st.data())
def test_second_order_jvp_matches_finite_differences(case, data):
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    xs, of = _split(case, arrays)
    if xs:
        assert check_jvp(of(kwargs), xs, second=True)


@pytest.mark.parametrize("case", OPS, ids=IDS)
@settings(max_examples=max(2, FEW // 2))
@given(data=st.data())
def test_forward_over_reverse_equals_reverse_over_reverse(case, data):
    """The tangent of grad (forward over reverse, through every VJP rule's ops) and hvp (reverse over forward,
    through every JVP rule's ops) against the gradient of <grad, v> (reverse over reverse), for a weighted sum of
    the op's output."""
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    xs, of = _split(case, arrays)
    f = of(kwargs)
    out = _value(f, xs)
    if not xs or np.iscomplexobj(out):
        return
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 1.5, out.shape)
    vs = tuple(rng.standard_normal(np.shape(x)) for x in xs)

    def loss(xs):
        return (f(*xs) * w).sum()

    def pairing(xs):
        return sum((g * v).sum() for g, v in zip(tg.grad(loss)(xs), vs))

    want = tg.grad(pairing)(tuple(xs))
    for got in (tg.jvp(tg.grad(loss), (tuple(xs),), (vs,))[1], tg.hvp(loss, tuple(xs), vs)):
        for a, b in zip(got, want):
            scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10 * scale)


@pytest.mark.parametrize("case,shapes,kwargs", FIRST, ids=[c.name for c, _, _ in FIRST])
def test_jvp_on_complex_input_matches_finite_differences_and_the_vjp(case, shapes, kwargs):
    if not _accepts_complex(case, shapes, kwargs):
        return
    xs, of = _split(case, _complex_inputs(case, shapes))
    if xs:
        assert check_jvp(of(kwargs), xs)


# -- the meta-test, and the properties can fail ------------------------------------------------------------
def test_every_registered_op_has_a_forward_rule():
    missing = sorted(name for name, op in tg.REGISTRY.items() if derivation(op) is None)
    assert not missing, f"ops with neither a JVP rule (jvp=) nor a derivation (linear=, elementwise): {missing}"


def test_an_op_with_several_outputs_has_a_tangent_for_each():
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 1.0]])
    t = np.array([[1.0, 0.5, 0.0], [0.5, -1.0, 0.2], [0.0, 0.2, 0.3]])
    _, (tw, tv) = tg.jvp(lambda a: tuple(tg.linalg.eigh(a)), (a,), (t,))
    h = 1e-6
    (wp, vp), (wm, vm) = np.linalg.eigh(a + h * t), np.linalg.eigh(a - h * t)
    np.testing.assert_allclose(tw, (wp - wm) / (2 * h), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tv, (vp - vm) / (2 * h), rtol=1e-5, atol=1e-7)


_no_rule = defop("no_rule_demo", lambda x: x[::-1].copy(), lambda xp, g, ans, x: g[::-1], register=False)


def test_an_op_without_a_rule_raises_naming_it_and_forward_mode_ends():
    assert derivation(_no_rule.op) is None
    with pytest.raises(NotImplementedError, match="no_rule_demo: no forward-mode rule"):
        tg.jvp(lambda x: _no_rule(x), (np.ones(3),), (np.ones(3),))
    assert FORWARD.get() == () and TRACING.n == 0
    assert tg.jvp(tg.exp, (np.zeros(2),), (np.ones(2),))[1].tolist() == [1.0, 1.0]  # the user goes on


_wrong_jvp = defop(
    "wrong_jvp_demo",
    np.exp,
    lambda xp, g, ans, x: g * ans,
    save="ans",
    register=False,
    jvp=lambda xp, ts, ans, x: ts[0] * ans * 1.001,
)


def test_a_wrong_rule_fails_the_check():
    with pytest.raises(AssertionError, match="JVP vs finite differences"):
        check_jvp(lambda x: _wrong_jvp(x), [np.array([0.5, 1.0])])


# -- the transforms --------------------------------------------------------------------------------------
A = np.random.default_rng(1).standard_normal((6, 6)) / 3


def _net(x):
    return tg.tanh(A @ tg.tanh(A @ x))


def test_jvp_records_nothing_and_keeps_nothing_alive():
    import weakref

    probes = []

    def f(x):
        h = tg.exp(x) * x
        probes.append(weakref.ref(h))
        assert tg.tape.current() is None
        return h.sum()

    tg.jvp(f, (np.ones(3),), (np.ones(3),))
    assert probes and all(p() is None for p in probes)


def test_jacfwd_jacrev_jacobian_and_hessian_agree():
    x = np.random.default_rng(2).standard_normal(6)
    J = tg.jacrev(_net)(x)
    np.testing.assert_allclose(tg.jacfwd(_net)(x), J, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tg.jacobian(_net, mode="fwd")(x), J, rtol=1e-12, atol=1e-12)

    def loss(x):
        return (_net(x) ** 2).sum()

    H = tg.hessian(loss)(x)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)
    v = np.arange(6.0)
    np.testing.assert_allclose(tg.hvp(loss, x, v), H @ v, rtol=1e-10, atol=1e-12)


def _det_loss(x):
    return tg.linalg.det(x.reshape(3, 3))


def _eigh_loss(x):
    w, v = tg.linalg.eigh(x.reshape(3, 3) + x.reshape(3, 3).T)
    return (w**3).sum() + (v[:, 0] ** 4).sum()


@pytest.mark.parametrize("loss", [_det_loss, _eigh_loss], ids=["det", "eigh"])
def test_hessian_through_a_transposed_rule_warns_of_no_tape(loss):
    # jvp="transpose" ops (det, eigh) record their rule on a small tape of their own; the values they read from
    # jacrev's tape are constants there, not a leak
    x = np.random.default_rng(3).standard_normal(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.TapeLeakWarning)
        H = tg.hessian(loss)(x)
    np.testing.assert_allclose(H, tg.jacrev(tg.jacrev(loss))(x), rtol=1e-9, atol=1e-11)


def test_linearize_gives_the_jvp_at_its_point():
    x, t = np.array([0.3, -0.2, 0.1, 0.0, 0.5, 1.0]), np.ones(6)
    y, f_jvp = tg.linearize(_net, x)
    np.testing.assert_allclose(y, _net(tg.Tensor(x)).numpy())
    np.testing.assert_allclose(f_jvp(t), tg.jvp(_net, (x,), (t,))[1])
    with pytest.raises(TypeError, match="one per primal"):
        f_jvp(t, t)


def test_forward_mode_composes_with_reverse_mode_both_ways():
    x, t = np.array([0.3, -0.2, 0.1, 0.0, 0.5, 1.0]), np.linspace(-1, 1, 6)

    def loss(x):
        return (_net(x) ** 2).sum()

    H = tg.hessian(loss)(x)
    # reverse over forward: the gradient of <grad loss, t> computed by jvp is H t
    np.testing.assert_allclose(tg.grad(lambda x: tg.jvp(loss, (x,), (t,))[1])(x), H @ t, rtol=1e-10, atol=1e-12)
    # forward over forward: t^T H t
    second = tg.jvp(lambda x: tg.jvp(loss, (x,), (t,))[1], (x,), (t,))[1]
    np.testing.assert_allclose(second, t @ H @ t, rtol=1e-10)


def test_a_plain_backward_inside_forward_mode_is_refused():
    def f(x):
        w = tg.Tensor(np.ones(3), requires_grad=True)
        with tg.record():
            loss = (w * x).sum()
        loss.backward()
        return w.grad

    with pytest.raises(tg.TapeError, match="inside forward mode"):
        tg.jvp(f, (np.ones(3),), (np.ones(3),))
    assert FORWARD.get() == () and TRACING.n == 0


def test_an_input_without_a_rule_that_carries_a_tangent_gives_none():
    # copysign's sign (x2) has no gradient: its tangent adds nothing, also after x1's
    x = np.array([1.0, -2.0, 0.5])
    f = lambda x: tg.copysign(x, x - 0.7)  # noqa: E731
    want = tg.jacrev(f)(x)
    np.testing.assert_allclose(tg.jvp(f, (x,), (np.ones(3),))[1], np.diag(want), rtol=1e-12)
    np.testing.assert_allclose(tg.jacfwd(f)(x), want, rtol=1e-12)
    np.testing.assert_allclose(tg.hessian(lambda x: (f(x) ** 2).sum())(x), 2 * np.eye(3), rtol=1e-12)


def test_bad_tangents_are_refused_naming_the_shapes():
    with pytest.raises(ValueError, match=r"jvp: tangents must have the structure and shapes of primals"):
        tg.jvp(tg.exp, (np.ones(3),), (np.ones(2),))
    with pytest.raises(TypeError, match="complex tangent for a real primal"):
        tg.jvp(tg.exp, (np.ones(2),), (np.ones(2) * 1j,))


def test_an_in_place_change_of_a_tensor_with_a_tangent_is_refused():
    def f(x):
        y = x * 2.0
        y *= 3.0
        return y

    with pytest.raises(RuntimeError, match="in-place \\*= on a tensor with a tangent"):
        tg.jvp(f, (np.ones(2),), (np.ones(2),))
    assert FORWARD.get() == () and TRACING.n == 0
