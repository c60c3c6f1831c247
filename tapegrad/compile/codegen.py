"""The program: Python source generated from the planned graph, ``exec``'d once into a function.

The function takes the arrays of the arguments and the planned buffers and returns the output arrays; its
body is one line per step (``v12 = matmul(x0, x1, b0)``), each commented with the op, the value's dtype and
shape, and the user's line it came from (for a rule, the forward op it differentiates and that op's line),
then ``del`` statements where values die. Nothing on this path is a Tensor, and nothing is looked up at run
time but the program's own globals.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from .._state import mark_modified
from .fuse import Watch, arena_slots, entry_point, kernel_source, load_kernel
from .graph import Const, Value, source_line

__all__ = ["Program", "generate"]


class _Names:
    """Short, unique global names for the callables and constants the source refers to."""

    def __init__(self):
        self.globals: dict = {"asarray": np.asarray, "mark_modified": mark_modified}
        self.by_id: dict = {}

    def name(self, obj, hint) -> str:
        key = id(obj)
        found = self.by_id.get(key)
        if found is not None:
            return found
        base = "".join(ch if ch.isalnum() else "_" for ch in hint).strip("_") or "f"
        if base[0].isdigit():
            base = "f_" + base
        name, k = base, 1
        while name in self.globals:
            k += 1
            name = f"{base}{k}"
        self.globals[name] = obj
        self.by_id[key] = name
        return name


class Source:
    """Turns arguments (values, constants, literals) into source text."""

    def __init__(self, names, value_names):
        self.names = names
        self.value_names = value_names

    def __call__(self, obj) -> str:
        if isinstance(obj, Value):
            return self.value_names[id(obj)]
        if isinstance(obj, Const):
            if obj.name is None:
                obj.name = self.names.name(obj.value, "k")
            return obj.name
        if obj is None or obj is Ellipsis or isinstance(obj, (bool, str)):
            return repr(obj) if obj is not Ellipsis else "..."
        if isinstance(obj, int):
            return repr(obj)
        if isinstance(obj, (float, complex)):
            if isinstance(obj, float) and not math.isfinite(obj):
                return self.names.name(obj, "k")
            if isinstance(obj, complex) and not (math.isfinite(obj.real) and math.isfinite(obj.imag)):
                return self.names.name(obj, "k")
            return repr(obj)
        if isinstance(obj, tuple):
            inner = ", ".join(self(x) for x in obj)
            return f"({inner},)" if len(obj) == 1 else f"({inner})"
        if isinstance(obj, list):
            return "[" + ", ".join(self(x) for x in obj) + "]"
        if isinstance(obj, dict):
            return "{" + ", ".join(f"{k!r}: {self(x)}" for k, x in obj.items()) + "}"
        if isinstance(obj, slice):
            return f"slice({self(obj.start)}, {self(obj.stop)}, {self(obj.step)})"
        return self.names.name(obj, "k")


def _call(k, step, src, names, out_name):
    """One step's call, as source."""
    args = ", ".join(src(a) for a in k.args[1:]) if (k.method or k.form) else ", ".join(src(a) for a in k.args)
    if k.form == "getitem":
        return f"{src(k.args[0])}[{src(k.args[1])}]"
    if k.method:
        return f"{src(k.args[0])}.{k.method}({args})"
    fn = names.name(k.fn, k.name or step.name)
    parts = [args] if args else []
    if out_name is not None and k.out_style == "pos":
        parts.append(out_name)
    for key, value in k.kwargs.items():
        parts.append(f"{key}={src(value)}")
    if out_name is not None and k.out_style == "kw":
        parts.append(f"out={out_name}")
    return f"{fn}({', '.join(parts)})"


def _step_call(n, plan, src, names, value_names) -> str:
    """A step not fused, as source: its call, given the memory it writes (the input it overwrites, its planned
    buffer) where it takes ``out``."""
    k = plan.kernels[id(n)]
    target = plan.inplace.get(id(n))
    buf = plan.buffer.get(id(n))
    out_name = value_names[id(target)] if target is not None else (buf.name if buf is not None else None)
    if k.out_style is None:
        out_name = None
    return f"{value_names[id(n.out)]} = {_call(k, n, src, names, out_name)}"


def _comment(step) -> str:
    op = step.name if step.grad_of is None else f"{step.name} (grad of {step.grad_of.name})"
    if step.meta:
        op += f" ({step.meta})"
    line = step.line if step.grad_of is None else step.grad_of.line
    return f"{op} -> {step.out.describe()}", source_line(line)


