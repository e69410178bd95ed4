"""TF1's ``tf.nn`` layer functions: ``bias_add``, ``batch_normalization``, ``fused_batch_norm``,
``embedding_lookup`` and ``dropout``, over the op table's ops (``embedding``, ``batch_norm``)."""

from __future__ import annotations

import numbers
from typing import Any, Optional

from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, ShapeError
from rustgrad.static._graph import Tensor, _apply, convert_to_tensor

__all__ = ["batch_normalization", "bias_add", "dropout", "embedding_lookup", "fused_batch_norm"]


def bias_add(value: Any, bias: Any, data_format: Optional[str] = None, name: Optional[str] = None) -> Tensor:
    """``value + bias`` with the 1-D ``bias`` along the channels: the last dim (``NHWC``, the default)
    or dim 1 (``NCHW``/``NCW``/``NCDHW``). Its gradient for ``bias`` is the sum over the other dims."""
    from rustgrad.static._ops import reshape

    x = convert_to_tensor(value)
    b = convert_to_tensor(bias, dtype=x.dtype)
    fmt = "NHWC" if data_format is None else str(data_format)
    if fmt not in ("NHWC", "NCHW", "NWC", "NCW", "NDHWC", "NCDHW", "N..C", "NC.."):
        raise InvalidArgumentError(
            f"bias_add: data_format must be NHWC or NCHW (or their 1-D/3-D forms), got {data_format!r}"
        )
    channels_first = fmt.startswith("NC")
    rank = x.shape.rank
    if b.shape.rank is not None and b.shape.rank != 1:
        raise ShapeError(f"bias_add: bias must be 1-D, got shape {b.shape}")
    if rank is not None and rank < 2:
        raise ShapeError(f"bias_add: Shape must be at least rank 2 but is rank {rank}")
    axis = 1 if channels_first else -1
    if rank is not None and b.shape.rank == 1:
        size, want = b.shape.as_list()[0], x.shape.as_list()[axis]
        if size is not None and want is not None and size != want:
            raise ShapeError(f"bias_add: Must provide as many biases as the channel dimension of the input tensor: "
                             f"{b.shape} vs. {x.shape}")
    if channels_first:
        if rank is None:
            raise ShapeError("bias_add: data_format NCHW needs an input of known rank")
        b = reshape(b, [-1] + [1] * (rank - 2))
    return x.graph._op("binary", ("add",), [x, b], name or "BiasAdd")


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any, variance_epsilon: float,
                        name: Optional[str] = None) -> Tensor:
    """``scale·(x - mean)/sqrt(variance + variance_epsilon) + offset``, with ``mean``, ``variance``,
    ``offset`` and ``scale`` broadcasting against ``x`` (``offset``/``scale`` may be None), as TF1;
    gradients reach all five."""
    from rustgrad.static._generated_ops import rsqrt

    x = convert_to_tensor(x)
    inv = rsqrt(convert_to_tensor(variance, dtype=x.dtype) + float(variance_epsilon))
    if scale is not None:
        inv = inv * convert_to_tensor(scale, dtype=x.dtype)
    shift = -convert_to_tensor(mean, dtype=x.dtype) * inv
    if offset is not None:
        shift = convert_to_tensor(offset, dtype=x.dtype) + shift
    return x.graph._op("binary", ("add",), [x * inv, shift], name or "batchnorm")


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: Optional[str] = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(y, batch_mean, batch_variance)`` of a 4-D ``x``, normalised per channel by one fused kernel:
    by the batch's statistics when ``is_training`` (then ``batch_variance`` is the unbiased one, for
    the moving average, as TF), else by ``mean`` and ``variance``, which are returned."""
    from rustgrad.static._generated_ops import transpose
    from rustgrad.static._reductions import moments

    x = convert_to_tensor(x)
    if data_format not in ("NHWC", "NCHW"):
        raise InvalidArgumentError(f"fused_batch_norm: data_format must be NHWC or NCHW, got {data_format!r}")
    if x.shape.rank is not None and x.shape.rank != 4:
        raise ShapeError(f"fused_batch_norm: x must be 4-D, got shape {x.shape}")
    if not is_training and (mean is None or variance is None):
        raise InvalidArgumentError(
            "fused_batch_norm: both 'mean' and 'variance' must be a 1-D tensor when is_training is "
            "False"
        )
    nchw = x if data_format == "NCHW" else transpose(x, [0, 3, 1, 2])
    s, o = convert_to_tensor(scale, dtype=x.dtype), convert_to_tensor(offset, dtype=x.dtype)
    if is_training:
        batch_mean, batch_var = moments(nchw, [0, 2, 3])
        from rustgrad.static._ops import cast
        from rustgrad.static._shapes import size

        count = cast(size(nchw), x.dtype) / cast(size(batch_mean), x.dtype)
        batch_var = batch_var * count / (count - 1.0)
        stats = (batch_mean, batch_var)  # the kernel normalises by the batch's own statistics in training
    else:
        batch_mean = convert_to_tensor(mean, dtype=x.dtype)
        batch_var = convert_to_tensor(variance, dtype=x.dtype)
        stats = (batch_mean, batch_var)
    y = _apply(_ops["batch_norm"], [nchw, s, o, *stats], None, (bool(is_training), float(epsilon)))
    y = y if data_format == "NCHW" else transpose(y, [0, 2, 3, 1])
    return (y if name is None else y.graph._op("identity", (), [y], name)), batch_mean, batch_var


def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod", name: Optional[str] = None,
                     validate_indices: bool = True, max_norm: Optional[float] = None) -> Tensor:
    """The rows of ``params`` at ``ids`` (int32 or int64, any shape): shape ``ids.shape +
    params.shape[1:]``, for 2-D ``params`` (or a list of one such tensor). With ``max_norm``, each
    row looked up whose L2 norm exceeds it is scaled down to it, as TF1."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise InvalidArgumentError(
                f"embedding_lookup: params split over {len(params)} shards are not supported; pass one "
                f"tensor (tf.concat the shards in 'div' order)"
            )
        params = params[0]
    if partition_strategy not in ("mod", "div"):
        raise InvalidArgumentError(
            f"embedding_lookup: partition_strategy must be 'mod' or 'div', got {partition_strategy!r}"
        )
    p = convert_to_tensor(params)
    i = convert_to_tensor(ids)
    rows = _apply(_ops["embedding"], [i, p], None if max_norm is not None else (name or "embedding_lookup"), (None,))
    if max_norm is None:
        return rows
    from rustgrad.static._generated_ops import rsqrt
    from rustgrad.static._ops import reduce_sum

    squares = reduce_sum(rows * rows, axis=-1, keepdims=True)
    limit = float(max_norm) * rsqrt(squares)
    factor = limit.graph._op("binary", ("minimum",), [limit, convert_to_tensor(1.0, dtype=rows.dtype)], None)
    return rows.graph._op("binary", ("mul",), [rows, factor], name or "embedding_lookup")


