"""Rewrites of the traced graph, each one exact (the same numbers, bit for bit), then the order the program
runs its steps in.

- :func:`simplify`: a value that is another one (``x ** 1``, ``x * 1``, a reshape to its own shape, a cast to
  its own dtype, the transforms' ``functional_input`` view) is replaced by it; ``a + (-b)`` becomes ``a - b``
  and ``a - (-b)`` becomes ``a + b``; a ``broadcast_to`` read only by elementwise ops that broadcast anyway is
  dropped.
- :func:`common_subexpressions`: two steps computing the same op of the same inputs and parameters become one
  (draws excepted).
- :func:`dead_code`: steps whose values reach no output are removed (draws are kept, so a generator advances
  exactly as it does when the function runs eagerly).
- :func:`fuse_updates` (after scheduling; not bit for bit): ``W - lr * (A @ B)`` written over a donated ``W``,
  whose product is read nowhere else, becomes one BLAS call, ``W += -lr * A @ B`` (GEMM with beta = 1): an
  SGD update fused into the product that computes its gradient. It rounds once where the three ops round
  twice more (at most an ulp or so per element).
- :func:`accumulate_scatters` (after scheduling): ``x + scatter(g, index, x.shape)``, the gradient of a slice
  added into the gradient of the whole (a recurrent network's steps), becomes ``x[index] += g`` when nothing
  else reads ``x`` or the scattered zeros, for a basic index (no element twice): the same sums without a
  full-size array of zeros per slice (exact, but for the sign of a zero outside the slice).
- :func:`schedule`: the traced order, except that a step that frees memory runs as soon as it can (a
  parameter update right after its gradient), so that fewer large values are alive at once. Draws keep their
  order among themselves.
"""

from __future__ import annotations

import heapq
from collections import Counter
from itertools import chain

import numpy as np

import tapegrad.ops as ops

from .._scope import functional_input
from ..backend._index import is_basic_index
from .graph import Const, Step, Value, substitute, walk
from .kernels import GEMM_UPDATE, SCATTER_ADD, has_blas, lower

__all__ = [
    "simplify",
    "common_subexpressions",
    "dead_code",
    "schedule",
    "donation_edges",
    "fuse_updates",
    "accumulate_scatters",
    "uses_of",
]

_FUSE_BYTES = 256 * 1024  # the smallest parameter whose update is fused into its gradient's product (measured)
# ops whose output is their first input whenever it has that input's shape and dtype (a reshape to its own shape)
_SAME_WHEN_SHAPED = frozenset(
    (ops.reshape.op, ops.broadcast_to.op, functional_input.op, ops.astype.op, ops.squeeze.op, ops.expand_dims.op)
)


def uses_of(steps, outputs) -> dict:
    """id(value) -> how many steps read it (each step once), plus one per output it is."""
    uses = Counter(map(id, chain.from_iterable([n.inputs() for n in steps])))  # counted in C
    for o in outputs:
        if isinstance(o, Value):
            uses[id(o)] += 1
    return uses


def _replace(graph, mapping) -> None:
    """Substitute values everywhere (arguments, parameters, outputs) by ``mapping`` (id -> value), transitively."""
    if not mapping:
        return

    def final(v):
        while id(v) in mapping:
            v = mapping[id(v)]
        return v

    for n in graph.steps:
        n.args = substitute(n.args, final)
        n.params = substitute(n.params, final)
    graph.outputs = [final(o) if isinstance(o, Value) else o for o in graph.outputs]


def _same(v, w) -> bool:
    return isinstance(w, Value) and v.shape == w.shape and v.dtype == w.dtype and v.kind is w.kind


def _is_number(a, number) -> bool:
    return a.__class__ in (int, float) and a == number and not isinstance(a, bool)


def simplify(graph) -> None:
    """The exact rewrites of the module docstring, in place."""
    alias: dict = {}
    uses = uses_of(graph.steps, graph.outputs)
    producers = {id(n.out): n for n in graph.steps}
    add, subtract = ops.add.op, ops.subtract.op

    def aliased(v):
        return alias.get(id(v), v)

    for n in graph.steps:
        if alias:
            n.args = substitute(n.args, aliased)
            n.params = substitute(n.params, aliased) if n.params else n.params
        out, args, op = n.out, n.args, n.op
        if n.random:
            continue
        same = None
        if op is ops.power.op and len(args) == 2 and _is_number(args[1], 1):
            same = args[0]
        elif op is ops.multiply.op and len(args) == 2:
            same = args[0] if _is_number(args[1], 1) else (args[1] if _is_number(args[0], 1) else None)
        elif op in _SAME_WHEN_SHAPED or (op is ops.transpose.op and len(out.shape) <= 1):
            same = args[0]
        if same is not None and _same(out, same):
            alias[id(out)] = same
            continue
        if (op is add or op is subtract) and len(args) == 2 and out.numpy:
            for k in (1, 0) if op is add else (1,):
                neg = producers.get(id(args[k])) if isinstance(args[k], Value) else None
                if neg is not None and neg.op is ops.negative.op and uses.get(id(args[k])) == 1 and not neg.params:
                    # a + (-b) == a - b and a - (-b) == a + b exactly, in every rounding
                    n.op, n.args = (subtract if op is add else add), (args[1 - k], neg.args[0])
                    break
    _replace(graph, alias)
    _drop_broadcasts(graph)