def _run_call(run, plan, src, names, value_names, placed, named):
    """A fused run (:mod:`.fuse`) as source: each output's array (the value it is written over, its planned
    buffer, or a new one), then the kernel's call. ``placed``: the run's :func:`.fuse.arena_slots`, whose
    values the kernel reads and writes in the arena: an output among them is named only if ``named`` (read
    as an array after the run). Returns the lines, the call last; or, for a kernel on the arena, the lines
    before its call and the call as a :class:`_Group` of one run."""
    dtype, slots = placed if placed is not None else (None, {})
    lines = []
    outs = []
    for o in run.outputs:
        if id(o) in slots:
            if id(o) in named:
                lines.append((f"{value_names[id(o)]} = {_buffer_of(o, plan).name}", None))
            continue
        target = plan.inplace.get(id(o.step))
        buf = plan.buffer.get(id(o.step))
        if target is not None:
            where = value_names[id(target)]
        elif buf is not None:
            where = buf.name
        else:  # a new array, in the layout the value had when traced (the next call's signature is the same)
            shape = src(tuple(o.shape))
            order = ", order='F'" if not o.c_contiguous and _f_contiguous(o) else ""
            where = f"{names.name(np.empty, 'empty')}({shape}, {names.name(o.dtype, o.dtype.name)}{order})"
        lines.append((f"{value_names[id(o)]} = {where}", None))
        outs.append(value_names[id(o)])
    if slots:
        run.source = kernel_source(run, slots)
    fn = names.name(load_kernel(run.source), "fused")
    run.name = fn
    args = [src(a) + ("[()]" if len(_shape(a)) == 0 else "") for a in run.args if id(a) not in slots]
    if slots:
        row = [slots[id(v)] for v in list(run.args) + list(run.outputs) if id(v) in slots] + list(run.shape)
        if not outs:
            return lines, _Group(run, (fn, _ARENA + dtype.name, *args), row)
        args = [_ARENA + dtype.name, names.name(np.array([row], dtype=np.int64), "slots")] + args
    call = f"{fn}({', '.join(args + outs)})"
    lines.append((call, _run_note(run, 1)))
    return lines, None


def _run_note(run, count):
    ops = ", ".join(n.name for n in run.steps)
    times = f"{count} runs of " if count > 1 else ""
    what = f"fused {times}{len(run.steps)} ops: {ops} -> {run.outputs[0].describe() if run.outputs else ''}"
    first = run.steps[0]
    return what, source_line(first.line if first.grad_of is None else first.grad_of.line)


class _Group:
    """Consecutive calls of one kernel on the arena with the same other arguments (a chain's cycles), as one
    call with a row of ``slots`` for each (see :func:`.fuse.kernel_source`): one call instead of many, each of
    which costs more than its loop on small arrays."""

    __slots__ = ("run", "key", "rows")

    def __init__(self, run, key, row):
        self.run = run
        self.key = key  # the kernel, the arena's view and the other arguments, as source
        self.rows = [row]

    def source(self, names):
        fn, arena, *args = self.key
        slots = names.name(np.array(self.rows, dtype=np.int64), "slots")
        return f"{fn}({', '.join([arena, slots, *args])})", _run_note(self.run, len(self.rows))


_ARENA = "arena_"  # the arena viewed as one dtype, for the kernels that read and write it: arena_float64


def _buffer_of(v, plan):
    """The planned buffer ``v`` lives in (its own, or that of the value it is written over), holding it in its
    shape and dtype; or None: an argument, a constant, an array of its own."""
    while v.step is not None:
        buf = plan.buffer.get(id(v.step))
        if buf is not None:
            root = buf.root
            return buf if root.shape == v.shape and root.dtype == v.dtype else None
        target = plan.inplace.get(id(v.step))
        if target is None or target.shape != v.shape or target.dtype != v.dtype:
            return None
        v = target
    return None


def _offset(v, plan):
    """The byte offset in the arena of ``v``'s buffer (:func:`_buffer_of`), or None."""
    buf = _buffer_of(v, plan)
    return None if buf is None else buf.offset


def _f_contiguous(v) -> bool:
    if v.strides is None:
        return False
    step = v.dtype.itemsize
    for n, s in zip(v.shape, v.strides):
        if n != 1 and s != step:
            return False
        step *= n
    return True


def _shape(a):
    return a.shape if isinstance(a, Value) else np.shape(a.value)


def kernels_source(runs) -> str:
    """The fused kernels' source, each once, under the name the program calls it by."""
    seen, parts = set(), []
    for r in runs:
        if r.name in seen:
            continue
        seen.add(r.name)
        body = r.source.replace("import numpy as np\n\n", "").replace("def kernel(", f"def {r.name}(", 1)
        parts.append(body)
    if not parts:
        return ""
    head = "\n# fused kernels (numba, cache=True), one loop over the elements each\n"
    return head + "\n".join(parts)


