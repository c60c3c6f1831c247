"""Forward mode: tangents propagated alongside the forward pass, one JVP rule per op, no tape.

A forward-mode *level* (:func:`level`, opened by ``tg.jvp``, ``tg.jacfwd``, ``tg.linearize``, ``tg.hvp``) gives
tensors a tangent: while it is open, every differentiable op whose inputs carry a tangent of that level gives
its output the tangent its rule computes (the core calls :func:`_step` from ``apply``, through the slot
``core.record.set_tangent_rules``). Nothing is recorded for it: a tangent lives on its tensor
(``Tensor._tangents``, keyed by the level) and dies with it.

The rule of an op (``RULES``, keyed by the :class:`~tapegrad.registry.Op`, JAX's ``Primitive``) is the one its
``defop`` row declares (``jvp=``), or derived from the row:

- ``linear=True``: the op of the tangents (zeros for inputs without one): ``reshape``, ``sum``, ``concatenate``.
- ``linear="each"``: linear in each input apart, the sum over the inputs with a tangent of the op with that
  input replaced by its tangent: ``matmul``, ``einsum``, ``conv``.
- ``elementwise``: from the derivative the VJP uses. A VJP rule of an elementwise op is ``g * f'(x)`` (a
  diagonal Jacobian is its own transpose), so the tangent is the rule applied to the tangent. For complex
  values tapegrad's rule is ``g a + conj(g) conj(b)`` with ``a = df/dz`` and ``b = df/dz*``
  (docs/guide/complex.md); the rule at ``g = 1`` and ``g = i`` gives ``a`` and ``b``, and the tangent is
  ``a t + b conj(t)`` (the real part of ``rule(1) t`` for a real output).
- ``jvp="transpose"``: the VJP rule transposed, exactly: the rule recorded as a function of the cotangent
  ``u`` and the gradient in ``u`` of ``Re <rule(u), t>``. Costlier (a small tape per op), for ops whose
  forward rule is not written yet.

An op with none of these raises ``NotImplementedError`` naming it (``tests/test_forward.py`` fails for a
registered op with no rule). A rule computes with ``xp``, as VJP rules do: NumPy's names on arrays when nothing
else needs the tangent, tapegrad's ops on tensors when an outer level or a tape does (``jvp`` of ``jvp``,
``grad`` of ``jvp``), so the tangent is itself differentiable.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ._batched import Batched
from ._shapes import unbroadcast
from ._state import ACTIVE, FORWARD, TRACER, TRACING
from ._tensor import Tensor
from .backend import is_complex
from .backend.numpy_rules import numpy_rules
from .core.record import apply, set_tangent_rules
from .core.tape import stop_recording
from .errors import BatchedValueError, TapeEscapeError, numpy_rule_error
from .ops import tensor_rules
from .registry import Op
from .tape import record

__all__ = ["level", "tangent_of", "set_tangent", "rule_of", "RULES", "has_tangent"]

_ndarray = np.ndarray
RULES: dict[Op, object] = {}  # the forward-mode rule of each op (declared or derived), keyed by the Op


class Level:
    """One forward-mode level: the key of its tangents on the tensors that carry one. ``outer``: whether a tape
    recorded when it opened (one that may differentiate its tangents: ``grad`` of ``jvp``); a tape opened inside
    the level (``jvp`` of ``grad``) differentiates values only, and their tangents come from its ops' rules."""

    __slots__ = ("what", "outer", "__weakref__")

    def __init__(self, what):
        self.what = what
        self.outer = bool(ACTIVE.get())

    def __repr__(self) -> str:
        return f"<forward level of {self.what}>"


@contextlib.contextmanager
def level(what: str):
    """Open a forward-mode level in this context for the duration of the block; yields it.

    >>> import numpy as np, tapegrad as tg
    >>> with level("demo") as lv:
    ...     x = tg.Tensor(np.array([1.0, 2.0]))
    ...     set_tangent(x, lv, np.array([1.0, 0.0]))
    ...     tangent_of(tg.exp(x) * 2.0, lv)
    array([5.43656366, 0.        ])
    """
    lv = Level(what)
    token = FORWARD.set(FORWARD.get() + (lv,))
    TRACING.add(1)
    try:
        yield lv
    finally:
        TRACING.add(-1)
        FORWARD.reset(token)


