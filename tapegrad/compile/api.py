"""``tg.compile``: a function traced once per signature into a program, and replayed as that program.

Contract
--------
- **Signature.** The arguments are pytrees (lists, tuples, dicts) of arrays (NumPy's, another backend's,
  tensors, NumPy scalars) and static leaves (Python numbers, strings, None, any other object). The signature
  is the structure, each array's type, shape, dtype (and, for NumPy, strides: a transposed argument is another
  signature, so that every sum adds in the order it did when traced), and each static leaf's value. The first call with a
  signature runs the function once, traced (its results are that call's results); every later call with the
  same signature runs the program. A new signature traces again. ``maxsize`` programs are kept (least
  recently used first out); ``cache_info()`` counts hits, misses and traces.
- **Inside the function** array arguments are tensors; results come back as arrays (as the transforms
  return them), static results as they are. Arrays the function reads from elsewhere (globals, closures, a
  model's attributes) are constants of the program: the same array objects, read as they are at each call;
  rebinding them is not seen. Python code runs once per trace: a ``print`` prints once, ``bool(t)`` of a
  traced value is a :class:`~tapegrad.errors.TracingError` naming the line.
- **Draws** with ``tg.random`` (``nn.Dropout``) are ops: every call draws anew from the same generator.
- **Donation.** ``donate_argnums`` names positional arguments whose arrays the call may overwrite with the
  results of the same shape and dtype (matched in order): a training step updates its parameters in place.
  Use the returned values; a donated array that is not C-contiguous, writeable and apart from every other
  argument is not overwritten. An index out of range (or an argument named twice) is a ``ValueError``: at
  ``tg.compile`` where the signature says how many positional arguments there are, else at the call.
- **Checking.** The second call of each signature also runs the function eagerly, as a call under no tape
  does, and compares (draws replayed from the same generator states); a difference is a TracingError saying what usually causes it.
  ``check=False`` turns this off.
- **Transforms and tapes.** Called while a tape differentiates its arguments (inside ``tg.grad``,
  ``tg.jacobian``, a ``record()`` block with ``requires_grad`` inputs) or a tensor it read from outside them
  when traced (``_OutsideReads``: a model's weights), or while another compiled function is traced, or inside forward mode or ``vmap``, the function runs as Python, so that the tape (or the trace, the
  tangents, the batch) sees its ops:
  ``tg.hessian(tg.compile(tg.grad(f)))`` is correct; ``tg.compile(tg.hessian(f))`` compiles the whole.
- **Memory.** After a call nothing of the trace is alive; a program keeps its planned buffers (an arena, the
  plan's peak) and its constants (``Program.kept_bytes``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import threading
import time
import weakref
from collections import OrderedDict, namedtuple

import numpy as np

from .._batched import Batched
from .._html import STYLE, esc
from .._scope import check_argnums, parse_argnums
from .._state import ACTIVE, BATCH, CLOSED, FORWARD, TRACER, TRACING, WATCHED, mark_modified
from .._tensor import Tensor
from .._tree import LEAF, tree_flatten, tree_unflatten
from ..backend import memory_root, to_numpy
from ..core import keep_pending, stop_recording
from ..errors import TracingError
from .codegen import Program, generate
from .fuse import available as fusion_available
from .fuse import find_runs
from .graph import Const, Value, forget_inputs
from .passes import (
    accumulate_scatters,
    common_subexpressions,
    dead_code,
    donation_edges,
    fuse_updates,
    schedule,
    simplify,
)
from .plan import frees, plan
from .trace import trace

__all__ = ["compile", "Compiled", "CacheInfo"]

CacheInfo = namedtuple("CacheInfo", "hits misses maxsize currsize")
BUFFERS = {"arena": None, "fresh": 0, "auto": 64 * 1024}  # the largest value a planned buffer holds (None: any)


def compile(fn=None, *, donate_argnums=(), maxsize: int = 64, check: bool = True, buffers: str = "auto", fuse=None):  # noqa: A001
    """Compile ``fn`` into a program per signature (see the module docstring); usable as a decorator.

    ``buffers`` says where the values a program computes live. ``"arena"``: in planned buffers the program
    keeps between calls (nothing is allocated per call; the arena's size is the plan's peak). ``"fresh"``:
    each call allocates them and frees each one after its last read, keeping nothing between calls.
    ``"auto"`` (the default): values under 64 KiB in the arena, where allocating would cost as much as the op,
    larger ones fresh, so that a program returning large results (gradients) holds no arena beside them.

    ``fuse``: runs of elementwise steps become one generated loop each (:mod:`tapegrad.compile.fuse`, numba:
    ``pip install tapegrad[jit]``). ``None`` (the default): where numba is installed (and the environment does
    not set ``TAPEGRAD_FUSE=0``); ``False``: never (one NumPy call per op); ``True``: always, an
    ``ImportError`` without numba.

    >>> import numpy as np, tapegrad as tg
    >>> step = tg.compile(tg.value_and_grad(lambda w, x: ((x @ w) ** 2).mean()))
    >>> value, grad = step(np.ones(2), np.array([[1.0, 2.0]]))
    >>> value, grad
    (array(9.), array([ 6., 12.]))
    >>> step(np.zeros(2), np.array([[1.0, 2.0]]))[0]   # the same signature: the program runs
    array(0.)
    >>> step.cache_info()
    CacheInfo(hits=1, misses=1, maxsize=64, currsize=1)
    """
    if fn is None:
        return functools.partial(
            compile, donate_argnums=donate_argnums, maxsize=maxsize, check=check, buffers=buffers, fuse=fuse
        )
    if buffers not in BUFFERS:
        raise ValueError(f"tg.compile: buffers must be one of {sorted(BUFFERS)}, got {buffers!r}")
    if not callable(fn):
        raise TypeError(f"tg.compile takes a function, got {type(fn).__name__}")
    donate_argnums, _ = parse_argnums(donate_argnums, "tg.compile", "donate_argnums", empty=True)
    if maxsize < 1:
        raise ValueError(f"tg.compile: maxsize must be at least 1, got {maxsize}")
    if fuse not in (None, True, False):
        raise ValueError(f"tg.compile: fuse must be None (where numba is installed), True or False, got {fuse!r}")
    if fuse is True and not fusion_available():
        raise ImportError(
            "tg.compile(fuse=True): fused kernels need numba, which is not installed; pip install tapegrad[jit] "
            "(or fuse=None: fused where numba is installed, NumPy's calls elsewhere)"
        )
    return Compiled(fn, donate_argnums, maxsize, check, BUFFERS[buffers], fuse)


def _positional_count(fn):
    """How many positional arguments ``fn`` takes, or None where its signature does not say (``*args``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _checked_donations(fn, nums, n):
    name = getattr(fn, "__name__", "the function")
    takes = f"{name}, which takes {n} positional argument{'' if n == 1 else 's'}"
    return check_argnums(nums, n, "tg.compile", "donate_argnums", takes)


class _Entry:
    __slots__ = ("program", "out_spec", "checked", "generators", "outside")

    def __init__(self, program, out_spec, checked, generators, outside=()):
        self.program = program
        self.out_spec = out_spec
        self.checked = checked
        self.generators = generators
        self.outside = outside  # weak references to the tensors it read from outside its arguments (_OutsideReads)

    def reads_differentiated(self) -> bool:
        """Whether a tape recording now differentiates a tensor the program read as a constant."""
        return any(_differentiated(r()) for r in self.outside)


class _OutsideReads:
    """The tensors a traced function reads from outside its arguments (a model's weights from its closure):
    constants of the program, which under a tape that differentiates them would pass no gradient back. Every
    op's inputs pass through ``take`` while the function is traced (``_state.CLOSED``, read by core.record)."""

    __slots__ = ("found",)

    def __init__(self):
        self.found = {}

    def take(self, args, inner=()):
        tracer = TRACER.get()
        for a in args:
            # any tensor, not only one differentiated now: a tape may watch it, or record it, at a later call (inside
            # a vmapped step, which runs f again at each call, no tracer: its batched values are its own)
            if isinstance(a, Tensor) and a.__class__ is not Batched and (tracer is None or not tracer.traces(a._data)):
                self.found[id(a)] = weakref.ref(a)
        return args


class Compiled:
    """A compiled function: call it as ``fn``. ``cache_info()``, ``programs``, ``source`` and ``explain()``
    show what it compiled."""

    def __init__(self, fn, donate_argnums, maxsize, check, arena_limit=None, fuse=None):
        self.fn = fn
        self.fuse = _fuse_by_default() if fuse is None else fuse
        self.arena_limit = arena_limit
        self.donate_argnums = donate_argnums
        n = _positional_count(fn)  # where the signature says how many, an index beyond them is refused now
        self._donated = _checked_donations(fn, donate_argnums, n) if n is not None else None
        self._donated_per_count: dict = {}  # else per call: the number of positional arguments -> positions
        self.maxsize = maxsize
        self.check = check
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = 0
        self._last = None
        functools.update_wrapper(self, fn)

    # -- calling ---------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if TRACING.n and (TRACER.get() is not None or FORWARD.get() or BATCH.get()):
            # inside another trace (its ops are that program's), forward mode or vmap (their tangents and batches
            # follow the ops): as Python
            return self.fn(*args, **kwargs)
        leaves, spec = tree_flatten((args, kwargs), static=True)
        if ACTIVE.get() and any(_differentiated(x) for x in leaves):  # a tape differentiates the arguments
            return self.fn(*args, **kwargs)
        arrays = [
            x._data if isinstance(x, Tensor) else (np.asarray(x) if isinstance(x, np.generic) else x) for x in leaves
        ]
        donated = self._donatable(args, arrays) if self.donate_argnums else ()
        # NumPy arrays' strides too: the program's buffers follow the traced layouts, which set the order of sums
        key = (spec, tuple([(a.__class__, a.shape, a.dtype, getattr(a, "strides", None)) for a in arrays]), donated)
        entry = self._cache.get(key)
        if entry is None:
            out = self._trace(key, spec, arrays, donated)
            return self.fn(*args, **kwargs) if out is _AS_PYTHON else out
        if entry.outside and ACTIVE.get() and entry.reads_differentiated():
            return self.fn(*args, **kwargs)  # a tape differentiates what the program reads as a constant
        with self._lock:
            self._hits += 1
            self._cache.move_to_end(key)
        self._last = entry
        if not entry.checked:
            return self._checked_call(entry, spec, arrays)
        return tree_unflatten(entry.out_spec, entry.program(arrays))

    def _donatable(self, args, arrays):
        """Per array leaf, whether the call may overwrite it: in a donated argument, a C-contiguous writeable
        NumPy array sharing memory with no other argument."""
        nums = self._donated
        if nums is None:  # a function taking *args: its donations are checked against each call's arguments
            nums = self._donated_per_count.get(len(args))
            if nums is None:
                nums = _checked_donations(self.fn, self.donate_argnums, len(args))
                self._donated_per_count[len(args)] = nums
        counts = []
        for i, a in enumerate(args):
            counts.append((i, len(tree_flatten(a, static=True)[0])))
        flags, k = [], 0
        roots: dict = {}
        for a in arrays:
            root = id(memory_root(a))
            roots[root] = roots.get(root, 0) + 1
        for i, n in counts:
            for a in arrays[k : k + n]:
                ok = (
                    i in nums
                    and a.__class__ is np.ndarray
                    and a.flags.c_contiguous
                    and a.flags.writeable
                    and a.flags.aligned
                    and a.ndim >= 1
                    and roots[id(memory_root(a))] == 1
                )
                flags.append(ok)
            k += n
        flags.extend([False] * (len(arrays) - len(flags)))  # keyword arguments are never donated
        return tuple(flags)

    def _trace(self, key, spec, arrays, donated):
        with _gc_paused():
            t0 = time.perf_counter()
            reads = _OutsideReads()
            token = CLOSED.set(CLOSED.get() + (reads,))
            try:
                graph, out_spec, first = trace(self.fn, arrays, spec)
            finally:
                CLOSED.reset(token)
            t1 = time.perf_counter()
            names = _leaf_names(self.fn, spec)
            program = build(graph, donated, getattr(self.fn, "__name__", "program"), self.arena_limit, names, self.fuse)
        program.info.update(trace_s=t1 - t0, build_s=time.perf_counter() - t1)
        generators = [
            c.value
            for n in graph.steps
            if n.random
            for c in _consts(n.params)
            if isinstance(c.value, np.random.Generator)
        ]
        entry = _Entry(program, out_spec, not self.check, generators, tuple(reads.found.values()))
        with self._lock:
            self._misses += 1
            self._cache[key] = entry
            while len(self._cache) > self.maxsize:
                self._cache.popitem(last=False)
        self._last = entry
        if entry.outside and ACTIVE.get() and entry.reads_differentiated():
            return _AS_PYTHON  # before a donated argument is overwritten: the call runs as Python instead
        results = []
        overwritten = {
            id(o): v
            for v in graph.inputs
            for o in [program.plan.donated.get(id(v))]
            if o is not None and o.step is not None and program.plan.inplace.get(id(o.step)) is v
        }
        for o, r in zip(graph.outputs, first):
            if isinstance(o, Const) and isinstance(r, np.ndarray):
                r = r.copy()  # as the program returns it: the constant itself stays the program's
            elif id(o) in overwritten:  # as the program will: the new value in the donated array
                target = arrays[overwritten[id(o)].input_index]
                np.copyto(target, r)
                mark_modified(target)
                r = target
            results.append(r)
        return tree_unflatten(out_spec, results)

    def _checked_call(self, entry, spec, arrays):
        """The first run of a program: the function also runs eagerly, and both must agree (the collector
        paused, as while tracing: the eager run's tape is as large as the trace's, and numba's first load of
        the kernels makes as many objects again)."""
        with _gc_paused():
            return self._check(entry, spec, arrays)

    def _check(self, entry, spec, arrays):
        entry.checked = True
        states = [g.bit_generator.state for g in entry.generators]
        call_args, call_kwargs = tree_unflatten(spec, [Tensor._wrap(a) for a in arrays])
        # as a user calling the function eagerly runs it: under no tape (not even a caller's), so the transforms
        # inside replay their tapes on arrays, not recorded as the trace needed them for their rules' ops (a
        # third of the time, the same values)
        with stop_recording(), keep_pending():
            expected, _ = tree_flatten(self.fn(*call_args, **call_kwargs), static=True)
        for g, s in zip(entry.generators, states):
            g.bit_generator.state = s
        got = entry.program(arrays)
        for j, (e, g) in enumerate(zip(expected, got)):
            e = e._data if isinstance(e, Tensor) else e
            if not _close(e, g):
                raise TracingError(
                    f"{getattr(self.fn, '__name__', 'the function')}: compiled and eager results differ at output "
                    f"{j} (shape {np.shape(g)}). The program computed something from values fixed at trace time: "
                    "most often NumPy called on a traced value's array (np.where(t.data > 0, ...), a value read "
                    "through x._data), or a global or closure array rebound between calls. Compute it with "
                    "tapegrad ops, or pass it as an argument (tg.compile(fn, check=False) skips this check)"
                )
        return tree_unflatten(entry.out_spec, got)

    # -- what it compiled ------------------------------------------------------------------------------
    def cache_info(self) -> CacheInfo:
        """Hits (calls that ran a program), misses (traces) and the cache's size, as functools' caches give."""
        return CacheInfo(self._hits, self._misses, self.maxsize, len(self._cache))

    @property
    def trace_count(self) -> int:
        """How many times the function was traced (each new signature once, again after eviction)."""
        return self._misses

    @property
    def programs(self) -> list:
        """The cached programs, least recently used first."""
        return [e.program for e in self._cache.values()]

    @property
    def program(self) -> Program:
        """The program the last call used (call the function once first)."""
        if self._last is None:
            raise TracingError("no program yet: a compiled function is traced by its first call; call it once")
        return self._last.program

    @property
    def source(self) -> str:
        """The generated source of the program the last call used (call the function once first)."""
        if self._last is None:
            raise TracingError("no program yet: a compiled function is traced by its first call; call it once")
        return self._last.program.source

    def explain(self) -> str:
        """The last call's program: what it keeps between calls, then its source."""
        if self._last is None:
            raise TracingError("no program yet: a compiled function is traced by its first call; call it once")
        return self._last.program.explain()

    def clear_cache(self) -> None:
        """Forget every program (the next call traces again)."""
        with self._lock:
            self._cache.clear()
            self._last = None

    def __repr__(self) -> str:
        return f"<compiled {getattr(self.fn, '__name__', 'function')}: {len(self._cache)} program(s)>"

    def _repr_html_(self) -> str:
        """What a notebook shows: the function, its programs, and the source of the last call's program.

        >>> import numpy as np, tapegrad as tg
        >>> f = tg.compile(lambda x: tg.exp(x) * 2, fuse=False)  # one NumPy call per op, with numba or without
        >>> "call it once" in f._repr_html_()
        True
        >>> _ = f(np.ones(2))
        >>> "&lt;compiled &lt;lambda&gt;: 1 program(s)&gt;" in f._repr_html_(), "v1 = exp(x0)" in f._repr_html_()
        (True, True)
        """
        head = f"<div><b>{esc(repr(self))}</b></div>"
        if self._last is None:
            return STYLE + head + "<div>not traced yet: call it once to see its program</div>"
        return STYLE + head + f'<pre class="tapegrad">{esc(self._last.program.source)}</pre>'


def _fuse_by_default() -> bool:
    """``fuse=None``: fused where numba is installed, unless the environment says ``TAPEGRAD_FUSE=0``."""
    return os.environ.get("TAPEGRAD_FUSE", "1") != "0" and fusion_available()


@contextlib.contextmanager
def _gc_paused():
    """Python's cycle collector off while a program is traced and built: a trace makes objects by the hundred
    thousand, all alive until it ends, and each full collection would walk them all again (half the time of
    compiling a 30,000-op program, measured by ``benchmarks/compile_time.py``; 60% of the eager run that checks
    a program's first run). It runs again after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def build(graph, donated=(), name="program", arena_limit=None, input_names=(), fuse=False) -> Program:
    """Optimise, schedule, plan and generate the program of ``graph`` (with fused kernels if ``fuse``)."""
    traced = len(graph.steps)
    simplify(graph)
    common_subexpressions(graph)
    dead_code(graph)
    kernels: dict = {}
    matched = _match_donations(graph, donated)
    schedule(graph, frees(kernels), donation_edges(graph, matched))
    fuse_updates(graph, matched, kernels)  # each step lowered once: these two forget the steps they rewrite
    accumulate_scatters(graph, kernels)
    runs = find_runs(graph, kernels) if fuse else []
    p = plan(graph, arena_limit=arena_limit, donated=matched, runs=runs, kernels=kernels)
    copies = {j for j, o in enumerate(graph.outputs) if isinstance(o, Const) and isinstance(o.value, np.ndarray)}
    source, namespace = generate(graph, p, copies, input_names, runs)
    info = {"name": name, "traced_ops": traced, "fused_runs": len(runs), "fused_ops": sum(len(r.steps) for r in runs)}
    forget_inputs(graph.steps)
    return Program(graph, p, source, namespace, info)


def _leaf_names(fn, spec) -> list:
    """What each array argument is, as source: ``params['W']``, ``X``, ``state[0]['step']`` (the function's
    parameter names where it has a signature)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    out: list = []
    args_spec, kwargs_spec = spec[2]

    def walk(node, path):
        if node is LEAF:
            out.append(path)
        elif isinstance(node, tuple) and len(node) == 3 and isinstance(node[0], type):
            kind, keys, children = node
            for k, child in enumerate(children):
                walk(child, f"{path}[{keys[k]!r}]" if keys is not None else f"{path}[{k}]")

    for i, child in enumerate(args_spec[2]):
        walk(child, names[i] if i < len(names) and not _is_varargs(fn, i) else f"args[{i}]")
    for key, child in zip(kwargs_spec[1], kwargs_spec[2]):
        walk(child, key)
    return out


def _is_varargs(fn, i) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params[: i + 1])


