"""tapegrad: reverse-mode automatic differentiation for NumPy on a gradient tape (a Wengert list).

Training lives beside the engine: ``tapegrad.nn`` (modules, layers, losses), ``tapegrad.optim`` (optimizers,
clipping, schedules), and ``tapegrad.save`` / ``tapegrad.load`` (checkpoints without pickle).

>>> import tapegrad as tg
>>> from tapegrad import tape
>>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
>>> with tape.record():
...     loss = (w * w).sum()
>>> loss.backward()
>>> w.grad
array([2., 4.])
"""

# isort: off
from .tensor import Tensor, tensor  # first: the ops and the tape build on the Tensor class
from . import tape

# isort: on
from . import debug, nn, ops, optim, viz  # after the engine: they build on it
from .budget import TapeBudgetError
from .checkpoint import checkpoint
from .custom import CustomOp, custom_op
from .debug import AnomalyError, TapeEscapeWarning, TapeLeakWarning, detect_anomaly
from .functional import grad, hessian, hvp, jacobian, jvp, value_and_grad, vjp
from .ops import *  # noqa: F403  (every op function; ops.__all__ lists them once)
from .registry import NONDIFF, REGISTRY, defnondiff, defop, unbroadcast
from .serialization import CheckpointError, load, save
from .tape import InPlaceModificationError, Tape, TapeError, record, stop_recording
from .testing import GradcheckError, gradcheck, gradgradcheck

abs = ops.absolute


def stop_gradient(x):
    """``x.detach()`` as a function (TensorFlow and JAX spelling): gradient flow stops here.

    >>> import tapegrad as tg
    >>> tg.stop_gradient(tg.Tensor(1.0, requires_grad=True)).requires_grad
    False
    """
    return x.detach() if isinstance(x, Tensor) else Tensor(x)


__version__ = "0.1.0"

__all__ = [
    "Tensor",
    "tensor",
    "tape",
    "debug",
    "viz",
    "record",
    "stop_recording",
    "stop_gradient",
    "Tape",
    "TapeError",
    "InPlaceModificationError",
    "TapeBudgetError",
    "checkpoint",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "nn",
    "optim",
    "save",
    "load",
    "CheckpointError",
    "detect_anomaly",
    "AnomalyError",
    "TapeLeakWarning",
    "TapeEscapeWarning",
    "REGISTRY",
    "NONDIFF",
    "defop",
    "defnondiff",
    "unbroadcast",
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacobian",
    "hessian",
    "hvp",
    "custom_op",
    "CustomOp",
    "abs",
] + ops.__all__
