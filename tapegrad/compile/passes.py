"""Rewrites of the traced graph, each one exact (the same numbers, bit for bit), then the order the program
runs its nodes in.

- :func:`simplify`: a value that is another one (``x ** 1``, ``x * 1``, a reshape to its own shape, a cast to
  its own dtype, the transforms' ``functional_input`` view) is replaced by it; ``a + (-b)`` becomes ``a - b``
  and ``a - (-b)`` becomes ``a + b``; a ``broadcast_to`` read only by elementwise ops that broadcast anyway is
  dropped.
- :func:`common_subexpressions`: two nodes computing the same op of the same inputs and parameters become one
  (draws excepted).
- :func:`dead_code`: nodes whose values reach no output are removed (draws are kept, so a generator advances
  exactly as it does when the function runs eagerly).
- :func:`fuse_updates` (after scheduling; not bit for bit): ``W - lr * (A @ B)`` written over a donated ``W``,
  whose product is read nowhere else, becomes one BLAS call, ``W += -lr * A @ B`` (GEMM with beta = 1): an
  SGD update fused into the product that computes its gradient. It rounds once where the three ops round
  twice more (at most an ulp or so per element).
- :func:`accumulate_scatters` (after scheduling): ``x + scatter(g, index, x.shape)``, the gradient of a slice
  added into the gradient of the whole (a recurrent network's steps), becomes ``x[index] += g`` when nothing
  else reads ``x`` or the scattered zeros, for a basic index (no element twice): the same sums without a
  full-size array of zeros per slice (exact, but for the sign of a zero outside the slice).
- :func:`schedule`: the traced order, except that a node that frees memory runs as soon as it can (a
  parameter update right after its gradient), so that fewer large values are alive at once. Draws keep their
  order among themselves.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..backend._index import is_basic_index
from ..registry import REGISTRY
from .graph import Const, Node, Value, substitute, walk
from .kernels import gemm_update, has_blas, kernel_of

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


def uses_of(nodes, outputs) -> dict:
    """id(value) -> how many nodes read it (each node once), plus one per output it is."""
    uses: dict = {}
    for n in nodes:
        for v in n.inputs():
            uses[id(v)] = uses.get(id(v), 0) + 1
    for o in outputs:
        if isinstance(o, Value):
            uses[id(o)] = uses.get(id(o), 0) + 1
    return uses


def _replace(graph, mapping) -> None:
    """Substitute values everywhere (arguments, parameters, outputs) by ``mapping`` (id -> value), transitively."""
    if not mapping:
        return

    def final(v):
        while id(v) in mapping:
            v = mapping[id(v)]
        return v

    for n in graph.nodes:
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
    uses = uses_of(graph.nodes, graph.outputs)
    producers = {id(n.out): n for n in graph.nodes}
    subtract, add = REGISTRY["subtract"], REGISTRY["add"]
    for n in graph.nodes:
        n.args = substitute(n.args, lambda v: alias.get(id(v), v))
        n.params = substitute(n.params, lambda v: alias.get(id(v), v))
        out, args, name = n.out, n.args, n.name
        if n.random:
            continue
        same = None
        if name == "power" and len(args) == 2 and _is_number(args[1], 1):
            same = args[0]
        elif name == "multiply" and len(args) == 2:
            same = args[0] if _is_number(args[1], 1) else (args[1] if _is_number(args[0], 1) else None)
        elif name in ("reshape", "broadcast_to", "functional_input", "astype", "squeeze", "expand_dims"):
            same = args[0]
        elif name == "transpose" and len(out.shape) <= 1:
            same = args[0]
        if same is not None and _same(out, same):
            alias[id(out)] = same
            continue
        if name in ("add", "subtract") and len(args) == 2 and out.numpy and n.fn in (np.add, np.subtract):
            for k in (1, 0) if name == "add" else (1,):
                neg = producers.get(id(args[k])) if isinstance(args[k], Value) else None
                if neg is not None and neg.name == "negative" and uses.get(id(args[k])) == 1 and not neg.params:
                    other = args[1 - k]
                    inner = neg.args[0]
                    # a + (-b) == a - b and a - (-b) == a + b exactly, in every rounding
                    if name == "add":
                        n.op, n.name, n.fn, n.args = subtract, "subtract", np.subtract, (other, inner)
                    else:
                        n.op, n.name, n.fn, n.args = add, "add", np.add, (other, inner)
                    break
    _replace(graph, alias)
    _drop_broadcasts(graph)


def _drop_broadcasts(graph) -> None:
    """``broadcast_to(a, S)`` read only by NumPy ufuncs whose output keeps its shape with ``a`` itself."""
    readers: dict = {}
    for n in graph.nodes:
        for v in n.inputs():
            readers.setdefault(id(v), []).append(n)
    outputs = {id(o) for o in graph.outputs if isinstance(o, Value)}
    for n in graph.nodes:
        if n.name != "broadcast_to" or not n.out.numpy or id(n.out) in outputs:
            continue
        source = n.args[0]
        users = readers.get(id(n.out), [])
        if not users or not all(_broadcasts_anyway(u, n.out, source) for u in users):
            continue
        for u in users:
            u.args = tuple(source if a is n.out else a for a in u.args)


def _broadcasts_anyway(user, bcast, source) -> bool:
    if not (isinstance(user.fn, np.ufunc) and user.fn.signature is None and not user.params):
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


def common_subexpressions(graph) -> None:
    """Merge nodes that compute the same op of the same arguments and parameters (draws never)."""
    seen: dict = {}
    alias: dict = {}
    kept = []
    for n in graph.nodes:
        n.args = substitute(n.args, lambda v: alias.get(id(v), v))
        n.params = substitute(n.params, lambda v: alias.get(id(v), v))
        if n.random:
            kept.append(n)
            continue
        try:
            key = (id(n.fn), n.name, _key(n.args), _key(n.params))
        except TypeError:  # an unhashable parameter: leave the node alone
            kept.append(n)
            continue
        first = seen.get(key)
        if first is not None and _same(first.out, n.out):
            alias[id(n.out)] = first.out
            continue
        seen[key] = n
        kept.append(n)
    graph.nodes = kept
    _replace(graph, alias)


def dead_code(graph) -> None:
    """Remove the nodes whose values no output needs (draws stay)."""
    live = {id(o) for o in graph.outputs if isinstance(o, Value)}
    kept = []
    for n in reversed(graph.nodes):
        if id(n.out) in live or n.random:
            kept.append(n)
            live.update(id(v) for v in n.inputs())
    kept.reverse()
    graph.nodes = kept


def donation_edges(graph, matched) -> dict:
    """For each donated input ``W`` whose new value ``matched`` maps it to: the node computing that value must
    run after every other read of ``W``'s memory (``W`` and the views of it), so that it can write over ``W``;
    id(update node) -> ids of the nodes it must follow (none that depend on the update itself)."""
    readers: dict = {}
    for n in graph.nodes:
        for v in n.inputs():
            readers.setdefault(id(v), []).append(n)
    edges: dict = {}
    for w in graph.inputs:
        out = matched.get(id(w))
        update = out.node if out is not None else None
        if update is None:
            continue
        skip = _descendants(update, readers) | {id(update)}  # the update, and what depends on it
        after = {id(r) for r in _reads_of_memory(w, readers, skip)}
        if after:
            edges[id(update)] = after
    return edges


def _reads_of_memory(w, readers, skip: set) -> list:
    """The nodes that read ``w``'s memory: ``w`` itself and, through them, the views computed from it (a node
    whose kernel makes no fresh array and that takes the value as an argument, not as an index), but the nodes
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
            if not kernel_of(r).fresh and any(a is v for a in r.args):
                stack.append(r.out)
    return found


