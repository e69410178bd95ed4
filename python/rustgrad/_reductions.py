"""Reductions that return two tensors, composed of the op table's ops: ``var_mean`` and ``std_mean``."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from rustgrad._functions import mean
from rustgrad._generated_ops import std, var
from rustgrad._rustgrad import Tensor

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


__all__ = ["std_mean", "var_mean"]
