"""Index functions of the eager front that are compositions: ``nonzero`` (``argwhere``, or
its columns), ``index_put`` (a copy, then ``index_put_``), and the in-place forms
``masked_fill_``, ``scatter_``, ``scatter_add_`` and ``index_add_`` (each the table op,
written into the tensor)."""

from __future__ import annotations

from typing import Any, Optional, Union

from rustgrad._rustgrad import Tensor
from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import ArgumentTypeError

__all__ = ["index_put", "nonzero"]


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Union[Tensor, tuple[Tensor, ...]]:
    """The coordinates of the non-zero elements: an int64 tensor of shape (count, input.dim())
    (``argwhere``), or with ``as_tuple=True`` one 1-D int64 tensor per dim, which index
    ``input`` (``input[input.nonzero(as_tuple=True)]`` is the non-zero elements)."""
    if not as_tuple:
        return _ops["argwhere"](input)
    flat = input.reshape(1) if input.dim() == 0 else input
    coordinates = _ops["argwhere"](flat)
    return tuple(coordinates[:, d] for d in range(flat.dim()))


def index_put(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (a tuple of index tensors),
    or added there with ``accumulate=True`` (repeated indices add up, in order)."""
    return input.clone().index_put_(indices, values, accumulate)


def _index_put_method(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    return index_put(self, indices, values, accumulate)


def _nonzero_method(self: Tensor, *, as_tuple: bool = False) -> Union[Tensor, tuple[Tensor, ...]]:
    return nonzero(self, as_tuple=as_tuple)


def _masked_fill_(self: Tensor, mask: Tensor, value: float) -> Tensor:
    """In place: ``value`` where ``mask`` (bool, broadcasting to this tensor's shape) is true."""
    _ops["masked_fill"].in_place(self, mask, value)
    return self


def _scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Optional[float] = None,
              reduce: Optional[str] = None) -> Tensor:
    """In place: ``src[i][j]`` (or the number ``value``) written at ``[index[i][j]][j]`` for dim 0."""
    if (src is None) == (value is None):
        raise ArgumentTypeError("scatter_(): give exactly one of src (a tensor or number) and value (a number)")
    _ops["scatter"].in_place(self, index, value if src is None else src, dim, reduce)
    return self


def _scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In place: ``src[i][j]`` added at ``[index[i][j]][j]`` for dim 0, in order."""
    _ops["scatter_add"].in_place(self, index, src, dim)
    return self


def _index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
    """In place: ``alpha * source`` added along ``dim`` at the positions in ``index``, in order."""
    _ops["index_add"].in_place(self, index, source, dim, alpha)
    return self


Tensor.index_put = _index_put_method  # type: ignore[method-assign]
Tensor.nonzero = _nonzero_method  # type: ignore[method-assign,assignment]
Tensor.masked_fill_ = _masked_fill_  # type: ignore[method-assign]
Tensor.scatter_ = _scatter_  # type: ignore[method-assign]
Tensor.scatter_add_ = _scatter_add_  # type: ignore[method-assign]
Tensor.index_add_ = _index_add_  # type: ignore[method-assign]
