"""vmap (``tapegrad.batching``): every op in ``op_table.OPS`` as a property of its batching rule.

For every row, hypothesis draws one example's inputs as the other properties do, and a batch of three examples
from them (scaled by 1, 0.95 and 0.9, inside the row's domain); then, in float64:

- ``vmap(op)`` equals the op on each example, stacked, with every input batched and with the first alone;
- ``vmap(grad(...))`` (per-example gradients) equals each example's gradient, stacked;
- ``grad(sum(vmap(...)))`` (reverse mode through vmap) equals the gradient of the loop over examples, for batched
  and for shared (``in_axes=None``) inputs;
- an op without a batching rule raises naming it, and ``loop=True`` gives the same as a loop;
- nested vmaps, the first input batched by one and the others by the other (both ways round), equal the double
  loop: a rule broadcasts each input's own batch axes;
- a batch of no examples gives an empty batch of one example's shape and dtype.

The meta-test pins the ops that have no batching rule, so a new op gets one or is listed here knowingly.
"""

import functools
import gc
import weakref

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from op_table import OPS, shapes_and_kwargs

import tapegrad as tg
from tapegrad import linalg as la
from tapegrad import strategies as tgst
from tapegrad._state import BATCH, TRACING
from tapegrad.batching import derivation
from tapegrad.registry import defop

IDS = [case.name for case in OPS]
FEW = max(3, settings.default.max_examples // 5)
SCALES = (1.0, 0.95, 0.9)

# Ops without a batching rule (vmap raises naming them; vmap(..., loop=True) runs them once per example).
NO_RULE: set = set()


@st.composite
def _inputs(draw, case):
    shapes, kwargs = draw(shapes_and_kwargs(case))
    return draw(tgst.inputs(shapes, case.domain, np.float64)), kwargs


def _vmapped(f, axes, batch, run=None):
    """``vmap(f)(*batch)`` (or ``run(vmap)``); where an op without a batching rule raises, that op is checked to be
    one without a rule (a row's own op, or an op a composed row runs) and the loop fallback is taken."""
    run = run or (lambda vm: vm(f, in_axes=axes)(*batch))
    try:
        return run(tg.vmap)
    except NotImplementedError as err:
        name = str(err).split(": ")[1].split(" has no batching rule")[0]
        op = tg.REGISTRY.get(name) or tg.NONDIFF.get(name)
        assert "has no batching rule" in str(err) and op is not None and derivation(op) is None, str(err)
        assert BATCH.get() == () and TRACING.n == 0
        return run(functools.partial(tg.vmap, loop=True))


def _batch(arrays, first_only=False):
    return [np.stack([a * s for s in SCALES]) if (i == 0 or not first_only) else a for i, a in enumerate(arrays)]


def _each(case, kwargs, batch, first_only=False):
    outs = []
    for j in range(len(SCALES)):
        args = [b[j] if (i == 0 or not first_only) else b for i, b in enumerate(batch)]
        outs.append(np.asarray(case.fn(*[tg.Tensor(a) for a in args], **kwargs).numpy()))
    return np.stack(outs)


@pytest.mark.parametrize("case", OPS, ids=IDS)
@settings(max_examples=FEW)
@given(data=st.data())
def test_vmap_of_each_op_equals_a_loop_over_examples(case, data):
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    for first_only in (False, True):
        batch = _batch(arrays, first_only)
        axes = tuple(0 if (i == 0 or not first_only) else None for i in range(len(batch)))
        expected = _each(case, kwargs, batch, first_only)

        def f(*xs):
            return case.fn(*xs, **kwargs)

        got = _vmapped(f, axes, batch)
        assert got.shape == expected.shape, (got.shape, expected.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in OPS if tg.REGISTRY.get(c.name) is not None], ids=lambda c: c.name)
