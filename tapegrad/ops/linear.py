"""Linear functions of arrays: products, contractions, convolutions and diagonals.

Ops with their own rules: ``tensordot`` (each gradient a ``tensordot`` of ``g`` with the other operand, axes
put back in order), ``einsum`` (each gradient an ``einsum`` of ``g`` with the other operands, broadcast along
indices only its operand had and placed on the diagonal for repeated ones, as in ``'ii->i'``; ``optimize=`` is
passed to ``np.einsum`` forward and backward), ``convolve``/``correlate`` (gradients are ``correlate``\\ s of
``g`` zero-padded to the full length), ``diagonal``, ``trace``, ``diagflat``, ``tril`` and ``triu``.

Composed of ops: ``dot``, ``vdot``, ``inner`` (``tensordot``), ``outer`` and ``kron`` (``multiply`` of reshapes),
``diag`` (``diagonal`` or ``diagflat``), ``matvec``, ``vecmat`` (``matmul``) and ``vecdot`` (``sum`` of a product).
Complex inputs of ``vdot``, ``vecdot`` and ``vecmat`` (which conjugate their first argument) raise.
"""

import string

import numpy as np

from ..registry import defop
from ._axes import ndim_of, normalize_axes
from ._batching import convolve_rule, diagflat_rule, diagonal_rule, einsum_rule, tensordot_rule, trace_rule
from ._complex import is_complex
from .complex_numbers import conj
from .elementwise import multiply
from .linalg import matmul
from .reductions import sum as _sum
from .shape import reshape, squeeze


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _order(current):
    return tuple(int(i) for i in np.argsort(current))


# -- tensordot ----------------------------------------------------------------------------------------------
def _tensordot_vjp_x(xp, g, ans, x, y, axes):
    ax_x, ax_y = axes
    free_x = [i for i in range(x.ndim) if i not in ax_x]
    free_y = tuple(i for i in range(y.ndim) if i not in ax_y)
    gx = xp.tensordot(g, y, axes=(tuple(range(len(free_x), g.ndim)), free_y))
    # gx's axes: free_x, then y's contracted axes in y's order, each paired with an axis of x
    return xp.transpose(gx, _order(free_x + [ax_x[ax_y.index(j)] for j in sorted(ax_y)]))


def _tensordot_vjp_y(xp, g, ans, x, y, axes):
    ax_x, ax_y = axes
    free_x = tuple(i for i in range(x.ndim) if i not in ax_x)
    free_y = [i for i in range(y.ndim) if i not in ax_y]
    gy = xp.tensordot(x, g, axes=(free_x, tuple(range(len(free_x)))))
    # gy's axes: x's contracted axes in x's order, each paired with an axis of y, then free_y
    return xp.transpose(gy, _order([ax_y[ax_x.index(i)] for i in sorted(ax_x)] + free_y))


# -- einsum -------------------------------------------------------------------------------------------------
def _sublist_letters(sublist, where):
    letters = []
    for s in sublist:
        if s is Ellipsis:
            letters.append("...")
            continue
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"einsum: {where} {sublist!r} must hold integers in [0, 52) or Ellipsis, got {s!r}")
        if not 0 <= s < 52:
            raise ValueError(f"einsum: subscript {s} in {where} {sublist!r} is not within the valid range [0, 52)")
        letters.append(string.ascii_letters[(int(s) + 26) % 52])  # NumPy's: 0-25 are 'A'-'Z', 26-51 'a'-'z'
    return "".join(letters)