def _drop_broadcasts(graph) -> None:
    """``broadcast_to(a, S)`` read only by NumPy ufuncs whose output keeps its shape with ``a`` itself."""
    if not any(n.op is ops.broadcast_to.op for n in graph.steps):
        return  # nothing to drop: the readers of every value are not needed
    readers: dict = {}
    for n in graph.steps:
        for v in n.inputs():
            readers.setdefault(id(v), []).append(n)
    outputs = {id(o) for o in graph.outputs if isinstance(o, Value)}
    for n in graph.steps:
        if n.op is not ops.broadcast_to.op or not n.out.numpy or id(n.out) in outputs:
            continue
        source = n.args[0]
        users = readers.get(id(n.out), [])
        if not users or not all(_broadcasts_anyway(u, n.out, source) for u in users):
            continue
        for u in users:
            u.args = tuple(source if a is n.out else a for a in u.args)


def _broadcasts_anyway(user, bcast, source) -> bool:
    ufunc = user.op.numpy  # called as the ufunc itself (kernels.py), which broadcasts its arguments
    if not (isinstance(ufunc, np.ufunc) and ufunc.signature is None and not user.params and user.out.numpy):
        return False
    if any(p is bcast for p in walk(user.params)):
        return False
    shapes = [
        np.shape(source) if a is bcast else (a.shape if isinstance(a, Value) else np.shape(_raw(a))) for a in user.args
    ]
    try:
        return np.broadcast_shapes(*shapes) == user.out.shape
    except ValueError:
        return False


def _raw(a):
    return a.value if isinstance(a, Const) else a


def _key(obj):
    """A hashable key for arguments and parameters: values and constants by identity, the rest by value."""
    cls = obj.__class__
    if cls is Value or cls is Const:  # most arguments, first
        return ("@", id(obj))
    if cls is float or cls is int:
        return (cls.__name__, obj)
    if isinstance(obj, (Value, Const)):
        return ("@", id(obj))
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(_key(x) for x in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _key(v)) for k, v in obj.items()))
    if isinstance(obj, slice):
        return ("slice", _key(obj.start), _key(obj.stop), _key(obj.step))
    hash(obj)
    return (type(obj).__name__, obj)


_NO_PARAMS = ("dict", ())  # _key({}), the parameters of most steps


def _args_key(args):
    """``_key(args)``, the values and numbers of a tuple of arguments read without recursion (most steps)."""
    if args.__class__ is not tuple:
        return _key(args)
    out = []
    for a in args:
        cls = a.__class__
        if cls is Value or cls is Const:
            out.append(("@", id(a)))
        elif cls is float or cls is int:
            out.append((cls.__name__, a))
        else:
            out.append(_key(a))
    return ("tuple", tuple(out))


def common_subexpressions(graph) -> None:
    """Merge steps that compute the same op of the same arguments and parameters (draws never)."""
    seen: dict = {}
    alias: dict = {}
    kept = []

    def aliased(v):
        return alias.get(id(v), v)

    for n in graph.steps:
        if alias:
            n.args = substitute(n.args, aliased)
            n.params = substitute(n.params, aliased) if n.params else n.params
        if n.random:
            kept.append(n)
            continue
        try:
            key = (id(n.op), _args_key(n.args), _NO_PARAMS if n.params == {} else _key(n.params))
        except TypeError:  # an unhashable parameter: leave the step alone
            kept.append(n)
            continue
        first = seen.get(key)
        if first is not None and _same(first.out, n.out):
            alias[id(n.out)] = first.out
            continue
        seen[key] = n
        kept.append(n)
    graph.steps = kept
    _replace(graph, alias)


def dead_code(graph) -> None:
    """Remove the steps whose values no output needs (draws stay)."""
    live = {id(o) for o in graph.outputs if isinstance(o, Value)}
    kept = []
    for n in reversed(graph.steps):
        if id(n.out) in live or n.random:
            kept.append(n)
            live.update(map(id, n.inputs()))
    kept.reverse()
    graph.steps = kept


