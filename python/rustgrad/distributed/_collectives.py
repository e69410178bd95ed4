"""Collectives on tensors, in place as in ``torch.distributed``, over mpi4py.

A contiguous tensor is handed to MPI as the numpy array ``Tensor.numpy()`` returns, which shares the
tensor's memory: MPI reads and writes the tensor itself, with no copy. A non-contiguous tensor (and a
bool tensor, whose numpy view is a copy) goes through a contiguous copy that is written back.

Float sums and products over 3 or more ranks are added in rank order (``_ordered.py``), so that every
rank, and every rerun, gets the same bits.

Before each collective the ranks exchange a small record (the op, dtype and shape) so that ranks
calling the same collective on different shapes or dtypes get a ``ShapeError``/``DTypeError`` naming
the ranks, instead of a hang or garbage.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Optional, Sequence

import numpy as np

from rustgrad import _rustgrad
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.distributed._group import DistributedError, _Group, _group
from rustgrad.distributed._ordered import start_reduction
from rustgrad.errors import ArgumentTypeError, DTypeError, ShapeError

__all__ = ["ReduceOp", "Work", "all_gather", "all_reduce", "barrier", "broadcast", "reduce_scatter"]


class ReduceOp:
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' values: ``ReduceOp.SUM``, ``AVG``
    (float tensors), ``PRODUCT``, ``MIN`` and ``MAX``. On bool tensors SUM and MAX are a logical or,
    MIN and PRODUCT a logical and."""

    SUM: ClassVar[ReduceOp]
    AVG: ClassVar[ReduceOp]
    PRODUCT: ClassVar[ReduceOp]
    MIN: ClassVar[ReduceOp]
    MAX: ClassVar[ReduceOp]

    def __init__(self, name: str, value: int) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"


for _value, _name in enumerate(("SUM", "AVG", "PRODUCT", "MIN", "MAX")):
    setattr(ReduceOp, _name, ReduceOp(_name, _value))


_DTYPE_CODES = {"float32": 1, "float64": 2, "int32": 3, "int64": 4, "uint8": 5, "bool": 6}
_FLOATS = ("float32", "float64")
_MAX_DIMS = 8  # dims beyond this are folded into one checksum in the metadata record
_RECORD = 5 + _MAX_DIMS


class Work:
    """What a collective called with ``async_op=True`` returns: ``wait()`` blocks until it is done and
    the tensor holds the result; ``is_completed()`` asks without blocking."""

    def __init__(self, request: Any, finish: Callable[[], None]) -> None:
        self._request = request
        self._finish: Optional[Callable[[], None]] = finish

    def _done(self) -> None:
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def wait(self, timeout: Any = None) -> bool:
        self._request.Wait()
        self._done()
        return True

    def is_completed(self) -> bool:
        if self._finish is None:
            return True
        if self._request.Test():
            self._done()
            return True
        return False

    def is_success(self) -> bool:
        return self.is_completed()


class _Buffer:
    """A contiguous numpy array MPI can read and write, over a tensor's memory when possible."""

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor
        view = tensor.detach().numpy()
        shares = view.size == 0 or (view.flags.writeable and view.ctypes.data == tensor.data_ptr())
        self._view = view if shares else None
        if shares and view.flags.c_contiguous:
            self.array, self.copied = view, False
        else:
            self.array, self.copied = np.ascontiguousarray(view).copy(), True

    def write_back(self) -> None:
        if not self.copied:
            return
        if self._view is not None:
            self._view[...] = self.array
        else:  # a bool tensor: its numpy() is a copy, so write through the tensor
            with no_grad():
                self.tensor.copy_(_rustgrad._from_numpy(self.array, False))


