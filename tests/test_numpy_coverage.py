"""The coverage of NumPy's functions (docs/guide/numpy.md's table, ``python -m benchmarks.coverage``): the
committed table is what the command computes now, no function JAX differentiates is quietly a constant here,
nothing autograd differentiates is missing, and every NumPy function tapegrad composes of its ops has gradients
equal to finite differences on the probe inputs.

Computing the table also compares tapegrad's gradient with JAX's (kept in docs/numpy-jax.json) for every
function both differentiate: a difference without a reason in ``benchmarks.coverage.DIFFERENCES`` fails it."""

import json
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from benchmarks import coverage
from benchmarks.coverage_probes import NOT_PROBED, Arrays
from tapegrad.numpy._table import NOGRAD_FUNCTIONS, NOGRAD_UFUNCS


@pytest.fixture(scope="module")
def table():
    pytest.importorskip("autograd")
    return coverage.rows(json.loads(coverage.JAX_RUN.read_text()))


def test_the_committed_table_is_what_the_command_computes(table):
    page = coverage.PAGE.read_text()
    assert coverage.markdown(table) in page, "run python -m benchmarks.coverage --update-docs"


def test_nothing_jax_differentiates_is_a_constant_here(table):
    # JAX's gradient is not zero: tapegrad's must be on the tape, or the function must raise (missing, in place)
    quiet = [name for name, _, jx, status, _ in table if jx == "differentiable" and status == "no gradient"]
    assert not quiet, f"on the tape in JAX, constants in tapegrad: {quiet}"


def test_nothing_autograd_differentiates_is_missing(table):
    counts = coverage.counts(table)
    assert counts["autograd"] >= 120 and counts["autograd_missing"] == 0, counts
    assert counts["tapegrad_differentiable"] >= 200, counts


# Selections of repeated values (or of zeros, for trim_zeros): a finite-difference step splits the repeats and
# changes the result's size. Their gradients are compared with JAX's in the table instead.
TIES = {"unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "union1d", "intersect1d",
        "setdiff1d", "setxor1d", "trim_zeros"}  # fmt: skip
PASS_THROUGH = set(NOGRAD_FUNCTIONS) | set(NOGRAD_UFUNCS.split()) | NOT_PROBED


def _composed():
    """The NumPy functions tapegrad.numpy composes of ops (not an op of the same name), with their probes."""
    names = []
    for name, numpy_function in coverage.numpy_functions().items():
        f = tnp.implementation(numpy_function)
        if f is not None and getattr(f, "__module__", "").startswith("tapegrad.numpy") and name not in PASS_THROUGH:
            names.append(name)
    return sorted(set(names) - TIES - {"astype"})  # astype: a cast to float32 is an op, tested with the ops


@pytest.mark.parametrize("name", _composed())
def test_a_composed_function_gives_numpys_value_and_gradients_equal_to_finite_differences(name):
    status, _ = coverage.probe_tapegrad(name, Arrays())
    if status != "differentiable":
        pytest.skip(f"{name}: {status}")
    args, kwargs = coverage.probe_args(name, tnp, Arrays())
    found = []
    skeleton = coverage._leaves(args, found)
    f = coverage._resolve(tnp, name)

    def fn(*xs):  # every floating output, flattened (constants too: edges computed from a constant input)
        outs = [
            o if isinstance(o, tg.Tensor) else tg.Tensor(o)
            for o in coverage._outputs(f(*coverage._filled(skeleton, xs), **kwargs))
        ]
        outs = [tg.real(o) if np.iscomplexobj(o.data) else o for o in outs if np.issubdtype(o.dtype, np.inexact)]
        return tg.concatenate([tg.ravel(o) for o in outs])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # row_stack
        expected = [o for o in coverage._outputs(coverage._resolve(np, name)(*args, **kwargs))]
        expected = [np.asarray(o) for o in expected if np.issubdtype(np.asarray(o).dtype, np.inexact)]
        np.testing.assert_allclose(
            fn(*found).data, np.concatenate([np.real(e).ravel() for e in expected]), rtol=1e-10, atol=1e-12
        )
        assert tg.gradcheck(fn, *found)