def _descendants(node, readers) -> set:
    out, stack = set(), [node]
    while stack:
        for r in readers.get(id(stack.pop().out), ()):
            if id(r) not in out:
                out.add(id(r))
                stack.append(r)
    return out


def schedule(graph, frees, after=None) -> None:
    """Reorder ``graph.nodes``: the traced order, but a ready node for which ``frees(node, remaining)`` is true
    (it frees more memory than it takes, given how many reads each value has left) runs first, and so does
    an elementwise step whose only reader it then makes ready and which frees memory (a chain such as
    ``lr * g`` then ``p - that``). Dependencies, ``after`` (id(node) -> ids of nodes it must follow) and the
    order of draws are kept."""
    nodes = graph.nodes
    if len(nodes) < 3:
        return
    producer = {id(n.out): n for n in nodes}
    deps, readers = {}, {}
    last_random = None
    after = after or {}
    for n in nodes:
        d = {id(producer[id(v)]) for v in n.inputs() if id(v) in producer} | after.get(id(n), set())
        if n.random:
            if last_random is not None:
                d.add(id(last_random))
            last_random = n
        deps[id(n)] = d
        for k in d:
            readers.setdefault(k, []).append(n)
    remaining = uses_of(nodes, graph.outputs)
    waiting = {id(n): len(deps[id(n)]) for n in nodes}
    ready = [(n.order, id(n), n) for n in nodes if not waiting[id(n)]]
    heapq.heapify(ready)
    done, order = set(), []
    while ready:
        pick = None
        for _, _, n in ready:  # the ready set stays small: a scan is cheaper than keeping a second heap
            if frees(n, remaining):
                pick = n
                break
        if pick is None:
            pick = heapq.heappop(ready)[2]
        else:
            ready = [r for r in ready if r[2] is not pick]
            heapq.heapify(ready)
        order.append(pick)
        done.add(id(pick))
        for v in pick.inputs():
            remaining[id(v)] = remaining.get(id(v), 1) - 1
        for r in readers.get(id(pick), ()):
            waiting[id(r)] -= 1
            if not waiting[id(r)]:
                heapq.heappush(ready, (r.order, id(r), r))
    assert len(order) == len(nodes), "the graph has a cycle"
    graph.nodes = order