@settings(max_examples=max(2, FEW // 2))
@given(data=st.data())
def test_per_example_gradients_equal_each_examples_gradient(case, data):
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    free = [i for i in range(len(arrays)) if i not in case.constant_inputs]
    if not free or np.iscomplexobj(case.fn(*[tg.Tensor(a) for a in arrays], **kwargs).numpy()):
        return
    batch = _batch(arrays)
    w = np.random.default_rng(0).uniform(0.5, 1.5, np.shape(case.fn(*[tg.Tensor(a) for a in arrays], **kwargs)))

    def loss(*xs):
        return (case.fn(*xs, **kwargs) * w).sum()

    argnums = tuple(free)
    got = _vmapped(tg.grad(loss, argnums=argnums), 0, batch)
    for j in range(len(SCALES)):
        want = tg.grad(loss, argnums=argnums)(*[b[j] for b in batch])
        for g, e in zip(got, want):
            np.testing.assert_allclose(g[j], e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in OPS if tg.REGISTRY.get(c.name) is not None], ids=lambda c: c.name)
@settings(max_examples=max(2, FEW // 2))
@given(data=st.data(), first_only=st.booleans())
def test_gradient_through_vmap_equals_the_loops_gradient(case, data, first_only):
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    free = [i for i in range(len(arrays)) if i not in case.constant_inputs]
    if not free or np.iscomplexobj(case.fn(*[tg.Tensor(a) for a in arrays], **kwargs).numpy()):
        return
    batch = _batch(arrays, first_only)
    axes = tuple(0 if (i == 0 or not first_only) else None for i in range(len(batch)))
    shape = np.shape(case.fn(*[tg.Tensor(a) for a in arrays], **kwargs))
    w = np.random.default_rng(1).uniform(0.5, 1.5, (len(SCALES),) + shape)  # a different weight per example

    def f(*xs):
        return case.fn(*xs, **kwargs)

    def loop(*xs):
        return sum((f(*[x[j] if ax == 0 else x for x, ax in zip(xs, axes)]) * w[j]).sum() for j in range(len(SCALES)))

    argnums = tuple(free)
    got = _vmapped(
        f, axes, batch, lambda vm: tg.grad(lambda *xs: (vm(f, in_axes=axes)(*xs) * w).sum(), argnums)(*batch)
    )
    want = tg.grad(loop, argnums=argnums)(*batch)
    for g, e in zip(got, want):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_the_ops_without_a_batching_rule_are_the_listed_ones():
    missing = {name for name, op in tg.REGISTRY.items() if derivation(op) is None}
    assert missing == NO_RULE, f"new: {sorted(missing - NO_RULE)}; now with a rule: {sorted(NO_RULE - missing)}"


# -- composition ------------------------------------------------------------------------------------------
RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 3))
X, Y = RNG.standard_normal((6, 4)), RNG.standard_normal((6, 3))


def _loss(w, x, y):
    return ((tg.tanh(x @ w) - y) ** 2).sum()


def test_vmap_of_grad_gives_per_example_gradients():
    got = tg.vmap(tg.grad(_loss), in_axes=(None, 0, 0))(W, X, Y)
    want = np.stack([tg.grad(_loss)(W, x, y) for x, y in zip(X, Y)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_vmap_of_grad_of_a_layer_runs_one_batched_op_per_gradient():
    """A layer's per-example product (a vector times a matrix): under vmap its VJP is one op per input, a matrix
    product for the vector's gradient and an outer product for the matrix's, with no reshapes around them, and
    the gradients equal each example's (and central finite differences)."""
    from tapegrad.core import record

    ran = []
    step = record._BATCHING[0]

    def loss(w, x):
        return tg.tanh(x @ w).sum()

    record.set_batching_rules(lambda op, args, params: ran.append(op.name) or step(op, args, params))
    try:
        gw, gx = tg.vmap(tg.grad(loss, argnums=(0, 1)), in_axes=(None, 0))(W, X)
    finally:
        record.set_batching_rules(step)
    assert ran.count("matmul") == 2 and ran.count("einsum") == 1, ran  # the forward's product, and two VJPs
    assert not {"expand_dims", "squeeze", "reshape"} & set(ran), ran
    for j, x in enumerate(X):
        want_w, want_x = tg.grad(loss, argnums=(0, 1))(W, x)
        np.testing.assert_allclose(gw[j], want_w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gx[j], want_x, rtol=1e-12, atol=1e-14)
    assert tg.gradcheck(loss, W, X[0]) and tg.gradgradcheck(loss, W, X[0])  # the recorded VJP: second order


def test_nested_vmap_and_out_axes():
    A = RNG.standard_normal((2, 3, 3))
    B = RNG.standard_normal((2, 5, 3))
    got = tg.vmap(tg.vmap(lambda a, b: tg.tanh(a @ b), in_axes=(None, 0)), out_axes=1)(A, B)
    want = np.stack([[np.tanh(A[i] @ B[i, j]) for j in range(5)] for i in range(2)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_vmap_of_forward_mode_and_of_hvp():
    basis = np.eye(4 * 3).reshape(12, 4, 3)
    cols = tg.vmap(lambda t: tg.jvp(lambda w: _loss(w, X[0], Y[0]), (W,), (t,))[1])(basis)
    np.testing.assert_allclose(cols.reshape(4, 3), tg.grad(_loss)(W, X[0], Y[0]), rtol=1e-12)
    H = tg.hessian(lambda w: _loss(w, X[0], Y[0]))(W)
    hv = tg.vmap(lambda v: tg.hvp(lambda w: _loss(w, X[0], Y[0]), W, v))(basis)
    np.testing.assert_allclose(hv.reshape(12, 12), H.reshape(12, 12), rtol=1e-10, atol=1e-12)


def test_vmap_of_forward_mode_of_batched_primals_equals_the_loop():
    T = RNG.standard_normal(X.shape)
    for f in (lambda a: (a * a).sum(), lambda a: tg.sort(a) * np.arange(4.0), lambda a: tg.median(a) * a):
        got = tg.vmap(lambda x, t, f=f: tg.jvp(f, (x,), (t,)))(X, T)  # was f of the whole batch as one example
        want = [tg.jvp(f, (X[j],), (T[j],)) for j in range(len(X))]
        for i in range(2):
            np.testing.assert_allclose(got[i], np.stack([w[i] for w in want]), rtol=1e-12, atol=1e-14)

        def square(a, f=f):
            return (f(a) ** 2).sum()

        hv = tg.vmap(lambda x, t: tg.hvp(square, x, t))(X, T)
        each = np.stack([tg.hvp(square, X[j], T[j]) for j in range(len(X))])
        np.testing.assert_allclose(hv, each, rtol=1e-10, atol=1e-12)


def _batch_loss(w, x, y):
    return tg.vmap(_loss, in_axes=(None, 0, 0))(w, x, y).sum()


def test_grad_of_vmap_equals_the_loop_and_finite_differences():
    got = tg.grad(_batch_loss, argnums=(0, 1))(W, X, Y)
    want = tg.grad(lambda w, x, y: sum(_loss(w, x[i], y[i]) for i in range(len(X))), argnums=(0, 1))(W, X, Y)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    assert tg.gradcheck(lambda w, x: _batch_loss(w, x, Y), W, X)
    # in_axes other than 0, reused inputs (the same tensor batched and shared)
    got = tg.grad(lambda x: tg.vmap(lambda a, b: (tg.sin(a) * b).sum(), in_axes=(1, None))(x, x[:, 0]).sum())(X.T)
    want = tg.grad(lambda x: sum((tg.sin(x[:, i]) * x[:, 0]).sum() for i in range(len(X))))(X.T)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert BATCH.get() == () and TRACING.n == 0


def test_second_order_through_vmap_equals_the_loops():
    w_loss = lambda w: _batch_loss(w, X[:3], Y[:3])  # noqa: E731
    loop = lambda w: sum(_loss(w, X[i], Y[i]) for i in range(3))  # noqa: E731
    v = RNG.standard_normal(W.shape)
    rr = [tg.grad(lambda w, F=F: (tg.grad(F)(w) * v).sum())(W) for F in (w_loss, loop)]  # shared argument
    np.testing.assert_allclose(rr[0], rr[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.hessian(w_loss)(W), tg.hessian(loop)(W), rtol=1e-10, atol=1e-12)
    # forward over reverse through vmap (its rule's ops all batch: scatter's too)
    np.testing.assert_allclose(tg.hvp(w_loss, W, v), tg.hvp(loop, W, v), rtol=1e-10, atol=1e-12)
    x_loss = lambda x: tg.vmap(lambda a: (tg.sin(a) ** 3).sum())(x).sum()  # noqa: E731
    u = RNG.standard_normal(X.shape)
    assert tg.gradcheck(lambda x: (tg.grad(x_loss)(x) * u).sum(), X)  # batched argument, second order


def test_forward_mode_of_vmap_equals_the_loops():
    def each(w, x):
        return tg.stack([_loss(w, x[i], Y[i]) for i in range(len(X))])

    batched = lambda w, x: tg.vmap(_loss, in_axes=(None, 0, 0))(w, x, Y)  # noqa: E731
    tw, tx = RNG.standard_normal(W.shape), RNG.standard_normal(X.shape)
    got = tg.jvp(batched, (W, X), (tw, tx))
    want = tg.jvp(each, (W, X), (tw, tx))
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    _, lin = tg.linearize(lambda w: batched(w, X), W)
    np.testing.assert_allclose(lin(tw), want[1] - tg.jvp(lambda x: each(W, x), (X,), (tx,))[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.jacrev(lambda x: tg.vmap(tg.sin)(x))(X[:2]), tg.jacrev(tg.sin)(X[:2]), rtol=1e-12)


def test_backward_through_vmap_inside_record_frees_the_tape():
    w = tg.Tensor(W, requires_grad=True)
    x = tg.Tensor(X)
    with tg.record() as t:
        out = tg.vmap(lambda w, x: tg.tanh(x @ w), in_axes=(None, 0))(w, x)
        loss = (out**2).sum()
    ref = weakref.ref(out)
    assert out.shape == (6, 3)
    del out
    loss.backward()
    want = tg.grad(lambda w: (tg.tanh(X @ w) ** 2).sum())(W)
    np.testing.assert_allclose(w.grad, want, rtol=1e-12, atol=1e-14)
    gc.collect()
    assert ref() is None and t.saved_bytes() == 0


# A tensor of f's closure that the tape (or a tangent) outside differentiates (JAX's grad(lambda w: vmap(lambda x:
# loss(w, x))(X).sum())): each case against the same f with that tensor passed as a shared argument (in_axes=None),
# which vmap differentiated before closures were; then against finite differences, second order and jvp.
# Before, the tensor's gradient was lost (None, or only the arguments' part) where it reached f through an op
# without a batched input, and refused where it met one.
def _with_closure(case):
    return {
        "as is": lambda w: tg.vmap(lambda x: tg.tanh(x @ w).sum())(X).sum(),
        "through an op first": lambda w: tg.vmap(lambda x: (tg.tanh(x @ (w * 2.0)) ** 2).sum())(X).sum(),
        "and as the argument": lambda w: tg.vmap(lambda x: (tg.exp(x) @ tg.sin(w).T).sum())(X @ w).sum(),
        "two of them": lambda w: (lambda a, b: tg.vmap(lambda x: (x @ a + tg.cos(x @ b)).sum())(X).sum())(w, w**2),
        "several outputs": lambda w: sum(o.sum() for o in tg.vmap(lambda x: (x @ w, tg.max(x @ w)))(X)),
        "unbatched only": lambda w: tg.vmap(lambda x: x.sum() + tg.sin(w).sum())(X).sum(),
        "in nested vmaps": lambda w: tg.vmap(lambda y: tg.vmap(lambda x: tg.tanh(x @ w).sum())(X).sum())(Y).sum(),
        "a grad inside": lambda w: tg.vmap(lambda x: tg.grad(lambda v: tg.sin(v @ w).sum())(x).sum())(X).sum(),
    }[case]


def _with_argument(case):
    return {
        "as is": lambda w: tg.vmap(lambda x, w: tg.tanh(x @ w).sum(), in_axes=(0, None))(X, w).sum(),
        "through an op first": lambda w: tg.vmap(lambda x, w: (tg.tanh(x @ (w * 2.0)) ** 2).sum(), in_axes=(0, None))(
            X, w
        ).sum(),
        "and as the argument": lambda w: tg.vmap(lambda x, w: (tg.exp(x) @ tg.sin(w).T).sum(), in_axes=(0, None))(
            X @ w, w
        ).sum(),
        "two of them": lambda w: tg.vmap(lambda x, a, b: (x @ a + tg.cos(x @ b)).sum(), in_axes=(0, None, None))(
            X, w, w**2
        ).sum(),
        "several outputs": lambda w: sum(
            o.sum() for o in tg.vmap(lambda x, w: (x @ w, tg.max(x @ w)), in_axes=(0, None))(X, w)
        ),
        "unbatched only": lambda w: tg.vmap(lambda x, w: x.sum() + tg.sin(w).sum(), in_axes=(0, None))(X, w).sum(),
        "in nested vmaps": lambda w: len(Y) * tg.vmap(lambda x, w: tg.tanh(x @ w).sum(), in_axes=(0, None))(X, w).sum(),
        "a grad inside": lambda w: tg.vmap(
            lambda x, w: tg.grad(lambda v: tg.sin(v @ w).sum())(x).sum(), in_axes=(0, None)
        )(X, w).sum(),
    }[case]


CLOSURE_CASES = [
    "as is", "through an op first", "and as the argument", "two of them", "several outputs", "unbatched only",
    "in nested vmaps", "a grad inside",
]  # fmt: skip


@pytest.mark.parametrize("case", CLOSURE_CASES)
def test_a_tensor_of_fs_closure_that_the_tape_outside_records_gets_its_gradient(case):
    f, ref = _with_closure(case), _with_argument(case)
    w0 = W[:, 0] * 0.5 if case == "a grad inside" else W * 0.5
    np.testing.assert_allclose(tg.grad(f)(w0), tg.grad(ref)(w0), rtol=1e-10, atol=1e-12)
    assert tg.gradcheck(f, w0)
    np.testing.assert_allclose(tg.hessian(f)(w0), tg.hessian(ref)(w0), rtol=1e-9, atol=1e-11)
    v = np.cos(np.arange(w0.size)).reshape(w0.shape)  # forward mode: a tangent of the closure's tensor
    for got, want in zip(tg.jvp(f, (w0,), (v,)), tg.jvp(ref, (w0,), (v,))):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    w = tg.Tensor(w0, requires_grad=True)  # and inside record(), the weight a leaf: the same .grad
    with tg.record():
        loss = f(w)
    loss.backward()
    np.testing.assert_allclose(w.grad, tg.grad(ref)(w0), rtol=1e-10, atol=1e-12)
    assert BATCH.get() == () and TRACING.n == 0


def test_the_call_that_takes_a_closures_tensor_frees_it_after_backward():
    w = tg.Tensor(W, requires_grad=True)
    with tg.record() as t:
        out = tg.vmap(lambda x: tg.tanh(x @ (w * 2.0)))(X)
        loss = (out**2).sum()
    ref = weakref.ref(out)
    del out
    loss.backward()
    np.testing.assert_allclose(w.grad, tg.grad(lambda w: (tg.tanh(X @ (w * 2.0)) ** 2).sum())(W), rtol=1e-12)
    gc.collect()
    assert ref() is None and t.saved_bytes() == 0


def test_what_reverse_mode_through_vmap_cannot_do_is_refused_naming_it():
    with pytest.raises(NotImplementedError, match="with outputs of several dtypes \\(float64, int64\\)"):
        tg.grad(lambda x: tg.vmap(lambda v: (v, tg.argmax(v, axis=0)))(x)[0].sum())(X)
    assert BATCH.get() == () and TRACING.n == 0
    # after an error the user goes on
    np.testing.assert_allclose(tg.grad(_batch_loss)(W, X, Y), tg.grad(_batch_loss)(W, X, Y), rtol=1e-12)


def test_a_closure_tensor_batched_by_an_outer_vmap_is_refused_in_an_inner_vmap_under_a_tape():
    # g's inner vmap closes over g's argument: the loop over examples is refused, and so is every vmap of it, never
    # its gradient without the inner vmap's part (which the inner vmap's unbatched output would drop)
    bm = RNG.standard_normal((4, 5))

    def g(a):
        return tg.vmap(lambda b: (tg.sin(a) * b).sum(), in_axes=1)(bm).sum() + a.sum()

    # without the outer vmap, the closure's tensor is the inner call's input
    np.testing.assert_allclose(tg.grad(g)(X[0]), np.cos(X[0]) * bm.sum(1) + 1, rtol=1e-12)
    for run in (
        lambda: tg.vmap(tg.grad(g))(X),
        lambda: tg.grad(lambda xs: tg.vmap(g)(xs).sum())(X),
        lambda: tg.jvp(lambda xs: tg.vmap(g)(xs), (X,), (np.ones_like(X),)),
    ):
        with pytest.raises(NotImplementedError, match="f uses a tensor from its closure"):
            run()
        assert BATCH.get() == () and TRACING.n == 0
    # passed as an argument it is differentiated, per example
    per = tg.vmap(tg.grad(lambda a: tg.vmap(lambda b, a: (tg.sin(a) * b).sum(), in_axes=(1, None))(bm, a).sum()))(X)
    np.testing.assert_allclose(per, np.cos(X) * bm.sum(1), rtol=1e-12)


def test_an_axis_out_of_range_is_refused_not_wrapped():
    x = np.ones((3, 4))
    for kwargs, shape in (({"in_axes": 2}, "(3, 4)"), ({"in_axes": -3}, "(3, 4)"), ({"out_axes": 2}, "(4,)")):
        with pytest.raises(ValueError, match=f"{next(iter(kwargs))}={next(iter(kwargs.values()))} is out of range "
                           f"for shape \\{shape[:-1]}\\)"):  # fmt: skip
            tg.vmap(lambda r: r * 2.0, **kwargs)(x)
    with pytest.raises(ValueError, match="out_axes=1 is out of range for shape \\(\\)"):
        tg.vmap(lambda r: r.sum(), out_axes=1)(x)
    with pytest.raises(ValueError, match="out_axes=1 is out of range for shape \\(\\)"):  # through a tape too
        tg.grad(lambda x: tg.vmap(lambda r: (r.sum(), r * 2.0), out_axes=1)(x)[1].sum())(x)
    assert BATCH.get() == () and TRACING.n == 0
    assert tg.vmap(lambda r: r * 2.0, in_axes=-2, out_axes=-1)(x).shape == (4, 3)  # in range, negative
    g = tg.grad(lambda x: (tg.vmap(lambda r: tg.outer(r, r), out_axes=2)(x) * np.arange(48.0).reshape(4, 4, 3)).sum())
    want = tg.grad(
        lambda x: sum((tg.outer(x[i], x[i]) * np.arange(48.0).reshape(4, 4, 3)[..., i]).sum() for i in range(3))
    )
    np.testing.assert_allclose(g(x * 0.5), want(x * 0.5), rtol=1e-12)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: tg.einsum("ij,j->i", np.ones((2, 3)), x),
        lambda x: tg.outer(x, x),
        lambda x: tg.reshape(x, (-1, 1)),
        lambda x: tg.dot(x, x),
        lambda x: tg.cumsum(x, axis=None),
    ],
    ids=["einsum", "outer", "reshape", "dot", "cumsum"],
)
def test_a_batch_of_no_examples_gives_empty_results(fn):
    want = np.asarray(fn(tg.Tensor(np.ones(3))).numpy())
    got = tg.vmap(fn)(np.zeros((0, 3)))
    assert got.shape == (0,) + want.shape and got.dtype == want.dtype


def test_vmap_of_jvp_through_a_transposed_rule_of_broadcasting_inputs_equals_the_loop():
    x, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    ws = RNG.standard_normal((2, 4))

    def f(w):
        return tg.jvp(lambda w: tg.standardize(x, w, b), (w,), (np.ones(4),))[1]

    np.testing.assert_allclose(tg.vmap(f)(ws), np.stack([f(w) for w in ws]), rtol=1e-12)


@pytest.mark.parametrize("case", OPS, ids=IDS)
@settings(max_examples=1)
@given(data=st.data())
def test_vmap_of_each_op_over_a_batch_of_no_examples_gives_one_examples_shape_after_the_empty_batch(case, data):
    # a batch of 0 stays 0 through every rule: no max(1, size), no -1 for NumPy to infer from an empty array,
    # no groups of zero examples, and no per-matrix loop that needs one matrix to know its dtype
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    want = np.asarray(case.fn(*[tg.Tensor(a) for a in arrays], **kwargs).numpy())
    got = _vmapped(lambda *a: case.fn(*a, **kwargs), 0, [np.zeros((0,) + a.shape, a.dtype) for a in arrays])
    got = np.asarray(got.numpy() if isinstance(got, tg.Tensor) else got)
    assert got.shape == (0,) + want.shape and got.dtype == want.dtype


@pytest.mark.parametrize("batch", [(0, 4), (3, 0)], ids=["no examples", "no positions"])
def test_index_update_at_each_examples_own_positions_over_an_empty_batch(batch):
    positions = np.zeros(batch, dtype=np.int64)
    got = tg.vmap(lambda x, i: tg.index_update(x, i, 1.0), in_axes=(None, 0))(np.arange(5.0), positions)
    assert np.asarray(got.numpy() if isinstance(got, tg.Tensor) else got).shape == (batch[0], 5)


# -- ops with several outputs (Op.outputs): each output batched, one entry for them all ---------------------
SYM = RNG.standard_normal((4, 3, 3))
SYM = SYM + np.swapaxes(SYM, -1, -2) + np.arange(3.0) * 3 * np.eye(3)  # eigenvalues well apart
RECT = RNG.standard_normal((4, 3, 2))
SKEW = np.eye(3) + np.triu(RNG.standard_normal((3, 3)), 1)
SEVERAL_CALLS = [
    ("eigh", la.eigh, SYM),
    ("eig", la.eig, SYM),
    ("svd", lambda a: la.svd(a, full_matrices=False), RECT),
    ("svd", la.svd, RECT),
    ("qr", la.qr, RECT),
    ("qr", lambda a: la.qr(a, mode="complete"), RECT),
    ("lu", la.lu, SYM),
    ("slogdet", la.slogdet, SYM),
]


@pytest.mark.parametrize(("name", "fn", "a"), SEVERAL_CALLS, ids=[c[0] for c in SEVERAL_CALLS])
def test_vmap_of_an_op_with_several_outputs_batches_each_output(name, fn, a):
    assert tg.REGISTRY[name].outputs and derivation(tg.REGISTRY[name]) is not None
    want = [fn(tg.Tensor(x)) for x in a]
    for in_axis, out_axis in ((0, 0), (2, -1)):
        got = tg.vmap(fn, in_axes=in_axis, out_axes=out_axis)(np.moveaxis(a, 0, in_axis))
        assert type(got) is type(want[0]) and len(got) == len(want[0])  # NumPy's result class, output by output
        for j, g in enumerate(got):
            np.testing.assert_allclose(np.moveaxis(g, out_axis, 0), np.stack([w[j].numpy() for w in want]), atol=1e-12)
    nested = tg.vmap(tg.vmap(fn))(np.stack([a, 0.5 * a]))
    for j, g in enumerate(nested):
        np.testing.assert_allclose(g[1], np.stack([fn(tg.Tensor(0.5 * x))[j].numpy() for x in a]), atol=1e-12)
    assert BATCH.get() == () and TRACING.n == 0


def _spectral(a):
    """A loss reading every output of several ops, none of it depending on a basis's arbitrary signs."""
    w, v = la.eigh(a)
    u, s, vh = la.svd(a @ SKEW, full_matrices=False)
    q, r = la.qr(a)
    p, lo, up = la.lu(a)
    sign, logdet = la.slogdet(a)
    return (
        (tg.sin(w) * (v**2)).sum()
        + ((u * s) @ vh * a).sum()
        + s.sum()
        + ((q @ r) ** 2).sum()
        + (tg.sin(r) * r).sum()
        + (p @ lo @ up * a).sum()
        + (tg.tanh(lo) * up).sum()
        + sign * logdet
    )


def test_gradients_through_ops_with_several_outputs_under_vmap_equal_the_loops():
    per_example = tg.vmap(tg.grad(_spectral))(SYM)
    want = np.stack([tg.grad(_spectral)(x) for x in SYM])
    np.testing.assert_allclose(per_example, want, rtol=1e-10, atol=1e-12)
    wts = RNG.uniform(0.5, 1.5, len(SYM))
    through = tg.grad(lambda x: (tg.vmap(_spectral)(x) * wts).sum())(SYM)
    np.testing.assert_allclose(through, want * wts[:, None, None], rtol=1e-10, atol=1e-12)
    assert tg.gradcheck(lambda x: (tg.vmap(_spectral)(x) * wts).sum(), SYM)
    # one output alone (the others' cotangents None), with a shared matrix beside the batched one
    one = tg.vmap(tg.grad(lambda a, b: (la.eigh(a + b).eigenvalues ** 3).sum()), in_axes=(0, None))(SYM, SYM[0])
    want = np.stack([tg.grad(lambda a: (la.eigvalsh(a + SYM[0]) ** 3).sum())(x) for x in SYM])
    np.testing.assert_allclose(one, want, rtol=1e-10, atol=1e-12)
    # second order: per-example Hessians (reverse over reverse) of a loss through eigh
    hessian = tg.jacrev(tg.grad(lambda a: (la.eigh(a)[0] ** 3).sum()))
    hs = tg.vmap(hessian)(SYM[:2])
    want = np.stack([hessian(x) for x in SYM[:2]])
    np.testing.assert_allclose(hs, want, rtol=1e-9, atol=1e-10)
    assert BATCH.get() == () and TRACING.n == 0


def test_forward_mode_through_ops_with_several_outputs_and_vmap_equals_the_loops():
    t = RNG.standard_normal(SYM.shape)
    want = np.stack([tg.jvp(_spectral, (x,), (d,))[1] for x, d in zip(SYM, t)])
    inside = tg.vmap(lambda x, d: tg.jvp(_spectral, (x,), (d,))[1])(SYM, t)  # a batched primal and tangent
    np.testing.assert_allclose(inside, want, rtol=1e-10, atol=1e-12)
    outside = tg.jvp(tg.vmap(_spectral), (SYM,), (t,))[1]
    np.testing.assert_allclose(outside, want, rtol=1e-10, atol=1e-12)


def test_gradient_through_a_vmapped_function_with_several_outputs_equals_the_loops():
    def f(x):
        return tg.sin(x), {"norm": (x**2).sum(), "outer": tg.reshape(x, (3, 1)) * x}

    def loop(x, out_axes=0):
        outs = [f(x[i]) for i in range(len(x))]
        stack = lambda vs: tg.moveaxis(tg.stack(vs), 0, out_axes)  # noqa: E731
        return stack([o[0] for o in outs]), {k: stack([o[1][k] for o in outs]) for k in ("norm", "outer")}

    def loss(outs):
        a, d = outs
        wts = np.arange(d["outer"].size).reshape(d["outer"].shape)
        return (a * tg.cos(a)).sum() + (d["norm"] ** 3).sum() + (tg.tanh(d["outer"]) * wts).sum()

    x = RNG.standard_normal((4, 3))
    for out_axes in (0, -1):
        got = tg.grad(lambda x, ax=out_axes: loss(tg.vmap(f, out_axes=ax)(x)))(x)
        want = tg.grad(lambda x, ax=out_axes: loss(loop(x, ax)))(x)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    assert tg.gradcheck(lambda x: loss(tg.vmap(f)(x)), x)
    compiled = tg.compile(tg.grad(lambda x: loss(tg.vmap(f)(x))))
    for scale in (1.0, 0.5, 2.0):
        np.testing.assert_allclose(compiled(x * scale), tg.grad(lambda x: loss(loop(x)))(x * scale), rtol=1e-12)
    got = tg.grad(lambda a: (tg.vmap(la.eigh)(a).eigenvalues ** 2).sum())(SYM)  # an op's several outputs as f's
    np.testing.assert_allclose(got, tg.grad(lambda a: (la.eigvalsh(a) ** 2).sum())(SYM), rtol=1e-10, atol=1e-12)
    assert BATCH.get() == () and TRACING.n == 0


def test_an_op_with_several_outputs_and_no_rule_is_refused_or_looped():
    halves = defop("halves_demo", lambda x: (x[..., :1] * 2.0, x[..., 1:] - 1.0),
                   lambda xp, g, ans, x: None, register=False, outputs=("head", "tail"))  # fmt: skip
    with pytest.raises(NotImplementedError, match="halves_demo has no batching rule"):
        tg.vmap(halves)(X)
    assert BATCH.get() == () and TRACING.n == 0
    head, tail = tg.vmap(halves, loop=True)(X)
    np.testing.assert_array_equal(head, X[:, :1] * 2.0)
    np.testing.assert_array_equal(tail, X[:, 1:] - 1.0)


def test_a_batched_value_stays_batched_where_f_detaches_it_or_takes_its_tangent():
    np.testing.assert_allclose(tg.vmap(lambda x: x.detach().sum())(X), X.sum(1))
    np.testing.assert_allclose(tg.vmap(lambda x: tg.stop_gradient(x) * x.sum())(X), X * X.sum(1, keepdims=True))
    t = RNG.standard_normal(X.shape)
    got = tg.vmap(lambda x, d: tg.jvp(lambda y: tg.sin(y).sum(), (x,), (d,))[1])(X, t)
    np.testing.assert_allclose(got, (np.cos(X) * t).sum(1), rtol=1e-12)


def test_jacfwd_of_vmap_equals_jacrev_and_the_loop():
    np.testing.assert_allclose(tg.jacfwd(lambda x: tg.vmap(tg.sin)(x))(X[:2]), tg.jacrev(tg.sin)(X[:2]), rtol=1e-12)
    batched = lambda w, x: tg.vmap(_loss, in_axes=(None, 0, 0))(w, x, Y)  # noqa: E731
    loop = lambda w, x: tg.stack([_loss(w, x[i], Y[i]) for i in range(len(X))])  # noqa: E731
    for got, want in zip(tg.jacfwd(batched, argnums=(0, 1))(W, X), tg.jacrev(loop, argnums=(0, 1))(W, X)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # shared arguments, in_axes and out_axes other than 0, and an op with several outputs inside
    g = lambda w, z: tg.vmap(lambda a, b: tg.tanh(a @ b), in_axes=(None, 1), out_axes=1)(w, z)  # noqa: E731
    for got, want in zip(tg.jacfwd(g, argnums=(0, 1))(W.T, X.T), tg.jacrev(g, argnums=(0, 1))(W.T, X.T)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    values = lambda a: tg.vmap(lambda m: la.eigh(m).eigenvalues ** 2)(a)  # noqa: E731
    want = tg.jacrev(lambda a: tg.stack([la.eigvalsh(a[i]) ** 2 for i in range(2)]))(SYM[:2])
    np.testing.assert_allclose(tg.jacfwd(values)(SYM[:2]), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.jacobian(values, mode="fwd")(SYM[:2]), want, rtol=1e-10, atol=1e-12)
    # a batch of such Jacobians: the vmapped call batched by one more level
    f = lambda x: tg.vmap(lambda a: tg.sin(a) * a.sum())(x)  # noqa: E731
    xs = RNG.standard_normal((3, 2, 4))
    np.testing.assert_allclose(tg.vmap(tg.jacfwd(f))(xs), np.stack([tg.jacrev(f)(x) for x in xs]), rtol=1e-12)
    assert BATCH.get() == () and TRACING.n == 0


def test_transforms_of_jacfwd_differentiate_through_its_columns():
    f = lambda x: tg.sin(x) * x.sum()  # noqa: E731
    x = X[:2]
    np.testing.assert_allclose(tg.jacfwd(tg.jacfwd(f))(x), tg.jacrev(tg.jacrev(f))(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tg.jvp(tg.jacfwd(f), (x,), (x,))[1], tg.jvp(tg.jacrev(f), (x,), (x,))[1], rtol=1e-12)
    rows = lambda x: tg.stack([tg.sin(x[i]) * x[i].sum() for i in range(len(x))])  # noqa: E731
    batched = lambda x: tg.vmap(lambda a: tg.sin(a) * a.sum())(x)  # noqa: E731
    for g, ref in ((f, f), (batched, rows)):
        want = tg.grad(lambda x, ref=ref: (tg.jacrev(ref)(x) ** 2).sum())(x)
        got = tg.grad(lambda x, g=g: (tg.jacfwd(g)(x) ** 2).sum())(x)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    assert BATCH.get() == () and TRACING.n == 0


def test_compile_never_keeps_a_value_of_the_first_call():
    xs, ws = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((3, 4, 2))
    shared = tg.compile(lambda x, w: tg.vmap(lambda a, b: a @ b, in_axes=(0, None))(x, w))
    closure = tg.compile(lambda x, w: tg.vmap(lambda a: a @ w)(x))
    jac = tg.compile(tg.jacfwd(lambda x: tg.sin(x) * x.sum()))
    for x, w in zip(xs, ws):  # the third call runs the program alone
        np.testing.assert_allclose(shared(x, w), x @ w, rtol=1e-12)
        np.testing.assert_allclose(jac(x), tg.jacrev(lambda x: tg.sin(x) * x.sum())(x), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="matmul: f uses a value from its closure that tg.compile traces"):
        closure(xs[0], ws[0])
    assert BATCH.get() == () and TRACING.n == 0


def test_compile_of_vmap_and_of_its_gradients_equals_eager():
    f = tg.vmap(lambda x: tg.tanh(x @ W))
    per_example = tg.vmap(tg.grad(_loss), in_axes=(None, 0, 0))
    through = tg.grad(_batch_loss)
    for fn, args in ((f, (X,)), (per_example, (W, X, Y)), (through, (W, X, Y))):
        c = tg.compile(fn)
        for scale in (1.0, 0.5):  # the second call runs the program alone
            a = [np.asarray(x) * scale for x in args]
            np.testing.assert_allclose(c(*a), fn(*a), rtol=1e-12, atol=1e-14)
    assert BATCH.get() == () and TRACING.n == 0


def test_bad_batches_are_refused_and_values_are_not_readable():
    with pytest.raises(ValueError, match="every batched argument needs the same batch size"):
        tg.vmap(lambda a, b: a + b)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(TypeError, match="reads the value of a batched tensor"):
        tg.vmap(lambda a: float(a.sum()))(np.ones((3, 2)))
    with pytest.raises(ValueError, match="in_axes has 1 entries for 2 arguments"):
        tg.vmap(lambda a, b: a + b, in_axes=(0,))(np.ones(3), np.ones(3))
    assert tg.vmap(lambda a: a.shape[0] * a)(np.ones((3, 2))).tolist() == [[2.0, 2.0]] * 3  # one example's shape

    def in_place(a):
        a *= 2.0
        return a

    with pytest.raises(RuntimeError, match="in-place \\*= on a batched tensor"):
        tg.vmap(in_place)(np.ones((3, 2)))
    assert BATCH.get() == () and TRACING.n == 0


# -- indices computed inside f, and networks --------------------------------------------------------------
def test_a_batched_index_gathers_each_examples_own():
    x = RNG.standard_normal((4, 3, 5))
    idx = RNG.integers(-5, 5, (4, 3, 2))
    want = np.stack([np.take_along_axis(x[j], idx[j], axis=1) for j in range(4)])
    np.testing.assert_allclose(tg.vmap(lambda a, i: tg.take_along_axis(a, i, axis=1))(x, idx), want, rtol=0)
    shared = tg.vmap(lambda i: tg.take_along_axis(x[0], i, axis=-1))(idx)  # the input shared, the indices not
    np.testing.assert_allclose(shared, np.stack([np.take_along_axis(x[0], i, axis=-1) for i in idx]), rtol=0)
    back = tg.vmap(lambda g, i: tg.scatter_along_axis(g, i, 1, (3, 5)))(want, idx)
    for j in range(4):
        np.testing.assert_allclose(back[j], tg.scatter_along_axis(want[j], idx[j], 1, (3, 5)).numpy(), rtol=1e-12)
    # nested: the indices vary along the outer level only, the input along both
    scaled = np.stack([x, 2 * x], axis=1)  # (4, 2, 3, 5): example j at two scales
    nest = tg.vmap(lambda a, i: tg.vmap(lambda b: tg.take_along_axis(b, i, axis=1))(a))(scaled, idx)
    np.testing.assert_allclose(nest[:, 1], 2 * want, rtol=0)


def test_order_statistics_and_average_give_per_example_gradients_through_their_computed_indices():
    x = RNG.permutation(24).reshape(4, 6) / 7.0  # distinct values: no tie
    w = RNG.standard_normal(6)

    def loss(a):
        order = (tg.sort(a) * w).sum() + tg.median(a) * 3.0 + tg.quantile(a, 0.3) + tg.percentile(a, [40, 90]).sum()
        return order + tg.partition(a, 2)[2] * 2.0 + tg.average(a, weights=a * a + 1.0)

    got = tg.vmap(tg.grad(loss))(x)
    want = np.stack([tg.grad(loss)(x[j]) for j in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    through = tg.grad(lambda a: (tg.vmap(loss)(a) * np.arange(1.0, 5.0)).sum())(x)
    np.testing.assert_allclose(through, want * np.arange(1.0, 5.0)[:, None], rtol=1e-12, atol=1e-15)
    assert tg.gradcheck(lambda a: tg.vmap(loss)(a).sum(), x)


def test_a_batched_integer_index_picks_each_examples_own():
    x, idx = RNG.standard_normal((3, 5, 4)), RNG.integers(-4, 4, (3, 2, 2))
    for f in (lambda a, i: a[i], lambda a, i: a[:, i], lambda a, i: a[1:, i, None], lambda a, i: a[..., i]):
        want = np.stack([f(x[j], idx[j]) for j in range(3)])  # NumPy's indexing, one example at a time
        np.testing.assert_allclose(tg.vmap(f)(x, idx), want, rtol=0)
    # an embedding table shared by the examples, each with its own tokens: per-example gradients
    table, tokens = RNG.standard_normal((7, 4)), RNG.integers(0, 7, (3, 5))

    def loss(e, t):
        return (tg.tanh(e[t]) ** 2).sum()

    got = tg.vmap(tg.grad(loss), in_axes=(None, 0))(table, tokens)
    want = np.stack([tg.grad(loss)(table, t) for t in tokens])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    through = tg.grad(lambda e: tg.vmap(loss, in_axes=(None, 0))(e, tokens).sum())(table)
    np.testing.assert_allclose(through, want.sum(axis=0), rtol=1e-12, atol=1e-15)
    # nested: the indices vary along the outer level, the input along both
    f = lambda a, i: (a[:, i] ** 2).sum()  # noqa: E731
    scaled = np.stack([x, 2 * x], axis=1)
    got = tg.vmap(lambda a, i: tg.vmap(tg.grad(f), in_axes=(0, None))(a, i))(scaled, idx)
    want = [[tg.grad(f)(scaled[j, s], idx[j]) for s in range(2)] for j in range(3)]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-12)
    # two batched arrays in one index, one varying along both levels, the other along the inner one
    rows, cols = RNG.integers(0, 5, (2, 3, 2)), RNG.integers(0, 4, (3, 2))
    g = lambda a, i, j: (a[i, j] ** 2).sum()  # noqa: E731
    got = tg.vmap(lambda a, i: tg.vmap(tg.grad(g))(a, i, cols))(scaled.transpose(1, 0, 2, 3)[:, :3], rows)
    want = [[tg.grad(g)(scaled[b, a], rows[a, b], cols[b]) for b in range(3)] for a in range(2)]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-12)


def test_an_index_whose_rule_takes_no_batch_is_refused_naming_it():
    x, shift = RNG.standard_normal((3, 5)), np.array([1, 2, 3])
    roll = tg.ops.arrange._roll  # the op itself, its shift a parameter that f computed
    with pytest.raises(NotImplementedError, match="roll's parameter shift varies along the batch"):
        tg.vmap(lambda a, s: roll(a, shift=s))(x, shift)
    with pytest.raises(NotImplementedError, match="roll's parameter shift varies along the batch"):
        tg.vmap(lambda a, s: roll(a, shift=s), loop=True)(x, shift)  # a loop would get the batch's
    with pytest.raises(NotImplementedError, match="getitem with a boolean mask beside a batched index"):
        tg.vmap(lambda a, m: a[m])(x, x > 0)  # each example would select a different count
    assert BATCH.get() == () and TRACING.n == 0


def _cnn(params, image, onehot):
    w1, w2 = params
    h = tg.relu(tg.conv2d(image, w1, padding=1))  # (4, 6, 6): one example, no N axis
    h = tg.max_pool2d(h, 2)
    h = tg.avg_pool2d(tg.conv2d(h, tg.Tensor(np.full((2, 4, 1, 1), 0.5))), 1)  # a 1x1 conv, then identity
    logits = tg.reshape(tg.adaptive_avg_pool2d(h, 1), (2,)) @ w2
    return -(tg.log_softmax(logits) * onehot).sum()


def test_vmap_of_grad_of_a_small_cnn_equals_the_per_example_loop():
    rng = np.random.default_rng(5)
    params = (rng.standard_normal((4, 1, 3, 3)), rng.standard_normal((2, 3)))
    images, labels = rng.standard_normal((5, 1, 6, 6)), np.eye(3)[rng.integers(0, 3, 5)]

    def loss(w1, w2, image, label):
        return _cnn((w1, w2), image, label)

    got = tg.vmap(tg.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))(*params, images, labels)
    for j in range(5):
        want = tg.grad(loss, argnums=(0, 1))(*params, images[j], labels[j])
        for g, e in zip(got, want):
            np.testing.assert_allclose(g[j], e, rtol=1e-10, atol=1e-13)
    # the weights batched too (one network per example): conv's weights folded into its groups
    ws = np.stack([params[0] * s for s in np.linspace(0.5, 1.5, 5)])
    per_net = tg.vmap(lambda w1, image, label: loss(w1, params[1], image, label))(ws, images, labels)
    np.testing.assert_allclose(per_net, [loss(ws[j], params[1], images[j], labels[j]).numpy() for j in range(5)])


@pytest.mark.parametrize("fn", [tg.argmax, tg.argmin], ids=["argmax", "argmin"])
@pytest.mark.parametrize("kwargs", [{}, {"keepdims": True}, {"axis": 1}, {"axis": -1, "keepdims": True}])
def test_argmax_and_argmin_batch_as_the_loop_axis_none_indexing_each_flattened_example(fn, kwargs):
    x = np.random.default_rng(5).standard_normal((3, 2, 4))
    got = np.asarray(tg.vmap(lambda v: fn(v, **kwargs))(x))
    want = np.stack([np.asarray(fn(tg.Tensor(e), **kwargs)) for e in x])
    assert got.shape == want.shape and np.array_equal(got, want)


def test_index_add_with_a_batched_index_accumulates_repeats_per_example():
    # index_add, unlike index_update, adds every write to a repeated position: under vmap as without it
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal((4, 6)), rng.standard_normal((4, 3))
    idx = np.array([[0, 0, 2], [5, 5, 5], [1, 3, 1], [4, 2, 0]])

    def loss(v, x, i):
        return (tg.index_add(x, i, v) ** 2).sum()

    got = tg.vmap(lambda x, i, v: tg.index_add(x, i, v))(x, idx, v)
    want = np.stack([tg.index_add(tg.Tensor(x[k]), idx[k], v[k]).numpy() for k in range(4)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    numbers = tg.vmap(lambda x, i: tg.index_add(x, i, 2.0))(x, idx)
    np.testing.assert_allclose(
        np.asarray(numbers), np.stack([tg.index_add(tg.Tensor(x[k]), idx[k], 2.0).numpy() for k in range(4)])
    )
    grads = tg.vmap(tg.grad(loss))(v, x, idx)
    np.testing.assert_allclose(np.asarray(grads), np.stack([tg.grad(loss)(v[k], x[k], idx[k]) for k in range(4)]))


def test_index_update_with_a_batched_index_is_each_examples_own_update():
    # each example writes at its own positions, repeats included: the last write wins and alone gets the gradient
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 3))
    idx = np.array([[0, 2, 0], [1, 3, 3], [3, 3, 3], [0, 1, 2], [2, 2, 1]])
    w = np.arange(12.0).reshape(3, 4)

    def f(x, i, v):
        return tg.index_update(x, (1, i), v)

    def loss(x, i, v):
        return ((f(x, i, v) ** 2) * w).sum()

    got = tg.vmap(f)(x, idx, v)
    grads = tg.vmap(tg.grad(loss, argnums=(0, 2)))(x, idx, v)
    shared = tg.vmap(lambda i: tg.index_update(x[0], (1, i), 7.0))(idx)
    for b in range(5):
        np.testing.assert_array_equal(got[b], f(tg.Tensor(x[b]), idx[b], tg.Tensor(v[b])).numpy())
        np.testing.assert_array_equal(shared[b], tg.index_update(tg.Tensor(x[0]), (1, idx[b]), 7.0).numpy())
        want = tg.grad(loss, argnums=(0, 2))(x[b], idx[b], v[b])
        np.testing.assert_allclose(grads[0][b], want[0], rtol=1e-12)
        np.testing.assert_allclose(grads[1][b], want[1], rtol=1e-12)
    tangent = tg.vmap(lambda x, i, v: tg.jvp(lambda x, v: f(x, i, v), (x, v), (x, v))[1])(x, idx, v)
    np.testing.assert_allclose(tangent, got, rtol=1e-12)  # linear in (x, v): its own tangent


@pytest.mark.parametrize(
    "case",
    [c for c in OPS if 0 not in c.constant_inputs and set(range(1, c.arity or 0)) - set(c.constant_inputs)],
    ids=lambda c: c.name,
)
@settings(max_examples=2)
@given(data=st.data())
def test_nested_vmap_with_inputs_batched_at_different_levels_equals_the_double_loop(case, data):
    # The first input batched by one vmap, the others by the other: a batch rule gets each input with size-1 axes
    # for the level it does not vary on, and must broadcast each input's own batch axes, never read one input's as
    # another's (nn.Linear's rule once reshaped the bias to the input's axes: wrong values, silently)
    arrays, kwargs = data.draw(_inputs(case), label="arrays, kwargs")
    assume(len(arrays) >= 2)  # a variadic op's draw may give it one input
    others = [i for i in range(1, len(arrays)) if i not in case.constant_inputs]  # batched by the other vmap
    b_first = np.stack([arrays[0] * s for s in (1.0, 0.9)])
    b_others = [np.stack([arrays[i] * s for s in (1.0, 0.95, 0.9)]) for i in others]

    def f(a0, *batched):  # the op with the batched inputs in their places, the constants in theirs
        xs = [a0, *arrays[1:]]
        for i, b in zip(others, batched):
            xs[i] = b
        return case.fn(*xs, **kwargs)

    def each(j0, j1):
        return np.asarray(f(*map(tg.Tensor, (b_first[j0], *[b[j1] for b in b_others]))).numpy())

    def first_outside(vm):
        return vm(lambda a0: vm(lambda *bs: f(a0, *bs))(*b_others))(b_first)

    def first_inside(vm):
        return vm(lambda *bs: vm(lambda a0: f(a0, *bs))(b_first))(*b_others)

    for run, expected in (
        (first_outside, np.stack([np.stack([each(i, j) for j in range(3)]) for i in range(2)])),
        (first_inside, np.stack([np.stack([each(i, j) for i in range(2)]) for j in range(3)])),
    ):
        got = _vmapped(f, None, (b_first, *b_others), run=run)
        assert got.shape == expected.shape, (run.__name__, got.shape, expected.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("in_axes", "out_axes", "message"),
    [
        (({"a": 0, "b": None},), 0, r"in_axes=.*each entry is an int .* or None"),
        ((0.5,), 0, r"in_axes=.*not float"),
        (True, 0, r"in_axes=True.*not bool"),
        (0, (1, 0), r"out_axes=\(1, 0\): an int"),
        (0, None, r"out_axes=None: an int"),
    ],
)
def test_axes_vmap_does_not_take_are_refused_by_name_when_it_is_made(in_axes, out_axes, message):
    # JAX's pytree prefixes and out_axes=None: a bare TypeError from int() before, at the call
    with pytest.raises(TypeError, match="^vmap: " + message):
        tg.vmap(lambda x: x, in_axes=in_axes, out_axes=out_axes)


def test_jacfwd_of_an_empty_float32_input_keeps_float32():
    x = np.ones((0,), np.float32)
    a, b = tg.jacfwd(tg.sin)(x), tg.jacrev(tg.sin)(x)
    assert a.shape == b.shape == (0, 0) and a.dtype == b.dtype == np.float32


def test_second_order_through_a_vmapped_call_linear_in_its_shared_argument_is_zero():
    # each example's VJP is then constant in the argument: no tape records it, and its derivative is 0
    f = lambda w: tg.vmap(lambda x, a: (a * x).sum(), in_axes=(0, None))(X, w * 2.0).sum()  # noqa: E731
    np.testing.assert_array_equal(tg.hessian(f)(W[:, 0]), np.zeros((4, 4)))
    np.testing.assert_array_equal(tg.jacrev(tg.jacrev(f))(W[:, 0]), np.zeros((4, 4)))
