"""Training utilities under PyTorch's names (``torch.nn.utils``): gradient clipping.

The functions live in ``tapegrad.optim.clip`` (where ``clip_grad_norm`` and ``clip_grad_value`` remain as the
older names); this module gives them the path a PyTorch user types.

>>> import numpy as np, tapegrad as tg
>>> import tapegrad.nn.utils
>>> w = tg.Tensor([0.0, 0.0], requires_grad=True); w.grad = np.array([30.0, 40.0])
>>> float(tg.nn.utils.clip_grad_norm_([w], max_norm=5.0)), w.grad.round(6)
(50.0, array([3., 4.]))
"""

from ..optim.clip import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]
