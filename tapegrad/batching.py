"""vmap: ``f`` written for one example, run on a batch at once, one batching rule per op.

Inside ``tg.vmap(f)`` the arguments reach ``f`` as :class:`~tapegrad._batched.Batched` tensors: each holds the
whole batch (one leading axis per vmap level, outermost first) and shows ``f`` one example's shape. An op with a
batched input does not run its forward on it: the core hands it to :func:`_step` (the slot
``core.record.set_batching_rules``), which lines the inputs' batch axes up and calls the op's batching rule
(``RULES``, keyed by the :class:`~tapegrad.registry.Op`), declared in its ``defop`` row (``batch=``) or derived:

- elementwise ops: the batched inputs get size-1 axes between their batch axes and their own, so that NumPy's
  broadcasting lines each example up with itself; the forward runs once.
- ``batch="axis"`` (reductions, scans, ``softmax``): the ``axis`` parameter is shifted past the batch axes
  (None: every example axis).
- ``batch="leading"``: the forward already broadcasts over leading axes (NumPy's linear algebra, ``tril``).
- a rule of its own: ``reshape``, ``transpose``, ``getitem``, ``matmul``, ``concatenate``, ``stack``...

An op with several outputs (``defop(outputs=...)``: ``eigh``, ``svd``...) has one rule that returns every output
with the batch axes; each is batched, and a tape records one entry for them all (``record_batched``).

An op with no rule raises ``NotImplementedError`` naming it; ``vmap(f, loop=True)`` opts into running such an
op once per example instead (a Python loop, documented as slower). Forward mode composes with vmap both ways in
which tangents are values (``vmap(jvp(f))``, ``jacfwd`` is built so); a tape opened inside vmap records the
batched entries (``vmap(grad(f))``).

Reverse mode through vmap (``grad(lambda x: vmap(f)(x).sum())``, ``loss.backward()`` of a vmapped call inside
``record()``) and ``tg.compile`` of a vmapped function: the call is one op (``_vmap_op``), whose forward is vmap's
run on the arguments' values and whose rule is the same op of one example's VJP, so its gradient is the loop's
and can be differentiated again, and a compiled program runs it as one step. ``jvp`` of vmap is the op's VJP
transposed (``jvp="transpose"``); inside another vmap (``jacfwd`` of vmap, whose columns are a vmap) the op is
batched by a nested vmap (``_vmap_batch``). A tensor of ``f``'s closure that the tapes outside record, or that
carries a tangent of a level outside, is an input of that op too (``tapegrad._closure``: found as ``f`` first runs, then
shared by every example). Refused naming what to do, never computed wrongly: a tensor of ``f``'s closure that an
outer vmap batches, or that ``tg.compile`` traces (the step would keep the first call's value), forward mode over a gradient through vmap where an op of the VJP has no batching rule, and
outputs of several dtypes of such a call (its several outputs are one vector per example, split after it).

A parameter that ``f`` computed from a batched argument (``argsort``'s indices in ``sort``) is batched too: the
core hands such an op to :func:`_step` as it does a batched input, and a rule that takes the parameter names it
in ``rule.batched_params`` (``getitem``'s ``index``, ``take_along_axis``'s ``indices``); any other rule is refused naming the op and the
parameter, never run on the whole batch's index.
"""

from __future__ import annotations

import contextlib
import functools
import inspect

import numpy as np

from ._batched import Batched
from ._closure import ClosedOver, Closure, closing_over, finding, taking
from ._scope import finish, functional_input, keeps_tensors
from ._state import ACTIVE, BATCH, FORWARD, TRACER, TRACING, WATCHED
from ._tensor import Tensor
from ._tree import tree_flatten, tree_unflatten
from .core import BaseTape, stop_recording
from .core.record import record_batched, set_batching_rules
from .forward import _step as _tangent_step
from .forward import has_tangent
from .ops import concatenate, moveaxis, reshape, zeros_like
from .ops._batching import BatchedIndex, full, rank, shift_axes, sizes
from .registry import Op, defop

__all__ = ["vmap", "RULES", "rule_of", "derivation"]

