"""Reductions that return two tensors, composed of the op table's ops: ``var_mean``,
``std_mean``, ``max``/``min`` along a dim, ``topk`` and ``sort``."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from rustgrad import return_types
from rustgrad._functions import amax, amin, maximum, mean, minimum
from rustgrad._generated_ops import argmax, argmin, argsort, std, take_along_dim, var
from rustgrad._rustgrad import Tensor
from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import InvalidArgumentError

Dims = Union[int, Sequence[int], None]


def var_mean(input: Tensor, dim: Dims = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
             correction: Optional[float] = None) -> tuple[Tensor, Tensor]:
    """``(var(input, ...), mean(input, dim, keepdim))``: the variance (the sample variance
    unless ``correction`` or ``unbiased`` says otherwise) and the mean over ``dim``."""
    return var(input, dim, unbiased, keepdim, correction), mean(input, dim, keepdim)


def std_mean(input: Tensor, dim: Dims = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
             correction: Optional[float] = None) -> tuple[Tensor, Tensor]:
    """``(std(input, ...), mean(input, dim, keepdim))``: the standard deviation and the mean over ``dim``."""
    return std(input, dim, unbiased, keepdim, correction), mean(input, dim, keepdim)


def _extreme_along(input: Tensor, dim: int, keepdim: bool, arg: Callable[..., Tensor]) -> tuple[Tensor, Tensor]:
    """The values at ``arg``'s indices (so the gradient reaches exactly those elements, as in torch)."""
    if input.dim() == 0:
        flat = input.reshape([1])
        index = arg(flat, 0, keepdim=True)
        return take_along_dim(flat, index, 0).reshape([]), index.reshape([])
    index = arg(input, dim, keepdim=True)
    values = take_along_dim(input, index, dim)
    if keepdim:
        return values, index
    return values.squeeze(dim), index.squeeze(dim)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """torch's three ``max``: over every element (``max(input)``), along ``dim`` as the named tuple
    ``(values, indices)`` (``max(input, dim, keepdim=False)``; the gradient goes to the element at
    each index), or elementwise (``max(input, other)``)."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        if keepdim:
            raise InvalidArgumentError("max: keepdim needs a dim; max(input) reduces every element")
        return amax(input)
    return return_types.max(*_extreme_along(input, dim, keepdim, argmax))


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """As ``max``, for the smallest elements (``(values, indices)`` along ``dim``)."""
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        if keepdim:
            raise InvalidArgumentError("min: keepdim needs a dim; min(input) reduces every element")
        return amin(input)
    return return_types.min(*_extreme_along(input, dim, keepdim, argmin))


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> return_types.topk:
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim`` and their indices, as the
    named tuple ``(values, indices)``; always sorted, equal elements in their original order."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidArgumentError(f"topk: k must be a non-negative int, got {k!r}")
    indices = _ops["argsort"](input, dim, bool(largest), "ASCENDING", True, k)
    return return_types.topk(take_along_dim(input, indices, dim), indices)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> return_types.sort:
    """The elements sorted along ``dim`` and the indices they came from, as the named tuple
    ``(values, indices)``. The sort is stable; NaN sorts above every number."""
    indices = argsort(input, dim, descending, stable)
    return return_types.sort(take_along_dim(input, indices, dim), indices)


def _max_method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return max(self, dim, keepdim)


def _min_method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return min(self, dim, keepdim)


def _topk_method(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> return_types.topk:
    return topk(self, k, dim, largest, sorted)


def _sort_method(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> return_types.sort:
    return sort(self, dim, descending, stable)


Tensor.max = _max_method  # type: ignore[method-assign,assignment]
Tensor.min = _min_method  # type: ignore[method-assign,assignment]
Tensor.topk = _topk_method  # type: ignore[attr-defined]
Tensor.sort = _sort_method  # type: ignore[attr-defined]

__all__ = ["max", "min", "sort", "std_mean", "topk", "var_mean"]