def donation_edges(graph, matched) -> dict:
    """For each donated input ``W`` whose new value ``matched`` maps it to: the step computing that value must
    run after every other read of ``W``'s memory (``W`` and the views of it), so that it can write over ``W``;
    id(update step) -> ids of the steps it must follow (none that depend on the update itself)."""
    if not matched:
        return {}
    readers: dict = {}
    for n in graph.steps:
        for v in n.inputs():
            readers.setdefault(id(v), []).append(n)
    edges: dict = {}
    for w in graph.inputs:
        out = matched.get(id(w))
        update = out.step if out is not None else None
        if update is None:
            continue
        skip = _descendants(update, readers) | {id(update)}  # the update, and what depends on it
        after = {id(r) for r in _reads_of_memory(w, readers, skip)}
        if after:
            edges[id(update)] = after
    return edges


def _reads_of_memory(w, readers, skip: set) -> list:
    """The steps that read ``w``'s memory: ``w`` itself and, through them, the views computed from it (a step
    whose kernel makes no fresh array and that takes the value as an argument, not as an index), but the steps
    whose ids are in ``skip``, nor what they read."""
    found, stack, seen = [], [w], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for r in readers.get(id(v), ()):
            if id(r) in skip:
                continue
            found.append(r)
            if not lower(r).fresh and any(a is v for a in r.args):
                stack.append(r.out)
    return found


def _descendants(step, readers) -> set:
    out, stack = set(), [step]
    while stack:
        for r in readers.get(id(stack.pop().out), ()):
            if id(r) not in out:
                out.add(id(r))
                stack.append(r)
    return out


def schedule(graph, frees, after=None) -> None:
    """Reorder ``graph.steps``: the traced order, but a ready step for which ``frees(step, remaining)`` is true
    (it frees more memory than it takes, given how many reads each value has left: ``remaining``, keyed by the
    value) runs first (the earliest
    traced of them). Dependencies, ``after`` (id(step) -> ids of steps it must follow) and the order of draws
    are kept.

    In time n log n: the test reads only whether a step's inputs have one read left, which changes once per
    value (its count only falls, and the step it then names is its last reader), so each step is tested when it
    becomes ready and again when one of its inputs comes down to its last read; two heaps keep the ready steps
    and those that free memory, in traced order."""
    steps = graph.steps
    if len(steps) < 3:
        return
    # keyed by the steps and values themselves (they hash by identity), without an id() per look-up
    producer = {n.out: n for n in steps}
    readers: dict = {}  # step -> the steps that wait for it
    reads: dict = {}  # value -> the steps that read it
    waiting: dict = {}  # step -> how many of the steps it waits for have not run
    last_random = None
    if after:
        by_id = {id(n): n for n in steps}
        after = {by_id[k]: [by_id[j] for j in js] for k, js in after.items()}
    made_by = producer.get
    inputs: dict = {}  # step -> its inputs (a look-up here costs less than the method)
    for n in steps:
        ins = inputs[n] = n.inputs()
        d = set(map(made_by, ins))
        d.discard(None)  # an input of the program, or a constant's value
        if after and n in after:
            d.update(after[n])
        if n.random:
            if last_random is not None:
                d.add(last_random)
            last_random = n
        waiting[n] = len(d)
        for k in d:
            if k in readers:
                readers[k].append(n)
            else:
                readers[k] = [n]
        for v in ins:
            if v in reads:
                reads[v].append(n)
            else:
                reads[v] = [n]
    remaining = {v: len(r) for v, r in reads.items()}  # as uses_of counts them, from the readers at hand
    for o in graph.outputs:
        if isinstance(o, Value):
            remaining[o] = remaining.get(o, 0) + 1
    # the heaps hold each step's traced position (the tracer numbers steps apart), or (position, id) where two
    # share one; step_of gives the step back
    key_of = {n: n.order for n in steps}
    if len(set(key_of.values())) < len(steps):
        key_of = {n: (n.order, id(n)) for n in steps}
    step_of = {k: n for n, k in key_of.items()}
    ready = [key_of[n] for n in steps if not waiting[n]]
    heapq.heapify(ready)
    freeing: list = []  # ready steps whose test is true (it stays true until they run)
    tested_true: set = set()
    push, pop = heapq.heappush, heapq.heappop

    def test(n):
        if n not in tested_true and frees(n, remaining):
            tested_true.add(n)
            push(freeing, key_of[n])

    for k in ready:
        test(step_of[k])
    order: list = []
    total = len(steps)
    # a step that has run waits for -1: ready (0) never again
    while len(order) < total:
        while freeing and waiting[step_of[freeing[0]]] < 0:
            pop(freeing)
        if freeing:
            pick = step_of[pop(freeing)]
        else:
            while ready and waiting[step_of[ready[0]]] < 0:
                pop(ready)
            if not ready:
                break
            pick = step_of[pop(ready)]
        order.append(pick)
        waiting[pick] = -1
        for v in inputs[pick]:
            left = remaining[v] = remaining.get(v, 1) - 1
            if left == 1:  # its last reader (if a step) may free memory now
                for r in reads.get(v, ()):
                    if not waiting[r]:
                        test(r)
        for r in readers.get(pick, ()):
            left = waiting[r] = waiting[r] - 1
            if not left:
                push(ready, key_of[r])
                test(r)
    assert len(order) == len(steps), "the graph has a cycle"
    graph.steps = order


