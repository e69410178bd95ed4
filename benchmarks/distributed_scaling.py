"""Data-parallel scaling at 1 and 2 ranks, allreduce latency and bandwidth, and the ring model.

    python benchmarks/distributed_scaling.py [--repeats 5]

launches ``mpiexec -n 1`` and then ``mpiexec -n 2`` on this script (one thread per rank), and
prints, from that one run:

- the throughput of the large step (two-layer net 1024x4096x4096x1000, 81 MiB of float32
  gradients, ``DistributedDataParallel`` with 25 MB buckets) and of the seed step
  (64x1000x100x10, gradients averaged with ``all_reduce``) at 1 and 2 ranks, each rank on its
  own batch of the full size (weak scaling), and the speedup;
- the share of the 2-rank large step spent in communication that backward did not hide
  (the DDP step against the same step under ``no_sync``);
- allreduce latency α and bandwidth β between 2 ranks, from MPI_Allreduce times over 4 B..16 MiB
  and the ring model t = n/β + 2α (at p = 2, 2(p-1)/p = 1 and 2(p-1) = 2): α from 4 B, β from the
  slope between 4 and 16 MiB;
- the ring-allreduce model 2(p-1)/p · n/β + 2(p-1)·α, projected to 8, 64 and 512 ranks for the
  digits CNN and the large step, with the α and β measured here and with 25 and 100 Gb/s
  networks (docs/distributed-scaling.md explains the assumptions).

Needs ``pip install 'rustgrad[mpi]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve()
LARGE = (1024, 4096, 4096, 1000)
SEED = (64, 1000, 100, 10)
SIZES_FLOATS = [1, 16, 256, 4096, 65536, 1 << 20, 1 << 22]
NETWORKS = {  # name: (alpha seconds, beta bytes per second); see docs/distributed-scaling.md
    "25 Gb/s Ethernet (RoCE)": (5e-6, 25e9 / 8),
    "100 Gb/s InfiniBand EDR": (1.5e-6, 100e9 / 8),
}
RANKS = (8, 64, 512)


# ---------------------------------------------------------------------------------------------
# Worker: runs under mpiexec, one thread per rank.

def timed_slowest_rank(comm: Any, step: Callable[[], object], repeats: int) -> float:
    """Median over `repeats` of the slowest rank's time, in seconds; each after a barrier."""
    from mpi4py import MPI

    times = np.empty(repeats)
    for i in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        step()
        times[i] = time.perf_counter() - start
    comm.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)
    return float(np.median(times))


def _two_layer(sizes: tuple[int, int, int, int]) -> Any:
    import rustgrad as torch
    from rustgrad import nn

    _, d_in, hidden, d_out = sizes
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d_in, hidden, bias=False), nn.ReLU(), nn.Linear(hidden, d_out, bias=False))


def _large_step(comm: Any, repeats: int) -> dict[str, float]:
    import rustgrad as torch
    import rustgrad.nn.functional as F
    from rustgrad.nn.parallel import DistributedDataParallel

    n, d_in, _, d_out = LARGE
    model = DistributedDataParallel(_two_layer(LARGE))
    for p in model.parameters():
        with torch.no_grad():
            p.mul_(0.01)  # keeps the loss finite at this learning rate
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    rng = np.random.default_rng(comm.Get_rank())
    x = torch.tensor(rng.standard_normal((n, d_in)), dtype=torch.float32)
    y = torch.tensor(rng.standard_normal((n, d_out)), dtype=torch.float32)

    def step() -> None:
        opt.zero_grad()
        F.mse_loss(model(x), y, reduction="sum").backward()
        opt.step()

    def compute_only() -> None:
        with model.no_sync():
            step()

    step()
    ddp = timed_slowest_rank(comm, step, repeats)
    local = timed_slowest_rank(comm, compute_only, repeats)
    grad_bytes = sum(p.numel() * 4 for p in model.parameters())
    return {"large_step_s": ddp, "large_compute_s": local, "large_grad_bytes": grad_bytes}


