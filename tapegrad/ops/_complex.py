"""Dtype facts the rules need for complex numbers, for NumPy, array API and tensor dtypes alike.

The convention every rule follows (JAX's and HIPS autograd's, see ``docs/guide/complex.md``): for a real loss L of
``z = x + iy`` the gradient is ``dL/dx - i dL/dy``, so a holomorphic ``f`` has the rule ``g * f'(z)``, with no
conjugation. A real input that meets complex values gets the real part of its cotangent (:func:`like`), the
adjoint of the embedding of the reals in the complex numbers.
"""

import numpy as np

from ..backend import is_complex

__all__ = ["is_complex", "complex_dtype", "like", "real_if_complex", "data_of", "finfo_eps"]


def complex_dtype(xp, dtype):
    """The complex dtype of ``dtype``'s precision in namespace ``xp`` (complex64 for float32)."""
    if is_complex(dtype):
        return dtype
    return xp.complex64 if dtype == xp.float32 else xp.complex128


def like(xp, grad, x):
    """``grad`` for input ``x``: its real part when ``x`` is real and ``grad`` complex, else ``grad``."""
    if grad is None or not is_complex(grad) or is_complex(x):
        return grad
    return xp.real(grad)


def real_if_complex(xp, a):
    """The real part of a complex ``a``; a real ``a`` as it is (a cotangent of a real output may carry a
    meaningless imaginary part from a later complex op: rules of real-valued functions drop it)."""
    return xp.real(a) if is_complex(a) else a


def data_of(a):
    """The array under a tensor (a recorded replay hands rules tensors), for checks that read values."""
    from_tensor = getattr(a, "_data", None)
    return a if from_tensor is None else from_tensor


def finfo_eps(dtype) -> float:
    """Machine epsilon of a floating or complex dtype of any library (found by its name)."""
    name = str(dtype)
    if name.endswith(("float32", "complex64")):
        return float(np.finfo(np.float32).eps)
    if name.endswith("float16"):
        return float(np.finfo(np.float16).eps)
    return float(np.finfo(np.float64).eps)