def fuse_updates(graph, matched, kernels=None) -> None:
    """The GEMM-update fusion of the module docstring, for each donated input ``W`` whose new value (``matched``:
    id(input) -> output value) is ``W - lr * (A @ B)``, when every other read of ``W``'s memory comes before
    the product. ``kernels`` (``id(step) -> Kernel``, the lowerings made while scheduling) forgets each step
    made here, whose id may be a removed step's."""
    if not matched:
        return
    steps = graph.steps
    pos = {id(n): i for i, n in enumerate(steps)}
    uses = uses_of(steps, graph.outputs)
    readers: dict = {}
    for n in steps:
        for v in n.inputs():
            readers.setdefault(id(v), []).append(n)
    drop: set = set()
    for w in graph.inputs:
        out = matched.get(id(w))
        update = out.step if out is not None else None
        if update is None or update.op is not ops.subtract.op or len(update.args) != 2 or update.args[0] is not w:
            continue
        scaled = update.args[1]
        scale = scaled.step if isinstance(scaled, Value) else None
        if scale is None or scale.op is not ops.multiply.op or uses.get(id(scaled)) != 1 or len(scale.args) != 2:
            continue
        lr, grad = scale.args if isinstance(scale.args[1], Value) else scale.args[::-1]
        if not (lr.__class__ is float and isinstance(grad, Value) and grad.step is not None):
            continue
        product = grad.step
        if product.op is not ops.matmul.op or uses.get(id(grad)) != 1 or len(product.args) != 2:
            continue
        a, b = product.args
        if not all(
            isinstance(x, Value) and x.numpy and len(x.shape) == 2 and x.dtype == w.dtype for x in (a, b, grad, w)
        ) or not has_blas(w.dtype):
            continue
        if w.nbytes < _FUSE_BYTES:  # a small product: the passes saved cost less than calling another BLAS
            continue
        # every read of w's memory (w, and the views of it) other than the update must come before the product
        last_other = max((pos[id(r)] for r in _reads_of_memory(w, readers, {id(update)})), default=-1)
        if last_other >= pos[id(product)]:
            continue
        fused = Step(GEMM_UPDATE, (w, a, b, -lr), {}, out, update.line, update.grad_of)
        fused.order = product.order
        fused.meta = "matmul, multiply and subtract in one GEMM"
        if kernels is not None:
            kernels.pop(id(fused), None)
        out.step = fused
        steps[pos[id(product)]] = fused
        drop.update((id(scale), id(update)))
    if drop:
        graph.steps = [n for n in steps if id(n) not in drop]


def accumulate_scatters(graph, kernels=None) -> None:
    """The scatter-accumulation rewrite of the module docstring (after scheduling); ``kernels`` forgets the
    lowering of each step rewritten (see :func:`fuse_updates`)."""
    if not any(n.op is ops.scatter.op for n in graph.steps):
        return
    uses = uses_of(graph.steps, graph.outputs)
    drop: set = set()
    for n in graph.steps:
        if n.op is not ops.add.op or len(n.args) != 2 or not n.out.numpy:
            continue
        for k in (0, 1):
            s, x = n.args[k], n.args[1 - k]
            scatter = s.step if isinstance(s, Value) and s is not x else None  # not s + s: one read, two uses
            if scatter is None or scatter.op is not ops.scatter.op or uses.get(id(s)) != 1 or id(scatter) in drop:
                continue
            index, g = scatter.params.get("index"), scatter.args[0] if scatter.args else None
            if not (isinstance(x, Value) and x.step is not None and isinstance(g, Value) and g.numpy):
                continue
            if any(True for _ in walk(index)) or not is_basic_index(index):
                continue  # an index array (traced, or with repeats): np.add.at would add in another order
            whole = lower(x.step).fresh and uses.get(id(x)) == 1  # read only here: no view of it survives
            same = x.shape == n.out.shape == s.shape and x.dtype == n.out.dtype == g.dtype == s.dtype
            if whole and same and x.strides == n.out.strides:
                n.op, n.args, n.params = SCATTER_ADD, (x, g), {"index": index}
                n.meta = "add of a scatter, into the slice"
                if kernels is not None:
                    kernels.pop(id(n), None)
                drop.add(id(scatter))
                break
    if drop:
        graph.steps = [m for m in graph.steps if id(m) not in drop]
