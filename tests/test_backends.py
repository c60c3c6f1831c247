"""The tape on other array libraries: what tests/test_tape.py checks on NumPy, run on each backend, plus what
only backends have (one library per op, NotImplementedError for what a library cannot do, the NumPy path
never entering the backend layer). The op-by-op checks are tests/test_ops.py's, which also run per backend."""

import numpy as np
import pytest
from backends import load

import tapegrad as tg
import tapegrad.core.record
import tapegrad.core.replay
from tapegrad import backend as backend_module
from tapegrad import tape


def leaf(backend, values, dtype=np.float64):
    return tg.Tensor(backend.asarray(np.asarray(values, dtype=dtype)), requires_grad=True)


def _mlp_loss(X, Y, W1, b1, W2):
    return ((tg.tanh(X @ W1 + b1) @ W2 - Y) ** 2).mean()


def _mlp_data():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in [(8, 3), (8, 2), (3, 4), (4,), (4, 2)]]


def test_an_mlp_step_gives_numpy_s_gradients_and_keeps_them_in_the_library(backend):
    arrays = _mlp_data()
    expected = []
    for asarray, out in ((np.asarray, expected), (backend.asarray, None)):
        X, Y = (tg.Tensor(asarray(a)) for a in arrays[:2])
        params = [tg.Tensor(asarray(a), requires_grad=True) for a in arrays[2:]]
        with tape.record() as t:
            loss = _mlp_loss(X, Y, *params)
        assert t.saved_bytes() > 0
        loss.backward()
        assert t.saved_bytes() == 0 and len(t) == 0  # the tape is freed on every backend
        if out is not None:
            out.extend(p.grad for p in params)
    for p, g in zip(params, expected):
        assert backend.is_native(p.grad) and p.grad.shape == p.shape
        np.testing.assert_allclose(backend.to_numpy(p.grad), g, rtol=1e-12, atol=1e-14)


def test_hessian_vector_product_matches_numpy(backend):
    arrays = _mlp_data()
    v = [np.random.default_rng(1).standard_normal(a.shape) for a in arrays[2:]]
    results = []
    for asarray in (np.asarray, backend.asarray):
        X, Y = (tg.Tensor(asarray(a)) for a in arrays[:2])
        params = [tg.Tensor(asarray(a), requires_grad=True) for a in arrays[2:]]
        with tape.record():
            with tape.record() as inner:
                loss = _mlp_loss(X, Y, *params)
            grads = inner.gradient(loss, params)
            gv = sum((g * asarray(vi)).sum() for g, vi in zip(grads, v))
        gv.backward()
        results.append([p.grad for p in params])
    for g_np, g in zip(*results):
        assert backend.is_native(g)
        np.testing.assert_allclose(backend.to_numpy(g), g_np, rtol=1e-10, atol=1e-12)


def test_persistent_tape_replays_twice_and_gradients_accumulate(backend):
    x = leaf(backend, [1.0, -2.0])
    with tape.record(persistent=True) as t:
        y = (x * x * 3.0).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(backend.to_numpy(x.grad), 2 * 6 * np.array([1.0, -2.0]))
    t.release()
    assert t.saved_bytes() == 0


def test_changing_a_saved_value_is_detected_and_in_place_updates_work(backend):
    w = leaf(backend, [1.0, 2.0])
    with tape.record():
        loss = (w * w).sum()
    saved = w.data
    w -= backend.asarray(np.array([0.5, 0.5]))  # an optimizer-style update outside record(), in place
    assert backend.is_native(w.data)
    np.testing.assert_allclose(backend.to_numpy(w.data), [0.5, 1.5])
    if not backend.mutable:  # immutable arrays (Dask): w is rebound, the saved array is untouched and exact
        assert w.data is not saved and w.version == 0
        loss.backward()
        np.testing.assert_allclose(backend.to_numpy(w.grad), [2.0, 4.0])
        return
    assert w.data is saved and w.version > 0
    with pytest.raises(tg.InPlaceModificationError, match="multiply"):
        loss.backward()


def test_rebinding_data_keeps_what_the_tape_saved(backend):
    w = leaf(backend, [1.0, 2.0])
    with tape.record():
        loss = (w * w).sum()
    w.data = w.data * 2  # a new array: the saved one is untouched, so the recorded gradient is still exact
    loss.backward()
    np.testing.assert_allclose(backend.to_numpy(w.grad), [2.0, 4.0])


