"""Static mode (TF1 graphs) over MPI, after Horovod: ``DistributedOptimizer`` and
``broadcast_global_variables``.

The collectives are graph nodes (``HorovodAllreduce``, ``HorovodBroadcast``) that run inside
``Session.run``'s one call into the Rust core, with the GIL released. The core calls MPI itself:
it resolves ``MPI_Allgather``, ``MPI_Alltoall``, ``MPI_Bcast`` and ``MPI_Allreduce`` from the libmpi
that mpi4py loaded, on the handles mpi4py gives (``MPI._handleof``). When mpi4py offers no handles
(``_handleof`` is private to mpi4py) or no loaded library defines MPI, the same nodes call mpi4py
instead, after one warning.

Small gradients are fused (Horovod's tensor fusion): the gradients of one dtype go, in order, into
buffers of at most ``fusion_threshold_bytes`` (``HOROVOD_FUSION_THRESHOLD``, 64 MiB by default), one
allreduce per buffer. Averages are summed in rank order, so every rank gets the same bits and a
rerun repeats them (``deterministic=False``: ``MPI_Allreduce``'s own order, see docs/distributed.md).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional, Sequence

from rustgrad import _rustgrad
from rustgrad.distributed._group import _Group, _group
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["DistributedOptimizer", "broadcast_global_variables"]

_DEFAULT_FUSION_THRESHOLD = 64 * 1024 * 1024


_communicators: dict[int, Any] = {}
_warned = False


def _handles(g: _Group) -> Optional[dict]:
    mpi = g.mpi
    handleof, sizeof = getattr(mpi, "_handleof", None), getattr(mpi, "_sizeof", None)
    if handleof is None or sizeof is None:
        return None
    return {
        "comm": handleof(g.comm), "handle_bytes": sizeof(mpi.Comm), "byte": handleof(mpi.BYTE),
        "float": handleof(mpi.FLOAT), "double": handleof(mpi.DOUBLE), "sum": handleof(mpi.SUM),
    }


def communicator(g: Optional[_Group] = None) -> Any:
    """The core's communicator for the process group (made once per group): MPI called from
    Rust when mpi4py gives the handles, else mpi4py, after one ``RuntimeWarning``."""
    global _warned
    g = g or _group("communicator")
    key = id(g)
    if key in _communicators:
        return _communicators[key][1]
    handles, why = _handles(g), "mpi4py has no MPI._handleof/MPI._sizeof"
    comm = None
    if handles is not None:
        sizes = {g.mpi._sizeof(g.mpi.Datatype), g.mpi._sizeof(g.mpi.Op), handles["handle_bytes"]}
        if len(sizes) != 1:
            why = f"MPI's communicator, datatype and op handles differ in size ({sorted(sizes)} bytes)"
        else:
            try:
                comm = _rustgrad._mpi_communicator(**handles, library=os.environ.get("RUSTGRAD_LIBMPI"))
            except Exception as err:  # noqa: BLE001 - any failure to bind means: use mpi4py
                why = str(err)
    if comm is None:
        if not _warned:
            _warned = True
            warnings.warn(f"rustgrad.distributed: static collectives go through mpi4py from Python (slower): {why}",
                          RuntimeWarning, stacklevel=3)
        comm = _rustgrad._mpi4py_communicator(g.comm, g.mpi)
    _communicators[key] = (g, comm)  # keeps g alive, so id(g) is not reused while cached
    return comm


def _fusion_threshold(value: Optional[int]) -> int:
    if value is None:
        env = os.environ.get("HOROVOD_FUSION_THRESHOLD")
        try:
            value = int(env) if env else _DEFAULT_FUSION_THRESHOLD
        except ValueError:
            raise InvalidArgumentError(f"HOROVOD_FUSION_THRESHOLD={env!r} is not a number of bytes") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ArgumentTypeError(f"fusion_threshold_bytes must be a number of bytes >= 0, got {value!r}")
    return value


def _buckets(items: Sequence[tuple[Any, Any]], threshold: int) -> list[list[tuple[Any, Any]]]:
    """``(tensor, variable)`` pairs in buffers: by dtype, in order, each at most ``threshold``
    bytes (a tensor larger than that alone)."""
    buckets: list[list[tuple[Any, Any]]] = []
    open_bucket: dict[Any, tuple[list, int]] = {}
    for t, v in items:
        size = _numel(v) * v.dtype.itemsize
        bucket, used = open_bucket.get(v.dtype, (None, 0))
        if bucket is None or used + size > threshold:
            bucket, used = [], 0
            buckets.append(bucket)
        bucket.append((t, v))
        open_bucket[v.dtype] = (bucket, used + size)
    return buckets


def _numel(v: Any) -> int:
    n = 1
    for d in v.shape.as_list():
        n *= d
    return n


def _unfused(graph: Any, flat: int, pairs: list[tuple[Any, Any]], what: str) -> list[Any]:
    from rustgrad.static._graph import Tensor

    out, offset = [], 0
    for _, v in pairs:
        shape = v.shape.as_list()
        node = _rustgrad._static_unfuse(graph._core, flat, offset, shape, f"{what}/{v.op.name}")
        out.append(Tensor(graph, node))
        offset += _numel(v)
    return out


def _allreduce_gradients(grads_and_vars: list[tuple[Any, Any]], threshold: int, deterministic: bool,
                         name: str) -> list[tuple[Any, Any]]:
    from rustgrad.static._graph import convert_to_tensor

    present = [(g, v) for g, v in grads_and_vars if g is not None]
    if not present:
        return grads_and_vars
    graph = present[0][1].graph
    comm = communicator()
    averaged: dict[int, Any] = {}
    for bucket in _buckets([(convert_to_tensor(g, v.dtype, graph), v) for g, v in present], threshold):
        names = [f"gradient of {v.op.name}" for _, v in bucket]
        flat = _rustgrad._static_allreduce(graph._core, comm, [g._id for g, _ in bucket], names, deterministic,
                                           f"{name}/HorovodAllreduce")
        for (_, v), g in zip(bucket, _unfused(graph, flat, bucket, f"{name}/averaged")):
            averaged[id(v)] = g
    return [(averaged.get(id(v)) if g is not None else None, v) for g, v in grads_and_vars]


class DistributedOptimizer:
    """Wraps a ``rustgrad.static.train`` optimizer (Horovod's ``hvd.DistributedOptimizer``):
    ``compute_gradients`` adds, after the wrapped optimizer's gradients, allreduce nodes that
    average them over the ranks, so ``apply_gradients`` (and ``minimize``) apply the mean gradient.

    ``fusion_threshold_bytes``: gradients are fused into buffers of at most this many bytes (default
    ``HOROVOD_FUSION_THRESHOLD`` or 64 MiB; 0 gives each gradient its own allreduce).
    ``deterministic``: sum in rank order (bitwise equal ranks and reruns); False uses
    ``MPI_Allreduce``'s sum. Needs ``init_process_group`` first. Every rank must build the same
    graph and run the same fetches: the collectives run in graph order on every rank.
    """

    def __init__(self, optimizer: Any, name: Optional[str] = None, use_locking: bool = False,
                 device_dense: str = "", device_sparse: str = "", compression: Any = None,
                 sparse_as_dense: bool = False, backward_passes_per_step: int = 1,
                 fusion_threshold_bytes: Optional[int] = None, deterministic: bool = True) -> None:
        from rustgrad.static._optimizers import Optimizer

        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError(
                f"DistributedOptimizer: expected a rustgrad.static.train optimizer (GradientDescentOptimizer, "
                f"AdamOptimizer, ...), got {type(optimizer).__name__}; for eager mode use "
                "rustgrad.nn.parallel.DistributedDataParallel"
            )
        if compression is not None or backward_passes_per_step != 1:
            raise InvalidArgumentError(
                "DistributedOptimizer: compression and backward_passes_per_step other than 1 are not supported; "
                "leave them out"
            )
        _group("DistributedOptimizer")
        self._optimizer = optimizer
        self._name = name or f"Distributed{optimizer.get_name()}"
        self._threshold = _fusion_threshold(fusion_threshold_bytes)
        self._deterministic = bool(deterministic)

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        """The wrapped optimizer's (gradient, variable) pairs, with each gradient averaged over the ranks."""
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        return _allreduce_gradients(list(grads_and_vars), self._threshold, self._deterministic, self._name)

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(*args, **kwargs)

    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None, gate_gradients: int = 1,
                 aggregation_method: Any = None, colocate_gradients_with_ops: bool = False,
                 name: Optional[str] = None, grad_loss: Any = None) -> Any:
        """``compute_gradients`` (averaged over the ranks), then ``apply_gradients``: one training step."""
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if all(g is None for g, _ in grads_and_vars):
            raise InvalidArgumentError(
                f"minimize: No gradients provided for any variable: {[v.name for _, v in grads_and_vars]}"
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self) -> list[str]:
        return self._optimizer.get_slot_names()

    def variables(self) -> list[Any]:
        return self._optimizer.variables()

    def get_name(self) -> str:
        return self._name


