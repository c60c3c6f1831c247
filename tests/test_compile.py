"""tg.compile: compiled programs give the eager results, trace exactly when the signature changes, refuse what
they cannot replay (naming the line), draw fresh random numbers, nest with the transforms, keep nothing of
the trace, and run on every backend."""

from __future__ import annotations

import gc
import threading
import warnings
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from programs import programs

import tapegrad as tg
from tapegrad import nn, optim

RNG = np.random.default_rng(0)


def linear_loss(params, X, y):
    return ((X @ params["W"] + params["b"] - y) ** 2).mean()


def linear_data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    params = {"W": rng.standard_normal((3, 1)), "b": rng.standard_normal(1)}
    return params, rng.standard_normal((n, 3)), rng.standard_normal((n, 1))


def assert_same(a, b):
    """The same pytree of arrays, bit for bit (shapes, dtypes and values)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_array_equal(a, b)


# -- results ---------------------------------------------------------------------------------------------------
def test_value_and_grad_compiled_equals_eager_bit_for_bit():
    step = tg.compile(tg.value_and_grad(linear_loss))
    eager = tg.value_and_grad(linear_loss)
    for seed in range(3):  # the trace, the checked first run, a plain run
        params, X, y = linear_data(seed=seed)
        assert_same(step(params, X, y), eager(params, X, y))
    assert step.cache_info().misses == 1 and step.cache_info().hits == 2


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(programs())
def test_random_programs_compiled_equal_eager(program):
    n = len(program.inputs)

    def loss(*xs):
        out = program(*xs)
        return (out * np.linspace(0.5, 1.5, out.size).reshape(out.shape)).sum()

    vg = tg.value_and_grad(loss, argnums=tuple(range(n)))
    step = tg.compile(vg, check=False, fuse=False)  # NumPy's calls, to the bit (fused kernels: test_fusion.py)
    assert_same(step(*program.inputs), vg(*program.inputs))
    others = [np.cos(a) + 0.1 * a for a in program.inputs]  # new values, same signature: the program runs
    assert_same(step(*others), vg(*others))
    assert step.trace_count == 1


def test_a_new_signature_traces_again_and_only_then():
    step = tg.compile(tg.value_and_grad(linear_loss))
    params, X, y = linear_data()
    counts = []
    for args in [
        (params, X, y),
        (params, X + 1.0, y),  # new values: no trace
        (params, X[:8], y[:8]),  # a new shape
        (params, X[:8] * 2, y[:8]),  # the same again: no trace
        ({k: v.astype(np.float32) for k, v in params.items()}, X.astype(np.float32), y.astype(np.float32)),  # dtype
        ({"W": params["W"], "b": params["b"], "c": 0.0}, X, y),  # structure
        (params, X, y),  # the first signature is still cached
    ]:
        step(*args)
        counts.append(step.trace_count)
    assert counts == [1, 1, 2, 2, 3, 4, 4]
    assert step.cache_info().currsize == 4


def test_static_python_numbers_are_part_of_the_signature():
    f = tg.compile(lambda x, k: x * k)
    x = np.ones(2)
    assert_same(f(x, 2.0), np.full(2, 2.0))
    assert_same(f(x, 3.0), np.full(2, 3.0))  # a new static value: traced again, never a stale constant
    assert_same(f(x, 2.0), np.full(2, 2.0))
    assert f.trace_count == 2


def test_the_cache_is_bounded():
    f = tg.compile(lambda x: x + 1, maxsize=2)
    for n in (1, 2, 3, 1):
        f(np.ones(n))
    assert f.cache_info().currsize == 2 and f.trace_count == 4  # shape (1,) was evicted by (3,)


# -- what a program cannot replay --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body, what",
    [
        (lambda x: x * 2 if x.sum() > 0 else x, "bool(t)"),
        (lambda x: x * float(x.sum()), "float(t)"),
        (lambda x: x * x.sum().item(), "t.item()"),
        (lambda x: x[int(x[0])], "int(t)"),
        (lambda x: x * x.data, "t.data"),
        (lambda x: x * np.asarray(x), "np.asarray(t)"),
        (lambda x: x * x.numpy(), "t.numpy()"),
        (lambda x: x[x > 0], "boolean mask"),
    ],
)
def test_python_reading_a_traced_value_is_an_error_naming_the_line(body, what):
    with pytest.raises(tg.TracingError, match="test_compile.py:") as err:
        tg.compile(body)(np.ones(3))
    assert what in str(err.value)


def test_changing_an_argument_in_place_is_refused_and_leaves_it_alone():
    def inplace(x):
        x += 1.0
        return x

    x = np.ones(3)
    with pytest.raises(tg.TracingError, match="in-place"):
        tg.compile(inplace)(x)
    assert_same(x, np.ones(3))


def test_backward_inside_a_compiled_function_is_refused():
    def eager_style(x):
        w = tg.Tensor(np.ones(3), requires_grad=True)
        with tg.record():
            loss = (w * x).sum()
        loss.backward()  # the line the error names
        return w.grad

    with pytest.raises(tg.TracingError, match=r"tg.value_and_grad") as err:
        tg.compile(eager_style)(np.ones(3))
    assert "test_compile.py:" in str(err.value) and "loss.backward()  # the line the error names" in str(err.value)


def test_backward_of_values_computed_from_the_arguments_is_a_tracing_error_naming_the_line():
    # The arguments are traced values, not leaves that require a gradient: the generic "no tape recorded ...
    # requires_grad=True" message would send the user to the wrong fix.
    def step(w, x):
        loss = ((x @ w) ** 2).sum()
        loss.backward()  # the line the error names
        return loss

    with pytest.raises(tg.TracingError, match=r"tg.grad or tg.value_and_grad") as err:
        tg.compile(step)(np.ones(2), np.ones((3, 2)))
    message = str(err.value)
    assert "backward() inside a function traced by tg.compile" in message and "requires_grad" not in message
    assert "test_compile.py:" in message and "loss.backward()  # the line the error names" in message
    # what it points to works; uncompiled, the same backward() is the ordinary error
    value, grad = tg.compile(tg.value_and_grad(lambda w, x: ((x @ w) ** 2).sum()))(np.ones(2), np.ones((3, 2)))
    np.testing.assert_allclose(grad, 2 * np.ones((3, 2)).T @ (np.ones((3, 2)) @ np.ones(2)))
    with pytest.raises(tg.TapeError, match="no tape recorded"):
        step(tg.Tensor(np.ones(2)), tg.Tensor(np.ones((3, 2))))


def test_a_value_frozen_at_trace_time_is_caught_by_the_first_run():
    def sneaky(x):
        frozen = tg.Tensor(np.where(x._data > 0, 1.0, -1.0))  # NumPy on the traced array: fixed at trace time
        return x * frozen

    f = tg.compile(sneaky)
    f(np.ones(3))
    with pytest.raises(tg.TracingError, match="compiled and eager results differ"):
        f(-np.ones(3))


def test_arrays_read_from_outside_are_constants_of_the_program():
    table = np.array([1.0, 2.0])
    f = tg.compile(lambda x: x * table, check=False)
    assert_same(f(np.ones(2)), table)
    table = np.array([5.0, 5.0])  # rebinding the name: the program holds the array it read
    assert_same(f(np.ones(2)), np.array([1.0, 2.0]))


@pytest.mark.parametrize(
    "how, first_call_under_the_tape",
    [("leaf", True), ("leaf", False), ("watched", True), ("watched", False), ("recorded", True)],
    ids=["leaf traced under it", "leaf traced before", "watched traced under it", "watched traced before", "recorded"],
)
def test_a_tensor_read_from_outside_that_the_tape_differentiates_gets_its_gradient(how, first_call_under_the_tape):
    # a model's weight in a compiled function's closure, called in a record() block: the program would read it as a
    # constant (and its gradient be lost with no error), so the call runs as Python, as with a differentiated
    # argument; outside a tape the program runs
    x = np.array([3.0, 4.0])
    w = tg.Tensor([1.0, -2.0], requires_grad=(how == "leaf"))
    held = {"w": w}
    f = tg.compile(lambda x: (tg.sin(x * held["w"])).sum())
    if not first_call_under_the_tape:
        assert_same(f(x), np.sin(x * w.numpy()).sum())
    with tg.record() as t:
        if how == "watched":
            t.watch(w)
        if how == "recorded":
            base = tg.Tensor([0.5, -1.0], requires_grad=True)
            held["w"] = base * 2.0
        loss = f(x) + (held["w"] * held["w"]).sum()
    grads = t.gradient(loss, [w if how != "recorded" else base])
    want = x * np.cos(x * held["w"].numpy()) + 2 * held["w"].numpy()
    np.testing.assert_allclose(grads[0], want * (2.0 if how == "recorded" else 1.0), rtol=1e-12)
    assert f.cache_info().misses >= 1


def test_a_constant_result_is_a_fresh_copy_each_call():
    f = tg.compile(tg.grad(lambda x, y: (x * 2).sum(), argnums=(0, 1)))  # y takes no part: its gradient is zeros
    first = f(np.ones(2), np.ones(2))[1]
    first += 7.0
    assert_same(f(np.ones(2), np.ones(2))[1], np.zeros(2))


# -- draws ---------------------------------------------------------------------------------------------------------
def test_draws_are_fresh_on_every_call_and_follow_the_generator():
    g = np.random.default_rng(1)
    f = tg.compile(lambda x: x * (tg.random.random(g, x.shape) > 0.5))
    got = [f(np.ones(16)) for _ in range(4)]
    g2 = np.random.default_rng(1)
    expected = [(g2.random(16) > 0.5).astype(float) for _ in range(4)]
    for a, b in zip(got, expected):
        assert_same(a, b)
    assert not all(np.array_equal(got[0], m) for m in got[1:])


def test_dropout_in_a_compiled_step_draws_a_new_mask_each_call():
    drop = nn.Dropout(0.5, rng=0)
    f = tg.compile(lambda x: drop(x))
    masks = [f(np.ones(64)) for _ in range(3)]
    assert len({m.tobytes() for m in masks}) == 3


@pytest.mark.parametrize("make", [tg.rand, tg.randn], ids=["rand", "randn"])
def test_the_constructors_draw_anew_in_a_compiled_function_from_a_generator_and_repeat_a_seed(make):
    eager_rng, compiled_rng = np.random.default_rng(3), np.random.default_rng(3)
    f = tg.compile(lambda x: x * make(8, rng=compiled_rng))
    got = [f(np.ones(8)) for _ in range(3)]
    for a in got:  # the same numbers as eager draws from the same generator, call after call
        assert_same(a, make(8, rng=eager_rng).numpy())
    seeded = tg.compile(lambda x: x * make(8, rng=7))
    assert all(np.array_equal(seeded(np.ones(8)), make(8, rng=7).numpy()) for _ in range(3))
    unseeded = tg.compile(lambda x: x * make(8))  # the process's generator
    assert len({unseeded(np.ones(8)).tobytes() for _ in range(3)}) == 3


# -- transforms, modules, optimizers ------------------------------------------------------------------------------
def f_scalar(x):
    return (tg.sin(x) * x**2).sum() + tg.exp(x[0] * x[1])


def finite_difference_hessian(f, x, h=1e-5):
    grad = tg.grad(f)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((grad(x + e) - grad(x - e)) / (2 * h))
    return np.stack(cols, axis=1)


def test_a_hessian_through_a_compiled_gradient_matches_finite_differences():
    x = np.array([0.3, -0.7, 1.1])
    expected = finite_difference_hessian(f_scalar, x)
    through = tg.jacobian(tg.compile(tg.grad(f_scalar)))(x)  # the compiled gradient runs as Python under jacobian
    compiled = tg.compile(tg.hessian(f_scalar))  # the whole Hessian compiled
    np.testing.assert_allclose(through, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-6, atol=1e-8)
    x2 = x[::-1] * 0.5
    np.testing.assert_allclose(compiled(x2), finite_difference_hessian(f_scalar, x2), rtol=1e-6, atol=1e-8)
    assert compiled.trace_count == 1


def test_a_compiled_function_inside_another_is_part_of_its_program():
    inner = tg.compile(lambda x: tg.tanh(x) * 2.0)
    outer = tg.compile(tg.grad(lambda x: inner(x).sum()))
    x = np.array([0.1, 0.2])
    assert_same(outer(x), tg.grad(lambda x: (tg.tanh(x) * 2.0).sum())(x))
    assert inner.trace_count == 0  # inlined into the outer trace


def mlp(seed=0):
    r = np.random.default_rng(seed)
    return nn.Sequential(
        nn.Linear(8, 16, rng=r), nn.ReLU(), nn.Dropout(0.2, rng=r.spawn(1)[0]), nn.Linear(16, 3, rng=r)
    )


@pytest.mark.parametrize(
    "make, traces",
    [
        (lambda ps: optim.Adam(ps, lr=1e-2), 1),
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), 2),  # the momentum buffer is None before the first step
    ],
)
def test_a_compiled_training_step_follows_eager_training_bit_for_bit(make, traces):
    X, Y = RNG.standard_normal((40, 8)), RNG.integers(0, 3, 40)
    eager_model = mlp()
    eager_opt = make(eager_model.parameters())
    model = mlp()
    opt = make(model.parameters())

    def train_step(params, state, x, y):
        loss, grads = tg.value_and_grad(lambda p: nn.cross_entropy(nn.functional_call(model, p, x), y))(params)
        params, state = opt.functional_update(params, grads, state)
        return loss, params, state

    step = tg.compile(train_step, donate_argnums=(0, 1))
    params, state = nn.parameter_arrays(model), opt.functional_state()
    for i in range(0, 40, 10):
        eager_opt.zero_grad()
        with tg.record():
            loss = nn.cross_entropy(eager_model(tg.Tensor(X[i : i + 10])), Y[i : i + 10])
        loss.backward()
        eager_opt.step()
        compiled_loss, params, state = step(params, state, X[i : i + 10], Y[i : i + 10])
        assert_same(compiled_loss, loss.data)
    for (name, p), q in zip(model.named_parameters(), eager_model.parameters()):
        assert params[name] is p.data  # donated: the model's own arrays hold the new weights
        assert_same(p.data, q.data)
    assert step.trace_count == traces


def sgd_step(p, X, y, lr=0.1):
    grads = tg.grad(lambda p: linear_loss({"W": p[0], "b": p[1]}, X, y))(p)
    return [q - lr * g for q, g in zip(p, grads)]


def test_donated_arrays_are_written_in_place_and_bump_their_version():
    step = tg.compile(sgd_step, donate_argnums=0)
    params, X, y = linear_data()
    p = [params["W"].copy(), params["b"].copy()]
    expected = [params["W"], params["b"]]
    w = tg.Tensor(np.ones(3), requires_grad=True)
    with tg.record():
        saved = (w * tg.Tensor(p[0]).reshape(3)).sum()  # a tape that saved p[0]
    for _ in range(3):
        new = step(p, X, y)
        expected = sgd_step(expected, X, y)
        assert new[0] is p[0] and new[1] is p[1]
    np.testing.assert_allclose(p[0], expected[0], rtol=1e-12)
    with pytest.raises(tg.InPlaceModificationError):
        saved.backward()


def test_donate_argnums_beyond_the_functions_arguments_is_refused_naming_the_count():
    one = lambda x: x * 2.0  # noqa: E731
    with pytest.raises(ValueError, match=r"donate_argnums 3 is out of range for <lambda>, which takes 1 positional"):
        tg.compile(one, donate_argnums=(3,))  # the signature says it: refused at compile, as jax.jit does
    with pytest.raises(ValueError, match="donate_argnums -2 is out of range"):
        tg.compile(one, donate_argnums=-2)
    with pytest.raises(ValueError, match=r"donate_argnums=\(0, -1\) names argument 0 twice"):
        tg.compile(one, donate_argnums=(0, -1))
    for bad in (("a",), True, 1.0, [0, None]):
        with pytest.raises(TypeError, match="donate_argnums must be an int or a tuple of ints"):
            tg.compile(one, donate_argnums=bad)

    def many(*xs):
        return xs[-1] + xs[0]

    step = tg.compile(many, donate_argnums=(2,))  # *args: only a call says how many
    with pytest.raises(ValueError, match=r"donate_argnums 2 is out of range for many, which takes 2 positional"):
        step(np.ones(2), np.ones(2))
    c = np.ones(2)
    assert step(np.ones(2), np.ones(2), c) is c  # in range for three: the third is donated


def test_a_negative_donate_argnum_counts_from_the_end_as_in_jax():
    step = tg.compile(lambda x, y: y + 2.0 * x, donate_argnums=-1)
    x, y = np.ones(3), np.ones(3)
    assert step(x, y) is y  # before, -1 never matched an argument's position and nothing was donated
    np.testing.assert_array_equal(y, np.full(3, 3.0))
    np.testing.assert_array_equal(x, np.ones(3))


def test_argnums_naming_an_argument_twice_is_refused_rather_than_giving_it_a_zero_gradient():
    f = lambda x, y: (x * y).sum()  # noqa: E731
    for transform in (tg.grad, tg.value_and_grad, tg.jacobian):
        with pytest.raises(ValueError, match=r"argnums=\(0, 0\) names argument 0 twice"):
            transform(f, argnums=(0, 0))(np.ones(2), np.ones(2))
        with pytest.raises(ValueError, match=r"argnums=\(1, -1\) names argument 1 twice"):
            transform(f, argnums=(1, -1))(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple of ints, got True"):
        tg.grad(f, argnums=True)
    gx, gy = tg.grad(f, argnums=(np.int64(0), -1))(np.ones(2), np.full(2, 3.0))  # NumPy ints are indices
    np.testing.assert_array_equal(gx, np.full(2, 3.0))
    np.testing.assert_array_equal(gy, np.ones(2))


# -- what a program keeps ------------------------------------------------------------------------------------------
def test_nothing_of_the_trace_stays_alive_after_a_call():
    probes = []

    def loss(w, x):
        h = tg.tanh(x @ w)
        probes.append(weakref.ref(h._data))
        return (h * h).mean()

    def recording():  # a tape an earlier test left pending in this context is not this call's
        return {id(t.ref()) for t in tg.debug.live_tapes() if t.state == "recording"}

    before = recording()
    step = tg.compile(tg.value_and_grad(loss))
    w, x = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4))
    step(w, x)
    gc.collect()
    assert probes and all(r() is None for r in probes)
    assert not recording() - before
    program = step.programs[0]
    assert program.kept_bytes == program.arena_bytes + program.const_bytes
    assert 0 < program.arena_bytes <= sum(n.out.nbytes for n in program.graph.steps) + 64 * len(program.plan.buffers)


def test_a_call_allocates_little_beyond_its_results():
    import tracemalloc

    step = tg.compile(tg.value_and_grad(linear_loss))
    params, X, y = linear_data(n=4096)
    step(params, X, y), step(params, X, y)
    tracemalloc.start()
    step(params, X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the intermediates (n x 1 arrays, 32 KiB each) live in the arena; the call allocates the small results
    assert peak < 16 * 1024


def test_explain_and_source_show_ops_shapes_and_lines():
    step = tg.compile(tg.value_and_grad(linear_loss))
    step(*linear_data())
    src = step.source
    assert "matmul" in src and "float64[16, 1]" in src and "test_compile.py" in src and "(grad of" in src
    assert "arena" in step.explain()


def test_threads_calling_one_program_get_their_own_results():
    f = tg.compile(lambda x: tg.tanh(x) * x.sum())
    xs = [RNG.standard_normal(1000) for _ in range(8)]
    f(xs[0]), f(xs[0])
    out = [None] * len(xs)

    def work(i):
        for _ in range(20):
            out[i] = f(xs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, o in zip(xs, out):
        assert_same(o, np.tanh(x) * x.sum())


# -- backends ---------------------------------------------------------------------------------------------------------
def test_compiled_on_every_backend(backend):
    def loss(w, x):
        return tg.sum(tg.tanh(tg.matmul(x, w)) ** 2)

    def eager(w, x):
        w, x = tg.Tensor(w, requires_grad=True), tg.Tensor(x)
        with tg.record() as t:
            value = loss(w, x)
        return value.data, t.gradient(value, w)

    w = backend.asarray(np.array([0.5, -1.0, 2.0]))
    x = backend.asarray(np.array([[1.0, 2.0, 3.0], [0.5, 0.1, -0.2]]))
    step = tg.compile(tg.value_and_grad(loss), fuse=False)  # NumPy's calls: eager's, to the bit (fused: test_fusion)
    for scale in (1.0, 0.5, -2.0):
        value, grad = step(w * scale, x)
        ev, eg = eager(w * scale, x)
        assert backend.is_native(grad) and backend.is_native(value)
        np.testing.assert_array_equal(backend.to_numpy(grad), backend.to_numpy(eg))
        np.testing.assert_array_equal(backend.to_numpy(value), backend.to_numpy(ev))
    assert step.trace_count == 1


def test_a_scatter_added_to_itself_is_not_accumulated_into_itself():
    """Found by the fused random programs: ``s + s`` of one slice's gradient (two reads of one value by one
    step, which counts as one use) was rewritten into ``s[index] += g`` with ``s`` itself dropped."""

    def f(x):
        y, z = x + x, x + x  # one value after common subexpressions
        return ((tg.tanh(tg.squeeze(z[..., ::-1])) + y) * 1.5).sum()

    vg = tg.value_and_grad(f)
    step = tg.compile(vg, check=False, fuse=False)
    x = np.zeros((1, 1, 1))
    for _ in range(2):
        assert_same(step(x), vg(x))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128, np.int32])
@pytest.mark.parametrize(
    ("shape", "axis", "keepdims"), [((6, 5), None, False), ((4, 3, 5), (0, 2), True), ((3, 0), 1, False)]
)
def test_a_compiled_mean_is_numpys_to_the_bit_in_every_dtype(dtype, shape, axis, keepdims):
    """The program's mean is the sum and one division, as NumPy's (a float32 sum divided in float64), without its
    Python layers; float16, integers and empty slices keep NumPy's own mean."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 1e3).astype(dtype)
    f = tg.compile(lambda x: tg.mean(x, axis=axis, keepdims=keepdims), fuse=False)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of an empty slice
        f(x)
        got = f(x + 1)  # the program, checked against eager
        expected = np.mean(x + 1, axis=axis, keepdims=keepdims)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
