"""Griffe extensions for the API reference (loaded by mkdocs.yml's mkdocstrings options).

- :class:`DefopDocstrings`: read statically, ``exp = defop("exp", np.exp, ..., doc="...")`` is an attribute
  with no docstring. Once the package is loaded, each such op is imported and a function put in its place,
  with the op's docstring and a signature of its inputs (``x``, ``y``, ...) and keyword parameters.
- :class:`DoctestBlocks`: the docstrings' examples are bare doctest lines (``>>> ...`` and their output), which
  Markdown would read as nested quotes and links; each run of them becomes a ``pycon`` code block.
"""

from __future__ import annotations

import importlib
import pathlib
import re
import sys

import griffe

# The ops are imported from this checkout, whichever tapegrad is installed (an editable install may be another's).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

MAKERS = ("defop(", "defnondiff(")
INPUT_NAMES = ("x", "y", "z", "w")


class DefopDocstrings(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for module in _modules(pkg):
            for name, member in list(module.members.items()):
                if member.is_alias or not member.is_attribute or not str(member.value or "").startswith(MAKERS):
                    continue
                runtime = getattr(importlib.import_module(module.path), name, None)
                if runtime is None or not callable(runtime):
                    continue
                module.set_member(name, _function(member, runtime))


def _modules(module: griffe.Module):
    yield module
    for member in module.members.values():
        if not member.is_alias and member.is_module:
            yield from _modules(member)


def _function(attr: griffe.Attribute, runtime) -> griffe.Function:
    op = getattr(runtime, "op", None)
    if op is not None and op.variadic:
        inputs = [griffe.Parameter("tensors", kind=griffe.ParameterKind.positional_or_keyword)]
    else:
        arity = op.arity if op is not None and op.arity else 1
        inputs = [griffe.Parameter(n, kind=griffe.ParameterKind.positional_or_keyword) for n in INPUT_NAMES[:arity]]
    params = griffe.Parameters(*inputs, griffe.Parameter("params", kind=griffe.ParameterKind.var_keyword))
    doc = griffe.Docstring(runtime.__doc__, parent=None) if runtime.__doc__ else None
    fn = griffe.Function(attr.name, lineno=attr.lineno, endlineno=attr.endlineno, parameters=params, docstring=doc)
    if doc is not None:
        doc.parent = fn
    return fn


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for module in _modules(pkg):  # the functions DefopDocstrings made after the visit
            for member in module.members.values():
                if not member.is_alias and member.docstring is not None and ">>>" in member.docstring.value:
                    if "```pycon" not in member.docstring.value:
                        member.docstring.value = fence_doctests(member.docstring.value)


_PROMPT = re.compile(r"^(\s*)>>> ")


def fence_doctests(text: str) -> str:
    """Wrap each doctest (from a ``>>>`` line to the next blank line) in a fenced ``pycon`` block.

    >>> fence_doctests("Add.\\n\\n>>> 1 + 1\\n2").splitlines()
    ['Add.', '', '```pycon', '>>> 1 + 1', '2', '```']
    """
    out, inside, indent = [], False, ""
    for line in text.split("\n"):
        match = _PROMPT.match(line)
        if not inside and match:
            inside, indent = True, match.group(1)
            out.append(f"{indent}```pycon")
        elif inside and not line.strip():
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)


class RuntimeExports(griffe.Extension):
    """A module whose ``__all__`` is computed when it is imported (``tapegrad.ops`` collects the public
    functions of its family files, ``tapegrad.nn.functional`` re-exports some): its exports, read from the
    imported module, each an alias of the object where it is defined."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for module in _modules(pkg):
            runtime = importlib.import_module(module.path)
            names = getattr(runtime, "__all__", None)
            if not names:
                continue
            for name in names:
                obj = getattr(runtime, name, None)
                home = getattr(obj, "__module__", None)
                if name in module.members or not callable(obj) or not home or home == module.path:
                    continue
                module.set_member(name, griffe.Alias(name, f"{home}.{getattr(obj, '__name__', name)}", parent=module))
            module.exports = list(names)
