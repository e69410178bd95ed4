"""torch's multi-output shape functions, composed of ops of the table: ``split``, ``chunk`` and
``unbind``. Each piece is a view of the input (``narrow`` or ``select``), so a gradient flows
back to the input through every piece that is used.

They take eager tensors, and graph tensors too (as the torch-named methods of
``rustgrad.static.Tensor``), where the size of the split dim must be known when the graph is built.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence, Union

from rustgrad.errors import ArgumentTypeError, IndexOutOfRangeError, ShapeError

__all__ = ["chunk", "split", "unbind"]


def _dim_size(op: str, tensor: Any, dim: int) -> tuple[int, int]:
    """``dim`` normalised against the tensor's rank, and the size of that dim."""
    shape = tensor.shape
    rank = len(shape)
    if rank == 0:
        raise IndexOutOfRangeError(f"{op}: dimension specified as {dim} but tensor has no dimensions")
    if not -rank <= dim < rank:
        raise IndexOutOfRangeError(
            f"{op}: dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})")
    d = dim % rank
    size = shape[d]
    if size is None:
        raise ShapeError(f"{op}: the size of dim {d} must be known when the graph is built (its shape is {shape})")
    return d, int(size)


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool) and hasattr(value, "__index__")


def _int(op: str, name: str, value: Any) -> int:
    if not _is_int(value):
        raise ArgumentTypeError(f"{op}: argument '{name}' must be an int, got {type(value).__name__}")
    return operator.index(value)


def _pieces(tensor: Any, dim: int, sizes: Sequence[int]) -> tuple[Any, ...]:
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return tuple(tensor.narrow(dim, start, length) for start, length in zip(starts, sizes))


def _sizes_of(op: str, size: int, dim_size: int, dim: int) -> list[int]:
    """torch's pieces of ``size`` elements along a dim of ``dim_size`` (the last may be smaller)."""
    if size < 0:
        raise ShapeError(f"{op}: split_size must be non-negative, but got split_size={size}")
    if size == 0 and dim_size != 0:
        raise ShapeError(f"{op}: split_size can only be 0 if dimension size is 0, but got dimension size of "
                         f"{dim_size} (dim {dim})")
    count = max(math.ceil(dim_size / size), 1) if size else 1
    return [size] * (count - 1) + [dim_size - size * (count - 1)]


def split(tensor: Any, split_size_or_sections: Union[int, Sequence[int]], dim: int = 0) -> tuple[Any, ...]:
    """The tensor cut along ``dim`` into pieces of ``split_size_or_sections`` elements (the last piece
    may be smaller), or into pieces of the listed sizes, which must add up to the dim's size. Each
    piece is a view."""
    d, n = _dim_size("split", tensor, _int("split", "dim", dim))
    if _is_int(split_size_or_sections):
        return _pieces(tensor, d, _sizes_of("split", operator.index(split_size_or_sections), n, d))
    sizes = [_int("split", "split_size_or_sections", s) for s in split_size_or_sections]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise ShapeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                         f"dimension {d}), but got split_sizes={sizes}")
    return _pieces(tensor, d, sizes)


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:  # noqa: A002 - torch's name
    """The tensor cut along ``dim`` into ``chunks`` pieces of equal size (the last may be smaller,
    and there may be fewer when the size does not divide). Each piece is a view."""
    chunks = _int("chunk", "chunks", chunks)
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be greater than 0, got {chunks}")
    d, n = _dim_size("chunk", input, _int("chunk", "dim", dim))
    size = math.ceil(n / chunks)
    if size == 0:  # an empty dim still gives `chunks` pieces
        return _pieces(input, d, [0] * chunks)
    return _pieces(input, d, _sizes_of("chunk", size, n, d))


def unbind(input: Any, dim: int = 0) -> tuple[Any, ...]:  # noqa: A002 - torch's name
    """The slices along ``dim``, which each drop it: ``tuple(input.select(dim, i) for i ...)``. Each is a view."""
    d, n = _dim_size("unbind", input, _int("unbind", "dim", dim))
    return tuple(input.select(d, i) for i in range(n))


def _split_method(self: Any, split_size: Union[int, Sequence[int]], dim: int = 0) -> tuple[Any, ...]:
    return split(self, split_size, dim)


def _chunk_method(self: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:
    return chunk(self, chunks, dim)


def _unbind_method(self: Any, dim: int = 0) -> tuple[Any, ...]:
    return unbind(self, dim)


def add_methods(cls: type) -> None:
    """``split``, ``chunk`` and ``unbind`` as methods of ``cls`` (the eager and the graph ``Tensor``)."""
    for name, method in (("split", _split_method), ("chunk", _chunk_method), ("unbind", _unbind_method)):
        method.__doc__ = globals()[name].__doc__
        setattr(cls, name, method)
