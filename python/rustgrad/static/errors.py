"""TF1-style error classes raised by static graphs and sessions.

All subclass :class:`OpError`, which subclasses ``rustgrad.errors.RustgradError``.
"""

from rustgrad.errors import (
    DataLossError,
    DTypeError,
    FailedPreconditionError,
    InvalidArgumentError,
    OpError,
    RustgradError,
    ShapeError,
)

__all__ = [
    "OpError",
    "InvalidArgumentError",
    "FailedPreconditionError",
    "DataLossError",
    "RustgradError",
    "ShapeError",
    "DTypeError",
]
