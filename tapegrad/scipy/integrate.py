"""``scipy.integrate.odeint`` on tensors, differentiated by the adjoint method (as HIPS autograd does).

``odeint(func, y0, t, args=(), **options)`` integrates ``dy/dt = func(y, t, *args)`` with SciPy's ``odeint``
(``options`` are SciPy's: ``rtol``, ``atol``, ``mxstep``, ...) and is one op on the tape, with gradients in
``y0``, in every time ``t`` and in each of ``args`` (and in a tensor ``func`` reads from its closure that a tape
differentiates, as if it were one of ``args``). Its rule integrates the adjoint system backwards from each
time to the one before (``da/ds = -a df/dy``, ``d(args)/ds = -a df/d(args)``, one augmented state), evaluating
``func``'s vector-Jacobian products with :func:`tapegrad.vjp`, so ``func`` is written with tapegrad's ops (or
``tapegrad.numpy``). The gradients are as accurate as the integrator: SciPy's default tolerances (1.5e-8) give
about seven digits; pass tighter ``rtol``/``atol`` for more. Only first derivatives: a second one raises.

``y0`` is a vector, as SciPy's ``odeint`` takes; the result has shape ``(len(t), len(y0))``.

>>> import numpy as np, tapegrad as tg
>>> from tapegrad.scipy.integrate import odeint
>>> decay = lambda y, t, k: -k * y  # y(t) = y0 exp(-k t)
>>> dk = tg.grad(lambda k: odeint(decay, np.array([1.0]), np.array([0.0, 2.0]), (k,), rtol=1e-10, atol=1e-10)[-1, 0])
>>> round(float(dk(0.5)), 6)  # d/dk exp(-2k) = -2 exp(-1)
-0.735759
"""

from __future__ import annotations

import numpy as np
import scipy.integrate

from .._closure import closing_over, closure_of
from .._tensor import Tensor
from ..ops._rules import recorded
from ..registry import defop
from ..transforms import vjp
from ._types import like_scipy

__all__ = ["odeint"]


def _array(v):
    return np.asarray(v.data if isinstance(v, Tensor) else v, dtype=np.float64)


def _forward(y0, t, *args, func, options):
    def rhs(y, s):
        return _array(func(y, s, *args)).reshape(-1)

    return scipy.integrate.odeint(rhs, y0, t, **dict(options))


def _odeint_vjp(xp, g, ans, y0, t, *args, func, options):
    if recorded(xp):
        raise NotImplementedError(
            "odeint: tapegrad has its first derivatives only (the adjoint method); a second one (create_graph, "
            "hessian) would need the adjoint's own derivative"
        )
    g, yt, t = np.asarray(g), np.asarray(ans), np.asarray(t, dtype=np.float64)
    d, shapes = yt.shape[1], [np.shape(a) for a in args]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]

    def split(flat):  # the args' parts of a flat vector, each in its argument's shape
        ends = np.cumsum(sizes, dtype=np.int64)
        return [flat[e - n : e].reshape(shape) for shape, n, e in zip(shapes, sizes, ends)]

    def unpack(state):
        return state[:d], state[d : 2 * d], state[2 * d], split(state[2 * d + 1 :])

    def augmented(state, s):
        y, a, _, _ = unpack(state)
        out, pull = vjp(lambda y_, s_, *a_: func(y_, s_, *a_), y, s, *args)
        parts = pull(-a)
        return np.concatenate(
            [np.ravel(out), np.ravel(parts[0]), np.ravel(parts[1])] + [np.ravel(p) for p in parts[2:]]
        )

    a, a_t0, a_args = g[-1].copy(), 0.0, np.zeros(sum(sizes))
    times = []
    for i in range(len(t) - 1, 0, -1):
        now = float(np.dot(_array(func(yt[i], t[i], *args)).reshape(-1), g[i]))
        times.append(now)
        a_t0 -= now
        start = np.concatenate([yt[i], a, [a_t0], a_args])
        end = scipy.integrate.odeint(augmented, start, np.array([t[i], t[i - 1]]), **dict(options))[1]
        _, a, a_t0, parts = unpack(end)
        a_args = np.concatenate([np.ravel(p) for p in parts]) if parts else a_args
        a = a + g[i - 1]
    times.append(a_t0)
    return [a, np.array(times[::-1]), *split(a_args)]


_odeint = defop("odeint", _forward, _odeint_vjp, inputs="*", joint=True, save="* ans", register=False)


@like_scipy
def odeint(func, y0, t, args=(), **options):
    """The solution of ``dy/dt = func(y, t, *args)`` at each time of ``t`` from ``y(t[0]) = y0`` (SciPy's
    ``odeint``, shape ``(len(t), len(y0))``), differentiable in ``y0``, ``t`` and ``args`` by the adjoint method.

    >>> import numpy as np
    >>> from tapegrad.scipy.integrate import odeint
    >>> odeint(lambda y, t: -y, np.array([1.0]), np.array([0.0, 1.0]), rtol=1e-10)[-1]  # exp(-1)
    array([0.36787944])
    """
    if not isinstance(args, tuple):
        args = (args,)
    if np.ndim(y0) != 1 or np.ndim(t) != 1:
        raise ValueError(
            f"odeint: y0 and t must be vectors (got shapes {np.shape(y0)} and {np.shape(t)}); ravel y0 and "
            "reshape inside func for a state of another shape"
        )
    closure = closure_of(lambda: func(_array(y0), float(_array(t)[0]) if np.size(t) else 0.0, *map(_array, args)))
    if closure:  # tensors func reads from its closure that a tape differentiates: arguments, as args are
        func, args = closing_over(func, closure), (*args, *closure)
    return _odeint([y0, t, *args], func=func, options=tuple(sorted(options.items())))
