"""``allclose`` on graph tensors: an extension (TF1 has none), a composition of the op table's ops."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.static._dtypes import float32
from rustgrad.static._generated_ops import equal, isclose, logical_not
from rustgrad.static._graph import Tensor
from rustgrad.static._ops import cast, reduce_sum

__all__ = ["allclose"]


def allclose(x: Any, y: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False,
             name: Optional[str] = None) -> Tensor:
    """Whether every element of ``x`` is close to ``y`` (``isclose``; they broadcast), as a 0-d bool
    tensor: torch's ``allclose``, which in eager mode returns a Python bool."""
    far = cast(logical_not(isclose(x, y, rtol, atol, equal_nan)), float32)
    return equal(reduce_sum(far), 0.0, name=name)
