"""Run under mpiexec by tests/test_distributed_ordered.py: float sums over the ranks are added in rank
order, whatever MPI's algorithm, so every rank gets the bits of ((x0 + x1) + x2) + ..., and async
AVG, PRODUCT, odd sizes and the reduction object DDP's hooks drive all agree with it."""

import numpy as np

import rustgrad as torch
import rustgrad.distributed as dist
from rustgrad.distributed._group import _group
from rustgrad.distributed._ordered import OrderedReduction

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()


def mine(size, dtype, seed=0):
    # Magnitudes spread over 30 orders, so that the order of the additions changes the last bits.
    rng = np.random.default_rng(seed + r)
    return (rng.standard_normal(size) * 10.0 ** rng.integers(-15, 15, size)).astype(dtype)


def in_rank_order(size, dtype, seed=0):
    total = None
    for k in range(n):
        rng = np.random.default_rng(seed + k)
        v = (rng.standard_normal(size) * 10.0 ** rng.integers(-15, 15, size)).astype(dtype)
        total = v if total is None else total + v
    return total


for size in (1, 2, 7, 1000, 100_003):  # fewer elements than ranks, uneven chunks, large
    for dtype in (np.float32, np.float64):
        t = torch.from_numpy(mine(size, dtype))
        dist.all_reduce(t)
        assert t.numpy().tobytes() == in_rank_order(size, dtype).tobytes(), (size, dtype)

t = torch.from_numpy(mine(999, np.float64, seed=5))
work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
work.wait()
assert t.numpy().tobytes() == (in_rank_order(999, np.float64, seed=5) / n).tobytes()

factors = torch.from_numpy(np.random.default_rng(20 + r).uniform(0.5, 2.0, 64))
dist.all_reduce(factors, op=dist.ReduceOp.PRODUCT)
product = np.ones(64)
for k in range(n):
    product = product * np.random.default_rng(20 + k).uniform(0.5, 2.0, 64)
assert factors.numpy().tobytes() == product.tobytes()

# The class itself, moved on by test() as DDP's hooks do.
flat = mine(10, np.float64, seed=3)
reduction = OrderedReduction(_group("ordered_sum"), flat)
while not reduction.test():
    pass
assert flat.tobytes() == in_rank_order(10, np.float64, seed=3).tobytes()

print(f"rank {r}: ordered ok", flush=True)
