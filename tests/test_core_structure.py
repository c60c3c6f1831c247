"""The core stays readable, checked from the source: small functions, one owner for the tape's state, no private
names passed between its files.

- Every function in ``tapegrad/core/`` has a McCabe complexity of at most 12 (ruff's C901, counted here from the
  syntax tree as ruff counts it, and compared with ruff itself where it is installed) and at most 60 lines.
- No module of ``tapegrad/core/`` imports a private name (``_x``) from another tapegrad module.
- ``BaseTape``'s private attributes (and its ``TapeRef``'s) are written by ``tapegrad/core/tape.py`` alone: the
  other files call its methods (the replay returns an outcome the tape applies).
"""

from __future__ import annotations

import ast
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORE = ROOT / "tapegrad" / "core"
PACKAGE = ROOT / "tapegrad"
MAX_COMPLEXITY = 12
MAX_LINES = 60


def decisions(statements) -> int:
    """The decision points in ``statements`` as ruff's C901 counts them: each ``if``/``elif``, loop and ``except``
    (and ``case``) adds one; a nested function adds one and its own; comprehensions, ``and``/``or`` and
    conditional expressions add none."""
    n = 0
    for s in statements:
        if isinstance(s, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            n += 1 + decisions(s.body) + decisions(s.orelse)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            n += len(s.handlers) + decisions(s.body) + decisions(s.orelse) + decisions(s.finalbody)
            n += sum(decisions(h.body) for h in s.handlers)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            n += decisions(s.body)
        elif isinstance(s, ast.Match):
            n += len(s.cases) + sum(decisions(c.body) for c in s.cases)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n += 1 + decisions(s.body)
        elif isinstance(s, ast.ClassDef):
            n += decisions(s.body)
    return n


def functions(path: pathlib.Path):
    """``(qualified name, line, complexity, lines)`` for every function of a module, nested ones included."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = child.end_lineno - child.lineno + 1
                found.append((prefix + child.name, child.lineno, 1 + decisions(child.body), lines))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:  # a function defined inside an if, a loop, a with...
                visit(child, prefix)

    visit(ast.parse(path.read_text()), "")
    return found


def core_functions():
    return {(p.name, name, line): (cx, n) for p in sorted(CORE.glob("*.py")) for name, line, cx, n in functions(p)}


def test_every_core_function_is_small():
    too_big = [
        f"core/{file}:{line} {name}: complexity {cx}, {n} lines"
        for (file, name, line), (cx, n) in core_functions().items()
        if cx > MAX_COMPLEXITY or n > MAX_LINES
    ]
    assert not too_big, (
        f"functions in tapegrad/core/ above complexity {MAX_COMPLEXITY} or {MAX_LINES} lines; split them into "
        "functions that each do one step:\n" + "\n".join(too_big)
    )


def test_the_counter_finds_a_function_that_is_too_complex(tmp_path):
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(MAX_COMPLEXITY))
    src = tmp_path / "m.py"
    src.write_text(f"def f(x):\n{branches}    return -1\n\n\ndef g(x):\n    return [y for y in x if y and x]\n")
    found = {name: cx for name, _, cx, _ in functions(src)}
    assert found == {"f": MAX_COMPLEXITY + 1, "g": 1}


@pytest.mark.skipif(shutil.which("ruff") is None and not (ROOT / ".venv/bin/ruff").exists(), reason="ruff is absent")
def test_the_complexity_counted_here_is_ruffs():
    ruff = shutil.which("ruff") or str(ROOT / ".venv/bin/ruff")
    out = subprocess.run(
        [ruff, "check", "--no-cache", "--select", "C901", "--config", "lint.mccabe.max-complexity=0"]
        + ["--output-format", "concise", str(CORE)],
        capture_output=True,
        text=True,
    ).stdout
    theirs = {}
    for line in out.splitlines():
        m = re.match(r".*/core/(\w+\.py):(\d+):\d+: C901 `(\w+)` is too complex \((\d+) > 0\)", line)
        if m:
            theirs[(m[1], int(m[2]))] = int(m[4])
    ours = {(file, line): cx for (file, _, line), (cx, _) in core_functions().items()}
    assert theirs and theirs == ours


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("tapegrad")):
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def test_no_private_name_is_imported_into_the_core():
    private = [
        f"core/{p.name}:{line} imports {name} from {'.' if module is None else module}"
        for p in sorted(CORE.glob("*.py"))
        for line, module, name in _imports(p)
        if name.startswith("_")
    ]
    assert not private, "give the name a public spelling in its module, or move the code:\n" + "\n".join(private)


def _tape_attributes() -> set:
    """The private attributes BaseTape sets on itself."""
    tree = ast.parse((CORE / "tape.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BaseTape")
    return {
        t.attr
        for n in ast.walk(cls)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        if t.attr.startswith("_")
    }


_MUTATORS = {"append", "pop", "extend", "clear", "update", "setdefault", "insert", "remove", "__setitem__"}


def writes_to(source: str, names: set) -> list:
    """Lines of ``source`` that write one of ``names`` as an attribute of any object (``x._entries = ...``,
    ``x._entries.append(...)``, ``x._upstream[k] = v``, ``x._ref.state = ...``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            targets = [node.func.value]
        for t in targets:
            while isinstance(t, (ast.Subscript, ast.Attribute)):
                if (
                    isinstance(t, ast.Attribute)
                    and t.attr in names
                    and not (isinstance(t.value, ast.Name) and t.value.id == "self")
                ):
                    found.append((node.lineno, t.attr))
                    break
                t = t.value
    return found


def test_the_tapes_state_is_written_by_its_own_file_alone():
    names = _tape_attributes()
    assert {"_entries", "_upstream", "_replays", "_ref", "_compact_at", "_differentiated"} <= names
    writes = [
        f"{p.relative_to(ROOT)}:{line} writes {attr}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p != CORE / "tape.py"
        for line, attr in writes_to(p.read_text(), names)
    ]
    assert not writes, "BaseTape's state is core/tape.py's: call one of its methods instead:\n" + "\n".join(writes)


def test_the_ownership_check_sees_each_kind_of_write():
    names = {"_entries", "_upstream", "_ref"}
    source = (
        "tape._entries.append(e)\n"
        "t._upstream[k] = v\n"
        "tape._ref.state = 'failed'\n"
        "x = tape._entries\n"
        "self._entries = []\n"
        "tape._entries.pop().rec = None\n"
    )
    assert sorted(line for line, _ in writes_to(source, names)) == [1, 2, 3, 6]
