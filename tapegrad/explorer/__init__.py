"""The tape explorer: ``tg.explore(...)`` writes one self-contained HTML page of a real tape and its replay.

The page (scripts and styles inline, no network: it opens from ``file://``) shows the Wengert list as a table
(entry, op, input and output shapes and dtypes, saved bytes, your source line) linked to a drawing of the graph,
which the page lays out itself; a replay you step with buttons or the keyboard (← →, Home, End), forward entry by
entry and then backward entry by entry, with each entry's value and adjoint (small arrays in full, large ones as
shape, statistics and a histogram) and NaN or infinity marked at the entry that made it; a chart of the bytes the
tape holds over the replay, falling as the replay frees each entry (with ``nodegraph=True``, the curve of the
node-graph design for the same program beside it); and, for a compiled function, its generated program beside the
tape, line to line.

The numbers are those of a real recording and a real replay: the values come from a monitor of the tape, the
adjoints and the bytes held from an observer of its replay (``Tape.add_replay_observer``). In a notebook
(IPython) the page is also shown inline.

- ``tg.explore(f, *args, **kwargs)``: ``f`` runs recorded (``track_source=True``) on ``args``, floating arrays
  and numbers made tensors that need a gradient (named after ``f``'s parameters: ``x``, ``params['W']``); ``f``
  returns a scalar. The replay computes the gradients of every leaf without writing any ``.grad``.
- ``tg.explore(step, *args)`` for ``step = tg.compile(tg.value_and_grad(loss))``: ``step(*args)`` runs on copies
  of the arrays (for its program, one NumPy call per op: without fused kernels), and the tape explored is
  ``loss``'s on the same arguments.
- ``tg.explore(t, loss)`` for a tape ``t`` recorded by ``tg.record()``: that tape, replayed from ``loss``
  (consumed, as ``backward()`` consumes it, unless persistent; no ``.grad`` written). Values the tape did not keep
  show as such; without ``loss`` the page shows the tape unreplayed. A block recorded with
  ``with tapegrad.explorer.record() as t:`` keeps every value and source line for the page.

>>> import os, tempfile
>>> import tapegrad as tg
>>> path = os.path.join(tempfile.mkdtemp(), "tape.html")
>>> ex = tg.explore(lambda x: x ** 2 + 3 * x + 1, 2.0, path=path)
>>> ex.value, ex.grads["x"]       # 2**2 + 3*2 + 1, and its derivative 2*2 + 3
(11.0, 7.0)
>>> [row["op"] for row in ex.data["rows"]]
['power', 'multiply', 'add', 'add']
>>> open(path).read().startswith("<!doctype html>")
True
"""

from __future__ import annotations

import copy
import html
import inspect
import numbers
import os
import re

import numpy as np

from .._tensor import Tensor
from ..compile import Compiled
from ..core import BaseTape, keep_pending, stop_recording
from ..tape import record as tape_record
from .capture import ReplayCapture, ValueCapture, summary, table
from .page import render_page

__all__ = ["explore", "Explorer", "record"]

MEASURE_UP_TO = 3000  # entries: up to here the replay measures the tape's bytes at every entry


