"""What tapegrad's functions return on plain arrays, across the op table: ``tapegrad.numpy`` returns what NumPy
returns (an array, or NumPy's scalar for a full reduction), inside ``record()`` or not; ``tg.*`` returns a
Tensor, whatever its inputs (docs/guide/numpy.md, "Which type comes back"); the transforms return arrays."""

import contextlib

import numpy as np
import pytest
from op_table import OPS, draw_values, op_of

import tapegrad as tg
import tapegrad.numpy as tnp


def _direct_rows():
    """Each row whose function is the op's own public one, with its first example, and the NumPy name the op
    has in tapegrad.numpy (None where NumPy has no function of that name)."""
    rows = []
    for case in OPS:
        op = op_of(case)
        if op is None or case.fn is not op.function or not case.examples:
            continue
        shapes, kwargs = case.examples[0]
        name = op.function.__name__
        rows.append((case, shapes, kwargs, name if hasattr(np, name) and hasattr(tnp, name) else None))
    return rows


ROWS = _direct_rows()


def _arrays(case, shapes):
    rng = np.random.default_rng(0)
    return [draw_values(rng, s, case.domain) for s in shapes]


def test_the_table_covers_the_ops_numpy_names():
    assert len(ROWS) > 60 and sum(name is not None for *_, name in ROWS) > 40


@pytest.mark.parametrize("case,shapes,kwargs,name", ROWS, ids=[r[0].name for r in ROWS])
def test_on_plain_arrays_tapegrad_numpy_returns_numpy_s_type_and_tg_returns_a_tensor(case, shapes, kwargs, name):
    arrays = _arrays(case, shapes)
    for recording in (False, True):
        with tg.record() if recording else contextlib.nullcontext():
            out = case.fn(*arrays, **kwargs)
            assert isinstance(out, tg.Tensor), f"tg.{case.name} on arrays returned {type(out).__name__}"
            if name is None:
                continue
            expected = getattr(np, name)(*arrays, **kwargs)
            got = getattr(tnp, name)(*arrays, **kwargs)
        assert type(got) is type(expected), f"tnp.{name} returned {type(got).__name__}, NumPy {type(expected).__name__}"
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_the_transforms_and_the_conveniences_return_arrays_on_arrays():
    x = np.array([0.5, -1.0])
    for result in (
        tg.grad(lambda x: tg.sum(tg.tanh(x)))(x),
        tg.elementwise_grad(tg.tanh)(x),
        tg.jacobian(tg.tanh)(x),
        tg.flatten({"a": x})[0],
        tg.fixed_point(lambda a: lambda y: 0.5 * (y + a / y), x**2 + 1, np.ones(2)),
    ):
        assert type(result) is np.ndarray
