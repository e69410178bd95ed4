"""Top-level functional forms (``rustgrad.exp(x)`` and friends) of Tensor methods."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad import _rustgrad
from rustgrad._rustgrad import Tensor

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


def flatten(input: Tensor) -> Tensor:
    return input.flatten()


def squeeze(input: Tensor, dim: Optional[int] = None) -> Tensor:
    return input.squeeze(dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return input.unsqueeze(dim)


def exp(input: Tensor) -> Tensor:
    return input.exp()


def log(input: Tensor) -> Tensor:
    return input.log()


def sqrt(input: Tensor) -> Tensor:
    return input.sqrt()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def relu(input: Tensor) -> Tensor:
    return input.relu()


def abs(input: Tensor) -> Tensor:
    return input.abs()


def neg(input: Tensor) -> Tensor:
    return input.neg()


def sign(input: Tensor) -> Tensor:
    return input.sign()


def square(input: Tensor) -> Tensor:
    return input.square()


def clamp(input: Tensor, min: Optional[float] = None, max: Optional[float] = None) -> Tensor:
    return input.clamp(min=min, max=max)


clip = clamp


def pow(input: Any, exponent: Any) -> Tensor:
    return input ** exponent


def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    return input + (other * alpha if alpha != 1 else other)


def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    return input - (other * alpha if alpha != 1 else other)


def mul(input: Any, other: Any) -> Tensor:
    return input * other


def div(input: Any, other: Any) -> Tensor:
    return input / other


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


def lt(input: Tensor, other: Any) -> Tensor:
    return input < other


def le(input: Tensor, other: Any) -> Tensor:
    return input <= other


def gt(input: Tensor, other: Any) -> Tensor:
    return input > other


def ge(input: Tensor, other: Any) -> Tensor:
    return input >= other


def eq(input: Tensor, other: Any) -> Tensor:
    return input == other


def ne(input: Tensor, other: Any) -> Tensor:
    return input != other