class Explorer:
    """What :func:`explore` made: ``data`` (the page's numbers, plain Python), ``html`` (the page), ``path`` (where
    it was written, or None), ``value`` (the output) and ``grads`` (leaf name -> its adjoint, for small arrays a
    float or a list)."""

    def __init__(self, data: dict, path):
        self.data = data
        self.html = render_page(data)
        self.path = path
        if path is not None:
            self.save(path)

    def save(self, path) -> str:
        """Write the page to ``path`` (one file: open it in any browser, from disk)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)
        self.path = os.fspath(path)
        return self.path

    @property
    def value(self):
        out = self.data.get("output")
        return _plain(out) if out else None

    @property
    def grads(self) -> dict:
        return {leaf["name"]: _plain(leaf["adjoint"]) for leaf in self.data["leaves"] if leaf.get("adjoint")}

    def iframe(self, height: int = 720) -> str:
        """The page inside an ``<iframe srcdoc>``, as a notebook shows it."""
        return (
            f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width:100%;height:{height}px;'
            'border:1px solid #ccc" sandbox="allow-scripts"></iframe>'
        )

    def show(self) -> None:
        """Display the page inline in a notebook (IPython.display); outside IPython, nothing."""
        try:
            from IPython.display import display  # optional: shown inline where IPython runs
        except ImportError:
            return
        display({"text/html": self.iframe(), "text/plain": repr(self)}, raw=True)

    def __repr__(self) -> str:
        where = f", written to {self.path}" if self.path else ""
        return f"<tape explorer: {len(self.data['rows'])} entries, {len(self.data['steps'])} replayed{where}>"


def _plain(s):
    if "values" not in s:
        return None
    v = s["values"]
    if s["dtype"].startswith("complex"):
        v = [complex(re_, im) for re_, im in v]
    return v[0] if s["shape"] == [] else v


def explore(target, *args, path=None, nodegraph: bool = False, **kwargs) -> Explorer:
    """Record and replay ``target`` and write the tape explorer's page to ``path`` (see the module docstring).

    ``target`` is a function and its arguments, a compiled function and its arguments, or a tape and the value
    to replay it from. ``nodegraph=True`` adds the node-graph design's memory curve as a toggle. Returns an
    :class:`Explorer`; in a notebook the page is shown inline as well.

    >>> import tapegrad as tg
    >>> tg.explore(lambda x: (x * x).sum(), [1.0, 2.0]).grads["x"]
    [2.0, 4.0]
    """
    if isinstance(target, BaseTape) and (len(args) > 1 or kwargs):
        raise TypeError("tg.explore(tape, loss): give the tape and, optionally, the value to replay it from")
    if not isinstance(target, BaseTape) and not callable(target):
        raise TypeError(
            f"tg.explore: expected a function and its arguments, a compiled function, or a tape, got "
            f"{type(target).__name__}"
        )
    # Its own recording and replay only: tapes active around the call record none of it, and a tape kept for
    # a later loss.backward() stays kept.
    with stop_recording(), keep_pending():
        if isinstance(target, BaseTape):
            data = _explore_tape(target, args[0] if args else None)
        elif isinstance(target, Compiled):
            data = _explore_compiled(target, args, kwargs)
        else:
            data = _explore_function(target, args, kwargs, getattr(target, "__name__", "f"))
    data["nodegraph"] = _nodegraph(data) if nodegraph else None
    ex = Explorer(data, path)
    if _in_notebook():
        ex.show()
    return ex


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython  # optional
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


# -- arguments: floating leaves become named tensors that need a gradient -----------------------------------
def _names(f, args):
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(len(args)):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL:
            names.append(f"{params[-1].name}[{i - len(params) + 1}]")
        else:
            names.append(f"arg{i}")
    return names


def _tensors(node, name, renamed):
    """``node`` with its floating numbers and arrays as tensors that need a gradient, named by their path; a
    tensor of the user's without a name is named so for the page, and listed in ``renamed`` to be unnamed after."""
    if isinstance(node, Tensor):
        if node.name is None and node.requires_grad:
            node.name = name
            renamed.append(node)
        return node
    if isinstance(node, bool) or isinstance(node, numbers.Integral):
        return node
    if isinstance(node, numbers.Number) or (isinstance(node, (np.ndarray, np.generic)) and node.dtype.kind in "fc"):
        return Tensor(np.array(node), requires_grad=True, name=name)
    if isinstance(node, (list, tuple)) and node and all(isinstance(v, numbers.Number) for v in node):
        return Tensor(np.array(node, dtype=float), requires_grad=True, name=name)
    if isinstance(node, dict):
        return {k: _tensors(v, f"{name}[{k!r}]", renamed) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_tensors(v, f"{name}[{i}]", renamed) for i, v in enumerate(node))
    return node


