"""Tensors inside lists, tuples and index expressions, given to NumPy's functions: never a silent constant.

NumPy hands a call to tapegrad only for a tensor it sees at the top of an argument, so ``np.sum([x[0], x[1]])``,
``np.r_[x, x]`` or ``np.linalg.norm([x[0], x[1]])`` used to turn the tensors into arrays and give a gradient of
exactly zero. Each row below is one such call (the audit of issue 23), run two ways:

- through ``tapegrad.numpy`` (autograd-style code): it must record, with the finite-difference gradient, and
  HIPS autograd's where autograd itself can differentiate the call (``autograd=True``);
- through NumPy's own ``np`` on tensors: ``"records"`` (a tensor is visible to NumPy's dispatch, and the
  tensors inside lists are stacked on the tape), a NumPy function name (NumPy's own Python code converts the
  tensor: a ``TypeError`` naming it), or ``"warns"`` (NumPy's C code converts it from the user's line, where it
  cannot be told apart from ``np.asarray(t)``, the documented way off the tape: a ``TapeEscapeWarning`` there).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X = numpy.array([0.3, -0.7, 1.1])


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable  # fn(np, x): np is the namespace (tapegrad.numpy, numpy or autograd.numpy), x the input
    numpy: str  # what NumPy's own functions do: "records", "warns", or the name of the function that raises
    autograd: bool = True  # whether autograd differentiates it (its gradient is then compared)


def _v(x):
    """x's elements in a list, in another order: what a user builds by hand."""
    return [x[1], x[2], x[0]]