def _seed_step(comm: Any, repeats: int) -> dict[str, float]:
    import rustgrad as torch
    import rustgrad.distributed as dist

    n, d_in, hidden, d_out = SEED
    rng = np.random.default_rng(comm.Get_rank())
    x = torch.tensor(rng.standard_normal((n, d_in)), dtype=torch.float32)
    y = torch.tensor(rng.standard_normal((n, d_out)), dtype=torch.float32)
    w1 = torch.tensor(np.random.default_rng(0).standard_normal((d_in, hidden)), dtype=torch.float32,
                      requires_grad=True)
    w2 = torch.tensor(np.random.default_rng(1).standard_normal((hidden, d_out)), dtype=torch.float32,
                      requires_grad=True)

    def step() -> None:
        loss = (x.mm(w1).relu().mm(w2) - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            for w in (w1, w2):
                dist.all_reduce(w.grad, op=dist.ReduceOp.AVG)
                w.sub_(1e-6 * w.grad)
                w.grad.zero_()

    for _ in range(20):
        step()
    return {"seed_step_s": timed_slowest_rank(comm, step, 40 * repeats)}


def _digits_step(comm: Any, repeats: int) -> dict[str, float]:
    import rustgrad as torch
    from rustgrad._digits import DigitsNet

    torch.manual_seed(0)
    model = DigitsNet()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(64, 1, 8, 8)
    labels = torch.tensor(np.arange(64) % 10)

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(images), labels).backward()
        opt.step()

    for _ in range(20):
        step()
    grad_bytes = sum(p.numel() * 4 for p in model.parameters())
    return {"digits_step_s": timed_slowest_rank(comm, step, 200), "digits_grad_bytes": grad_bytes}


