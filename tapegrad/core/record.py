"""Recording one op: :func:`apply` runs an op's forward and appends one entry to every active tape that needs it.

This is the hot path of every op: one pass over the inputs, then, only when some input needs a gradient and a
tape records, the record tuple, one :class:`~tapegrad.core.node.Node` and one entry per active tape. The
NumPy path calls the op's NumPy forward directly; other libraries go through :mod:`tapegrad.backend`.

While a function is traced (:mod:`tapegrad.compile`), every op, recorded or not and differentiable or not, is
also reported to the context's tracer (``tracer.op(op, inputs, params, out)``): the program it builds needs
the constants' and the comparisons' ops as much as the recorded ones. While a context is profiled
(:mod:`tapegrad.profiler`), its op probe is called around every op: ``probe.start(op)`` before the forward,
``probe.stop(op, datas, params, out)`` after it. Code neither traced nor profiled pays one attribute read.
"""

from __future__ import annotations

import sys
import weakref
from types import MappingProxyType

import numpy as np

from .._batched import Batched
from .._shapes import Shape
from .._state import ACTIVE, BATCH, CLOCK, CLOSED, FORWARD, PROBE, TRACER, TRACING, WATCHED
from .._tensor import Tensor
from .._tree import holds_tensor
from ..backend import NUMPY, PLAIN, common_backend
from ..errors import NestedTensorError, TapeLeakWarning, warn_once
from .node import Entry, Node, Outputs, entry_died

__all__ = [
    "apply", "apply_several", "function_of", "apply_nondiff", "saved_values", "set_tangent_rules",
    "set_batching_rules", "record_batched", "method_of", "bind_native", "set_native",
]  # fmt: skip

_new_tensor = Tensor.__new__
_ndarray = np.ndarray
_get_active = ACTIVE.get
_get_watched = WATCHED.get
_NOTHING = frozenset()
_NO_PARAMS = MappingProxyType({})  # the parameters of an op called without any (shared, so read-only)
_MISSING = object()  # an argument not given
_NATIVE = [None]  # the slot for the compiled fast paths (tapegrad.core.native), filled by tapegrad.speedups
_TANGENTS = [None]  # the slot for forward mode: fn(levels, op, args, params, out), filled by tapegrad.forward


_BATCHING = [None]  # the slot for vmap: fn(op, args, params) -> the batched output, filled by tapegrad.batching


def set_batching_rules(fn) -> None:
    """Give the engine vmap's step: ``fn(op, args, params)``, called instead of the forward for an op with a
    :class:`~tapegrad._batched.Batched` input while a vmap level is open (``_state.BATCH``); it returns the
    batched output. :mod:`tapegrad.batching` fills it on import; the engine never imports it."""
    _BATCHING[0] = fn


def _taken_over(args) -> tuple:
    """``args`` as a vmapped call under a tape sees them: a tensor of its function's closure that the tapes
    outside record is the call's input (``_state.CLOSED``; tapegrad.batching), so its gradient is the call's."""
    closed = CLOSED.get()
    for i, closure in enumerate(closed):
        args = closure.take(args, closed[i + 1 :])
    return args


def _batched(args) -> bool:
    for a in args:
        if a.__class__ is Batched:
            return True
    return False


def _batched_params(params) -> bool:
    # an index that f computed from its arguments (argsort's, say) varies along the batch as an input does
    for v in params.values():
        if v.__class__ is Batched or (v.__class__ is tuple and _batched(v)):
            return True
    return False


def set_tangent_rules(fn) -> None:
    """Give the engine forward mode's step: ``fn(levels, op, args, params, out)``, called for every differentiable
    op while a forward-mode level is open in this context (``_state.FORWARD``), sets ``out``'s tangents.
    :mod:`tapegrad.forward` fills it on import; the engine never imports it."""
    _TANGENTS[0] = fn


def apply(op, args, params):
    """Run ``op`` on ``args`` (tensors, arrays, scalars) and record it on every active tape that needs it."""
    if TRACING.n:
        args = _taken_over(args)
        if BATCH.get() and (_batched(args) or _batched_params(params)):
            return _BATCHING[0](op, args, params)
        _start(op)
    active = _get_active()
    top = active[-1]._ref if active else None
    datas, srcs, mask, plain, foreign = _inputs(args, top, _get_watched() if active else _NOTHING)
    if plain:
        out = _forward_numpy(op, args, datas, params)
    else:
        out = _forward_any(op, args, _lists_as_arrays(op, args, datas), params)
    t = _new_tensor(Tensor)
    t._data = out
    t.grad = None
    if active and mask:
        if foreign is not None:
            _foreign_inputs(op, srcs, top, active)
        _record(op, datas, srcs, mask, params, t, active, top)
    else:
        t.requires_grad = False
        t._node = None
    if TRACING.n:
        _trace(op, datas, params, t)  # first: a tangent rule that reads t is then traced reading a traced value
        levels = FORWARD.get()
        if levels:
            _TANGENTS[0](levels, op, args, params, t)
    return t


