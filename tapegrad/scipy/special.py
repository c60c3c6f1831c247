"""``scipy.special`` on tensors: SciPy's names and signatures, each a differentiable op (rules and derivatives
in :mod:`tapegrad.ops.special`), or tapegrad's own op where SciPy's function is one (``erf``, ``expit``, ``i0``,
``logsumexp``, ``softmax``).

>>> import tapegrad as tg
>>> from tapegrad.scipy import special
>>> x = tg.Tensor([0.25, 0.5], requires_grad=True)
>>> with tg.record():
...     y = special.xlogy(x, special.expit(x)).sum()
>>> y.backward(); x.grad.round(6)
array([-0.466484, -0.285307])
"""

from ..ops.special import SPECIAL
from ._types import like_scipy

globals().update({name: like_scipy(f) for name, f in SPECIAL.items()})  # SciPy's types on arrays
__all__ = sorted(SPECIAL)
