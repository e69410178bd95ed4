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
from rustgrad._generated_ops import einsum, logaddexp, one_hot, pad, xlogy
from rustgrad._rustgrad import Tensor
from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError
from rustgrad.nn import _conv
from rustgrad.nn._generated_functional import *  # noqa: F403 - the op table's functional ops
from rustgrad.nn._generated_functional import __all__ as _op_table_names
from rustgrad.nn._nn_ops import *  # noqa: F403 - layers over the op table's kernels
from rustgrad.nn._nn_ops import __all__ as _nn_op_names

__all__ = [
    "bilinear", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity", "cross_entropy",
    "huber_loss", "kl_div", "l1_loss", "log_softmax", "mse_loss", "nll_loss", "one_hot", "pad", "relu",
    "sigmoid", "smooth_l1_loss", "softmax", "tanh",
]
# Convolutions and poolings with torch's optional bias, return_indices and None sizes (nn/_conv.py).
__all__ += _conv.__all__
__all__ += _nn_op_names
# Functions defined below win over the table's of the same name (they take torch's extra arguments).
__all__ += [name for name in _op_table_names if name not in __all__]

_REDUCTIONS = ("none", "mean", "sum")

adaptive_avg_pool2d = _conv.adaptive_avg_pool2d
conv1d = _conv.conv1d
conv2d = _conv.conv2d
conv_transpose2d = _conv.conv_transpose2d
max_pool2d = _conv.max_pool2d
max_pool2d_with_indices = _conv.max_pool2d_with_indices


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
        raise ArgumentTypeError(f"{name}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(_resolve_dtype(dtype))
    if dim is None:
        dim = _softmax_dim(input.dim(), name)
    return input, int(dim)


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably in one fused op (the op table's ``softmax``)."""
    input, dim = _prepare(input, dim, dtype, "softmax")
    return _ops["softmax"](input, dim)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably as x - logsumexp(x) in one fused op."""
    input, dim = _prepare(input, dim, dtype, "log_softmax")
    return _ops["log_softmax"](input, dim)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_reduction(reduction: str, size_average: Optional[bool], reduce: Optional[bool],
                     valid: tuple[str, ...] = _REDUCTIONS) -> str:
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='sum' instead.",
                      stacklevel=3)
        reduce_ = True if reduce is None else reduce
        size_average_ = True if size_average is None else size_average
        reduction = "none" if not reduce_ else ("mean" if size_average_ else "sum")
    if not isinstance(reduction, str) or reduction not in valid:
        raise InvalidArgumentError(
            f"{reduction} is not a valid value for reduction; use one of {', '.join(map(repr, valid))}"
        )
    return reduction


def _check_tensor(value: Any, name: str, arg: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{name}(): argument '{arg}' (position {1 if arg == 'input' else 2}) must be Tensor, "
                                f"not {type(value).__name__}")
    return value


def _same_size(input: Tensor, target: Tensor, name: str) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def _pointwise_operands(input: Any, target: Any, name: str) -> tuple[Tensor, Any]:
    input = _check_tensor(input, name, "input")
    if isinstance(target, Tensor):
        _same_size(input, target, name)
    return input, target


def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """(input - target)², averaged (``reduction='mean'``), summed (``'sum'``) or kept (``'none'``)."""
    reduction = _check_reduction(reduction, size_average, reduce)
    input, target = _pointwise_operands(input, target, "mse_loss")
    loss = (input - target).square()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean") -> Tensor:
    """|input - target|, averaged, summed or kept per ``reduction``."""
    reduction = _check_reduction(reduction, size_average, reduce)
    input, target = _pointwise_operands(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                   reduce: Optional[bool] = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d² / beta where d = |input - target| < beta, else d - 0.5 beta (l1_loss for beta = 0)."""
    reduction = _check_reduction(reduction, size_average, reduce)
    input, target = _pointwise_operands(input, target, "smooth_l1_loss")
    if beta < 0:
        raise InvalidArgumentError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(_rustgrad._where(d < beta, d.square() * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """0.5 d² where d = |input - target| < delta, else delta (d - 0.5 delta)."""
    reduction = _check_reduction(reduction, None, None)
    input, target = _pointwise_operands(input, target, "huber_loss")
    if delta <= 0:
        raise InvalidArgumentError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    loss = _rustgrad._where(d < delta, d.square() * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _weight_tensor(weight: Any, name: str) -> Optional[Tensor]:
    if weight is None or isinstance(weight, Tensor):
        return weight
    raise ArgumentTypeError(f"{name}(): argument 'weight' must be Tensor or None, not {type(weight).__name__}")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """-(target log(input) + (1 - target) log(1 - input)), each log clamped at -100 as torch does."""
    reduction = _check_reduction(reduction, size_average, reduce)
    input = _check_tensor(input, "binary_cross_entropy", "input")
    target = _check_tensor(target, "binary_cross_entropy", "target")
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}) is deprecated. Please ensure they have the same size."
        )
    values = input.detach().numpy()
    if values.size and not np.all((values >= 0) & (values <= 1)):
        raise InvalidArgumentError("binary_cross_entropy: all elements of input should be between 0 and 1")
    # log(max(x, e^-100)) = max(log x, -100): torch's clamp, with a finite gradient at 0 and 1.
    floor = float(np.exp(-100.0)) if input.dtype.name == "float64" else float(np.float32(np.exp(-100.0)))
    log_p = input.clamp_min(floor).log().clamp_min(-100.0)
    log_q = (1.0 - input).clamp_min(floor).log().clamp_min(-100.0)
    loss = -(target * log_p + (1.0 - target) * log_q)
    weight = _weight_tensor(weight, "binary_cross_entropy")
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                     reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target) in the stable form
    (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x); ``pos_weight`` broadcasts along the last dims."""
    reduction = _check_reduction(reduction, size_average, reduce)
    input = _check_tensor(input, "binary_cross_entropy_with_logits", "input")
    target = _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    softplus_neg = logaddexp(-input, 0.0)  # log(1 + exp(-x)), stable both ways
    if pos_weight is not None:
        pos_weight = _weight_tensor(pos_weight, "binary_cross_entropy_with_logits")
        loss = (1.0 - target) * input + ((pos_weight - 1.0) * target + 1.0) * softplus_neg
    else:
        loss = (1.0 - target) * input + softplus_neg
    weight = _weight_tensor(weight, "binary_cross_entropy_with_logits")
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence with ``input`` as log-probabilities: target (log target - input), summed per
    ``reduction``. ``'batchmean'`` divides by the batch size (the mathematical KL divergence);
    ``'mean'`` divides by the number of elements, and warns as torch does."""
    reduction = _check_reduction(reduction, size_average, reduce, _REDUCTIONS + ("batchmean",))
    input = _check_tensor(input, "kl_div", "input")
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
    if log_target:
        loss = target.exp() * (target - input) if isinstance(target, Tensor) else np.exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() != 0 else total
    return _reduce(loss, reduction)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along ``dim`` (they broadcast):
    sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)), as torch computes it."""
    x1 = _check_tensor(x1, "cosine_similarity", "x1")
    x2 = _check_tensor(x2, "cosine_similarity", "x2")
    n1 = x1.norm(dim=dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(dim=dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


# An empty weight tells the class-loss ops "no class weights"; one per dtype, built once.
_NO_WEIGHT: dict[str, Tensor] = {}


def _class_weight(weight: Any, input: Tensor, name: str) -> Tensor:
    if weight is None:
        key = input.dtype.name
        if key not in _NO_WEIGHT:
            dtype = np.dtype(key) if key in ("float32", "float64") else np.float32
            _NO_WEIGHT[key] = _rustgrad._from_numpy(np.zeros(0, dtype=dtype), False)
        return _NO_WEIGHT[key]
    weight = _weight_tensor(weight, name)
    classes = input.shape[0] if input.dim() == 1 else input.shape[1] if input.dim() > 1 else 0
    if weight.dim() != 1 or weight.shape[0] != classes:
        raise ShapeError(f"{name}: weight must hold one value per class, shape [{classes}], got {list(weight.shape)}")
    return weight


def _class_indices(target: Any, name: str) -> Tensor:
    """Class indices as an int64 or int32 tensor, from an integer tensor (as is), an array, a list or
    a number; a float tensor or array holding integers is converted (a non-integer is refused)."""
    if isinstance(target, Tensor):
        if target.dtype.name in ("int64", "int32"):
            return target
        if target.dtype.name == "bool":
            raise DTypeError(f"{name}: target must hold class indices (int64), got a bool tensor")
        if not target.dtype.is_floating_point:
            return target  # the op refuses it, naming the dtype
        values = np.asarray(target.detach().numpy(), dtype=np.float64)
    else:
        values = np.asarray(target)
        if values.dtype == object or values.dtype.kind not in "iuf":
            raise DTypeError(f"{name}: target must hold integer class indices, got {values.dtype}")
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            raise InvalidArgumentError(
                f"{name}: target holds non-integer values; pass class indices as an int64 tensor, or "
                "class probabilities of the input's shape"
            )
    return _rustgrad._from_numpy(np.array(values, dtype=np.int64, order="C"), False)


def _probability_target(input: Tensor, target: Any) -> bool:
    return (isinstance(target, Tensor) and target.dtype.is_floating_point
            and tuple(target.shape) == tuple(input.shape))


def _probability_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor], reduction: str,
                               label_smoothing: float) -> Tensor:
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    product = _ops["log_softmax"](input, class_dim) * target
    if weight is not None:
        weight = _class_weight(weight, input, "cross_entropy")
        product = product * weight.reshape([classes] + [1] * (input.dim() - class_dim - 1))
    loss = -product.sum(class_dim)
    return _reduce(loss, reduction)


def nll_loss(input: Tensor, target: Any, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
             ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices ``target`` (N, d1, ...) under log-probabilities ``input``
    (N, C, d1, ...), with class weights and ``ignore_index`` as torch (the op table's ``nll_loss``)."""
    reduction = _check_reduction(reduction, size_average, reduce)
    input = _check_tensor(input, "nll_loss", "input")
    return _ops["nll_loss"](input, _class_indices(target, "nll_loss"), _class_weight(weight, input, "nll_loss"),
                            int(ignore_index), reduction)


