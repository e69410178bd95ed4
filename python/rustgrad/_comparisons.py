"""Comparisons whose result is a Python bool: ``allclose`` and ``equal``, as functions and
``Tensor`` methods. They are compositions of the op table's ``isclose`` and ``eq``."""

from __future__ import annotations

import builtins

from rustgrad._generated_ops import isclose
from rustgrad._rustgrad import Tensor

__all__ = ["allclose", "equal"]


def _tensor(op: str, name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        from rustgrad.errors import ArgumentTypeError

        raise ArgumentTypeError(f"{op}: argument '{name}' must be a Tensor, got {type(value).__name__}")
    return value


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> builtins.bool:
    """Whether every element of ``input`` is close to ``other`` (``isclose``; they broadcast), as a Python bool."""
    close = isclose(_tensor("allclose", "input", input), _tensor("allclose", "other", other), rtol, atol, equal_nan)
    return builtins.bool(close.numpy().all())


def equal(input: Tensor, other: Tensor) -> builtins.bool:
    """Whether ``input`` and ``other`` have the same shape and the same values, as a Python bool
    (NaN equals nothing; float32 and float64 values compare as numbers)."""
    a, b = _tensor("equal", "input", input), _tensor("equal", "other", other)
    return a.shape == b.shape and builtins.bool((a == b).numpy().all())


def _allclose_method(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                     equal_nan: bool = False) -> builtins.bool:
    """Whether every element of this tensor is close to ``other`` (``isclose``; they broadcast), as a Python bool."""
    return allclose(self, other, rtol, atol, equal_nan)


def _equal_method(self: Tensor, other: Tensor) -> builtins.bool:
    """Whether this tensor and ``other`` have the same shape and the same values, as a Python bool."""
    return equal(self, other)


Tensor.allclose = _allclose_method  # type: ignore[method-assign]
Tensor.equal = _equal_method  # type: ignore[method-assign]
