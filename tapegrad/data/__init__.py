"""Data loading with PyTorch's names (``torch.utils.data``): datasets, samplers and a checkpointable loader.

>>> import numpy as np, tapegrad as tg
>>> from tapegrad.data import DataLoader, TensorDataset, random_split
>>> X, y = np.random.default_rng(0).normal(size=(100, 3)), np.arange(100) % 2
>>> train, test = random_split(TensorDataset(X, y), [0.8, 0.2], generator=0)
>>> loader = DataLoader(train, batch_size=32, shuffle=True, generator=0)
>>> [(xb.shape, yb.dtype) for xb, yb in loader][-1]
((16, 3), dtype('int64'))
"""

from .dataset import Dataset, Subset, TensorDataset, random_split
from .loader import DataLoader, default_collate
from .sampler import RandomSampler, Sampler, SequentialSampler

__all__ = [
    "Dataset",
    "TensorDataset",
    "Subset",
    "random_split",
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "DataLoader",
    "default_collate",
]
