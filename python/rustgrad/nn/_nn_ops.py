"""``torch.nn.functional``'s layer functions over the op table's kernels: the arguments the
table's ops do not take (an optional weight or bias, ``inplace``, running statistics, ``max_norm``)
and the random draw of ``dropout``."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from rustgrad import _generated_ops as _ops
from rustgrad._creation import ones, zeros
from rustgrad._grad_mode import no_grad
from rustgrad._norm import update_running_stats
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError

__all__ = [
    "batch_norm", "dropout", "embedding", "group_norm", "layer_norm", "linear", "logsigmoid", "relu6", "selu",
    "silu",
]


def _tensor(name: str, argument: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{name}(): argument '{argument}' must be a Tensor, not {type(value).__name__}")
    return value


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x·sigmoid(x). ``inplace`` is accepted for compatibility and returns a new tensor."""
    return _ops.silu(input)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """SELU. ``inplace`` is accepted for compatibility and returns a new tensor."""
    return _ops.selu(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6). ``inplace`` is accepted for compatibility and returns a new tensor."""
    return _ops.relu6(input)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably."""
    return _ops.logsigmoid(input)


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias`` over any leading dims of ``input``; the bias is added as the
    product is stored."""
    _tensor("linear", "input", input)
    _tensor("linear", "weight", weight)
    if bias is None:
        if weight.dim() != 2:
            raise ShapeError(f"linear: weight must be 2-D ([out_features, in_features]), got {list(weight.shape)}")
        return input.matmul(weight.t())
    return _ops.linear(input, weight, _tensor("linear", "bias", bias))


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of ``weight`` at the indices ``input`` (int64 or int32, any shape). The row at
    ``padding_idx`` gets no gradient. With ``max_norm``, the rows looked up whose ``norm_type``-norm
    exceeds it are first scaled down to it in ``weight`` itself, as torch."""
    _tensor("embedding", "weight", weight)
    input = _tensor("embedding", "input", input)
    if scale_grad_by_freq or sparse:
        raise InvalidArgumentError(
            "embedding: scale_grad_by_freq=True and sparse=True are not supported: rustgrad has no "
            "sparse gradients; leave both False"
        )
    if max_norm is not None:
        _renorm_rows(input, weight, float(max_norm), float(norm_type))
    return _ops.embedding(input, weight, padding_idx)


def _renorm_rows(input: Tensor, weight: Tensor, max_norm: float, norm_type: float) -> None:
    import numpy as np

    from rustgrad._creation import tensor

    rows = np.unique(input.numpy().astype(np.int64).ravel())
    if rows.size == 0:
        return
    if rows.min() < 0 or rows.max() >= weight.shape[0]:
        raise IndexOutOfRangeError(
            f"embedding: index {int(rows.max() if rows.max() >= weight.shape[0] else rows.min())} is "
            f"out of range for a weight of {weight.shape[0]} rows"
        )
    with no_grad():
        picked = tensor(rows)
        current = weight[picked]
        norms = current.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight[picked] = current * scale


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Each element zeroed with probability ``p`` and the others scaled by ``1/(1-p)``, drawn from
    rustgrad's default generator (``rustgrad.manual_seed`` repeats it); the input itself when
    ``training`` is False. The gradient is the same mask, scaled. ``inplace`` writes the result into
    ``input``, as torch."""
    input = _tensor("dropout", "input", input)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"dropout: expected a float tensor, got {input.dtype}; convert it with .float() first")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        with no_grad():
            mask = _ops_empty_like(input).bernoulli_(1.0 - p).mul_(1.0 / (1.0 - p))
        out = input * mask
    if inplace:
        with no_grad():
            input.copy_(out)
        return input
    return out


def _ops_empty_like(input: Tensor) -> Tensor:
    from rustgrad._random import empty_like

    return empty_like(input)


def layer_norm(input: Tensor, normalized_shape: Union[int, Sequence[int]], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Each sample normalised over its last dims (``normalized_shape``), then scaled by ``weight`` and
    shifted by ``bias`` elementwise (both of shape ``normalized_shape``; None: 1 and 0)."""
    input = _tensor("layer_norm", "input", input)
    shape = [int(normalized_shape)] if isinstance(normalized_shape, int) else [int(d) for d in normalized_shape]
    weight, bias = _affine(input, shape, weight, bias)
    return _ops.layer_norm(input, normalized_shape=shape, weight=weight, bias=bias, eps=eps)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """The channels (dim 1) of each sample in ``num_groups`` groups, each normalised over its channels
    and positions, then scaled by ``weight`` and shifted by ``bias`` per channel."""
    input = _tensor("group_norm", "input", input)
    channels = [input.shape[1]] if input.dim() >= 2 else [0]
    weight, bias = _affine(input, channels, weight, bias)
    return _ops.group_norm(input, num_groups=num_groups, weight=weight, bias=bias, eps=eps)


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each channel (dim 1) normalised over the batch and positions, then scaled by ``weight`` and
    shifted by ``bias``. In training the batch's statistics normalise, and ``running_mean`` and
    ``running_var`` (when given) move toward its mean and unbiased variance by ``momentum``, which
    weights the new value, in place and unrecorded; in evaluation the running statistics normalise."""
    input = _tensor("batch_norm", "input", input)
    if not training and (running_mean is None or running_var is None):
        raise InvalidArgumentError("batch_norm: running_mean and running_var must be given when training=False")
    channels = [input.shape[1]] if input.dim() >= 2 else [0]
    weight, bias = _affine(input, channels, weight, bias)
    mean = running_mean if running_mean is not None else zeros(channels, dtype=input.dtype)
    var = running_var if running_var is not None else ones(channels, dtype=input.dtype)
    out = _ops.batch_norm(input, running_mean=mean.detach(), running_var=var.detach(), weight=weight, bias=bias,
                          training=training, eps=eps)
    if training and (running_mean is not None or running_var is not None):
        with no_grad():
            dims = [0] + list(range(2, input.dim()))
            update_running_stats(running_mean, running_var, input.mean(dims), input.var(dims, unbiased=True),
                                 momentum, "torch")
    return out


def _affine(input: Tensor, shape: list, weight: Optional[Tensor], bias: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    dtype = input.dtype if input.dtype.is_floating_point else None
    weight = ones(shape, dtype=dtype) if weight is None else weight
    bias = zeros(shape, dtype=dtype) if bias is None else bias
    return weight, bias