def _inputs(args, top, watched):
    """One pass over the inputs: the arrays for the forward; the keys and the grad mask for the tape; whether
    every array is NumPy's (the NumPy forward is then called directly); an input recorded under another tape."""
    datas = []
    srcs = []
    mask = bit = 0
    foreign = None
    plain = True
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            if d.__class__ is not _ndarray:
                plain = False
            datas.append(d)
            node = a._node
            if node is not None:
                srcs.append(node)
                mask |= 1 << bit
                if node.tape is not top:  # recorded under another tape: checked apart, once recording
                    foreign = node
            else:
                srcs.append(a)
                if a.requires_grad or (watched and id(a) in watched):
                    mask |= 1 << bit
        else:
            if a.__class__ not in PLAIN:
                plain = False
            datas.append(a)
            srcs.append(None)
        bit += 1
    return datas, srcs, mask, plain, foreign


def _forward_numpy(op, args, datas, params):
    """The forward of ``op`` on NumPy arrays and Python numbers: its NumPy function, called as it is."""
    try:
        out = op.forward(*datas, **params) if params else op.forward(*datas)
    except (ValueError, TypeError) as err:
        raise _forward_error(op, args, err) from None
    return out if out.__class__ is _ndarray else np.asarray(out)  # ufuncs return NumPy scalars for 0-d inputs


def record_batched(op, args, params, t) -> None:
    """The entry of ``t = op(*args)`` computed by vmap's batching rule (``t`` and some inputs
    :class:`~tapegrad._batched.Batched`; for an op with several outputs, ``t`` is the tuple of them), on every
    active tape that needs it. The entry keeps the tensors themselves, so that a replay's rules, recorded on
    tensors, see one example's shapes and batch their ops."""
    active = _get_active()
    if not active:
        return
    top = active[-1]._ref
    datas, srcs, mask, _, foreign = _inputs(args, top, _get_watched())
    if not mask:
        return
    if foreign is not None:
        _foreign_inputs(op, srcs, top, active)
    values = [a if isinstance(a, Tensor) else d for a, d in zip(args, datas)]
    if t.__class__ is tuple:
        _record_several(op, values, srcs, mask, params, t, t, active, top)
    else:
        _record(op, values, srcs, mask, params, t, active, top, ans=t)


def _record(op, datas, srcs, mask, params, t, active, top, ans=None):
    """The entry of ``t = op(...)`` on every active tape: one record, one node, one entry per tape."""
    out = t._data if ans is None else ans
    shapes = None
    if op.broadcast:
        oshape = out.shape
        bit = 1
        for d in datas:
            if mask & bit and d.shape != oshape:  # an input that needs a gradient was broadcast
                shapes = tuple([getattr(d, "shape", None) for d in datas])
                break
            bit <<= 1
    save = op.save
    rec = (
        op,
        tuple(srcs),
        tuple(datas) if save is True else (op.nosave if save is None else saved_values(op, datas)),
        out if op.save_ans else None,
        shapes,
        params,
        CLOCK.tick,
        mask,
    )
    node = Node()
    node.tape = top
    t.requires_grad = True
    t._node = node
    for tape in active:
        e = Entry(node, entry_died)
        e.rec = rec
        tape.append(e, t, active)


def function_of(op):
    """The public function of the differentiable ``op``: ``fn(*args, **params)`` runs :func:`apply`, and an op of
    one or two inputs called with them alone takes a shorter path to the same entry (:func:`_unary`,
    :func:`_binary`).

    >>> import tapegrad as tg
    >>> tg.exp.op.arity, float(tg.exp(tg.Tensor(0.0)))
    (1, 1.0)
    """
    if op.outputs:

        def fn(*args, **params):
            return apply_several(op, args, params)

        return fn
    if op.variadic:

        def fn(tensors, **params):
            return apply(op, tuple(tensors), params)

        return fn
    if op.arity == 1:
        return _unary(op) if _NATIVE[0] is None else _compiled_unary(op, _NATIVE[0])
    if op.arity == 2:
        return _binary(op) if _NATIVE[0] is None else _compiled_binary(op, _NATIVE[0])

    def fn(*args, **params):
        return apply(op, args, params)

    return fn


