"""TF1 functions that return two tensors or compose the op table's ops: ``tf.nn.moments``,
``tf.math.top_k`` (also ``tf.nn.top_k``) and ``tf.sort``."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from rustgrad._rustgrad import int32
from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import InvalidArgumentError
from rustgrad.static._graph import Tensor, _apply, _renamed, convert_to_tensor
from rustgrad.static._ops import cast, reduce_mean


def moments(x: Any, axes: Any, shift: Any = None, name: Optional[str] = None, keep_dims: Any = None,
            keepdims: Any = None) -> tuple[Tensor, Tensor]:
    """``(mean, variance)`` of ``x`` over ``axes``, the variance being the population one, as
    TF1's ``tf.nn.moments`` (batch normalisation's statistics). ``shift`` is accepted and
    unused, as in TF1; ``name`` prefixes the two nodes' names."""
    keepdims = _renamed("moments", "keepdims", keepdims, "keep_dims", keep_dims, False)
    x = convert_to_tensor(x)
    prefix = name or "moments"
    variance = _apply(_ops["var"], [x], f"{prefix}/variance", (axes, None, bool(keepdims), 0))
    return reduce_mean(x, axes, keepdims, name=f"{prefix}/mean"), variance


class TopKV2(NamedTuple):
    """What ``top_k`` returns: the values and their int32 indices."""

    values: Tensor
    indices: Tensor


def top_k(input: Any, k: int = 1, sorted: bool = True, name: Optional[str] = None) -> TopKV2:
    """The ``k`` largest elements along the last dim and their int32 indices, as TF1's
    ``tf.math.top_k``: sorted, the lower index first among equal elements."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidArgumentError(f"top_k: k must be a non-negative int, got {k!r}")
    x = convert_to_tensor(input)
    positions = _apply(_ops["argsort"], [x], None, (-1, True, "ASCENDING", True, k))
    values = _apply(_ops["take_along_dim"], [x, positions], name or "TopKV2", (-1,))
    return TopKV2(values, cast(positions, int32))


def sort(values: Any, axis: int = -1, direction: str = "ASCENDING", name: Optional[str] = None) -> Tensor:
    """The elements sorted along ``axis`` (``direction`` 'ASCENDING' or 'DESCENDING'), as TF1's ``tf.sort``."""
    x = convert_to_tensor(values)
    positions = _apply(_ops["argsort"], [x], None, (axis, False, direction, True, -1))
    return _apply(_ops["take_along_dim"], [x, positions], name or "sort", (axis,))


__all__ = ["TopKV2", "moments", "sort", "top_k"]
