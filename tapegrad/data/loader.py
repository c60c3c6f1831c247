"""``DataLoader``: batches of a dataset, shuffled from a seeded generator, with a checkpointable position.

Each ``iter(loader)`` is one epoch: the sampler gives the epoch's order (for ``shuffle=True`` a permutation
from the loader's generator), which is cut into batches of ``batch_size`` indices (the last one shorter
unless ``drop_last``); each batch's samples go through ``collate_fn``. The default collate stacks them
into Tensors, as PyTorch's does: arrays and Tensors are stacked along a new first axis, Python numbers
become int64, float64 or bool arrays, tuples and lists are collated field by field (into a list), dicts
key by key, strings are kept in a list. Batches of a ``TensorDataset`` (or of ``Subset``s of one) are sliced
in one go, with the same result.

``state_dict()`` holds the position: how many epochs have begun, the current epoch's order, how many of its
batches have been handed out, and the sampler's state (its generator's). After ``load_state_dict(state)``
the next ``iter(loader)`` continues that epoch from the next batch, and later epochs draw what they would
have drawn, so a run resumed mid-epoch continues bit for bit. ``tapegrad.save`` stores the state.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .._tensor import Tensor
from .dataset import Subset, TensorDataset, _generator
from .sampler import RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate"]


def _stack(arrays: list) -> np.ndarray:
    shapes = {np.shape(a) for a in arrays}
    if len(shapes) > 1:
        raise ValueError(
            f"default_collate: samples of shapes {sorted(shapes)} cannot be stacked into one batch; give them equal "
            "shapes (pad them) or pass collate_fn="
        )
    return np.stack(arrays)


def default_collate(batch: list):
    """Combine a list of samples into a batch: arrays and Tensors into one stacked Tensor, numbers into a
    Tensor, tuples/lists field by field (giving a list), dicts key by key, strings into a list.

    >>> import numpy as np
    >>> from tapegrad.data import default_collate
    >>> x, y = default_collate([(np.array([1.0, 2.0]), 0), (np.array([3.0, 4.0]), 1)])
    >>> x.shape, y.data
    ((2, 2), array([0, 1]))
    >>> default_collate([{"id": "a", "v": 1.5}, {"id": "b", "v": 2.5}])["id"]
    ['a', 'b']
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return Tensor(_stack([b.data for b in batch]))
    if isinstance(elem, (np.ndarray, np.generic)):
        if elem.dtype.kind in "OSUV":
            raise TypeError(f"default_collate: arrays of dtype {elem.dtype} cannot be batched; pass collate_fn=")
        return Tensor(_stack(batch))
    if isinstance(elem, bool):
        return Tensor(np.array(batch, dtype=bool))
    if isinstance(elem, numbers.Integral):
        return Tensor(np.array(batch, dtype=np.int64))
    if isinstance(elem, numbers.Real):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple keeps its type
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, Sequence):
        if len({len(b) for b in batch}) > 1:
            raise ValueError("default_collate: every sample in a batch must have the same number of fields")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate: samples of type {type(elem).__name__} cannot be batched; pass collate_fn=")