def generate(graph, plan, outputs_copy, input_names=(), runs=()):
    """The program's source and its globals. ``outputs_copy``: output positions that are constants, returned
    as copies (a caller may change what it gets; the program's constant must stay as it is); ``input_names``:
    what each input is in the function's arguments (``params['W']``), for the source's first comments;
    ``runs``: the fused runs, each one kernel call."""
    names = _Names()
    value_names: dict = {}
    for v in graph.inputs:
        value_names[id(v)] = f"x{v.input_index}"
    for n in graph.steps:
        value_names[id(n.out)] = f"v{n.out.index}"
    src = Source(names, value_names)
    lines = []
    comments = []
    run_at = {id(r.steps[0]): r for r in runs}
    in_run = {id(n) for r in runs for n in r.steps}
    arena = _Arena(graph, plan, runs, in_run)
    group = None  # the last call of a kernel on the arena, while only names and deletions follow it
    for i, n in enumerate(graph.steps):
        if id(n) not in in_run:
            group = None
            lines.append(_step_call(n, plan, src, names, value_names))
            comments.append(_comment(n))
        elif id(n) in run_at:
            r = run_at[id(n)]
            pre, call = _run_call(r, plan, src, names, value_names, arena.placed[id(r)], arena.named)
            if call is not None and group is not None and call.key == group.key:
                group.rows += call.rows  # names bound after it are bound to the same buffers
                call = None
            else:
                group = call
            for code, note in pre:
                lines.append(code)
                comments.append(note if note is not None else ("", ""))
            if call is not None:
                lines.append(call)
                comments.append(call)
        dead = [v for v in plan.free_after.get(i, ()) if id(v) not in arena.unbound]
        if dead:
            lines.append("del " + ", ".join(value_names[id(v)] for v in dead))
            comments.append(None)
    results = []
    for j, o in enumerate(graph.outputs):
        if isinstance(o, Value):
            text = value_names[id(o)]
            if len(o.shape) == 0 and o.numpy:
                text = f"asarray({text})"
        else:
            text = src(o)
            if j in outputs_copy:
                text = f"{text}.copy()"
        results.append(text)
    for v in graph.inputs:
        out = plan.donated.get(id(v))
        if out is not None and out.step is not None and plan.inplace.get(id(out.step)) is v:
            lines.append(f"mark_modified(x{v.input_index})")
            comments.append(("a donated argument now holds its new value: tapes that saved it refuse to replay", ""))
    head = ["def program(inputs, buffers):"]
    for v, name in zip(graph.inputs, input_names):
        head.append(f"    # x{v.input_index}: {name}  {v.describe()}")
    if graph.inputs:
        head += _unpack([f"x{v.input_index}" for v in graph.inputs], "inputs")
    if plan.buffers:
        head += _unpack([b.name for b in plan.buffers] + [_ARENA + v for v in arena.views], "buffers")
    for j, code in enumerate(lines):
        if isinstance(code, _Group):
            lines[j], comments[j] = code.source(names)
    width = min(max([len(c) for c, note in zip(lines, comments) if note is not None] + [0]), 60)
    body = []
    for code, note in zip(lines, comments):
        if note is None:
            body += _wrap(code.split(" ", 1)[0], code.split(" ", 1)[1].split(", "), "")
        else:
            what, line = note
            if not what:
                body.append(f"    {code}")
            else:
                body.append(f"    {code.ljust(width)}  # {what}" + (f"  | {line}" if line else ""))
    tail = "    return (" + "".join(f"{r}, " for r in results) + ")"
    source = "\n".join(head + body + [tail]) + "\n"
    names.globals["__kernels__"] = kernels_source(runs)
    names.globals["__arena_views__"] = [np.dtype(v) for v in arena.views]
    names.globals["__kernel_names__"] = sorted({r.name for r in runs})
    return source, names.globals


class _Arena:
    """Which values the kernels on small arrays read and write in the arena (``placed``: each run's
    :func:`.fuse.arena_slots`), and of them, those the program never reads by name (``unbound``: no name is
    bound to them, none deleted); ``views``: the dtypes the arena is indexed as."""

    def __init__(self, graph, plan, runs, in_run):
        self.placed = {id(r): arena_slots(r, lambda v: _offset(v, plan)) for r in runs}
        self.named = _named(graph, plan, runs, self.placed, in_run)
        self.unbound = set()
        for r in runs:
            slots = self.placed[id(r)][1] if self.placed[id(r)] is not None else {}
            self.unbound.update(id(o) for o in r.outputs if id(o) in slots and id(o) not in self.named)
        self.views = sorted({p[0].name for p in self.placed.values() if p is not None})


