"""Top-level functional forms (``rustgrad.exp(x)`` and friends) of Tensor methods."""

from __future__ import annotations

import numbers
from typing import Any, Optional

from rustgrad import _rustgrad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, DTypeError, InvalidArgumentError

matmul = _rustgrad._matmul
where = _rustgrad._where


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return input.mm(mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    return input.bmm(mat2)


def t(input: Tensor) -> Tensor:
    return input.t()


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return input.transpose(dim0, dim1)


def reshape(input: Tensor, shape: Any) -> Tensor:
    return input.reshape(shape)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """``input`` clamped to [min, max]; each bound is None, a number or a tensor that broadcasts against it."""
    return input.clamp(min=min, max=max)


clip = clamp


def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    return input + (other * alpha if alpha != 1 else other)


def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    return input - (other * alpha if alpha != 1 else other)


def mul(input: Any, other: Any) -> Tensor:
    return input * other


def div(input: Any, other: Any, *, rounding_mode: Optional[str] = None) -> Tensor:
    """``input / other``; ``rounding_mode='floor'`` is ``floor_divide`` and ``'trunc'`` rounds toward zero."""
    if rounding_mode is None:
        return input / other
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        quotient = input / other
        if quotient.is_floating_point() and not (_is_integer(input) and _is_integer(other)):
            return quotient.trunc()
        floor = floor_divide(input, other)
        # Rounding toward zero is one above rounding down where the division is inexact and negative.
        return floor + ((input % other) != 0) * ((input < 0) != (other < 0))  # bool * bool is "and"
    raise InvalidArgumentError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


def _is_integer(value: Any) -> bool:
    if isinstance(value, Tensor):
        return not value.is_floating_point()
    return isinstance(value, int)


def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other``, rounding toward negative infinity as Python does; an integer division by zero raises."""
    return input // other


def remainder(input: Any, other: Any) -> Tensor:
    """``input % other``, with the sign of ``other`` as Python's ``%``; an integer remainder by zero raises."""
    return input % other


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return input.maximum(other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return input.minimum(other)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.sum(dim, keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.mean(dim, keepdim)


def amax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.amax(dim, keepdim)


def amin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.amin(dim, keepdim)


def numel(input: Tensor) -> int:
    return input.numel()


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``, the product taken left to right, then the sum (as torch)."""
    return input + _scaled("addcmul", tensor1, value) * tensor2


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, left to right, then the sum (as torch); ``tensor1`` and
    ``tensor2`` must not both be integer tensors."""
    _check_true_division("addcdiv", tensor1, tensor2)
    return input + _scaled("addcdiv", tensor1, value) / tensor2


def _addcmul_method(self: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """``self + value * tensor1 * tensor2``: see ``rustgrad.addcmul``."""
    return addcmul(self, tensor1, tensor2, value=value)


def _addcdiv_method(self: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """``self + value * tensor1 / tensor2``: see ``rustgrad.addcdiv``."""
    return addcdiv(self, tensor1, tensor2, value=value)


def _addcmul_in_place(self: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """In place, ``self + value * tensor1 * tensor2`` (an optimizer's ``exp_avg_sq.addcmul_(g, g, value=...)``)."""
    return self.add_(_scaled("addcmul_", tensor1, value) * tensor2)


def _addcdiv_in_place(self: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """In place, ``self + value * tensor1 / tensor2`` (an optimizer's ``p.addcdiv_(exp_avg, denom, value=-lr)``)."""
    _check_true_division("addcdiv_", tensor1, tensor2)
    return self.add_(_scaled("addcdiv_", tensor1, value) / tensor2)


def _scaled(op: str, tensor: Any, value: Any) -> Any:
    """``value * tensor`` (``tensor`` itself for 1); ``value`` is a real number, numpy's included."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{op}: argument 'value' must be a number, got {type(value).__name__}")
    return tensor if value == 1 else tensor * value


def _check_true_division(op: str, tensor1: Any, tensor2: Any) -> None:
    if _is_integer(tensor1) and _is_integer(tensor2):
        raise DTypeError(
            f"{op}: integer division with addcdiv is not supported (tensor1 and tensor2 are both integers); "
            "convert one of them to a float dtype first"
        )


Tensor.addcmul = _addcmul_method  # type: ignore[method-assign]
Tensor.addcdiv = _addcdiv_method  # type: ignore[method-assign]
Tensor.addcmul_ = _addcmul_in_place  # type: ignore[method-assign]
Tensor.addcdiv_ = _addcdiv_in_place  # type: ignore[method-assign]