def einsum_subscripts(args):
    """NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as (subscripts string, operands).

    >>> einsum_subscripts(("a", [0, 1], "b", [1, 2], [0, 2]))
    ('AB,BC->AC', ('a', 'b'))
    """
    args = tuple(args)
    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    operands, terms = pairs[0::2], pairs[1::2]
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    for t in terms + ((output,) if output is not None else ()):
        if not isinstance(t, (list, tuple)):
            raise TypeError(
                f"einsum: in the sublist form each operand is followed by a list of its subscripts "
                f"(einsum(a, [0, 1], b, [1, 2], [0, 2])), got {type(t).__name__}"
            )
    spec = ",".join(_sublist_letters(t, "the sublist") for t in terms)
    if output is not None:
        spec += "->" + _sublist_letters(output, "the output sublist")
    return spec, operands


def _parse_einsum(subscripts, shapes):
    """Explicit subscripts without ellipsis for operands of ``shapes``: (input terms, output term)."""
    s = subscripts.replace(" ", "")
    inputs, arrow, output = s.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {subscripts!r} names {len(terms)} operands, got {len(shapes)}")
    letters = [c for c in s if c.isalpha()]
    free = [c for c in string.ascii_letters if c not in letters]
    ell = [len(shape) - (len(t) - 3) if "..." in t else 0 for t, shape in zip(terms, shapes)]
    n_ell = max(ell, default=0)
    if min(ell, default=0) < 0:
        raise ValueError(f"einsum: {subscripts!r} has more subscripts than an operand has dimensions")
    ell_letters = "".join(free[:n_ell])
    terms = [t.replace("...", ell_letters[n_ell - k :]) for t, k in zip(terms, ell)]
    for t, shape in zip(terms, shapes):
        if len(t) != len(shape):
            raise ValueError(f"einsum: subscripts {t!r} for an operand of shape {shape}")
    if arrow:
        output = output.replace("...", ell_letters)
    else:  # implicit output: the ellipsis, then the indices that appear once, in alphabetical order
        counts = {}
        for c in "".join(terms):
            counts[c] = counts.get(c, 0) + 1
        output = ell_letters + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell_letters))
    return terms, output


def _einsum_vjp(xp, g, ans, *xs, argnum, subscripts, optimize=False):
    inputs, output = subscripts.split("->")
    terms = inputs.split(",")
    term, x = terms[argnum], xs[argnum]
    unique = list(dict.fromkeys(term))
    others = [j for j in range(len(xs)) if j != argnum]
    elsewhere = set(output).union(*[terms[j] for j in others])
    made = "".join(c for c in unique if c in elsewhere)
    spec = ",".join([output] + [terms[j] for j in others]) + "->" + made
    opt = "greedy" if isinstance(optimize, (list, tuple)) else optimize  # a path fits the forward's operands only
    gx = xp.einsum(spec, g, *[xs[j] for j in others], optimize=opt)
    size = {c: n for c, n in zip(term, x.shape)}
    # an index of size 1 here that other operands broadcast: sum it back
    wide = tuple(i for i, c in enumerate(made) if size[c] == 1 and gx.shape[i] != 1)
    if wide:
        gx = xp.sum(gx, axis=wide, keepdims=True)
    full = tuple(size[c] for c in unique)
    if len(made) != len(unique):  # indices only this operand had: the gradient is constant along them
        gx = xp.broadcast_to(xp.reshape(gx, tuple(size[c] if c in made else 1 for c in unique)), full)
    if len(unique) != len(term):  # a repeated index ('ii'): the gradient lies on that diagonal
        q = len(unique)
        index = tuple(
            np.arange(size[c]).reshape((1,) * unique.index(c) + (size[c],) + (1,) * (q - unique.index(c) - 1))
            for c in term
        )
        gx = xp.scatter(gx, index=index, shape=tuple(x.shape))
    return gx


def _einsum_forward(*xs, subscripts, optimize=False, xp=np):
    return xp.einsum(subscripts, *xs, optimize=optimize)


# -- convolve and correlate ---------------------------------------------------------------------------------
def _offset(mode, m, n, correlate):
    """Where NumPy's ``mode`` output starts inside the full one (length m + n - 1)."""
    if mode == "full":
        return 0
    k = min(m, n) - 1
    if mode == "valid":
        return k
    return k - k // 2 if correlate and m < n else k // 2


