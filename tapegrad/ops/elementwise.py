"""Elementwise ops: a table of derivatives, one ``defop`` per op (rule signature in ``tapegrad.registry``).

Forwards are NumPy functions or take ``xp=np``, so other array libraries run them too (``tapegrad.backend``).

Binary ops broadcast as NumPy does; their rules return gradients in the output's shape and the replay sums
them back to each input's shape with ``unbroadcast``.
"""

import cmath
import math

import numpy as np

from .._tensor import Tensor
from ..backend import is_floating
from ..backend.numpy_rules import numpy_rules
from ..registry import defnondiff, defop
from ._complex import is_complex, real_if_complex
from .compare import greater, less


def _sigmoid(x, *, xp=np):
    return xp.exp(-xp.logaddexp(0, -x))  # stable for large |x|, no overflow warning


def _power_vjp_x(xp, g, ans, x, y):
    if not hasattr(y, "shape"):  # a number: x ** 2, x ** 0.5 (the common case)
        if y == 2:  # x ** 1 is x: one op fewer, the same values (forward mode and hessian replay it on tensors)
            return g * y * x
        return xp.zeros_like(g) if y == 0 else g * y * x ** (y - 1)
    # x ** 0 is 1 for every x: its derivative is 0 at x = 0 too, where y * x ** (y - 1) would be 0 * inf.
    # The base is made safe where y == 0 as well, so the second derivative has no 0 * inf either.
    constant = y == 0
    return xp.where(constant, 0, g * y * xp.where(constant, 1, x) ** (y - 1))


def _power_vjp_y(xp, g, ans, x, y):
    if not hasattr(x, "shape"):  # a number as the base (2.0 ** y), in any array library
        if isinstance(x, complex):
            return g * ans * (cmath.log(x) if x != 0 else 0.0)
        return g * ans * (math.log(x) if x > 0 else (0.0 if x == 0 else math.nan))
    return g * ans * xp.log(xp.where(x == 0, 1, x))  # 0 ** y has d/dy = 0 for y > 0 (its limit)


def _cast(x, dtype, *, xp=None):
    return x.astype(dtype) if xp is None else xp.astype(x, dtype)


def _maximum_vjp(xp, g, mine, other, first, larger):
    # the share of input ``mine`` in the gradient of maximum (larger=True) or minimum; a tie shares it evenly.
    # A NaN propagates, so the gradient goes to the NaN input; to the first when both are (NumPy returns it)
    wins = (mine > other) if larger else (mine < other)
    nan = (mine != mine) if first else xp.logical_and(mine != mine, other == other)
    return xp.where(xp.logical_or(wins, nan), g, xp.where(mine == other, g * 0.5, 0))


def _absolute_vjp(xp, g, ans, x):
    try:
        real = x.dtype.kind != "c"  # NumPy's dtypes: one attribute, so the real branch costs next to nothing
    except AttributeError:  # an array API dtype
        real = not is_complex(x)
    if real:
        return xp.masked(x != 0, g) * xp.sign(x)  # a select: 0 at 0, even where g is infinite
    # |z| is real-valued and not holomorphic: Re(g) * conj(z) / |z| in tapegrad's convention, 0 at z = 0
    r = xp.absolute(x)
    zero = r == 0
    return xp.where(zero, 0, real_if_complex(xp, g) * xp.conj(x) / xp.where(zero, 1, r))


def _astype_vjp(xp, g, ans, x, dtype):
    if is_complex(g) and not is_complex(x):
        g = xp.real(g)  # a real input cast to complex: the real part, the adjoint of the embedding
    return xp.astype(g, x.dtype)


def _clip_vjp(xp, g, ans, x, a_min=None, a_max=None):
    if a_min is not None:
        g = xp.where(x < a_min, 0, g)
    if a_max is not None:
        g = xp.where(x > a_max, 0, g)
    return g


# fmt: off
add = defop("add", np.add,
            lambda xp, g, ans, x, y: g,
            lambda xp, g, ans, x, y: g,
            broadcast=True, doc="x + y, broadcasting.\n\n>>> import tapegrad as tg\n>>> tg.add(tg.Tensor([1.0, 2.0]), 1.0)\nTensor([2., 3.])")
subtract = defop("subtract", np.subtract,
                 lambda xp, g, ans, x, y: g,
                 lambda xp, g, ans, x, y: -g,
                 broadcast=True, doc="x - y, broadcasting.\n\n>>> import tapegrad as tg\n>>> tg.subtract(3.0, tg.Tensor([1.0, 2.0]))\nTensor([2., 1.])")