def _allreduce_times(comm: Any) -> dict[str, list[float]]:
    from mpi4py import MPI

    times = []
    for count in SIZES_FLOATS:
        buffer = np.ones(count, np.float32)
        repeats = 200 if count <= 65536 else 20
        comm.Allreduce(MPI.IN_PLACE, buffer)
        times.append(min(timed_slowest_rank(comm, lambda b=buffer: comm.Allreduce(MPI.IN_PLACE, b), 5)
                         for _ in range(repeats // 5)))
    return {"allreduce_bytes": [4 * c for c in SIZES_FLOATS], "allreduce_s": times}


def worker(out: str, repeats: int) -> None:
    import rustgrad as torch
    import rustgrad.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("mpi")
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    result: dict[str, Any] = {"ranks": comm.Get_size()}
    result.update(_seed_step(comm, repeats))
    result.update(_large_step(comm, repeats))
    if comm.Get_size() == 1:
        result.update(_digits_step(comm, repeats))
    else:
        result.update(_allreduce_times(comm))
    if comm.Get_rank() == 0:
        Path(out).write_text(json.dumps(result), encoding="utf-8")
    dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# Driver: launches the workers and prints the report.

def fit_alpha_beta(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    """α and β of the ring model t = n/β + 2α at p = 2: α from the smallest message, where the
    latency is all there is, β from the slope between the two largest, where it is negligible."""
    alpha = seconds[0] / 2
    beta = (sizes[-1] - sizes[-2]) / (seconds[-1] - seconds[-2])
    return alpha, beta


def ring_allreduce_seconds(n_bytes: float, ranks: int, alpha: float, beta: float) -> float:
    """The ring algorithm: reduce-scatter then allgather, 2(p-1) messages of n/p bytes each."""
    return 2 * (ranks - 1) / ranks * n_bytes / beta + 2 * (ranks - 1) * alpha


def efficiency(compute_s: float, comm_s: float, overlapped: bool) -> float:
    """Weak-scaling efficiency: compute time over step time, with no overlap or with perfect overlap."""
    return compute_s / (max(compute_s, comm_s) if overlapped else compute_s + comm_s)


def run_ranks(ranks: int, repeats: int) -> dict[str, Any]:
    env = dict(os.environ, OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        launcher = shutil.which("mpiexec") or str(Path(sys.executable).with_name("mpiexec"))
        command = [launcher, "-n", str(ranks), sys.executable, "-m", "mpi4py", str(HERE), "--worker",
                   "--out", str(out), "--repeats", str(repeats)]
        subprocess.run(command, check=True, env=env, timeout=1800)
        return json.loads(out.read_text(encoding="utf-8"))


def report(one: dict[str, Any], two: dict[str, Any]) -> list[str]:
    lines = []
    large_flops = 3 * 2 * LARGE[0] * (LARGE[1] * LARGE[2] + LARGE[2] * LARGE[3])
    for name, key, batch in (("seed step 64x1000x100x10", "seed_step_s", SEED[0]),
                             ("large step 1024x4096x4096x1000", "large_step_s", LARGE[0])):
        t1, t2 = one[key], two[key]
        speedup = (2 * batch / t2) / (batch / t1)
        lines.append(f"{name}: 1 rank {t1 * 1e3:9.2f} ms ({batch / t1:9.0f} samples/s), "
                     f"2 ranks {t2 * 1e3:9.2f} ms ({2 * batch / t2:9.0f} samples/s): {speedup:.2f}x")
    lines.append(f"large step on one rank: {large_flops / one['large_step_s'] / 1e9:.1f} GFLOP/s per rank")
    exposed = max(two["large_step_s"] - two["large_compute_s"], 0.0) / two["large_step_s"]
    lines.append(f"2-rank large step: {exposed:.1%} of the step is communication backward did not hide "
                 f"(DDP {two['large_step_s'] * 1e3:.1f} ms, no_sync {two['large_compute_s'] * 1e3:.1f} ms)")
    alpha, beta = fit_alpha_beta(two["allreduce_bytes"], two["allreduce_s"])
    lines.append(f"allreduce between 2 ranks: alpha {alpha * 1e6:.2f} us, beta {beta / 1e9:.2f} GB/s")
    for n_bytes, s in zip(two["allreduce_bytes"], two["allreduce_s"]):
        lines.append(f"  {n_bytes:>10} B: {s * 1e6:10.1f} us (model {(n_bytes / beta + 2 * alpha) * 1e6:10.1f} us)")
    lines += projections(one, alpha, beta)
    return lines


def projections(one: dict[str, Any], alpha: float, beta: float) -> list[str]:
    models = {
        "digits CNN": (one["digits_step_s"], one["digits_grad_bytes"]),
        "large step": (one["large_compute_s"], one["large_grad_bytes"]),
    }
    networks = {"this machine (shared memory)": (alpha, beta), **NETWORKS}
    lines = ["weak-scaling efficiency projected by the ring model (no overlap / perfect overlap):"]
    for model, (compute_s, n_bytes) in models.items():
        lines.append(f"  {model}: {compute_s * 1e3:.2f} ms of compute per step, {n_bytes / 2**20:.2f} MiB")
        for network, (a, b) in networks.items():
            cells = []
            for p in RANKS:
                comm_s = ring_allreduce_seconds(n_bytes, p, a, b)
                cells.append(f"p={p}: {efficiency(compute_s, comm_s, False):6.1%} / "
                             f"{efficiency(compute_s, comm_s, True):6.1%} ({comm_s * 1e3:7.2f} ms)")
            lines.append(f"    {network:<30} " + "  ".join(cells))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=5, help="timed large steps per configuration")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.out, args.repeats)
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    one = run_ranks(1, args.repeats)
    two = run_ranks(2, args.repeats)
    print(f"distributed scaling, {started}, {os.cpu_count()} cores, 1 thread per rank")
    print("\n".join(report(one, two)))


if __name__ == "__main__":
    main()