CASES = [
    # NumPy's index tricks
    Case("r_ of tensors", lambda np, x: np.r_[x, x], "np.r_"),
    Case("r_ with numbers and a slice", lambda np, x: np.r_[x[0], 2.0, x[1:], 0:2], "np.r_"),
    Case("r_ with a directive", lambda np, x: np.r_["0,2", x, x], "np.r_"),
    Case("c_", lambda np, x: np.c_[x, 2 * x], "np.c_"),
    Case("c_ with a list", lambda np, x: np.c_[[x[0], x[1], x[2]], x], "np.c_"),
    Case("s_", lambda np, x: x[np.s_[1:]], "records", autograd=False),
    Case("index_exp", lambda np, x: x[np.index_exp[::2]], "records", autograd=False),
    # joining
    Case("append(list, tensor)", lambda np, x: np.append([x[0], x[1]], x), "records"),
    Case("append(tensor, list)", lambda np, x: np.append(x, [x[0], x[1]]), "records"),
    Case("append(list, list)", lambda np, x: np.append([x[0]], [x[1], x[2]]), "np.append"),
    Case("block of scalars", lambda np, x: np.block([[x[0], x[1]], [x[2], x[0]]]), "records"),
    Case("block of vectors", lambda np, x: np.block([x, 2 * x]), "records"),
    Case("stack", lambda np, x: np.stack([x, _v(x)]), "records"),
    Case("hstack", lambda np, x: np.hstack([x, [x[0]]]), "records", autograd=False),
    Case("vstack", lambda np, x: np.vstack([x, _v(x)]), "records", autograd=False),
    Case("dstack", lambda np, x: np.dstack([x, _v(x)]), "records"),
    Case("column_stack", lambda np, x: np.column_stack([x, _v(x)]), "records"),
    Case("concatenate", lambda np, x: np.concatenate([x, [x[0]]]), "records", autograd=False),
    Case("concatenate of lists", lambda np, x: np.concatenate([[x[0]], [x[1], x[2]]]), "warns"),
    Case("insert values", lambda np, x: np.insert(x, 1, [x[2], x[0]]), "records", autograd=False),
    Case("meshgrid", lambda np, x: np.meshgrid([x[0], x[1]], x)[0], "records", autograd=False),
    # constructors
    Case("array", lambda np, x: np.array([x[0], x[1]]), "warns"),
    Case("asarray", lambda np, x: np.asarray([[x[0], 1.0], [x[1], x[2]]]), "warns"),
    Case("full", lambda np, x: np.full(3, x[0]), "np.full"),
    # selections
    Case("where, a list branch", lambda np, x: np.where([True, False, True], [x[0], x[1], x[2]], 0.0), "warns"),
    Case("where, a tensor and a list", lambda np, x: np.where(x > 0, x, _v(x)), "records", autograd=False),
    Case("select", lambda np, x: np.select([x > 0, x <= 0], [x, _v(x)]), "records"),
    Case(
        "piecewise",
        lambda np, x: np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v**2]),
        "records",
        autograd=False,
    ),  # fmt: skip
    Case("choose", lambda np, x: np.choose([0, 1, 0], [x, _v(x)]), "records"),
    Case("clip with a list bound", lambda np, x: np.clip(x, [x[1], -1.0, 0.0], 2.0), "records", autograd=False),
    # products
    Case(
        "einsum, a list operand", lambda np, x: np.einsum("i,i->", [x[0], x[1], x[2]], x), "records", autograd=False
    ),  # fmt: skip
    Case("einsum of lists", lambda np, x: np.einsum("i,i", [x[0], x[1]], [x[1], x[2]]), "np.einsum"),
    Case("dot of lists", lambda np, x: np.dot([x[0], x[1]], [x[1], x[2]]), "warns"),
    Case("dot(list, tensor)", lambda np, x: np.dot([x[0], x[1], x[2]], x), "records", autograd=False),
    Case("inner", lambda np, x: np.inner([x[0], x[1]], [x[2], 1.0]), "warns"),
    Case("vdot", lambda np, x: np.vdot([x[0], x[1]], [x[2], 1.0]), "warns", autograd=False),
    Case("outer", lambda np, x: np.outer([x[0], x[1]], x), "records", autograd=False),
    Case("matmul", lambda np, x: np.matmul([[x[0], x[1]]], [[x[2]], [1.0]]), "warns"),
    Case("cross", lambda np, x: np.cross([x[0], x[1], x[2]], [1.0, 0.0, 2.0]), "np.cross"),
    Case("convolve", lambda np, x: np.convolve([x[0], x[1]], x), "records", autograd=False),
    Case("kron", lambda np, x: np.kron([x[0], x[1]], x), "records", autograd=False),
    # reductions and statistics of lists
    Case("sum of a list", lambda np, x: np.sum([x[0], x[1]]), "np.sum"),
    Case("mean of a list", lambda np, x: np.mean([x[0], x[1], 2.0]), "np.mean"),
    Case("prod of a list", lambda np, x: np.prod([x[0], x[1], x[2]]), "np.prod"),
    Case("max of a list", lambda np, x: np.max([x[0], x[1], x[2]]), "np.max"),
    Case("std of a list", lambda np, x: np.std([x[0], x[1], x[2]]), "np.std"),
    Case("median of a list", lambda np, x: np.median([x[0], x[1], x[2]]), "np.median", autograd=False),
    Case("cumsum of a list", lambda np, x: np.cumsum([x[0], x[1], x[2]]), "np.cumsum"),
    Case("sort of a list", lambda np, x: np.sort([x[1], x[0], x[2]]), "np.sort"),
    Case("diff of a list", lambda np, x: np.diff([x[0], x[1], x[2]]), "np.diff"),
    Case(
        "average, list weights", lambda np, x: np.average(x, weights=[x[0] ** 2, 1.0, 2.0]), "records", autograd=False
    ),  # fmt: skip
    Case("polyval coefficients", lambda np, x: np.polyval([x[0], x[1], x[2]], 2.0), "np.polyval"),
    Case("interp values", lambda np, x: np.interp(0.5, [0.0, 1.0], [x[0], x[1]]), "np.interp", autograd=False),
    # shapes and diagonals
    Case("diag of a list", lambda np, x: np.diag([x[0], x[1]]), "np.diag"),
    Case("trace of nested lists", lambda np, x: np.trace([[x[0], x[1]], [x[2], 1.0]]), "np.trace"),
    Case("tile", lambda np, x: np.tile([x[0], x[1]], 2), "np.tile"),
    Case("reshape", lambda np, x: np.reshape([x[0], x[1], x[2], 1.0], (2, 2)), "np.reshape"),
    Case("transpose", lambda np, x: np.transpose([[x[0], x[1]], [x[2], 1.0]]), "np.transpose"),
    # ufuncs and their methods
    Case("exp of a list", lambda np, x: np.exp([x[0], x[1]]), "warns", autograd=False),
    Case("add(tensor, list)", lambda np, x: np.add(x, _v(x)), "records", autograd=False),
    Case("maximum of lists", lambda np, x: np.maximum([x[0], x[1]], [x[2], 0.0]), "warns"),
    Case("add.reduce of a list", lambda np, x: np.add.reduce([x[0], x[1]]), "warns", autograd=False),
    Case("multiply.outer", lambda np, x: np.multiply.outer([x[0], x[1]], x), "records", autograd=False),
    # linalg and fft of nested lists
    Case("linalg.norm of a list", lambda np, x: np.linalg.norm([x[0], x[1]]), "np.linalg.norm"),
    Case("linalg.norm of nested lists", lambda np, x: np.linalg.norm([[x[0], x[1]], [x[2], 1.0]]), "np.linalg.norm"),
    Case("linalg.det", lambda np, x: np.linalg.det([[x[0], x[1]], [x[2], 1.0]]), "np.linalg.det", autograd=False),
    Case(
        "linalg.inv", lambda np, x: np.linalg.inv([[x[0] + 2.0, x[1]], [x[2], 1.0]]), "np.linalg.inv", autograd=False
    ),  # fmt: skip
    Case(
        "linalg.solve",
        lambda np, x: np.linalg.solve([[2.0, x[0]], [x[1], 3.0]], [x[2], 1.0]),
        "np.linalg.solve",
        autograd=False,
    ),  # fmt: skip
    Case(
        "linalg.slogdet",
        lambda np, x: np.linalg.slogdet([[x[0] + 2.0, x[1]], [x[2], 1.0]])[1],
        "np.linalg.slogdet",
        autograd=False,
    ),  # fmt: skip
    Case(
        "linalg.eigvalsh",
        lambda np, x: np.linalg.eigvalsh([[x[0], x[1]], [x[1], x[2] + 3.0]]),
        "np.linalg.eigvalsh",
        autograd=False,
    ),  # fmt: skip
    Case(
        "linalg.multi_dot", lambda np, x: np.linalg.multi_dot([[[x[0], x[1]]], [[x[2]], [1.0]]]), "np.linalg.multi_dot"
    ),  # fmt: skip
    Case("fft.fft of a list", lambda np, x: np.fft.fft([x[0], x[1], x[2]]), "np.fft.fft", autograd=False),
]
IDS = [c.name for c in CASES]


