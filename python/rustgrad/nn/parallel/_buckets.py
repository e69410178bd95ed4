"""DistributedDataParallel's gradient buckets: flat buffers that one ``Iallreduce`` averages each.

Parameters are bucketed in reverse order (the order backward usually produces their gradients, as
in torch), up to ``bucket_cap_mb`` per bucket and one dtype per bucket. A bucket's allreduce starts
as soon as all its gradients are in, and buckets start in index order on every rank (MPI needs the
same order of collectives everywhere, and the order in which backward finishes the gradients
depends on the graph, not only on the parameter order).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rustgrad._rustgrad import Tensor
from rustgrad.distributed._collectives import _Buffer


class Bucket:
    """Some parameters' gradients, copied into one flat array for one allreduce."""

    def __init__(self, params: list[Tensor]) -> None:
        self.params = params
        self.sizes = [p.numel() for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int).tolist()
        dtype = np.dtype(params[0].dtype.name)
        self.flat = np.zeros(self.offsets[-1], dtype=dtype)
        self.pending = 0
        self.request: Any = None

    def slot(self, i: int) -> np.ndarray:
        return self.flat[self.offsets[i] : self.offsets[i + 1]]


def make_buckets(params: list[Tensor], cap_bytes: int) -> list[Bucket]:
    """Reverse parameter order, at most ``cap_bytes`` per bucket (a larger parameter gets its own)."""
    buckets: list[Bucket] = []
    current: list[Tensor] = []
    size = 0
    for p in reversed(params):
        nbytes = p.numel() * np.dtype(p.dtype.name).itemsize
        if current and (size + nbytes > cap_bytes or p.dtype != current[0].dtype):
            buckets.append(Bucket(current))
            current, size = [], 0
        current.append(p)
        size += nbytes
    if current:
        buckets.append(Bucket(current))
    return buckets


def copy_grad_in(bucket: Bucket, i: int, grad: Optional[Tensor]) -> None:
    """Puts parameter ``i``'s gradient (zeros when it has none) into the bucket's flat array."""
    if grad is None:
        bucket.slot(i)[...] = 0
    else:
        bucket.slot(i)[...] = _Buffer(grad).array.reshape(-1)


def copy_grad_out(bucket: Bucket, i: int, param: Tensor) -> None:
    """Writes the averaged gradient back into ``param.grad`` (in place when it exists)."""
    values = bucket.slot(i).reshape(tuple(param.shape))
    if param.grad is None:
        from rustgrad import _rustgrad

        param.grad = _rustgrad._from_numpy(values.copy(), False)
        return
    buffer = _Buffer(param.grad)
    buffer.array[...] = values
    buffer.write_back()