def test_gradient_of_sources_and_zeros_for_unconnected_stay_in_the_library(backend):
    x, unused = leaf(backend, [1.0, 2.0]), leaf(backend, [5.0])
    with tape.record() as t:
        y = (tg.exp(x) * 2.0).sum()
    gx, gu = t.gradient(y, [x, unused], unconnected="zero")
    assert backend.is_native(gx) and backend.is_native(gu)
    np.testing.assert_allclose(backend.to_numpy(gx), 2 * np.exp([1.0, 2.0]))
    np.testing.assert_array_equal(backend.to_numpy(gu), [0.0])


def test_a_seed_given_as_numpy_is_made_an_array_of_the_output_s_library(backend):
    x = leaf(backend, [1.0, 2.0], dtype=np.float32)
    with tape.record():
        y = x * 2.0
    y.backward(np.array([1.0, 3.0]))  # NumPy float64 for a float32 output of another library
    assert backend.is_native(x.grad) and x.grad.dtype == backend.dtype(np.float32)
    np.testing.assert_allclose(backend.to_numpy(x.grad), [2.0, 6.0])


def test_tensor_basics_on_a_backend(backend):
    x = leaf(backend, [[1.0, 2.0], [3.0, 4.0]])
    assert backend.is_native(x.data) and x.shape == (2, 2) and x.ndim == 2
    assert x.sum().item() == 10.0 and "requires_grad=True" in repr(x)
    assert backend.is_native(x.astype(backend.dtype(np.float32)).data)
    with pytest.raises(TypeError, match="floating-point"):
        tg.Tensor(backend.asarray(np.array([1, 2])), requires_grad=True)


def test_numpy_ops_never_enter_the_backend_layer(monkeypatch):
    def refuse(*args):
        raise AssertionError("the NumPy path looked up a backend")

    monkeypatch.setattr(tapegrad.core.record, "common_backend", refuse)
    monkeypatch.setattr(tapegrad.core.replay, "common_backend", refuse)
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tape.record():
        y = (tg.tanh(x * 2.0 + np.ones(2)) - 1).sum()
    y.backward()
    assert x.grad.shape == (2,)


def test_backend_lookup_is_cached_per_array_type():
    strict = load("array_api_strict")
    if isinstance(strict, str):
        pytest.skip(strict)
    a = strict.asarray(np.ones(2))
    b = backend_module.backend_of(a)
    assert b.name == "array_api_strict" and backend_module.backend_of(strict.asarray(np.zeros(1))) is b
    assert backend_module.backend_of(strict.asarray(np.ones(3, dtype=np.float32))) is b
    assert b.forward(tg.exp.op) is b.forward(tg.exp.op)  # resolved once per op, not per call
    assert b.forward(tg.REGISTRY["sum"]).keywords == {"xp": b.fx}  # a forward taking xp= gets the library's names


@pytest.fixture
def strict():
    b = load("array_api_strict")
    if isinstance(b, str):
        pytest.skip(b)
    return b


def test_two_libraries_in_one_op_is_an_error_naming_the_op_and_both(strict):
    x = leaf(strict, [1.0, 2.0])
    with pytest.raises(TypeError, match="multiply: inputs come from two array libraries, array_api_strict and numpy"):
        x * tg.Tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="add: .*numpy and array_api_strict"):
        tg.add(np.ones(2), x)
    assert strict.is_native((2.0 * x + np.float64(1.0)).data)  # Python and NumPy scalars mix with any library


def test_what_a_library_cannot_do_raises_not_implemented_naming_the_op_and_library(strict):
    x = leaf(strict, np.arange(6.0).reshape(2, 3))
    with pytest.raises(NotImplementedError, match="getitem: the array_api_strict backend"):
        x[np.array([0, 1]), np.array([2, 2])]  # two integer arrays: no scatter-add for their adjoint
    y = x[:, np.array([2, 2, 0])]  # one integer array among slices works, repeats included
    assert y.shape == (2, 3)


def test_a_function_the_library_lacks_raises_not_implemented_naming_the_op_and_library(strict, monkeypatch):
    import array_api_strict

    x = tg.Tensor(strict.asarray(np.array([0.5, -1.0])))
    fx = backend_module.backend_of(x.data).fx
    monkeypatch.delattr(array_api_strict, "logaddexp")  # as a library without it would be
    monkeypatch.delattr(fx, "logaddexp", raising=False)  # forget the cached lookup
    with pytest.raises(NotImplementedError, match="sigmoid: the array_api_strict backend has no logaddexp"):
        tg.sigmoid(x)


