"""Tensor as an ndarray look-alike: the methods, properties and operators of tapegrad/tensor_methods.py's table,
each against NumPy's ndarray (values) and finite differences (gradients); and the constructors."""

import numpy as np
import pytest

import tapegrad as tg

rng = np.random.default_rng(1)
X = rng.permutation(np.linspace(0.2, 0.9, 12)).reshape(3, 4)
S = X[:, :3]  # square

# method call on a tensor, the same call on an ndarray (None: no NumPy counterpart, compared with `torch_like`)
METHOD_CALLS = {
    "ravel": (lambda x: x.ravel(), lambda a: a.ravel()),
    "flatten": (lambda x: x.flatten(), lambda a: a.flatten()),
    "flatten-order": (lambda x: x.flatten("C"), lambda a: a.flatten("C")),
    "swapaxes": (lambda x: x.swapaxes(0, 1), lambda a: a.swapaxes(0, 1)),
    "std": (lambda x: x.std(axis=0, ddof=1), lambda a: a.std(axis=0, ddof=1)),
    "prod": (lambda x: x.prod(axis=1), lambda a: a.prod(axis=1)),
    "cumsum": (lambda x: x.cumsum(axis=1), lambda a: a.cumsum(axis=1)),
    "cumprod": (lambda x: x.cumprod(), lambda a: a.cumprod()),
    "dot": (lambda x: x.dot(X.T), lambda a: a.dot(X.T)),
    "take": (lambda x: x.take([0, 5, 5]), lambda a: a.take([0, 5, 5])),
    "repeat": (lambda x: x.repeat(2, axis=0), lambda a: a.repeat(2, axis=0)),
    "trace": (lambda x: x.trace(offset=1), lambda a: a.trace(offset=1)),
    "diagonal": (lambda x: x.diagonal(), lambda a: a.diagonal()),
    "compress": (lambda x: x.compress([True, False, True], axis=0), lambda a: a.compress([True, False, True], axis=0)),
    "sort": (lambda x: x.sort(axis=0), lambda a: np.sort(a, axis=0)),
    "conj": (lambda x: x.conj(), lambda a: a.conj()),
    "conjugate": (lambda x: x.conjugate(), lambda a: a.conjugate()),
    "real": (lambda x: x.real, lambda a: a.real),
    "imag-of-complex": (lambda x: (x * 1j).imag, lambda a: (a * 1j).imag),
    "mT": (lambda x: x.mT, lambda a: a.mT),
    "T": (lambda x: x.T, lambda a: a.T),
    "mod": (lambda x: x % 0.37, lambda a: a % 0.37),
    "rmod": (lambda x: 1.1 % x, lambda a: 1.1 % a),
    "pos": (lambda x: +x, lambda a: +a),
    "at-set": (lambda x: x.at[0, 1].set(5.0), lambda a: np.where(np.arange(12).reshape(3, 4) == 1, 5.0, a)),
    "at-add": (lambda x: x.at[[0, 0], 1].add(5.0), lambda a: a + 10.0 * (np.arange(12).reshape(3, 4) == 1)),
    "at-get": (lambda x: x.at[1:].get(), lambda a: a[1:]),
    # PyTorch's spellings
    "view": (lambda x: x.view(4, 3), lambda a: a.reshape(4, 3)),
    "view-tuple": (lambda x: x.view((2, -1)), lambda a: a.reshape(2, -1)),
    "permute": (lambda x: x.permute(1, 0), lambda a: a.transpose(1, 0)),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "flatten-start-dim": (lambda x: x.unsqueeze(0).flatten(1), lambda a: a.reshape(1, 12)),
    "flatten-range": (lambda x: x.view(3, 2, 2).flatten(0, 1), lambda a: a.reshape(6, 2)),
}


@pytest.mark.parametrize("name", list(METHOD_CALLS))
def test_a_method_gives_numpys_value_and_a_correct_gradient(name):
    ours, numpys = METHOD_CALLS[name]
    out = ours(tg.Tensor(X))
    expected = numpys(X.copy())
    assert isinstance(out, tg.Tensor) and out.shape == np.shape(expected)
    np.testing.assert_allclose(out.data, expected, rtol=1e-12)
    assert tg.gradcheck(lambda x: tg.real(ours(x)) if np.iscomplexobj(out.data) else ours(x), X)


def test_sort_returns_a_sorted_copy_and_leaves_the_tensor_unchanged():
    x = tg.Tensor(X.copy())
    y = x.sort()
    np.testing.assert_array_equal(x.data, X)  # NumPy's a.sort() would have sorted a in place
    np.testing.assert_array_equal(y.data, np.sort(X))


