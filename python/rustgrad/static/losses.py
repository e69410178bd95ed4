"""``rustgrad.static.losses`` (``tf.losses``): TF1 loss functions.

As in TF1, the per-element losses are multiplied by ``weights`` and reduced with
``reduction``; the default, ``Reduction.SUM_BY_NONZERO_WEIGHTS``, divides the
weighted sum by the number of elements whose weight is nonzero, which with the
default ``weights=1.0`` is the mean over all elements.
"""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.errors import InvalidArgumentError, ShapeError
from rustgrad.static._generated_ops import log, not_equal, square
from rustgrad.static._graph import Tensor, convert_to_tensor
from rustgrad.static._ops import cast, maximum, minimum, ones_like, reduce_sum, stop_gradient
from rustgrad.static.nn import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "Reduction", "absolute_difference", "compute_weighted_loss", "huber_loss", "log_loss", "mean_squared_error",
    "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy",
]
# The loss collections (static/layers.py's slice of issue 15).
__all__ += ["add_loss", "get_losses", "get_regularization_loss", "get_regularization_losses", "get_total_loss"]

_LOSSES = "losses"  # tf.GraphKeys.LOSSES: TF1's losses add themselves to it
_REGULARIZATION_LOSSES = "regularization_losses"  # tf.GraphKeys.REGULARIZATION_LOSSES


