"""``tapegrad.numpy``: NumPy's names, so that code written for ``autograd.numpy`` runs with its imports changed.
Arrays and numbers in give NumPy's answers; tensors in are recorded; tapegrad's own functions cover what NumPy
does not dispatch."""

import numpy
import pytest

import tapegrad as tg
import tapegrad.numpy as np
import tapegrad.numpy.random as npr


def test_constants_dtypes_and_modules_are_numpys():
    assert np.pi is numpy.pi and np.e is numpy.e and np.inf is numpy.inf and np.newaxis is None
    assert np.float32 is numpy.float32 and np.dtype is numpy.dtype and np.ndarray is numpy.ndarray
    assert npr is np.random and npr.RandomState is numpy.random.RandomState
    assert npr.default_rng(3).standard_normal(2).tolist() == numpy.random.default_rng(3).standard_normal(2).tolist()
    assert np.testing is numpy.testing  # what tapegrad.numpy does not name, it finds in NumPy
    assert "exp" in dir(np) and "linalg" in dir(np)


def test_arrays_and_numbers_in_give_numpys_arrays_out():
    a = numpy.arange(6.0).reshape(2, 3)
    for got, expected in (
        (np.exp(a), numpy.exp(a)),
        (np.sum(a, axis=0), numpy.sum(a, axis=0)),
        (np.linalg.norm(a), numpy.linalg.norm(a)),
        (np.concatenate([a, a]), numpy.concatenate([a, a])),
        (np.zeros(3), numpy.zeros(3)),
        (np.array([1.0, 2.0]), numpy.array([1.0, 2.0])),
        (np.full(2, 3.0), numpy.full(2, 3.0)),
        (np.mean([1.0, 2.0]), 1.5),
    ):
        assert not isinstance(got, tg.Tensor)
        numpy.testing.assert_array_equal(got, expected)
    b = np.zeros(3)
    b[1] = 2.0  # an array stays an array: data preparation and in-place updates work as in NumPy
    assert np.exp(0.0) == 1.0


def test_a_list_holding_tensors_is_stacked_on_the_tape():
    x = tg.Tensor(2.0, requires_grad=True)
    assert tg.grad(lambda x: np.sum(np.array([[x, 1.0], [3.0 * x, x * x]])))(x) == pytest.approx(1 + 3 + 4)
    assert tg.grad(lambda x: np.mean([x, 2 * x]))(x) == pytest.approx(1.5)
    assert tg.grad(lambda x: np.std([x, 0.0]))(x) == pytest.approx(0.5)
    assert tg.grad(lambda x: np.sum(np.asarray([x, x])))(x) == pytest.approx(2.0)
    assert tg.grad(lambda x: np.sum(np.full(3, x)))(x) == pytest.approx(3.0)
    assert np.array([x, x], ndmin=3).shape == (1, 1, 2)


def test_asarray_keeps_a_tensor_on_the_tape_where_numpys_leaves_it():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tg.record():
        assert np.asarray(x) is x and np.asarray(x, dtype=numpy.float32).dtype == numpy.float32
        with pytest.warns(tg.TapeEscapeWarning):
            assert numpy.asarray(x) is x.data  # real NumPy's: the documented way off the tape
    with pytest.raises(ValueError, match="infs or NaNs"):
        np.asarray_chkfinite(tg.Tensor([1.0, numpy.inf]))


def test_linalg_and_fft_are_numpys_recording_on_tensors_with_tapegrads_additions():
    a = numpy.array([[4.0, 1.0], [1.0, 3.0]])
    assert np.linalg.solve.__wrapped__ is numpy.linalg.solve and np.fft.rfft.__wrapped__ is numpy.fft.rfft
    assert np.linalg.solve_triangular is tg.linalg.solve_triangular and np.linalg.expm is tg.linalg.expm
    g = tg.grad(lambda a: np.linalg.slogdet(a)[1] + np.linalg.cond(a))(a)
    numpy.testing.assert_allclose(g, tg.grad(lambda a: tg.linalg.slogdet(a)[1] + _cond(a))(a))
    assert tg.gradcheck(lambda a: np.linalg.cond(a), a) and tg.gradcheck(lambda a: np.linalg.cond(a, "fro"), a)
    assert tg.gradcheck(lambda x: np.abs(np.fft.fft(x)), numpy.array([1.0, 2.0, 0.5]))
    assert np.linalg.matrix_rank(tg.Tensor(a, requires_grad=True)) == 2


def _cond(a):
    s = tg.linalg.svdvals(a)
    return s[0] / s[-1]


def test_implementation_names_tapegrads_function_for_a_numpy_one():
    assert np.implementation(numpy.exp) is tg.exp
    assert np.implementation(numpy.linalg.solve) is tg.linalg.solve
    assert np.implementation(numpy.sum).__name__ == "sum"
    assert np.implementation(numpy.ix_) is None and np.implementation(numpy.loadtxt) is None
    # tapegrad.numpy's own names (NumPy's, wrapped to record tensors inside lists) say the same
    assert np.implementation(np.exp) is tg.exp and np.implementation(np.linalg.solve) is tg.linalg.solve
    assert np.implementation(np.add).__name__ == "add" and np.implementation(np.ix_) is None


def test_autograd_style_code_runs_with_its_imports_changed():
    def logistic_loss(w, x, y):  # as written for autograd.numpy
        logits = np.dot(x, w[:-1]) + w[-1]
        return np.mean(np.logaddexp(0.0, -y * logits)) + 0.01 * np.sum(w**2)

    rs = npr.RandomState(0)
    x, y = rs.randn(20, 3), numpy.sign(rs.randn(20))
    w = 0.1 * rs.randn(4)
    assert tg.gradcheck(lambda w: logistic_loss(w, x, y), w)
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp

    def theirs(w, x, y):
        logits = anp.dot(x, w[:-1]) + w[-1]
        return anp.mean(anp.logaddexp(0.0, -y * logits)) + 0.01 * anp.sum(w**2)

    numpy.testing.assert_allclose(tg.grad(logistic_loss)(w, x, y), autograd.grad(theirs)(w, x, y), rtol=1e-12)


@pytest.mark.parametrize(
    "fn",
    [
        lambda np_, a: np_.reshape(a, (3, 4), order="F"),
        lambda np_, a: np_.reshape(a, (-1, 2), order="F"),
        lambda np_, a: np_.ravel(a, order="F"),
        lambda np_, a: a.reshape((2, 6), order="F"),
        lambda np_, a: a.flatten("F"),
        lambda np_, a: a.flatten(order="F"),
    ],
    ids=["reshape", "reshape -1", "ravel", "method reshape", "method flatten", "method flatten order="],
)
def test_fortran_order_reshapes_are_numpys_with_exact_gradients(fn):
    # autograd differentiates order="F"; it was refused (the method with an internal name's TypeError)
    a = numpy.arange(12.0).reshape(2, 3, 2) * 0.5 - 1.0
    numpy.testing.assert_array_equal(fn(np, tg.Tensor(a)).data, fn(numpy, a))
    w = numpy.random.default_rng(0).standard_normal(fn(numpy, a).shape)
    assert tg.gradcheck(lambda x: (fn(np, x) * w).sum(), a)