RULES: dict[Op, object] = {}  # each op's batching rule (declared or derived), keyed by the Op


class Level:
    """One vmap level: the key of its batch axis on the batched tensors."""

    __slots__ = ("size", "loop", "outer", "sealed", "own", "traced", "__weakref__")

    def __init__(self, size, loop, sealed=None, traced=None):
        self.size = size
        self.loop = loop
        self.outer = ACTIVE.get()  # the tapes recording when it opened: they cannot differentiate through it
        # a level vmap's op runs (a call on a tape or traced): the tapes recording outside it, which no tensor
        # from f's closure may carry into it; own: the leaves its VJP makes, which may
        self.sealed = sealed
        self.own: set = set()
        self.traced = traced  # tg.compile's tracer, where the level is one step of a traced program


@contextlib.contextmanager
def _level(size, loop, sealed=None, traced=None):
    lv = Level(size, loop, sealed, traced)
    token = BATCH.set(BATCH.get() + (lv,))
    TRACING.add(1)
    try:
        yield lv
    finally:
        TRACING.add(-1)
        BATCH.reset(token)


def derivation(op: Op) -> str | None:
    """How vmap gets ``op``'s batching rule: ``"declared"``, ``"axis"``, ``"leading"``, ``"elementwise"``, or None.

    >>> import tapegrad as tg
    >>> derivation(tg.exp.op), derivation(tg.sum.op), derivation(tg.matmul.op)
    ('elementwise', 'axis', 'declared')
    """
    batch = op.batch
    if callable(batch):
        return "declared"
    if batch in ("axis", "leading"):
        return batch
    if op.elementwise and not op.variadic:
        return "elementwise"
    return None


def rule_of(op: Op):
    """The batching rule of ``op``: ``rule(k, datas, batched, params)`` -> the output with ``k`` batch axes."""
    rule = RULES.get(op)
    if rule is None:
        how = derivation(op)
        if how is None:
            return None
        rule = RULES[op] = {
            "declared": lambda: op.batch,
            "axis": lambda: _axis_rule(op),
            "leading": lambda: _leading_rule(op),
            "elementwise": lambda: _elementwise_rule(op),
        }[how]()
    return rule


# -- the derived rules ---------------------------------------------------------------------------------------
def _forward(op, datas, params):
    return _arrays(op.forward(*datas, **params))


def _arrays(out):
    """A rule's output as arrays: one, or the tuple of an op with several outputs."""
    if out.__class__ is tuple:
        return tuple(o if isinstance(o, np.ndarray) else np.asarray(o) for o in out)
    return out if isinstance(out, np.ndarray) else np.asarray(out)


def _elementwise_rule(op):
    forward = op.forward

    def rule(k, datas, batched, params):
        ranks = [rank(d, b, k) for d, b in zip(datas, batched)]
        top = max(ranks)
        # a batched input of the top rank lines up as it is; an unbatched one broadcasts from the right anyway
        if any(b and r != top for b, r in zip(batched, ranks)):
            datas = [
                np.reshape(d, d.shape[:k] + (1,) * (top - r) + d.shape[k:]) if b else d
                for d, b, r in zip(datas, batched, ranks)
            ]
        return _arrays(forward(*datas, **params) if params else forward(*datas))

    return rule


def _default_axis(op):
    try:
        p = inspect.signature(op.forward).parameters.get("axis")
    except (TypeError, ValueError):
        return None
    return None if p is None or p.default is inspect.Parameter.empty else p.default


def _axis_rule(op):
    default = _default_axis(op)

    def rule(k, datas, batched, params):
        if any(batched[1:]):
            raise NotImplementedError(f"vmap: {op.name}'s batching rule takes a batch of its first input only")
        params = dict(params)
        params["axis"] = shift_axes(params.get("axis", default), k, rank(datas[0], True, k))
        return _forward(op, datas, params)

    return rule


def _leading_rule(op):
    def rule(k, datas, batched, params):
        if sum(batched) == len(datas) == 1:
            return _forward(op, datas, params)
        return _forward(op, full(k, datas, batched, sizes(k, datas, batched)), params)

    return rule


