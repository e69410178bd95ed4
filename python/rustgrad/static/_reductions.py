"""TF1 reductions that return two tensors, composed of the op table's ops: ``tf.nn.moments``."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.static._graph import Tensor, _renamed, convert_to_tensor
from rustgrad.static._ops import reduce_mean
from rustgrad.static.math import reduce_variance


def moments(x: Any, axes: Any, shift: Any = None, name: Optional[str] = None, keep_dims: Any = None,
            keepdims: Any = None) -> tuple[Tensor, Tensor]:
    """``(mean, variance)`` of ``x`` over ``axes``, the variance being the population one, as
    TF1's ``tf.nn.moments`` (batch normalisation's statistics). ``shift`` is accepted and
    unused, as in TF1; ``name`` prefixes the two nodes' names."""
    keepdims = _renamed("moments", "keepdims", keepdims, "keep_dims", keep_dims, False)
    x = convert_to_tensor(x)
    prefix = name or "moments"
    return (reduce_mean(x, axes, keepdims, name=f"{prefix}/mean"),
            reduce_variance(x, axes, keepdims, name=f"{prefix}/variance"))


__all__ = ["moments"]
