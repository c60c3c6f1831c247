"""Datasets, PyTorch's map-style protocol: ``len(ds)`` and ``ds[i]`` (one sample).

``TensorDataset`` indexes several arrays together along their first axis; ``Subset`` is a view of chosen
indices; ``random_split`` splits a dataset into disjoint random subsets (by lengths or fractions) from a
seeded generator. Samples are NumPy arrays (rows, or NumPy scalars for 1-d arrays); the data loader's default
collate stacks them into Tensors.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

from .._tensor import Tensor

__all__ = ["Dataset", "TensorDataset", "Subset", "random_split"]


def _generator(rng, owner: str) -> np.random.Generator:
    """A NumPy Generator from one, from a seed, or (None) from fresh entropy."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise TypeError(f"{owner}: generator must be a numpy.random.Generator, a seed or None, got {type(rng).__name__}")


class Dataset:
    """Base class of map-style datasets: subclasses define ``__getitem__(i)`` (one sample) and ``__len__``.

    >>> import numpy as np
    >>> from tapegrad.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, i):
    ...         return np.float64(i * i)
    >>> [float(Squares()[i]) for i in range(4)]
    [0.0, 1.0, 4.0, 9.0]
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index), returning one sample")


class TensorDataset(Dataset):
    """Arrays (or Tensors, by their values) indexed together: sample ``i`` is ``(a[i], b[i], ...)``.

    >>> import numpy as np
    >>> from tapegrad.data import TensorDataset
    >>> ds = TensorDataset(np.arange(6.0).reshape(3, 2), np.array([0, 1, 0]))
    >>> len(ds), ds[1]
    (3, (array([2., 3.]), np.int64(1)))
    """

    def __init__(self, *tensors):
        arrays = tuple(np.asarray(t.data if isinstance(t, Tensor) else t) for t in tensors)
        if not arrays:
            raise ValueError("TensorDataset needs at least one array")
        for a in arrays:
            if a.ndim == 0:
                raise ValueError("TensorDataset: every array needs a first axis to index (got a 0-d array)")
        sizes = [len(a) for a in arrays]
        if len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: the arrays' first axes differ ({sizes}); they must all be as long")
        self.tensors = arrays

    def __getitem__(self, index):
        return tuple(a[index] for a in self.tensors)

    def __len__(self) -> int:
        return len(self.tensors[0])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    >>> import numpy as np
    >>> from tapegrad.data import Subset, TensorDataset
    >>> sub = Subset(TensorDataset(np.arange(10)), [7, 2])
    >>> len(sub), sub[0]
    (2, (np.int64(7),))
    """

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        inner = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths: Sequence[int | float], generator=None) -> list[Subset]:
    """Split ``dataset`` into disjoint random subsets of the given ``lengths``, or of the given fractions
    (summing to 1; ``floor(n * f)`` each, the remainder handed out one by one from the first, as PyTorch
    does). ``generator`` is a NumPy Generator or a seed; None draws fresh entropy.

    >>> import numpy as np
    >>> from tapegrad.data import TensorDataset, random_split
    >>> train, test = random_split(TensorDataset(np.arange(10)), [0.7, 0.3], generator=0)
    >>> len(train), len(test), sorted(train.indices + test.indices) == list(range(10))
    (7, 3, True)
    """
    n = len(dataset)
    lengths = list(lengths)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} must be in [0, 1], got {frac}")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0", UserWarning, stacklevel=2)
        lengths = sizes
    for i, size in enumerate(lengths):
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
            raise ValueError(
                f"random_split: lengths must be integers >= 0 or fractions summing to 1, got {size!r} at {i}"
            )
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths sum to {sum(lengths)}, the dataset has {n} samples")
    order = _generator(generator, "random_split").permutation(n).tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, order[start : start + size]))
        start += size
    return out