def dropout(x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: Optional[int] = None,
            name: Optional[str] = None, rate: Any = None) -> Tensor:
    """Each element zeroed with probability ``rate`` (``1 - keep_prob``) and the others scaled by
    ``1/(1 - rate)``, with a new mask each time a run computes it (``seed`` as TF1's random ops);
    ``noise_shape`` broadcasts the mask. ``rate=0`` returns ``x`` itself."""
    from rustgrad.static._ops import cast
    from rustgrad.static._random import _random
    from rustgrad.static._shapes import shape as shape_of

    if (keep_prob is None) == (rate is None):
        raise InvalidArgumentError("dropout: pass exactly one of keep_prob and rate")
    if rate is None:
        if not isinstance(keep_prob, numbers.Real):
            raise ArgumentTypeError(f"dropout: keep_prob must be a float, got {type(keep_prob).__name__}")
        rate = 1.0 - float(keep_prob)
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real):
        raise ArgumentTypeError(f"dropout: rate must be a float in [0, 1), got {type(rate).__name__}")
    rate = float(rate)
    if not 0.0 <= rate < 1.0:
        raise InvalidArgumentError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}")
    x = convert_to_tensor(x)
    if not x.dtype.is_floating_point:
        raise InvalidArgumentError(
            f"x has to be a floating point tensor since it's going to be scaled. Got a {x.dtype.name} "
            f"tensor instead."
        )
    if rate == 0.0:
        return x
    shape = shape_of(x) if noise_shape is None else noise_shape
    uniform = _random("dropout", "uniform", shape, 0.0, 1.0, x.dtype, seed, None)
    keep = cast(uniform.graph._op("compare", ("ge",), [uniform, convert_to_tensor(rate, dtype=x.dtype)], None),
                x.dtype)
    return x.graph._op("binary", ("mul",), [x * (1.0 / (1.0 - rate)), keep], name or "dropout")
