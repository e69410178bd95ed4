"""``rustgrad.nn.functional``: activations and losses with ``torch.nn.functional``'s names.

Everything here is built from differentiable tensor ops, so gradients flow
through it with ``backward()``.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import numpy as np

from rustgrad import _rustgrad
from rustgrad._creation import _resolve_dtype
from rustgrad._generated_ops import one_hot, pad
from rustgrad._rustgrad import Tensor
from rustgrad.nn._generated_functional import *  # noqa: F403 - the op table's functional ops
from rustgrad.nn._generated_functional import __all__ as _op_table_names
from rustgrad.nn._nn_ops import *  # noqa: F403 - layers over the op table's kernels
from rustgrad.nn._nn_ops import __all__ as _nn_op_names

__all__ = [
    "cross_entropy", "log_softmax", "mse_loss", "nll_loss", "one_hot", "pad", "relu", "sigmoid", "softmax", "tanh",
]
__all__ += _nn_op_names
# Functions defined below win over the table's of the same name (they take torch's extra arguments).
__all__ += [name for name in _op_table_names if name not in __all__]

_REDUCTIONS = ("none", "mean", "sum")


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(0, x) elementwise. ``inplace`` is accepted for compatibility and returns a new tensor."""
    return input.relu()


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """tanh(x) elementwise."""
    return input.tanh()


def _softmax_dim(ndim: int, name: str) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
        "as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _prepare(input: Tensor, dim: Optional[int], dtype: Any, name: str) -> tuple[Tensor, int]:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(_resolve_dtype(dtype))
    if dim is None:
        dim = _softmax_dim(input.dim(), name)
    return input, int(dim)


def _shifted(input: Tensor, dim: int) -> Tensor:
    # Subtracting the (constant) max keeps exp() from overflowing; it does not change the result,
    # so it is detached and contributes nothing to the gradient.
    if input.dim() == 0:
        return input - input.detach()
    return input - input.amax(dim, True).detach()


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably (the max along ``dim`` is subtracted first)."""
    input, dim = _prepare(input, dim, dtype, "softmax")
    if input.dim() == 0:
        return _shifted(input, dim).exp()
    e = _shifted(input, dim).exp()
    return e / e.sum(dim, True)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably as (x - max) - log(sum(exp(x - max)))."""
    input, dim = _prepare(input, dim, dtype, "log_softmax")
    shifted = _shifted(input, dim)
    if input.dim() == 0:
        return shifted
    return shifted - shifted.exp().sum(dim, True).log()


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_reduction(reduction: str, size_average: Optional[bool], reduce: Optional[bool]) -> str:
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction= instead",
                      stacklevel=3)
        reduce_ = True if reduce is None else reduce
        size_average_ = True if size_average is None else size_average
        reduction = "none" if not reduce_ else ("mean" if size_average_ else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction; use 'none', 'mean' or 'sum'")
    return reduction


def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """(input - target)², averaged (``reduction='mean'``), summed (``'sum'``) or kept (``'none'``)."""
    reduction = _check_reduction(reduction, size_average, reduce)
    if isinstance(target, Tensor) and tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=2,
        )
    loss = (input - target).square()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _class_indices(target: Any) -> np.ndarray:
    """Class indices as a numpy int64 array, from a tensor holding integer values, an array or a list."""
    if isinstance(target, Tensor):
        if target.dtype.name == "bool":
            raise TypeError("cross_entropy: target must hold class indices, got a bool tensor")
        values = np.asarray(target.detach().numpy(), dtype=np.float64)
    else:
        values = np.asarray(target)
        if values.dtype == object or values.dtype.kind not in "iuf":
            raise TypeError(f"cross_entropy: target must hold integer class indices, got {values.dtype}")
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            raise ValueError(
                "cross_entropy: target holds non-integer values; pass class indices (probability "
                "targets are not supported)"
            )
    return values.astype(np.int64)


def _constant(array: np.ndarray, like: Tensor) -> Tensor:
    if array.dtype == np.bool_:
        return _rustgrad._from_numpy(np.asarray(array, order="C"), False)
    return _rustgrad._from_numpy(np.asarray(array, dtype=np.dtype(like.dtype.name), order="C"), False)


