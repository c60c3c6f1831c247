"""Every registered op at fixed inputs; rows come from ``op_table.OPS``, one test per row and example.

- ``test_values_gradients_and_facts`` (NumPy): in float64 and in float32, one forward (the value against
  NumPy's reference, its shape and dtype) and one backward (each gradient's shape and dtype, none for an input
  the op declares without a rule); float32's gradients against float64's; and the facts the op declares
  (``tapegrad.registry.Op``): an op that is not a view returns memory of its own, an elementwise op commutes
  with reordering its elements.
- ``test_finite_differences`` (NumPy, float64): the gradient and the second derivative against central
  finite differences.
- ``test_backend_agrees_with_numpy`` (each other array backend, ``other_backend`` in tests/backends.py): the same forward and
  backward on that library's arrays, every result in that library, values and gradients against NumPy's
  (float64 and float32), and a second derivative (the gradient of ``<w, grad <v, f>>``) against NumPy's; an op
  the library lacks raises ``NotImplementedError`` naming it. The rules are the same functions on every
  backend, so finite differences run once, on NumPy. Dask builds a graph per op: by default it skips the
  second derivative (``TAPEGRAD_BACKENDS=dask`` runs it too).
"""

import numpy as np
import pytest
from backends import subset
from op_table import OPS, draw_values, op_of

import tapegrad as tg
from tapegrad import tape

CASES = [(case, shapes, kwargs) for case in OPS for shapes, kwargs in case.examples]
IDS = [f"{case.name}-{'x'.join(map(str, shapes))}-{kwargs}" for case, shapes, kwargs in CASES]
DTYPES = (np.float64, np.float32)


def test_every_registered_op_has_a_row():
    missing = set(tg.REGISTRY) - {case.name for case in OPS}
    assert not missing, f"ops without a row in tests/op_table.py: {sorted(missing)}"


def _inputs(case, shapes, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [draw_values(rng, s, case.domain, dtype) for s in shapes]


def _run(case, arrays, kwargs, asarray=np.asarray, cotangent_seed=1):
    """One forward and one backward: (output, gradients, input tensors), every input asking for a gradient."""
    xs = [tg.Tensor(asarray(a), requires_grad=True) for a in arrays]
    with tape.record():
        out = case.fn(*xs, **kwargs)
    ct = np.random.default_rng(cotangent_seed).standard_normal(out.shape).astype(_numpy_dtype(out.dtype))
    out.backward(asarray(ct))
    return out, [x.grad for x in xs], xs


def _numpy_dtype(dtype):
    return np.dtype(str(dtype).rsplit(".", 1)[-1])  # array_api_strict.float64 -> float64


def _check_gradients(case, grads, xs, native=lambda g: isinstance(g, np.ndarray), dtype=None):
    for i, (g, x) in enumerate(zip(grads, xs)):
        if i in case.constant_inputs:
            assert g is None, f"input {i} has no rule, yet got a gradient"
        else:
            assert g is not None and g.shape == x.shape and g.dtype == (x.dtype if dtype is None else dtype)
            assert native(g), f"input {i}'s gradient left its library: {type(g).__name__}"


def _second_order(case, arrays, kwargs, asarray=np.asarray, to_numpy=np.asarray):
    """d/dx <w, grad_x <v, f(x)>>, the gradient of the gradient (a recorded replay of every rule), in NumPy."""
    rng = np.random.default_rng(2)
    xs = [tg.Tensor(asarray(a), requires_grad=True) for a in arrays]
    with tape.record() as outer:
        with tape.record() as inner:
            out = case.fn(*xs, **kwargs)
            s = (out * asarray(rng.standard_normal(out.shape).astype(_numpy_dtype(out.dtype)))).sum()
        grads = [g if isinstance(g, tg.Tensor) else tg.Tensor(g) for g in inner.gradient(s, xs, unconnected="zero")]
        total = sum((g * asarray(rng.standard_normal(g.shape).astype(_numpy_dtype(g.dtype)))).sum() for g in grads)
    if not total.requires_grad:  # a linear op: its gradient does not depend on its inputs
        outer.release()
        return [None] * len(xs)
    total.backward()
    return [None if x.grad is None else to_numpy(x.grad) for x in xs]


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
def test_values_gradients_and_facts(case, shapes, kwargs):
    grads = {}
    for dtype in DTYPES:
        arrays = _inputs(case, shapes, dtype)
        out, grads[dtype], xs = _run(case, arrays, kwargs)
        expected = case.ref(*arrays, **kwargs)
        assert out.shape == np.shape(expected) and out.dtype == dtype
        assert isinstance(out.data, np.ndarray)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out.data, expected, rtol=tol, atol=1e-6)
        _check_gradients(case, grads[dtype], xs)
    for g64, g32 in zip(grads[np.float64], grads[np.float32]):
        if g64 is not None:
            np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-4)
    op = op_of(case)
    if op is not None:
        _check_facts(case, op, _inputs(case, shapes), kwargs)


