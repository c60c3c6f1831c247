"""Discrete Fourier transforms: four ops (fftn, ifftn, rfft, irfft) that every function of ``tapegrad.fft``
is built from.

Each is linear, so its rule is its transpose (tapegrad's convention has no conjugation, ``docs/guide/complex.md``):

- ``fftn`` and ``ifftn`` have symmetric matrices, so each is its own transpose, with the same ``norm``; the
  transpose of zero-padding or truncating the input to ``s`` truncates or zero-pads the gradient back.
- ``rfft`` keeps the first n // 2 + 1 outputs of a real input's fft: its transpose pads the cotangent with
  zeros to n, transforms, and keeps the real part (the input is real).
- ``irfft`` reads the n // 2 + 1 values of a Hermitian spectrum (ignoring the imaginary part of the first and,
  for even n, the last) and counts the others twice: the gradient is ``ifft(g)`` there, doubled where
  counted twice.
"""

import numpy as np
import numpy.fft  # noqa: F401  (NumPy 2 loads it lazily: namespaces copied from NumPy's should see it)

from ..backend import MissingFunction
from ..backend import dask_array as dask
from ..registry import defop
from ._batching import fft_axes_rule
from ._complex import complex_dtype, is_complex, like, real_if_complex
from ._matrix import is_numpy, native
from ._rules import in_rule


def _complex_input(xp, x):
    # NumPy transforms real input itself; the array API's fft/ifft take complex input only
    return x if is_numpy(xp) or is_complex(x) else xp.astype(x, complex_dtype(xp, x.dtype))


def _fft(xp):
    module = getattr(xp, "fft", None)
    if module is None:
        raise MissingFunction(f"the {getattr(xp, 'name', xp)} backend has no fft module")
    return module


def _fftn(x, s=None, axes=None, norm="backward", *, xp=np):
    return native(xp, _fft(xp).fftn(_complex_input(xp, x), s=s, axes=axes, norm=norm))


def _ifftn(x, s=None, axes=None, norm="backward", *, xp=np):
    return native(xp, _fft(xp).ifftn(_complex_input(xp, x), s=s, axes=axes, norm=norm))


def _rfft(x, n=None, axis=-1, norm="backward", *, xp=np):
    return native(xp, _fft(xp).rfft(x, n=n, axis=axis, norm=norm))


def _irfft(x, n=None, axis=-1, norm="backward", *, xp=np):
    return native(xp, _fft(xp).irfft(_complex_input(xp, x), n=n, axis=axis, norm=norm))


def along(axis, index):
    """An index taking ``index`` (a slice) along a non-negative ``axis``."""
    return (slice(None),) * axis + (index, Ellipsis)


def resize(xp, t, axis, n):
    """``t`` truncated or zero-padded to length ``n`` along ``axis`` (the transpose of the other one)."""
    m = t.shape[axis]
    if n < m:
        return t[along(axis, slice(0, n))]
    if n > m:
        shape = tuple(t.shape[:axis]) + (n,) + tuple(t.shape[axis + 1 :])
        return xp.scatter(t, index=along(axis, slice(0, m)), shape=shape)
    return t


def _c2c_vjp(forward, op):
    def vjp(xp, g, ans, x, s=None, axes=None, norm="backward"):
        t = in_rule(xp, op())(g, axes=axes, norm=norm)
        for axis in axes:
            t = resize(xp, t, axis, x.shape[axis])
        return like(xp, t, x)

    return vjp


def _rfft_vjp(xp, g, ans, x, n=None, axis=-1, norm="backward"):
    fftn = in_rule(xp, _fftn_op)
    full = n if n is not None else x.shape[axis]
    t = xp.real(fftn(resize(xp, g, axis, full), axes=(axis,), norm=norm))
    return resize(xp, t, axis, x.shape[axis])


def _irfft_vjp(xp, g, ans, x, n=None, axis=-1, norm="backward"):
    ifftn = in_rule(xp, _ifftn_op)
    full = n if n is not None else 2 * (x.shape[axis] - 1)
    k = full // 2 + 1
    t = ifftn(real_if_complex(xp, g), axes=(axis,), norm=norm)  # the output is real: so is its cotangent
    last = k - 1 if full % 2 == 0 else k  # for even n the last value (Nyquist) is counted once
    pieces = [t[along(axis, slice(0, 1))]]
    if last > 1:
        pieces.append(t[along(axis, slice(1, last))] * 2)
    if last < k:
        pieces.append(t[along(axis, slice(last, k))])
    t = xp.concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0]
    return like(xp, resize(xp, t, axis, x.shape[axis]), x)


# fmt: off
_DASK = {"dask": dask.FFT}
_fftn_op = defop("fftn", _fftn, _c2c_vjp(_fftn, lambda: _fftn_op), save="x.shape", refuses=_DASK, linear=True,
                 batch=fft_axes_rule("fftn", _fftn))
_ifftn_op = defop("ifftn", _ifftn, _c2c_vjp(_ifftn, lambda: _ifftn_op), save="x.shape", refuses=_DASK, linear=True,
                  batch=fft_axes_rule("ifftn", _ifftn))
_rfft_op = defop("rfft", _rfft, _rfft_vjp, save="x.shape", refuses=_DASK,
                 real_only="rfft, rfftn and ihfft take real input (as their names say)", linear=True, batch="axis")
_irfft_op = defop("irfft", _irfft, _irfft_vjp, save="x.shape", refuses=_DASK, linear=True, batch="axis")
# fmt: on