class Reduction:
    """How a loss's elements are combined (TF1's ``tf.losses.Reduction``)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise InvalidArgumentError(f"Invalid Reduction Key {key}.")


def _is_one(weights: Any) -> bool:
    return not isinstance(weights, Tensor) and isinstance(weights, (int, float)) and float(weights) == 1.0


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: Optional[str] = None,
                          loss_collection: Any = _LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """``losses * weights`` reduced as ``reduction`` says (a scalar unless ``Reduction.NONE``); the
    result is added to ``loss_collection`` (``tf.GraphKeys.LOSSES``; None adds it nowhere)."""
    loss = _weighted_loss(losses, weights, reduction)
    add_loss(loss, loss_collection)
    return loss


def _weighted_loss(losses: Any, weights: Any, reduction: str) -> Tensor:
    Reduction.validate(reduction)
    losses = convert_to_tensor(losses)
    if not losses.dtype.is_floating_point:
        losses = cast(losses, "float32")
    if _is_one(weights):
        weighted = losses
        weights_full = None
    else:
        w = convert_to_tensor(weights, losses.dtype, losses.graph)
        weighted = losses * w
        weights_full = ones_like(losses) * w  # the weights broadcast to the losses' shape
    if reduction == Reduction.NONE:
        return weighted
    total = reduce_sum(weighted)
    if reduction == Reduction.SUM:
        return total
    if reduction == Reduction.MEAN:
        denominator = reduce_sum(ones_like(losses) if weights_full is None else weights_full)
    elif reduction == Reduction.SUM_OVER_BATCH_SIZE or weights_full is None:
        denominator = reduce_sum(ones_like(losses))
    else:
        denominator = reduce_sum(cast(not_equal(weights_full, 0.0), losses.dtype))
    # TF1's safe division: a zero denominator (all weights zero) gives a zero loss.
    return total / maximum(denominator, 1e-30) if reduction == Reduction.MEAN else \
        total / maximum(denominator, 1.0)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: Optional[str] = None,
                       loss_collection: Any = _LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """(predictions - labels)², weighted and reduced; by default the mean over all elements."""
    labels, predictions = _labels_and_predictions(labels, predictions, "mean_squared_error")
    return compute_weighted_loss(square(predictions - labels), weights, scope, loss_collection, reduction)


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0, scope: Optional[str] = None,
                        loss_collection: Any = _LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """|predictions - labels|, weighted and reduced; by default the mean over all elements."""
    labels, predictions = _labels_and_predictions(labels, predictions, "absolute_difference")
    return compute_weighted_loss(abs(predictions - labels), weights, scope, loss_collection, reduction)


def _labels_and_predictions(labels: Any, predictions: Any, name: str, labels_name: str = "labels",
                            predictions_name: str = "predictions") -> tuple[Tensor, Tensor]:
    """Both as tensors of the predictions' dtype, after TF1's checks: neither is None, and their
    shapes agree where known."""
    if labels is None:
        raise InvalidArgumentError(f"{labels_name} must not be None.")
    if predictions is None:
        raise InvalidArgumentError(f"{predictions_name} must not be None.")
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels, predictions.dtype, predictions.graph)
    _check_shapes(labels, predictions, name)
    return labels, predictions


def _check_shapes(labels: Tensor, predictions: Tensor, name: str) -> None:
    a, b = labels.shape, predictions.shape
    if a.rank is None or b.rank is None:
        return
    if a.rank != b.rank or any(x is not None and y is not None and x != y for x, y in zip(a, b)):
        raise ShapeError(f"{name}: Shapes {b} and {a} are incompatible (predictions and labels must have "
                         "the same shape)")


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None, loss_collection: Any = _LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Softmax cross-entropy per row of ``logits`` against one-hot (or probability) labels, weighted and
    reduced; ``label_smoothing`` mixes in the uniform distribution: labels (1 - s) + s / classes."""
    labels, logits = _labels_and_predictions(onehot_labels, logits, "softmax_cross_entropy", "onehot_labels", "logits")
    if label_smoothing > 0:
        classes = logits.shape[-1]
        if classes is None:
            raise ShapeError("softmax_cross_entropy: label_smoothing needs the number of classes (the last dim "
                             "of logits) known when the graph is built")
        labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
    losses = softmax_cross_entropy_with_logits_v2(labels=stop_gradient(labels), logits=logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0, scope: Optional[str] = None,
                                 loss_collection: Any = _LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Softmax cross-entropy per row of ``logits`` against integer class labels, weighted and reduced."""
    if labels is None:
        raise InvalidArgumentError("labels must not be None.")
    if logits is None:
        raise InvalidArgumentError("logits must not be None.")
    losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0, label_smoothing: float = 0,
                          scope: Optional[str] = None, loss_collection: Any = _LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Sigmoid cross-entropy per element, weighted and reduced; ``label_smoothing`` moves the labels
    towards 1/2: labels (1 - s) + s / 2."""
    labels, logits = _labels_and_predictions(multi_class_labels, logits, "sigmoid_cross_entropy",
                                             "multi_class_labels", "logits")
    if label_smoothing > 0:
        labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
    losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0, scope: Optional[str] = None,
               loss_collection: Any = _LOSSES, reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """0.5 e² for |e| <= delta, else delta (|e| - 0.5 delta), with e = predictions - labels."""
    labels, predictions = _labels_and_predictions(labels, predictions, "huber_loss")
    error = abs(predictions - labels)
    quadratic = minimum(error, delta)
    linear = error - quadratic
    losses = 0.5 * square(quadratic) + delta * linear
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7, scope: Optional[str] = None,
             loss_collection: Any = _LOSSES, reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """-labels log(predictions + epsilon) - (1 - labels) log(1 - predictions + epsilon)."""
    labels, predictions = _labels_and_predictions(labels, predictions, "log_loss")
    losses = -labels * log(predictions + epsilon) - (1.0 - labels) * log(1.0 - predictions + epsilon)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def add_loss(loss: Any, loss_collection: Any = _LOSSES) -> None:
    """Adds ``loss`` to the collection ``loss_collection`` of its graph (None: nowhere)."""
    if loss_collection is not None:
        loss = convert_to_tensor(loss)
        loss.graph.add_to_collection(loss_collection, loss)


def get_losses(scope: Optional[str] = None, loss_collection: Any = _LOSSES) -> list:
    """The losses in ``loss_collection`` of the default graph, those whose name matches ``scope``."""
    from rustgrad.static._graph import get_default_graph

    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: Optional[str] = None) -> list:
    """The regularization losses (``tf.GraphKeys.REGULARIZATION_LOSSES``) whose name matches ``scope``."""
    return get_losses(scope, _REGULARIZATION_LOSSES)


def _sum(losses: list, name: str) -> Tensor:
    from rustgrad.static._ops import identity

    total = losses[0]
    for loss in losses[1:]:
        total = total + loss
    return identity(total, name=name)


def get_regularization_loss(scope: Optional[str] = None, name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses whose name matches ``scope``; a float32 0.0 when there
    are none, as TF1's."""
    losses = get_regularization_losses(scope)
    if not losses:
        from rustgrad.static._ops import constant

        return constant(0.0, name=name)
    return _sum(losses, name)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: Optional[str] = None) -> Tensor:
    """The sum of the losses in ``tf.GraphKeys.LOSSES`` (and, by default, of the regularization
    losses) whose name matches ``scope``; raises ValueError when there are none, as TF1's."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise InvalidArgumentError("No losses found in collection.")
    return _sum(losses, name)
