"""``DistributedDataParallel``: one model replica per MPI rank, gradients averaged in buckets."""

from __future__ import annotations

import contextlib
import functools
import zlib
from typing import Any, Iterator, Optional

import numpy as np

from rustgrad._grad_mode import is_grad_enabled
from rustgrad._rustgrad import Tensor
from rustgrad._variable import Variable
from rustgrad.distributed._collectives import broadcast, check_agreement
from rustgrad.distributed._group import DistributedError, _group
from rustgrad.distributed._ordered import start_reduction
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.nn.modules.module import Module
from rustgrad.nn.parallel._buckets import copy_grad_in, copy_grad_out, make_buckets

__all__ = ["DistributedDataParallel"]

_LAYOUT = 9  # the kind code of DDP's layout record in check_agreement


def _key(t: Tensor) -> tuple[int, tuple[int, ...], str]:
    """Identifies a parameter seen through the autograd graph (``AccumulateGrad.variable`` is a new
    Python object for the same tensor, so identity cannot be used)."""
    return (t.data_ptr(), tuple(t.shape), t.dtype.name)


def _output_tensors(out: Any) -> Iterator[Tensor]:
    if isinstance(out, Tensor):
        yield out
    elif isinstance(out, (list, tuple)):
        for item in out:
            yield from _output_tensors(item)
    elif isinstance(out, dict):
        for item in out.values():
            yield from _output_tensors(item)


def _reachable_leaves(out: Any) -> set[tuple[int, tuple[int, ...], str]]:
    """The keys of the leaves whose gradient a backward from ``out`` can reach."""
    found: set[tuple[int, tuple[int, ...], str]] = set()
    stack = [t.grad_fn for t in _output_tensors(out) if t.grad_fn is not None]
    seen: set[Any] = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for child, _ in node.next_functions:
            if child is None:
                continue
            if hasattr(child, "variable"):
                found.add(_key(child.variable))
            else:
                stack.append(child)
    for t in _output_tensors(out):
        if t.grad_fn is None and t.requires_grad:
            found.add(_key(t))
    return found


