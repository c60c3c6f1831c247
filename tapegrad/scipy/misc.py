"""``autograd.scipy.misc``' one function: ``logsumexp`` (SciPy moved it to ``scipy.special``), here
:func:`tapegrad.scipy.special.logsumexp`.

>>> import numpy as np
>>> from tapegrad.scipy import misc
>>> misc.logsumexp(np.zeros(4))
np.float64(1.3862943611198906)
"""

from .special import logsumexp

__all__ = ["logsumexp"]