multiply = defop("multiply", np.multiply,
                 lambda xp, g, ans, x, y: g * y,
                 lambda xp, g, ans, x, y: g * x,
                 save="x y", broadcast=True, doc="x * y, broadcasting.\n\n>>> import tapegrad as tg\n>>> tg.multiply(tg.Tensor([1.0, 2.0]), 3.0)\nTensor([3., 6.])")
divide = defop("divide", np.divide,
               lambda xp, g, ans, x, y: g / y,
               lambda xp, g, ans, x, y: -g * ans / y,
               save="y ans", broadcast=True, doc="x / y, broadcasting.\n\n>>> import tapegrad as tg\n>>> tg.divide(tg.Tensor([1.0, 2.0]), 2.0)\nTensor([0.5, 1. ])")
def _power(x, y, *, xp=np):
    """``power`` of the library ``xp``; on NumPy a square as NumPy's ``**`` computes it (``np.square``: the same
    values, 2.5x faster on large arrays than ``np.power``'s call of ``pow``), the exponent of every squared error."""
    if xp is not np:
        return xp.power(x, y)
    if y.__class__ is int and y == 2 and x.__class__ is np.ndarray and x.dtype.kind in "fiu":
        return np.square(x)
    return np.power(x, y)


_power.numpy = np.power  # NumPy's function: what the compiler lowers, what tapegrad.numpy.power is


power = defop("power", _power, _power_vjp_x, _power_vjp_y,
              save="x y ans", broadcast=True, doc="x ** y, broadcasting; y may be a tensor.\n\n>>> import tapegrad as tg\n>>> tg.power(tg.Tensor([2.0, 3.0]), 2)\nTensor([4., 9.])")
maximum = defop("maximum", np.maximum,
                lambda xp, g, ans, x, y: _maximum_vjp(xp, g, x, y, True, True),
                lambda xp, g, ans, x, y: _maximum_vjp(xp, g, y, x, False, True),
                save="x y", broadcast=True, doc="Elementwise maximum; at a tie each input gets half the gradient, and a NaN input (the value returned)\ngets all of it.\n\n>>> import tapegrad as tg\n>>> tg.maximum(tg.Tensor([1.0, 5.0]), 2.0)\nTensor([2., 5.])")
minimum = defop("minimum", np.minimum,
                lambda xp, g, ans, x, y: _maximum_vjp(xp, g, x, y, True, False),
                lambda xp, g, ans, x, y: _maximum_vjp(xp, g, y, x, False, False),
                save="x y", broadcast=True, doc="Elementwise minimum; at a tie each input gets half the gradient, and a NaN input (the value returned)\ngets all of it.\n\n>>> import tapegrad as tg\n>>> tg.minimum(tg.Tensor([1.0, 5.0]), 2.0)\nTensor([1., 2.])")
where = defop("where", np.where,
              None,
              lambda xp, g, ans, cond, x, y: xp.where(cond, g, 0),
              lambda xp, g, ans, cond, x, y: xp.where(cond, 0, g),
              inputs=("cond", "x", "y"), save="cond", broadcast=True, elementwise=True,
              doc="Pick x where cond is true, else y. Both branches are evaluated: guard the unselected one\n"
                  "too (e.g. where(x > 0, sqrt(where(x > 0, x, 1)), 0)) or its NaN gradient leaks through.\n\n"
                  ">>> import tapegrad as tg\n>>> tg.where(tg.Tensor([True, False]), 1.0, tg.Tensor([5.0, 6.0]))\nTensor([1., 6.])")

negative = defop("negative", np.negative, lambda xp, g, ans, x: -g,
                 doc="-x.\n\n>>> import tapegrad as tg\n>>> tg.negative(tg.Tensor([1.0]))\nTensor([-1.])")
absolute = defop("absolute", np.absolute, _absolute_vjp, save="x", method="abs",
                 doc="|x| (gradient 0 at 0); for complex z, the modulus, with gradient Re(g) conj(z) / |z|.\n\n>>> import tapegrad as tg\n>>> tg.absolute(tg.Tensor([-2.0]))\nTensor([2.])")
exp = defop("exp", np.exp, lambda xp, g, ans, x: g * ans, save="ans", method=True,
            doc="e ** x.\n\n>>> import tapegrad as tg\n>>> tg.exp(tg.Tensor([0.0]))\nTensor([1.])")
log = defop("log", np.log, lambda xp, g, ans, x: g / x, save="x", method=True,
            doc="Natural logarithm.\n\n>>> import tapegrad as tg\n>>> tg.log(tg.Tensor([1.0]))\nTensor([0.])")