def _unary(op):
    """``fn(x, **params)`` for a one-input op (a reduction's ``axis``, say): on a NumPy input (a tensor, an array
    or a number), while nothing is traced, the entry :func:`apply` would record, built in one frame without its
    lists."""

    broadcast = op.broadcast  # its entry then needs the input's shape: apply records it

    def fn(x, /, *more, **params):
        if more or TRACING.n or (params and broadcast):
            return apply(op, (x, *more), params)
        dx = x._data if x.__class__ is Tensor else x
        if dx.__class__ not in PLAIN:
            return apply(op, (x,), params or _NO_PARAMS)
        try:
            out = op.forward(dx, **params) if params else op.forward(dx)
        except (ValueError, TypeError) as err:
            raise _forward_error(op, (x,), err) from None
        if out.__class__ is not _ndarray:
            out = np.asarray(out)  # ufuncs give NumPy scalars for 0-d inputs
        t = _new_tensor(Tensor)
        t._data = out
        t.grad = None
        active = _get_active()
        src = (x._node or x) if x.__class__ is Tensor else None  # a node (recorded), the leaf itself, or a constant
        if not (active and src is not None and (src is not x or x.requires_grad or id(x) in _get_watched())):
            t.requires_grad = False
            t._node = None
            return t
        top = active[-1]._ref
        if src is not x and src.tape is not top:  # recorded under another tape
            _foreign_inputs(op, (src,), top, active)
        save = op.save
        vals = (dx,) if save is True else (op.nosave if save is None else saved_values(op, (dx,)))
        rec = (op, (src,), vals, out if op.save_ans else None, None, params or _NO_PARAMS, CLOCK.tick, 1)
        node = Node()
        node.tape = top
        t.requires_grad = True
        t._node = node
        for tape in active:
            e = Entry(node, entry_died)
            e.rec = rec
            tape.append(e, t, active)
        return t

    return fn


def _binary(op):
    """``fn(x, y)`` for a two-input op: on NumPy inputs (tensors, arrays or numbers), while nothing is traced,
    the entry :func:`apply` would record, built in one frame without its lists."""

    def fn(x, y=_MISSING, /, *more, **params):
        if y is _MISSING or more or params or TRACING.n:
            return apply(op, (x,) if y is _MISSING else (x, y, *more), params)
        dx = x._data if x.__class__ is Tensor else x
        dy = y._data if y.__class__ is Tensor else y
        if dx.__class__ not in PLAIN or dy.__class__ not in PLAIN:
            return apply(op, (x, y), _NO_PARAMS)
        try:
            out = op.forward(dx, dy)
        except (ValueError, TypeError) as err:
            raise _forward_error(op, (x, y), err) from None
        if out.__class__ is not _ndarray:
            out = np.asarray(out)  # ufuncs give NumPy scalars for 0-d inputs
        t = _new_tensor(Tensor)
        t._data = out
        t.grad = None
        active = _get_active()
        # The keys: a node (a recorded value), the leaf itself, or None (a constant); and who needs a gradient.
        sx = (x._node or x) if x.__class__ is Tensor else None
        sy = (y._node or y) if y.__class__ is Tensor else None
        bx = sx is not None and (sx is not x or x.requires_grad or id(x) in _get_watched())
        by = sy is not None and (sy is not y or y.requires_grad or id(y) in _get_watched())
        if not (active and (bx or by)):
            t.requires_grad = False
            t._node = None
            return t
        top = active[-1]._ref
        if (bx and sx is not x and sx.tape is not top) or (by and sy is not y and sy.tape is not top):
            _foreign_inputs(op, (sx, sy), top, active)  # recorded under another tape
        shapes = None
        if op.broadcast:
            oshape = out.shape
            if (bx and dx.shape != oshape) or (by and dy.shape != oshape):  # an input needing a gradient broadcast
                shapes = (getattr(dx, "shape", None), getattr(dy, "shape", None))
        save = op.save
        vals = (dx, dy) if save is True else (op.nosave if save is None else saved_values(op, (dx, dy)))
        rec = (op, (sx, sy), vals, out if op.save_ans else None, shapes, _NO_PARAMS, CLOCK.tick, bx | by << 1)
        node = Node()
        node.tape = top
        t.requires_grad = True
        t._node = node
        for tape in active:
            e = Entry(node, entry_died)
            e.rec = rec
            tape.append(e, t, active)
        return t

    return fn


