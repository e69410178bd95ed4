"""Float sums over the ranks whose bits do not depend on MPI's choice of algorithm.

``MPI_Allreduce`` does not promise an order of summation, and floating-point addition is not
associative: with 3 or more ranks, two runs (or two ranks) may add the same numbers in different
orders and get different last bits. Here every element is summed by one rank, the owner of its
chunk, in rank order, and then copied to the others:

1. a reduce-scatter by ``Alltoallv``: rank r receives every rank's piece of chunk r;
2. rank r adds the pieces in rank order (numpy's reduction over the first axis);
3. an ``Allgatherv`` gives every rank every summed chunk.

Each rank sends and receives 2(p-1)/p of the buffer, as in a ring allreduce. With one or two ranks
``MPI_Allreduce`` is already exact in this sense (a + b and b + a are the same float), so it is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rustgrad.distributed._group import _Group


def needs_fixed_order(g: _Group, array: np.ndarray, sum_or_product: bool) -> bool:
    return g.size > 2 and sum_or_product and array.dtype.kind == "f"


class PlainReduction:
    """``Iallreduce`` in place, behind the same test/wait interface as ``OrderedReduction``."""

    def __init__(self, g: _Group, array: np.ndarray, op: Any) -> None:
        self.request = g.comm.Iallreduce(g.mpi.IN_PLACE, array, op=op)

    def test(self) -> bool:
        return bool(self.request.Test())

    def wait(self) -> None:
        self.request.Wait()

    # An mpi4py Request's names, so that `Work` and `Request.Testall`-style loops take either.
    Test, Wait = test, wait


class OrderedReduction:
    """A sum (or product) of a contiguous 1-D float array over the ranks, in rank order, in place."""

    def __init__(self, g: _Group, flat: np.ndarray, product: bool = False) -> None:
        self.g, self.flat, self.product = g, flat, product
        p, n = g.size, flat.size
        self.counts = [n // p + (1 if r < n % p else 0) for r in range(p)]
        self.displs = [0, *np.cumsum(self.counts[:-1]).tolist()]
        mine = self.counts[g.rank]
        self.pieces = np.empty((p, mine), dtype=flat.dtype)
        mpi_type = g.mpi.DOUBLE if flat.dtype == np.float64 else g.mpi.FLOAT
        self.mpi_type = mpi_type
        self.request = g.comm.Ialltoallv(
            [flat, self.counts, self.displs, mpi_type],
            [self.pieces, [mine] * p, [mine * r for r in range(p)], mpi_type],
        )
        self.gathering = False
        self.done = False

    def _reduce_mine_and_share(self) -> None:
        start = self.displs[self.g.rank]
        chunk = self.flat[start : start + self.counts[self.g.rank]]
        (np.multiply if self.product else np.add).reduce(self.pieces, axis=0, out=chunk)
        self.request = self.g.comm.Iallgatherv(self.g.mpi.IN_PLACE,
                                               [self.flat, self.counts, self.displs, self.mpi_type])
        self.gathering = True

    def test(self) -> bool:
        if self.done:
            return True
        if not self.request.Test():
            return False
        if not self.gathering:
            self._reduce_mine_and_share()
            return self.test()
        self.done = True
        return True

    def wait(self) -> None:
        if self.done:
            return
        self.request.Wait()
        if not self.gathering:
            self._reduce_mine_and_share()
            self.request.Wait()
        self.done = True

    Test, Wait = test, wait


def start_reduction(g: _Group, array: np.ndarray, op: Any, sum_or_product: bool, product: bool = False) -> Any:
    """An in-place reduction of `array` over the ranks, started; `.test()` moves it on, `.wait()` ends it."""
    if needs_fixed_order(g, array, sum_or_product):
        return OrderedReduction(g, array.reshape(-1), product)
    return PlainReduction(g, array, op)
