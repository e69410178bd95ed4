"""Argument helpers for the generated op functions (``tools/generate.py``)."""

from __future__ import annotations

from typing import Any

from rustgrad.errors import ArgumentTypeError


def _varargs(op: str, name: str, args: tuple, value: Any) -> Any:
    """The one list-of-ints argument of a method, given as ints (``x.permute(1, 0)``), as one
    sequence (``x.permute((1, 0))``) or by name (``x.permute(dims=(1, 0))``)."""
    if value is not None:
        if args:
            raise ArgumentTypeError(f"{op}() got argument '{name}' both by position and by name")
        return value
    if not args:
        raise ArgumentTypeError(f"{op}() missing required argument '{name}' (an int or a sequence of ints)")
    if len(args) == 1 and not isinstance(args[0], int):
        return args[0]
    return args


def _star_operands(op: str, operands: tuple) -> list:
    """The tensors of an op that takes them as ``*operands`` (``einsum(eq, a, b)``), or as one
    sequence of them (``einsum(eq, [a, b])``), as torch takes both."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ArgumentTypeError(f"{op}(): must specify the equation string and at least one operand")
    return list(operands)
