"""Tensor factories with PyTorch's names, signatures and defaults."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from rustgrad import _rustgrad
from rustgrad._rustgrad import Tensor, device
from rustgrad.errors import ArgumentTypeError, DTypeError, ShapeError

float32 = _rustgrad.float32
float64 = _rustgrad.float64
bool_ = _rustgrad.bool

_NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "bool": np.bool_}


def _dtype_from_name(name: str) -> Any:
    return {"float32": float32, "float64": float64, "bool": bool_}[name]


def _resolve_dtype(dtype: Any, default: Any = None) -> Any:
    """A rustgrad dtype from anything accepted as one (None gives ``default``)."""
    if dtype is None:
        return default if default is not None else float32
    if isinstance(dtype, _rustgrad.dtype):
        return dtype
    try:
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    except TypeError:
        name = None
    aliases = {"float": "float32", "double": "float64", "float32": "float32",
               "float64": "float64", "bool": "bool"}
    if name not in aliases:
        raise DTypeError(
            f"unknown dtype {dtype!r}; use rustgrad.float32, rustgrad.float64 or rustgrad.bool"
        )
    return _dtype_from_name(aliases[name])


def _check_device(dev: Any) -> None:
    if dev is not None:
        device(dev)


def _sizes(size: Sequence[Any]) -> list[int]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        return [int(s) for s in size]
    except (TypeError, ValueError):
        raise ShapeError(f"sizes must be integers or one sequence of integers, got {size!r}") from None


def _default_dtype_for(array: np.ndarray, from_numpy_input: bool) -> Any:
    kind = array.dtype.kind
    if kind == "b":
        return bool_
    if kind == "f" and from_numpy_input:
        return float64 if array.dtype.itemsize >= 8 else float32
    if kind in "fiu":
        return float32
    raise DTypeError(
        f"cannot make a tensor from data of numpy dtype {array.dtype}; "
        "rustgrad supports float32, float64 and bool"
    )


def _as_array(data: Any) -> np.ndarray:
    try:
        array = np.asarray(data)
    except ValueError as err:
        raise ShapeError(
            f"ragged nested sequence: every list at one depth must have the same length ({err})"
        ) from None
    if array.dtype == object:
        raise ShapeError(
            "ragged nested sequence, or elements that are not numbers: every list at one depth "
            "must have the same length and hold only numbers"
        )
    return array


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, numpy arrays or tensors)."""
    _check_device(device)
    if isinstance(data, Tensor):
        source = data.detach()
        target = _resolve_dtype(dtype, source.dtype)
        copy = source.to(target).clone() if target != source.dtype else source.clone()
        return copy.requires_grad_(requires_grad) if requires_grad else copy
    array = _as_array(data)
    from_numpy_input = isinstance(data, (np.ndarray, np.generic))
    target = _resolve_dtype(dtype, _default_dtype_for(array, from_numpy_input))
    array = np.asarray(array, dtype=_NUMPY_DTYPES[target.name], order="C")
    return _rustgrad._from_numpy(array, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, without copying when it already is one of the right dtype."""
    if isinstance(data, Tensor):
        _check_device(device)
        return data if dtype is None else data.to(_resolve_dtype(dtype))
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor that shares memory with a float32 or float64 numpy array, as in PyTorch.

    Writes to either show in the other. Arrays whose memory cannot be shared
    (non-contiguous views, read-only or misaligned arrays, arrays of non-native
    byte order, and bool arrays) are copied. Bool arrays are always copied: numpy
    can store any byte in a bool array, and the Rust core may only see 0 and 1.
    """
    if not isinstance(array, np.ndarray):
        raise ArgumentTypeError(
            f"expected np.ndarray (got {type(array).__name__}); use rustgrad.tensor(data) for other data"
        )
    if array.dtype.kind not in "fb" or array.dtype == np.float16:
        raise DTypeError(
            f"can't convert np.ndarray of type {array.dtype}; the supported types are "
            "float32, float64 and bool"
        )
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return _rustgrad._from_numpy(np.asarray(array, order="C"), False, True)


def full(size: Sequence[int], fill_value: float, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _rustgrad._full(_sizes([size]), float(fill_value), _resolve_dtype(dtype), requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _rustgrad._full(_sizes(size), 0.0, _resolve_dtype(dtype), requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _rustgrad._full(_sizes(size), 1.0, _resolve_dtype(dtype), requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Like ``zeros``: rustgrad never hands out uninitialised memory."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def randn(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          generator: Optional[int] = None) -> Tensor:
    """Samples from N(0, 1). ``manual_seed`` makes the sequence reproducible."""
    _check_device(device)
    return _rustgrad._random(_sizes(size), _resolve_dtype(dtype), "normal", 0.0, 1.0,
                             requires_grad, generator)


def rand(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         generator: Optional[int] = None) -> Tensor:
    """Samples from U[0, 1)."""
    _check_device(device)
    return _rustgrad._random(_sizes(size), _resolve_dtype(dtype), "uniform", 0.0, 1.0,
                             requires_grad, generator)


def _like(t: Tensor, dtype: Any) -> tuple[list[int], Any]:
    return list(t.shape), _resolve_dtype(dtype, t.dtype)


def zeros_like(t: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype)
    return zeros(shape, dtype=dt, device=device, requires_grad=requires_grad)


def ones_like(t: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype)
    return ones(shape, dtype=dt, device=device, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value: float, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype)
    return full(shape, fill_value, dtype=dt, device=device, requires_grad=requires_grad)


def randn_like(t: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype)
    return randn(shape, dtype=dt, device=device, requires_grad=requires_grad)


def rand_like(t: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype)
    return rand(shape, dtype=dt, device=device, requires_grad=requires_grad)


def arange(start: float, end: Optional[float] = None, step: float = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive); float32 unless ``dtype`` says otherwise."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ShapeError("arange: step must be nonzero")
    values = np.arange(start, end, step, dtype=np.float64)
    return tensor(values, dtype=_resolve_dtype(dtype), device=device, requires_grad=requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    if steps < 0:
        raise ShapeError(f"linspace: number of steps must be non-negative, got {steps}")
    values = np.linspace(start, end, steps, dtype=np.float64)
    return tensor(values, dtype=_resolve_dtype(dtype), device=device, requires_grad=requires_grad)


def eye(n: int, m: Optional[int] = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    if n < 0 or (m is not None and m < 0):
        raise ShapeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    values = np.eye(n, m if m is not None else n, dtype=np.float64)
    return tensor(values, dtype=_resolve_dtype(dtype), device=device, requires_grad=requires_grad)

