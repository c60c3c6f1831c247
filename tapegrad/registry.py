"""The op registry: one table mapping each op's name to its forward and its vector-Jacobian rules.

Every differentiable op is one call to :func:`defop`; the test suite reads the same table (``REGISTRY``), so
a new op cannot slip in untested. Non-differentiable ops (comparisons, argmax) go through :func:`defnondiff`
and are listed in ``NONDIFF``.

The rule signature, shared by every op::

    vjp(xp, g, ans, *inputs, **params) -> gradient for one input

- ``xp``: the namespace the rule computes with. On a plain replay it is :data:`tapegrad.backend.numpy_rules`
  (NumPy's functions by their names, on arrays, at full NumPy speed); on a replay recorded for higher-order derivatives (``create_graph=True``) it is
  tapegrad's own ops, and ``g``, ``ans`` and the inputs are tensors, so the rule itself is recorded.
- ``g``: the cotangent of the output, in the output's shape. ``ans``: the output value.
- ``inputs``: the values the op declared in ``save=``; anything not saved arrives as ``None``, and a
  ``"x.shape"`` save arrives as a :class:`~tapegrad._shapes.Shape` (shape and dtype only), so the tape keeps no array it does not need.
- ``params``: the op's keyword parameters (``axis``, ``keepdims``, ...), as given to the forward.

A rule returns the gradient in the output's broadcast shape. It never undoes broadcasting itself: the replay
calls :func:`tapegrad._shapes.unbroadcast` for ops registered with ``broadcast=True``.
"""

from __future__ import annotations

import functools

from .core.record import apply_nondiff, function_of

__all__ = ["Op", "defop", "defnondiff", "REGISTRY", "NONDIFF"]

REGISTRY: dict[str, Op] = {}
NONDIFF: dict[str, Op] = {}

_INPUT_NAMES = ("x", "y", "z", "w")


class _PerArgument:
    """Rules of a variadic op (concatenate, stack): one function that also takes ``argnum``."""

    __slots__ = ("rule",)

    def __init__(self, rule):
        self.rule = rule

    def __getitem__(self, i):
        return functools.partial(self.rule, argnum=i)


class Op:
    """One registered op: its name, forward, per-input rules and what the tape saves for them.

    ``save`` is a tuple with one flag per input (0 nothing, 1 the array, 2 its :class:`Shape`), ``True`` when
    every input is saved as an array, or ``None`` when none is. ``variadic`` ops save the same flag for all.
    """

    __slots__ = (
        "name",
        "forward",
        "vjps",
        "save",
        "save_ans",
        "broadcast",
        "variadic",
        "arity",
        "nosave",
        "doc",
        "joint",
    )

    def __init__(self, name, forward, vjps, save, save_ans, broadcast, variadic, arity, doc, joint=False):
        self.name = name
        self.forward = forward
        self.vjps = vjps
        self.save = save
        self.save_ans = save_ans
        self.broadcast = broadcast
        self.variadic = variadic
        self.arity = arity
        self.nosave = (None,) * arity if arity else None
        self.doc = doc
        self.joint = joint

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _parse_save(save, names, variadic):
    if isinstance(save, str):
        save = tuple(save.split())
    save_ans = "ans" in save
    if variadic:
        flag = 1 if "*" in save else (2 if "*.shape" in save else 0)
        return (flag,), save_ans
    flags = []
    for n in names:
        flags.append(1 if n in save else (2 if f"{n}.shape" in save else 0))
    unknown = set(save) - {"ans"} - set(names) - {f"{n}.shape" for n in names}
    if unknown:
        raise ValueError(f"defop: unknown names in save={save!r}; inputs are {names}")
    if all(f == 1 for f in flags):
        return True, save_ans
    if not any(flags):
        return None, save_ans
    return tuple(flags), save_ans


def defop(name, forward, *vjps, save=(), inputs=None, broadcast=False, doc=None, register=True, joint=False):
    """Register a differentiable op and return its public function.

    ``forward(*arrays, **params)`` computes the value; ``vjps`` holds one rule per input (``None`` for an input
    that is never differentiable, such as ``where``'s condition). With ``inputs="*"`` the op is variadic and
    ``vjps`` is one rule taking ``argnum=``. ``save`` names what the rules read: ``"x"``, ``"y"`` (the input
    arrays), ``"x.shape"`` (shape only), ``"ans"``. With ``joint=True`` there is a single rule that returns a
    sequence with every input's gradient (None where there is none), for rules that share their work.

    On NumPy arrays ``forward`` is called as given. On another array library (``tapegrad.backend``) a NumPy
    function (``np.exp``) is replaced by that library's function of the same name, a forward with a
    keyword-only ``xp`` parameter is called with ``xp=`` NumPy's names for that library, and any other forward
    (written with operators, as ``cube_demo`` below) runs as it is. Rules get the same names as ``xp``.

    >>> import numpy as np, tapegrad as tg
    >>> from tapegrad.registry import defop
    >>> cube = defop("cube_demo", lambda x: x ** 3, lambda xp, g, ans, x: g * 3 * x * x, save="x", register=False)
    >>> x = tg.Tensor(2.0, requires_grad=True)
    >>> with tg.record():
    ...     y = cube(x)
    >>> y.backward(); float(x.grad)
    12.0
    """
    variadic = inputs == "*"
    if joint:
        if len(vjps) != 1:
            raise ValueError(f"defop {name!r}: joint=True takes one rule returning every input's gradient")
        names = ("*",) if variadic else (tuple(inputs) if inputs is not None else None)
        arity, rules = (0 if variadic else (len(names) if names else 0)), (vjps[0],)
        if names is None:
            raise ValueError(f"defop {name!r}: joint=True needs inputs=(names...) or inputs='*'")
    elif variadic:
        names, arity, rules = ("*",), 0, _PerArgument(vjps[0])
    else:
        names = tuple(inputs) if inputs is not None else _INPUT_NAMES[: len(vjps)]
        if len(names) != len(vjps):
            raise ValueError(f"defop {name!r}: {len(names)} inputs but {len(vjps)} rules")
        arity, rules = len(names), tuple(vjps)
    flags, save_ans = _parse_save(save, names, variadic)
    op = Op(name, forward, rules, flags, save_ans, broadcast, variadic, arity, doc, joint)
    if register:
        if name in REGISTRY or name in NONDIFF:
            raise ValueError(f"defop: an op named {name!r} is already registered")
        REGISTRY[name] = op

    fn = function_of(op)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.op = op
    return fn


def defnondiff(name, forward, doc=None):
    """Register an op whose result has no gradient (comparisons, argmax): it is never recorded."""
    op = Op(name, forward, (), None, False, False, False, 0, doc)
    NONDIFF[name] = op

    def fn(*args, **params):
        return apply_nondiff(op, args, params)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.op = op
    return fn
