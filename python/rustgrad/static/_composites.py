"""TF1's multi-output shape functions, composed of ops of the table: ``split`` and ``unstack``.
Each piece is one node (``narrow`` or ``select``), so ``tf.gradients`` flows back through each.

``tf.split``'s int is the number of pieces (torch's is the piece size); the sizes along the split
dim, or ``num`` for ``unstack``, must be known when the graph is built, as TF1 needs the number of
outputs then.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from rustgrad import _composites
from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import IndexOutOfRangeError, InvalidArgumentError, ShapeError
from rustgrad.static._graph import Tensor, convert_to_tensor

__all__ = ["split", "unstack"]


def _axis(op: str, x: Tensor, axis: Any) -> tuple[int, Optional[int]]:
    """``axis`` normalised against the rank (which must be known unless axis >= 0), and its size."""
    axis = _composites._int(op, "axis", axis)
    rank = x.shape.rank
    if rank is None:
        if axis < 0:
            raise ShapeError(f"{op}: a negative axis ({axis}) needs the rank of {x.name}, which is unknown")
        return axis, None
    if not -max(rank, 1) <= axis < max(rank, 1) or rank == 0:
        raise IndexOutOfRangeError(f"{op}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis % rank, x.shape[axis % rank]


def _narrow(x: Tensor, axis: int, start: int, length: int, name: Optional[str]) -> Tensor:
    return x.graph._apply(_ops["narrow"], [x], name, (axis, start, length))


def split(value: Any, num_or_size_splits: Union[int, Sequence[int]], axis: int = 0, num: Optional[int] = None,
          name: str = "split") -> list[Tensor]:
    """``value`` cut along ``axis``: into ``num_or_size_splits`` equal pieces when it is an int (which
    must divide the size), or into pieces of the listed sizes (one may be -1: the rest)."""
    x = convert_to_tensor(value)
    axis, size = _axis("split", x, axis)
    if isinstance(num_or_size_splits, int) and not isinstance(num_or_size_splits, bool):
        count = num_or_size_splits
        if count <= 0:
            raise InvalidArgumentError(f"split: the number of pieces must be positive, got {count}")
        if size is None:
            raise ShapeError(f"split: the size of axis {axis} of {x.name} (shape {x.shape}) must be known to cut "
                             f"it into {count} pieces")
        if size % count:
            raise InvalidArgumentError(f"split: Number of ways to split should evenly divide the split dimension, "
                                       f"but got split_dim {axis} (size = {size}) and num_split {count}")
        sizes = [size // count] * count
    else:
        sizes = [_composites._int("split", "num_or_size_splits", s) for s in num_or_size_splits]
        sizes = _resolve_sizes(sizes, size, axis)
    if num is not None and num != len(sizes):
        raise InvalidArgumentError(f"split: num={num} but the split gives {len(sizes)} pieces")
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [_narrow(x, axis, start, length, name) for start, length in zip(starts, sizes)]


def _resolve_sizes(sizes: list[int], size: Optional[int], axis: int) -> list[int]:
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in sizes):
        raise InvalidArgumentError(f"split: size_splits {sizes} may hold one -1 and no other negative size")
    known = sum(s for s in sizes if s >= 0)
    if unknown:
        if size is None:
            raise ShapeError(f"split: a -1 in size_splits {sizes} needs the size of axis {axis}, which is unknown")
        sizes[unknown[0]] = size - known
    if size is not None and (sum(sizes) != size or min(sizes, default=0) < 0):
        raise InvalidArgumentError(
            f"split: Determined shape must either match input shape along split_dim exactly if fully specified, "
            f"or be less than the size of the input along split_dim if not fully specified: size_splits {sizes} "
            f"for axis {axis} of size {size}")
    return sizes


def unstack(value: Any, num: Optional[int] = None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    """The slices of ``value`` along ``axis``, each without that axis: ``num`` of them (by default,
    the size of the axis, which must then be known)."""
    x = convert_to_tensor(value)
    axis, size = _axis("unstack", x, axis)
    if num is None:
        if size is None:
            raise ShapeError(f"unstack: Cannot infer num from shape {x.shape}")
        num = size
    elif size is not None and num != size:
        raise InvalidArgumentError(f"unstack: num={num} but axis {axis} has size {size}")
    return [x.graph._apply(_ops["select"], [x], name, (axis, i)) for i in range(num)]


_composites.add_methods(Tensor)
