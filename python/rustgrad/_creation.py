"""Tensor factories with PyTorch's names, signatures and defaults."""

from __future__ import annotations

import math
import numbers
import operator
import sys
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from rustgrad import _rustgrad
from rustgrad._rustgrad import Tensor, device
from rustgrad.errors import ArgumentTypeError, DTypeError, OutOfMemoryError, ShapeError

float32 = _rustgrad.float32
float64 = _rustgrad.float64
int64 = _rustgrad.int64
int32 = _rustgrad.int32
uint8 = _rustgrad.uint8
bool_ = _rustgrad.bool

# Every rustgrad dtype, by name, with its numpy type.
_DTYPES = {d.name: d for d in (float32, float64, int64, int32, uint8, bool_)}
_NUMPY_DTYPES = {name: (np.bool_ if name == "bool" else getattr(np, name)) for name in _DTYPES}
# Keyed by numpy dtype (native byte order), since numpy computes ``dtype.name`` in Python (~2.5 µs).
_BY_NUMPY_DTYPE = {np.dtype(_NUMPY_DTYPES[name]): dt for name, dt in _DTYPES.items()}
_SUPPORTED = "float32, float64, int64, int32, uint8 and bool"


def _dtype_of_numpy(np_dtype: np.dtype) -> Any:
    """The rustgrad dtype of a numpy dtype in either byte order, or None when rustgrad has none."""
    return _BY_NUMPY_DTYPE.get(np_dtype if np_dtype.isnative else np_dtype.newbyteorder("="))


def _dtype_from_name(name: str) -> Any:
    return _DTYPES[name]


# torch's attribute names of the dtypes, accepted as strings too.
_ALIASES = {"float": "float32", "double": "float64", "long": "int64", "int": "int32", **{n: n for n in _DTYPES}}


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
    if name not in _ALIASES:
        raise DTypeError(f"unknown dtype {dtype!r}; use a rustgrad dtype ({_SUPPORTED})")
    return _DTYPES[_ALIASES[name]]


def _check_device(dev: Any) -> None:
    if dev is not None:
        device(dev)



def _integer(op: str, name: str, value: Any) -> int:
    """``value`` as an int when it is one (an int, a numpy integer); 2.5 or "3" are refused, as in torch."""
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{op}(): {name} must be an integer, got {type(value).__name__} {value!r}") from None


def _real(op: str, name: str, value: Any) -> Union[int, float]:
    """``value`` as a Python int or float; strings, complex numbers and None are refused."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, numbers.Integral):
        return operator.index(value)
    if isinstance(value, numbers.Real):
        return float(value)
    hint = "; rustgrad has no complex dtype" if isinstance(value, numbers.Complex) else ""
    raise ArgumentTypeError(f"{op}(): {name} must be a real number, got {type(value).__name__} {value!r}{hint}")


def _shape(op: str, size: Sequence[Any], dtype: Any) -> list[int]:
    """The sizes of a factory call (integers, or one sequence of them), checked to be addressable."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = [_integer(op, f"size {tuple(size)!r}: element {i}", s) for i, s in enumerate(size)]
    if all(d >= 0 for d in shape):  # a negative size gets the core's ShapeError
        _check_addressable(op, shape, dtype)
    return shape


def _out_of_memory(op: str, shape: Sequence[int], dtype: Any) -> OutOfMemoryError:
    nbytes = math.prod(shape) * dtype.itemsize
    return OutOfMemoryError(
        f"{op}: cannot allocate {nbytes} bytes for a {dtype.name} tensor of shape {list(shape)}; "
        "use a smaller shape"
    )


def _check_addressable(op: str, shape: Sequence[int], dtype: Any) -> None:
    """Refuses, before anything is allocated, a tensor larger than any address space."""
    if math.prod(shape) * dtype.itemsize > sys.maxsize:
        raise _out_of_memory(op, shape, dtype)