def record(**options):
    """``tg.record(track_source=True, **options)`` that also keeps a summary of every value it records, for
    ``tg.explore(t, loss)`` to show: a recorded block, explored.

    >>> import tapegrad as tg
    >>> x = tg.Tensor(2.0, requires_grad=True, name="x")
    >>> with tg.explorer.record() as t:
    ...     y = x**2 + 3 * x + 1
    >>> ex = tg.explore(t, y)
    >>> [row["value"]["values"] for row in ex.data["rows"]], ex.grads
    ([[4.0], [6.0], [10.0], [11.0]], {'x': 7.0})
    """
    t = tape_record(track_source=True, **options)
    t.add_monitor(ValueCapture())
    return t


def _captured(t) -> dict:
    """The values a :func:`record` tape's monitor kept, or none."""
    return next((m.values for m in t.monitors if isinstance(m, ValueCapture)), {})


def _explore_function(f, args, kwargs, title):
    renamed: list = []
    try:
        targs = [_tensors(a, n, renamed) for a, n in zip(args, _names(f, args))]
        tkwargs = {k: _tensors(v, k, renamed) for k, v in kwargs.items()}
        return _record_and_replay(f, targs, tkwargs, title)
    finally:
        for tensor in renamed:  # the page has the names; the user's tensors keep theirs (none)
            tensor.name = None


def _record_and_replay(f, targs, tkwargs, title):
    t = record()
    with t:
        out = f(*targs, **tkwargs)
    if not isinstance(out, Tensor) or out.size != 1:
        what = type(out).__name__ if not isinstance(out, Tensor) else f"a tensor of shape {tuple(out.shape)}"
        raise TypeError(
            f"tg.explore({title}, ...): the function must return a scalar tensor (a loss), got {what}; for a "
            "training step, explore its loss function: tg.explore(loss, params, X, y)"
        )
    rows, leaves = table(t, _captured(t))
    data = _replay(t, out, rows, leaves, title)
    data["source"] = "a function, recorded and replayed by tg.explore"
    return data


def _explore_tape(t, loss):
    if t.state in ("replayed", "released", "failed"):  # its entries are gone: the page would show an empty tape
        raise ValueError(
            f"tg.explore(tape): the tape is {t.state} (backward() or release() freed its entries); explore it "
            "before backward(), record it with tg.record(persistent=True), or explore the function: "
            "tg.explore(f, *args)"
        )
    if loss is not None and (not isinstance(loss, Tensor) or loss._node is None):
        raise TypeError(
            f"tg.explore(tape, loss): loss must be a tensor the tape computed, got "
            f"{'a tensor it did not compute (a leaf or a constant)' if isinstance(loss, Tensor) else type(loss).__name__}"
        )
    rows, leaves = table(t, _captured(t))
    title = "a tape" + (f" recorded at {os.path.basename(t.site[0])}:{t.site[1]}" if t.site else "")
    if loss is None:
        data = _data(rows, leaves, title, None, [])
        data["note"] = "no replay: tg.explore(t, loss) replays the tape from loss"
    else:
        data = _replay(t, loss, rows, leaves, title)
    data["source"] = (
        "a block recorded by tapegrad.explorer.record()"
        if _captured(t)
        else "a tape recorded by tg.record(); values it did not keep are not shown"
    )
    return data


def _replay(t, out, rows, leaves, title):
    capture = ReplayCapture(t, measure=len(rows) <= MEASURE_UP_TO)
    once = [capture]  # this replay only: a persistent tape's later backward() is not observed (nor kept)
    t.add_replay_observer(lambda tape: once.pop() if once else None)
    needed = {name: leaf for name, leaf in leaves.items() if leaf.requires_grad}
    try:
        grads = t.gradient(out, list(needed.values())) if rows else [None] * len(needed)
    finally:
        once.clear()
        capture.done()
    adjoints = {name: (summary(g) if g is not None else None) for name, g in zip(needed, grads)}
    return _data(rows, leaves, title, summary(out._data), capture.steps, adjoints)


