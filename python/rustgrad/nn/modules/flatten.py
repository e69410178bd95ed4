"""``Flatten`` and ``Unflatten``."""

from __future__ import annotations

from typing import Any

from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError
from rustgrad.nn.modules.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims ``start_dim`` to ``end_dim`` into one (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim ``dim`` into the shape ``unflattened_size`` (a tuple or list of ints, one may be -1)."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ArgumentTypeError(f"invalid argument type for dim parameter: {type(dim).__name__}; give an int")
        if not isinstance(unflattened_size, (tuple, list)):
            raise ArgumentTypeError("unflattened_size must be a tuple of ints, " +
                                    f"but found type {type(unflattened_size).__name__}")
        for idx, elem in enumerate(unflattened_size):
            if not isinstance(elem, int) or isinstance(elem, bool):
                raise ArgumentTypeError("unflattened_size must be tuple of ints, " +
                                        f"but found element of type {type(elem).__name__} at pos {idx}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
