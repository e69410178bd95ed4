"""Run under mpiexec by tests/test_distributed_mpi.py: DistributedDataParallel against one process
training on the whole batch, no_sync, unused parameters. Works for any number of ranks dividing 12."""

import numpy as np

import rustgrad as torch
import rustgrad.distributed as dist
import rustgrad.nn.functional as F
from rustgrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
BATCH = 12
k = BATCH // n
rs = np.random.RandomState(0)
X, Y = rs.randn(BATCH, 4), rs.randn(BATCH, 3)


def mlp(dtype, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(dtype)


def ranks_agree_bitwise(model):
    for p in model.parameters():
        copies = [torch.zeros_like(p) for _ in range(n)]
        dist.all_gather(copies, p.detach())
        assert all(np.array_equal(c.numpy(), p.detach().numpy()) for c in copies)


def relative_difference(a, b):
    diff = max(float((p - q).abs().max()) for p, q in zip(a.parameters(), b.parameters()))
    return diff / max(float(q.abs().max()) for q in b.parameters())


# K ranks on 1/K of every batch equal one process on the whole batch (20 SGD steps), with several buckets.
for dtype, tolerance in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
    model = mlp(dtype, seed=1 + r)  # different on each rank: DDP broadcasts rank 0's
    ddp = DDP(model, bucket_cap_mb=200 / 2**20)
    assert len(ddp._buckets) > 1 and ddp.module is model
    reference = mlp(dtype, seed=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.tensor(X, dtype=dtype), torch.tensor(Y, dtype=dtype)
    for _step in range(20):
        opt.zero_grad()
        F.mse_loss(ddp(x[r * k : (r + 1) * k]), y[r * k : (r + 1) * k]).backward()
        opt.step()
        ranks_agree_bitwise(model)
        ref_opt.zero_grad()
        F.mse_loss(reference(x), y).backward()
        ref_opt.step()
    assert relative_difference(model, reference) <= tolerance, (dtype, relative_difference(model, reference))

# no_sync: two local micro-batches accumulated, the second one synced, equal one step on the whole batch.
model, reference = mlp(torch.float64, 3), mlp(torch.float64, 3)
ddp = DDP(model)
x, y = torch.tensor(X), torch.tensor(Y)
half = k // 2
mine = slice(r * k, (r + 1) * k)
with ddp.no_sync():
    (F.mse_loss(ddp(x[mine][:half]), y[mine][:half]) * half / k).backward()
local = [p.grad.clone() for p in model.parameters()]
(F.mse_loss(ddp(x[mine][half:]), y[mine][half:]) * (k - half) / k).backward()
F.mse_loss(reference(x), y).backward()
for p, q in zip(model.parameters(), reference.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=0, atol=1e-13)
assert any(not torch.equal(a, p.grad) for a, p in zip(local, model.parameters()))


# Unused parameters: with find_unused_parameters=True nothing hangs; one no rank used keeps grad None,
# one only rank 0 used gets the average (the other ranks count zeros).
class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(4, 3)
        self.rank0_only = torch.nn.Linear(4, 3)
        self.never = torch.nn.Linear(4, 3)

    def forward(self, x):
        out = self.used(x)
        return out + self.rank0_only(x) if dist.get_rank() == 0 else out


model = Branchy()
ddp = DDP(model, find_unused_parameters=True)
for _ in range(2):
    model.zero_grad()
    ddp(x[mine].float()).sum().backward()
    assert model.never.weight.grad is None and model.never.bias.grad is None
    expected_bias = np.full(3, k / n, dtype=np.float32)  # d(sum)/d(bias) = k on rank 0, 0 elsewhere, averaged
    np.testing.assert_allclose(model.rank0_only.bias.grad.numpy(), expected_bias, rtol=1e-6)
    np.testing.assert_allclose(model.used.bias.grad.numpy(), np.full(3, k, dtype=np.float32), rtol=1e-6)

# Without find_unused_parameters, a parameter that got no gradient is reported at the next forward
# (a forward without backward, such as an evaluation in grad mode, is not an error).
ddp = DDP(Branchy())
ddp(x[mine].float())
ddp(x[mine].float()).sum().backward()
try:
    ddp(x[mine].float())
    raise AssertionError("no error for an unused parameter")
except dist.DistributedError as err:
    assert "expected to have finished reduction in the prior iteration" in str(err), err
    assert "never.weight" in str(err) and "find_unused_parameters=True" in str(err), err

# Buffers follow rank 0's at construction.
bn = torch.nn.BatchNorm1d(3)
bn.running_mean.fill_(float(r))
DDP(bn)
assert bn.running_mean.tolist() == [0.0, 0.0, 0.0]

print(f"rank {r}: ddp ok", flush=True)