def _loop(op, k, datas, batched, params):
    """The opt-in fallback: the op once per example, the results stacked."""
    n = sizes(k, datas, batched)
    outs = []
    for idx in np.ndindex(*n):
        args = [d[tuple(min(i, s - 1) for i, s in zip(idx, d.shape[:k]))] if b else d for d, b in zip(datas, batched)]
        outs.append(_forward(op, args, params))
    if op.outputs:  # several outputs: each stacked over the examples
        return tuple(_stacked([o[i] for o in outs], n) for i in range(len(op.outputs)))
    return _stacked(outs, n)


def _stacked(outs, n):
    out = np.stack(outs)
    return out.reshape(tuple(n) + out.shape[1:])


# -- the step the core calls ---------------------------------------------------------------------------------
def _refuse_closure(op, args, levels):
    for i, lv in enumerate(levels):
        if lv.traced is not None:
            _refuse_traced(op, args, lv.traced)
        if not lv.sealed:
            continue
        inner = levels[i:]  # lv and the levels opened inside it: what they made is not from lv's closure
        own = set().union(*(v.own for v in inner))  # the leaves their VJPs made (a plain vmap never gets here)
        tapes = {id(t) for t in lv.sealed}
        for a in args:
            if not isinstance(a, Tensor):
                continue
            if a.__class__ is Batched and any(v in a._levels for v in inner):
                continue  # batched along lv (or inside it): made from its arguments
            node = a._node  # an outer vmap's batched value is a closure tensor of lv like any other
            if (node is not None and id(node.tape()) in tapes) or (
                node is None and a.requires_grad and id(a) not in own
            ):
                raise NotImplementedError(
                    f"vmap: {op.name}: f uses a tensor from its closure that a tape opened outside vmap records; "
                    "reverse mode through vmap differentiates f's arguments only: pass that tensor to the "
                    "vmapped function as an argument (in_axes=None for one shared by every example)"
                )


def _refuse_traced(op, args, tracer):
    for a in args:
        if isinstance(a, Tensor) and a.__class__ is not Batched and tracer.traces(a._data):
            raise NotImplementedError(
                f"vmap: {op.name}: f uses a value from its closure that tg.compile traces; the compiled program "
                "runs vmap as one step, which would keep that value from the first call: pass it to the vmapped "
                "function as an argument (in_axes=None for one shared by every example)"
            )


def _aligned(a, levels):
    """A batched tensor's data with an axis (of size 1 where it does not vary) for each of ``levels``."""
    d = a._data
    for j, lv in enumerate(levels):
        if lv not in a._levels:
            d = np.expand_dims(d, j)
    return d


def _lined_param(v, levels):
    if v.__class__ is tuple:  # an index tuple: each batched array in it
        return tuple(_lined_param(i, levels) for i in v)
    return BatchedIndex(_aligned(v, levels)) if v.__class__ is Batched else v


def _batched_params(op, params, rule):
    """The names of ``params`` that f computed from its arguments (batched), refused unless ``rule`` takes them."""
    names = [
        name
        for name, v in params.items()
        if v.__class__ is Batched or (v.__class__ is tuple and any(i.__class__ is Batched for i in v))
    ]
    takes = getattr(rule, "batched_params", ())
    for name in names:
        if name not in takes:
            raise NotImplementedError(
                f"vmap: {op.name}'s parameter {name} varies along the batch (an index f computed from, or was "
                "given as, a batched argument), which its batching rule does not take: gather with x[i] or "
                "tg.take_along_axis (their rules take batched indices), or make the index the same for every example"
            )
    return names