def _compiled_unary(op, native):
    """:func:`_unary`'s ``fn`` with its fast path in C (``native``, ``TAPEGRAD_SPEEDUPS=1``): the same entry, or
    None from C where the input is not NumPy's, which :func:`apply` then records."""
    record = native.record_unary

    def fn(x, /, *more, **params):
        if more or params or TRACING.n:
            return apply(op, (x, *more), params)
        t = record(op, x)
        return apply(op, (x,), _NO_PARAMS) if t is None else t

    _COMPILED[fn] = op
    return fn


def _compiled_binary(op, native):
    """:func:`_binary`'s ``fn`` with its fast path in C (``native``, ``TAPEGRAD_SPEEDUPS=1``)."""
    record = native.record_binary

    def fn(x, y=_MISSING, /, *more, **params):
        if y is _MISSING or more or params or TRACING.n:
            return apply(op, (x,) if y is _MISSING else (x, y, *more), params)
        t = record(op, x, y)
        return apply(op, (x, y), _NO_PARAMS) if t is None else t

    _COMPILED[fn] = op
    return fn


_COMPILED: dict = {}  # the public functions whose fast path is compiled -> their op


def method_of(fn, *, reflects=None):
    """The Tensor method for ``fn``, a row of :mod:`tapegrad.tensor_methods`: ``fn`` itself, or, where its fast
    path is compiled (``TAPEGRAD_SPEEDUPS=1``), a method that records in C without a Python frame and calls
    ``fn`` for anything else. ``reflects``: the public function that ``fn(a, b)`` calls as ``reflects(b, a)``
    (``__radd__``).

    >>> import tapegrad as tg
    >>> from tapegrad.core.record import method_of
    >>> method_of(tg.less) is tg.less   # no gradient, no compiled path: the function itself
    True
    >>> (method_of(tg.add) is tg.add) == (not tg.speedups.ENABLED)
    True
    """
    op = _COMPILED.get(fn if reflects is None else reflects)
    if op is None:
        return fn
    return _NATIVE[0].method(op, fn, op.arity, reflects is not None)


def _start(op):
    """An op is about to run: tell this context's probe, if it is profiled."""
    probe = PROBE.get()
    if probe is not None:
        probe.start(op)


def apply_several(op, args, params) -> tuple:
    """:func:`apply` for an op with several outputs (``op.outputs``): a tuple of tensors, one entry.

    The entry refers to an :class:`~tapegrad.core.node.Outputs`, which every output's node keeps alive; each
    output's cotangent lives under its own node, and the replay gives the op's rules all of them at once.

    >>> import tapegrad as tg
    >>> a = tg.Tensor([[2.0, 1.0], [1.0, 2.0]], requires_grad=True)
    >>> with tg.record() as t:
    ...     w, v = tg.linalg.eigh(a)
    >>> len(t), w.requires_grad and v.requires_grad
    (1, True)
    """
    if TRACING.n:
        args = _taken_over(args)
        if BATCH.get() and _batched(args):
            return _BATCHING[0](op, args, params)  # the tuple of the batched outputs, recorded there
        _start(op)
    active = _get_active()
    top = active[-1]._ref if active else None
    datas, srcs, mask, plain, foreign = _inputs(args, top, _get_watched() if active else _NOTHING)
    if not plain:
        datas = _lists_as_arrays(op, args, datas)
    outs = _forward_several(op, args, datas, params, plain)
    ts = tuple([Tensor._wrap(o) for o in outs])
    if active and mask:
        if foreign is not None:
            _foreign_inputs(op, srcs, top, active)
        _record_several(op, datas, srcs, mask, params, ts, outs, active, top)
    if TRACING.n:
        _trace(op, datas, params, ts)
        levels = FORWARD.get()
        if levels:  # after the outputs have their nodes: their tangents live there
            _TANGENTS[0](levels, op, args, params, ts)
    return ts


