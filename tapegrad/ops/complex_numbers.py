"""Parts of complex numbers: real, imag, conj (conjugate) and angle, with rules for tapegrad's convention.

For a real loss L of ``z = x + iy`` the gradient is ``dL/dx - i dL/dy`` (JAX's and HIPS autograd's
convention, ``docs/guide/complex.md``). These four functions are not holomorphic, so their rules follow from it:

=========  ====================  =============================================
op         value                 gradient, for a cotangent g of the output
=========  ====================  =============================================
real       x                     Re(g)
imag       y                     -i Re(g)
conj       x - iy                conj(g)
angle      atan2(y, x)           -i Re(g) / z   (0 at z = 0)
=========  ====================  =============================================

``real``, ``imag`` and ``angle`` have real outputs, so their rules read only the real part of ``g`` (a later
complex op may leave a meaningless imaginary part on the cotangent of a real value). On real input they are
the identity, zero and a step (0 or pi): gradients g, 0 and 0.
"""

import numpy as np

from ..registry import defop
from ._complex import is_complex, real_if_complex


def _real(x, *, xp=np):
    return xp.real(x)


def _imag(x, *, xp=np):
    return xp.imag(x) if is_complex(x) else xp.zeros_like(x)  # the standard has imag for complex dtypes only


def _angle(x, *, xp=np):
    angle = getattr(xp, "angle", None)  # the array API has none: atan2 of the parts
    if angle is not None:
        return angle(x)
    if not is_complex(x):
        return xp.atan2(xp.zeros_like(x), x)
    return xp.atan2(xp.imag(x), xp.real(x))


def _real_vjp(xp, g, ans, x):
    g = real_if_complex(xp, g)
    return xp.astype(g, x.dtype) if is_complex(x) else g


def _imag_vjp(xp, g, ans, x):
    g = real_if_complex(xp, g)
    if not is_complex(x):
        return xp.zeros_like(g)
    return xp.astype(g, x.dtype) * -1j


def _conj_vjp(xp, g, ans, x):
    return xp.conj(g) if is_complex(x) else real_if_complex(xp, g)


def _angle_vjp(xp, g, ans, x):
    g = real_if_complex(xp, g)
    if not is_complex(x):
        return xp.zeros_like(g)  # a step function: 0 almost everywhere
    zero = x == 0
    safe = xp.where(zero, 1, x)
    return xp.where(zero, 0, xp.astype(g, x.dtype) * -1j / safe)


# fmt: off
real = defop("real", _real, _real_vjp, save="x.shape", elementwise=True, view=True,
             doc="The real part (the input itself when it is real).\n\n"
                 ">>> import tapegrad as tg\n>>> tg.real(tg.Tensor([1.0 + 2.0j]))\nTensor([1.])")
imag = defop("imag", _imag, _imag_vjp, save="x.shape", elementwise=True, view=True,
             doc="The imaginary part (zeros when the input is real).\n\n"
                 ">>> import tapegrad as tg\n>>> tg.imag(tg.Tensor([1.0 + 2.0j]))\nTensor([2.])")
conj = defop("conj", lambda x, *, xp=np: xp.conj(x), _conj_vjp, save="x.shape", elementwise=True, view=True,
             doc="The complex conjugate x - iy (the input itself when it is real); also ``conjugate``.\n\n"
                 ">>> import tapegrad as tg\n>>> tg.conj(tg.Tensor([1.0 + 2.0j]))\nTensor([1.-2.j], dtype=complex128)")
angle = defop("angle", _angle, _angle_vjp, save="x", elementwise=True,
              doc="The argument atan2(imag, real) in radians; its gradient is -i Re(g) / z, and 0 at z = 0.\n\n"
                  ">>> import tapegrad as tg\n>>> tg.angle(tg.Tensor([1.0j]))\nTensor([1.57079633])")
# fmt: on
conjugate = conj
