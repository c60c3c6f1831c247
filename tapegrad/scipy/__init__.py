"""SciPy on tensors, with SciPy's names and signatures: ``import tapegrad.scipy.stats as stats`` where a program
imports ``scipy.stats`` (or autograd's ``autograd.scipy.stats``).

- :mod:`tapegrad.scipy.special`: the special functions, differentiable to any order (``gammaln``, ``digamma``,
  ``polygamma``, ``erfinv``, ``logsumexp``, ...). SciPy's own ufuncs on tensors dispatch to the same rules
  (``scipy.special.erf(t)`` is recorded); one without a rule raises naming ``scipy.special.<name>``.
- :mod:`tapegrad.scipy.stats`: distributions' ``logpdf``/``pdf``/``cdf``/``logcdf``/``logpmf``, differentiable
  in the point and every continuous parameter.
- :mod:`tapegrad.scipy.linalg`, :mod:`tapegrad.scipy.signal`, :mod:`tapegrad.scipy.misc`,
  :mod:`tapegrad.scipy.integrate` (``odeint``, differentiated by the adjoint method).

SciPy is an optional dependency (``pip install 'tapegrad[scipy]'``): ``import tapegrad`` works without it, and
importing ``tapegrad.scipy`` then raises an ``ImportError`` naming the extra. SciPy's Python functions that are
not ufuncs (``scipy.stats.norm.logpdf``, ``scipy.special.logsumexp``) cannot be told about tensors: on a tensor
being recorded they raise a ``TypeError`` naming the function and pointing here, never a silent constant.

>>> import numpy as np, tapegrad as tg
>>> from tapegrad.scipy import special
>>> tg.grad(lambda x: special.gammaln(x).sum())(np.array([1.0, 2.0]))  # digamma
array([-0.57721566,  0.42278434])
"""

try:
    import scipy  # noqa: F401  (only to say clearly that it is missing)
except ImportError as err:  # pragma: no cover  (the test suite has SciPy; tests/test_scipy.py checks the message)
    raise ImportError(
        "tapegrad.scipy needs SciPy, an optional dependency: pip install 'tapegrad[scipy]' (or pip install scipy)"
    ) from err

from . import integrate, linalg, misc, signal, special, stats  # noqa: E402

__all__ = ["integrate", "linalg", "misc", "signal", "special", "stats"]
