"""Every table of the package reads the ops' facts (``tapegrad.registry.Op``), so a new op shows up everywhere.

- the public functions (``tapegrad.ops``, the top level) are those of the family files; each NumPy name among
  them, and each of NumPy's other spellings of it, is ``tapegrad.numpy``'s; each one named as an ndarray method
  or attribute is a Tensor method or property, and so is each op declared ``method=``;
- every registered op compiles: ``tg.compile`` lowers it (``compile/kernels.LOWERINGS``) to the value and the
  gradient the eager op computes;
- the compiler compares no op's name and keeps no list of names; its lowering tables are keyed by ``Op``;
- a backend refuses exactly what an op's row says it refuses (``Op.refuses``).

(That an op runs on every backend, and its declared ``view`` and ``elementwise`` facts, are tests/test_ops.py's.)
"""

import pathlib
import re

import numpy as np
import pytest
from op_table import OPS, draw_values, op_of

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile.kernels import LOWERINGS
from tapegrad.core.record import apply, apply_nondiff, apply_several
from tapegrad.numpy._table import MAIN, numpy_aliases
from tapegrad.registry import Op
from tapegrad.tensor_methods import METHODS, PROPERTIES

ROOT = pathlib.Path(__file__).resolve().parents[1]
ALL_OPS = {**tg.REGISTRY, **tg.NONDIFF}


def test_every_public_function_named_as_numpy_names_it_is_tapegrads_numpy():
    constructors = set(tg.ops.creation.CONSTRUCTORS)
    named = [n for n in tg.ops.__all__ if hasattr(np, n) and getattr(tg.ops, n) not in constructors]
    missing = [n for n in named if n not in MAIN]
    assert len(named) > 150 and not missing, f"NumPy names tapegrad.numpy lacks: {missing}"
    spellings = [alias for _, alias in numpy_aliases(named)]
    assert {"acos", "pow", "concat", "bitwise_not"} <= set(spellings)
    assert not [a for a in spellings if a not in MAIN], "NumPy 2's other spellings of tapegrad's functions"
    x = tg.Tensor([0.5, 0.25], requires_grad=True)
    with tg.record():
        y = np.acos(x).sum()  # NumPy's own function, on a tensor: tapegrad's arccos
    y.backward()
    np.testing.assert_allclose(x.grad, -1 / np.sqrt(1 - np.array([0.5, 0.25]) ** 2))
    assert tnp.acos is tnp.arccos and tnp.implementation(tnp.acos) is tg.arccos  # one wrapper of NumPy's ufunc


