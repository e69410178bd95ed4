"""``rustgrad.static.nn``: activation functions for graphs."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.static._generated_nn import *  # noqa: F403 - the op table's tf.nn functions
from rustgrad.static._generated_nn import __all__ as _op_table_names
from rustgrad.static._generated_ops import exp, log
from rustgrad.static._graph import Tensor, convert_to_tensor
from rustgrad.static._nn_layers import batch_normalization, bias_add, dropout, embedding_lookup, fused_batch_norm
from rustgrad.static._ops import reduce_max, reduce_sum, stop_gradient
from rustgrad.static._reductions import moments, top_k

__all__ = [
    "batch_normalization", "bias_add", "dropout", "embedding_lookup", "fused_batch_norm", "log_softmax", "moments",
    "softmax", "top_k", *_op_table_names,
]


def _axis(axis: Optional[int], dim: Optional[int], rank: Optional[int]) -> int:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    axis = -1 if axis is None else int(axis)
    if rank is not None:
        if not -rank <= axis < max(rank, 1):
            raise ValueError(f"softmax: axis {axis} is out of range for a tensor of rank {rank}")
        if axis < 0:
            axis += rank
    return axis


def _shifted(logits: Any, axis: Optional[int], dim: Optional[int]) -> tuple[Tensor, int]:
    x = convert_to_tensor(logits)
    if not x.dtype.is_floating_point:
        raise TypeError(f"softmax: logits must be float32 or float64, got {x.dtype.name}")
    ax = _axis(axis, dim, x.shape.rank)
    # The max is a constant shift for the gradient (it cancels out), so it does not need one.
    return x - stop_gradient(reduce_max(x, axis=ax, keepdims=True)), ax


def softmax(logits: Any, axis: Optional[int] = None, name: Optional[str] = None,
            dim: Optional[int] = None) -> Tensor:
    """exp(logits) / reduce_sum(exp(logits), axis), computed stably; ``axis`` defaults to the last."""
    shifted, ax = _shifted(logits, axis, dim)
    e = exp(shifted)
    return e.graph._op("binary", ("div",), [e, reduce_sum(e, axis=ax, keepdims=True)], name or "Softmax")


def log_softmax(logits: Any, axis: Optional[int] = None, name: Optional[str] = None,
                dim: Optional[int] = None) -> Tensor:
    """logits - log(reduce_sum(exp(logits), axis)), computed stably; ``axis`` defaults to the last."""
    shifted, ax = _shifted(logits, axis, dim)
    lse = log(reduce_sum(exp(shifted), axis=ax, keepdims=True))
    return shifted.graph._op("binary", ("sub",), [shifted, lse], name or "LogSoftmax")
