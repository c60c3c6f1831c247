"""The one table: each NumPy function tapegrad implements, by NumPy's name, mapped to the tapegrad function
that runs when it is called on tensors. ``tapegrad.numpy``'s namespace and NumPy's dispatch protocols
(``Tensor.__array_ufunc__``, ``Tensor.__array_function__``) are both built from it.

- ``MAIN``, ``LINALG``, ``FFT``: ``numpy``, ``numpy.linalg`` and ``numpy.fft``'s names. A tapegrad op of the
  same name is the default entry; entries under NumPy's signature (``out=``, ``dtype=``...), compositions and
  non-differentiable pass-throughs replace or extend it.
- Non-differentiable pass-throughs (``shape``, ``allclose``, ``argwhere``, ``gcd``...) run NumPy on the values:
  their results have no derivative (integers, booleans, shapes), so nothing is lost.
- ``REDUCE``, ``ACCUMULATE``: the ufunc methods with a tapegrad meaning (``np.add.reduce`` is ``sum``).

>>> import numpy as np
>>> MAIN["exp"].__name__, MAIN["sum"].__name__
('exp', 'sum')
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.fft as tgfft
import tapegrad.linalg as tglinalg
import tapegrad.numpy._arrays as _arrays
import tapegrad.numpy._calculus as _calculus
import tapegrad.numpy._nanquantiles as _nanquantiles
import tapegrad.numpy._polynomials as _polynomials
import tapegrad.numpy._selections as _selections
import tapegrad.numpy._signatures as sig
import tapegrad.ops as ops

from .._tensor import Tensor


def _nograd(name, numpy_function):
    """A NumPy function whose result has no derivative, run on the values of its tensor arguments."""

    def f(*args, **kwargs):
        return numpy_function(*_values(args), **{k: _values(v) for k, v in kwargs.items()})

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's ``np.{name}`` on the values of tensors (its result has no derivative)."
    return f


def _nograd_ufunc(name, ufunc):
    """An integer ufunc (gcd, shifts): run on the values, the result a tensor (with no gradient)."""

    def f(*args):
        out = ufunc(*_values(args))
        return (
            tuple(Tensor._wrap(np.asarray(o)) for o in out) if isinstance(out, tuple) else Tensor._wrap(np.asarray(out))
        )

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's ``np.{name}`` on the values of tensors (no gradient)."
    return f


def _values(obj):
    if isinstance(obj, Tensor):
        return obj._data
    if isinstance(obj, (list, tuple)) and any(isinstance(o, (Tensor, list, tuple)) for o in obj):
        return type(obj)(_values(o) for o in obj)
    return obj


def angle(z, deg=False):
    """NumPy's ``np.angle`` on tensors (tapegrad's ``angle``, in degrees with ``deg=True``)."""
    out = ops.angle(z)
    return ops.multiply(out, 180.0 / math.pi) if deg else out


def _average(a, axis=None, weights=None, returned=False, *, keepdims=sig.NO):
    return ops.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims is True)


def _count_nonzero(a, axis=None, *, keepdims=False):
    return ops.count_nonzero(a, axis=axis, keepdims=keepdims)


NOGRAD_FUNCTIONS = (
    "iscomplexobj isrealobj iscomplex isreal isneginf isposinf result_type can_cast min_scalar_type "
    "allclose isclose array_equal array_equiv isin argwhere flatnonzero searchsorted digitize lexsort nanargmax "
    "nanargmin unravel_index ravel_multi_index diag_indices_from tril_indices_from triu_indices_from einsum_path "
    "may_share_memory shares_memory array2string array_repr array_str save savez savez_compressed savetxt "
    "packbits unpackbits"
).split()
NOGRAD_UFUNCS = "gcd lcm left_shift right_shift bitwise_left_shift bitwise_right_shift bitwise_count spacing isnat"
IN_PLACE = {
    "fill_diagonal": "Write x = x + np.diag(v - np.diagonal(x)) (or x.at[i, i].set(v)) instead",
    "put": "Use x.at[index].set(v) (tg.index_update) instead",
    "place": "Use np.where(mask, v, x) instead",
    "putmask": "Use np.where(mask, v, x) instead",
    "copyto": "Use np.where(mask, src, dst) (or src itself) instead",
    "put_along_axis": "Use x.at[index].set(v) with the positions as an index instead",
}


def _main() -> dict:
    # tapegrad's constructors take no array argument: NumPy's own (zeros, eye, arange) serve tapegrad.numpy
    constructors = set(ops.creation.CONSTRUCTORS)
    table = {n: getattr(ops, n) for n in ops.__all__ if hasattr(np, n) and getattr(ops, n) not in constructors}
    table.update(
        {
            # reductions and scans, under NumPy's signatures
            "sum": sig.sum_like("sum", ops.sum, ops.add),
            "prod": sig.sum_like("prod", ops.prod, ops.multiply),
            "nansum": sig.sum_like("nansum", ops.nansum, ops.add),
            "nanprod": sig.sum_like("nanprod", ops.nanprod, ops.multiply),
            "max": sig.max_like("max", ops.max, ops.maximum),
            "amax": sig.max_like("amax", ops.amax, ops.maximum),
            "nanmax": sig.max_like("nanmax", ops.nanmax, ops.fmax),
            "min": sig.max_like("min", ops.min, ops.minimum),
            "amin": sig.max_like("amin", ops.amin, ops.minimum),
            "nanmin": sig.max_like("nanmin", ops.nanmin, ops.fmin),
            "mean": sig.mean_like("mean", ops.mean),
            "nanmean": sig.mean_like("nanmean", ops.nanmean),
            "var": sig.var_like("var", ops.var),
            "std": sig.var_like("std", ops.std),
            "nanvar": sig.var_like("nanvar", ops.nanvar),
            "nanstd": sig.var_like("nanstd", ops.nanstd),
            "all": sig.logical_reduction("all", ops.all),
            "any": sig.logical_reduction("any", ops.any),
            "argmax": sig.arg_reduction("argmax", ops.argmax),
            "argmin": sig.arg_reduction("argmin", ops.argmin),
            "cumsum": sig.scan("cumsum", ops.cumsum),
            "cumprod": sig.scan("cumprod", ops.cumprod),
            "average": _average,
            "count_nonzero": _count_nonzero,
            "angle": angle,
        }
    )
    for name in (
        "ptp median percentile quantile dot outer round fix trace take compress clip einsum concatenate concat "
        "stack hstack vstack reshape ravel sort argsort partition argpartition broadcast_to broadcast_arrays "
        "meshgrid where astype zeros_like ones_like empty_like full_like linspace"
    ).split():
        table[name] = getattr(sig, name)
    table["around"], table["row_stack"] = table["round"], table["vstack"]  # NumPy's second spellings of its own
    for name in (
        "diff ediff1d gradient trapezoid interp unwrap cov corrcoef logspace geomspace cumulative_sum "
        "cumulative_prod nancumsum nancumprod divmod modf frexp ldexp nextafter real_if_close"
    ).split():
        table[name] = getattr(_calculus, name)
    for (
        name
    ) in "copy matrix_transpose permute_dims unstack block resize apply_along_axis apply_over_axes cross".split():
        table[name] = getattr(_arrays, name)
    for name in (
        "unique unique_values unique_counts unique_inverse unique_all union1d intersect1d setdiff1d setxor1d "
        "sort_complex trim_zeros bincount choose piecewise histogram histogram_bin_edges histogram2d histogramdd"
    ).split():
        table[name] = getattr(_selections, name)
    for name in "nanmedian nanpercentile nanquantile".split():
        table[name] = getattr(_nanquantiles, name)
    for name in "vander polyval polyadd polysub polymul polydiv polyder polyint poly roots polyfit".split():
        table[name] = getattr(_polynomials, name)
    for name, alias in numpy_aliases(table):  # NumPy 2's other spellings of the same functions (np.acos)
        table.setdefault(alias, table[name])
    for name in NOGRAD_FUNCTIONS:
        table[name] = _nograd(name, getattr(np, name))
    table.update(shape=_shape, ndim=_ndim, size=_size)
    for name in NOGRAD_UFUNCS.split():
        table[name] = _nograd_ufunc(name, getattr(np, name))
    for name, instead in IN_PLACE.items():
        table[name] = _arrays.in_place(name, instead)
    return {n: f for n, f in table.items() if hasattr(np, n)}


def numpy_aliases(names):
    """``(name, alias)`` for each other name NumPy binds to the function of each of ``names`` (``np.acos`` is
    ``np.arccos``: its NumPy 2 spelling).

    >>> sorted(numpy_aliases(["arccos", "power", "exp"]))
    [('arccos', 'acos'), ('power', 'pow')]
    """
    by_object: dict = {}
    # NumPy's own attributes, not dir(np): that also names the submodules NumPy imports on first access
    # (np.f2py, np.testing, np.ma: 50 ms of importing tapegrad), none of them a function
    for n, f in sorted(vars(np).items()):
        if not n.startswith("_") and callable(f) and not isinstance(f, type):
            by_object.setdefault(id(f), []).append(n)
    return [
        (name, alias) for name in names for alias in by_object.get(id(getattr(np, name, None)), ()) if alias != name
    ]


# Shapes are read off the tensor, never off its values: a lazy (Dask) array must not be computed for them.
def _shape(a):
    return tuple(a.shape)


def _ndim(a):
    return a.ndim


def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


def _norm(x, ord=None, axis=None, keepdims=False):
    return tglinalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def cond(x, p=None):
    """NumPy's ``np.linalg.cond`` on tensors: the ratio of extreme singular values (p None, 2 or -2), else
    ``norm(x, p) * norm(inv(x), p)``."""
    if p in (None, 2, -2):
        s = tglinalg.svdvals(x)
        first, last = ops.getitem(s, index=(Ellipsis, 0)), ops.getitem(s, index=(Ellipsis, -1))
        return ops.divide(first, last) if p != -2 else ops.divide(last, first)
    return ops.multiply(tglinalg.norm(x, ord=p, axis=(-2, -1)), tglinalg.norm(tglinalg.inv(x), ord=p, axis=(-2, -1)))


def _linalg() -> dict:
    table = {
        n: getattr(tglinalg, n) for n in tglinalg.__all__ if hasattr(np.linalg, n) and callable(getattr(tglinalg, n))
    }
    table.update(
        {
            "norm": _norm,
            "cond": cond,
            "matrix_rank": _nograd("linalg.matrix_rank", np.linalg.matrix_rank),
            "matrix_transpose": _arrays.matrix_transpose,
            "outer": lambda x1, x2, /: ops.outer(x1, x2),
            "tensordot": lambda x1, x2, /, *, axes=2: ops.tensordot(x1, x2, axes),
            "trace": lambda x, /, *, offset=0, dtype=None: ops.trace(sig.cast(x, dtype), offset, -2, -1),
            "diagonal": lambda x, /, *, offset=0: ops.diagonal(x, offset, -2, -1),
            "vecdot": lambda x1, x2, /, *, axis=-1: ops.vecdot(x1, x2, axis=axis),
        }
    )
    return {n: f for n, f in table.items() if hasattr(np.linalg, n) and not isinstance(getattr(np.linalg, n), type)}


def _fft() -> dict:
    def without_out(name, f):
        def g(*args, out=None, **kwargs):
            sig.check_out(f"fft.{name}", out)
            return f(*args, **kwargs)

        g.__name__ = g.__qualname__ = name
        g.__doc__ = f.__doc__
        return g

    return {n: without_out(n, getattr(tgfft, n)) for n in tgfft.__all__ if hasattr(np.fft, n)}


MAIN = _main()
LINALG = _linalg()
FFT = _fft()

REDUCE = {  # ufunc.reduce with a tapegrad meaning
    np.add: MAIN["sum"],
    np.multiply: MAIN["prod"],
    np.maximum: MAIN["max"],
    np.minimum: MAIN["min"],
    np.fmax: MAIN["nanmax"],
    np.fmin: MAIN["nanmin"],
    np.logical_and: MAIN["all"],
    np.logical_or: MAIN["any"],
}
ACCUMULATE = {np.add: MAIN["cumsum"], np.multiply: MAIN["cumprod"]}
LOGADDEXP_REDUCE = ops.logsumexp  # np.logaddexp.reduce: log(sum(exp(x))) along an axis
