"""TF1's gradient clipping by norm: ``tf.clip_by_norm``, ``tf.clip_by_global_norm`` and
``tf.global_norm``, with TF1's formulas (including its handling of a zero, infinite or NaN norm)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rustgrad.errors import ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError
from rustgrad.static._graph import Tensor, convert_to_tensor
from rustgrad.static._ops import maximum, minimum, ones_like, reduce_sum, where

__all__ = ["clip_by_global_norm", "clip_by_norm", "global_norm"]


def global_norm(t_list: Sequence[Any], name: Optional[str] = None) -> Tensor:
    """``sqrt(sum(l2_loss(t) for t in t_list) * 2)``: the L2 norm of all the tensors taken together.
    None entries are skipped; the tensors must share one dtype."""
    values = [t for t in _tensor_list("global_norm", t_list) if t is not None]
    if not values:
        raise InvalidArgumentError("global_norm: t_list holds no tensors (every entry is None)")
    for v in values[1:]:
        if v.dtype != values[0].dtype:
            raise DTypeError(
                f"global_norm: the tensors must have one dtype, got {values[0].dtype.name} ({values[0].name}) "
                f"and {v.dtype.name} ({v.name}); cast them with tf.cast"
            )
    graph = values[0].graph
    half_squared = [graph._op("sum", (None, False), [v * v]) * 0.5 for v in values]
    total = half_squared[0]
    for h in half_squared[1:]:
        total = total + h
    return graph._op("identity", (), [(total * 2.0).sqrt()], name or "global_norm")


def clip_by_global_norm(t_list: Sequence[Any], clip_norm: Any, use_norm: Any = None,
                        name: Optional[str] = None) -> tuple[list[Optional[Tensor]], Tensor]:
    """``(t * clip_norm / max(global_norm, clip_norm) for t in t_list), global_norm``: every tensor
    scaled by one factor so that their global norm is at most ``clip_norm``. None entries stay None
    (gradients of variables the loss does not reach). ``use_norm`` replaces the computed global norm.
    As TF1, an infinite or NaN global norm makes every clipped value NaN."""
    values = _tensor_list("clip_by_global_norm", t_list)
    if use_norm is None:
        use_norm = global_norm(values)
    present = [v for v in values if v is not None]
    graph = present[0].graph if present else use_norm.graph if isinstance(use_norm, Tensor) else None
    use_norm = convert_to_tensor(use_norm, None, graph)
    clip = _scalar_like(clip_norm, use_norm)
    scale_for_finite = minimum(1.0 / use_norm, 1.0 / clip) * clip
    scale = scale_for_finite + (use_norm - use_norm)  # NaN when the norm is infinite or NaN
    prefix = name or "clip_by_global_norm"
    clipped: list[Optional[Tensor]] = []
    for i, v in enumerate(values):
        if v is None:
            clipped.append(None)
            continue
        factor = scale if scale.dtype == v.dtype else v.graph._op("cast", (v.dtype,), [scale])
        clipped.append(v.graph._op("identity", (), [v * factor], f"{prefix}_{i}"))
    return clipped, use_norm


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: Optional[str] = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t), clip_norm)``: ``t`` rescaled so that its L2 norm (over
    ``axes``, default all) is at most ``clip_norm``; unchanged where the norm is already smaller."""
    values = convert_to_tensor(t)
    if not values.dtype.is_floating:
        raise DTypeError(f"clip_by_norm: t must be a floating-point tensor, got {values.dtype.name}")
    l2sum = reduce_sum(values * values, axes, keepdims=True)
    positive = l2sum > 0.0
    # Two wheres keep the gradient of sqrt finite at a zero norm, as in TF1.
    l2sum_safe = where(positive, l2sum, ones_like(l2sum))
    l2norm = where(positive, l2sum_safe.sqrt(), l2sum)
    clip = _scalar_like(clip_norm, values)
    intermediate = values * clip
    if tuple(intermediate.shape) != tuple(values.shape):
        raise ShapeError(
            f"clip_by_norm: clip_norm of shape {getattr(clip, 'shape', ())} would broadcast t of shape "
            f"{values.shape} to {intermediate.shape}; pass a scalar clip_norm"
        )
    return values.graph._op("identity", (), [intermediate / maximum(l2norm, clip)], name or "clip_by_norm")


def _tensor_list(op: str, t_list: Any) -> list[Optional[Tensor]]:
    if isinstance(t_list, (str, bytes)) or not isinstance(t_list, (list, tuple)):
        raise ArgumentTypeError(f"{op}: t_list should be a sequence (a list of tensors), got {type(t_list).__name__}")
    first = next((t for t in t_list if isinstance(t, Tensor)), None)
    graph = first.graph if first is not None else None
    return [None if t is None else convert_to_tensor(t, None, graph) for t in t_list]


def _scalar_like(value: Any, like: Tensor) -> Any:
    """``clip_norm`` as a Python float, or as a tensor of ``like``'s dtype."""
    if isinstance(value, Tensor):
        like.graph._own(value)
        return value if value.dtype == like.dtype else like.graph._op("cast", (like.dtype,), [value])
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"clip_norm must be a number or a graph Tensor, got {value!r}") from None
