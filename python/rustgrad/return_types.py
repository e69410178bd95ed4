"""The named tuples that torch functions returning two tensors give, as ``torch.return_types``."""

from __future__ import annotations

from typing import NamedTuple

from rustgrad._rustgrad import Tensor


class max(NamedTuple):  # noqa: N801 - torch's name
    """``max(input, dim)``: the largest values along ``dim`` and their indices."""

    values: Tensor
    indices: Tensor


class min(NamedTuple):  # noqa: N801 - torch's name
    """``min(input, dim)``: the smallest values along ``dim`` and their indices."""

    values: Tensor
    indices: Tensor


class topk(NamedTuple):  # noqa: N801 - torch's name
    """``topk(input, k, dim)``: the k largest (or smallest) values and their indices."""

    values: Tensor
    indices: Tensor


class sort(NamedTuple):  # noqa: N801 - torch's name
    """``sort(input, dim)``: the sorted values and the indices they came from."""

    values: Tensor
    indices: Tensor


__all__ = ["max", "min", "sort", "topk"]
