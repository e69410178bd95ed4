"""The static API's dtype names (``tf.float32`` ...) and TF1's ``as_dtype``, in one place for
every module of the static front."""

from __future__ import annotations

from typing import Any

from rustgrad._creation import _NUMPY_DTYPES, _SUPPORTED, _resolve_dtype, bool_, float32, float64, int32, int64, uint8
from rustgrad.errors import DTypeError

__all__ = ["as_dtype", "bool_", "float32", "float64", "int32", "int64", "numpy_dtype", "uint8"]


def as_dtype(dtype: Any) -> Any:
    """A rustgrad dtype from a rustgrad dtype, a name, or a numpy dtype."""
    if dtype is None:
        raise DTypeError(f"a dtype is required here; use one of {_SUPPORTED}")
    return _resolve_dtype(dtype)


def numpy_dtype(dtype: Any) -> Any:
    return _NUMPY_DTYPES[as_dtype(dtype).name]