def _check_facts(case, op, arrays, kwargs):
    """What the op's row declares (tapegrad.registry.Op), on each call the row makes of the op's forward: the
    output of an op that is not a ``view`` shares no memory with its inputs (the compiler's memory plan writes
    over such outputs, and over dying inputs); an ``elementwise`` op's output is reordered as its inputs are."""
    calls, forward = [], op.forward

    def spy(*args, **params):
        out = forward(*args, **params)
        calls.append((args, params, out))
        return out

    op.forward = spy
    try:
        case.fn(*[tg.Tensor(a) for a in arrays], **kwargs)
    finally:
        op.forward = forward
    for args, params, out in calls:
        inputs = [a for a in args if isinstance(a, np.ndarray)]
        if op.outputs:  # several outputs: a tuple of as many arrays as the row names
            assert isinstance(out, tuple) and len(out) == len(op.outputs), f"{op.name}: declares {op.outputs}"
        if not op.view:
            for o in out if op.outputs else (out,):
                assert not any(np.shares_memory(o, a) for a in inputs), f"{op.name} returned a view: declare view=True"
        if op.elementwise and inputs and np.broadcast_shapes(*[np.shape(a) for a in args]) == np.shape(out):
            order = np.random.default_rng(3).permutation(np.size(out))
            moved = [_reorder(a, np.shape(out), order) if isinstance(a, np.ndarray) else a for a in args]
            np.testing.assert_allclose(forward(*moved, **params), _reorder(out, np.shape(out), order), rtol=1e-14)


def _reorder(a, shape, order):
    return np.broadcast_to(a, shape).reshape(-1)[order].reshape(shape)


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
def test_finite_differences(case, shapes, kwargs):
    arrays = _inputs(case, shapes)
    assert tg.gradcheck(lambda *xs: case.fn(*xs, **kwargs), *arrays)
    assert tg.gradgradcheck(lambda *xs: case.fn(*xs, **kwargs), *arrays)


def _unsupported(case, shapes, kwargs, backend):
    """True (after checking the op says so) when ``backend`` lacks a function the op needs. Dask refuses some
    ops only for some parameters (pad's reflecting modes): there an example that computes is checked as usual."""
    if backend.name not in case.unsupported:
        return False
    xs = [tg.Tensor(backend.asarray(a)) for a in _inputs(case, shapes)]
    if backend.name == "dask":  # some examples of a function composed of ops may compute: then they are checked
        try:
            case.fn(*xs, **kwargs)
        except NotImplementedError as err:
            assert "the dask backend" in str(err), err
            return True
        return False
    # A function composed of ops (median of sort) names the op the library cannot run
    with pytest.raises(NotImplementedError, match=case.name):
        case.fn(*xs, **kwargs)
    return True


@pytest.mark.parametrize("case,shapes,kwargs", CASES, ids=IDS)
def test_backend_agrees_with_numpy(case, shapes, kwargs, other_backend):
    backend = other_backend
    if _unsupported(case, shapes, kwargs, backend):
        return
    ran = {}
    dtypes = DTYPES[:1] if subset(backend.name) else DTYPES  # the subset: float64 (dtypes follow NumPy's rules)
    for dtype in dtypes:
        out, grads, xs = ran[dtype] = _run(case, _inputs(case, shapes, dtype), kwargs, backend.asarray)
        assert backend.is_native(out.data) and out.dtype == backend.dtype(dtype)
        _check_gradients(case, grads, xs, backend.is_native, backend.dtype(dtype))
    # every result of both dtypes brought back at once (Dask computes their graphs together)
    arrays = [a for out, grads, _ in ran.values() for a in (out.data, *grads) if a is not None]
    got = iter(backend.to_numpy_all(arrays))
    for dtype in dtypes:
        expected, expected_grads, _ = _run(case, _inputs(case, shapes, dtype), kwargs)
        tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
        for want in (expected.data, *[g for g in expected_grads if g is not None]):
            np.testing.assert_allclose(next(got), want, **tol)
    if subset(backend.name):
        return
    arrays = _inputs(case, shapes)
    got = _second_order(case, arrays, kwargs, backend.asarray, backend.to_numpy)
    for g, want in zip(got, _second_order(case, arrays, kwargs)):
        assert (g is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-11)