def _tensor_source(dataset):
    """(arrays, indices or None) when ``dataset`` is a TensorDataset or Subsets of one: slice it directly."""
    index = None
    while isinstance(dataset, Subset):
        outer = np.asarray(dataset.indices, dtype=np.int64)
        index = outer if index is None else outer[index]
        dataset = dataset.dataset
    if type(dataset) is TensorDataset:
        return dataset.tensors, index
    return None


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``, optionally shuffled from a seeded generator.

    ``generator`` (or ``rng``, the name tapegrad's layers use) is a ``numpy.random.Generator`` or a seed; it
    draws each epoch's permutation when ``shuffle=True``. ``sampler`` gives the order instead (any iterable of
    indices with a ``len()``). ``len(loader)`` is the number of batches per epoch.

    >>> import numpy as np
    >>> from tapegrad.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
    >>> loader = DataLoader(ds, batch_size=2, shuffle=True, generator=0)
    >>> len(loader), [y.data.tolist() for x, y in loader]
    (3, [[2, 4], [3, 0], [1]])
    """

    def __init__(
        self,
        dataset,
        batch_size: int = 1,
        shuffle: bool = False,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        *,
        drop_last: bool = False,
        generator=None,
        rng=None,
    ):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be an integer >= 1, got {batch_size!r}")
        if batch_sampler is not None:
            raise ValueError("DataLoader: batch_sampler is not supported; pass sampler= and batch_size=")
        if num_workers != 0:
            raise ValueError(
                f"DataLoader: loading happens in the calling process; num_workers must be 0, got {num_workers}"
            )
        if generator is not None and rng is not None:
            raise TypeError("DataLoader: pass generator= or rng= (the same thing), not both")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler= gives the order itself; it cannot be combined with shuffle=True")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {type(collate_fn).__name__}")
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(f"DataLoader needs a dataset with __getitem__ and __len__, got {type(dataset).__name__}")
        self.dataset, self.batch_size, self.drop_last = dataset, int(batch_size), bool(drop_last)
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        self.generator = None
        if sampler is None:
            if shuffle:
                self.generator = _generator(rng if generator is None else generator, "DataLoader")
                sampler = RandomSampler(dataset, generator=self.generator)
            else:
                sampler = SequentialSampler(dataset)
        self.sampler = sampler
        self._epoch, self._order, self._position, self._resume = 0, None, 0, False

    def __len__(self) -> int:
        return self._batches_in(len(self.sampler))

    def _batches_in(self, n: int) -> int:
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def __iter__(self):
        if not (self._resume and self._order is not None and self._position < self._batches_in(len(self._order))):
            draw = getattr(self.sampler, "_draw", None)
            order = draw() if draw is not None else np.fromiter(iter(self.sampler), dtype=np.int64)
            self._epoch, self._order, self._position = self._epoch + 1, order, 0
        self._resume = False
        return self._batches(self._order, self._position)

    def _batches(self, order: np.ndarray, start: int):
        source = _tensor_source(self.dataset) if self.collate_fn is default_collate else None
        bs = self.batch_size
        for k in range(start, self._batches_in(len(order))):
            idx = order[k * bs : (k + 1) * bs]
            if source is not None:
                arrays, index = source
                rows = idx if index is None else index[idx]
                batch = [Tensor(a[rows]) for a in arrays]
            else:
                fetch = getattr(self.dataset, "__getitems__", None)
                samples = fetch(idx.tolist()) if fetch is not None else [self.dataset[i] for i in idx.tolist()]
                batch = self.collate_fn(samples)
            if self._order is order:  # a newer epoch's iterator owns the position
                self._position = k + 1
            yield batch

    # -- checkpoints ------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The loader's position: ``epoch`` (epochs begun), ``order`` (this epoch's indices), ``position``
        (batches handed out in it) and ``sampler`` (the sampler's state, or None if it has none).

        >>> import numpy as np
        >>> from tapegrad.data import DataLoader, TensorDataset
        >>> loader = DataLoader(TensorDataset(np.arange(6)), batch_size=2, shuffle=True, generator=0)
        >>> batches = iter(loader); _ = next(batches)
        >>> state = loader.state_dict(); state["epoch"], state["position"], state["order"].tolist()
        (1, 1, [3, 2, 5, 4, 0, 1])
        """
        sampler_state = getattr(self.sampler, "state_dict", None)
        return {
            "epoch": self._epoch,
            "position": self._position,
            "order": None if self._order is None else self._order.copy(),
            "sampler": sampler_state() if sampler_state is not None else None,
        }

    def load_state_dict(self, state: dict) -> None:
        """Resume from a ``state_dict()``: the next ``iter(loader)`` continues the saved epoch at the next
        batch. Checks the state first (keys, order and position against this loader's dataset and batch
        size) and changes nothing when it does not fit.

        >>> import numpy as np
        >>> from tapegrad.data import DataLoader, TensorDataset
        >>> ds = TensorDataset(np.arange(6))
        >>> a = DataLoader(ds, batch_size=2, shuffle=True, generator=0); it = iter(a); _ = next(it)
        >>> b = DataLoader(ds, batch_size=2, shuffle=True, generator=99); b.load_state_dict(a.state_dict())
        >>> [x.data.tolist() for (x,) in b] == [x.data.tolist() for (x,) in it]
        True
        """
        where = "DataLoader.load_state_dict"
        if not isinstance(state, dict) or set(state) != {"epoch", "position", "order", "sampler"}:
            raise ValueError(f"{where}: expected a dict with 'epoch', 'position', 'order' and 'sampler'")
        epoch, position, order = state["epoch"], state["position"], state["order"]
        for name, value in (("epoch", epoch), ("position", position)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"{where}: '{name}' must be an integer >= 0, got {value!r}")
        if order is not None:
            order = np.asarray(order)
            if order.ndim != 1 or order.dtype.kind not in "iu":
                raise ValueError(
                    f"{where}: 'order' must be a 1-d integer array, got {order.dtype} of shape {order.shape}"
                )
            if len(order) != len(self.sampler):
                raise ValueError(
                    f"{where}: the saved epoch has {len(order)} indices, this sampler gives {len(self.sampler)}"
                )
            if len(order) and (order.min() < 0 or order.max() >= len(self.dataset)):
                raise ValueError(f"{where}: 'order' has indices outside this dataset of {len(self.dataset)} samples")
            if position > self._batches_in(len(order)):
                raise ValueError(
                    f"{where}: position {position} is past the epoch's {self._batches_in(len(order))} batches"
                )
        loads = getattr(self.sampler, "load_state_dict", None)
        if (state["sampler"] is None) != (loads is None):
            raise ValueError(
                f"{where}: the state {'has no' if state['sampler'] is None else 'has a'} sampler state and this "
                f"loader's {type(self.sampler).__name__} {'keeps one' if loads is not None else 'keeps none'} "
                "(was it saved with another shuffle or sampler?)"
            )
        if loads is not None:
            loads(state["sampler"])
        self._epoch, self._position = int(epoch), int(position)
        self._order = None if order is None else np.array(order, dtype=np.int64)
        self._resume = True