def test_every_public_function_named_as_an_ndarray_method_is_a_tensor_method():
    for name in tg.ops.__all__:
        kind = type(getattr(np.ndarray, name, None)).__name__
        if kind == "method_descriptor":
            assert name in METHODS, f"ndarray.{name} exists, Tensor.{name} does not"
        elif kind == "getset_descriptor":
            assert name in PROPERTIES, f"ndarray.{name} exists, Tensor.{name} does not"
    declared = {op.function.__name__ if op.method is True else op.method for op in ALL_OPS.values() if op.method}
    assert {"exp", "abs", "softmax", "broadcast_to"} <= declared <= set(METHODS)
    x = tg.Tensor([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(x.partition(1).data, np.partition(x.data, 1))  # a copy, as x.sort()
    np.testing.assert_array_equal(x.data, [3.0, 1.0, 2.0])


def _first_call(op):
    """(args, params) of the first call a row of ``op`` makes of its forward, on NumPy float64 inputs."""
    forward, calls = op.forward, []

    def spy(*args, **params):
        calls.append((args, params))
        return forward(*args, **params)

    for case in [c for c in OPS if op_of(c) is op]:
        shapes, kwargs = case.examples[0]
        rng = np.random.default_rng(0)
        op.forward = spy
        try:
            case.fn(*[tg.Tensor(draw_values(rng, s, case.domain)) for s in shapes], **kwargs)
        finally:
            op.forward = forward
        if calls:
            return calls[0]
    return None


# each op its rows run (a function composed of ops may reach an op only for some inputs: full_like of a tensor)
_TESTED = sorted({case.name for case in OPS if op_of(case) is not None})
CALLS = {name: call for name in _TESTED if (call := _first_call(ALL_OPS[name])) is not None}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_op_compiles_to_its_eager_value_and_gradient(name):
    op = ALL_OPS[name]
    args, params = CALLS[name]
    slots = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    run = (apply_several if op.outputs else apply) if name in tg.REGISTRY else apply_nondiff
    if op.outputs:  # several outputs: each compiled and differentiated, through a loss of them all
        _compiles_with_several_outputs(op, run, args, params, slots)
        return

    def f(*arrays):
        xs = list(args)
        for i, a in zip(slots, arrays):
            xs[i] = a
        return run(op, tuple(xs), params)

    arrays = [args[i] for i in slots]
    eager = f(*[tg.Tensor(a) for a in arrays]).data
    compiled = tg.compile(f)
    for _ in range(2):  # the traced call, then the program (checked against the function run eagerly)
        np.testing.assert_allclose(compiled(*arrays), eager, rtol=1e-12, atol=1e-300)
    wrt = tuple(k for k, i in enumerate(slots) if i < len(op.differentiable) and op.differentiable[i])
    wrt = wrt if not op.variadic else tuple(range(len(slots)))
    if name not in tg.REGISTRY or not wrt or np.asarray(eager).dtype.kind not in "fc":
        return
    w = np.random.default_rng(1).standard_normal(np.shape(eager))

    def loss(*xs):
        out = f(*xs) * w
        return tg.real(out).sum() if out.dtype.kind == "c" else out.sum()

    grad = tg.grad(loss, argnums=wrt)
    expected = grad(*[np.asarray(a, dtype=np.float64) if a.dtype.kind != "c" else a for a in arrays])
    step = tg.compile(grad)
    for _ in range(2):
        for got, want in zip(step(*arrays), expected):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _compiles_with_several_outputs(op, run, args, params, slots):
    def f(*arrays):
        xs = list(args)
        for i, a in zip(slots, arrays):
            xs[i] = a
        return run(op, tuple(xs), params)

    arrays = [args[i] for i in slots]
    eager = [t.data for t in f(*[tg.Tensor(a) for a in arrays])]
    assert len(eager) == len(op.outputs)
    compiled = tg.compile(f)
    for _ in range(2):
        for got, want in zip(compiled(*arrays), eager, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(np.shape(e)) for e in eager]

    def loss(*xs):  # |out|^2 of each output: no arbitrary sign or phase of a vector changes it
        return sum(tg.sum(tg.real(out * tg.conj(out)) * w) for out, w in zip(f(*xs), weights))

    grad = tg.grad(loss, argnums=tuple(range(len(slots))))
    expected = grad(*arrays)
    step = tg.compile(grad)
    for _ in range(2):
        for got, want in zip(step(*arrays), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_every_registered_op_is_lowered_by_the_compiler():
    missing = sorted(set(tg.REGISTRY) - set(CALLS))
    assert not missing, f"no row runs these ops, so nothing checks that they compile: {missing}"


def test_the_compiler_compares_no_op_name_and_keys_its_lowerings_by_op():
    pattern = re.compile(r'(name|\.name) *(==|!=) *"[a-z_]+"|name in \("|fn is (not )?np\.|FRESH')
    found = [
        f"{path.name}:{k}: {line.strip()}"
        for path in sorted((ROOT / "tapegrad" / "compile").glob("*.py"))
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "op names in the compiler (key its tables by the Op instead):\n" + "\n".join(found)
    assert LOWERINGS and all(isinstance(op, Op) for table in LOWERINGS.values() for op in table)


def test_a_backend_refuses_what_the_ops_row_says_it_cannot_run():
    refused = {name: op.refuses for name, op in ALL_OPS.items() if op.refuses}
    assert {"solve", "heaviside", "argsort", "pad"} <= set(refused)
    calls = {"x": 0}

    def forward(x):
        calls["x"] += 1
        return x

    stub = Op("refused_demo", forward, refuses={"stand_in": "it has no such function"})
    backend = tg.backend.Backend("stand_in", np, np)
    with pytest.raises(NotImplementedError, match="refused_demo: the stand_in backend cannot run it .it has no such"):
        backend.forward(stub)(np.ones(2))
    assert calls["x"] == 0
    assert tg.backend.NUMPY.forward(stub)(np.ones(2)) is not None  # NumPy is not refused
