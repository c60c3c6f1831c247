"""``tapegrad.fft``: NumPy's ``numpy.fft`` on tensors, differentiable (complex gradients in tapegrad's
convention, ``docs/guide/complex.md``).

======================================  ===================================================================
functions                               what they are built from
======================================  ===================================================================
fft, ifft, fft2, ifft2, fftn, ifftn     the ops ``fftn`` and ``ifftn`` (transforms over any axes)
rfft, irfft                             the ops ``rfft`` and ``irfft``
rfft2, rfftn, irfft2, irfftn            rfft (irfft) on the last axis, fftn (ifftn) on the others, as NumPy
hfft, ihfft                             irfft and rfft of the conjugate, as NumPy
fftshift, ifftshift                     ``tg.roll`` (differentiable)
fftfreq, rfftfreq                       constants (tensors that need no gradient)
======================================  ===================================================================

Arguments are NumPy's: ``n`` / ``s`` (lengths: inputs are truncated or zero-padded to them), ``axis`` / ``axes``,
and ``norm`` ('backward', the default, 'ortho' or 'forward'). Real input to the complex transforms is
promoted to complex (float32 to complex64); its gradient is real. ``rfft`` and ``ihfft`` take real input
only. On array API libraries the transforms run with their ``fft`` extension (``fft2`` and the like through
``fftn`` with axes).

>>> import tapegrad as tg
>>> from tapegrad import fft
>>> fft.fft(tg.Tensor([1.0, 0.0, 0.0, 0.0]))
Tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex128)
"""

from __future__ import annotations

import numpy as np

from ._tensor import Tensor
from .ops._axes import ndim_of
from .ops._complex import is_complex
from .ops.arrange import roll
from .ops.complex_numbers import conj
from .ops.fft import _fftn_op, _ifftn_op, _irfft_op, _rfft_op

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fftshift",
    "ifftshift",
    "fftfreq",
    "rfftfreq",
]

_NORMS = ("backward", "ortho", "forward")


def _norm(norm, op):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"{op}: norm must be 'backward', 'ortho', 'forward' or None, got {norm!r}")
    return norm