def broadcast_global_variables(root_rank: int = 0, *, root: Optional[int] = None) -> Any:
    """An op that, run in a Session, overwrites every global variable of the default graph with
    rank ``root_rank``'s value (Horovod's ``hvd.broadcast_global_variables``; ``root=`` is the same).
    Run it once after the initializer, on every rank, so all ranks start from the same weights."""
    from rustgrad.static._graph import Operation, get_default_graph
    from rustgrad.static._variables import global_variables

    root_rank = root_rank if root is None else root
    g = _group("broadcast_global_variables")
    if isinstance(root_rank, bool) or not isinstance(root_rank, int):
        raise ArgumentTypeError(f"broadcast_global_variables: root_rank must be an int, got {root_rank!r}")
    if not 0 <= root_rank < g.size:
        raise InvalidArgumentError(
            f"broadcast_global_variables: root_rank={root_rank} is not a rank of this group of {g.size} "
            f"(0 to {g.size - 1})"
        )
    graph = get_default_graph()
    variables = global_variables(graph=graph)
    comm = communicator(g)
    assigns = []
    with graph.name_scope("broadcast_global_variables"):
        for bucket in _buckets([(v, v) for v in variables], _fusion_threshold(None)):
            names = [v.op.name for v, _ in bucket]
            flat = _rustgrad._static_broadcast(graph._core, comm, [v._id for v, _ in bucket], names, root_rank,
                                               "HorovodBroadcast")
            for (v, _), value in zip(bucket, _unfused(graph, flat, bucket, "broadcast")):
                assigns.append(v.assign(value))
    return Operation(graph, graph._core.group([a._id for a in assigns], "broadcast_global_variables"))
