"""Hand-built DLPack capsules (legacy and versioned) for the DLPack hardening and fuzz tests.

A capsule made here can carry any field value, hostile ones included. Its struct,
shape and strides arrays and the buffer its data points into stay alive until its
deleter runs; `deleter_calls` counts how often each capsule's deleter ran.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from typing import Any, Optional, Sequence

import numpy as np


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


CPU = 1
FLOAT = 2
BOOL = 6
READ_ONLY = 1 << 0
IS_COPIED = 1 << 1

_LEGACY_NAME = ctypes.c_char_p(b"dltensor")
_VERSIONED_NAME = ctypes.c_char_p(b"dltensor_versioned")

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# What each live capsule needs kept alive, by the address of its managed struct.
_alive: dict[int, tuple[Any, ...]] = {}
deleter_calls: Counter[int] = Counter()


@DELETER
def _deleter(address: Optional[int]) -> None:
    deleter_calls[address or 0] += 1
    _alive.pop(address or 0, None)


def _int64_array(values: Optional[Sequence[int]]) -> Any:
    if values is None:
        return None
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def make_capsule(
    *,
    data: Optional[int],
    shape: Optional[Sequence[int]],
    strides: Optional[Sequence[int]] = None,
    ndim: Optional[int] = None,
    code: int = FLOAT,
    bits: int = 64,
    lanes: int = 1,
    device: tuple[int, int] = (CPU, 0),
    byte_offset: int = 0,
    version: Optional[tuple[int, int]] = None,
    flags: int = 0,
    keep: Any = None,
    deleter: bool = True,
) -> tuple[Any, int]:
    """A capsule with exactly these fields, and the address of its managed struct.

    `version=None` makes a legacy "dltensor" capsule, else a "dltensor_versioned" one.
    `shape`/`strides` of None leave that pointer NULL; `ndim` defaults to len(shape).
    `keep` (for example the numpy array `data` points into) lives as long as the capsule.
    """
    shape_array, strides_array = _int64_array(shape), _int64_array(strides)
    tensor = DLTensor(
        data=data,
        device=DLDevice(*device),
        ndim=len(shape or ()) if ndim is None else ndim,
        dtype=DLDataType(code, bits, lanes),
        byte_offset=byte_offset,
    )
    if shape_array is not None:
        tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64))
    if strides_array is not None:
        tensor.strides = ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64))
    delete = _deleter if deleter else DELETER()
    if version is None:
        managed: Any = DLManagedTensor(dl_tensor=tensor, deleter=delete)
        name = _LEGACY_NAME
    else:
        managed = DLManagedTensorVersioned(
            version=DLPackVersion(*version), deleter=delete, flags=flags, dl_tensor=tensor
        )
        name = _VERSIONED_NAME
    address = ctypes.addressof(managed)
    _alive[address] = (managed, shape_array, strides_array, keep)
    deleter_calls[address] = 0  # the address of a freed struct may come back
    return _capsule_new(address, name, None), address


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def versioned_flags(capsule: Any) -> int:
    """The `flags` field of an unconsumed "dltensor_versioned" capsule."""
    address = _capsule_get_pointer(capsule, _VERSIONED_NAME.value)
    return DLManagedTensorVersioned.from_address(address).flags


def capsule_over(array: np.ndarray, **fields: Any) -> tuple[Any, int]:
    """A capsule whose data points at `array`'s first byte (the array stays alive with it)."""
    code = BOOL if array.dtype == np.bool_ else FLOAT
    fields.setdefault("code", code)
    fields.setdefault("bits", array.dtype.itemsize * 8)
    return make_capsule(data=array.ctypes.data, keep=array, **fields)


class Producer:
    """An object with `__dlpack__` that hands out a prepared capsule and records its arguments."""

    def __init__(self, capsule: Any, *, accepts_max_version: bool = True) -> None:
        self.capsule = capsule
        self.accepts_max_version = accepts_max_version
        self.calls: list[dict[str, Any]] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if kwargs and not self.accepts_max_version:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (CPU, 0)


def capsule_for_example(example: dict[str, Any], buffer: np.ndarray) -> tuple[Any, int]:
    """The capsule a fuzz example describes; its `data` is a byte offset into `buffer`, or None for NULL."""
    data = None if example["data"] is None else buffer.ctypes.data + example["data"]
    version = example["version"]
    return make_capsule(
        data=data,
        shape=example["shape"],
        strides=example["strides"],
        ndim=example["ndim"],
        code=example["code"],
        bits=example["bits"],
        lanes=example["lanes"],
        device=tuple(example["device"]),
        byte_offset=example["byte_offset"],
        version=None if version is None else tuple(version),
        flags=example["flags"],
        keep=buffer,
    )


FUZZ_BUFFER_BYTES = 1 << 15


def fuzz_buffer() -> np.ndarray:
    """The buffer every fuzz capsule points into: random bytes, the same in every process."""
    return np.random.default_rng(12).integers(0, 256, FUZZ_BUFFER_BYTES, dtype=np.uint8)


# Source that a child interpreter runs to get `make_capsule` etc. without pytest.
CHILD_PRELUDE = f"import sys; sys.path.insert(0, {__file__.rsplit('/', 1)[0]!r}); from _dlpack_capsules import *\n"
