"""``rustgrad.static.nn``: activation functions and losses for graphs.

``softmax`` and ``log_softmax`` are the op table's fused ops (generated); the TF1 losses
below are built on them and on the table's ``cross_entropy``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import DTypeError, InvalidArgumentError, ShapeError
from rustgrad.static._generated_nn import *  # noqa: F403 - the op table's tf.nn functions
from rustgrad.static._generated_nn import __all__ as _op_table_names
from rustgrad.static._generated_nn import log_softmax, relu
from rustgrad.static._generated_ops import abs as _abs
from rustgrad.static._generated_ops import exp as _exp
from rustgrad.static._generated_ops import log1p, transpose
from rustgrad.static._graph import Tensor, _apply, convert_to_tensor
from rustgrad.static._nn_layers import batch_normalization, bias_add, dropout, embedding_lookup, fused_batch_norm
from rustgrad.static._ops import reduce_sum, stop_gradient
from rustgrad.static._reductions import moments, top_k

__all__ = [
    "batch_normalization", "bias_add", "dropout", "embedding_lookup", "fused_batch_norm", "l2_loss", "moments",
    "sigmoid_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits", "top_k",
    *_op_table_names,
]

# TF has no ignored label: a value no label can take.
_NO_IGNORED_LABEL = -(2**63)


def _named_only(sentinel: Any, name: str) -> None:
    if sentinel is not None:
        raise InvalidArgumentError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")


def _float_logits(logits: Any, name: str) -> Tensor:
    x = convert_to_tensor(logits)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{name}: logits must be float32 or float64, got {x.dtype.name}")
    return x


def _same_shape(labels: Tensor, logits: Tensor, name: str) -> None:
    a, b = labels.shape, logits.shape
    if a.rank is None or b.rank is None:
        return
    if a.rank != b.rank or any(x is not None and y is not None and x != y for x, y in zip(a, b)):
        raise ShapeError(f"{name}: logits and labels must have the same shape ({b} vs {a})")


def _softmax_cross_entropy(labels: Any, logits: Any, axis: int, name: Optional[str], op: str) -> Tensor:
    if labels is None or logits is None:
        raise InvalidArgumentError(f"{op}: both labels and logits are required")
    x = _float_logits(logits, op)
    y = convert_to_tensor(labels, x.dtype, x.graph)
    _same_shape(y, x, op)
    return -reduce_sum(y * log_softmax(x, axis=axis), axis=axis, name=name)


def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      dim: int = -1, name: Optional[str] = None, axis: Optional[int] = None) -> Tensor:
    """-sum(labels * log_softmax(logits)) along ``dim``, one loss per row; no gradient flows into
    ``labels`` (TF1's deprecated v1; ``softmax_cross_entropy_with_logits_v2`` lets it)."""
    _named_only(_sentinel, "softmax_cross_entropy_with_logits")
    if labels is not None:
        labels = stop_gradient(convert_to_tensor(labels, _float_logits(logits, "softmax_cross_entropy_with_logits")
                                                 .dtype))
    return _softmax_cross_entropy(labels, logits, dim if axis is None else axis, name,
                                  "softmax_cross_entropy_with_logits")


def softmax_cross_entropy_with_logits_v2(labels: Any, logits: Any, axis: Optional[int] = None,
                                         name: Optional[str] = None, dim: Optional[int] = None) -> Tensor:
    """-sum(labels * log_softmax(logits)) along ``axis`` (the last by default), one loss per row;
    gradients flow into both ``labels`` and ``logits``."""
    if axis is not None and dim is not None:
        raise InvalidArgumentError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    return _softmax_cross_entropy(labels, logits, -1 if axis is None else axis, name,
                                  "softmax_cross_entropy_with_logits_v2")


def sparse_softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                             name: Optional[str] = None) -> Tensor:
    """-log_softmax(logits)[label] per row: ``labels`` (int32 or int64) holds one class per row of
    ``logits`` (its last dim); a label outside [0, classes) raises. The op table's fused
    ``cross_entropy``."""
    _named_only(_sentinel, "sparse_softmax_cross_entropy_with_logits")
    if labels is None or logits is None:
        raise InvalidArgumentError("sparse_softmax_cross_entropy_with_logits: both labels and logits are required")
    x = _float_logits(logits, "sparse_softmax_cross_entropy_with_logits")
    y = convert_to_tensor(labels, None, x.graph)
    if y.dtype.name not in ("int32", "int64"):
        raise DTypeError(f"sparse_softmax_cross_entropy_with_logits: labels must be int32 or int64, got {y.dtype.name}")
    rank, label_rank = x.shape.rank, y.shape.rank
    if rank is not None and label_rank is not None and label_rank != rank - 1:
        raise ShapeError(f"Rank mismatch: Rank of labels (received {label_rank}) should equal rank of logits minus 1 "
                         f"(received {rank}).")
    if rank is not None and rank > 2:
        # TF's classes are the last dim; the op's are dim 1.
        x = transpose(x, [0, rank - 1, *range(1, rank - 1)])
    no_weight = convert_to_tensor(np.zeros(0, dtype=x.dtype.name), x.dtype, x.graph)
    return _apply(_ops["cross_entropy"], [x, y, no_weight], name or "SparseSoftmaxCrossEntropyWithLogits",
                  (_NO_IGNORED_LABEL, "none", 0.0))


def sigmoid_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      name: Optional[str] = None) -> Tensor:
    """max(x, 0) - x z + log(1 + exp(-|x|)) elementwise, for logits x and labels z: the stable form."""
    _named_only(_sentinel, "sigmoid_cross_entropy_with_logits")
    if labels is None or logits is None:
        raise InvalidArgumentError("sigmoid_cross_entropy_with_logits: both labels and logits are required")
    x = _float_logits(logits, "sigmoid_cross_entropy_with_logits")
    z = convert_to_tensor(labels, x.dtype, x.graph)
    _same_shape(z, x, "sigmoid_cross_entropy_with_logits")
    return relu(x) - x * z + log1p(_exp(-_abs(x)))


def l2_loss(t: Any, name: Optional[str] = None) -> Tensor:
    """sum(t ** 2) / 2."""
    t = convert_to_tensor(t)
    if not t.dtype.is_floating_point:
        raise DTypeError(f"l2_loss: t must be float32 or float64, got {t.dtype.name}")
    # `t ** 2` (not `t * t`) so that plans fuse the sum of squares and its gradient (graph/fusion.rs).
    total = reduce_sum(t**2.0)
    return total.graph._op("binary", ("mul",), [total, convert_to_tensor(0.5, total.dtype, total.graph)],
                          name or "L2Loss")
