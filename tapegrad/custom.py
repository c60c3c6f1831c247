"""User-defined ops: a forward written in NumPy and a backward rule, registered like the built-in ops.

``@custom_op(save=...)`` turns a NumPy function into an op; ``@f.defvjp`` gives it its rule, with the same
signature as every built-in rule, ``rule(xp, g, ans, *inputs, **params)``, and then calls
:func:`tapegrad.defop`: there is no second mechanism. The op is recorded inside ``record()`` blocks, shows
on tapes under its name, and, when ``register=True`` (the default), sits in ``tapegrad.REGISTRY``.

- The forward's positional parameters are the op's inputs (tensors, arrays or scalars); its keyword-only
  parameters are the op's parameters, passed to the forward and the rule as keywords.
- ``save`` names what the rule reads, by the forward's parameter names and ``"ans"``; the rest arrives as
  ``None`` and the tape keeps nothing else.
- With one input the rule returns that input's gradient; with several it returns a tuple, one gradient (or
  None) per input. Gradients are in the output's shape where inputs broadcast: the tape sums them back.
- Written with ``xp`` (NumPy on a plain replay, tapegrad's ops on a recorded one) instead of ``np``, the
  rule gives second and higher derivatives too (``create_graph``, ``hessian``, ``gradgradcheck``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from .registry import defop

__all__ = ["custom_op", "CustomOp"]


class CustomOp:
    """An op made by :func:`custom_op`: call it like any tapegrad op once :meth:`defvjp` gave it a rule.

    >>> import numpy as np, tapegrad as tg
    >>> double = tg.custom_op(register=False)(lambda x: 2.0 * x)
    >>> double.defvjp(lambda xp, g, ans, x: 2.0 * g)  # doctest: +ELLIPSIS
    <function <lambda> at ...>
    >>> double.op.name, tg.grad(lambda x: double(x).sum())(np.ones(2))
    ('<lambda>', array([2., 2.]))
    """

    def __init__(
        self, forward: Callable, save, name: str | None, register: bool, broadcast: bool, jvp: str | None = "transpose"
    ):
        params = inspect.signature(forward).parameters.values()
        self.inputs = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        if not self.inputs or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            raise TypeError(
                f"custom_op {forward.__name__!r}: the forward needs named positional inputs "
                "(and keyword-only parameters for the rest), not *args or **kwargs"
            )
        self.forward, self.save, self.register, self.broadcast = forward, save, register, broadcast
        self.name = name or forward.__name__
        self.fn = None
        self.jvp = jvp  # forward mode's rule: by default the VJP rule transposed (custom_op(jvp=None): none)
        functools.update_wrapper(self, forward)

    def defvjp(self, rule: Callable) -> Callable:
        """Give the op its backward rule ``rule(xp, g, ans, *inputs, **params)`` and register it; returns ``rule``.

        With one input the rule returns its gradient; with several, a tuple with one gradient (or None) each.

        >>> import numpy as np, tapegrad as tg
        >>> mul = tg.custom_op(save="x y", register=False, name="mul_demo")(lambda x, y: x * y)
        >>> _ = mul.defvjp(lambda xp, g, ans, x, y: (g * y, g * x))
        >>> tg.grad(lambda a, b: mul(a, b), argnums=(0, 1))(3.0, 4.0)
        (array(4.), array(3.))
        """
        if self.fn is not None:
            raise ValueError(f"custom_op {self.name!r} already has a rule")
        several = len(self.inputs) > 1
        self.fn = defop(
            self.name,
            self.forward,
            rule,
            save=self.save,
            inputs=self.inputs,
            joint=several,
            broadcast=self.broadcast,
            doc=self.forward.__doc__,
            register=self.register,
            jvp=self.jvp,  # forward mode: by default the rule transposed (written with xp, it runs on tensors)
            check=True,  # the user's rule: each gradient checked against its input's shape (tapegrad.rule_checks)
        )
        return rule

    @property
    def op(self):
        """The registry's :class:`~tapegrad.registry.Op` for this op."""
        return self._defined().op

    def _defined(self):
        if self.fn is None:
            raise TypeError(f"custom_op {self.name!r} has no backward rule yet: define one with @{self.name}.defvjp")
        return self.fn

    def __call__(self, *args, **params):
        return self._defined()(*args, **params)

    def __repr__(self) -> str:
        return f"<custom_op {self.name}>"


def custom_op(
    save: str | tuple = (),
    *,
    name: str | None = None,
    register: bool = True,
    broadcast: bool = True,
    jvp: str | None = "transpose",
) -> Callable[[Callable], CustomOp]:
    """Decorator: make an op from a NumPy forward; give it a rule with ``@op.defvjp``.

    ``save`` lists what the rule reads (input names, ``"x.shape"``, ``"ans"``); ``register=False`` keeps the
    op out of ``tapegrad.REGISTRY`` (tests, notebooks); ``broadcast`` lets inputs broadcast against each other;
    ``jvp`` is its forward-mode rule: by default its VJP rule transposed (``"transpose"``), None for none (forward
    mode then raises naming the op).

    >>> import numpy as np, tapegrad as tg
    >>> @tg.custom_op(save="x ans", register=False)
    ... def log1pexp(x):
    ...     "log(1 + e^x), stable for large |x|."
    ...     return np.logaddexp(0.0, x)
    >>> @log1pexp.defvjp
    ... def _(xp, g, ans, x):
    ...     return g * xp.exp(x - ans)          # sigmoid(x), without overflow
    >>> tg.grad(lambda x: log1pexp(x).sum())(np.array([-1000.0, 0.0, 1000.0]))
    array([0. , 0.5, 1. ])
    """

    def make(forward: Callable) -> CustomOp:
        return CustomOp(forward, save, name, register, broadcast, jvp)

    return make