def _default_dtype_for(array: np.ndarray, from_numpy_input: bool) -> Any:
    """The dtype torch gives this data: bool stays bool, Python floats are float32 (numpy's
    float64 stays float64), integers keep int64, int32 or uint8 and other widths become
    int64, which holds every value of theirs (a uint64 value past int64's range is refused)."""
    kind = array.dtype.kind
    if kind == "b":
        return bool_
    if kind == "f":
        return float64 if from_numpy_input and array.dtype.itemsize >= 8 else float32
    if kind in "iu":
        same = _dtype_of_numpy(array.dtype)
        if same is not None:
            return same
        if array.dtype == np.uint64 and array.size and int(array.max()) > np.iinfo(np.int64).max:
            raise DTypeError(
                f"cannot make a tensor from uint64 data: the value {int(array.max())} does not fit in int64, "
                "rustgrad's widest integer dtype; pass dtype=rustgrad.float64 to store it as a float"
            )
        return int64
    raise DTypeError(f"cannot make a tensor from data of numpy dtype {array.dtype}; rustgrad supports {_SUPPORTED}")


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
    """A tensor that shares memory with a numpy array of a rustgrad dtype (float32, float64,
    int64, int32 or uint8), as in PyTorch.

    Writes to either show in the other. Arrays whose memory cannot be shared
    (non-contiguous views, read-only or misaligned arrays, arrays of non-native
    byte order, and bool arrays) are copied. Bool arrays are always copied: numpy
    can store any byte in a bool array, and the Rust core may only see 0 and 1.
    Other dtypes (int16, float16, ...) are refused: ``rustgrad.tensor(array)`` copies
    them into a dtype rustgrad has.
    """
    if not isinstance(array, np.ndarray):
        raise ArgumentTypeError(
            f"expected np.ndarray (got {type(array).__name__}); use rustgrad.tensor(data) for other data"
        )
    if _dtype_of_numpy(array.dtype) is None:
        raise DTypeError(
            f"can't convert np.ndarray of type {array.dtype}; the supported types are {_SUPPORTED} "
            "(rustgrad.tensor(array) copies other numbers into one of them)"
        )
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return _rustgrad._from_numpy(np.asarray(array, order="C"), False, True)