def _full(xp, g, x, y, mode, correlate):
    m, n = x.shape[0], y.shape[0]
    if mode == "full":
        return g
    start = _offset(mode, m, n, correlate)
    return xp.scatter(g, index=slice(start, start + g.shape[0]), shape=(m + n - 1,))


# -- diagonals ------------------------------------------------------------------------------------------------
def _diagonal_index(shape, offset, axis1, axis2):
    """The index tuple picking ``np.diagonal(x, offset, axis1, axis2)`` out of an array of ``shape``."""
    rows, cols = shape[axis1], shape[axis2]
    k = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    rest = [i for i in range(len(shape)) if i not in (axis1, axis2)]
    ndim = len(rest) + 1
    index = [None] * len(shape)
    for j, i in enumerate(rest):
        index[i] = np.arange(shape[i]).reshape((1,) * j + (shape[i],) + (1,) * (ndim - j - 1))
    diag = np.arange(k).reshape((1,) * (ndim - 1) + (k,))
    index[axis1], index[axis2] = diag + max(-offset, 0), diag + max(offset, 0)
    return tuple(index), tuple(shape[i] for i in rest) + (k,)


def _diagonal_vjp(xp, g, ans, x, offset=0, axis1=0, axis2=1):
    index, _ = _diagonal_index(x.shape, offset, axis1, axis2)
    return xp.scatter(g, index=index, shape=x.shape)


def _trace_vjp(xp, g, ans, x, offset=0, axis1=0, axis2=1):
    index, picked = _diagonal_index(x.shape, offset, axis1, axis2)
    spread = xp.broadcast_to(xp.reshape(g, tuple(g.shape) + (1,)), picked)
    return xp.scatter(spread, index=index, shape=x.shape)


# fmt: off
_tensordot = defop("tensordot", lambda x, y, axes, *, xp=np: xp.tensordot(x, y, axes=axes),
                   _tensordot_vjp_x, _tensordot_vjp_y, save="x y", linear="each", batch=tensordot_rule)
_einsum = defop("einsum", _einsum_forward, _einsum_vjp, inputs="*", save="*", view=True, linear="each", batch=einsum_rule)  # np.einsum("ii->i") is a view
_REAL = "rules written for real inputs (a complex convolution is a product of FFTs)"
_convolve = defop("convolve", lambda x, y, mode="full", *, xp=np: xp.convolve(x, y, mode=mode),
                  lambda xp, g, ans, x, y, mode="full": xp.correlate(_full(xp, g, x, y, mode, False), y, mode="valid"),
                  lambda xp, g, ans, x, y, mode="full": xp.correlate(_full(xp, g, x, y, mode, False), x, mode="valid"),
                  save="x y", refuses={"dask": "dask.array has no convolve or correlate"}, real_only=_REAL, linear="each",
                  batch=convolve_rule(False, _offset))
_correlate = defop("correlate", lambda x, y, mode="valid", *, xp=np: xp.correlate(x, y, mode=mode),
                   lambda xp, g, ans, x, y, mode="valid": xp.correlate(_full(xp, g, x, y, mode, True), xp.flip(y),
                                                                      mode="valid"),
                   lambda xp, g, ans, x, y, mode="valid": xp.flip(xp.correlate(_full(xp, g, x, y, mode, True), x,
                                                                              mode="valid")),
                   save="x y", refuses={"dask": "dask.array has no convolve or correlate"}, real_only=_REAL, linear="each",
                   batch=convolve_rule(True, _offset))
_diagonal = defop("diagonal", lambda x, offset=0, axis1=0, axis2=1, *, xp=np: xp.diagonal(x, offset=offset, axis1=axis1,
                                                                                          axis2=axis2),
                  _diagonal_vjp, save="x.shape", view=True, linear=True, batch=diagonal_rule)