def _match_donations(graph, donated) -> dict:
    """id(donated input value) -> the output value (same shape, dtype and type; in order) written over it."""
    free = [v for v, ok in zip(graph.inputs, donated) if ok]
    matched: dict = {}
    taken: set = set()
    for o in graph.outputs:
        if not isinstance(o, Value) or o.step is None or id(o) in taken:
            continue
        for v in free:
            if id(v) not in matched and v.shape == o.shape and v.dtype == o.dtype and v.kind is o.kind:
                matched[id(v)] = o
                taken.add(id(o))
                break
    return matched


def _consts(obj):
    if isinstance(obj, Const):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _consts(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _consts(x)


_AS_PYTHON = object()  # what _trace returns for a call that runs as Python


def _differentiated(x) -> bool:
    if not isinstance(x, Tensor):
        return False
    return x._node is not None or x.requires_grad or id(x) in WATCHED.get()


def _close(expected, got) -> bool:
    e = np.asarray(to_numpy(expected) if not isinstance(expected, (np.ndarray, np.generic, int, float)) else expected)
    g = np.asarray(to_numpy(got) if not isinstance(got, (np.ndarray, np.generic, int, float)) else got)
    if e.shape != g.shape:
        return False
    if e.dtype.kind not in "fc":
        return bool(np.array_equal(e, g))
    rtol = 1e-4 if e.dtype.itemsize * (2 if e.dtype.kind == "f" else 1) <= 8 else 1e-7
    scale = float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)) if e.size else 0.0
    return bool(np.allclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True))
