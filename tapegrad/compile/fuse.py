"""Fused kernels (the ``jit`` extra, numba): a run of elementwise steps becomes one generated loop.

:func:`find_runs` takes the scheduled steps and cuts them into **runs**: consecutive steps that are each one
scalar expression (:func:`.kernels.scalar`: ``LOWERINGS["numba"]``, else the ufunc the step's NumPy kernel
calls), compute arrays of the same shape, and number at most ``MAX_RUN`` (LLVM's time grows faster than the
function, so kernels stay small). On arrays of ``LARGE`` elements or more, the transcendental functions
(``SIMD_UFUNCS``) stay NumPy's calls: its SIMD loops are faster than numba's scalar libm; except ``tanh`` of
float64 where NumPy's own loop is not AVX-512's (:func:`vector_tanh`): there it is arithmetic LLVM vectorises
(:mod:`.vecmath`), so a chain's forward and its loss are one loop. The forward of a chain is such a run, and so is its gradient, and the
elementwise work after a matrix product (the bias, ``relu`` and its mask, the loss). A run becomes one call
of a generated loop over the elements: each argument read once per element at the top of the loop, the
values of the run kept in local variables, and only the values the rest of the program reads (its
**outputs**) stored, at the bottom. The values inside a run never exist as arrays. A ``sum`` or ``mean`` over
every element that ends a run becomes the loop's accumulator: the loop walks NumPy's pairwise tree
(:mod:`.pairwise`), so the value it reduces never exists either and the result is NumPy's to the bit (fused
only where that value is C-contiguous, the order in which NumPy sums it). A constant array of one value
throughout (the ones a gradient starts from) is a number in the loop, read from no memory.

On arrays of ``LARGE`` elements, memory traffic is what a stored value costs: a step that would end a run
there (the loss of a value and gradient, summed by NumPy after a loop through ``vtanh``) goes after the
fusible steps that continue the run when none of them reads it (:func:`_sink`), and a run may be
``LARGE_RUN_FACTOR`` times as long, so that a chain's forward and its gradient are one loop that stores only
its outputs. A loop through ``vtanh`` runs over two halves of its innermost axis at once (:func:`_two_halves`).

On arrays of at most ``ARENA_RUN`` elements a kernel's call costs more than its loop (numba unboxes every array
it is given, and finds the machine code anew from their types). There a kernel reads and writes the planned
buffers through the program's arena, one array, given with the values' offsets in it (:func:`arena_slots`);
consecutive runs of one structure with the same other arguments (the cycles of an unrolled loop, which a run
at its length limit ends after whole cycles of, :func:`_whole_cycles`) are one call, a row of offsets each;
and after a program's first run each kernel is called by its machine code (:func:`entry_point`). The
1,000-cycle chain of ``python -m benchmarks.speed --fused`` is then six calls, where it was 250.

The memory plan (:mod:`.plan`) sees a run as one position: every value it reads is alive until the run ends
and every value it writes from its start, so no output shares memory with an argument of the same run, but
an output of the shape and layout of an argument that dies in the run, written element by element over it
(read at the top, written at the bottom).

The kernels' source is Python (shown after the program's in ``step.source``); numba compiles each once, with
``cache=True``, from a file named by a hash of its source in the kernel cache directory (``TAPEGRAD_CACHE``,
else ``~/.cache/tapegrad/kernels``), so a second process loads the machine code instead of compiling it, and
runs of the same structure (a chain's cycles) share one kernel. Each step is computed in its ufunc's loop
dtype and rounded to its own dtype, as NumPy does, so the arithmetic (``+ - * /``, comparisons, selects) is
the same to the bit; the transcendental functions are numba's (LLVM's libm) where the unfused program calls
NumPy's, within a few ulps of each other per op (``tests/test_fusion.py`` states the bound it checks).

Kernels are compiled with ``error_model="numpy"``: a division is IEEE's, as in NumPy, without the check for a
zero divisor whose branch keeps LLVM from vectorising the loop.

Without numba the program is the unfused one, NumPy's calls (the same results as eager, bit for bit).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import pathlib
import re
import sys
import threading

import numpy as np

from .graph import Const, Value
from .kernels import SIMD_UFUNCS, Scalar, lowered, scalar
from .pairwise import DEPTH, LEAF, after_leaf, descend, leaf_sum
from .vecmath import tanh as _vtanh

__all__ = [
    "ARENA_RUN",
    "MAX_RUN",
    "arena_slots",
    "Run",
    "available",
    "find_runs",
    "kernel_source",
    "cache_dir",
    "load_kernel",
    "KERNELS",
    "Watch",
    "entry_point",
    "is_array",
]

MAX_RUN = 48  # steps per fused kernel
LARGE_RUN_FACTOR = 2  # on LARGE arrays a run may be longer: a pass over memory saved outweighs LLVM's time
LARGE = 1 << 16  # elements from which exp, log, tanh... stay NumPy's calls (its SIMD loops)
# elements up to which a kernel reads and writes planned buffers through the arena: there the calls it saves cost
# more than its indexed loop (measured on a chain of 100 cycles: 16 elements 85 µs a call against 113, 128
# elements the same, 512 elements 1.2x slower)
ARENA_RUN = 1 << 7
_lock = threading.Lock()
KERNELS: dict = {}  # kernel source -> the compiled function (numba's dispatcher), one per structure per process
_NUMBA: dict = {}


# the helpers a kernel's module calls (pairwise sums, vecmath), replaced there by their numba compilations
_PAIRWISE_HELPERS = ("leaf_sum", "descend", "after_leaf", "vtanh")
_VECTORISED = frozenset((np.tanh,))  # the ufuncs a large fused loop computes as vecmath's
_VECMATH_IMPORT = "from tapegrad.compile.vecmath import tanh as vtanh"


def vector_tanh() -> bool:
    """Whether a fused loop over a large float64 array computes ``tanh`` as :func:`.vecmath.tanh` rather than
    leaving it to NumPy's call: where NumPy's ``tanh`` runs its AVX-512 loop it is as fast as the fused one
    (1.4 ms per 10^6 elements against 2.2), elsewhere (AVX2) NumPy's is a scalar call per element, 3.7x the
    fused one (``python -m benchmarks.speed --fused``, the wide row). ``TAPEGRAD_VECTOR_TANH=0`` or ``1``
    decides it."""
    if "vtanh" not in _NUMBA:
        forced = os.environ.get("TAPEGRAD_VECTOR_TANH")
        if forced in ("0", "1"):
            _NUMBA["vtanh"] = forced == "1"
        else:
            try:
                from numpy.lib.introspect import opt_func_info  # noqa: PLC0415  (NumPy >= 2.0)

                current = opt_func_info(func_name="^tanh$", signature="float64")["tanh"]["dd"]["current"]
            except (ImportError, KeyError, TypeError):
                current = ""
            _NUMBA["vtanh"] = not any(t in current for t in ("AVX512", "X86_V4"))
    return _NUMBA["vtanh"]


def available() -> bool:
    """Whether numba is installed (``pip install tapegrad[jit]``); imported on the first fused program only."""
    if "ok" not in _NUMBA:
        try:
            import numba  # noqa: PLC0415, F401  (optional, and slow to import)

            _NUMBA["ok"] = True
        except ImportError:
            _NUMBA["ok"] = False
    return _NUMBA["ok"]


class Run:
    """Consecutive steps fused into one kernel: ``args`` read from outside, ``outputs`` read after it (or
    returned), ``inside`` the ids of the values no one else reads (never arrays)."""

    __slots__ = ("steps", "scalars", "args", "outputs", "inside", "shape", "_source", "name", "numbers")

    def __init__(self, steps, scalars):
        self.steps = steps
        self.scalars = scalars
        self.args: list = []
        self.outputs: list = []
        self.inside: set = set()
        self.shape = steps[0].out.shape
        self._source = None
        self.name = None
        self.numbers: dict = {}  # id(const array) -> its one value, a number in the loop (uniform_constants)

    @property
    def source(self) -> str:
        """The kernel's loop (:func:`kernel_source`), written when first read: a program on the arena writes
        another (:func:`arena_slots`)."""
        if self._source is None:
            self._source = kernel_source(self)
        return self._source

    @source.setter
    def source(self, text):
        self._source = text


def _fusible(step, kernels):
    k = kernels.get(id(step)) or lowered(kernels, step)
    out = step.out
    if not (out.kind is np.ndarray and k.fresh):
        return None
    s = scalar(step, k)
    if s is not None and s.reduce:
        return s
    if not (k.elementwise and k.out_style is not None):
        return None
    if s is None:
        return None
    shape = out.shape
    if k.fn in SIMD_UFUNCS and math.prod(shape) >= LARGE:
        if not (k.fn in _VECTORISED and out.dtype == s.dtypes[0] == np.float64 and vector_tanh()):
            return None  # NumPy's SIMD loop is faster there than a fused scalar call
        s = Scalar(s.args, s.dtypes, _vtanh_expr)  # arithmetic LLVM vectorises (vecmath)
    for a in s.args:  # each argument broadcasts to the step's shape (never the other way) and is a NumPy array
        if isinstance(a, Value):
            if not (a.kind is np.ndarray and _broadcasts(a.shape, shape)):
                return None
        elif isinstance(a, Const):
            if not isinstance(a.value, (np.ndarray, int, float, bool)):
                return None
            if isinstance(a.value, np.ndarray):
                if a.value.dtype.kind not in "biuf" or not _broadcasts(a.value.shape, shape):
                    return None
    return s


def _vtanh_expr(xs) -> str:
    return f"vtanh({xs[0]})"


def is_array(a, numbers=None) -> bool:
    """Whether a step's argument is an array (a value, or a constant array) rather than a number; with
    ``numbers`` (:func:`uniform_constants`), a constant array of one value throughout (a gradient's ones) is
    that number, read from no memory."""
    if isinstance(a, Value):
        return True
    return isinstance(a, Const) and isinstance(a.value, np.ndarray) and (numbers is None or id(a) not in numbers)


def uniform_constants(scalars, known=None) -> dict:
    """``id(const) -> number`` for the constant arrays among the arguments of ``scalars`` that hold one value
    throughout (a number of their dtype, the same to the ufunc once cast to its loop's dtype). ``known``: a
    dict kept between calls (``id(const) -> number or None``), so that each constant is read once."""
    numbers = {}
    known = {} if known is None else known
    for s in scalars:
        for a in s.args:
            if isinstance(a, Const) and id(a) not in numbers:
                k = id(a)
                if k not in known:
                    known[k] = _uniform_value(a.value)
                if known[k] is not None:
                    numbers[k] = known[k]
    return numbers


def _uniform_value(v):
    """The one value of array ``v`` (a Python number), or None where it holds several (or is no array)."""
    if not isinstance(v, np.ndarray):
        return None
    first = v.reshape(-1)[:1]
    if v.size and v.dtype.kind in "biuf" and bool((v == first[0]).all()):
        return first[0].item()
    return None


def _broadcasts(shape, to) -> bool:
    if shape == to:  # most arguments of a run: taken first, as it costs a tenth of the general test
        return True
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1]))


def find_runs(graph, kernels, max_run=MAX_RUN) -> list:
    """The runs of the scheduled ``graph`` (see the module docstring), each of at least two steps. On arrays of
    ``LARGE`` elements a run may hold ``LARGE_RUN_FACTOR`` times ``max_run`` steps, and a step that would end a
    run there goes after the steps that continue it where it may (:func:`_sink`): a chain's forward and its
    gradient are then one loop."""
    runs, current, scalars = [], [], []
    steps = graph.steps
    found = [_fusible(n, kernels) for n in steps]

    def close(keep=0):
        """End the run, but for its last ``keep`` steps, which begin the next one."""
        cut = len(current) - keep
        if cut >= 2:
            runs.append(Run(current[:cut], scalars[:cut]))
        del current[:cut], scalars[:cut]

    i = 0
    while i < len(steps):
        n, s = steps[i], found[i]
        large = current and math.prod(current[0].out.shape) >= LARGE
        limit = LARGE_RUN_FACTOR * max_run if large else max_run
        ends = bool(current) and s is not None and s.reduce and len(current) < limit and _ends(current, scalars, s)
        if large and (s is None or s.reduce) and not ends and _sink(steps, found, i, kernels):
            continue  # ``n`` now follows the steps that continue the run; ``steps[i]`` is the first of them
        i += 1
        if s is not None and s.reduce:
            if current and ends:
                current.append(n)
                scalars.append(s)
            close()  # the reduction ends its run (its value is ready only after the loop)
            continue
        if s is None:
            close()
            continue
        if current and n.out.shape != current[0].out.shape:
            close()
        elif len(current) >= limit:
            close(_whole_cycles(current))
        current.append(n)
        scalars.append(s)
    close()
    if runs:
        _connect(graph, runs)
    return runs


def _whole_cycles(steps) -> int:
    """How many of the last ``steps`` of a run at its length limit to leave to the next, so that it ends after
    a whole number of the cycles its steps repeat in (the ops of an unrolled loop, forward or backward): then
    the runs after it start where it did in the cycle, have one structure, share one kernel and, on the arena,
    one call. The cycle is the shortest repetition at its end of the steps' ops and dtypes; 0 if none."""
    keys = [(n.name, n.out.dtype) for n in steps]
    k = len(keys)
    for p in range(1, k // 2 + 1):
        if keys[k - p :] == keys[k - 2 * p : k - p]:
            return k % p
    return 0


def _sink(steps, found, i, kernels) -> bool:
    """Move ``steps[i]``, which would end a run of ``LARGE`` elements (a step not fused, or a reduction the
    run cannot end: the loss of a value and gradient through ``vtanh``), after the fusible steps of the run's
    shape that follow it, when none of them reads it, so that the run goes on through them; whether it moved.
    A stored value costs a pass over memory to write it and one to read it back, more than a loop's arithmetic
    (measured: the wide row of ``python -m benchmarks.speed --fused``, whose forward stored ten arrays of 8 MB
    for its gradient's loop). ``found``: each step's :func:`_fusible`, moved with it. A draw, or a step
    writing over its argument, stays where it is."""
    n, shape = steps[i], steps[i - 1].out.shape
    if n.random or lowered(kernels, n).writes is not None:
        return False
    j = i + 1
    while j < len(steps) and _extends(steps[j], found[j], shape, n.out):
        j += 1
    if j == i + 1:
        return False
    steps.insert(j - 1, steps.pop(i))
    found.insert(j - 1, found.pop(i))
    return True


def _extends(n, s, shape, value) -> bool:
    """Whether step ``n`` (``s``: its :func:`_fusible`) continues a run of ``shape`` without reading ``value``."""
    return (
        s is not None
        and not s.reduce
        and n.out.shape == shape
        and not n.random
        and not any(v is value for v in n.inputs())
    )


def _ends(steps, scalars, reduction) -> bool:
    """Whether ``reduction`` may end the run of ``steps``: it reduces a C-contiguous value the run computes (so
    that NumPy sums it in C order, as the loop does), and the loop's shape can be read from one of the run's
    array arguments."""
    x, shape = reduction.args[0], steps[0].out.shape
    if any(s.expr is _vtanh_expr for s in scalars):
        # the reduction's loop, over pieces of a pairwise leaf, is not vectorised: its vtanh would be a scalar
        # loop (measured 8x slower), so NumPy sums the stored value (one more pass over memory)
        return False
    computed = {id(n.out) for n in steps}
    if id(x) not in computed or x.shape != shape or not x.c_contiguous:  # C order: NumPy's order of summing
        return False
    numbers = uniform_constants(scalars)
    arrays = (a for s in scalars for a in s.args if is_array(a, numbers) and id(a) not in computed)
    return any(_shape(a) == shape for a in arrays)


def _connect(graph, runs) -> None:
    """Each run's arguments (read from outside it), outputs (read after it) and inside values."""
    readers: dict = {}  # value -> how many steps outside its run read it, or it is an output (keyed by the
    # objects, which hash by identity)
    run_of = {n: r for r in runs for n in r.steps}
    get = run_of.get
    for n in graph.steps:
        r = get(n)
        for v in n.inputs():
            p = v.step
            if p is None or get(p) is not r:
                readers[v] = readers.get(v, 0) + 1
    for o in graph.outputs:
        if isinstance(o, Value):
            readers[o] = readers.get(o, 0) + 1
    known: dict = {}  # the constants' one values, shared by the runs (a chain's cycles read the same ones)
    for r in runs:
        numbers = r.numbers = uniform_constants(r.scalars, known)
        computed: set = set()
        args = r.args
        taken: set = set()
        for n, s in zip(r.steps, r.scalars):
            for a in s.args:
                if (a.__class__ is Value or is_array(a, numbers)) and a not in computed and a not in taken:
                    args.append(a)
                    taken.add(a)
            computed.add(n.out)
            if readers.get(n.out):
                r.outputs.append(n.out)
            else:
                r.inside.add(id(n.out))


def _shape(a):
    return a.shape if isinstance(a, Value) else np.shape(a.value)


def _cast(dtype) -> str:
    dtype = np.dtype(dtype)
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def _literal(x) -> str:
    if isinstance(x, float) and not np.isfinite(x):
        return "np.nan" if np.isnan(x) else ("np.inf" if x > 0 else "-np.inf")
    return repr(x)


def kernel_source(run, slots=None) -> str:
    """The loop of ``run``, as Python for numba: ``def kernel(a0, ..., o0, ...)``, the arguments then the outputs
    (arrays the caller gives), named by position only, so that runs of the same structure have one source. A
    reduction that ends the run (:func:`_ends`) is summed as NumPy sums (:func:`_reduction_source`).

    ``slots`` (:func:`arena_slots`): the ids of the arguments and outputs read and written through the
    program's arena instead, ``def kernel(arena, slots, a1, ..., o2, ...)``, with the loop's shape and each
    one's offset in ``slots`` (:func:`_arena_source`)."""
    if slots:
        return _arena_source(run, slots)
    ndim = len(run.shape)
    names: dict = {}
    loads = []
    for j, a in enumerate(run.args):
        loads.append(_load(j, a, run.shape))
        names[id(a)] = f"x{j}"
    body = [_step_line(t, n, s, names, run.numbers) for t, (n, s) in enumerate(zip(run.steps, run.scalars))]
    params = [f"a{j}" for j in range(len(run.args))] + [f"o{q}" for q in range(len(run.outputs))]
    reduction = run.scalars[-1] if run.scalars[-1].reduce else None
    imports = ["import numpy as np"] + ([_VECMATH_IMPORT] if any("vtanh(" in line for line in body) else [])
    if reduction is not None:
        body.pop()
        return _reduction_source(run, params, loads + body, names[id(reduction.args[0])], imports)
    index = ", ".join(f"i{d}" for d in range(ndim)) if ndim else "()"
    stores = [f"o{q}[{index}] = {names[id(o)]}" for q, o in enumerate(run.outputs)]
    out = [*imports, "", f"def kernel({', '.join(params)}):"]
    indent = "    "
    lines = loads + body + stores
    if ndim and any("vtanh(" in line for line in body):
        return "\n".join(out + _two_halves(lines, ndim)) + "\n"
    for d in range(ndim):
        out.append(f"{indent}for i{d} in range(o0.shape[{d}]):")
        indent += "    "
    out += [indent + line for line in lines]
    return "\n".join(out) + "\n"


def arena_slots(run, where, limit=ARENA_RUN):
    """Which of ``run``'s arguments and outputs its loop reads and writes through the program's arena: on
    arrays of at most ``limit`` elements, where a kernel's call costs more than its loop (numba unboxes each
    array argument anew; measured, a call with 20 arrays of 4 elements 1.4 µs, with the arena, its offsets
    and 4 arrays 0.5 µs), the values of the run's shape that live in planned buffers of one dtype, at least
    two of them. ``where(value)``: its byte offset in the arena, or None.
    Returns ``(dtype, {id(value): element offset})``, or None."""
    if not run.shape or math.prod(run.shape) > limit or run.scalars[-1].reduce:
        return None
    if any(s.expr is _vtanh_expr for s in run.scalars):
        return None
    found: dict = {}
    for v in list(run.args) + list(run.outputs):
        if isinstance(v, Value) and v.shape == run.shape and id(v) not in found:
            offset = where(v)
            if offset is not None:
                found[id(v)] = (v.dtype, offset)
    if not found:
        return None
    counts: dict = {}
    for dtype, _ in found.values():
        counts[dtype] = counts.get(dtype, 0) + 1
    dtype = max(counts, key=counts.get)
    if counts[dtype] < 2:
        return None
    return dtype, {k: offset // dtype.itemsize for k, (dt, offset) in found.items() if dt == dtype}


def _load(j, a, shape) -> str:
    """``x{j} = a{j}[...]``: argument ``j`` read for the loop's element, along the axes it has of the loop's
    ``shape`` (index 0 along those it broadcasts); a 0-d one is passed as a number."""
    own = _shape(a)
    lead = len(shape) - len(own)
    at = ", ".join(f"i{lead + d}" if own[d] != 1 or shape[lead + d] == 1 else "0" for d in range(len(own)))
    return f"x{j} = a{j}" + (f"[{at}]" if own else "")


def _arena_source(run, slots) -> str:
    """The loop of ``run`` reading and writing the values in ``slots`` in the arena, for each row ``g`` of the
    call's ``slots``: ``slots[g, k]``, the k-th one's offset in elements (arguments, then outputs, in their
    order), then the loop's shape. Those values are C-contiguous arrays of the loop's shape, so one count of
    the elements visited, in C order, indexes them all; the other arrays are indexed as in
    :func:`kernel_source`. Consecutive runs of one structure with the same other arrays (a chain's cycles) are
    one call, a row each, run in order: what each writes, the next reads, as separate calls would."""
    ndim = len(run.shape)
    names: dict = {}
    loads, params, offsets = [], ["arena", "slots"], []
    for j, a in enumerate(run.args):
        if id(a) in slots:
            offsets.append(f"s{len(offsets)}")
            loads.append(f"x{j} = arena[{offsets[-1]} + f]")
        else:
            loads.append(_load(j, a, run.shape))
            params.append(f"a{j}")
        names[id(a)] = f"x{j}"
    body = [_step_line(t, n, s, names, run.numbers) for t, (n, s) in enumerate(zip(run.steps, run.scalars))]
    index = ", ".join(f"i{d}" for d in range(ndim))
    stores = []
    for q, o in enumerate(run.outputs):
        if id(o) in slots:
            offsets.append(f"s{len(offsets)}")
            stores.append(f"arena[{offsets[-1]} + f] = {names[id(o)]}")
        else:
            stores.append(f"o{q}[{index}] = {names[id(o)]}")
            params.append(f"o{q}")
    out = ["import numpy as np", "", f"def kernel({', '.join(params)}):"]
    out.append("    for g in range(slots.shape[0]):  # the runs of this structure called one after the other")
    out += [f"        {s} = slots[g, {k}]" for k, s in enumerate(offsets)]
    out.append("        f = 0  # the elements visited, in C order: the index of each value in the arena")
    indent = "        "
    for d in range(ndim):
        out.append(f"{indent}for i{d} in range(slots[g, {len(offsets) + d}]):")
        indent += "    "
    out += [indent + line for line in loads + body + stores + ["f += 1"]]
    return "\n".join(out) + "\n"


_LOCAL = re.compile(r"\b([xt]\d+)\b")


def _two_halves(lines, ndim) -> list:
    """The loop body ``lines`` over the innermost axis in two halves at once, an element of each per iteration,
    their steps interleaved (then the middle element of an odd length): a chain through ``vtanh`` is a long
    sequence of dependent operations, and an element of the other half gives the processor independent work
    to do while each one waits (measured: the wide row's loop 40 -> 28 ms; LLVM's time to compile it about
    doubles, once, as kernels are cached on disk). Each element is still read before it is written, in the
    same iteration, so an output written over an argument stays correct."""
    last = ndim - 1
    at = re.compile(rf"\bi{last}\b")
    out, indent = [], "    "
    for d in range(last):
        out.append(f"{indent}for i{d} in range(o0.shape[{d}]):")
        indent += "    "
    out.append(f"{indent}h = o0.shape[{last}] // 2")
    out.append(f"{indent}for i{last} in range(h):")
    for line in lines:
        other = at.sub(f"i{last} + h", _LOCAL.sub(r"\1_", line))  # the other half's element, its own names
        out += [f"{indent}    {line}", f"{indent}    {other}"]
    out.append(f"{indent}if o0.shape[{last}] % 2:")
    out += [f"{indent}    {at.sub('h + h', line)}" for line in lines]
    return out


def _step_line(t, n, s, names, numbers) -> str:
    """``t{t} = ...``: step ``n`` computed in its loop's dtypes, rounded to its own (see the module docstring)."""
    xs = []
    exact = n.out.dtype.kind == "f"  # a float op of operands of its own dtype gives that dtype in numba too
    for a, dt in zip(s.args, s.dtypes):
        exact = exact and dt == n.out.dtype
        if is_array(a, numbers):
            expr = names[id(a)]
            have = a.dtype if isinstance(a, Value) else getattr(a.value, "dtype", None)
            xs.append(expr if have == dt else f"{_cast(dt)}({expr})")
        else:
            x = numbers[id(a)] if id(a) in numbers else a.value if isinstance(a, Const) else a
            plain = dt == np.float64 and isinstance(x, float) or dt.kind == "b" and isinstance(x, bool)
            xs.append(_literal(x) if plain else f"{_cast(dt)}({_literal(x)})")
    names[id(n.out)] = f"t{t}"
    if s.reduce:
        return ""
    expr = s.expr(xs)
    if exact and expr.startswith("("):
        expr = expr[1:-1]
    return f"t{t} = {expr if exact else f'{_cast(n.out.dtype)}({expr})'}"


def _reduction_source(run, params, lines, value, imports) -> str:
    """The loop of a run ending in a sum or mean of ``value`` over all its elements (the last output): the values
    of each leaf of NumPy's pairwise tree (:mod:`.pairwise`) go to ``buf``, in C order, and are summed as NumPy
    sums them, so the result is NumPy's to the bit."""
    ndim, last = len(run.shape), len(run.shape) - 1
    step = run.steps[-1]
    dtype = _cast(step.out.dtype)
    bound = _bound_name(run)
    outs = [o for o in run.outputs if o is not step.out]
    index = ", ".join(f"i{d}" for d in range(ndim))
    stores = [f"o{q}[{index}] = t{run.steps.index(o.step)}" for q, o in enumerate(outs)]
    out = [
        *imports,
        "from tapegrad.compile.pairwise import after_leaf, descend, leaf_sum",
        "",
        f"def kernel({', '.join(params)}):",
        f"    n = {bound}.shape[{last}]",
        f"    sizes, states = np.empty({DEPTH}, np.int64), np.empty({DEPTH}, np.int64)  # NumPy's pairwise tree",
        f"    sums, buf = np.empty({DEPTH}, {dtype}), np.empty({LEAF}, {dtype})",
        f"    sizes[0], states[0] = {bound}.size, 0",
        "    k = descend(sizes, states, 0)  # the leaf being filled",
        "    nsums = p = 0",
    ]
    indent = "    "
    for d in range(last):
        out.append(f"{indent}for i{d} in range({bound}.shape[{d}]):")
        indent += "    "
    out += [
        f"{indent}start = 0",
        f"{indent}while start < n:  # the innermost axis, in pieces that fill the leaf",
        f"{indent}    stop = min(n, start + sizes[k] - p)",
        f"{indent}    for i{last} in range(start, stop):",
    ]
    out += [f"{indent}        {line}" for line in lines + stores + [f"buf[p + i{last} - start] = {value}"]]
    out += [
        f"{indent}    p += stop - start",
        f"{indent}    start = stop",
        f"{indent}    if p == sizes[k]:",
        f"{indent}        k, nsums = after_leaf(sizes, states, sums, leaf_sum(buf, p, {dtype}(-0.0)), k, nsums)",
        f"{indent}        p = 0",
    ]
    total = f"sums[0] + {dtype}(0)"  # NumPy's reduction starts from +0.0
    if run.scalars[-1].reduce == "mean":  # NumPy's mean divides by the count as an intp (float64 for float32)
        divided = f"({total}) / np.float64({bound}.size)"
        total = divided if dtype == "np.float64" else f"{dtype}(np.float64({total}) / np.float64({bound}.size))"
    at = ", ".join("0" for _ in step.out.shape) or "()"
    out.append(f"    o{len(run.outputs) - 1}[{at}] = {total}")
    return "\n".join(out) + "\n"


def _bound_name(run) -> str:
    """An array of the loop's shape among the kernel's: an output, else an argument (see :func:`_ends`)."""
    for q, o in enumerate(run.outputs):
        if o.shape == run.shape:
            return f"o{q}"
    return next(f"a{j}" for j, a in enumerate(run.args) if _shape(a) == run.shape)


def cache_dir() -> pathlib.Path:
    """Where the kernels' source files (and numba's cache of their machine code, beside them) are kept."""
    root = os.environ.get("TAPEGRAD_CACHE")
    return pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "tapegrad" / "kernels"


def _helpers(numba) -> dict:
    """numba's compilation of :mod:`.pairwise`'s functions and of :func:`.vecmath.tanh`, and a hash of their source (in each kernel's file
    name: a kernel cached on disk has the helpers' machine code in it)."""
    if "helpers" not in _NUMBA:
        jit = numba.njit(cache=True, nogil=True, error_model="numpy")
        found = {fn.__name__: jit(fn) for fn in (leaf_sum, descend, after_leaf)}
        # inlined: a call per element would keep LLVM from vectorising the loop around it
        found["vtanh"] = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")(_vtanh)
        text = pathlib.Path(leaf_sum.__code__.co_filename).read_bytes()
        text += pathlib.Path(_vtanh.__code__.co_filename).read_bytes()
        found["version"] = hashlib.sha1(text).hexdigest()[:12]  # noqa: S324  (a version, not a secret)
        _NUMBA["helpers"] = found
    return _NUMBA["helpers"]


def load_kernel(source: str):
    """The compiled kernel of ``source``: this process's, or from its file in :func:`cache_dir` (numba loads its
    machine code from the disk cache when a process compiled it before)."""
    found = KERNELS.get(source)
    if found is not None:
        return found
    with _lock:
        found = KERNELS.get(source)
        if found is not None:
            return found
        import numba  # noqa: PLC0415  (the jit extra)

        helpers = _helpers(numba)
        digest = hashlib.sha1(  # noqa: S324  (a file name, not a secret)
            (
                f"tapegrad kernel 2 numba {numba.__version__} numpy {np.__version__}\n{helpers['version']}\n" + source
            ).encode()
        ).hexdigest()[:20]
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"k_{digest}.py"
        if not path.exists() or path.read_text() != source:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)  # atomic: another process reading it sees all of it or none
        name = f"tapegrad_kernel_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # numba's disk cache finds the function's module by its name
        spec.loader.exec_module(module)
        for name in _PAIRWISE_HELPERS:  # the kernel calls numba's compilation of them
            if hasattr(module, name):
                setattr(module, name, helpers[name])
        # error_model="numpy": a division is IEEE's (x / 0 is inf, as in NumPy) with no check for a zero divisor,
        # whose branch kept LLVM from vectorising a loop that divides (measured: 5x slower)
        fn = numba.njit(cache=True, nogil=True, error_model="numpy")(module.kernel)
        KERNELS[source] = fn
        return fn


class Watch:
    """A kernel's dispatcher during a program's first call, noting the argument types of each of its calls
    (see :func:`entry_point`)."""

    __slots__ = ("fn", "types")

    def __init__(self, fn):
        self.fn = fn
        self.types: set = set()

    def __call__(self, *args):
        import numba  # noqa: PLC0415  (the jit extra: only a fused program's kernels are watched)

        self.types.add(tuple(numba.typeof(a) for a in args))
        return self.fn(*args)


def entry_point(watch):
    """The machine code that every call ``watch`` saw ran, to be called without numba's dispatch, which finds
    it again from the arguments' types on each call (0.2 of a 0.5 µs call with 5 arguments; measured with
    ``python -m benchmarks.speed --fused``, the chain row); None where the calls had several types. A program's
    calls have the same types each time: its arguments' classes, shapes, dtypes and strides are its cache key,
    and its buffers and constants are its own."""
    from numba.core.dispatcher import Dispatcher  # noqa: PLC0415  (the jit extra)

    # several signatures, or no longer numba's dispatcher (a wrapper, such as a profiler's timer, stays itself)
    if len(watch.types) != 1 or not isinstance(watch.fn, Dispatcher):
        return None
    found = watch.fn.overloads.get(next(iter(watch.types)))
    return None if found is None else found.entry_point