def _rule_namespaces():
    """Every namespace a replay hands to rules as ``xp``, with how to make and read its arrays and its float32
    (those of optional libraries when they are installed)."""
    import tapegrad.ops as ops
    from tapegrad.backend.numpy_rules import numpy_rules

    plain = (np.asarray, np.asarray, np.float32)
    spaces = {
        "numpy_rules": (numpy_rules, *plain),
        "NumpySpellings": (backend_module.NumpySpellings(np, "numpy"), *plain),
        "numpy_like_spellings": (backend_module.numpy_like_spellings(np, "numpy-like", np.add.at), *plain),
        "tensor_rules": (ops.tensor_rules, tg.Tensor, lambda t: t.numpy(), np.float32),
    }
    try:
        import array_api_strict as strict

        spaces["NumpySpellings(array_api_strict)"] = (
            backend_module.NumpySpellings(strict, "array_api_strict"),
            strict.asarray,
            backend_module.to_numpy,
            strict.float32,
        )
    except ImportError:
        pass
    try:
        import dask.array as da

        spaces["DaskSpellings"] = (backend_module.DaskSpellings(da), da.from_array, np.asarray, np.float32)
    except ImportError:
        pass
    return spaces


def test_every_rule_namespace_implements_the_protocol():
    import inspect

    from tapegrad.backend.namespace import RULE_EXTRAS, RuleNamespace

    protocol = {name for name in vars(RuleNamespace) if not name.startswith("_")} | {"name"}
    assert protocol == {"name", *RULE_EXTRAS}
    for label, (xp, *_) in _rule_namespaces().items():
        assert isinstance(xp, RuleNamespace), f"{label} lacks one of {sorted(protocol)}"
        assert isinstance(xp.name, str), label
        for member in RULE_EXTRAS:
            wanted = [p for p in inspect.signature(getattr(RuleNamespace, member)).parameters if p != "self"]
            try:
                inspect.signature(getattr(xp, member)).bind(*wanted)
            except TypeError as err:
                raise AssertionError(f"{label}.{member} does not take ({', '.join(wanted)}): {err}") from None


def test_every_rule_namespace_computes_the_protocol_s_functions_alike():
    cond, g = np.array([True, False, True]), np.array([1.0, np.inf, -2.0])
    for label, (xp, wrap, read, float32) in _rule_namespaces().items():
        np.testing.assert_array_equal(read(xp.masked(wrap(cond), wrap(g))), [1.0, 0.0, -2.0], err_msg=label)
        got = read(xp.scatter(wrap(g[[0, 2]]), np.array([1, 1]), (3,)))
        np.testing.assert_array_equal(got, [0.0, -1.0, 0.0], err_msg=label)
        np.testing.assert_array_equal(read(xp.getitem(wrap(g), slice(0, 1))), [1.0], err_msg=label)
        assert read(xp.astype(wrap(g), float32)).dtype == np.float32, label


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex64, np.int8, np.bool_])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"axis": 0},
        {"axis": (0, 2), "keepdims": True},
        {"axis": -1, "dtype": np.float64},
        {"axis": 1, "initial": 2},
        {"where": np.array([True, False, True, True])},
    ],
)
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_the_plain_replays_sum_and_swapaxes_are_numpys_to_the_bit(dtype, kwargs):
    """``numpy_rules`` takes a shorter path than ``np.sum`` and ``np.swapaxes`` for arrays: the values, dtypes and
    shapes must stay NumPy's (small integers widen, ``dtype``, ``initial`` and ``where`` are honoured)."""
    from tapegrad.backend.numpy_rules import numpy_rules

    x = (np.random.default_rng(1).standard_normal((3, 5, 4)) * 50).astype(dtype)
    want, got = np.sum(x, **kwargs), numpy_rules.sum(x, **kwargs)
    assert type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)
    out = np.empty(np.shape(want), want.dtype)
    if not kwargs or "axis" in kwargs and "dtype" not in kwargs:
        assert numpy_rules.sum(x, **kwargs, out=out) is out
        np.testing.assert_array_equal(out, want)
    for view in (x, x.tolist()):
        np.testing.assert_array_equal(numpy_rules.swapaxes(view, 0, -1), np.swapaxes(view, 0, -1))
