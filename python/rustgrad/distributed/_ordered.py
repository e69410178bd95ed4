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

from collections import deque
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
    """A sum (or product) of a contiguous 1-D float array over the ranks, in rank order, in place.

    Several may be in flight (DDP starts one per bucket). MPI needs every rank to start the
    collectives of a communicator in the same order, and when a scatter finishes differs from
    rank to rank; so the gathers run on their own communicator and start in the order the
    reductions were made, each once its scatter is done (`_Sequence`).
    """

    def __init__(self, g: _Group, flat: np.ndarray, product: bool = False) -> None:
        self.g, self.flat, self.product = g, flat, product
        p, n = g.size, flat.size
        self.counts = [n // p + (1 if r < n % p else 0) for r in range(p)]
        self.displs = [0, *np.cumsum(self.counts[:-1]).tolist()]
        mine = self.counts[g.rank]
        self.pieces = np.empty((p, mine), dtype=flat.dtype)
        self.mpi_type = g.mpi.DOUBLE if flat.dtype == np.float64 else g.mpi.FLOAT
        self.sequence = _Sequence.of(g)
        self.request = g.comm.Ialltoallv(
            [flat, self.counts, self.displs, self.mpi_type],
            [self.pieces, [mine] * p, [mine * r for r in range(p)], self.mpi_type],
        )
        self.gathering = False
        self.sequence.waiting.append(self)

    def start_gather(self) -> None:
        """Adds this rank's chunk in rank order and starts sharing every chunk (scatter done)."""
        start = self.displs[self.g.rank]
        chunk = self.flat[start : start + self.counts[self.g.rank]]
        (np.multiply if self.product else np.add).reduce(self.pieces, axis=0, out=chunk)
        self.request = self.sequence.comm.Iallgatherv(self.g.mpi.IN_PLACE,
                                                      [self.flat, self.counts, self.displs, self.mpi_type])
        self.gathering = True

    def test(self) -> bool:
        self.sequence.start_ready_gathers()
        return self.gathering and bool(self.request.Test())

    def wait(self) -> None:
        self.sequence.start_gathers_through(self)
        self.request.Wait()

    Test, Wait = test, wait


class _Sequence:
    """A group's ordered reductions whose gathers have not started, oldest first, and the
    communicator (a duplicate of the group's) that the gathers use."""

    def __init__(self, g: _Group) -> None:
        self.comm = g.comm.Dup()  # collective: made at the first ordered reduction, the same call on every rank
        self.waiting: deque[OrderedReduction] = deque()

    @staticmethod
    def of(g: _Group) -> _Sequence:
        if g.ordered_sequence is None:
            g.ordered_sequence = _Sequence(g)
        return g.ordered_sequence

    def start_ready_gathers(self) -> None:
        while self.waiting and self.waiting[0].request.Test():
            self.waiting.popleft().start_gather()

    def start_gathers_through(self, last: OrderedReduction) -> None:
        while not last.gathering:
            head = self.waiting.popleft()
            head.request.Wait()
            head.start_gather()


def start_reduction(g: _Group, array: np.ndarray, op: Any, sum_or_product: bool, product: bool = False) -> Any:
    """An in-place reduction of `array` over the ranks, started; `.test()` moves it on, `.wait()` ends it."""
    if needs_fixed_order(g, array, sum_or_product):
        return OrderedReduction(g, array.reshape(-1), product)
    return PlainReduction(g, array, op)