class DistributedDataParallel(Module):
    """Wraps ``module`` so that ``backward()`` leaves, on every rank, the gradients averaged over the ranks.

    Construction checks that every rank has the same parameters and broadcasts rank 0's parameters and
    buffers. Each forward in grad mode arms the buckets; each parameter's post-accumulate-grad hook runs
    as soon as backward has finished its gradient, copies it into its bucket, and a full bucket starts its
    ``Iallreduce`` (in bucket order) while backward goes on. A callback at the end of the backward pass
    (``Variable._execution_engine.queue_callback``) waits for all of them and writes the averages into
    ``.grad``, so the gradients are averaged when ``backward()`` returns.

    ``find_unused_parameters=True`` walks the autograd graph from the forward's outputs, as torch does,
    and counts the parameters it does not reach as ready with a zero gradient; a parameter no rank used
    keeps its ``.grad`` (None), and one some rank used gets the average. With the default ``False`` every
    parameter must get a gradient: if one did not, the next forward raises ``DistributedError`` (a forward
    with no backward after it is not an error).
    ``broadcast_buffers`` broadcasts rank 0's buffers before each forward. ``device_ids``,
    ``output_device``, ``dim``, ``process_group`` (only the default group exists), ``check_reduction``,
    ``gradient_as_bucket_view`` and ``static_graph`` are accepted and ignored.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: Optional[float] = 25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise ArgumentTypeError(
                f"DistributedDataParallel: module must be an nn.Module, got {type(module).__name__}"
            )
        cap = 25.0 if bucket_cap_mb is None else bucket_cap_mb
        if not isinstance(cap, (int, float)) or cap <= 0:
            raise InvalidArgumentError(f"DistributedDataParallel: bucket_cap_mb must be a positive number, got {cap!r}")
        self._group = _group("DistributedDataParallel", process_group)
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._params = [p for p in module.parameters() if p.requires_grad and p.numel() > 0]
        self._check_same_parameters_everywhere()
        for t in module.state_dict().values():
            broadcast(t, 0)
        self._buckets = make_buckets(self._params, int(cap * 1024 * 1024))
        self._where = {_key(p): (b, i) for b, bucket in enumerate(self._buckets) for i, p in enumerate(bucket.params)}
        self._index = {(b, i): j for j, p in enumerate(self._params) for b, i in [self._where[_key(p)]]}
        self._position = [self._where[_key(p)] for p in self._params]
        self._handles = [
            p.register_post_accumulate_grad_hook(functools.partial(self._grad_ready, b, i))
            for b, bucket in enumerate(self._buckets)
            for i, p in enumerate(bucket.params)
        ]
        self._armed = self._hooks_fired = self._callback_queued = False
        self._ready: set[tuple[int, int]] = set()
        self._next_bucket = 0
        self._in_flight: list[Any] = []
        self._locally_used = np.ones(len(self._params), dtype=np.int32)

    def _check_same_parameters_everywhere(self) -> None:
        layout = repr([(tuple(p.shape), p.dtype.name) for p in self._params]).encode()
        record = np.array([_LAYOUT, 0, len(self._params), len(layout), zlib.crc32(layout)], dtype=np.int64)
        try:
            check_agreement(self._group, "DistributedDataParallel", np.pad(record, (0, 8), constant_values=-1))
        except Exception as err:
            layouts = self._group.comm.allgather([(list(p.shape), p.dtype.name) for p in self._params])
            detail = "; ".join(f"rank {r}: {len(x)} parameters {x[:4]}{'...' if len(x) > 4 else ''}"
                               for r, x in enumerate(layouts))
            raise type(err)(
                f"DistributedDataParallel: the ranks' modules have different parameters ({detail}); build the same "
                "model on every rank"
            ) from None

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without averaging them; the first
        backward after it averages the accumulated gradients."""
        old, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._armed and self._hooks_fired:
            self._armed = False
            missing = [n for n, p in self.module.named_parameters() if p.requires_grad and p.numel() > 0
                       and self._where.get(_key(p)) not in self._ready]
            raise DistributedError(
                "DistributedDataParallel: expected to have finished reduction in the prior iteration before starting "
                f"a new one; these parameters got no gradient: {missing}. Pass find_unused_parameters=True, or make "
                "sure every parameter takes part in computing the loss (and call backward after each forward)"
            )
        if self.broadcast_buffers:
            for _, buf in self.module.named_buffers():
                broadcast(buf, 0)
        out = self.module(*args, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync and self._params:
            self._arm(out)
        return out

    def _arm(self, out: Any) -> None:
        self._ready = set()
        self._next_bucket = 0
        self._in_flight = []
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
            bucket.request = None
        self._locally_used[:] = 1
        if self.find_unused_parameters:
            reached = _reachable_leaves(out)
            for j, p in enumerate(self._params):
                if _key(p) not in reached:
                    self._locally_used[j] = 0
                    self._mark_ready(*self._position[j], None)
        self._hooks_fired = False  # a forward with no backward after it (no hook ran) is simply re-armed
        self._callback_queued = False  # a failed backward drops the callback its first hook queued
        self._armed = True

    def _grad_ready(self, b: int, i: int, param: Tensor) -> None:
        if not self._armed:
            return  # under no_sync, or a backward without a DDP forward: gradients stay local
        self._hooks_fired = True
        if not self._callback_queued:
            Variable._execution_engine.queue_callback(self._end_of_backward)
            self._callback_queued = True
        self._mark_ready(b, i, param.grad)
        self._start_ready_buckets()

    def _mark_ready(self, b: int, i: int, grad: Optional[Tensor]) -> None:
        if (b, i) in self._ready:
            raise DistributedError(
                "DistributedDataParallel: a parameter's gradient was produced twice in one iteration (backward "
                "called twice after one forward?); call the wrapped model once per backward"
            )
        self._ready.add((b, i))
        bucket = self._buckets[b]
        copy_grad_in(bucket, i, grad)
        bucket.pending -= 1

    def _start_ready_buckets(self) -> None:
        g = self._group
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            bucket = self._buckets[self._next_bucket]
            bucket.request = start_reduction(g, bucket.flat, g.mpi.SUM, sum_or_product=True)
            self._in_flight.append(bucket.request)
            self._next_bucket += 1
        # MPI moves a non-blocking collective on only inside MPI calls: each hook gives it a nudge
        # (and moves an ordered sum from its scatter to its gather).
        self._in_flight = [r for r in self._in_flight if not r.test()]

    def _end_of_backward(self) -> None:
        """Queued by the first hook of each backward pass; runs when the pass is over."""
        self._callback_queued = False
        if self._armed and self._next_bucket == len(self._buckets):
            self._finish()
        # Otherwise some parameter got no gradient in this pass: a later backward may still bring it
        # (its hooks queue this again), or the next forward reports it.

    def _finish(self) -> None:
        """Waits for every bucket and writes the averaged gradients into ``.grad``."""
        self._armed = False
        self._in_flight = []
        g = self._group
        used = self._locally_used
        if self.find_unused_parameters:
            used = used.copy()
            g.comm.Allreduce(g.mpi.IN_PLACE, used, op=g.mpi.MAX)
        for b, bucket in enumerate(self._buckets):
            bucket.request.Wait()
            bucket.flat /= g.size
            for i, p in enumerate(bucket.params):
                if used[self._index[(b, i)]]:
                    copy_grad_out(bucket, i, p)