def _step(op, args, params):
    """Called by the core instead of ``op``'s forward when an input is batched: the batched output."""
    open_levels = BATCH.get()
    _refuse_closure(op, args, open_levels)
    rule = RULES.get(op) or rule_of(op)
    varying = _batched_params(op, params, rule) if params else ()
    # the inputs' levels: where every batched input has the same ones (the common case, one vmap), they are the
    # op's, and each input's data is already aligned to them
    same = None
    for a in args:
        if a.__class__ is Batched:
            lv = a._levels
            if same is None:
                same = lv
            elif lv is not same and lv != same:
                same = False
                break
    if same and not varying and all(lv in open_levels for lv in same):
        levels = same
        datas = [a._data if isinstance(a, Tensor) else a for a in args]
        batched = [a.__class__ is Batched for a in args]
    else:
        present = set()
        for a in args:
            if a.__class__ is Batched:
                present.update(a._levels)
        for name in varying:
            for v in params[name] if params[name].__class__ is tuple else (params[name],):
                if v.__class__ is Batched:
                    present.update(v._levels)
        levels = tuple(lv for lv in open_levels if lv in present)
        datas, batched = [], []
        for a in args:
            if a.__class__ is Batched:
                datas.append(_aligned(a, levels))
                batched.append(True)
            else:
                datas.append(a._data if isinstance(a, Tensor) else a)
                batched.append(False)
    k = len(levels)
    given = params  # the tape and forward mode keep the batched tensors: their replays batch again
    if varying:
        params = dict(params, **{name: _lined_param(params[name], levels) for name in varying})
    if rule is None:
        if not any(lv.loop for lv in levels):
            raise NotImplementedError(
                f"vmap: {op.name} has no batching rule: declare one in its defop row (batch=), or pass "
                "loop=True to vmap to run it once per example"
            )
        out = _loop(op, k, datas, batched, params)
    else:
        try:
            out = rule(k, datas, batched, params)
        except (TypeError, ValueError) as err:
            shapes = ", ".join(str(tuple(np.shape(d))[k if b else 0 :]) for d, b in zip(datas, batched))
            raise type(err)(f"vmap: {op.name} of examples with shapes {shapes}: {err}") from None
    out = _arrays(out)
    if op.outputs:  # several outputs: each batched, one entry for them all
        if out.__class__ is not tuple or len(out) != len(op.outputs):
            raise TypeError(f"vmap: {op.name}'s batching rule must return {len(op.outputs)} arrays {op.outputs}")
        result = tuple(Batched.make(o, levels) for o in out)
    else:
        result = Batched.make(out, levels)
    if op.differentiable and ACTIVE.get():
        record_batched(op, args, given, result)  # its replay runs the rules on tensors: batched again
    levels_fwd = FORWARD.get()
    if levels_fwd and op.differentiable:  # an op with a gradient: its tangent too
        _tangent_step(levels_fwd, op, args, given, result)
    return result


set_batching_rules(_step)


# -- vmap --------------------------------------------------------------------------------------------------
def _batch_leaf(leaf, axis, lv, what):
    if isinstance(leaf, Tensor) and (leaf._node is not None or leaf.requires_grad or has_tangent(leaf)):
        raise NotImplementedError(
            f"{what}: forward mode of a vmapped function (an argument with a tangent: jvp, jacfwd or linearize of "
            "vmap) is not supported yet: write the transform inside vmap instead (vmap(jvp(f)), vmap(jacfwd(f)))"
        )
    if leaf.__class__ is Batched:
        d, levels = leaf._data, leaf._levels
        k = len(levels)
        r = d.ndim - k
        if r == 0:
            raise ValueError(f"{what}: in_axes={axis} for a 0-d argument")
        ax = k + _in_range(axis, r, f"{what}: in_axes", d.shape[k:])
        return Batched.make(_moved(d, ax, k), levels + (lv,)), d.shape[ax]
    d = leaf._data if isinstance(leaf, Tensor) else np.asarray(leaf)
    if d.ndim == 0:
        raise ValueError(f"{what}: in_axes={axis} for a 0-d argument; pass in_axes=None for it")
    ax = _in_range(axis, d.ndim, f"{what}: in_axes", d.shape)
    return Batched.make(_moved(d, ax, 0), (lv,)), d.shape[ax]


def _in_range(axis, n, what, shape):
    """``axis`` as an index in ``range(n)``; one outside ``-n..n-1`` is refused, as JAX refuses it (NumPy's
    modulo would put the batch axis somewhere else, silently)."""
    a = int(axis)
    if not -n <= a < n:
        raise ValueError(f"{what}={axis} is out of range for shape {tuple(shape)} (axes {-n}..{n - 1})")
    return a % n


