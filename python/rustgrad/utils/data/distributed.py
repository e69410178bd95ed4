"""``DistributedSampler``: each rank visits its own share of a dataset, as in
``torch.utils.data.distributed``."""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional

from rustgrad._random import randperm
from rustgrad._rustgrad import Generator
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Rank ``rank`` of ``num_replicas`` gets indices ``rank, rank + num_replicas, ...`` of the epoch's
    order, so the ranks' shares are disjoint and equally long.

    The rules are torch's: with ``shuffle`` the order is a permutation drawn from a generator seeded with
    ``seed + epoch`` (call ``set_epoch`` before each epoch for a new one; every rank must use the same
    ``seed``); without ``drop_last`` the order is padded by repeating its first indices up to a multiple of
    ``num_replicas``, and with it the tail that does not divide evenly is dropped. The permutation comes from
    rustgrad's generator, so for a given seed the order differs from torch's, while the partition rules are
    the same. ``num_replicas`` and ``rank`` default to the process group's world size and rank.
    """

    def __init__(self, dataset: Any, num_replicas: Optional[int] = None, rank: Optional[int] = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from rustgrad import distributed

            if num_replicas is None:
                num_replicas = distributed.get_world_size()
            if rank is None:
                rank = distributed.get_rank()
        for name, value in (("num_replicas", num_replicas), ("rank", rank), ("seed", seed)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ArgumentTypeError(f"DistributedSampler: {name} must be an int, got {type(value).__name__}")
        if num_replicas < 1:
            raise InvalidArgumentError(f"DistributedSampler: num_replicas must be at least 1, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise InvalidArgumentError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices: list[int] = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            elif indices:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch, which (with ``shuffle``) seeds the next order: call it before each epoch."""
        self.epoch = epoch
