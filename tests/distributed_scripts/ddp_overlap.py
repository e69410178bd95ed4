"""Run under mpiexec by tests/test_autograd_hook_timing.py: DistributedDataParallel starts a bucket's
Iallreduce while backward still runs (before it reaches the first layer), waits for all of them at
the end of the pass, and leaves the gradients averaged over the ranks when backward() returns."""

import copy

import numpy as np

import rustgrad as torch
import rustgrad.distributed as dist
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad.autograd import Function
from rustgrad.nn.parallel import DistributedDataParallel as DDP

events: list[str] = []


class Mark(Function):
    """Identity whose backward records that backward has reached the first layer."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        events.append("first layer backward")
        return g


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(4, 16)
        self.last = nn.Linear(16, 3)

    def forward(self, x):
        return self.last(Mark.apply(self.first(x)).tanh())


class RecordingComm:
    """The group's communicator, recording when an Iallreduce starts."""

    def __init__(self, comm) -> None:
        self._comm = comm

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def Iallreduce(self, *args, **kwargs):  # noqa: N802 - mpi4py's name
        events.append("Iallreduce")
        return self._comm.Iallreduce(*args, **kwargs)


dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
torch.manual_seed(r)  # different on each rank: DDP broadcasts rank 0's
model = Net().double()
ddp = DDP(model, bucket_cap_mb=200 / 2**20)  # one bucket per parameter here
assert len(ddp._buckets) == 4, [len(b.params) for b in ddp._buckets]
ddp._group = copy.copy(ddp._group)
ddp._group.comm = RecordingComm(ddp._group.comm)
reference = copy.deepcopy(model)  # the same weights, no DDP: the local gradients

rs = np.random.RandomState(10 + r)
for _step in range(3):
    x, y = torch.tensor(rs.randn(6, 4)), torch.tensor(rs.randn(6, 3))
    events.clear()
    model.zero_grad()
    F.mse_loss(ddp(x), y).backward()
    reached_first_layer = events.index("first layer backward")
    # The buckets of the last layer (its bias, then its weight) started before backward reached the first.
    assert events[:reached_first_layer] == ["Iallreduce", "Iallreduce"], events
    assert events.count("Iallreduce") == len(ddp._buckets), events
    reference.zero_grad()
    F.mse_loss(reference(x), y).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        local = [torch.zeros_like(q.grad) for _ in range(n)]
        dist.all_gather(local, q.grad)
        average = np.mean([g.numpy() for g in local], axis=0)
        assert np.abs(p.grad.numpy() - average).max() <= 1e-12 * max(1.0, np.abs(average).max())
print(f"rank {r}: overlap ok", flush=True)