def _moved(d, source, destination):
    """``np.moveaxis`` of one axis; an axis already in place is left as it is (the array itself, not a view)."""
    return d if source == destination else np.moveaxis(d, source, destination)


def _unbatch(o, lv, size, out_axes):
    if isinstance(o, Tensor) and has_tangent(o):  # a level opened outside this vmap: its tangent would be dropped
        raise NotImplementedError(
            "vmap: forward mode of a vmapped function whose closure holds a tensor with a tangent is not supported "
            "yet: pass that tensor to the vmapped function as an argument (in_axes=None for one shared by every "
            "example), or write the transform inside vmap (vmap(jvp(f)))"
        )
    if o.__class__ is Batched and lv in o._levels:
        levels = o._levels
        j = levels.index(lv)
        rest = levels[:j] + levels[j + 1 :]
        d = o._data
        r = d.ndim - len(levels)
        d = _moved(d, j, len(rest) + _in_range(out_axes, r + 1, "vmap: out_axes", d.shape[len(levels) :]))
        return Batched.make(d, rest) if rest else Tensor._wrap(d)
    # the same for every example: broadcast along the new axis
    if o.__class__ is Batched:
        k = len(o._levels)
        d = o._data
        pos = k + _in_range(out_axes, d.ndim - k + 1, "vmap: out_axes", d.shape[k:])
        d = np.expand_dims(d, pos)
        return Batched.make(np.broadcast_to(d, d.shape[:pos] + (size,) + d.shape[pos + 1 :]), o._levels)
    d = o._data if isinstance(o, Tensor) else np.asarray(o)
    pos = _in_range(out_axes, d.ndim + 1, "vmap: out_axes", d.shape)
    d = np.expand_dims(d, pos)
    return Tensor._wrap(np.broadcast_to(d, d.shape[:pos] + (size,) + d.shape[pos + 1 :]).copy())


def vmap(f, in_axes=0, out_axes=0, *, loop: bool = False):
    """``f`` mapped over an axis of its arguments (JAX's ``vmap``, PyTorch's ``torch.func.vmap``), every op run once
    on the whole batch by its batching rule (see the module docstring).

    ``in_axes``: an int (the batch axis of every argument), or a tuple with one entry per argument (an int, or
    None for an argument shared by every example). ``out_axes``: where the batch axis goes in each output.
    ``loop=True`` runs an op without a batching rule once per example instead of raising. Composes with itself
    (nested vmap), with the transforms inside it (``vmap(jvp(f))``, ``vmap(grad(f))``, ``jacfwd``), with reverse
    mode through it (``grad`` of vmap, ``backward()``, second order), ``jvp``, ``linearize`` and ``jacfwd`` of
    it, and ``tg.compile``.

    >>> import numpy as np, tapegrad as tg
    >>> A = np.arange(6.0).reshape(2, 3)
    >>> tg.vmap(lambda x: A @ x)(np.eye(3))      # one matrix-vector product per row
    array([[0., 3.],
           [1., 4.],
           [2., 5.]])
    >>> tg.vmap(lambda x, y: (x * y).sum(), in_axes=(0, None))(np.ones((4, 3)), np.arange(3.0))
    array([3., 3., 3., 3.])
    """

    _check_axes(in_axes, out_axes)

    @functools.wraps(f)
    def vmapped(*args):
        axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes)} entries for {len(args)} arguments")
        if TRACER.get() is not None or ACTIVE.get() or FORWARD.get():
            leaves, spec = tree_flatten(tuple(args), "vmap: the arguments")
            if TRACER.get() is not None or any(_recorded(leaf) or has_tangent(leaf) for leaf in leaves):
                return _through_tape(f, spec, leaves, _leaf_axes(args, axes), out_axes, loop)
            sealed = ACTIVE.get()
            closure = Closure({}, sealed=sealed, levels=FORWARD.get(), stop=True)
            try:  # nothing of theirs to differentiate, unless f's closure holds something (then it is one op)
                with taking(closure):
                    return _plain(f, args, axes, out_axes, loop, sealed)
            except ClosedOver as stop:
                if stop.closure is not closure:
                    raise  # another call's
            return _through_tape(f, spec, leaves, _leaf_axes(args, axes), out_axes, loop)
        return _plain(f, args, axes, out_axes, loop)

    return vmapped