def _tangents(x):
    """The tangents of tensor ``x`` by level: kept on its node when it has one (a recorded replay wraps the saved
    values in new tensors of the same node), else on the tensor. An output of an op with several outputs keeps
    them on its entry's group as well, so that a node made for an output that died (a replay reading it) finds
    them."""
    if not isinstance(x, Tensor):
        return None
    holder = x._node or x
    d = getattr(holder, "_tangents", None)
    if d is None and x._node is not None:
        group = getattr(holder, "group", None)
        per = getattr(group, "_tangents", None) if group is not None else None
        if per:
            i = _position(group, holder)
            if i is not None:
                d = {lv: ts[i] for lv, ts in per.items() if ts[i] is not None}
    return d


def tangent_of(x, lv):
    """``x``'s tangent at level ``lv`` (an array or a tensor), or None (a zero tangent)."""
    d = _tangents(x)
    return None if d is None else d.get(lv)


def has_tangent(x, levels=None) -> bool:
    """Whether ``x`` carries a tangent of a level open in this context (or of one of ``levels``)."""
    d = _tangents(x)
    return bool(d) and any(lv in d for lv in (FORWARD.get() if levels is None else levels))


def set_tangent(x: Tensor, lv, t) -> None:
    """Give tensor ``x`` the tangent ``t`` at level ``lv``."""
    holder = x._node or x
    d = getattr(holder, "_tangents", None)
    if d is None:
        holder._tangents = {lv: t}
    else:
        d[lv] = t
    group = getattr(holder, "group", None) if x._node is not None else None
    if group is not None:  # an output of an op with several outputs: on its group too, by position
        per = getattr(group, "_tangents", None)
        if per is None:
            per = group._tangents = {}
        ts = per.setdefault(lv, [None] * len(group.parts))
        i = _position(group, holder)
        if i is not None:
            ts[i] = t


def _position(group, node):
    """Which output of ``group`` (an op's :class:`~tapegrad.core.node.Outputs`) ``node`` is, or None."""
    return next((k for k, r in enumerate(group.parts) if r() is node), None)


def rule_of(op: Op):
    """The forward-mode rule of ``op``: declared on it, or derived from its facts (see the module docstring).

    >>> import tapegrad as tg
    >>> float(rule_of(tg.exp.op)(numpy_rules, (np.array(2.0),), np.array(3.0), np.array(0.0)))  # t * exp(x)
    6.0
    """
    rule = RULES.get(op)
    if rule is None:
        rule = RULES[op] = _derive(op)
    return rule


def derivation(op: Op) -> str | None:
    """How forward mode gets ``op``'s rule: ``"declared"``, ``"transpose"``, ``"linear"``, ``"linear in each"``,
    ``"elementwise"``, or None (it has none).

    >>> import tapegrad as tg
    >>> derivation(tg.exp.op), derivation(tg.reshape.op), derivation(tg.matmul.op)
    ('elementwise', 'linear', 'linear in each')
    """
    if callable(op.jvp):
        return "declared"
    if op.jvp == "transpose":
        return "transpose"
    if op.linear is True:
        return "linear"
    if op.linear == "each":
        return "linear in each"
    if op.elementwise and not (op.joint or op.variadic):
        return "elementwise"
    return None


def _derive(op):
    how = derivation(op)
    if how is None:
        raise NotImplementedError(
            f"{op.name}: no forward-mode rule (jvp, jacfwd, linearize, hvp): its defop row declares neither "
            "jvp= nor linear=, and it is not elementwise; declare one (jvp='transpose' derives it from its VJP), "
            "or use reverse mode (tg.grad, tg.vjp, tg.jacobian(mode='rev'))"
        )
    return {
        "declared": lambda: op.jvp,
        "transpose": lambda: _transposed(op),
        "linear": lambda: _linear(op),
        "linear in each": lambda: _linear_each(op),
        "elementwise": lambda: _elementwise(op),
    }[how]()


def call(xp, op, inputs, params):
    """``op`` on ``inputs`` inside a rule: the op itself on tensors (so that it is recorded and has tangents of
    outer levels), its forward on arrays."""
    if getattr(xp, "name", None) == "tapegrad":
        return apply(op, tuple(inputs), params)
    out = op.forward(*inputs, **params)
    return out if isinstance(out, np.ndarray) else np.asarray(out)


def _zeros(x):
    return np.zeros(np.shape(x), dtype=getattr(x, "dtype", np.float64))


def _linear(op):
    def rule(xp, tangents, ans, *inputs, **params):
        diff = op.differentiable
        args = [
            t if t is not None else (_zeros(x) if (op.variadic or diff[i]) else x)
            for i, (t, x) in enumerate(zip(tangents, inputs))
        ]
        return call(xp, op, args, params)

    return rule


def _linear_each(op):
    def rule(xp, tangents, ans, *inputs, **params):
        total = None
        for i, t in enumerate(tangents):
            if t is not None:
                args = list(inputs)
                args[i] = t
                term = call(xp, op, args, params)
                total = term if total is None else total + term
        return total

    return rule


