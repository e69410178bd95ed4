"""TF1's ``TensorShape``: a shape whose rank or dimensions may be unknown while a graph is built."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rustgrad.errors import ShapeError


class TensorShape(tuple):
    """A partially known shape; unknown dims are None. ``as_list()`` as in TF."""

    def __new__(cls, dims: Optional[Sequence[Optional[int]]]) -> TensorShape:
        shape = super().__new__(cls, () if dims is None else tuple(dims))
        shape._known_rank = dims is not None
        return shape

    @property
    def rank(self) -> Optional[int]:
        return len(self) if self._known_rank else None

    @property
    def ndims(self) -> Optional[int]:
        return self.rank

    def as_list(self) -> list[Optional[int]]:
        if not self._known_rank:
            raise ShapeError("as_list() is not defined on an unknown TensorShape.")
        return list(self)

    def is_compatible_with(self, other: Any) -> bool:
        """Whether the two shapes could be the same: an unknown rank or dimension matches any."""
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if not (self._known_rank and other._known_rank):
            return True
        return len(self) == len(other) and all(a is None or b is None or a == b for a, b in zip(self, other))

    def is_fully_defined(self) -> bool:
        return self._known_rank and all(d is not None for d in self)

    def __repr__(self) -> str:
        if not self._known_rank:
            return "TensorShape(None)"
        return f"TensorShape({list(self)})"
