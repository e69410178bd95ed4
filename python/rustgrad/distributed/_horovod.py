"""Horovod's conveniences: start every rank from rank ``root``'s parameters and optimizer state."""

from __future__ import annotations

from typing import Any

from rustgrad._rustgrad import Tensor
from rustgrad.distributed._collectives import broadcast
from rustgrad.distributed._group import _group
from rustgrad.errors import ArgumentTypeError

__all__ = ["broadcast_optimizer_state", "broadcast_parameters"]


def _named_tensors(params: Any) -> list[tuple[str, Tensor]]:
    if hasattr(params, "state_dict") and hasattr(params, "named_parameters"):  # a Module
        return list(params.state_dict().items())
    if isinstance(params, dict):
        return sorted(params.items())
    if isinstance(params, Tensor):
        return [("0", params)]
    try:
        items = list(params)
    except TypeError:
        items = None
    if items is None:
        raise ArgumentTypeError(
            "broadcast_parameters: expected a Module, a state dict, or an iterable of tensors or (name, tensor) "
            f"pairs, got {type(params).__name__}"
        )
    return [item if isinstance(item, tuple) else (str(i), item) for i, item in enumerate(items)]


def broadcast_parameters(params: Any, root: int = 0) -> None:
    """Overwrites, in place, every tensor of ``params`` with rank ``root``'s: a Module (its parameters
    and buffers), a state dict, ``model.named_parameters()`` or a list of tensors. Every rank must
    pass the same tensors in the same order (dicts are visited in sorted key order, as Horovod does)."""
    _group("broadcast_parameters")
    for name, t in _named_tensors(params):
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"broadcast_parameters: {name!r} is a {type(t).__name__}, not a Tensor")
        broadcast(t, root)


def broadcast_optimizer_state(optimizer: Any, root: int = 0) -> None:
    """Makes every rank's ``optimizer`` hold rank ``root``'s state (step counts, moments, learning rates):
    rank ``root``'s ``state_dict()`` is pickled, broadcast, and loaded with ``load_state_dict`` elsewhere.
    The optimizers must have been built over the same parameters in the same order on every rank."""
    g = _group("broadcast_optimizer_state")
    if not hasattr(optimizer, "state_dict") or not hasattr(optimizer, "load_state_dict"):
        raise ArgumentTypeError(
            f"broadcast_optimizer_state: expected an optimizer (with state_dict/load_state_dict), got "
            f"{type(optimizer).__name__}"
        )
    state = g.comm.bcast(optimizer.state_dict() if g.rank == root else None, root=root)
    if g.rank != root:
        optimizer.load_state_dict(state)
