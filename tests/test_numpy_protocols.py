"""NumPy's own functions on tensors (``Tensor.__array_ufunc__``, ``__array_function__``): they record tapegrad's op
or raise a TypeError naming the function; never a silent constant.

Each recorded call is checked against tapegrad's op called directly (same value, same gradient) and against
finite differences; each refusal, for its message."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(0)
X = rng.uniform(0.2, 0.8, (3, 3))
V = rng.uniform(0.2, 0.8, 3)
A = X + 3 * np.eye(3)

# (NumPy's call, tapegrad's op called directly): the same function of the tensor arguments
CALLS = {
    "exp": (lambda x: np.exp(x), lambda x: tg.exp(x)),
    "sum-axis-dtype": (lambda x: np.sum(x, axis=0, dtype=np.float64), lambda x: tg.sum(x, axis=0)),
    "sum-keepdims-initial": (lambda x: np.sum(x, 1, None, None, True, 2.0), lambda x: tg.sum(x, 1, True) + 2.0),
    "mean": (lambda x: np.mean(x, axis=-1), lambda x: tg.mean(x, axis=-1)),
    "std-correction": (lambda x: np.std(x, correction=1), lambda x: tg.std(x, ddof=1)),
    "concatenate": (
        lambda x: np.concatenate([x, 2 * x], axis=None),
        lambda x: tg.concatenate([tg.ravel(x), tg.ravel(2 * x)]),
    ),
    "stack": (lambda x: np.stack([x, np.ones((3, 3))], axis=1), lambda x: tg.stack([x, np.ones((3, 3))], axis=1)),
    "linalg.norm": (lambda x: np.linalg.norm(x), lambda x: tg.linalg.norm(x)),
    "linalg.solve": (lambda x: np.linalg.solve(A, x), lambda x: tg.linalg.solve(A, x)),
    "linalg.slogdet": (
        lambda x: np.linalg.slogdet(x + 3 * np.eye(3))[1],
        lambda x: tg.linalg.slogdet(x + 3 * np.eye(3))[1],
    ),
    "fft.fft": (lambda x: np.abs(np.fft.fft(x)), lambda x: tg.absolute(tg.fft.fft(x))),
    "where": (lambda x: np.where(x > 0.5, x, -x), lambda x: tg.where(x > 0.5, x, -x)),
    "einsum": (lambda x: np.einsum("ij,jk->ik", x, X), lambda x: tg.einsum("ij,jk->ik", x, X)),
    "clip-min-max": (lambda x: np.clip(x, min=0.3, max=0.6), lambda x: tg.clip(x, 0.3, 0.6)),
    "dot": (lambda x: np.dot(x, V), lambda x: tg.dot(x, V)),
    "reshape": (lambda x: np.reshape(x, (9,)), lambda x: tg.reshape(x, (9,))),
    "transpose": (lambda x: np.transpose(x), lambda x: tg.transpose(x)),
    "maximum": (lambda x: np.maximum(x, 0.5), lambda x: tg.maximum(x, 0.5)),
    "matmul": (lambda x: np.matmul(X, x), lambda x: tg.matmul(X, x)),
    "ufunc-dtype": (lambda x: np.sin(x, dtype=np.float32), lambda x: tg.sin(tg.astype(x, np.float32))),
    "add.reduce": (lambda x: np.add.reduce(x), lambda x: tg.sum(x, axis=0)),
    "add.reduce-None": (lambda x: np.add.reduce(x, axis=None, keepdims=True), lambda x: tg.sum(x, keepdims=True)),
    "multiply.reduce": (lambda x: np.multiply.reduce(x, axis=1), lambda x: tg.prod(x, axis=1)),
    "maximum.reduce": (lambda x: np.maximum.reduce(x), lambda x: tg.max(x, axis=0)),
    "minimum.reduce": (lambda x: np.minimum.reduce(x, axis=1), lambda x: tg.min(x, axis=1)),
    "logaddexp.reduce": (lambda x: np.logaddexp.reduce(x), lambda x: tg.logsumexp(x, axis=0)),
    "add.accumulate": (lambda x: np.add.accumulate(x), lambda x: tg.cumsum(x, axis=0)),
    "multiply.accumulate": (lambda x: np.multiply.accumulate(x, axis=1), lambda x: tg.cumprod(x, axis=1)),
    "multiply.outer": (lambda x: np.multiply.outer(x, V), lambda x: tg.reshape(x, (3, 3, 1)) * V),
    # NumPy's reflected operators: ndarray (or NumPy scalar) on the left goes through np.add and friends
    "ndarray + t": (lambda x: np.ones(3) + x, lambda x: x + 1.0),
    "ndarray - t": (lambda x: V - x, lambda x: tg.subtract(V, x)),
    "ndarray * t": (lambda x: V * x, lambda x: x * V),
    "ndarray / t": (lambda x: V / x, lambda x: tg.divide(V, x)),
    "ndarray ** t": (lambda x: V**x, lambda x: tg.power(V, x)),
    "ndarray @ t": (lambda x: X @ x, lambda x: tg.matmul(X, x)),
    "ndarray % t": (lambda x: V % x, lambda x: tg.remainder(V, x)),
    "float64 * t": (lambda x: np.float64(2.0) * x, lambda x: x * 2.0),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_numpy_function_on_a_tensor_records_tapegrads_op(name):
    numpy_call, tapegrad_call = CALLS[name]
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        out = numpy_call(x)
    assert isinstance(out, tg.Tensor) and out._node is not None, f"{name}: not on the tape"
    np.testing.assert_allclose(out.data, tapegrad_call(tg.Tensor(X)).data, rtol=1e-6)
    mine = tg.grad(lambda x: tg.sum(numpy_call(x) * np.cos(np.arange(out.size)).reshape(out.shape)))(X)
    theirs = tg.grad(lambda x: tg.sum(tapegrad_call(x) * np.cos(np.arange(out.size)).reshape(out.shape)))(X)
    np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-12)
    if out.dtype == np.float64:  # finite differences need float64
        assert tg.gradcheck(lambda x: numpy_call(x), X)


def test_numpy_functions_on_tensors_give_tensors_outside_record_too():
    x = tg.Tensor(V)
    for out in (np.exp(x), np.sum(x), np.ones(3) + x, np.linalg.norm(x), np.concatenate([x, V])):
        assert isinstance(out, tg.Tensor) and out.requires_grad is False


def test_comparisons_and_divmod_with_an_ndarray_on_the_left_give_tensors_without_gradient():
    x = tg.Tensor(V, requires_grad=True)
    with tg.record():
        less, equal, (q, r) = V[::-1] < x, V == x, divmod(2 * V, x)
    assert isinstance(less, tg.Tensor) and less.dtype == bool and not less.requires_grad
    np.testing.assert_array_equal(less.data, V[::-1] < V)
    np.testing.assert_array_equal(equal.data, np.ones(3, bool))
    np.testing.assert_allclose(q.data, np.floor_divide(2 * V, V))
    assert r._node is not None  # the remainder has a gradient (-floor(x1 / x2) for x2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: np.exp(x, out=np.empty(3)), r"np\.exp\(\.\.\., out=\.\.\.\).*Write y = np\.exp"),
        (lambda x: np.add(x, 1.0, out=np.empty(3)), r"np\.add\(\.\.\., out=\.\.\.\)"),
        (lambda x: np.sum(x, out=np.empty(())), r"np\.sum\(\.\.\., out=\.\.\.\) on a tensor of shape \(3,\)"),
        (lambda x: np.cumsum(x, 0, None, np.empty(3)), r"np\.cumsum\(\.\.\., out=\.\.\.\)"),
        (lambda x: np.add.reduce(x, out=np.empty(())), r"np\.sum\(\.\.\., out=\.\.\.\)"),
        (lambda x: np.exp(x, where=x > 0.5), r"np\.exp\(\.\.\., where=\.\.\.\)"),
        (lambda x: np.sum(x, where=[True, False, True]), r"np\.sum\(\.\.\., where=\.\.\.\)"),
        (lambda x: np.maximum.accumulate(x), r"np\.maximum\.accumulate on a tensor of shape \(3,\).*tg\.custom_op"),
        (lambda x: np.subtract.reduce(x), r"np\.subtract\.reduce .*reduce is mapped for add"),
        (lambda x: np.add.reduceat(x, [0, 2]), r"np\.add\.reduceat .*no rule"),
        (lambda x: np.add.at(x, [0], 1.0), r"np\.add\.at changes its first argument in place.*x\.at\[index\]\.add"),
        (lambda x: np.ix_(x), r"np\.ix_ on a tensor of shape \(3,\): tapegrad has no rule.*tg\.custom_op.*np\.asarray"),
        (lambda x: np.histogram2d(x, x), r"np\.histogram2d\(\.\.\., tensors being differentiated\).*no rule"),
        (lambda x: np.fill_diagonal(x, 0.0), r"np\.fill_diagonal writes into its first argument in place"),
        (lambda x: np.sort(x, order="f"), r"order=\.\.\."),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
@pytest.mark.parametrize("recording", [True, False], ids=["in-record", "outside"])
def test_what_tapegrad_has_no_rule_for_raises_naming_the_function(call, match, recording):
    x = tg.Tensor(V, requires_grad=True)
    with pytest.raises(TypeError, match=match):
        if recording:
            with tg.record():
                call(x)
        else:
            call(x)


def test_an_in_place_operator_on_an_ndarray_says_how_to_write_it():
    a = np.ones(3)
    x = tg.Tensor(V, requires_grad=True)
    with pytest.raises(TypeError, match=r"a \+= t\), write a = a \+ t"):
        a += x
    np.testing.assert_array_equal(a, np.ones(3))  # nothing was written
    a = a + x  # the spelling it asks for records
    assert isinstance(a, tg.Tensor)


def test_np_asarray_still_leaves_the_tape_on_purpose_and_warns_at_the_users_line():
    x = tg.Tensor(V, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.asarray(x) is x.data  # outside record(): no warning
    with tg.record():
        with pytest.warns(tg.TapeEscapeWarning, match="gradients do not flow") as caught:
            a = np.asarray(x)
        y = np.sum(x * np.exp(a))  # a is a constant: the gradient is exp(V), not (1 + V) exp(V)
    assert caught[0].filename == __file__
    y.backward()
    np.testing.assert_allclose(x.grad, np.exp(V))


def test_a_nondifferentiable_numpy_function_runs_on_the_values():
    x = tg.Tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no escape warning either: nothing differentiable is lost
        with tg.record():
            assert np.shape(x) == (3, 3) and np.ndim(x) == 2 and np.size(x) == 9
            assert np.allclose(x, X) and np.array_equal(x, X)
            np.testing.assert_array_equal(np.argwhere(x > 0.5), np.argwhere(X > 0.5))
            assert np.isfinite(x).dtype == bool and not np.isfinite(x).requires_grad
            np.testing.assert_array_equal(
                np.searchsorted(np.sort(V), x.data.ravel()), np.searchsorted(np.sort(V), X.ravel())
            )


def test_tapegrads_ops_never_go_through_numpys_dispatch(monkeypatch):
    calls = []
    original = tg.Tensor.__array_function__

    def counting(self, *args):
        calls.append(args[0])
        return original(self, *args)

    monkeypatch.setattr(tg.Tensor, "__array_function__", counting)
    monkeypatch.setattr(tg.Tensor, "__array_ufunc__", lambda self, *a, **k: calls.append(a[0]) or NotImplemented)
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        y = tg.sum(tg.tanh(x @ x + 1.0) * x.T, axis=0).mean()
    y.backward()
    assert calls == []


def test_the_protocols_are_rows_of_the_one_method_table():
    from tapegrad.numpy._dispatch import array_function, array_ufunc
    from tapegrad.tensor_methods import METHODS

    assert METHODS["__array_ufunc__"] is array_ufunc is tg.Tensor.__array_ufunc__
    assert METHODS["__array_function__"] is array_function is tg.Tensor.__array_function__
