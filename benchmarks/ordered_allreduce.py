"""What the fixed summation order costs: MPI_Allreduce against rustgrad's rank-order sum.

    mpiexec -n 3 python -m mpi4py benchmarks/ordered_allreduce.py

With 3 or more ranks, ``all_reduce`` and DDP add floats in rank order (a reduce-scatter by
Alltoallv, a local sum, an Allgatherv: python/rustgrad/distributed/_ordered.py) so that ranks and
reruns agree bitwise. This times both on float32 buffers of several sizes, each repetition after
a barrier, the slowest rank's time, median of the repetitions.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

import rustgrad.distributed as dist
from distributed_scaling import timed_slowest_rank as timed
from rustgrad.distributed._group import _group
from rustgrad.distributed._ordered import OrderedReduction


def main() -> None:
    dist.init_process_group("mpi")
    g = _group("ordered_allreduce")
    comm = g.comm
    if g.rank == 0:
        print(f"{g.size} ranks; float32 buffers; median of the slowest rank's time")
    for count in (1, 1024, 1 << 16, 1 << 20, 1 << 22):
        buffer = np.ones(count, np.float32)
        repeats = 200 if count <= 1 << 16 else 30
        plain = timed(comm, lambda b=buffer: comm.Allreduce(MPI.IN_PLACE, b), repeats)
        ordered = timed(comm, lambda b=buffer: OrderedReduction(g, b).wait(), repeats)
        if g.rank == 0:
            print(f"{4 * count:>10} B: MPI_Allreduce {plain * 1e6:9.1f} us, rank order {ordered * 1e6:9.1f} us "
                  f"({ordered / plain:.2f}x)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