_trace = defop("trace", lambda x, offset=0, axis1=0, axis2=1, *, xp=np: xp.trace(x, offset=offset, axis1=axis1,
                                                                                 axis2=axis2),
               _trace_vjp, save="x.shape", linear=True, batch=trace_rule)
_diagflat = defop("diagflat", lambda x, k=0, *, xp=np: xp.diagflat(x, k=k),
                  lambda xp, g, ans, x, k=0: xp.reshape(xp.diagonal(g, offset=k), x.shape), save="x.shape",
                  refuses={"dask": "dask.array has no diagflat"}, linear=True, batch=diagflat_rule)
_tril = defop("tril", lambda x, k=0, *, xp=np: xp.tril(x, k=k), lambda xp, g, ans, x, k=0: xp.tril(g, k=k), linear=True, batch="leading")
_triu = defop("triu", lambda x, k=0, *, xp=np: xp.triu(x, k=k), lambda xp, g, ans, x, k=0: xp.triu(g, k=k), linear=True, batch="leading")
# fmt: on


def tensordot(a, b, axes=2):
    """Sum products over ``axes``: an int n (the last n of ``a`` with the first n of ``b``) or a pair of axis
    sequences.

    >>> import tapegrad as tg
    >>> tg.tensordot(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[3.0], [4.0]]), axes=1)
    Tensor([[11.]])
    """
    na, nb = ndim_of(a), ndim_of(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(na, nb):
            raise ValueError(f"tensordot: axes={n} for operands of {na} and {nb} dimensions")
        ax_a, ax_b = tuple(range(na - n, na)), tuple(range(n))
    else:
        try:
            first, second = axes
        except (TypeError, ValueError):
            raise ValueError(f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}") from None
        ax_a = tuple(int(i) % na if na else 0 for i in (first if isinstance(first, (list, tuple)) else (first,)))
        ax_b = tuple(int(i) % nb if nb else 0 for i in (second if isinstance(second, (list, tuple)) else (second,)))
    sa, sb = _shape(a), _shape(b)
    if len(ax_a) != len(ax_b) or any(sa[i] != sb[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError(f"tensordot: axes {ax_a} of shape {sa} do not match axes {ax_b} of shape {sb}")
    return _tensordot(a, b, axes=(ax_a, ax_b))


def einsum(subscripts, *operands, optimize=False):
    """Einstein summation as ``np.einsum``: any subscripts (repeated indices, ``...``, implicit output), as a
    string or in NumPy's sublist form (``einsum(a, [0, 1], b, [1, 2], [0, 2])``); ``optimize`` (False, True,
    "greedy", "optimal" or a path) picks the contraction order, forward and backward.

    >>> import tapegrad as tg
    >>> tg.einsum("ii->", tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor(5.)
    >>> tg.einsum(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), [0, 0], [])
    Tensor(5.)
    """
    if not isinstance(subscripts, str):  # NumPy's sublist form: operand, sublist, operand, sublist, ..., [output]
        subscripts, operands = einsum_subscripts((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    terms, output = _parse_einsum(subscripts, [_shape(x) for x in operands])
    return _einsum(operands, subscripts=",".join(terms) + "->" + output, optimize=optimize)


def _vector(x, op):
    if ndim_of(x) != 1:
        raise ValueError(f"{op}: needs 1-D inputs, got shape {_shape(x)}")


def _mode(mode, op):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{op}: mode must be 'full', 'same' or 'valid', got {mode!r}")


def convolve(a, v, mode="full"):
    """Discrete linear convolution of two 1-D tensors, ``mode`` "full", "same" or "valid" as NumPy's.

    >>> import tapegrad as tg
    >>> tg.convolve(tg.Tensor([1.0, 2.0]), tg.Tensor([1.0, 1.0]))
    Tensor([1., 3., 2.])
    """
    _vector(a, "convolve"), _vector(v, "convolve"), _mode(mode, "convolve")
    _refuse_complex("convolve", a, v)
    return _convolve(a, v, mode=mode)


def correlate(a, v, mode="valid"):
    """Cross-correlation of two 1-D real tensors, ``mode`` "valid" (NumPy's default), "same" or "full".

    >>> import tapegrad as tg
    >>> tg.correlate(tg.Tensor([1.0, 2.0, 3.0]), tg.Tensor([1.0, 1.0]))
    Tensor([3., 5.])
    """
    _vector(a, "correlate"), _vector(v, "correlate"), _mode(mode, "correlate")
    _refuse_complex("correlate", a, v)
    return _correlate(a, v, mode=mode)


def _axis_pair(x, axis1, axis2, op):
    (a1,), (a2,) = normalize_axes(x, axis1, op), normalize_axes(x, axis2, op)
    if a1 == a2:
        raise ValueError(f"{op}: axis1 and axis2 cannot be the same, got {axis1} and {axis2}")
    return a1, a2


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal of the planes of ``axis1`` and ``axis2``, as the last axis.

    >>> import tapegrad as tg
    >>> tg.diagonal(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([1., 4.])
    """
    if ndim_of(a) < 2:
        raise ValueError(f"diagonal: needs at least 2 dimensions, got shape {_shape(a)}")
    a1, a2 = _axis_pair(a, axis1, axis2, "diagonal")
    return _diagonal(a, offset=int(offset), axis1=a1, axis2=a2)


def trace(a, offset=0, axis1=0, axis2=1):
    """The sum along the ``offset`` diagonal of the planes of ``axis1`` and ``axis2``.

    >>> import tapegrad as tg
    >>> tg.trace(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor(5.)
    """
    if ndim_of(a) < 2:
        raise ValueError(f"trace: needs at least 2 dimensions, got shape {_shape(a)}")
    a1, a2 = _axis_pair(a, axis1, axis2, "trace")
    return _trace(a, offset=int(offset), axis1=a1, axis2=a2)


def diagflat(v, k=0):
    """A 2-D tensor with the flattened input on its ``k`` diagonal.

    >>> import tapegrad as tg
    >>> tg.diagflat(tg.Tensor([1.0, 2.0]))
    Tensor([[1., 0.],
            [0., 2.]])
    """
    return _diagflat(v, k=int(k))


def diag(v, k=0):
    """The ``k`` diagonal of a 2-D tensor, or a 2-D tensor with a 1-D input on its ``k`` diagonal.

    >>> import tapegrad as tg
    >>> tg.diag(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), 1)
    Tensor([2.])
    """
    if ndim_of(v) == 1:
        return diagflat(v, k)
    if ndim_of(v) == 2:
        return diagonal(v, k)
    raise ValueError(f"diag: needs a 1-D or 2-D input, got shape {_shape(v)}")


def tril(m, k=0):
    """The lower triangle (at and below the ``k`` diagonal) of the last two axes, zeros above.

    >>> import tapegrad as tg
    >>> tg.tril(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([[1., 0.],
            [3., 4.]])
    """
    if ndim_of(m) < 2:
        raise ValueError(f"tril: needs at least 2 dimensions, got shape {_shape(m)}")
    return _tril(m, k=int(k))


def triu(m, k=0):
    """The upper triangle (at and above the ``k`` diagonal) of the last two axes, zeros below.

    >>> import tapegrad as tg
    >>> tg.triu(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([[1., 2.],
            [0., 4.]])
    """
    if ndim_of(m) < 2:
        raise ValueError(f"triu: needs at least 2 dimensions, got shape {_shape(m)}")
    return _triu(m, k=int(k))


def dot(a, b):
    """NumPy's dot: a product for 0-d inputs, else the sum over the last axis of ``a`` and the second-to-last
    of ``b`` (its only axis for 1-D ``b``).

    >>> import tapegrad as tg
    >>> tg.dot(tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0]))
    Tensor(11.)
    """
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=((na - 1,), (max(nb - 2, 0),)))


def _conj(a):
    """``conj(a)`` for a complex ``a`` (NumPy's vdot, vecdot and vecmat conjugate their first input), else ``a``."""
    return conj(a) if is_complex(a) else a


def _refuse_complex(op, *xs):
    for x in xs:
        if is_complex(x):
            raise TypeError(
                f"{op}: complex inputs are not supported (its rules are written for real inputs); a complex "
                "convolution is a product of FFTs: tg.fft.ifft(tg.fft.fft(a, n) * tg.fft.fft(v, n))"
            )


def vdot(a, b):
    """The dot product of the flattened inputs, the first one conjugated when complex (as NumPy's).

    >>> import tapegrad as tg
    >>> tg.vdot(tg.Tensor([[1.0, 2.0]]), tg.Tensor([3.0, 4.0]))
    Tensor(11.)
    """
    return tensordot(reshape(_conj(a), (-1,)), reshape(b, (-1,)), axes=1)


def inner(a, b):
    """The sum over the last axes of both inputs (a product for 0-d ones).

    >>> import tapegrad as tg
    >>> tg.inner(tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0]))
    Tensor(11.)
    """
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=((na - 1,), (nb - 1,)))


def outer(a, b):
    """Every product of an element of ``a`` with one of ``b`` (both flattened), as a 2-D tensor.

    >>> import tapegrad as tg
    >>> tg.outer(tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0]))
    Tensor([[3., 4.],
            [6., 8.]])
    """
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def kron(a, b):
    """The Kronecker product: blocks of ``b`` scaled by each element of ``a``.

    >>> import tapegrad as tg
    >>> tg.kron(tg.Tensor([1.0, 2.0]), tg.Tensor([1.0, 10.0]))
    Tensor([ 1., 10.,  2., 20.])
    """
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return multiply(a, b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    wide_a = reshape(a, tuple(n for s in sa for n in (s, 1)))
    wide_b = reshape(b, tuple(n for s in sb for n in (1, s)))
    return reshape(multiply(wide_a, wide_b), tuple(p * q for p, q in zip(sa, sb)))


def matvec(x1, x2):
    """Matrix-vector products over the last axes, batch axes broadcasting: (..., m, n) with (..., n).

    >>> import tapegrad as tg
    >>> tg.matvec(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), tg.Tensor([1.0, 1.0]))
    Tensor([3., 7.])
    """
    if ndim_of(x1) < 2 or ndim_of(x2) < 1:
        raise ValueError(f"matvec: needs a matrix and a vector, got shapes {_shape(x1)} and {_shape(x2)}")
    return squeeze(matmul(x1, reshape(x2, _shape(x2) + (1,))), -1)


def vecmat(x1, x2):
    """Vector-matrix products over the last axes, batch axes broadcasting: (..., n) with (..., n, m); the vector
    conjugated when complex (as NumPy's).

    >>> import tapegrad as tg
    >>> tg.vecmat(tg.Tensor([1.0, 1.0]), tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([4., 6.])
    """
    x1 = _conj(x1)
    if ndim_of(x1) < 1 or ndim_of(x2) < 2:
        raise ValueError(f"vecmat: needs a vector and a matrix, got shapes {_shape(x1)} and {_shape(x2)}")
    s = _shape(x1)
    return squeeze(matmul(reshape(x1, s[:-1] + (1, s[-1])), x2), -2)


def vecdot(x1, x2, axis=-1):
    """Dot products along ``axis``, the other axes broadcasting; the first input conjugated when complex.

    >>> import tapegrad as tg
    >>> tg.vecdot(tg.Tensor([[1.0, 2.0]]), tg.Tensor([3.0, 4.0]))
    Tensor([11.])
    """
    product = multiply(_conj(x1), x2)
    return _sum(product, axis=axis)
