"""Collectives and a DistributedDataParallel step, timed on every rank (the figures in docs/distributed.md).

Run under MPI (needs ``pip install 'rustgrad[mpi]'``); each rank uses one thread::

    mpiexec -n 2 python -m mpi4py benchmarks/distributed.py

Each repetition starts after a barrier and counts the slowest rank's time; rank 0 prints the
median and the minimum. The model is an MLP 256-512-512-10 (0.4M parameters, one bucket):
one process on the whole batch, DDP on its share of it, DDP with ``bucket_cap_mb=0.25``
(four buckets, whose allreduces can overlap the rest of backward), and DDP under ``no_sync``
(the compute alone). Then a wider MLP 1024-2048-2048-2048-10 (10.5M parameters, 40 MB of
float32 gradients, six 4 MB buckets, batch 256 per rank): DDP and ``no_sync``, whose difference
is the communication that backward does not hide.

The throughput at 1 and 2 ranks on the large and seed steps, allreduce latency and bandwidth and
the ring model's projections are in benchmarks/distributed_scaling.py (docs/distributed-scaling.md).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
from mpi4py import MPI

import rustgrad as torch
import rustgrad.distributed as dist
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad.nn.parallel import DistributedDataParallel

BATCH = 256


def timed(comm: MPI.Comm, step: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median and minimum over ``repeats`` of the slowest rank's time, in ms."""
    times = np.empty(repeats)
    for i in range(repeats):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        times[i] = time.perf_counter() - t0
    comm.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)
    return float(np.median(times)) * 1e3, float(times.min()) * 1e3


def line(name: str, median: float, least: float) -> str:
    return f"{name:<40} median {median:8.3f} ms, min {least:8.3f} ms"


def mlp(widths: tuple[int, ...] = (256, 512, 512, 10)) -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def main() -> None:
    torch.set_num_threads(1)  # one core per rank
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD
    report = print if rank == 0 else (lambda *_: None)
    report(f"{size} ranks, {torch.get_num_threads()} thread(s) each")

    big, raw = torch.ones(1_000_000), np.ones(1_000_000, np.float32)
    collectives = [
        ("all_reduce of 1M float32", lambda: dist.all_reduce(big)),
        ("mpi4py Allreduce of 1M float32", lambda: comm.Allreduce(MPI.IN_PLACE, raw)),
        ("all_reduce of one float32", lambda: dist.all_reduce(torch.ones(1))),
        ("mpi4py Allreduce of one float32", lambda: comm.Allreduce(MPI.IN_PLACE, np.ones(1, np.float32))),
    ]
    for name, step in collectives:
        step()
        report(line(name, *timed(comm, step, 50)))

    rng = np.random.RandomState(0)
    x = torch.tensor(rng.randn(BATCH, 256), dtype=torch.float32)
    y = torch.tensor(rng.randn(BATCH, 10), dtype=torch.float32)
    share = BATCH // size
    x_mine, y_mine = x[rank * share:(rank + 1) * share].contiguous(), y[rank * share:(rank + 1) * share].contiguous()
    single = mlp()
    single_opt = torch.optim.SGD(single.parameters(), lr=0.01)
    ddp = DistributedDataParallel(mlp())
    ddp_opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    small = DistributedDataParallel(mlp(), bucket_cap_mb=0.25)
    small_opt = torch.optim.SGD(small.parameters(), lr=0.01)

    def single_step() -> None:
        single_opt.zero_grad()
        F.mse_loss(single(x), y).backward()
        single_opt.step()

    def ddp_step() -> None:
        ddp_opt.zero_grad()
        F.mse_loss(ddp(x_mine), y_mine).backward()
        ddp_opt.step()

    def small_buckets_step() -> None:
        small_opt.zero_grad()
        F.mse_loss(small(x_mine), y_mine).backward()
        small_opt.step()

    def compute_only() -> None:
        with ddp.no_sync():
            ddp_step()

    steps = [
        (f"one process, batch {BATCH}", single_step),
        (f"DDP, {share} per rank", ddp_step),
        (f"DDP, 0.25 MB buckets, {share} per rank", small_buckets_step),
        (f"DDP no_sync, {share} per rank", compute_only),
    ]
    for name, step in steps:
        for _ in range(3):
            step()
        report(line(name, *timed(comm, step, 200)))

    wide = DistributedDataParallel(mlp((1024, 2048, 2048, 2048, 10)), bucket_cap_mb=4)
    wide_opt = torch.optim.SGD(wide.parameters(), lr=0.01)
    wide_x = torch.tensor(rng.randn(256, 1024), dtype=torch.float32)
    wide_y = torch.tensor(rng.randn(256, 10), dtype=torch.float32)

    def wide_step() -> None:
        wide_opt.zero_grad()
        F.mse_loss(wide(wide_x), wide_y).backward()
        wide_opt.step()

    def wide_compute_only() -> None:
        with wide.no_sync():
            wide_step()

    for name, step in [("wide MLP, DDP, 6 buckets, 256 per rank", wide_step),
                       ("wide MLP, DDP no_sync, 256 per rank", wide_compute_only)]:
        step()
        report(line(name, *timed(comm, step, 30)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