def _nll(log_probs: Tensor, target: Any, weight: Optional[Tensor], ignore_index: int, reduction: str,
         label_smoothing: float, name: str) -> Tensor:
    if log_probs.dim() == 0:
        raise ValueError(f"{name}: input must have a class dimension, got shape {list(log_probs.shape)}")
    classes = log_probs.shape[0] if log_probs.dim() == 1 else log_probs.shape[1]
    idx = _class_indices(target)
    expected = () if log_probs.dim() == 1 else (log_probs.shape[0],) + tuple(log_probs.shape[2:])
    if idx.shape != expected:
        raise ValueError(
            f"{name}: expected target of shape {list(expected)} for input of shape {list(log_probs.shape)}, "
            f"got {list(idx.shape)}"
        )
    ignored = idx == ignore_index
    bad = (~ignored) & ((idx < 0) | (idx >= classes))
    if np.any(bad):
        raise IndexError(f"{name}: target {int(idx[bad].flat[0])} is out of bounds for {classes} classes")
    class_dim = 0 if log_probs.dim() == 1 else 1
    # one_hot[n, c, ...] is True where c == target[n, ...] (and the target is not ignored).
    class_shape = [1] * log_probs.dim()
    class_shape[class_dim] = classes
    one_hot = np.arange(classes).reshape(class_shape) == np.expand_dims(idx, class_dim)
    one_hot &= np.expand_dims(~ignored, class_dim)
    mask = _constant(one_hot, log_probs)
    zero = _constant(np.zeros((), dtype=np.float64), log_probs)
    picked = _rustgrad._where(mask, log_probs, zero).sum(class_dim)
    keep = _constant((~ignored).astype(np.float64), log_probs)
    if weight is not None:
        if tuple(weight.shape) != (classes,):
            raise ValueError(f"{name}: weight must have shape [{classes}], got {list(weight.shape)}")
        w = weight.reshape([classes] + [1] * (log_probs.dim() - 1 - class_dim)) if class_dim else weight
        sample_weight = _rustgrad._where(mask, w * _constant(np.ones(one_hot.shape), log_probs), zero).sum(class_dim)
        nll = -(picked * sample_weight)
        denominator = sample_weight.sum()
    else:
        w = None
        nll = -picked
        denominator = keep.sum()
    if reduction == "none":
        loss = nll
    elif reduction == "sum":
        loss = nll.sum()
    else:
        loss = nll.sum() / denominator
    if label_smoothing > 0.0:
        per_class = log_probs if w is None else log_probs * w
        smooth = -(per_class.sum(class_dim)) * keep
        if reduction == "none":
            smooth_loss = smooth
        elif reduction == "sum":
            smooth_loss = smooth.sum()
        else:
            smooth_loss = smooth.sum() / denominator
        loss = loss * (1.0 - label_smoothing) + smooth_loss * (label_smoothing / classes)
    return loss


def nll_loss(input: Tensor, target: Any, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
             ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices ``target`` under log-probabilities ``input`` (N, C, ...)."""
    reduction = _check_reduction(reduction, size_average, reduce)
    return _nll(input, target, weight, ignore_index, reduction, 0.0, "nll_loss")


def cross_entropy(input: Tensor, target: Any, weight: Optional[Tensor] = None,
                  size_average: Optional[bool] = None, ignore_index: int = -100, reduce: Optional[bool] = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` of shape (N, C) (or (C,), or (N, C, d1, ...)) and class
    indices ``target`` of shape (N,) (a numpy int array, a list, or a float tensor holding integers).

    Computed as ``nll_loss(log_softmax(input, 1), target)``; ``weight`` rescales classes,
    ``ignore_index`` targets contribute nothing, and ``label_smoothing`` mixes in the uniform
    distribution, all as in PyTorch.
    """
    reduction = _check_reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if not isinstance(input, Tensor):
        raise TypeError(f"cross_entropy(): argument 'input' must be a Tensor, not {type(input).__name__}")
    class_dim = 0 if input.dim() == 1 else 1
    return _nll(log_softmax(input, class_dim), target, weight, ignore_index, reduction, label_smoothing,
                "cross_entropy")
