"""The memory plan: which buffer each value lives in, and when each dies.

From the scheduled steps and each value's last read:

- **In place.** An elementwise NumPy step writes its output over an input of the same shape and dtype when
  that input (and every view of it) is read for the last time by this step and the program allocated it
  (never an argument or a constant, unless the argument was donated).
- **Planned buffers.** Every other value a NumPy step computes into a new array (ufuncs, ``matmul``, sums),
  that does not leave the program and is no larger than ``arena_limit``, gets a region of one arena: a byte
  array the program keeps between calls, into which such values are written with ``out=``. Regions are
  assigned by liveness (a sweep in program order, best fit), so two values share memory when their lifetimes
  do not overlap; the arena's size is the plan's peak.
- **Freed.** A value the program allocates any other way (an op without ``out=``, another library) is
  deleted right after its last read.

Values that may share memory with another (views: reshape, transpose, indexing, and any op not known to
return a new array) live and die together with it: an *alias class*, freed or overwritten only when all of
its members are dead.
"""

from __future__ import annotations

import bisect
import heapq

from .graph import Value
from .kernels import lowered

__all__ = ["Plan", "plan", "frees"]

ALIGN = 64
NEVER = 1 << 60  # the last read of an output: after the program


class Buffer:
    """Memory a step's output needs: planned in the arena, or allocated by the call itself."""

    __slots__ = ("root", "size", "start", "cls", "offset", "name")

    def __init__(self, root, start):
        self.root = root
        self.size = -(-root.nbytes // ALIGN) * ALIGN
        self.start = start
        self.cls = None
        self.offset = None  # set when planned in the arena
        self.name = None


class AliasClass:
    """Values that may share memory: they are all alive until the last of them is read."""

    __slots__ = ("members", "buffers", "foreign", "end")

    def __init__(self):
        self.members: list = []
        self.buffers: list = []  # buffers the program allocated
        self.foreign = False  # holds memory the program does not own: an argument or a constant
        self.end = -1


class Plan:
    """What :func:`plan` decided: per step its kernel (none for a fused run's steps: the run is one call),
    in-place input and buffer; per position the values to delete after it; the arena's size."""

    def __init__(self):
        self.kernels: dict = {}  # id(step) -> Kernel, of the steps outside fused runs
        self.inplace: dict = {}  # id(step) -> the input value its output overwrites
        self.buffer: dict = {}  # id(step) -> Buffer in the arena
        self.free_after: dict = {}  # position -> [values to delete]
        self.arena_bytes = 0
        self.buffers: list = []  # arena buffers, in order of their names
        self.donated: dict = {}  # id(input value) -> the output value written over it
        self.inside: set = set()  # ids of the values inside fused runs (no memory, no name in the source)


def last_reads(steps, outputs, at=None) -> dict:
    """id(value) -> position of its last read (``NEVER`` for an output); ``at``: id(step) -> its position where
    it is not its index (a fused run's steps share one)."""
    last: dict = {}
    for i, n in enumerate(steps):
        if at:
            i = at.get(id(n), i)
        for v in n.inputs():
            last[id(v)] = i
    for o in outputs:
        if isinstance(o, Value):
            last[id(o)] = NEVER
    return last


def frees(kernels):
    """The scheduler's test: does running ``step`` now free more memory than it takes? (``remaining``: value ->
    how many of its reads have not run)"""

    known = kernels.get

    def test(step, remaining):
        k = known(id(step)) or lowered(kernels, step)
        out = step.out
        freed = 0
        dying_same = False
        for v in step.inputs():
            if remaining.get(v, 0) == 1:
                p = v.step
                if p is not None and (known(id(p)) or lowered(kernels, p)).fresh:
                    freed += v.nbytes
                    if v.shape == out.shape and v.dtype == out.dtype:
                        dying_same = True
        taken = 0 if not k.fresh or (k.elementwise and dying_same) else out.nbytes
        return freed > taken

    return test


def plan(graph, arena_limit=None, donated=None, runs=(), kernels=None) -> Plan:
    """Plan ``graph`` (already scheduled): see the module docstring. ``arena_limit``: the largest value (in
    bytes) given a planned buffer (None: any; 0: none). ``donated`` maps id(input value) to the output value
    that may be written over it (the new value of a donated argument). ``runs``: the fused runs
    (:mod:`.fuse`), each one position (its last step's): what it reads is alive until it ends, what it
    writes from its start; the values inside it get no memory, and an output is written over an argument only
    where that argument shares its memory with nothing else (it is read at the top of the loop, for that
    element only). ``kernels``: the steps' lowerings already made (``id(step) -> Kernel``, as
    :func:`.kernels.lowered` keeps them), for the steps not changed since."""
    p = Plan()
    kernels = {} if kernels is None else kernels
    p.donated = donated or {}
    steps = graph.steps
    at: dict = {}
    inside: set = set()
    fused: set = set()
    index = {id(n): i for i, n in enumerate(steps)} if runs else {}
    for r in runs:
        end = index[id(r.steps[-1])]
        for n in r.steps:
            at[id(n)] = end
            fused.add(id(n))
        inside |= r.inside
    p.inside = inside
    last = last_reads(steps, graph.outputs, at)
    cls_of: dict = {}

    def new_class(v, foreign, at):
        c = AliasClass()
        c.members.append(v)
        c.foreign = foreign
        c.end = max(at, last.get(id(v), -1))
        cls_of[id(v)] = c
        return c

    for v in graph.inputs:
        new_class(v, foreign=id(v) not in p.donated, at=-1)
    known = kernels.get
    for i, n in enumerate(steps):
        if at:
            i = at.get(id(n), i)
        out = n.out
        if id(out) in inside:  # a local variable of a fused loop: no memory, read by no one outside its run
            continue
        k = p.kernels[id(n)] = known(id(n)) or lowered(kernels, n)
        target = None
        if k.writes is not None:  # a fused update writes over its donated argument
            target = k.args[k.writes]
            c = cls_of[id(target)]
            mine = target.input_index is None or p.donated.get(id(target)) is out
            if c.foreign or c.end != i or not mine:
                raise AssertionError(f"{n.name}: the argument it overwrites is still read after it")
        elif k.fresh and k.elementwise:
            target = _inplace_target(p, k, out, cls_of, i, last, id(n) in fused)
        if target is not None:
            c = cls_of[id(target)]
            c.members.append(out)
            cls_of[id(out)] = c
            c.end = max(c.end, i, last.get(id(out), -1))
            p.inplace[id(n)] = target
            continue
        if k.fresh:
            c = new_class(out, foreign=False, at=i)
            small = arena_limit is None or out.nbytes <= arena_limit
            # a planned buffer is C-ordered: only where the op made a C-ordered array too (layouts set the order
            # reductions sum in, so their rounding)
            if small and k.out_style and out.numpy and len(out.shape) >= 1 and out.nbytes and out.c_contiguous:
                b = Buffer(out, i)
                b.cls = c
                c.buffers.append(b)
                p.buffer[id(n)] = b
            continue
        # may share memory with any of its array arguments (never with a parameter: an index array), so one class
        # with all of theirs
        classes = []
        for a in n.args:
            if not isinstance(a, Value):
                continue
            c = cls_of[id(a)]
            if c not in classes:
                classes.append(c)
        if not classes:
            new_class(out, foreign=False, at=i)
            continue
        c = max(classes, key=lambda c: len(c.members))  # the others join the largest: n log n in all
        for other in classes:
            if other is c:
                continue
            c.members.extend(other.members)
            c.buffers.extend(other.buffers)
            c.foreign = c.foreign or other.foreign
            c.end = max(c.end, other.end)
            for m in other.members:
                cls_of[id(m)] = c
            for b in other.buffers:
                b.cls = c
        c.members.append(out)
        cls_of[id(out)] = c
        c.end = max(c.end, i, last.get(id(out), -1))
    # values that leave the program are the call's own allocations, never the arena's
    for key, b in list(p.buffer.items()):
        if b.cls.end >= NEVER:
            del p.buffer[key]
    _pack(p, list(p.buffer.values()))
    # names of values the program computed are deleted after their class's last read
    seen = set()
    for c in cls_of.values():
        if id(c) in seen or c.end >= NEVER:
            continue
        seen.add(id(c))
        names = [m for m in c.members if m.step is not None and id(m) not in inside]
        if names and any(_holds_memory(p, m) for m in names):
            p.free_after.setdefault(c.end, []).extend(names)
    # what the program keeps of the plan, as few objects as it needs: every full collection of Python's walks
    # them (a fused loop's steps are one call, their kernels not read again; the classes served the plan)
    for n in fused:
        p.kernels.pop(n, None)
    for b in p.buffers:
        b.cls = None
    return p


def _holds_memory(p, m) -> bool:
    """Whether value ``m`` may hold memory of its own that the program allocated outside the arena."""
    step = m.step
    k = p.kernels[id(step)]
    if k.fresh:
        return id(step) not in p.buffer and id(step) not in p.inplace
    return not k.view


def _inplace_target(p, k, out, cls_of, i, last, fused=False):
    """The input an elementwise step may overwrite: same shape and dtype, a whole array the program made (or
    a donated argument), read for the last time here together with everything sharing its memory (in a fused
    run: sharing its memory with nothing)."""
    if not (out.numpy and len(out.shape) >= 1):
        return None
    for a in k.args:
        if not (isinstance(a, Value) and a.shape == out.shape and a.dtype == out.dtype and a.strides == out.strides):
            continue  # the same layout too: the op would have made its output so
        if id(a) in p.inside:
            continue
        c = cls_of[id(a)]
        if c.foreign or c.end != i:
            continue
        if fused and any(m is not a and last.get(id(m), -1) >= i for m in c.members):
            continue  # another name for its memory (a view) is read in the run: maybe after this element
        if a.input_index is not None:
            if p.donated.get(id(a)) is out:  # a donated argument takes its own new value only
                return a
        elif p.kernels[id(a.step)].fresh:
            return a
    return None


def _pack(p, buffers) -> None:
    """Offsets in one arena, by a sweep over the program: buffers in the order they are written, each in the
    smallest free region it fits (the lowest such), a region freed after its class's last read and merged with
    free neighbours; the arena grows at its top only when nothing free fits. In time n log n (a heap of the
    live buffers by end; free regions kept by size)."""
    free_at: dict = {}  # offset -> size of a free region
    free_end: dict = {}  # end offset -> offset of the free region ending there
    by_size: dict = {}  # size -> heap of offsets of free regions of that size (some may be gone: skipped)
    count: dict = {}  # size -> how many free regions have it
    sizes: list = []  # the sizes in count, sorted
    live: list = []  # (end, start, k, buffer) of the buffers written so far and not yet freed
    top = 0

    def add_free(offset, size):
        nonlocal top
        before = free_end.get(offset)  # merge with a free region just below and one just above
        if before is not None:
            _take(before)
            size += offset - before
            offset = before
        if offset + size in free_at:
            size += _take(offset + size)
        if offset + size == top:  # the arena's top is free again
            top = offset
            return
        free_at[offset] = size
        free_end[offset + size] = offset
        if size not in count:
            count[size] = 0
            by_size[size] = []
            bisect.insort(sizes, size)
        count[size] += 1
        heapq.heappush(by_size[size], offset)

    def _take(offset):
        size = free_at.pop(offset)
        del free_end[offset + size]
        count[size] -= 1
        if not count[size]:
            del count[size], by_size[size]
            sizes.pop(bisect.bisect_left(sizes, size))
        return size

    def lowest(size):
        group = by_size[size]
        while free_at.get(group[0]) != size:
            heapq.heappop(group)
        return group[0]

    total = 0
    ordered = sorted(buffers, key=lambda b: b.start)
    for k, b in enumerate(ordered):
        while live and live[0][0] < b.start:
            q = heapq.heappop(live)[3]
            add_free(q.offset, q.size)
        j = bisect.bisect_left(sizes, b.size)
        if j < len(sizes):
            offset = lowest(sizes[j])
            size = _take(offset)
            if size > b.size:
                add_free(offset + b.size, size - b.size)
        else:
            offset = top
            top += b.size
        b.offset = offset
        total = max(total, offset + b.size)
        heapq.heappush(live, (b.cls.end, b.start, k, b))
    p.arena_bytes = total
    p.buffers = ordered
    for k, b in enumerate(p.buffers):
        b.name = f"b{k}"
