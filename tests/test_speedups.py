"""The compiled hot path (``TAPEGRAD_SPEEDUPS=1``, ``tapegrad/core/native.c``) is the pure engine's twin.

- Recorded programs (hypothesis): the C fast paths write the same entries as the Python ones (op, inputs,
  saved values, output, broadcast shapes, mask), and the C walk gives the same gradients, to the bit, on every
  combination (Python or C recording, Python or C walk).
- Errors: a failed forward raises what the Python raises, and after it the tape goes on.
- The engine's own tests run again in a process with ``TAPEGRAD_SPEEDUPS=1``.
- Asking for it where it was not built, or was built from an older ``native.c``, warns and runs the pure path.

Where the extension is not built (no C compiler when the package was installed) these tests are skipped, except
under CI with a C compiler, where a missing build fails.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tapegrad as tg
from tapegrad import speedups
from tapegrad.core import record, replay

ROOT = pathlib.Path(__file__).resolve().parents[1]
native = speedups.built()


def test_the_extension_is_built_where_ci_has_a_compiler():
    if os.environ.get("CI") and shutil.which("cc") and native is None:
        pytest.fail("CI has a C compiler but tapegrad.core.native was not built: see setup.py's build output")
    if native is None:
        pytest.skip("tapegrad.core.native is not built (no C compiler when the package was installed)")
    assert callable(native.record_binary) and callable(native.walk_plain)


needs_native = pytest.mark.skipif(native is None, reason="tapegrad.core.native is not built")


@pytest.fixture(scope="module")
def bound():
    """The compiled module, handed the engine's helpers (as the engine does on import with TAPEGRAD_SPEEDUPS=1)."""
    record.bind_native(native)
    replay.bind_native(native)
    return native


UNARY = ["tanh", "exp", "negative", "sin", "square", "relu", "sqrt", "abs"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "power"]
# Shapes that broadcast together; the large ones reach replay._add's in-place accumulation (1,024 elements and
# more), which counts references, so the C walk must hold what the Python walk holds.
SHAPES = ([(), (3,), (2, 3), (1, 3), (2, 1)], [(), (2048,), (2, 2048), (1, 2048), (2, 1)])