def _own_view(a):
    """A shared argument of a traced call on a view of its own, which the closure check (``_refuse_traced``) tells
    apart from the trace's values: the argument is the step's input, not a value kept from the trace."""
    if isinstance(a, np.ndarray):
        return a.view()
    if a.__class__ is Tensor and a._node is None and not a.requires_grad:
        return Tensor._wrap(a._data.view()) if isinstance(a._data, np.ndarray) else a
    return a


def _is_axis(a) -> bool:
    return isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))


def _check_axes(in_axes, out_axes) -> None:
    """vmap's axes, as it takes them: in_axes an int, None or one int-or-None per argument; out_axes an int."""
    entries = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,)
    bad = [a for a in entries if not (a is None or _is_axis(a))]
    if bad:
        raise TypeError(
            f"vmap: in_axes={in_axes!r}: each entry is an int (the argument's batch axis) or None (shared by every "
            f"example), one per argument, not {type(bad[0]).__name__}; the axes of a pytree argument's leaves "
            "are one axis for all of them (move a leaf's axis first, or pass it as an argument of its own)"
        )
    if not _is_axis(out_axes):
        raise TypeError(
            f"vmap: out_axes={out_axes!r}: an int, where the batch axis goes in every output (a tuple per output "
            "and None, an output shared by every example, are not supported: move the axis with np.moveaxis "
            "after the call)"
        )


def _plain(f, args, axes, out_axes, loop, sealed=None, traced=None):
    """vmap's run: every argument batched (or shared), ``f`` run once on the batch, the outputs unbatched."""
    with _level(None, loop, sealed, traced) as lv:
        size = None
        new = []
        for i, (a, ax) in enumerate(zip(args, axes)):
            if ax is None:
                new.append(a if traced is None else _own_view(a))
                continue
            leaves, spec = tree_flatten(a, f"vmap: argument {i}")
            batched = []
            for leaf in leaves:
                b, n = _batch_leaf(leaf, ax, lv, "vmap")
                if size is not None and n != size:
                    raise ValueError(
                        f"vmap: argument {i} has {n} examples along axis {ax}, another argument {size}; "
                        "every batched argument needs the same batch size"
                    )
                size = n
                batched.append(b)
            new.append(tree_unflatten(spec, batched))
        if size is None:
            raise ValueError("vmap: no argument is batched (every in_axes entry is None)")
        lv.size = size
        out = f(*new)
        leaves, spec = tree_flatten(out, "vmap: the output of f")
        res = tree_unflatten(spec, [_unbatch(o, lv, size, out_axes) for o in leaves])
    return finish(res, keeps_tensors())


# -- vmap on a tape, or traced by tg.compile -----------------------------------------------------------------
# A vmapped call whose arguments a recording tape differentiates, or that tg.compile traces, is one op: its
# forward is vmap's run on the arguments' values (so a compiled program runs it as one step), its rule the same
# op of one example's VJP (the cotangent batched like the output), so the gradient is the loop's and can itself
# be differentiated (second order, a gradient traced by tg.compile). Shared arguments (in_axes=None) get the
# sum of the examples' gradients. The entry keeps its inputs only.
def _recorded(leaf) -> bool:
    return isinstance(leaf, Tensor) and (leaf._node is not None or leaf.requires_grad or id(leaf) in WATCHED.get())


def _leaf_axes(args, axes):
    out = []
    for i, (a, ax) in enumerate(zip(args, axes)):
        out.extend([ax] * len(tree_flatten(a, f"vmap: argument {i}")[0]))
    return tuple(out)