sqrt = defop("sqrt", np.sqrt, lambda xp, g, ans, x: g / (2 * ans), save="ans", method=True,
             doc="Square root.\n\n>>> import tapegrad as tg\n>>> tg.sqrt(tg.Tensor([4.0]))\nTensor([2.])")
sin = defop("sin", np.sin, lambda xp, g, ans, x: g * xp.cos(x), save="x", method=True,
            doc="Sine.\n\n>>> import tapegrad as tg\n>>> tg.sin(tg.Tensor([0.0]))\nTensor([0.])")
cos = defop("cos", np.cos, lambda xp, g, ans, x: -g * xp.sin(x), save="x", method=True,
            doc="Cosine.\n\n>>> import tapegrad as tg\n>>> tg.cos(tg.Tensor([0.0]))\nTensor([1.])")
tanh = defop("tanh", np.tanh, lambda xp, g, ans, x: g * (1 - ans * ans), save="ans", method=True,
             doc="Hyperbolic tangent.\n\n>>> import tapegrad as tg\n>>> tg.tanh(tg.Tensor([0.0]))\nTensor([0.])")
sigmoid = defop("sigmoid", _sigmoid, lambda xp, g, ans, x: g * ans * (1 - ans), save="ans",
                elementwise=True, method=True, real_only="np.logaddexp has no complex loop",
                doc="1 / (1 + e ** -x), stable for large |x|.\n\n>>> import tapegrad as tg\n>>> tg.sigmoid(tg.Tensor([0.0]))\nTensor([0.5])")
# relu's mask: where max(x, 0) is x; 0 at 0, and g at a NaN x, which is the value returned (as maximum's rule)
relu = defop("relu", lambda x, *, xp=np: xp.maximum(x, 0), lambda xp, g, ans, x: xp.masked(ans != 0, g), save="ans",
             elementwise=True, method=True,
             doc="max(x, 0) (gradient 0 at 0).\n\n>>> import tapegrad as tg\n>>> tg.relu(tg.Tensor([-1.0, 2.0]))\nTensor([0., 2.])")
_clip = defop("clip", lambda x, a_min=None, a_max=None, *, xp=np: xp.clip(x, a_min, a_max), _clip_vjp, save="x",
              elementwise=True,
              doc="Limit x to [a_min, a_max]; the gradient passes where a_min <= x <= a_max.")
_astype = defop("astype", _cast, _astype_vjp, save="x.shape", elementwise=True)
# What xp.masked(cond, g) is on a recorded replay: the same select a plain replay computes (numpy_rules.masked),
# so gradients of gradients, and compiled programs, are the plain replay's numbers bit for bit.
masked = defop("masked", lambda cond, g, *, xp=numpy_rules: xp.masked(cond, g),
               None, lambda xp, g, ans, cond, x: xp.masked(cond, g),
               inputs=("cond", "g"), save="cond", broadcast=True, register=False, elementwise=True,
               doc="``where(cond, g, 0)``: g where cond holds, exactly 0 elsewhere (the rules' masked gradients).")
_astype_constant = defnondiff("astype_constant", _cast, elementwise=True)
# fmt: on


def clip(x, a_min=None, a_max=None):
    """Limit x to [a_min, a_max] (either may be None); the gradient passes where a_min <= x <= a_max.

    >>> import tapegrad as tg
    >>> tg.clip(tg.Tensor([-2.0, 0.5, 3.0]), -1.0, 1.0)
    Tensor([-1. ,  0.5,  1. ])
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: give a_min, a_max or both")
    if isinstance(a_min, Tensor) or isinstance(a_max, Tensor):  # a bound that is a tensor gets its gradient too
        out = x
        if a_min is not None:  # NumPy's order: the lower bound first, so a_max wins where a_min > a_max
            out = where(less(out, a_min), a_min, out)
        if a_max is not None:
            out = where(greater(out, a_max), a_max, out)
        return out
    return _clip(x, a_min=a_min, a_max=a_max)


def astype(x, dtype):
    """Cast to ``dtype``. Between floating dtypes it is differentiable (the gradient is cast back); a cast to an
    integer or bool dtype is a constant, as its derivative is zero almost everywhere.

    >>> import numpy as np, tapegrad as tg
    >>> tg.astype(tg.Tensor([1.0]), dtype=np.float32).dtype
    dtype('float32')
    >>> tg.astype(tg.Tensor([1.5], requires_grad=True), dtype=np.int64).requires_grad
    False
    """
    floating = is_floating(dtype, like=x._data if hasattr(x, "_data") else x)
    return _astype(x, dtype=dtype) if floating else _astype_constant(x, dtype=dtype)