def _record_several(op, datas, srcs, mask, params, ts, outs, active, top) -> None:
    """The one entry of ``ts = op(...)`` (several outputs) on every active tape: it refers to an
    :class:`~tapegrad.core.node.Outputs`, and keeps ``outs`` (arrays, or vmap's batched tensors) for its rules."""
    save = op.save
    rec = (
        op,
        tuple(srcs),
        tuple(datas) if save is True else (op.nosave if save is None else saved_values(op, datas)),
        outs if op.save_ans else None,
        None,  # an op with several outputs does not broadcast its inputs
        params,
        CLOCK.tick,
        mask,
    )
    group = Outputs()
    group.tape = top
    parts = []
    for t in ts:
        node = Node()
        node.tape, node.group = top, group
        t.requires_grad = True
        t._node = node
        parts.append(weakref.ref(node))
    group.parts = tuple(parts)
    for tape in active:
        e = Entry(group, entry_died)
        e.rec = rec
        tape.append(e, ts, active)


def _forward_several(op, args, datas, params, plain) -> tuple:
    """The forward of an op with several outputs: a tuple of arrays, as many as the op declares."""
    if plain:
        try:
            outs = op.forward(*datas, **params)
        except (ValueError, TypeError) as err:
            raise _forward_error(op, args, err) from None
        outs = tuple(o if o.__class__ is _ndarray else np.asarray(o) for o in outs)
    else:
        backend = common_backend(op.name, datas)
        forward = op.forward if backend is NUMPY else backend.forward(op)
        try:
            outs = tuple(forward(*datas, **params))
        except (ValueError, TypeError) as err:
            raise _forward_error(op, args, err) from None
        outs = tuple(backend.asarray(o) if isinstance(o, np.generic) else o for o in outs)
    if len(outs) != len(op.outputs):
        raise TypeError(f"{op.name}: its forward returned {len(outs)} arrays, but the op declares {op.outputs}")
    return outs


def _trace(op, datas, params, out):
    """Report one op to this context's tracer, if a function is being traced here, and to its probe."""
    tracer = TRACER.get()
    if tracer is not None:
        tracer.op(op, datas, params, out)
    probe = PROBE.get()
    if probe is not None:
        probe.stop(op, datas, params, out)


def saved_values(op, datas):
    """The per-input values an entry keeps for ``op``'s rules: arrays, :class:`Shape` or None, as ``save=`` says."""
    flags = op.save
    if flags is True:
        return datas
    if flags is None:
        return op.nosave if len(datas) == op.arity else (None,) * len(datas)
    if op.variadic:
        flags = flags * len(datas)
    if len(datas) == 1 and flags:  # a reduction's one input (a loss's mean, each step): no generator for one value
        f = flags[0]
        return (datas[0],) if f == 1 else ((Shape(datas[0]),) if f == 2 else (None,))
    return tuple(d if f == 1 else (Shape(d) if f == 2 else None) for d, f in zip(datas, flags))


def _foreign_inputs(op, srcs, top, active):
    """Inputs recorded under a tape that is not the innermost one recording now.

    Nested use (the same tape, one nested in an active tape, or an enclosing one) is fine. A gradient computed
    with ``create_graph=True`` belongs to the tape that was replayed: the tapes recording now keep that tape
    alive and their replays continue into it, so its gradient can be differentiated in a later block. Any other
    value carried over from an earlier tape cannot pass a gradient back: warn.
    """
    for node in srcs:
        if node.__class__ is not Node or node.tape is top:
            continue
        ref = node.tape
        if any(
            r is ref or any(o is r for o in ref.outer) or any(o is ref for o in r.outer)
            for r in (t._ref for t in active)
        ):
            continue
        earlier = ref()
        if earlier is not None and ref.state == "recording" and earlier._differentiated:
            for t in active:
                t.keep_upstream(earlier)
            continue
        state = {"recording": "not replayed", "replayed": "already replayed", "released": "released"}.get(ref.state, "")
        warn_once(
            f"{op.name}: an input was computed under an earlier tape ({state}), not the one recording now. "
            "The gradient will not flow back into it, and carrying it from step to step keeps it alive. "
            "To accumulate a statistic write `total += loss.item()` after the record() block; to use the value as "
            "a constant, `x.detach()`",
            TapeLeakWarning,
        )
        return