def _example_vjp(fn, needs):
    """One example's VJP of ``fn``: ``(*leaves, g)`` -> the gradients of the leaves that need one, raveled and
    concatenated (one output, so that the VJP is an op like any other)."""

    def vjp_one(*vals):
        *leaves, g = vals
        with BaseTape() as t:
            ins = []
            for leaf, k in zip(leaves, needs):
                if k == 2:
                    leaf = functional_input(leaf) if isinstance(leaf, Tensor) else Tensor(leaf)
                    if leaf._node is None:
                        leaf.requires_grad = True
                        BATCH.get()[-1].own.add(id(leaf))
                ins.append(leaf)
            out = fn(*ins)
        sources = [x for x, k in zip(ins, needs) if k == 2]
        if out._node is None and not out.requires_grad:  # fn is constant in them (a VJP of a linear fn): zeros
            grads = [zeros_like(s) for s in sources]
        else:
            grads = t.gradient(out, sources, output_gradients=g, unconnected="zero")
        return concatenate([reshape(gi, (gi.size,)) for gi in grads])  # sizes, not -1: empty examples

    return vjp_one


def _vmap_forward(*datas, fn, axes, out_axes, loop, needs):
    outer = ACTIVE.get()
    tracer = TRACER.get()
    token = TRACER.set(None)  # traced, the call is one step of the program: it runs vmap on arrays
    try:
        with stop_recording():  # the tapes outside record this op alone
            # a differentiated argument reaches f as the tensor it was, not its array: ``w[i]`` with ``i``
            # batched is tapegrad's indexing, where NumPy's would read the batch's values
            args = [Tensor._wrap(d) if k == 2 and isinstance(d, np.ndarray) else d for d, k in zip(datas, needs)]
            out = _plain(fn, args, axes, out_axes, loop, outer, tracer)
    finally:
        TRACER.reset(token)
    return out._data if isinstance(out, Tensor) else np.asarray(out)  # several outputs come joined (_joined)


def _vmap_batch(k, datas, batched, params):
    """The batching rule of a vmapped call: vmap once more per batch axis around it (a nested vmap), every
    example of the ``k`` outer levels running the call on one example's arguments."""
    n = tuple(sizes(k, datas, batched))
    lined = [np.broadcast_to(d, n + d.shape[k:]) if b else d for d, b in zip(datas, batched)]
    outer = tuple(0 if b else None for b in batched)
    fn, axes, out_axes, loop = params["fn"], params["axes"], params["out_axes"], params["loop"]
    sealed = ACTIVE.get()
    call = functools.partial(_plain_of, fn, axes, out_axes, loop, sealed)
    for _ in range(k):
        call = functools.partial(_plain_of, call, outer, 0, loop, sealed)
    with stop_recording():  # as in _vmap_forward: the tapes outside record this op alone
        out = call(*lined)
    return out._data if isinstance(out, Tensor) else np.asarray(out)


def _plain_of(f, axes, out_axes, loop, sealed, *args):
    return _plain(f, list(args), axes, out_axes, loop, sealed)


def _vmap_rule(xp, g, ans, *vals, fn, axes, out_axes, loop, needs):
    try:
        # the VJP's function closes over fn alone, whose closure's tensors are inputs of the call already
        flat = _apply_call(_example_vjp(fn, needs), [*vals, g], (*axes, out_axes), 0, loop)
    except NotImplementedError as err:
        if not FORWARD.get():
            raise
        raise NotImplementedError(
            "vmap: forward mode over a gradient through a vmapped function (hvp, or jacfwd of grad, of vmap) is "
            "not supported yet: use tg.hessian or tg.jacrev (reverse mode takes rows here), or write the "
            f"transform inside vmap (vmap(hvp(...))) ({err})"
        ) from None
    out, off = [], 0
    for v, ax, k in zip(vals, axes, needs):
        if k != 2:
            out.append(None)
            continue
        shape = tuple(np.shape(v))
        ex = shape if ax is None else shape[: int(ax) % len(shape)] + shape[int(ax) % len(shape) + 1 :]
        size = int(np.prod(ex, dtype=np.int64))
        piece = xp.reshape(xp.getitem(flat, (slice(None), slice(off, off + size))), np.shape(flat)[:1] + ex)
        off += size
        if ax is None:
            gi = xp.sum(piece, axis=0)
        else:
            j = int(ax) % len(shape)
            order = list(range(1, len(shape)))
            order.insert(j, 0)
            gi = xp.transpose(piece, tuple(order))
        out.append(gi)
    return out