@st.composite
def programs(draw):
    """Inputs (leaves needing a gradient or not, constants as arrays or numbers) and steps on them."""
    inputs, shapes = [], draw(st.sampled_from(SHAPES))
    for _ in range(draw(st.integers(1, 3))):
        shape = draw(st.sampled_from(shapes))
        kind = draw(st.sampled_from(["leaf", "leaf", "frozen", "array", "number"]))
        inputs.append((kind, shape, draw(st.integers(0, 2**16))))
    steps = []
    for k in range(draw(st.integers(1, 8))):
        n = len(inputs) + k
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(UNARY)), draw(st.integers(0, n - 1))))
        else:
            steps.append((draw(st.sampled_from(BINARY)), draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
    return inputs, steps


def make_inputs(inputs):
    made = []
    for kind, shape, seed in inputs:
        value = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
        if kind == "number":
            made.append(float(value.flat[0]))
        elif kind == "array":
            made.append(value)
        else:
            made.append(tg.Tensor(value, requires_grad=kind == "leaf"))
    return made


def python_call(name, *args):
    return getattr(tg, name)(*args)


def native_call(name, *args):
    op = getattr(tg, name).op
    t = native.record_unary(op, *args) if len(args) == 1 else native.record_binary(op, *args)
    return tg.core.apply(op, args, {}) if t is None else t


def run(program, call):
    """The program's values, its tape's records (inputs as positions among the values), and the loss."""
    inputs, steps = program
    values = make_inputs(inputs)
    with tg.record(persistent=True) as tape:
        for name, *where in steps:
            values.append(call(name, *[values[i] for i in where]))
        parts = [v for v in values if isinstance(v, tg.Tensor) and v.requires_grad]
        loss = tg.add(parts[0].sum(), parts[-1].mean()) if parts else None
    key = {}
    for i, v in enumerate(values):
        if isinstance(v, tg.Tensor):
            key[id(v._node if v._node is not None else v)] = i
    records = [
        (
            e.op,
            tuple(None if s is None else key.get(id(s), "loss") for s in e.inputs),
            e.saved,
            e.output,
            e.shapes,
            dict(e.params),
            e.needs_grad,
        )
        for e in tape.entries
    ]
    return values, records, loss, tape


def same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return type(a) is type(b) and (a == b or repr(a) == repr(b))  # a Shape: by its shape and dtype


def gradients(program, call, walk):
    """The leaves' gradients, recorded by ``call`` and replayed by ``walk`` (the compiled module, or None)."""
    values, _, loss, tape = run(program, call)
    if loss is None:
        return []
    engine = replay._NATIVE[0]
    replay._NATIVE[0] = walk  # the slot replay() reads, on each call, to choose the walk
    try:
        loss.backward()
    finally:
        replay._NATIVE[0] = engine
    return [v.grad for v in values if isinstance(v, tg.Tensor) and v.requires_grad]


@needs_native
@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_the_compiled_fast_paths_record_what_the_python_ones_record(bound, program):
    with np.errstate(all="ignore"):
        pv, python_records, _, _ = run(program, python_call)
        nv, native_records, _, _ = run(program, native_call)
    assert len(python_records) == len(native_records)
    for p, n in zip(python_records, native_records):
        assert same(p, n), (p, n)
    for p, n in zip(pv, nv):
        if isinstance(p, tg.Tensor):
            assert same(p.data, n.data) and p.requires_grad == n.requires_grad


@needs_native
@settings(max_examples=40, deadline=None)
@given(program=programs())
def test_the_compiled_walk_gives_the_python_walks_gradients_to_the_bit(bound, program):
    with np.errstate(all="ignore"):
        reference = gradients(program, python_call, None)
        for call, walk in [(python_call, bound), (native_call, None), (native_call, bound)]:
            got = gradients(program, call, walk)
            assert len(got) == len(reference)
            for r, g in zip(reference, got):
                assert same(r, g), (r, g)


@needs_native
def test_a_failed_forward_raises_what_the_python_raises_and_the_tape_goes_on(bound):
    x = tg.Tensor(np.ones(2), requires_grad=True)
    errors = []
    with tg.record() as tape:
        for call in (python_call, native_call):
            with pytest.raises(ValueError) as err:
                call("add", x, np.ones(3))
            errors.append(err.value)
        loss = native_call("multiply", x, x).sum()
    assert [str(e) for e in errors] == [str(errors[0])] * 2 and "add of inputs with shapes (2,), (3,)" in str(errors[0])
    assert all(e.__cause__ is None and e.__suppress_context__ for e in errors)
    assert [e.op for e in tape.entries] == ["multiply", "sum"]
    loss.backward()
    np.testing.assert_array_equal(x.grad, 2 * np.ones(2))


@needs_native
def test_a_method_is_its_rows_function_where_c_does_not_record(bound):
    add = native.method(tg.add.op, tg.add, 2, False)
    radd = native.method(tg.subtract.op, lambda a, b: tg.subtract(b, a), 2, True)
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with tg.record():
        loss = (add(x, 1.0) * radd(x, 5.0)).sum()
    loss.backward()
    for f in (add, tg.add):  # with a keyword: the Python function's answer
        with pytest.raises(TypeError) as err:
            f(x, 1.0, bogus=1)
        assert "bogus" in str(err.value)
    np.testing.assert_array_equal(x.grad, (5.0 - x.data) - (x.data + 1.0))
    assert add.__doc__ == tg.add.__doc__ and add.__wrapped__ is tg.add and add.op is tg.add.op
    assert add.__get__(x, tg.Tensor)(2.0).data.tolist() == [3.0, 4.0]


# The engine's own tests, on what the compiled paths touch: the tape's life cycle and errors, the edge cases,
# memory after backward(), several outputs (called back), and the contract (no silent escape). The whole suite
# passes with TAPEGRAD_SPEEDUPS=1 too (`TAPEGRAD_SPEEDUPS=1 python -m pytest`); these keep CI's run short.
ENGINE_TESTS = [
    "tests/test_tape.py",
    "tests/test_edges.py",
    "tests/test_memory.py",
    "tests/test_several_outputs.py",
    "tests/test_contract.py",
]


@needs_native
def test_the_engines_tests_pass_with_the_compiled_hot_path():
    env = {**os.environ, "TAPEGRAD_SPEEDUPS": "1"}
    args = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", *ENGINE_TESTS]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


@pytest.mark.parametrize(
    "stand_in, why",
    [
        ("None", "was not built"),
        ("types.SimpleNamespace(SOURCE='0' * 16)", "was built from an older tapegrad/core/native.c"),
    ],
    ids=["not built", "stale"],
)
def test_asking_for_it_where_it_was_not_built_or_is_stale_warns_and_the_pure_path_runs(stand_in, why):
    code = (
        "import sys, types, warnings\n"
        f"sys.modules['tapegrad.core.native'] = {stand_in}\n"
        "warnings.simplefilter('error')\n"
        "try:\n    import tapegrad\nexcept RuntimeWarning as w:\n    print('warned:', w)\n"
        "warnings.simplefilter('ignore'); import tapegrad as tg, tapegrad.speedups as s\n"
        "x = tg.Tensor([1.0], requires_grad=True)\n"
        "with tg.record():\n    y = (x * x).sum()\n"
        "y.backward(); print(s.ENABLED, x.grad.tolist())"
    )
    env = {**os.environ, "TAPEGRAD_SPEEDUPS": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"warned: TAPEGRAD_SPEEDUPS=1, but tapegrad's compiled hot path (tapegrad.core.native) {why}" in done.stdout
    assert done.stdout.strip().endswith("False [2.0]")


@needs_native
def test_the_build_here_is_of_the_source_beside_it():
    assert not speedups.stale(native), "tapegrad/core/native.c changed since the last install: pip install -e ."
    assert speedups.stale(types.SimpleNamespace(SOURCE="0" * 16))
