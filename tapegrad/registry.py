"""The op registry: every op is one :class:`Op`, made by one :func:`defop` row, and every fact about it is on it.

Every differentiable op is one call to :func:`defop`; the test suite reads the same table (``REGISTRY``), so
a new op cannot slip in untested. Non-differentiable ops (comparisons, argmax) go through :func:`defnondiff`
and are listed in ``NONDIFF``. Every other table of the package is keyed by the ``Op`` object or derived from
its facts (JAX's ``Primitive``), never by its name: the public functions and NumPy's names (``tapegrad.ops``,
``tapegrad.numpy``), the Tensor methods, what a backend refuses, the compiler's kernels, the test table's flags.

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
import sys

import numpy as np

from .core.record import apply_nondiff, function_of
from .rule_checks import checked_joint, checked_per_argument, checked_rule, checking_saves

# TAPEGRAD_SPEEDUPS=1: the compiled hot path is bound into the core before any op is made
from .speedups import ENABLED as _SPEEDUPS  # noqa: F401

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


def _no_gradient(xp, g, ans, *inputs, **params):
    """The rule of an input declared without one (``None``): it gets no gradient."""
    return None


class Op:
    """One op: its name, forward and per-input rules, what the tape saves for them, and what every other table
    of the package reads of it.

    What the tape reads (``apply`` and the replay, on the hot path): ``forward``, ``vjps``, ``save`` (one flag
    per input: 0 nothing, 1 the array, 2 its :class:`Shape`; ``True`` when every input is saved as an array,
    ``None`` when none is; ``variadic`` ops save the same flag for all), ``save_ans``, ``broadcast`` (its inputs
    broadcast against each other), ``variadic``, ``arity``, ``joint``.

    What the rest reads, declared in the row or derived from it:

    - ``differentiable``: per input, whether it has a rule (``where``'s condition has none); ``()`` for an op
      with no gradient (``defnondiff``).
    - ``numpy``: the NumPy function the forward is on NumPy arrays (a ufunc such as ``np.exp``, or the function
      a :func:`tapegrad.ops._names.forward` wraps), or None.
    - ``elementwise``: each output element depends on the input elements at its position only (after
      broadcasting); derived for a ufunc, declared for any other forward.
    - ``view``: the output may share memory with an input (``reshape``, indexing, ``diagonal``); any other op
      returns an array of its own (``fresh``), which the compiler's memory plan relies on and the op table's
      tests check.
    - ``refuses``: backend name -> ``(why, when)``, the libraries that cannot run it (``when(params)`` says for
      which parameters; None: for all); ``Backend.forward`` raises ``NotImplementedError`` with the reason.
    - ``real_only``: why the op takes real input only (None: it takes complex input too); derived for a ufunc
      with no complex loop, declared for any other forward.
    - ``method``: a Tensor method of the same name as its public function, where NumPy's ndarray has none
      (``x.exp()``); a function named as an ndarray method is one without saying so.
    - ``jvp``: its forward-mode rule, ``jvp(xp, tangents, ans, *inputs, **params)`` -> the output's tangent
      (``tangents`` has one entry per input, None for an input without one; ``inputs`` are all the inputs), or
      None where :mod:`tapegrad.forward` derives it: from the op itself for a ``linear`` op, from the VJP's
      derivative for an ``elementwise`` one, by transposing the VJP for ``jvp="transpose"``.
    - ``linear``: ``True`` for an op linear in its inputs together (``reshape``, ``sum``, ``concatenate``: the
      tangent is the op of the tangents), ``"each"`` for one linear in each input apart (``matmul``,
      ``einsum``: the tangent is the sum over inputs of the op with one input replaced by its tangent).
    - ``batch``: how ``vmap`` runs it on a batch: a rule ``batch(k, datas, batched, params)`` (``k`` leading batch
      axes on each batched input), ``"axis"`` (its ``axis`` parameter names input axes: shifted past the batch
      axes), ``"leading"`` (its forward broadcasts over leading axes, as NumPy's linear algebra does), or None:
      derived for an elementwise op (see :mod:`tapegrad.batching`).
    - ``outputs``: the names of its outputs where it has several (``("w", "v")``; ``()``: one). The forward
      returns a tuple of arrays, the op a tuple of tensors, the tape one entry; the rules get a tuple of
      cotangents (None for an output nobody used, which the rule skips) and ``ans`` as a tuple.
    - ``function``: its public function (``tg.exp``, or the wrapper of the same name in its family file, such
      as ``tg.sum``), ``module``: where its row is.
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
        "joint",
        "doc",
        "differentiable",
        "numpy",
        "elementwise",
        "view",
        "refuses",
        "real_only",
        "method",
        "function",
        "module",
        "jvp",
        "linear",
        "batch",
        "outputs",
    )

    def __init__(
        self,
        name,
        forward,
        vjps=(),
        save=None,
        save_ans=False,
        broadcast=False,
        variadic=False,
        arity=0,
        doc=None,
        joint=False,
        *,
        elementwise=None,
        view=False,
        refuses=None,
        real_only=None,
        method=False,
        module=None,
        jvp=None,
        linear=None,
        batch=None,
        outputs=(),
    ):
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
        if joint or variadic:
            self.differentiable = (True,) * max(arity, 1)
        else:
            self.differentiable = tuple(rule is not None for rule in vjps)
        self.numpy = numpy_function_of(forward)
        if elementwise is None:
            elementwise = isinstance(self.numpy, np.ufunc) and self.numpy.signature is None
        self.elementwise = elementwise
        self.view = view
        self.refuses = {k: (v, None) if isinstance(v, str) else v for k, v in (refuses or {}).items()}
        if real_only is None and isinstance(self.numpy, np.ufunc) and not any("D" in t for t in self.numpy.types):
            real_only = "NumPy's ufunc has no complex loop"
        self.real_only = real_only
        self.method = method
        self.function = None
        self.module = module
        self.jvp = jvp
        if linear not in (None, True, "each"):
            raise ValueError(
                f"defop {name!r}: linear= is True (linear in its inputs together) or 'each', got {linear!r}"
            )
        self.linear = linear
        self.batch = batch
        self.outputs = tuple(outputs)

    @property
    def fresh(self) -> bool:
        """Whether the output always has memory of its own (never a view of an input)."""
        return not self.view

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def numpy_function_of(forward):
    """The NumPy function ``forward`` is on NumPy arrays (itself, or the one it wraps), or None.

    >>> import numpy as np
    >>> numpy_function_of(np.exp) is np.exp, numpy_function_of(lambda x: x ** 3)
    (True, None)
    """
    wrapped = getattr(forward, "numpy", None)
    if wrapped is not None:
        return wrapped
    if isinstance(forward, np.ufunc):
        return forward
    name = getattr(forward, "__name__", "")
    return forward if name and getattr(np, name, None) is forward else None


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


def _caller_module() -> str | None:
    return sys._getframe(2).f_globals.get("__name__")


# This package's own name, read, not written: a copy imported under another name (the benchmarks' second,
# compiled-path tapegrad) must know its own rules from a user's, or every builtin rule runs checked.
_PACKAGE = __name__.partition(".")[0]


def defop(
    name,
    forward,
    *vjps,
    save=(),
    inputs=None,
    broadcast=False,
    doc=None,
    register=True,
    joint=False,
    elementwise=None,
    view=False,
    refuses=None,
    real_only=None,
    method=False,
    jvp=None,
    linear=None,
    batch=None,
    outputs=(),
    check=None,
):
    """Register a differentiable op and return its public function.

    ``forward(*arrays, **params)`` computes the value; ``vjps`` holds one rule per input (``None`` for an input
    that is never differentiable, such as ``where``'s condition). With ``inputs="*"`` the op is variadic and
    ``vjps`` is one rule taking ``argnum=``. ``save`` names what the rules read: ``"x"``, ``"y"`` (the input
    arrays), ``"x.shape"`` (shape only), ``"ans"``. With ``joint=True`` there is a single rule that returns a
    sequence with every input's gradient (None where there is none), for rules that share their work.
    ``outputs=("w", "v")`` declares an op with several outputs: ``forward`` returns a tuple of arrays, the
    function a tuple of tensors, and each rule gets the tuple of the outputs' cotangents (None for an output
    nobody used) and ``ans`` as the tuple of outputs.
    ``elementwise``, ``view``, ``refuses``, ``real_only`` and ``method`` declare what the rest of the package reads of the op
    (see :class:`Op`); a ufunc forward needs none of them. ``jvp`` (a forward-mode rule, or ``"transpose"``) and
    ``linear`` (``True`` or ``"each"``) say how forward mode computes the op's tangent (see :class:`Op`).
    ``check`` checks each gradient a rule returns against its input's shape as it runs
    (:mod:`tapegrad.rule_checks`): the default for an op defined outside tapegrad, whose rules no table tests.

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
        arity, rules = len(names), tuple(_no_gradient if rule is None else rule for rule in vjps)
    flags, save_ans = _parse_save(save, names, variadic)
    module = _caller_module()
    if check is None:
        check = module is None or module.partition(".")[0] != _PACKAGE
    if check:
        flags, hidden = checking_saves(flags, arity, variadic)
    op = Op(
        name, forward, rules, flags, save_ans, broadcast, variadic, arity, doc, joint,
        elementwise=elementwise, view=view, refuses=refuses, real_only=real_only, method=method, module=module,
        jvp=jvp, linear=linear, batch=batch,
        outputs=outputs,
    )  # fmt: skip
    if not (joint or variadic):
        op.differentiable = tuple(rule is not None for rule in vjps)
    if check:
        op.vjps = _checked(op, rules, names, hidden)
    if register:
        if name in REGISTRY or name in NONDIFF:
            raise ValueError(f"defop: an op named {name!r} is already registered")
        REGISTRY[name] = op

    return _public(function_of(op), op, name, doc, module)


def _checked(op, rules, names, hidden):
    if op.joint:
        return (checked_joint(op, rules[0], names, hidden),)
    if op.variadic:
        return _PerArgument(checked_per_argument(op, rules.rule, hidden))
    return tuple(r if r is _no_gradient else checked_rule(op, i, r, names, hidden) for i, r in enumerate(rules))


def defnondiff(name, forward, doc=None, *, elementwise=None, view=False, refuses=None, method=False, batch=None):
    """Register an op whose result has no gradient (comparisons, argmax): it is never recorded."""
    module = _caller_module()
    op = Op(
        name,
        forward,
        (),
        doc=doc,
        elementwise=elementwise,
        view=view,
        refuses=refuses,
        method=method,
        module=module,
        batch=batch,
    )
    NONDIFF[name] = op

    def fn(*args, **params):
        return apply_nondiff(op, args, params)

    return _public(fn, op, name, doc, module)


def _public(fn, op, name, doc, module):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = module  # where the row is, as for a function defined there
    fn.op = op
    op.function = fn
    return fn
