"""Samplers: the order in which a ``DataLoader`` visits a dataset, as in ``torch.utils.data``."""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

from rustgrad._random import randint, randperm
from rustgrad._rustgrad import Generator
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler"]


class Sampler:
    """Base class: an iterable of indices (or, for a batch sampler, of lists of indices)."""

    def __init__(self, data_source: Any = None) -> None:
        pass


def _private_generator() -> Generator:
    """A generator seeded from the default one, as torch's samplers make when given none."""
    seed = int(randint(0, 2**62, (1,)).item())
    return Generator().manual_seed(seed)


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (or, with ``replacement``, ``num_samples`` indices drawn
    uniformly), from ``generator`` when given: the same seed gives the same order."""

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: Optional[int] = None,
                 generator: Optional[Generator] = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise ArgumentTypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise InvalidArgumentError(
                f"num_samples should be a positive integer value, but got num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _private_generator()
        if self.replacement:
            yield from randint(0, n, (self.num_samples,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=generator).tolist()
        yield from randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order."""

    def __init__(self, indices: Sequence[int], generator: Optional[Generator] = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler: Any, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise InvalidArgumentError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise InvalidArgumentError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
