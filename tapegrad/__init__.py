"""tapegrad: reverse-mode automatic differentiation for NumPy on a gradient tape (a Wengert list).

Training lives beside the engine: ``tapegrad.nn`` (modules, layers, losses), ``tapegrad.optim`` (optimizers,
clipping, schedules), and ``tapegrad.save`` / ``tapegrad.load`` (checkpoints without pickle); ``tapegrad.numpy``
is NumPy's namespace on tensors (``import tapegrad.numpy as np``), and NumPy's own functions record on them. The layers of
the package, and what may import what, are described in docs/architecture.md.

>>> import tapegrad as tg
>>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
>>> with tg.record():
...     loss = (w * w).sum()
>>> loss.backward()
>>> w.grad
array([2., 4.])
"""

from . import (
    compile,
    convenience,
    data,
    debug,
    explorer,
    fft,
    linalg,
    nn,
    numpy,  # noqa: F401  (tapegrad.numpy; importing it puts NumPy's protocols on Tensor)
    ops,
    optim,
    random,
    tape,
    tensor_methods,
    viz,
)
from ._tensor import Tensor, tensor
from .batching import vmap
from .convenience import *  # noqa: F403  (its conveniences; convenience.__all__ lists them once)
from .custom import CustomOp, custom_op
from .debug import detect_anomaly
from .errors import (
    AnomalyError,
    CheckpointError,
    GradcheckError,
    InPlaceModificationError,
    TapeBudgetError,
    TapeError,
    TapeEscapeWarning,
    TapeLeakWarning,
    TracingError,
)
from .explorer import explore
from .lazy import compute
from .ops import *  # noqa: F403  (every op function; ops.__all__ lists them once)
from .profiler import profile
from .recompute import checkpoint
from .registry import NONDIFF, REGISTRY, defnondiff, defop
from .serialization import load, save
from .tape import Tape, record, stop_recording
from .testing import gradcheck, gradgradcheck
from .transforms import grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize, value_and_grad, vjp

del tensor_methods  # imported for its effect: Tensor's operators and methods are bound

abs = ops.absolute


def stop_gradient(x):
    """``x.detach()`` as a function (TensorFlow and JAX spelling): gradient flow stops here.

    >>> import tapegrad as tg
    >>> tg.stop_gradient(tg.Tensor(1.0, requires_grad=True)).requires_grad
    False
    """
    return x.detach() if isinstance(x, Tensor) else Tensor(x)


# the package's one version: setup.cfg reads it from here (`attr:`), CHANGELOG.md says what each version changed;
# a constant, since reading the installed metadata cost every import a search of sys.path
__version__ = "0.3.0"

__all__ = [
    "Tensor",
    "compute",
    "tensor",
    "record",
    "stop_recording",
    "stop_gradient",
    "Tape",
    "tape",
    "TapeError",
    "InPlaceModificationError",
    "TapeBudgetError",
    "checkpoint",
    "profile",
    "compile",
    "TracingError",
    "random",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "data",
    "debug",
    "explore",
    "explorer",
    "fft",
    "linalg",
    "viz",
    "nn",
    "optim",
    "ops",
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
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacobian",
    "jacfwd",
    "jacrev",
    "linearize",
    "hessian",
    "hvp",
    "vmap",
    *convenience.__all__,
    "custom_op",
    "CustomOp",
    "abs",
] + ops.__all__
