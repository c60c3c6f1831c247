"""Rules written outside tapegrad, checked as they run: each gradient has its input's shape.

A built-in rule is checked by the op table's tests. A rule given to :func:`tapegrad.defop` from the user's code,
or to ``@tg.custom_op``, is checked each time it runs, as PyTorch checks a ``Function``'s backward and JAX a
``custom_vjp`` rule: a gradient of the wrong shape would otherwise reach ``.grad`` as it is, or broadcast into
the next rule and give a wrong gradient with no error. The check is a shape comparison per input, on these ops
only; the hot loop of the replay and the built-in ops do not pay for it.

So that every rule can be checked, an input its op does not save is saved as its shape (``"x.shape"``: shape
and dtype, no data); the rule still gets None for it, as its ``save=`` declared.

>>> import numpy as np, tapegrad as tg
>>> @tg.custom_op(register=False)
... def triple(x):
...     return 3.0 * x
>>> _ = triple.defvjp(lambda xp, g, ans, x: g[:1] * 3.0)   # wrong: the first element's gradient only
>>> tg.grad(lambda x: triple(x).sum())(np.ones(3))
Traceback (most recent call last):
...
ValueError: triple: its rule returned a gradient of shape (1,) for input 0 (x), of shape (3,). A rule returns each input's gradient in that input's shape, or in the output's shape (3,), which the tape sums back where the input was broadcast.
"""

from __future__ import annotations

import functools
from numbers import Number

import numpy as np

__all__ = ["checking_saves", "checked_rule", "checked_joint", "checked_per_argument"]


def checking_saves(flags, arity, variadic):
    """``(flags, hidden)``: an op's save flags (as :class:`~tapegrad.registry.Op` keeps them) with every input
    saved at least as its shape, and the positions saved for the check only (all of them: ``True``)."""
    if flags is True:
        return True, frozenset()
    if variadic:
        (flag,) = flags
        return (flag or 2,), flag == 0
    flags = (0,) * arity if flags is None else flags
    return tuple(f or 2 for f in flags), frozenset(i for i, f in enumerate(flags) if f == 0)


def _shown(vals, hidden):
    """The saved values as the rule declared them: None where only the check saved the input's shape."""
    if hidden is True:
        return (None,) * len(vals)
    return tuple(None if i in hidden else v for i, v in enumerate(vals)) if hidden else vals


def checked_rule(op, i, rule, names, hidden):
    """``rule``, the rule of input ``i`` of ``op``, checked: it gets the values ``op`` declared, and what it
    returns is refused unless it has input ``i``'s shape (or the output's, where the op broadcasts)."""

    @functools.wraps(rule)
    def rule_checked(xp, g, ans, *vals, **params):
        gi = rule(xp, g, ans, *_shown(vals, hidden), **params)
        return None if gi is None else checked_gradient(op, i, gi, vals, g, names, xp)

    return rule_checked


def checked_per_argument(op, rule, hidden):
    """The rule of a variadic ``op`` (one rule taking ``argnum=``), checked as :func:`checked_rule` does."""

    @functools.wraps(rule)
    def rule_checked(xp, g, ans, *vals, argnum, **params):
        gi = rule(xp, g, ans, *_shown(vals, hidden), argnum=argnum, **params)
        return None if gi is None else checked_gradient(op, argnum, gi, vals, g, None, xp)

    return rule_checked


def checked_joint(op, rule, names, hidden):
    """The one rule of a ``joint`` op, checked: a sequence of one gradient (or None) per input, each checked."""

    @functools.wraps(rule)
    def rule_checked(xp, g, ans, *vals, **params):
        grads = rule(xp, g, ans, *_shown(vals, hidden), **params)
        n = len(vals)
        if not isinstance(grads, (tuple, list)) or len(grads) != n:
            got = f"a sequence of {len(grads)}" if isinstance(grads, (tuple, list)) else _kind(grads)
            raise ValueError(
                f"{op.name}: its rule returned {got}; the rule of an op of {n} inputs returns a tuple of {n} "
                "gradients, one per input in order (None for an input without one)"
            )
        return tuple(
            None if gi is None else checked_gradient(op, k, gi, vals, g, names, xp) for k, gi in enumerate(grads)
        )

    return rule_checked


def checked_gradient(op, i, gi, vals, g, names, xp):
    """``gi``, the gradient a rule of ``op`` returned for input ``i``, if it has that input's shape (or the
    output's, where ``op`` broadcasts or is elementwise: the tape sums it back); a Python number becomes an array
    of the rule's namespace."""
    shape = getattr(gi, "shape", None)
    if shape is None:
        if not isinstance(gi, Number) or isinstance(gi, bool):
            raise TypeError(
                f"{op.name}: its rule returned {_kind(gi)} for input {_named(i, names)}; a rule returns an array "
                "(computed with xp, the rule's first argument), a number, or None"
            )
        gi = xp.asarray(gi)
        shape = gi.shape
    want = _shape_of(vals[i])
    if want is None or tuple(shape) == tuple(want):
        return gi
    outputs = [o.shape for o in (g if isinstance(g, tuple) else (g,)) if o is not None]
    summed = op.broadcast or op.elementwise
    if summed and any(tuple(shape) == tuple(o) for o in outputs) and _sums_to(shape, want):
        return gi
    also = (
        f", or in the output's shape {outputs[0]}, which the tape sums back where the input was broadcast"
        if summed and outputs
        else ""
    )
    raise ValueError(
        f"{op.name}: its rule returned a gradient of shape {tuple(shape)} for input {_named(i, names)}, of shape "
        f"{tuple(want)}. A rule returns each input's gradient in that input's shape{also}."
    )


def _sums_to(shape, want) -> bool:
    """Whether a gradient of ``shape`` sums back to an input of shape ``want`` (the input broadcasts to it)."""
    try:
        return np.broadcast_shapes(tuple(want), tuple(shape)) == tuple(shape)
    except ValueError:
        return False


def _shape_of(v):
    if v is None:
        return None
    shape = getattr(v, "shape", None)
    return np.shape(v) if shape is None else shape


def _named(i, names):
    return f"{i} ({names[i]})" if names and i < len(names) and names[i] != "*" else f"{i}"


def _kind(value) -> str:
    if value is None:
        return "None"
    return f"a value of type {type(value).__name__}"