def _named(graph, plan, runs, placed, in_run) -> set:
    """The ids of the values the program reads as arrays by name: every input of a step not fused, the
    arguments a kernel is given as arrays, the values written over, the outputs."""
    named = set()
    for n in graph.steps:
        if id(n) not in in_run:
            named.update(id(v) for v in n.inputs())
            if id(n) in plan.inplace:
                named.add(id(plan.inplace[id(n)]))
    for r in runs:
        slots = placed[id(r)][1] if placed[id(r)] is not None else {}
        named.update(id(a) for a in r.args if id(a) not in slots)
        named.update(
            id(plan.inplace[id(o.step)]) for o in r.outputs if id(o) not in slots and id(o.step) in plan.inplace
        )
    named.update(id(o) for o in graph.outputs if isinstance(o, Value))
    return named


def _unpack(names, what):
    if len(names) == 1:
        return [f"    {names[0]}, = {what}"]
    if len(", ".join(names)) <= 100:
        return [f"    {', '.join(names)} = {what}"]
    return _wrap("(", names, f") = {what}")


def _wrap(first, names, last, width=100):
    """``first name, name, ... last`` over lines of at most ``width`` characters."""
    lines, cur = [], "    " + first + (" " if first != "(" else "")
    for k, n in enumerate(names):
        piece = n + (", " if k < len(names) - 1 else "")
        if len(cur) + len(piece) > width and cur.strip() not in ("(", first):
            lines.append(cur.rstrip())
            cur = "     " if first == "(" else "        "
        cur += piece
    lines.append(cur.rstrip() + last)
    if first != "(" and len(lines) > 1:  # a statement over several lines: continue them with backslashes
        lines = [ln + " \\" for ln in lines[:-1]] + lines[-1:]
    return lines


class Program:
    """One compiled signature: the generated function, its arena and what it keeps between calls.

    ``source`` is the generated code; ``arena_bytes`` the planned buffers' size; ``const_bytes`` the arrays it
    holds as constants. Calls are serialised per program by a lock; a call that finds the lock taken (another
    thread, or a call from inside the program) runs on buffers of its own.
    """

    def __init__(self, graph, plan, source, namespace, info):
        self.graph = graph
        self.plan = plan
        # the program, then the fused kernels' loops it calls (compiled by numba, not run from this text)
        self.source = source + namespace.pop("__kernels__", "")
        self._views = namespace.pop("__arena_views__", [])  # the arena as the dtypes the kernels index it by
        self._unbound = namespace.pop("__kernel_names__", [])  # kernels still called through numba's dispatch
        self.info = info
        code = compile(source, f"<tapegrad.compile {info.get('name', 'program')}>", "exec")
        exec(code, namespace)  # noqa: S102  (the source is generated above from the traced graph)
        self._fn = namespace["program"]
        self.arena_bytes = plan.arena_bytes
        self._lock = threading.Lock()
        self._buffers = self._make_buffers()
        self.const_bytes = sum(int(getattr(v, "nbytes", 0)) for k, v in namespace.items() if isinstance(v, np.ndarray))

    def _make_buffers(self):
        arena = np.empty(self.plan.arena_bytes, dtype=np.uint8)
        out = []
        for b in self.plan.buffers:
            v = b.root
            n = v.nbytes
            out.append(arena[b.offset : b.offset + n].view(v.dtype).reshape(v.shape))
        for dtype in self._views:
            out.append(arena[: len(arena) // dtype.itemsize * dtype.itemsize].view(dtype))
        return tuple(out)

    def explain(self) -> str:
        """What the program keeps between calls and how its values are placed, then its source."""
        p = self.plan
        n_inplace = len(p.inplace)
        lines = [
            f"program {self.info.get('name', '')}: {len(self.graph.inputs)} inputs, {len(self.graph.steps)} calls, "
            f"{len(self.graph.outputs)} outputs",
            f"  planned buffers: {len(p.buffers)} values in an arena of {self.arena_bytes:,} bytes (kept between calls)",
            f"  written in place over a dying input: {n_inplace} values",
            f"  constants held: {self.const_bytes:,} bytes of arrays",
            "",
            self.source,
        ]
        return "\n".join(lines)

    @property
    def kept_bytes(self) -> int:
        """Bytes the program keeps between calls: its arena and its constant arrays."""
        return self.arena_bytes + self.const_bytes

    def __call__(self, arrays):
        if self._lock.acquire(blocking=False):
            try:
                if self._unbound:
                    return self._first_call(arrays)
                return self._fn(arrays, self._buffers)
            finally:
                self._lock.release()
        return self._fn(arrays, self._make_buffers())

    def _first_call(self, arrays):
        """The first run: each kernel watched, then called by its machine code (:func:`.fuse.entry_point`)."""
        namespace = self._fn.__globals__
        watches = {name: Watch(namespace[name]) for name in self._unbound}
        namespace.update(watches)
        try:
            out = self._fn(arrays, self._buffers)
        except BaseException:
            namespace.update({name: w.fn for name, w in watches.items()})
            raise
        for name, w in watches.items():
            namespace[name] = entry_point(w) or w.fn
        self._unbound = []
        return out