def _data(v):
    return v._data if isinstance(v, Tensor) else v


def _is_complex(v) -> bool:
    if v.__class__ is _ndarray:  # the common case (a rule on arrays): one attribute
        return v.dtype.kind == "c"
    d = v._data if isinstance(v, Tensor) else v
    dtype = getattr(d, "dtype", None)
    return dtype.kind == "c" if dtype is not None else isinstance(d, complex)


def _elementwise(op):
    vjps, diff = op.vjps, op.differentiable

    def rule(xp, tangents, ans, *inputs, **params):
        complex_out = _is_complex(ans)
        total = None
        for i, t in enumerate(tangents):
            if t is None or not diff[i]:  # an input without a rule (copysign's sign): no tangent from it
                continue
            complex_in = _is_complex(inputs[i])
            if not (complex_out or complex_in):
                term = vjps[i](xp, t, ans, *inputs, **params)  # g f'(x): the diagonal Jacobian, its own transpose
            elif not complex_out:  # a real function of z: the rule at g = 1 is 2 conj(df/dz)... Re(rule(1) t)
                r1 = vjps[i](xp, np.ones((), _data(ans).dtype), ans, *inputs, **params)
                term = xp.real(r1 * t)
            else:  # rule(g) = g a + conj(g) conj(b): a and b from g = 1 and g = i; the tangent is a t + b conj(t)
                one = np.ones((), _data(ans).dtype)
                r1 = vjps[i](xp, one, ans, *inputs, **params)
                ri = vjps[i](xp, one * 1j, ans, *inputs, **params)
                a = (r1 - 1j * ri) * 0.5
                b = xp.conj((r1 + 1j * ri) * 0.5)
                term = a * t + b * xp.conj(t) if complex_in else (a + b) * t
            total = term if total is None else total + term
        return total

    return rule


def _transposed(op):
    """The VJP rule transposed: ``J t`` is the gradient in ``u`` of ``Re <vjp(u), t>`` (for an op with several
    outputs, one ``u`` per output, and a tangent per output)."""

    def rule(xp, tangents, ans, *inputs, **params):
        several = isinstance(ans, tuple)
        answers = ans if several else (ans,)
        # a recorded rule reads its saved values as tensors (constants here, unless outer levels or tapes know them)
        inputs = [Tensor._wrap(x) if isinstance(x, np.ndarray) else x for x in inputs]
        answers = tuple(v if isinstance(v, Tensor) else Tensor._wrap(np.asarray(v)) for v in answers)
        if not (ACTIVE.get() or FORWARD.get()):
            # nothing outside differentiates the rule: the values of a tape that is not recording now (jacfwd of
            # jacrev, hessian) are constants of this small tape, not inputs it would warn it cannot reach
            inputs = [x.detach() if isinstance(x, Tensor) and x._node is not None else x for x in inputs]
            answers = tuple(v.detach() if v._node is not None else v for v in answers)
        with record() as tape:
            us = [Tensor(np.zeros(v.shape, v.dtype)) for v in answers]
            tape.watch(*us)
            u, a = (tuple(us), answers) if several else (us[0], answers[0])
            if op.joint:
                grads = op.vjps[0](tensor_rules, u, a, *inputs, **params)
            else:
                grads = [op.vjps[i](tensor_rules, u, a, *inputs, **params) if t is not None else None
                         for i, t in enumerate(tangents)]  # fmt: skip
            s = _paired(op, grads, tangents, inputs)
        if s is None:
            tape.release()
            return None
        jts = tape.gradient(s, us, unconnected="zero")
        return tuple(jts) if several else jts[0]

    return rule


def _paired(op, grads, tangents, inputs):
    """``Re sum_i <grads_i, tangents_i>``, or None where nothing is connected."""
    s = None
    for g, t, x in zip(grads, tangents, inputs):
        if g is None or t is None:
            continue
        if op.broadcast and _shape(g) != _shape(x):
            g = unbroadcast(tensor_rules, g, _shape(x))
        p = (g * t).sum()
        p = tensor_rules.real(p) if is_complex(_data(p)) else p
        s = p if s is None else s + p
    return s if isinstance(s, Tensor) and s._node is not None else None


def _shape(v):
    """One example's shape for vmap's batched tensors (their data holds the whole batch), else the value's."""
    return tuple(v.shape) if isinstance(v, Tensor) else np.shape(v)