def test_reused_input_accumulates_across_paths(backend):
    a = np.array([1.0, 2.0])
    x = tg.Tensor(backend.asarray(a), requires_grad=True)
    with tape.record():
        y = (x * x + x.exp() * x).sum()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), 2 * a + np.exp(a) * (1 + a))


def test_stable_reductions_at_large_inputs(backend):
    big = tg.Tensor(backend.asarray(np.array([1000.0, 1000.0, -1000.0])), requires_grad=True)
    with tape.record():
        out = tg.logsumexp(big) + tg.softmax(big)[0] + tg.log_softmax(big)[2] + tg.sigmoid(big).sum()
    out.backward()
    assert np.isfinite(out.item()) and np.all(np.isfinite(backend.to_numpy(big.grad)))
    np.testing.assert_allclose(tg.logsumexp(big).item(), 1000 + np.log(2))


def test_tied_maxima_share_the_gradient(backend):
    x = tg.Tensor(backend.asarray(np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 2.0]])), requires_grad=True)
    with tape.record():
        y = x.max(axis=1).sum() + tg.maximum(x, 2.0).sum()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), [[1.5, 0, 1.5], [0, 1.0, 1.0]])


def test_repeated_integer_indices_accumulate(backend):
    x = tg.Tensor(backend.asarray(np.array([1.0, 2.0, 3.0])), requires_grad=True)
    mask = x > 1.5
    if backend.name == "dask":  # a lazy mask selects a number of elements Dask knows only once computed
        with pytest.raises(NotImplementedError, match="getitem: the dask backend needs an index known"):
            x[mask]
        mask = backend.to_numpy(mask.data)
    with tape.record():
        y = x[np.array([0, 0, 2, 0])].sum() + x[mask].sum()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), [3.0, 1.0, 2.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda x: 2 * x,
        lambda x: np.ones(3) + x,
        lambda x: np.ones(3) - x,
        lambda x: 1.0 / x,
        lambda x: 2.0**x,
        lambda x: np.eye(3) @ x,
        lambda x: x ** tg.Tensor(2.0),
    ],
    ids=["scalar*", "array+", "array-", "scalar/", "scalar**", "array@", "**tensor"],
)
def test_reflected_operators_return_tensors(make):
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tape.record():
        y = make(x)
    assert isinstance(y, tg.Tensor) and y.requires_grad
    y.backward(np.ones(y.shape))
    assert x.grad.shape == (3,)


def test_mixed_dtypes_follow_numpy_promotion_and_grads_keep_input_dtype():
    a = tg.Tensor(np.ones(3, np.float32), requires_grad=True)
    b = tg.Tensor(np.ones(3, np.float64), requires_grad=True)
    with tape.record():
        y = a * b
    assert y.dtype == np.float64
    y.backward(np.ones(3))
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    assert (tg.Tensor(np.ones(2, np.float32)) * 2.0).dtype == np.float32


def test_comparisons_and_argmax_carry_no_gradient():
    x = tg.Tensor([1.0, 3.0, 2.0], requires_grad=True)
    with tape.record() as t:
        outs = [x < 2, x <= 2, x > 2, x >= 2, x == 2, x != 2, x.argmax(), x.argmin(), tg.sign(x)]
    assert len(t) == 0
    assert all(not o.requires_grad for o in outs)
    assert x.argmax().item() == 1 and x.argmin().item() == 0
    np.testing.assert_array_equal((x > 1.5).numpy(), [False, True, True])


def test_methods_and_functions_agree():
    a = np.random.default_rng(1).uniform(0.5, 2, (2, 3))
    x = tg.Tensor(a)
    pairs = [
        (x.exp(), tg.exp(x)),
        (x.log(), tg.log(x)),
        (x.sum(axis=1), tg.sum(x, axis=1)),
        (x.T, tg.transpose(x)),
        (x.reshape(3, 2), tg.reshape(x, (3, 2))),
        (x.max(0), tg.max(x, 0)),
        (x.softmax(0), tg.softmax(x, 0)),
        (x.var(ddof=1), tg.var(x, ddof=1)),
    ]
    for m, f in pairs:
        np.testing.assert_array_equal(m.numpy(), f.numpy())
