"""``rustgrad.static.nn``: activation functions for graphs."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.static._graph import Tensor, convert_to_tensor
from rustgrad.static._ops import sigmoid, tanh

__all__ = ["relu", "sigmoid", "tanh"]


def relu(features: Any, name: Optional[str] = None) -> Tensor:
    x = convert_to_tensor(features)
    return x.graph._op("unary", ("relu",), [x], name or "Relu")
