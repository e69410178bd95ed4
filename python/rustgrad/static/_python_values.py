"""How Python values become elements of graph tensors, as TF1 types them: the dtype of a
constant given without one, whether a Python number fits a dtype, and the error that names
the op and parameter a value that does not fit was passed to."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from rustgrad._creation import _NUMPY_DTYPES, _SUPPORTED, _dtype_of_numpy
from rustgrad.errors import DTypeError
from rustgrad.static._dtypes import bool_, float32, float64, int32, int64

_INT32 = np.iinfo(np.int32)


def _default_constant_dtype(array: np.ndarray, from_numpy: bool) -> Any:
    """TF1's dtype for data given without one (see ``Graph._constant`` in ``_graph.py``)."""
    kind = array.dtype.kind
    if kind == "b":
        return bool_
    if kind == "f":
        return float64 if from_numpy and array.dtype == np.float64 else float32
    if kind in "iu":
        if from_numpy:
            same = _dtype_of_numpy(array.dtype)
            return int64 if same is None else same  # int8, int16, uint16, uint32: int64 holds every value
        fits_int32 = array.size == 0 or (_INT32.min <= array.min() and array.max() <= _INT32.max)
        return int32 if fits_int32 else int64
    raise DTypeError(f"cannot make a constant from a value of numpy dtype {array.dtype}; rustgrad has {_SUPPORTED}")


def _python_values(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _python_values(item)
    else:
        yield value


def _fits(value: Any, dtype: Any) -> bool:
    """Whether a Python value may become an element of ``dtype`` (TF's ``_AssertCompatible``)."""
    if isinstance(value, (bool, np.bool_)):
        return dtype == bool_
    if isinstance(value, (int, np.integer)):
        if dtype.is_integer:
            info = np.iinfo(_NUMPY_DTYPES[dtype.name])
            return info.min <= value <= info.max
        return dtype.is_floating
    if isinstance(value, (float, np.floating)):
        return dtype.is_floating
    return True  # anything else is numpy's to convert (or refuse)


def _check_python_values(value: Any, dtype: Any) -> None:
    for item in _python_values(value):
        if not _fits(item, dtype):
            raise DTypeError(f"Expected {dtype.name}, got {item!r} of type '{type(item).__name__}' instead.")


@contextlib.contextmanager
def _converting(op: str, param: str) -> Iterator[None]:
    """Names the op and its parameter in the error for a Python value that does not fit the dtype
    it takes (``tf.equal(bool_tensor, 0.5)``, ``tf.add(int32_tensor, 0.5)``), as TF1's message does."""
    try:
        yield
    except DTypeError as err:
        raise DTypeError(
            f"{op}: {err} (passed to parameter '{param}': a Python value takes the dtype of the op's tensors, "
            "as in TF1; cast the tensor with tf.cast to a dtype that holds the value)"
        ) from None


def _number_as(dtype: Any, value: Any) -> Any:
    """A Python number used with a tensor of ``dtype``: it takes that dtype, as in TF1."""
    _check_python_values(value, dtype)
    if dtype == bool_:
        return bool(value)
    return int(value) if dtype.is_integer else float(value)