def _number_dtype(value: Union[bool, int, float]) -> Any:
    """The dtype torch gives a Python number: bool, int64 or float32."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    return int64 if isinstance(value, int) else float32


def full(size: Sequence[int], fill_value: float, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; its dtype is the value's (bool, int64 or float32) unless given."""
    _check_device(device)
    value = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    value = value if isinstance(value, (bool, np.bool_)) else _real("full", "fill_value", value)
    dt = _resolve_dtype(dtype, _number_dtype(value))
    return _rustgrad._full(_shape("full", [size], dt), value, dt, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    dt = _resolve_dtype(dtype)
    return _rustgrad._full(_shape("zeros", size, dt), 0, dt, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    dt = _resolve_dtype(dtype)
    return _rustgrad._full(_shape("ones", size, dt), 1, dt, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Like ``zeros``: rustgrad never hands out uninitialised memory."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def randn(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Samples from N(0, 1), drawn from ``generator`` (default: the default generator, which
    ``manual_seed`` seeds)."""
    _check_device(device)
    dt = _resolve_dtype(dtype)
    return _rustgrad._random(_shape("randn", size, dt), dt, "normal", 0.0, 1.0, requires_grad, generator)


def rand(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Samples from U[0, 1), drawn from ``generator`` (default: the default generator)."""
    _check_device(device)
    dt = _resolve_dtype(dtype)
    return _rustgrad._random(_shape("rand", size, dt), dt, "uniform", 0.0, 1.0, requires_grad, generator)


def _like(t: Tensor, dtype: Any, op: str) -> tuple[list[int], Any]:
    if not isinstance(t, Tensor):
        raise ArgumentTypeError(f"{op}(): argument 'input' must be a Tensor, got {type(t).__name__}")
    return list(t.shape), _resolve_dtype(dtype, t.dtype)


def zeros_like(t: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype, "zeros_like")
    return zeros(shape, dtype=dt, device=device, requires_grad=requires_grad)


def ones_like(t: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype, "ones_like")
    return ones(shape, dtype=dt, device=device, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value: float, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    shape, dt = _like(t, dtype, "full_like")
    return full(shape, fill_value, dtype=dt, device=device, requires_grad=requires_grad)


def randn_like(t: Tensor, *, generator: Any = None, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """``randn`` in ``t``'s shape and (unless ``dtype`` says otherwise) dtype."""
    shape, dt = _like(t, dtype, "randn_like")
    return randn(shape, generator=generator, dtype=dt, device=device, requires_grad=requires_grad)


def rand_like(t: Tensor, *, generator: Any = None, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """``rand`` in ``t``'s shape and (unless ``dtype`` says otherwise) dtype."""
    shape, dt = _like(t, dtype, "rand_like")
    return rand(shape, generator=generator, dtype=dt, device=device, requires_grad=requires_grad)


# Elements computed at a time by the sequence factories, so that their float64
# working memory stays small whatever the length.
_CHUNK = 1 << 16


def _sequence(op: str, length: int, dtype: Any, values_at: Callable[[np.ndarray], np.ndarray],
              requires_grad: bool, exact: bool = False) -> Tensor:
    """A 1-D tensor whose element i is ``values_at(i)``, computed in float64 and rounded once
    (``exact``: in int64, for integer sequences)."""
    _check_addressable(op, [length], dtype)
    try:
        out = np.empty(length, dtype=_NUMPY_DTYPES[dtype.name])
        for begin in range(0, length, _CHUNK):
            index = np.arange(begin, min(begin + _CHUNK, length), dtype=np.int64 if exact else np.float64)
            out[begin:begin + len(index)] = values_at(index)
    except MemoryError:
        raise _out_of_memory(op, [length], dtype) from None
    return _rustgrad._from_numpy(out, requires_grad)


def _finite(value: Union[int, float]) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def arange(start: float, end: Optional[float] = None, step: float = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive): int64 when all three are integers, else
    float32, unless ``dtype`` says otherwise (as torch)."""
    _check_device(device)
    if end is None:
        start, end = 0, start
    start, end, step = (_real("arange", name, v) for name, v in (("start", start), ("end", end), ("step", step)))
    if not (_finite(start) and _finite(end)):
        raise ShapeError(f"arange: unsupported range: {start} -> {end}; start and end must be finite")
    if not math.isfinite(step) or step == 0:
        raise ShapeError(f"arange: step must be nonzero and finite, got {step}")
    if (end - start) * step < 0:
        raise ShapeError(
            f"arange: upper bound and lower bound inconsistent with step sign (start={start}, end={end}, "
            f"step={step}); use a negative step to count down"
        )
    integers = all(isinstance(v, int) for v in (start, end, step))
    target = _resolve_dtype(dtype, int64 if integers else float32)
    if integers and not target.is_floating_point:
        length = -((start - end) // step)
        _check_addressable("arange", [length], target)
        if max(abs(start), abs(end)) > np.iinfo(np.int64).max:
            raise ShapeError(f"arange: {start} -> {end} does not fit in int64")
        return _sequence("arange", length, target, lambda i: start + i * step, requires_grad, exact=True)
    length = math.ceil((end - start) / step)
    first, delta = float(start), float(step)
    return _sequence("arange", length, target, lambda i: first + i * delta, requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (numpy's values)."""
    _check_device(device)
    first, last = (float(_real("linspace", name, v)) for name, v in (("start", start), ("end", end)))
    steps = _integer("linspace", "steps", steps)
    if steps < 0:
        raise ShapeError(f"linspace: number of steps must be non-negative, got {steps}")
    divisions = max(steps - 1, 1)
    delta = last - first
    spacing = delta / divisions

    def values_at(i: np.ndarray) -> np.ndarray:
        # numpy's formula, the last value set to ``end`` exactly.
        values = first + i * spacing if spacing != 0 else first + i / divisions * delta
        return np.where(i == steps - 1, last, values) if steps > 1 else values

    return _sequence("linspace", steps, _resolve_dtype(dtype), values_at, requires_grad)


def eye(n: int, m: Optional[int] = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal and zeros elsewhere, ``n`` rows and ``m`` (or ``n``) columns."""
    _check_device(device)
    n = _integer("eye", "n", n)
    m = n if m is None else _integer("eye", "m", m)
    if n < 0 or m < 0:
        raise ShapeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    dt = _resolve_dtype(dtype)
    _check_addressable("eye", [n, m], dt)
    try:
        values = np.zeros((n, m), dtype=_NUMPY_DTYPES[dt.name])  # calloc: only the diagonal is touched
        np.fill_diagonal(values, 1)
    except MemoryError:
        raise _out_of_memory("eye", [n, m], dt) from None
    return _rustgrad._from_numpy(values, requires_grad)
