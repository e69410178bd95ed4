"""``rustgrad.nn.parallel``: ``DistributedDataParallel`` over MPI (see ``rustgrad.distributed``)."""

from __future__ import annotations

from rustgrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
