"""The static API's dtype names (``tf.float32`` ...) and TF1's ``as_dtype``, in one place for
every module of the static front."""

from __future__ import annotations

from typing import Any

from rustgrad import _rustgrad
from rustgrad._creation import _NUMPY_DTYPES, _SUPPORTED, _resolve_dtype
from rustgrad.errors import DTypeError

float32 = _rustgrad.float32
float64 = _rustgrad.float64
int64 = _rustgrad.int64
int32 = _rustgrad.int32
uint8 = _rustgrad.uint8
bool_ = _rustgrad.bool


def as_dtype(dtype: Any) -> Any:
    """A rustgrad dtype from a rustgrad dtype, a name, or a numpy dtype."""
    if dtype is None:
        raise DTypeError(f"a dtype is required here; use one of {_SUPPORTED}")
    return _resolve_dtype(dtype)


def numpy_dtype(dtype: Any) -> Any:
    return _NUMPY_DTYPES[as_dtype(dtype).name]
