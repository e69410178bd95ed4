"""Static mode's allreduce, timed (the figures of docs/distributed.md, "dlopen vs the Rust mpi crate").

Run under MPI (needs ``pip install 'rustgrad[mpi]'``); each rank uses one thread::

    mpiexec -n 2 python -m mpi4py benchmarks/distributed_static.py

For float32 buffers from 8 bytes to 81 MB (the large step's gradients), in the same run:
- ``mpi4py``: ``comm.Allreduce`` from Python on numpy buffers (the eager path's transport);
- ``Rust, MPI_Allreduce``: what a ``HorovodAllreduce`` node does with ``deterministic=False``
  (the layout check, the fused copy, MPI's own sum through the dlopen'ed library, the division);
- ``Rust, rank order``: the same node with the default fixed summation order (allgather below
  256 KiB, else alltoall + allgather);
- ``fallback``: the same node over mpi4py (taking the GIL per collective), as used when mpi4py
  has no ``MPI._handleof``.
Each repetition starts after a barrier and counts the slowest rank's time; rank 0 prints the median.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
from mpi4py import MPI

import rustgrad
import rustgrad.distributed as dist
from rustgrad import _rustgrad
from rustgrad.distributed._group import _group
from rustgrad.distributed._static import communicator

SIZES = [8, 4096, 404_000, 81_000_000]


def timed(comm: MPI.Comm, step: Callable[[], object], repeats: int) -> float:
    """Median over ``repeats`` of the slowest rank's time, in µs."""
    times = np.empty(repeats)
    step()  # warm up
    for i in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        step()
        times[i] = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    return float(np.median(times)) * 1e6


def main() -> None:
    dist.init_process_group("mpi")
    g = _group("benchmark")
    rust = communicator(g)
    fallback = _rustgrad._mpi4py_communicator(g.comm, g.mpi)
    if g.rank == 0:
        print(f"{g.size} ranks, {rustgrad.get_num_threads()} thread(s) each; Rust path: {rust.transport}")
        print(f"{'bytes':>11} {'mpi4py':>12} {'Rust MPI_Allreduce':>19} {'Rust rank order':>16} {'fallback':>12}  (µs)")
    for nbytes in SIZES:
        n = nbytes // 4
        values = np.random.default_rng(g.rank).standard_normal(n).astype(np.float32)
        recv = np.empty_like(values)
        tensor = rustgrad.from_numpy(values)
        repeats = 200 if nbytes < 1_000_000 else 10
        steps = [
            lambda v=values, r=recv: g.comm.Allreduce(v, r, op=MPI.SUM),
            lambda t=tensor: rust.allreduce_mean([t], deterministic=False),
            lambda t=tensor: rust.allreduce_mean([t]),
            lambda t=tensor: fallback.allreduce_mean([t]),
        ]
        row = [timed(g.comm, step, repeats) for step in steps]
        if g.rank == 0:
            print(f"{nbytes:>11} {row[0]:>12.1f} {row[1]:>19.1f} {row[2]:>16.1f} {row[3]:>12.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