def fuse_updates(graph, matched) -> None:
    """The GEMM-update fusion of the module docstring, for each donated input ``W`` whose new value (``matched``:
    id(input) -> output value) is ``W - lr * (A @ B)``, when every other read of ``W``'s memory comes before
    the product."""
    if not matched:
        return
    nodes = graph.nodes
    pos = {id(n): i for i, n in enumerate(nodes)}
    uses = uses_of(nodes, graph.outputs)
    readers: dict = {}
    for n in nodes:
        for v in n.inputs():
            readers.setdefault(id(v), []).append(n)
    drop: set = set()
    for w in graph.inputs:
        out = matched.get(id(w))
        update = out.node if out is not None else None
        if update is None or update.name != "subtract" or len(update.args) != 2 or update.args[0] is not w:
            continue
        scaled = update.args[1]
        scale = scaled.node if isinstance(scaled, Value) else None
        if scale is None or scale.name != "multiply" or uses.get(id(scaled)) != 1 or len(scale.args) != 2:
            continue
        lr, grad = scale.args if isinstance(scale.args[1], Value) else scale.args[::-1]
        if not (lr.__class__ is float and isinstance(grad, Value) and grad.node is not None):
            continue
        product = grad.node
        if product.name != "matmul" or uses.get(id(grad)) != 1 or len(product.args) != 2:
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
        fused = Node(None, "gemm_update", gemm_update, (w, a, b, -lr), {}, out, update.line, update.grad_of)
        fused.order = product.order
        fused.meta = "matmul, multiply and subtract in one GEMM"
        out.node = fused
        nodes[pos[id(product)]] = fused
        drop.update((id(scale), id(update)))
    if drop:
        graph.nodes = [n for n in nodes if id(n) not in drop]


def accumulate_scatters(graph) -> None:
    """The scatter-accumulation rewrite of the module docstring (after scheduling)."""
    uses = uses_of(graph.nodes, graph.outputs)
    drop: set = set()
    for n in graph.nodes:
        if n.name != "add" or len(n.args) != 2 or n.fn is not np.add or not n.out.numpy:
            continue
        for k in (0, 1):
            s, x = n.args[k], n.args[1 - k]
            scatter = s.node if isinstance(s, Value) else None
            if scatter is None or scatter.name != "scatter" or uses.get(id(s)) != 1 or id(scatter) in drop:
                continue
            index, g = scatter.params.get("index"), scatter.args[0] if scatter.args else None
            if not (isinstance(x, Value) and x.node is not None and isinstance(g, Value) and g.numpy):
                continue
            if any(True for _ in walk(index)) or not is_basic_index(index):
                continue  # an index array (traced, or with repeats): np.add.at would add in another order
            whole = kernel_of(x.node).fresh and uses.get(id(x)) == 1  # read only here: no view of it survives
            same = x.shape == n.out.shape == s.shape and x.dtype == n.out.dtype == g.dtype == s.dtype
            if whole and same and x.strides == n.out.strides:
                n.name, n.fn, n.op = "scatter_add", None, None
                n.args, n.params = (x, g), {"index": index}
                n.meta = "add of a scatter, into the slice"
                drop.add(id(scatter))
                break
    if drop:
        graph.nodes = [m for m in graph.nodes if id(m) not in drop]