def _lists_as_arrays(op, args, datas) -> list:
    """``datas`` with list and tuple inputs as arrays (what NumPy would make of them, and what the rules and the
    saved shapes expect; changed in place). One holding tensors (``tg.exp([t0, t1])``) would silently be a
    constant: refused, naming the op; so is a masked array, whose mask the rules cannot follow."""
    for i, a in enumerate(args):
        if a.__class__ not in (list, tuple):
            if _masked(a):
                raise TypeError(
                    f"{op.name}: an input is a masked array (numpy.ma), whose masked entries NumPy's functions skip "
                    "and tapegrad's rules cannot: its gradient would disagree with its value. Pass m.filled(value), "
                    "or np.asarray(m) for its data with the mask dropped"
                )
            continue
        if holds_tensor(a):
            raise NestedTensorError(
                f"{op.name}: an input is a {type(a).__name__} holding tensors, which NumPy would turn into a constant "
                "array with no gradient. Stack them on the tape first (tg.stack([...]), or tapegrad.numpy.array); "
                "tapegrad.numpy's functions, and NumPy's own called on tensors, do it for you"
            )
        datas[i] = np.asarray(a)
    return datas


def _masked(a) -> bool:
    ma = sys.modules.get("numpy.ma")  # not imported: no masked array exists (importing it costs 50 ms)
    return ma is not None and isinstance(a._data if isinstance(a, Tensor) else a, ma.MaskedArray)


def _forward_any(op, args, datas, params):
    """The forward of ``op`` in the library of its inputs (one library per op), for arrays other than NumPy's."""
    backend = common_backend(op.name, datas)
    if backend is NUMPY:
        forward = op.forward
    else:
        forward = backend.forward(op)
        for i, d in enumerate(datas):
            if isinstance(d, np.generic) and not isinstance(args[i], Tensor):
                datas[i] = d.item()  # a NumPy scalar acts as a Python number (in the saved values too)
    try:
        out = forward(*datas, **params)
    except (ValueError, TypeError) as err:
        raise _forward_error(op, args, err) from None
    except AttributeError as err:
        if isinstance(err, NotImplementedError):  # a function the library lacks: say which op needed it
            raise NotImplementedError(f"{op.name}: {err}") from None
        raise
    if out.__class__ is not _ndarray and (backend is NUMPY or isinstance(out, np.generic)):
        out = backend.asarray(out)  # a scalar where the library should have given a 0-d array
    return out


def apply_nondiff(op, args, params):
    """Run an op whose result carries no gradient (comparisons, argmax): never recorded."""
    if TRACING.n:
        args = _taken_over(args)
        if BATCH.get() and (_batched(args) or _batched_params(params)):
            return _BATCHING[0](op, args, params)
        _start(op)
    datas = [a._data if isinstance(a, Tensor) else a for a in args]
    if all(d.__class__ in PLAIN for d in datas):
        try:
            out = Tensor._wrap(np.asarray(op.forward(*datas, **params)))
        except (ValueError, TypeError) as err:
            raise _forward_error(op, args, err) from None
    else:
        out = Tensor._wrap(_forward_any(op, args, datas, params))
    if TRACING.n:
        _trace(op, datas, params, out)
    return out


def _forward_error(op, args, err):
    """The forward's ValueError or TypeError, naming the op and its inputs' shapes; of the same class
    (``LinAlgError`` for a singular matrix stays catchable as such)."""
    shapes = ", ".join(
        str(a.shape) if hasattr(a, "shape") else (str(np.shape(a)) if not np.isscalar(a) else "a scalar") for a in args
    )
    message = f"{op.name} of inputs with shapes {shapes}: {err}"
    try:
        return err.__class__(message)
    except TypeError:  # a subclass that needs other arguments (NumPy's ufunc errors): its standard base
        return (TypeError if isinstance(err, TypeError) else ValueError)(message)


def bind_native(module) -> None:
    """Hand the compiled fast paths (``module``: :mod:`tapegrad.core.native`) this module's classes and helpers, which
    they use as the Python ones do."""
    module.bind_recorder(
        Tensor=Tensor, Node=Node, Entry=Entry, entry_died=entry_died, PLAIN=PLAIN, ndarray=_ndarray,
        asarray=np.asarray, ACTIVE=ACTIVE, WATCHED=WATCHED, CLOCK=CLOCK, saved_values=saved_values,
        forward_error=_forward_error, foreign_inputs=_foreign_inputs, NO_PARAMS=_NO_PARAMS, TRACING=TRACING,
    )  # fmt: skip


def set_native(module) -> None:
    """Record with the compiled fast paths of ``module`` from now on (``TAPEGRAD_SPEEDUPS=1``): :mod:`tapegrad.speedups`
    calls this on import, before any op is made; the engine never imports it."""
    bind_native(module)
    _NATIVE[0] = module
