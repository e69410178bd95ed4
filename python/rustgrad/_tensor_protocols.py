"""Python protocols of ``rustgrad.Tensor`` written in Python, called from
``rust/python/tensor/``: the legacy constructor ``Tensor(...)``, pickling and
``copy.deepcopy``."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from rustgrad import _rustgrad
from rustgrad._creation import _NUMPY_DTYPES, _SUPPORTED, _check_device, tensor, zeros
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, DTypeError, GradientError, ShapeError


def _is_size(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_sequence(data: Any) -> bool:
    return isinstance(data, (np.ndarray, list, tuple)) or (
        hasattr(data, "__len__") and hasattr(data, "__getitem__") and not isinstance(data, (str, bytes))
    )


def legacy_new(*args: Any, **kwargs: Any) -> Tensor:
    """``rustgrad.Tensor(...)`` as ``torch.Tensor(...)``.

    Integers are sizes: ``Tensor(2, 3)`` is a zero-filled 2x3 float32 tensor and
    ``Tensor()`` is empty. One sequence or array is data, as float32:
    ``Tensor([2, 3])`` and ``Tensor((2, 3))`` hold 2. and 3. A tensor gives a
    tensor sharing its memory (without its autograd history).
    """
    dev = kwargs.pop("device", None)
    if kwargs:
        raise ArgumentTypeError(
            f"Tensor(): unexpected keyword argument(s) {', '.join(sorted(kwargs))}; only device= is "
            "accepted (use rustgrad.tensor(data, dtype=..., requires_grad=...))"
        )
    _check_device(dev)
    if all(_is_size(a) for a in args):
        return zeros(*args) if args else zeros(0)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Tensor):
            return data.detach()
        if _is_sequence(data):
            return tensor(data, dtype=_rustgrad.float32)
        raise ArgumentTypeError(
            f"Tensor(): data must be a sequence (got {type(data).__name__}); use rustgrad.tensor(value) "
            "for a 0-d tensor"
        )
    raise ArgumentTypeError(
        "Tensor(): expected sizes (ints) or one sequence of data, got "
        f"({', '.join(type(a).__name__ for a in args)})"
    )


def reduce_tensor(t: Tensor) -> tuple[Any, tuple[bytes, str, tuple[int, ...], bool]]:
    """``Tensor.__reduce__``: the values as little-endian bytes, the dtype name, the shape
    and ``requires_grad``. Unpickling calls only ``rebuild_tensor``."""
    values = np.ascontiguousarray(t.detach().numpy())
    data = values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes()
    return rebuild_tensor, (data, t.dtype.name, tuple(t.shape), bool(t.requires_grad))


def rebuild_tensor(data: bytes, dtype_name: str, shape: tuple[int, ...], requires_grad: bool) -> Tensor:
    """Makes a tensor from what ``reduce_tensor`` stored, after checking that it fits together."""
    if dtype_name not in _NUMPY_DTYPES:
        raise DTypeError(f"cannot unpickle a tensor of dtype {dtype_name!r}; rustgrad has {_SUPPORTED}")
    well_formed = (
        isinstance(data, (bytes, bytearray))
        and isinstance(shape, tuple)
        and all(_is_size(d) and d >= 0 for d in shape)
        and isinstance(requires_grad, bool)
    )
    if not well_formed:
        raise ArgumentTypeError(
            "cannot unpickle a tensor: expected (bytes, dtype name, shape of non-negative ints, bool)"
        )
    little_endian = np.dtype(_NUMPY_DTYPES[dtype_name]).newbyteorder("<")
    expected = math.prod(shape) * little_endian.itemsize
    if len(data) != expected:
        raise ShapeError(
            f"cannot unpickle a tensor of shape {list(shape)} and dtype {dtype_name}: the pickle holds "
            f"{len(data)} bytes of data, not {expected}"
        )
    values = np.frombuffer(data, dtype=little_endian).reshape(shape)
    return _rustgrad._from_numpy(values.astype(values.dtype.newbyteorder("=")), requires_grad)


def deepcopy_tensor(t: Tensor, memo: dict[int, Any]) -> Tensor:
    """``Tensor.__deepcopy__``: a leaf's values, ``requires_grad`` and ``.grad``, as torch copies them."""
    if not t.is_leaf:
        raise GradientError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
            "the moment; use t.detach().clone() to copy the values of a tensor computed by an op"
        )
    new = t.detach().clone()
    if t.requires_grad:
        new.requires_grad_(True)
    if t.grad is not None:
        new.grad = copy.deepcopy(t.grad, memo)
    return new