@pytest.mark.parametrize(
    "name, ours, numpys",
    [
        ("round", lambda x: x.round(1), lambda a: a.round(1)),
        ("all", lambda x: (x > 0.3).all(axis=0), lambda a: (a > 0.3).all(axis=0)),
        ("any", lambda x: (x > 0.8).any(), lambda a: (a > 0.8).any()),
        ("argsort", lambda x: x.argsort(axis=1), lambda a: a.argsort(axis=1)),
        ("floordiv", lambda x: x // 0.3, lambda a: a // 0.3),
        ("rfloordiv", lambda x: 1.0 // x, lambda a: 1.0 // a),
    ],
)
def test_a_method_without_gradient_gives_numpys_value_and_no_gradient(name, ours, numpys):
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        out = ours(x)
    assert not out.requires_grad
    np.testing.assert_array_equal(out.data, numpys(X))


def test_nonzero_and_divmod_give_numpys_tuples():
    x = tg.Tensor(X)
    for got, expected in zip((x > 0.5).nonzero(), (X > 0.5).nonzero()):
        np.testing.assert_array_equal(got.data, expected)
    (q, r), (q2, r2) = divmod(x, 0.3), divmod(X, 0.3)
    np.testing.assert_allclose(q.data, q2) and np.testing.assert_allclose(r.data, r2)
    (q, r), (q2, r2) = divmod(2.0, x), divmod(2.0, X)
    np.testing.assert_allclose(q.data, q2) and np.testing.assert_allclose(r.data, r2)


def test_the_bitwise_operators_are_logical_on_bool_tensors_and_bitwise_on_integers():
    p, q = tg.Tensor(X > 0.5), tg.Tensor(X < 0.7)
    a, b = X > 0.5, X < 0.7
    for got, expected in ((p & q, a & b), (p | q, a | b), (p ^ q, a ^ b), (~p, ~a), (True & p, True & a)):
        assert got.dtype == bool
        np.testing.assert_array_equal(got.data, expected)
    i = tg.Tensor(np.array([1, 2, 3]))
    np.testing.assert_array_equal((i & 2).data, np.array([0, 2, 2]))
    np.testing.assert_array_equal((6 | i).data, np.array([7, 6, 7]))
    np.testing.assert_array_equal((~i).data, np.array([-2, -3, -4]))


def test_format_gives_a_number_for_a_0d_tensor_and_raises_for_more():
    loss = tg.Tensor(np.float64(1.23456))
    assert f"{loss:.3f}" == "1.235" and f"{loss}" == str(loss) and f"{tg.Tensor(3):>4d}" == "   3"
    with pytest.raises(TypeError, match=r"format spec '\.2f' on a tensor of shape \(2,\)"):
        f"{tg.Tensor([1.0, 2.0]):.2f}"


def test_dim_and_size_follow_pytorch_and_numpy_respectively():
    x = tg.Tensor(X)
    assert x.dim() == 2 and x.size == 12  # size stays NumPy's property (PyTorch's is a method)


def test_mT_needs_two_dimensions():
    with pytest.raises(ValueError, match=r"mT needs at least 2 dimensions, got shape \(3,\)"):
        _ = tg.Tensor([1.0, 2.0, 3.0]).mT


# -- constructors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda **k: tg.zeros((2, 3), **k), np.zeros((2, 3))),
        (lambda **k: tg.ones(4, **k), np.ones(4)),
        (lambda **k: tg.full((2,), 1.5, **k), np.full((2,), 1.5)),
        (lambda **k: tg.eye(3, 4, k=1, **k), np.eye(3, 4, k=1)),
        (lambda **k: tg.arange(0.0, 1.0, 0.25, **k), np.arange(0.0, 1.0, 0.25)),
        (lambda **k: tg.linspace(0.0, 1.0, 5, **k), np.linspace(0.0, 1.0, 5)),
        (lambda **k: tg.zeros_like(tg.Tensor(X), **k), np.zeros_like(X)),
        (lambda **k: tg.ones_like(X, **k), np.ones_like(X)),
        (lambda **k: tg.full_like(X, 2.0, **k), np.full_like(X, 2.0)),
    ],
    ids=["zeros", "ones", "full", "eye", "arange", "linspace", "zeros_like", "ones_like", "full_like"],
)
def test_a_constructor_takes_dtype_and_requires_grad(make, expected):
    t = make()
    assert isinstance(t, tg.Tensor) and not t.requires_grad
    np.testing.assert_array_equal(t.data, expected)
    leaf = make(requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
    small = make(dtype=np.float32)
    assert small.dtype == np.float32
    with tg.record():
        loss = (leaf * leaf).sum()
    loss.backward()
    np.testing.assert_allclose(leaf.grad, 2 * expected)


def test_an_integer_constructor_refuses_requires_grad():
    with pytest.raises(TypeError, match=r"arange\(requires_grad=True\) makes a int64 tensor"):
        tg.arange(3, requires_grad=True)
    assert tg.arange(3).dtype == np.int64


def test_rand_and_randn_draw_from_a_seeded_generator():
    a, b = tg.rand(2, 3, rng=7), tg.rand((2, 3), rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.data, np.random.default_rng(7).random((2, 3)))
    assert 0 <= a.data.min() and a.data.max() < 1
    n = tg.randn(1000, rng=3, dtype=np.float32, requires_grad=True)
    assert n.dtype == np.float32 and n.requires_grad and abs(float(n.data.mean())) < 0.1
    np.testing.assert_array_equal(n.data, np.random.default_rng(3).standard_normal(1000, dtype=np.float32))
    with pytest.raises(TypeError, match="the shape is integers"):
        tg.rand(2.5)


def test_linspace_of_tensors_matches_numpy_and_passes_gradients_to_start_and_stop():
    start, stop = np.array([0.0, 1.0]), np.array([1.0, 3.0])
    for kwargs in ({"num": 5}, {"num": 4, "endpoint": False}, {"num": 3, "axis": 1}, {"num": 1}):
        np.testing.assert_allclose(
            tg.linspace(tg.Tensor(start), tg.Tensor(stop), **kwargs).data, np.linspace(start, stop, **kwargs)
        )
    assert tg.gradcheck(lambda a, b: tg.linspace(a, b, 4, axis=1), start, stop)
    ga, gb = tg.grad(lambda a, b: tg.linspace(a, b, 5).sum(), argnums=(0, 1))(start, stop)
    np.testing.assert_allclose(ga, [2.5, 2.5]) and np.testing.assert_allclose(gb, [2.5, 2.5])


def test_full_with_a_tensor_fill_value_refuses_requires_grad():
    with pytest.raises(ValueError, match="the fill value is a tensor"):
        tg.full((2,), tg.Tensor(1.0, requires_grad=True), requires_grad=True)