def _data(rows, leaves, title, output, steps, adjoints=None):
    adjoints = adjoints or {}
    by_pos = {r["pos"]: r["index"] for r in rows}
    running, forward = 0, []
    for r in rows:
        running += r["bytes"]
        forward.append(running)
    for s in steps:
        s["entry"] = by_pos.get(s.pop("pos"))
        if s["held"] is None and s["entry"] is not None:  # a long tape, not measured: what the entries before hold
            s["held"] = forward[s["entry"] - 1] if s["entry"] else 0
    leaf_rows = [
        {
            "name": name,
            "shape": list(leaf.shape),
            "dtype": summary(leaf._data)["dtype"],
            "requires_grad": leaf.requires_grad,
            "bytes": int(leaf._data.nbytes) if hasattr(leaf._data, "nbytes") else 0,
            "value": summary(leaf._data),
            "adjoint": adjoints.get(name),
        }
        for name, leaf in leaves.items()
    ]
    return {
        "title": title,
        "rows": rows,
        "leaves": leaf_rows,
        "output": output,
        "steps": [s for s in steps if s["entry"] is not None],
        "forward_bytes": forward,
        "program": None,
    }


# -- compiled functions: the program beside the tape --------------------------------------------------------
def _copies(node):
    if isinstance(node, Tensor):
        return Tensor(np.array(node._data), requires_grad=node.requires_grad, name=node.name)
    if isinstance(node, np.ndarray):
        return node.copy()
    if isinstance(node, dict):
        return {k: _copies(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_copies(v) for v in node)
    return copy.copy(node)


def _explore_compiled(step, args, kwargs):
    if step.fuse:  # one line per op, each linked to its entry: the program without fused kernels (the jit extra)
        step = Compiled(step.fn, step.donate_argnums, step.maxsize, step.check, step.arena_limit, fuse=False)
    step(*_copies(args), **_copies(kwargs))  # on copies: a donated argument would be overwritten
    source = step.source
    loss = inspect.unwrap(step)
    title = getattr(loss, "__name__", "f")
    data = _explore_function(loss, args, kwargs, title)
    data["program"] = _program_lines(source, data["rows"])
    data["source"] = f"tg.compile({getattr(step.fn, '__name__', 'f')}): its program, and the tape of {title}"
    return data


_COMMENT = re.compile(r"#\s+(?P<op>[\w.]+)(?: \(grad of (?P<grad>[\w.]+)\))? -> [^|]*\|\s+(?P<where>\S+:\d+)")


def _program_lines(source, rows):
    """The program's lines, each linked to the tape's entry it computes (``entry``) or differentiates
    (``grad_of``), matched by op and source line, in order (forward) or in reverse order (backward)."""
    forward, backward = {}, {}
    for r in rows:
        forward.setdefault((r["op"], r["where"]), []).append(r["index"])
        backward.setdefault((r["op"], r["where"]), []).append(r["index"])
    lines = []
    for text in source.splitlines():
        line = {"text": text, "entry": None, "grad_of": None}
        m = _COMMENT.search(text)
        if m is not None:
            if m["grad"] is None:
                left = forward.get((m["op"], m["where"]))
                if left:
                    line["entry"] = left.pop(0)
            else:
                left = backward.get((m["grad"], m["where"]))
                if left:
                    line["grad_of"] = left[-1]  # rules run last entry first; one entry's rules may be several lines
        lines.append(line)
    return lines


# -- the node-graph design's curve, for the same program ------------------------------------------------------
def _size(s):
    if not s:
        return 0
    return int(np.prod(s["shape"], dtype=np.int64)) * np.dtype(s["dtype"]).itemsize


def _nodegraph(data):
    """Bytes a node-graph engine (micrograd's design) holds for the same program: every value stays alive with its
    parents until the loss is dropped, and each value the backward pass reaches gains a gradient of its size."""
    held = sum(leaf["bytes"] for leaf in data["leaves"])
    forward = []
    for r in data["rows"]:
        held += sum(_size(o["value"]) for o in r["outputs"]) if r["outputs"] else _size(r["value"])
        forward.append(held)
    backward = []
    for s in data["steps"]:
        held += sum(_size(a) for a in s.get("adjoints", [s["adjoint"]]))
        backward.append(held)
    return {"forward": forward, "backward": backward}