def _swap(norm):
    return {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _axis(x, axis, op):
    ndim = ndim_of(x)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for an input of {ndim} dimensions")
    return int(axis) % ndim


def _length(n, op, what="n"):
    if n is None:
        return None
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{op}: {what} must be a positive int, got {n!r}")
    return int(n)


def _axes_and_sizes(x, s, axes, op, last_real=False):
    """NumPy's rules for ``s`` and ``axes``: both default to all axes (the last len(s) with s only)."""
    if axes is None:
        axes = tuple(range(ndim_of(x))) if s is None else tuple(range(-len(s), 0))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(_axis(x, a, op) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axis in {axes}")
    if s is None:
        shape = _shape(x)
        s = [shape[a] for a in axes]
        if last_real and axes:
            s[-1] = 2 * (shape[axes[-1]] - 1)
    elif len(s) != len(axes):
        raise ValueError(f"{op}: s {tuple(s)} and axes {axes} must have the same length")
    return tuple(_length(n, op, "s") for n in s), axes


def _real_only(x, op):
    if is_complex(x):
        raise TypeError(f"{op}: takes real input (got {x.dtype}); use fft for complex input")


# -- complex to complex ---------------------------------------------------------------------------------
def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional discrete Fourier transform over ``axes`` (default: all, or the last len(s)).

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.fftn(tg.Tensor([[1.0, 1.0], [1.0, 1.0]]))
    Tensor([[4.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j]], dtype=complex128)
    """
    s, axes = _axes_and_sizes(a, s, axes, "fftn")
    return _fftn_op(a, s=s, axes=axes, norm=_norm(norm, "fftn"))


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse discrete Fourier transform.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.ifftn(tg.Tensor([[4.0, 0.0], [0.0, 0.0]]))
    Tensor([[1.+0.j, 1.+0.j],
            [1.+0.j, 1.+0.j]], dtype=complex128)
    """
    s, axes = _axes_and_sizes(a, s, axes, "ifftn")
    return _ifftn_op(a, s=s, axes=axes, norm=_norm(norm, "ifftn"))


def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform along ``axis``, of length ``n`` (truncated or padded).

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.fft(tg.Tensor([0.0, 1.0]))
    Tensor([ 1.+0.j, -1.+0.j], dtype=complex128)
    """
    axis = _axis(a, axis, "fft")
    return _fftn_op(a, s=None if n is None else (_length(n, "fft"),), axes=(axis,), norm=_norm(norm, "fft"))


def ifft(a, n=None, axis=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.ifft(tg.Tensor([1.0, -1.0]))
    Tensor([0.+0.j, 1.+0.j], dtype=complex128)
    """
    axis = _axis(a, axis, "ifft")
    return _ifftn_op(a, s=None if n is None else (_length(n, "ifft"),), axes=(axis,), norm=_norm(norm, "ifft"))


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional discrete Fourier transform (``fftn`` over the last two axes).

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.fft2(tg.Tensor([[1.0, 0.0], [0.0, 0.0]])).shape
    (2, 2)
    """
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional inverse discrete Fourier transform.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.ifft2(tg.Tensor([[4.0, 0.0], [0.0, 0.0]])).shape
    (2, 2)
    """
    return ifftn(a, s, axes, norm)


# -- real input, Hermitian output -------------------------------------------------------------------------
def rfft(a, n=None, axis=-1, norm=None):
    """The discrete Fourier transform of real input: the n // 2 + 1 non-negative frequencies.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.rfft(tg.Tensor([1.0, 2.0, 3.0, 4.0]))
    Tensor([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex128)
    """
    _real_only(a, "rfft")
    return _rfft_op(a, n=_length(n, "rfft"), axis=_axis(a, axis, "rfft"), norm=_norm(norm, "rfft"))


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of rfft: a real signal of length ``n`` (default 2 (m - 1)) from m non-negative frequencies.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.irfft(tg.Tensor([10.0 + 0j, -2.0 + 2.0j, -2.0 + 0j]))
    Tensor([1., 2., 3., 4.])
    """
    return _irfft_op(a, n=_length(n, "irfft"), axis=_axis(a, axis, "irfft"), norm=_norm(norm, "irfft"))


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform of real input: rfft over the last of ``axes``, fftn over the others.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.rfftn(tg.Tensor([[1.0, 1.0], [1.0, 1.0]]))
    Tensor([[4.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j]], dtype=complex128)
    """
    _real_only(a, "rfftn")
    s, axes = _axes_and_sizes(a, s, axes, "rfftn")
    norm = _norm(norm, "rfftn")
    out = _rfft_op(a, n=s[-1], axis=axes[-1], norm=norm)
    return _fftn_op(out, s=s[:-1], axes=axes[:-1], norm=norm) if len(axes) > 1 else out


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of rfftn: ifftn over all of ``axes`` but the last, irfft over the last.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.irfftn(tg.Tensor([[4.0 + 0j, 0j], [0j, 0j]]))
    Tensor([[1., 1.],
            [1., 1.]])
    """
    s, axes = _axes_and_sizes(a, s, axes, "irfftn", last_real=True)
    norm = _norm(norm, "irfftn")
    if len(axes) > 1:
        a = _ifftn_op(a, s=s[:-1], axes=axes[:-1], norm=norm)
    return _irfft_op(a, n=s[-1], axis=axes[-1], norm=norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """rfftn over the last two axes.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.rfft2(tg.Tensor([[1.0, 0.0], [0.0, 0.0]])).shape
    (2, 2)
    """
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """irfftn over the last two axes.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.irfft2(tg.Tensor([[4.0 + 0j, 0j], [0j, 0j]])).shape
    (2, 2)
    """
    return irfftn(a, s, axes, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a signal with Hermitian symmetry, given by its first half: a real spectrum of length
    ``n`` (default 2 (m - 1)); NumPy's irfft(conj(a)) with the norm's direction swapped.

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.hfft(tg.Tensor([1.0 + 0j, 0j, 0j]))
    Tensor([1., 1., 1., 1.])
    """
    norm = _swap(_norm(norm, "hfft"))
    return _irfft_op(conj(a), n=_length(n, "hfft"), axis=_axis(a, axis, "hfft"), norm=norm)


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of hfft: conj(rfft(a)) with the norm's direction swapped (real input).

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.ihfft(tg.Tensor([1.0, 1.0, 1.0, 1.0]))
    Tensor([1.-0.j, 0.-0.j, 0.-0.j], dtype=complex128)
    """
    _real_only(a, "ihfft")
    norm = _swap(_norm(norm, "ihfft"))
    return conj(_rfft_op(a, n=_length(n, "ihfft"), axis=_axis(a, axis, "ihfft"), norm=norm))


# -- shifts and frequencies -----------------------------------------------------------------------------
def _shift_axes(x, axes, op):
    if axes is None:
        return tuple(range(ndim_of(x)))
    items = axes if isinstance(axes, (tuple, list)) else (axes,)
    return tuple(_axis(x, a, op) for a in items)


def fftshift(x, axes=None):
    """Move the zero frequency to the centre (a roll by n // 2 along each of ``axes``, default all).

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.fftshift(tg.Tensor([0.0, 1.0, 2.0, -2.0, -1.0]))
    Tensor([-2., -1.,  0.,  1.,  2.])
    """
    axes = _shift_axes(x, axes, "fftshift")
    shape = _shape(x)
    return roll(x, tuple(shape[a] // 2 for a in axes), axes) if axes else x


def ifftshift(x, axes=None):
    """The inverse of fftshift (a roll by -(n // 2)).

    >>> import tapegrad as tg
    >>> from tapegrad import fft
    >>> fft.ifftshift(tg.Tensor([-2.0, -1.0, 0.0, 1.0, 2.0]))
    Tensor([ 0.,  1.,  2., -2., -1.])
    """
    axes = _shift_axes(x, axes, "ifftshift")
    shape = _shape(x)
    return roll(x, tuple(-(shape[a] // 2) for a in axes), axes) if axes else x


def fftfreq(n, d=1.0, *, dtype=None):
    """The sample frequencies of an n-point transform with sample spacing d (a constant tensor).

    >>> from tapegrad import fft
    >>> fft.fftfreq(4)
    Tensor([ 0.  ,  0.25, -0.5 , -0.25])
    """
    return Tensor(np.fft.fftfreq(n, d).astype(dtype or np.float64))


def rfftfreq(n, d=1.0, *, dtype=None):
    """The sample frequencies of rfft's n // 2 + 1 outputs (a constant tensor).

    >>> from tapegrad import fft
    >>> fft.rfftfreq(4)
    Tensor([0.  , 0.25, 0.5 ])
    """
    return Tensor(np.fft.rfftfreq(n, d).astype(dtype or np.float64))