def _check_tensor(op: str, t: Any, what: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise ArgumentTypeError(f"{op}: {what} must be a rustgrad Tensor, got {type(t).__name__}")
    if t.dtype.name not in _DTYPE_CODES:
        raise DTypeError(f"{op}: {what} has dtype {t.dtype.name}, which MPI collectives do not take here")
    return t


def _check_op(name: str, op: Any, t: Tensor) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise ArgumentTypeError(
            f"{name}: op must be a rustgrad.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN or MAX), got {op!r}"
        )
    if op is ReduceOp.AVG and t.dtype.name not in _FLOATS:
        raise DTypeError(
            f"{name}: ReduceOp.AVG needs a float32 or float64 tensor, got {t.dtype.name}; "
            "use ReduceOp.SUM and divide, or convert with .float()"
        )
    if t.dtype.name == "bool" and op is ReduceOp.AVG:
        raise DTypeError(f"{name}: ReduceOp.AVG of a bool tensor is not defined; use SUM (logical or) or MIN")
    return op


def _mpi_op(g: _Group, op: ReduceOp, t: Tensor) -> Any:
    mpi = g.mpi
    if t.dtype.name == "bool":
        return mpi.LAND if op in (ReduceOp.MIN, ReduceOp.PRODUCT) else mpi.LOR
    return {
        ReduceOp.SUM: mpi.SUM, ReduceOp.AVG: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD, ReduceOp.MIN: mpi.MIN,
        ReduceOp.MAX: mpi.MAX,
    }[op]


def _record(kind: int, extra: int, t: Tensor) -> np.ndarray:
    shape = list(t.shape)
    record = np.full(_RECORD, -1, dtype=np.int64)
    record[:5] = (kind, extra, _DTYPE_CODES[t.dtype.name], len(shape), hash(tuple(shape)) & 0x7FFFFFFF)
    record[5 : 5 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
    return record


def _describe(record: np.ndarray) -> str:
    dtype = {code: name for name, code in _DTYPE_CODES.items()}.get(int(record[2]), "?")
    ndim = int(record[3])
    shape = [int(d) for d in record[5 : 5 + min(ndim, _MAX_DIMS)]] + (["..."] if ndim > _MAX_DIMS else [])
    return f"{dtype} {shape}"


def check_agreement(g: _Group, name: str, record: np.ndarray, extra_what: str = "") -> None:
    """Gathers every rank's record and raises the same error on every rank when they differ."""
    if g.size == 1:
        return
    gathered = np.empty((g.size, record.size), dtype=np.int64)
    g.comm.Allgather(record, gathered)
    differ = [r for r in range(g.size) if not np.array_equal(gathered[r], gathered[0])]
    if not differ:
        return
    per_rank = "; ".join(f"rank {r}: {_describe(gathered[r])}" for r in range(g.size))
    if any(gathered[r][0] != gathered[0][0] for r in differ):
        raise DistributedError(f"{name}: the ranks called different collectives at the same point; call the "
                               "same collectives in the same order on every rank")
    if any(gathered[r][1] != gathered[0][1] for r in differ):
        raise DistributedError(f"{name}: the ranks disagree on {extra_what or 'the op'} "
                               f"(rank 0: {gathered[0][1]}, ranks {differ} differ); pass the same value on every rank")
    if any(gathered[r][2] != gathered[0][2] for r in differ):
        raise DTypeError(f"{name}: the ranks' tensors have different dtypes ({per_rank}); every rank must pass "
                         "the same dtype")
    raise ShapeError(f"{name}: the ranks' tensors have different shapes ({per_rank}); every rank must pass the "
                     "same shape")


_ALL_REDUCE, _BROADCAST, _ALL_GATHER, _REDUCE_SCATTER = 1, 2, 3, 4


def _finisher(buffer: _Buffer, divide_by: int) -> Callable[[], None]:
    def finish() -> None:
        if divide_by > 1:
            buffer.array /= divide_by
        buffer.write_back()

    return finish


def _run(g: _Group, request: Any, finish: Callable[[], None], async_op: bool) -> Optional[Work]:
    work = Work(request, finish)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Optional[Work]:
    """Combines ``tensor`` across the ranks with ``op`` and leaves the result in ``tensor`` on every rank.

    With ``async_op=True`` it returns a ``Work`` at once; ``tensor`` holds the result after ``wait()``.
    """
    g = _group("all_reduce", group)
    tensor = _check_tensor("all_reduce", tensor)
    op = _check_op("all_reduce", op, tensor)
    check_agreement(g, "all_reduce", _record(_ALL_REDUCE, op.value, tensor), "the ReduceOp")
    buffer = _Buffer(tensor)
    sums = op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT)
    request = start_reduction(g, buffer.array, _mpi_op(g, op, tensor), sums, product=op is ReduceOp.PRODUCT)
    return _run(g, request, _finisher(buffer, g.size if op is ReduceOp.AVG else 1), async_op)


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False) -> Optional[Work]:
    """Copies rank ``src``'s ``tensor`` into ``tensor`` on every other rank."""
    g = _group("broadcast", group)
    tensor = _check_tensor("broadcast", tensor)
    _check_rank(g, "broadcast", "src", src)
    check_agreement(g, "broadcast", _record(_BROADCAST, src, tensor), "src")
    buffer = _Buffer(tensor)
    request = g.comm.Ibcast(buffer.array, root=src)
    return _run(g, request, _finisher(buffer, 1), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False) -> Optional[Work]:
    """Fills ``tensor_list[r]`` with rank ``r``'s ``tensor``, on every rank. The ranks' tensors are
    gathered into one contiguous buffer, then copied into the list's tensors."""
    g = _group("all_gather", group)
    tensor = _check_tensor("all_gather", tensor)
    _check_list(g, "all_gather", "tensor_list", tensor_list, tensor)
    check_agreement(g, "all_gather", _record(_ALL_GATHER, 0, tensor))
    send = _Buffer(tensor).array
    gathered = np.empty((g.size, *send.shape), dtype=send.dtype)
    request = g.comm.Iallgather(send, gathered)

    def finish() -> None:
        for out, part in zip(tensor_list, gathered):
            _copy_into(out, part)

    return _run(g, request, finish, async_op)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Optional[Work]:
    """Combines ``input_list[r]`` across the ranks with ``op`` and leaves it in ``output`` on rank ``r``.
    The inputs are concatenated into one buffer (a copy); ``output`` receives in place."""
    g = _group("reduce_scatter", group)
    output = _check_tensor("reduce_scatter", output, "output")
    op = _check_op("reduce_scatter", op, output)
    _check_list(g, "reduce_scatter", "input_list", input_list, output)
    check_agreement(g, "reduce_scatter", _record(_REDUCE_SCATTER, op.value, output), "the ReduceOp")
    buffer = _Buffer(output)
    send = np.stack([_Buffer(t).array for t in input_list]) if input_list else buffer.array[None]
    request = g.comm.Ireduce_scatter_block(send, buffer.array, op=_mpi_op(g, op, output))
    return _run(g, request, _finisher(buffer, g.size if op is ReduceOp.AVG else 1), async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Optional[Work]:
    """Waits until every rank has reached the barrier."""
    g = _group("barrier", group)
    return _run(g, g.comm.Ibarrier(), lambda: None, async_op)


def _check_rank(g: _Group, name: str, what: str, rank: Any) -> None:
    if not isinstance(rank, int) or isinstance(rank, bool):
        raise ArgumentTypeError(f"{name}: {what} must be an int rank, got {type(rank).__name__}")
    if not 0 <= rank < g.size:
        raise DistributedError(f"{name}: {what}={rank} is not a rank of this group of {g.size} (0 to {g.size - 1})")


def _check_list(g: _Group, name: str, what: str, tensors: Sequence[Tensor], like: Tensor) -> None:
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(f"{name}: {what} must be a list of tensors, got {type(tensors).__name__}")
    if len(tensors) != g.size:
        raise ShapeError(f"{name}: {what} has {len(tensors)} tensors; it needs one per rank ({g.size})")
    for i, t in enumerate(tensors):
        _check_tensor(name, t, f"{what}[{i}]")
        if t.dtype != like.dtype:
            raise DTypeError(
                f"{name}: {what}[{i}] is {t.dtype.name} but the tensor is {like.dtype.name}; every tensor of "
                f"{what} must have its dtype"
            )
        if list(t.shape) != list(like.shape):
            raise ShapeError(
                f"{name}: {what}[{i}] is {t.dtype.name} {list(t.shape)} but the tensor is "
                f"{like.dtype.name} {list(like.shape)}; every tensor of {what} must have its shape and dtype"
            )


def _copy_into(t: Tensor, values: np.ndarray) -> None:
    buffer = _Buffer(t)
    buffer.array[...] = values
    buffer.write_back()
