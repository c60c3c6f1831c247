"""The package's layers, checked from the source: no import cycle, each module imports only from its own layer
or below, and no tapegrad module is imported inside a function (a lazy import hides a dependency).

Every import counts, top-level or not, read from each module's syntax tree (nothing is imported). ``from . import
x`` in a submodule imports the package it names, as Python does, so it counts as an import of that package's
``__init__``. The layers are docs/architecture.md's; a new module must be given one here.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tapegrad"

# From the ground up; a module may import from its own layer (without a cycle) and below. Longest prefix wins.
LAYERS = {
    "tapegrad.errors": 0,  # exceptions, warnings and the helpers their messages share
    "tapegrad._html": 1,  # the pieces of rich displays (HTML tables, arrays, SVG), escaped
    "tapegrad.backend": 1,  # array libraries and one helper per fact about arrays
    "tapegrad._shapes": 1,  # Shape, unbroadcast
    "tapegrad._state": 2,  # per-context recording state, the version clock
    "tapegrad._tensor": 3,  # the Tensor data class
    "tapegrad._tree": 3,  # pytrees
    "tapegrad._batched": 3,  # the tensors vmap gives f
    "tapegrad.lazy": 3,  # tg.compute: lazy (Dask) values made concrete in one pass
    "tapegrad.core": 4,  # nodes and records, recording, replay, hooks, the base tape
    "tapegrad.registry": 5,  # defop and the op registry
    "tapegrad.rule_checks": 5,  # the checks on rules written outside tapegrad
    "tapegrad.speedups": 5,  # TAPEGRAD_SPEEDUPS=1: fills the core's slots for its compiled hot path
    "tapegrad.custom": 5,
    "tapegrad.ops": 6,  # the op tables by family
    "tapegrad.tensor_methods": 6,  # Tensor's operators and methods, bound from one table
    "tapegrad.linalg": 6,  # namespaces of ops
    "tapegrad.fft": 6,
    "tapegrad.random": 6,  # draws as ops
    "tapegrad.debug": 7,  # the tools, attached through the core's extension interface
    "tapegrad.budget": 7,
    "tapegrad.viz": 7,
    "tapegrad.recompute": 7,
    "tapegrad.profiler": 7,  # tg.profile: the op probe and a replay observer
    "tapegrad.tape": 8,  # the tape users meet: record(), Tape with its views
    "tapegrad._scope": 9,  # transforms and testing, on top of tapes
    "tapegrad.transforms": 9,
    "tapegrad.forward": 9,  # forward mode: tangents alongside the forward, one rule per op
    "tapegrad.batching": 9,  # vmap: one batching rule per op
    "tapegrad._closure": 9,  # a closure's tensors that a tape outside differentiates, taken over as inputs
    "tapegrad.testing": 9,
    "tapegrad.convenience": 9,
    "tapegrad.strategies": 9,
    "tapegrad.compile": 9,
    "tapegrad.explorer": 9,  # tg.explore: a tape and its replay as a page, compiled programs beside them
    "tapegrad.numpy": 10,  # NumPy's namespace over tapegrad's ops and transforms
    "tapegrad.scipy": 10,  # SciPy's namespaces over tapegrad's ops and transforms
    "tapegrad.nn": 10,  # training, on the public ops and transforms
    "tapegrad.optim": 10,
    "tapegrad.data": 10,
    "tapegrad.serialization": 10,
    "tapegrad": 11,  # the package face
}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: pathlib.Path = PACKAGE) -> dict:
    """Module name -> source, for every module of the package."""
    found = {module_name(p): p.read_text() for p in sorted(root.rglob("*.py"))}
    # an extension module compiled from C (core/native.c) imports no module of the package: it is handed objects
    return {**{module_name(p): "" for p in sorted(root.rglob("*.c"))}, **found}


def imports_of(name: str, source: str, known: set, is_package: bool) -> list:
    """``(imported module, line, inside a function)`` for every import of a module in ``known``."""
    package = name if is_package else name.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                targets = [mod] + [f"{mod}.{a.name}" for a in child.names]
            else:
                visit(child, inner)
                continue
            for t in targets:
                while t and t not in known:  # `from .x import name`: the module is x, not x.name
                    t = t.rpartition(".")[0]
                if t and t != name:
                    found.append((t, child.lineno, in_function))

    visit(ast.parse(source), False)
    return found


def graph(mods: dict) -> dict:
    known = set(mods)
    return {
        m: imports_of(m, src, known, is_package=any(k.startswith(m + ".") for k in known) or m == "tapegrad")
        for m, src in mods.items()
    }


def cycles(g: dict) -> list:
    """The import cycles of graph ``g`` (strongly connected components of more than one module)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _, _ in g.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            strong(v)
    return out


def layer_of(module: str) -> int | None:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len, default=None)
    return None if best is None else LAYERS[best]


def test_there_is_no_import_cycle():
    found = cycles(graph(modules()))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_every_module_has_a_layer_and_imports_only_from_its_layer_or_below():
    g = graph(modules())
    missing = sorted(m for m in g if layer_of(m) is None)
    assert not missing, f"modules without a layer (add them to LAYERS and docs/architecture.md): {missing}"
    upward = [
        f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)}) at line {line}"
        for m, edges in g.items()
        for t, line, _ in edges
        if layer_of(t) > layer_of(m)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_no_public_name_of_the_package_hides_a_module_of_the_same_name():
    # `tg.tensor` (the function) once hid the module tapegrad/tensor.py: `import tapegrad.tensor as m` gave the
    # function, and the API pages could not tell them apart. A module that shares a public name must be that name.
    import importlib
    import pkgutil

    import tapegrad

    names = [info.name for info in pkgutil.iter_modules(tapegrad.__path__) if not info.name.startswith("_")]
    public = {name: getattr(tapegrad, name) for name in names if hasattr(tapegrad, name)}  # before any import
    hidden = [
        f"tapegrad.{name} is {value!r}, not the module tapegrad/{name}"
        for name, value in public.items()
        if value is not importlib.import_module(f"tapegrad.{name}")
    ]
    assert not hidden, "\n".join(hidden)


def test_no_tapegrad_module_is_imported_inside_a_function():
    lazy = [f"{m}:{line} imports {t}" for m, edges in graph(modules()).items() for t, line, inner in edges if inner]
    assert not lazy, (
        "function-local imports of tapegrad modules (import at the top, from a lower layer):\n" + "\n".join(lazy)
    )


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({"tapegrad.a": "from .b import x\n", "tapegrad.b": "from .a import y\n"}, [["tapegrad.a", "tapegrad.b"]]),
        (
            {"tapegrad.a": "def f():\n    from .b import x\n", "tapegrad.b": "import tapegrad.a\n"},
            [["tapegrad.a", "tapegrad.b"]],
        ),
        ({"tapegrad.a": "from .b import x\n", "tapegrad.b": "import numpy\n"}, []),
    ],
    ids=["top-level", "function-local", "no-cycle"],
)
def test_the_cycle_check_finds_a_cycle_it_is_given(extra, expected):
    assert cycles(graph(extra)) == expected


def test_an_upward_import_in_the_real_package_would_be_reported():
    mods = modules()
    mods["tapegrad._tensor"] += "\nfrom .ops import add\n"  # the data class reaching up into the ops
    g = graph(mods)
    assert any("tapegrad._tensor" in c for c in cycles(g))
    assert any(t == "tapegrad.ops" and layer_of(t) > layer_of(m) for m, edges in g.items() for t, _, _ in edges)
