"""Run under mpiexec by tests/test_distributed_mpi.py: every collective against numpy, on every rank."""

import numpy as np

import rustgrad as torch
import rustgrad.distributed as dist

dist.init_process_group("mpi")
dist.init_process_group("mpi")  # idempotent
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "mpi"


def values(rank, dtype=np.float32):
    return (np.arange(12, dtype=np.float64).reshape(3, 4) * (rank + 1) - 5 * rank).astype(dtype)


every = np.stack([values(k) for k in range(n)])
for op, expected in [
    (dist.ReduceOp.SUM, every.sum(0)),
    (dist.ReduceOp.AVG, every.sum(0) / n),
    (dist.ReduceOp.MAX, every.max(0)),
    (dist.ReduceOp.MIN, every.min(0)),
    (dist.ReduceOp.PRODUCT, every.prod(0)),
]:
    t = torch.from_numpy(values(r))
    address = t.data_ptr()
    assert dist.all_reduce(t, op=op) is None
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, err_msg=repr(op))
    assert t.data_ptr() == address  # in place

# A non-contiguous tensor goes through a copy and is written back; float64 and int64 keep their dtype.
t = torch.from_numpy(values(r, np.float64)).t()
dist.all_reduce(t)
np.testing.assert_array_equal(t.numpy(), every.sum(0).T)
i = torch.from_numpy(values(r, np.int64))
dist.all_reduce(i, op=dist.ReduceOp.MAX)
assert i.dtype == torch.int64 and (i.numpy() == every.max(0)).all()
b = torch.tensor([r == 0, False, True])
dist.all_reduce(b)  # SUM of bools is a logical or
assert b.tolist() == [True, False, True]

# async_op returns a Work; the tensor holds the result after wait().
t = torch.full((1000,), float(r + 1))
work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
work.wait()
assert work.is_completed() and np.all(t.numpy() == (n + 1) / 2)

# broadcast from the last rank; a tensor that requires grad is overwritten in place too.
x = torch.full((2, 3), float(r), requires_grad=True)
dist.broadcast(x, n - 1)
assert x.tolist() == [[float(n - 1)] * 3] * 2

# all_gather into a list; reduce_scatter from a list.
gathered = [torch.zeros(2, 2) for _ in range(n)]
dist.all_gather(gathered, torch.from_numpy(values(r)[:2, :2]).contiguous())
for k in range(n):
    np.testing.assert_array_equal(gathered[k].numpy(), values(k)[:2, :2])
out = torch.zeros(3)
inputs = [torch.full((3,), 10.0 * k + r) for k in range(n)]
dist.reduce_scatter(out, inputs)
assert out.tolist() == [sum(10.0 * r + k for k in range(n))] * 3
dist.reduce_scatter(out, inputs, op=dist.ReduceOp.MAX)
assert out.tolist() == [10.0 * r + n - 1] * 3

# Ranks that disagree get the same clear error on every rank, and the group stays usable.
try:
    dist.all_reduce(torch.zeros(2 + r))
    raise AssertionError("no error for different shapes")
except torch.errors.ShapeError as err:
    assert "all_reduce: the ranks' tensors have different shapes (rank 0: float32 [2]; rank 1: float32 [3]" in str(err)
try:
    dist.all_reduce(torch.zeros(2, dtype=torch.float64 if r == 0 else torch.float32))
    raise AssertionError("no error for different dtypes")
except torch.errors.DTypeError as err:
    assert "different dtypes (rank 0: float64 [2]; rank 1: float32 [2]" in str(err)
try:
    dist.all_reduce(torch.zeros(2), op=dist.ReduceOp.MAX if r == 0 else dist.ReduceOp.SUM)
    raise AssertionError("no error for different ops")
except dist.DistributedError as err:
    assert "all_reduce: the ranks disagree on the ReduceOp" in str(err)
try:
    dist.all_reduce(torch.zeros(2), op="sum")
    raise AssertionError("no error for a bad op")
except TypeError as err:
    assert "all_reduce: op must be a rustgrad.distributed.ReduceOp" in str(err)
try:
    dist.all_reduce(torch.zeros(2, dtype=torch.int64), op=dist.ReduceOp.AVG)
    raise AssertionError("no error for AVG of ints")
except torch.errors.DTypeError as err:
    assert "ReduceOp.AVG needs a float32 or float64 tensor, got int64" in str(err)
try:
    dist.broadcast(torch.zeros(2), n)
    raise AssertionError("no error for a bad src")
except dist.DistributedError as err:
    assert f"broadcast: src={n} is not a rank of this group of {n}" in str(err)

# Horovod's conveniences: a module's parameters and buffers, and an optimizer's state, from rank 0.
torch.manual_seed(r)
model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
opt = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1))
if r == 0:
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
dist.broadcast_parameters(model, root=0)
dist.broadcast_optimizer_state(opt, root=0)
state = opt.state_dict()
moments = [v for per_param in state["state"].values() for v in per_param.values() if torch.is_tensor(v)]
tensors = list(model.state_dict().values()) + moments
for t in tensors:
    copies = [torch.zeros_like(t) for _ in range(n)]
    dist.all_gather(copies, t.detach().contiguous())
    assert all(torch.equal(c, t) for c in copies)
assert state["param_groups"][0]["lr"] == 0.01 and len(state["state"]) == 4 and state["state"][0]["step"] == 1

dist.barrier()
print(f"rank {r}: collectives ok", flush=True)
dist.destroy_process_group()
assert not dist.is_initialized()

# A communicator passed in is duplicated too: on COMM_SELF each rank is a group of one.
from mpi4py import MPI  # noqa: E402

dist.init_process_group("mpi", comm=MPI.COMM_SELF)
assert dist.get_world_size() == 1 and dist.get_rank() == 0
t = torch.full((2,), float(r))
dist.all_reduce(t)
assert t.tolist() == [float(r)] * 2
dist.destroy_process_group()
print(f"rank {r}: comm= ok", flush=True)
