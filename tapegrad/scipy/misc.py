"""``autograd.scipy.misc``' one function: ``logsumexp`` (SciPy moved it to ``scipy.special``), here
:func:`tapegrad.scipy.special.logsumexp`.

>>> import numpy as np
>>> from tapegrad.scipy import misc
>>> misc.logsumexp(np.zeros(4))
Tensor(1.38629436)
"""

from ..ops.special import logsumexp

__all__ = ["logsumexp"]
