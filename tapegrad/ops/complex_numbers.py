"""Parts of complex numbers: real, imag, conj (conjugate), angle and sign, with rules for tapegrad's convention.

For a real loss L of ``z = x + iy`` the gradient is ``dL/dx - i dL/dy`` (JAX's and HIPS autograd's
convention, ``docs/guide/complex.md``). These functions are not holomorphic, so their rules follow from it: a
function f with Wirtinger derivatives df/dz and df/dz* has the rule ``g df/dz + conj(g) conj(df/dz*)``.

=========  ====================  =============================================
op         value                 gradient, for a cotangent g of the output
=========  ====================  =============================================
real       x                     Re(g)
imag       y                     -i Re(g)
conj       x - iy                conj(g)
angle      atan2(y, x)           -i Re(g) / z   (0 at z = 0)
sign       z / |z|               (g - conj(g) conj(s)^2) / (2 |z|), s = sign(z)   (0 at z = 0)
=========  ====================  =============================================

``real``, ``imag`` and ``angle`` have real outputs, so their rules read only the real part of ``g`` (a later
complex op may leave a meaningless imaginary part on the cotangent of a real value). On real input they are
the identity, zero and a step (0 or pi): gradients g, 0 and 0. ``sign`` of real input is a step too (-1, 0
or 1, piecewise constant): a constant, never recorded, as the rounding functions; of complex input it is z / |z|,
smooth away from 0, and recorded (PyTorch calls it ``sgn``).
"""

import numpy as np

from ..registry import defnondiff, defop
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


def _sign_vjp(xp, g, ans, x):
    # s = z / |z|: ds/dz = 1 / (2|z|), ds/dz* = -z^2 / (2|z|^3), so g ds/dz + conj(g) conj(ds/dz*) is
    # (g - conj(g) conj(s)^2) / (2|z|); 0 at z = 0, where s jumps (the subgradient |z| has there)
    r = xp.absolute(x)
    zero = r == 0
    sc = xp.conj(ans)
    return xp.where(zero, 0, (g - xp.conj(g) * sc * sc) / (2 * xp.where(zero, 1, r)))


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
_real_sign = defnondiff("sign", np.sign)
_complex_sign = defop("sign_complex", lambda x, *, xp=np: xp.sign(x), _sign_vjp, save="x ans", jvp="transpose", batch="leading")
# fmt: on
conjugate = conj


def sign(x):
    """-1, 0 or 1 by the sign of a real x, a constant (its derivative is 0 wherever it exists); z / |z| (0 at 0)
    for a complex z, which is smooth away from 0 and has a gradient (PyTorch's ``sgn``; see this module's table).

    >>> import tapegrad as tg
    >>> tg.sign(tg.Tensor([-2.0, 0.0, 3.0]))
    Tensor([-1.,  0.,  1.])
    >>> tg.sign(tg.Tensor([3.0 + 4.0j]))
    Tensor([0.6+0.8j], dtype=complex128)
    """
    return _complex_sign(x) if is_complex(x) else _real_sign(x)