def _needs(leaf) -> int:
    # 2: a floating input a tape records, whose gradient the rule computes; 1: any other (no gradient)
    data = leaf._data if isinstance(leaf, Tensor) else leaf
    return 2 if (_recorded(leaf) or has_tangent(leaf)) and np.issubdtype(np.result_type(data), np.inexact) else 1


_vmap_op = defop(
    "vmap",
    _vmap_forward,
    _vmap_rule,
    inputs="*",
    save="*",
    joint=True,
    register=False,
    jvp="transpose",
    batch=_vmap_batch,
)


def _call(fn, leaves, axes, out_axes, loop):
    """The vmapped call as one op on ``leaves``, and on the tensors of ``fn``'s closure that the tapes recording
    now differentiate (``tapegrad._closure``): a first run finds them, and the call is made again with each as an input
    shared by every example (in_axes=None), which ``fn`` sees where it used the tensor."""
    sealed, levels = ACTIVE.get(), FORWARD.get()
    if (sealed or levels) and TRACER.get() is None:
        found = {}
        try:
            return _apply_call(finding(fn, Closure({}, found, sealed, levels)), leaves, axes, out_axes, loop)
        except ClosedOver as stop:
            if stop.closure.found is not found:
                raise  # another call's
            closure = tuple(found.values())
        fn = closing_over(fn, closure)
        leaves, axes = [*leaves, *closure], (*axes, *(None,) * len(closure))
    return _apply_call(fn, leaves, axes, out_axes, loop)


def _apply_call(fn, leaves, axes, out_axes, loop):
    needs = tuple(_needs(leaf) for leaf in leaves)
    return _vmap_op(list(leaves), fn=fn, axes=tuple(axes), out_axes=out_axes, loop=loop, needs=needs)


def _through_tape(f, spec, leaves, axes, out_axes, loop):
    several = {}  # f's outputs where they are several (a tuple, a dict...): their spec, shapes and dtype

    def one(*ls):
        out = f(*tree_unflatten(spec, ls))
        if isinstance(out, (Tensor, np.ndarray)):
            return out
        return _joined(out, several)

    res = _call(one, leaves, axes, 0, loop)  # the batch axis first; out_axes is checked against each output below
    if not several:
        ax = _in_range(out_axes, res.ndim, "vmap: out_axes", res.shape[1:])
        return moveaxis(res, 0, ax) if ax else res
    # the op's output is every example's outputs raveled and joined, vmap's axis first: each output again, its
    # batch axis where out_axes puts it
    pieces, off = [], 0
    for shape in several["shapes"]:
        size = int(np.prod(shape, dtype=np.int64))
        piece = reshape(res[:, off : off + size], (res.shape[0], *shape))
        off += size
        ax = _in_range(out_axes, len(shape) + 1, "vmap: out_axes", shape)
        if ax:
            piece = moveaxis(piece, 0, ax)
        pieces.append(piece)
    return tree_unflatten(several["spec"], pieces)


def _joined(out, several):
    """Several outputs of one example as one vector (the op has one output), what :func:`_through_tape` splits."""
    outs, ospec = tree_flatten(out, "vmap: the output of f")
    outs = [o if isinstance(o, Tensor) else Tensor(o) for o in outs]
    dtypes = {np.dtype(o.dtype) for o in outs}
    if len(dtypes) > 1:
        raise NotImplementedError(
            f"vmap: a vmapped function with outputs of several dtypes ({', '.join(sorted(map(str, dtypes)))}) under a "
            "tape that differentiates it or traced by tg.compile is not supported yet: cast them to one dtype, or "
            "vmap each output apart"
        )
    several.update(spec=ospec, shapes=[tuple(o.shape) for o in outs])
    return concatenate([reshape(o, (o.size,)) for o in outs]) if outs else Tensor(np.zeros(0))
