"""Samplers: the order in which a data loader visits a dataset's indices.

``SequentialSampler`` visits ``0 .. n-1``; ``RandomSampler`` a fresh permutation each epoch (or draws with
replacement) from its NumPy generator, whose state is its ``state_dict()``. Any iterable of indices with a
``len()`` works as a sampler; one with ``state_dict``/``load_state_dict`` is checkpointed with the loader.
"""

from __future__ import annotations

import numbers

import numpy as np

from .dataset import _generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler"]


class Sampler:
    """Base class: ``iter(sampler)`` gives dataset indices, ``len(sampler)`` how many per epoch.

    >>> from tapegrad.data import Sampler
    >>> class Backwards(Sampler):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(self.n - 1, -1, -1))
    ...     def __len__(self):
    ...         return self.n
    >>> list(Backwards(3))
    [2, 1, 0]
    """

    def __iter__(self):
        return iter(self._draw().tolist())

    def _draw(self) -> np.ndarray:
        """One epoch's indices as an int64 array (subclasses draw them in one go)."""
        return np.fromiter(iter(self), dtype=np.int64)

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class SequentialSampler(Sampler):
    """The indices ``0, 1, ..., len(data_source) - 1``.

    >>> from tapegrad.data import SequentialSampler
    >>> list(SequentialSampler(range(3)))
    [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def _draw(self) -> np.ndarray:
        return np.arange(len(self.data_source), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order each epoch: a permutation (several, for ``num_samples`` beyond the dataset), or
    ``num_samples`` draws with replacement. ``generator`` is a NumPy Generator or a seed.

    >>> from tapegrad.data import RandomSampler
    >>> s = RandomSampler(range(5), generator=0)
    >>> sorted(s), len(s)
    ([0, 1, 2, 3, 4], 5)
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement must be True or False, got {replacement!r}")
        if num_samples is not None and (
            isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) or num_samples <= 0
        ):
            raise ValueError(f"RandomSampler: num_samples must be a positive integer, got {num_samples!r}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = _generator(generator, "RandomSampler")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _draw(self) -> np.ndarray:
        n, k = len(self.data_source), self.num_samples
        if self.replacement:
            return self.generator.integers(0, n, size=k, dtype=np.int64)
        parts = [self.generator.permutation(n) for _ in range(k // n)]
        if k % n:
            parts.append(self.generator.permutation(n)[: k % n])
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    def __len__(self) -> int:
        return self.num_samples

    def state_dict(self) -> dict:
        """The generator's state, so the epochs after a checkpoint draw the same orders.

        >>> from tapegrad.data import RandomSampler
        >>> sorted(RandomSampler(range(3), generator=0).state_dict())
        ['generator']
        """
        return {"generator": self.generator.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Restore the generator's state saved by ``state_dict()``."""
        try:
            self.generator.bit_generator.state = state["generator"]
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"RandomSampler.load_state_dict: not a generator state of this sampler ({err})") from None