def _symbolic(lv, levels_below, tangents, args) -> bool:
    """Whether a rule computes on tensors: an outer level or tape needs its ops, or a value is not NumPy's."""
    if levels_below or lv.outer or TRACER.get() is not None:  # tg.compile's tracer must see the rule's ops too
        return True
    for t in tangents:
        if t is not None and t.__class__ is not _ndarray and (isinstance(t, Tensor) or not isinstance(t, np.ndarray)):
            return True
    for a in args:
        if a.__class__ is Tensor:  # the common case first: a plain tensor of a NumPy array
            d = a._data
            if d.__class__ is _ndarray:
                continue
        elif a.__class__ is Batched:  # vmap's: its ops go through the batching rules
            return True
        else:
            d = a._data if isinstance(a, Tensor) else a
        if isinstance(d, np.ndarray):
            if d.__class__ is not np.ndarray:
                return True
        elif not isinstance(d, (int, float, complex, np.generic, bool)) and d is not None:
            return True
    return False


def _fit(t, out, symbolic):
    """The rule's tangent in the output's shape and dtype."""
    o = out._data
    if not symbolic:
        if t.__class__ is _ndarray and t.dtype is o.dtype and t.shape == o.shape:  # the common case: as it is
            return t
        t = np.asarray(t)
        if t.dtype != o.dtype:
            t = t.real.astype(o.dtype) if is_complex(t) and not is_complex(o) else t.astype(o.dtype)
        return t if t.shape == o.shape else np.broadcast_to(t, o.shape)
    if not isinstance(t, Tensor):
        t = Tensor._wrap(np.asarray(t))
    if t.dtype != out.dtype:
        t = tensor_rules.real(t) if is_complex(t._data) and not is_complex(o) else t
        if t.dtype != out.dtype:
            t = tensor_rules.astype(t, out.dtype)
    return t if t.shape == out.shape else tensor_rules.broadcast_to(t, out.shape)


def _step(levels, op, args, params, out):
    """Called by the core for every differentiable op while ``levels`` are open: ``out``'s tangents."""
    for i, lv in enumerate(levels):
        tangents = None
        for j, a in enumerate(args):
            if not isinstance(a, Tensor):
                continue
            node = a._node
            d = getattr(node or a, "_tangents", None)  # inlined _tangents: this runs for every op in forward mode
            if d is None and node is not None and getattr(node, "group", None) is not None:
                d = _tangents(a)
            if d:
                t = d.get(lv)
                if t is not None:
                    if tangents is None:
                        tangents = [None] * len(args)
                    tangents[j] = t
        if tangents is not None:
            _propagate(levels, i, lv, op, args, params, out, tangents)


def _propagate(levels, i, lv, op, args, params, out, tangents):
    rule = RULES.get(op) or rule_of(op)
    below = levels[:i]
    if not _symbolic(lv, below, tangents, args):
        # on arrays: the rule calls no op (a transposed one works on fresh tensors of its own)
        ans = tuple(o._data for o in out) if isinstance(out, tuple) else out._data
        inputs = [a._data if isinstance(a, Tensor) else a for a in args]
        t = (
            rule(numpy_rules, tuple(tangents), ans, *inputs, **params)
            if params
            else rule(numpy_rules, tuple(tangents), ans, *inputs)
        )
        if t is not None:
            if out.__class__ is Tensor and out._node is None and getattr(out, "_tangents", None) is None:
                out._tangents = {lv: _fit(t, out, False)}  # a fresh output of one op, kept nowhere else
            else:
                _set_all(out, lv, t, False)
        return
    token = FORWARD.set(below)  # the rule's own ops are this level's computation: only outer levels see them
    try:
        if not (below or lv.outer) and ACTIVE.get():
            # tensors (vmap's, or a tangent given as one), but no tape outside the level differentiates them:
            # the tapes opened inside it differentiate values only, so the rule records nothing
            with stop_recording():
                t = rule(tensor_rules, tuple(tangents), out, *args, **params)
        else:
            t = rule(tensor_rules, tuple(tangents), out, *args, **params)
    except (BatchedValueError, TapeEscapeError) as err:  # a read inside the op's rule, not in the user's f
        raise numpy_rule_error(op.name, f"reads a tensor's value ({err.what})", "in forward mode or vmap") from err
    finally:
        FORWARD.reset(token)
    if t is not None:
        _set_all(out, lv, t, True)


def _set_all(out, lv, t, symbolic):
    if isinstance(out, tuple):  # an op with several outputs: a tangent for each
        for o, ti in zip(out, t):
            if ti is not None:
                set_tangent(o, lv, _fit(ti, o, symbolic))
    else:
        set_tangent(out, lv, _fit(t, out, symbolic))


set_tangent_rules(_step)