def _loss(np, case):
    """A real scalar of the case's result, weighted so that every element of it counts differently."""

    def loss(x):
        y = case.fn(np, x)
        w = numpy.linspace(0.5, 1.5, numpy.size(numpy.asarray(_value(y)))).reshape(numpy.shape(_value(y)))
        return np.sum(w * np.real(y)) + np.sum(w * np.imag(y))

    return loss


def _value(y):
    return y.data if isinstance(y, tg.Tensor) else getattr(y, "_value", y)  # autograd's boxes hold _value


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tapegrad_numpy_records_tensors_inside_lists(case):
    loss = _loss(tnp, case)
    g = tg.grad(loss)(X)
    assert numpy.any(g != 0)  # never the silent zero of a constant
    assert tg.gradcheck(loss, X)


@pytest.mark.parametrize("case", [c for c in CASES if c.autograd], ids=[c.name for c in CASES if c.autograd])
def test_tapegrad_numpy_gives_autograds_gradient(case):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # autograd's "r_ is slow for array inputs"
        expected = autograd.grad(_loss(anp, case))(X)
    numpy.testing.assert_allclose(tg.grad(_loss(tnp, case))(X), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_numpys_own_functions_record_raise_naming_the_function_or_warn_never_a_silent_constant(case):
    loss = _loss(numpy, case)
    if case.numpy == "records":
        with warnings.catch_warnings():
            warnings.simplefilter("error", tg.TapeEscapeWarning)
            numpy.testing.assert_allclose(tg.grad(loss)(X), tg.grad(_loss(tnp, case))(X), rtol=1e-12)
    elif case.numpy == "warns":  # NumPy's C code converts it, as np.asarray(t) does: inside grad's function
        # that raises at the conversion, rather than return zeros (a record() block warns, below)
        with pytest.raises(tg.TapeError, match=r"^np\.asarray\(t\).* inside a function given to a transform"):
            tg.grad(loss)(X)
        x = tg.Tensor(X, requires_grad=True)
        with tg.record(), pytest.warns(tg.TapeEscapeWarning, match="gradients do not flow"):
            loss(x)
    else:
        name = case.numpy.replace(".", r"\.")
        with pytest.raises(TypeError, match=rf"^{name} converted a tensor being recorded.*tapegrad\.numpy"):
            tg.grad(loss)(X)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_on_arrays_and_numbers_tapegrad_numpy_gives_numpys_answer(case):
    got, expected = case.fn(tnp, X), case.fn(numpy, X)
    assert not isinstance(got, tg.Tensor)
    numpy.testing.assert_array_equal(got, expected)


def test_tgs_own_ops_refuse_a_list_holding_tensors_naming_the_op():
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        with pytest.raises(TypeError, match=r"^exp: an input is a list holding tensors.*tg\.stack"):
            tg.exp([x[0], x[1]])
        with pytest.raises(TypeError, match=r"^concatenate: an input is a list holding tensors"):
            tg.concatenate([x, [x[0]]])
        y = (tg.concatenate([x, [1.0]]) * tg.add(x, [1.0, 2.0, 3.0]).sum()).sum()  # lists of numbers are arrays
    y.backward()
    numpy.testing.assert_allclose(x.grad, (X + [1, 2, 3]).sum() + (X.sum() + 1.0))


def test_a_masked_array_input_is_refused_naming_the_op():
    # NumPy's functions skip a masked array's masked entries, its rules would not: x * m had the value of m's data
    # and the gradient of m's masked entries left as g, silently. The tape stays usable after the refusal
    m = numpy.ma.masked_array([10.0, 20.0, 30.0], mask=[0, 1, 0])
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        for fn, name in ((lambda: x * m, "multiply"), (lambda: tg.exp(m), "exp"), (lambda: tg.add(x, m), "add")):
            with pytest.raises(TypeError, match=rf"^{name}: an input is a masked array.*filled"):
                fn()
        y = (x * m.filled(0.0)).sum()
    y.backward()
    numpy.testing.assert_array_equal(x.grad, [10.0, 0.0, 30.0])


def test_the_error_inside_numpy_leaves_the_tape_usable():
    x = tg.Tensor(X, requires_grad=True)
    with tg.record():
        with pytest.raises(TypeError, match="np.linalg.norm"):
            numpy.linalg.norm([x[0], x[1]])
        y = tnp.linalg.norm([x[0], x[1]])
    y.backward()
    numpy.testing.assert_allclose(x.grad, [X[0] / numpy.hypot(X[0], X[1]), X[1] / numpy.hypot(X[0], X[1]), 0.0])


def test_real_numpy_on_a_tensor_outside_record_or_on_a_constant_is_numpys_answer():
    x = tg.Tensor(X, requires_grad=True)
    assert numpy.sum([x[0], x[1]]) == pytest.approx(X[0] + X[1])  # nothing records: no gradient to lose
    with tg.record():
        c = tg.Tensor(X)  # a constant: nothing to lose either
        assert numpy.sum([c[0], c[1]]) == pytest.approx(X[0] + X[1])
        numpy.testing.assert_array_equal(numpy.r_[c, c], numpy.r_[X, X])


def test_r_and_c_follow_numpys_rules():
    x, a = tg.Tensor(X), numpy.ones(3)
    keys = [(x, 1.0), (x, 0.0, slice(0, 3)), ("0,2", x, x), ("1,2,0", x, a), ("-1", x, a), (x, slice(0, 1, 3j))]
    for key in keys:
        expected = numpy.r_[tuple(k.data if isinstance(k, tg.Tensor) else k for k in key)]
        got = tnp.r_[key]
        assert isinstance(got, tg.Tensor) and got.dtype == expected.dtype and got.shape == expected.shape
        numpy.testing.assert_array_equal(got.data, expected)
    numpy.testing.assert_array_equal(tnp.c_[x, 2 * x].data, numpy.c_[X, 2 * X])
    row = tg.Tensor(X[None])
    numpy.testing.assert_array_equal(tnp.c_[row, 0, 0, row].data, numpy.c_[X[None], 0, 0, X[None]])
    assert tnp.r_[tg.Tensor([1, 2]), 3].dtype == numpy.r_[numpy.array([1, 2]), 3].dtype  # integers stay integers
    with pytest.raises(TypeError, match=r"np\.r_\['r', \.\.\.\] builds a np\.matrix"):
        tnp.r_["r", x, x]
    with pytest.raises(ValueError, match="special directives must be the first entry"):
        tnp.r_[x, "0"]


# -- every function of tapegrad.numpy, its array inputs given as nested lists of tensors --------------------------
STRUCTURE = {"block"}  # its nested lists are its structure: a list in place of an array means something else


def _differentiable():
    from benchmarks import coverage
    from benchmarks.coverage_probes import Arrays

    names = []
    for name in coverage.numpy_functions():
        try:
            status, _ = coverage.probe_tapegrad(name, Arrays())
        except Exception:  # noqa: BLE001  (what the coverage table records; not this test's subject)
            continue
        if status == "differentiable" and name not in STRUCTURE and name not in coverage.RAISING:  # eig's phase
            names.append(name)
    return sorted(names)


def _as_lists(t):
    """A tensor as nested Python lists of its elements, each element a recorded slice of it."""
    return t if t.ndim == 0 else [_as_lists(t[i]) for i in range(t.shape[0])]


@pytest.mark.parametrize("name", _differentiable())
def test_every_function_records_its_inputs_given_as_nested_lists_of_tensors(name):
    from benchmarks import coverage
    from benchmarks.coverage_probes import Arrays

    args, kwargs = coverage.probe_args(name, tnp, Arrays())
    found = []
    skeleton = coverage._leaves(args, found)
    f = coverage._resolve(tnp, name)

    def total(lists):
        def fn(*xs):
            values = [_as_lists(x) if lists else x for x in xs]
            out = 0.0
            for k, o in enumerate(coverage._outputs(f(*coverage._filled(skeleton, values), **kwargs))):
                if isinstance(o, tg.Tensor) and numpy.issubdtype(o.dtype, numpy.inexact):
                    w = numpy.cos(numpy.arange(o.size) * 0.7 + k).reshape(o.shape)
                    out = out + (w * tnp.real(o)).sum() + (w * tnp.imag(o)).sum() / 2
            return out

        return fn

    nums = tuple(range(len(found)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # row_stack
        expected = tg.grad(total(False), argnums=nums)(*found)
        got = tg.grad(total(True), argnums=nums)(*found)
    for g, e in zip(got, expected):
        numpy.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
