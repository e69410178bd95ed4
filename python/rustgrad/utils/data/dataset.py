"""Datasets: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``, ``ConcatDataset`` and
``random_split``, as in ``torch.utils.data``."""

from __future__ import annotations

import bisect
import math
import warnings
from typing import Any, Iterable, Optional, Sequence, Union

from rustgrad._random import default_generator, randperm
from rustgrad._rustgrad import Generator, Tensor
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, ShapeError

__all__ = ["ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and usually ``__len__``."""

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``. With ``num_workers > 0`` every
    worker thread iterates its own ``iter(dataset)``, as torch's worker processes do; use
    ``get_worker_info()`` inside ``__iter__`` to give each worker its share."""


class TensorDataset(Dataset):
    """Samples are the tensors' rows: ``dataset[i] == tuple(t[i] for t in tensors)``."""

    def __init__(self, *tensors: Tensor) -> None:
        for t in tensors:
            if not isinstance(t, Tensor):
                raise ArgumentTypeError(f"TensorDataset takes tensors, got {type(t).__name__}")
        if tensors and any(t.dim() == 0 or t.shape[0] != tensors[0].shape[0] for t in tensors):
            shapes = ", ".join(str(list(t.shape)) for t in tensors)
            raise ShapeError(f"Size mismatch between tensors: TensorDataset got shapes {shapes}; every tensor needs "
                             "at least one dimension and the same size of dimension 0")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0] if self.tensors else 0


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after the other."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise InvalidArgumentError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise InvalidArgumentError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes: list[int] = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise InvalidArgumentError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


def random_split(dataset: Any, lengths: Sequence[Union[int, float]],
                 generator: Optional[Generator] = default_generator) -> list[Subset]:
    """Splits ``dataset`` into non-overlapping random subsets of the given lengths, or of the given
    fractions of its length (the remainder goes one by one to the first subsets, as torch)."""
    n = len(dataset)
    total = float(sum(float(length) for length in lengths))
    if math.isclose(total, 1) and total <= 1:
        sizes = [int(math.floor(n * float(frac))) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    else:
        sizes = [int(length) for length in lengths]
        if sizes != list(lengths) or sum(sizes) != n:
            raise InvalidArgumentError(
                f"Sum of input lengths does not equal the length of the input dataset! random_split got lengths "
                f"{list(lengths)} for a dataset of {n}; pass whole numbers summing to {n}, or fractions summing to 1"
            )
    order = randperm(n, generator=generator).tolist()
    subsets, offset = [], 0
    for size in sizes:
        subsets.append(Subset(dataset, order[offset:offset + size]))
        offset += size
    return subsets
