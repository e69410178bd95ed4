"""Run under mpiexec by tests/test_distributed_manual.py: the reference training loop with the
gradients averaged by a manual all_reduce. K ranks, each on 1/K of every batch, equal one process
on the whole batch over 20 steps; the ranks agree bitwise after every step; every rank prints a
digest of its final weights so that the test can compare reruns."""

import hashlib

import numpy as np

import rustgrad as torch
import rustgrad.distributed as dist

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
BATCH, D_IN, H, D_OUT = 12, 20, 16, 3
k = BATCH // n
rs = np.random.RandomState(0)
X, Y = rs.randn(BATCH, D_IN), rs.randn(BATCH, D_OUT)
W1, W2 = rs.randn(D_IN, H), rs.randn(H, D_OUT)


def train(dtype, x, y, sync):
    w1 = torch.tensor(W1, dtype=dtype, requires_grad=True)
    w2 = torch.tensor(W2, dtype=dtype, requires_grad=True)
    for _ in range(20):
        loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum() / BATCH
        loss.backward()
        with torch.no_grad():
            for w in (w1, w2):
                if sync:
                    dist.all_reduce(w.grad)  # a sum of per-rank sums over 1/K of the batch
                w -= 1e-2 * w.grad
                w.grad.zero_()
        if sync:
            for w in (w1, w2):
                copies = [torch.zeros_like(w) for _ in range(n)]
                dist.all_gather(copies, w.detach())
                assert all(np.array_equal(c.numpy(), w.detach().numpy()) for c in copies), "ranks differ"
    return w1.detach(), w2.detach()


digest = hashlib.sha256()
for dtype, tolerance in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
    x, y = torch.tensor(X, dtype=dtype), torch.tensor(Y, dtype=dtype)
    mine = train(dtype, x[r * k:(r + 1) * k].contiguous(), y[r * k:(r + 1) * k].contiguous(), sync=True)
    whole = train(dtype, x, y, sync=False)
    largest = max(float(w.abs().max()) for w in whole)
    difference = max(float((a - b).abs().max()) for a, b in zip(mine, whole))
    assert difference / largest <= tolerance, (dtype, difference / largest)
    for w in mine:
        digest.update(w.numpy().tobytes())
print(f"rank {r}: manual all_reduce ok, digest {digest.hexdigest()}", flush=True)