def cross_entropy(input: Tensor, target: Any, weight: Optional[Tensor] = None,
                  size_average: Optional[bool] = None, ignore_index: int = -100, reduce: Optional[bool] = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` of shape (N, C) (or (C,), or (N, C, d1, ...)) and
    ``target``: class indices of shape (N,) (or (), or (N, d1, ...)), or class probabilities of the
    input's shape.

    Class indices go through the op table's fused ``cross_entropy`` (one log-sum-exp per row forward,
    softmax − one-hot backward); ``weight`` rescales classes (the mean divides by the summed weights of
    the targets), ``ignore_index`` targets contribute nothing, and ``label_smoothing`` mixes in the
    uniform distribution, all as in PyTorch.
    """
    reduction = _check_reduction(reduction, size_average, reduce)
    input = _check_tensor(input, "cross_entropy", "input")
    if not 0.0 <= label_smoothing <= 1.0:
        raise InvalidArgumentError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if _probability_target(input, target):
        return _probability_cross_entropy(input, target, weight, reduction, float(label_smoothing))
    return _ops["cross_entropy"](input, _class_indices(target, "cross_entropy"),
                                 _class_weight(weight, input, "cross_entropy"), int(ignore_index), reduction,
                                 float(label_smoothing))


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y[..., k] = input1[..., i] · weight[k, i, j] · input2[..., j] + bias[k]."""
    for name, value in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"bilinear(): argument '{name}' must be a Tensor, not {type(value).__name__}")
    if weight.dim() != 3:
        raise ShapeError(f"bilinear(): weight must be 3-D (out, in1, in2), got shape {list(weight.shape)}")
    if input1.dim() == 0 or input2.dim() == 0 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise ShapeError(
            f"bilinear(): input1 and input2 must have the same leading dims, got shapes {list(input1.shape)} "
            f"and {list(input2.shape)}"
        )
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise ShapeError(
            f"bilinear(): input1's last dim ({input1.shape[-1]}) and input2's ({input2.shape[-1]}) must match "
            f"weight's dims 1 and 2, got weight of shape {list(weight.shape)}"
        )
    out = einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias

