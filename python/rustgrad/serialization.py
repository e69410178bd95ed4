"""``rustgrad.save`` / ``rustgrad.load``: tensors on disk in numpy's open ``.npz`` format.

A file holds one tensor or a dict of tensors with string keys (a model's
parameters, for example). It is an ordinary zip of ``.npy`` arrays, readable
with ``numpy.load`` by any program; rustgrad adds one small metadata entry,
``__rustgrad__``, recording which of the two was saved and each tensor's
``requires_grad``. Nothing is pickled, so loading a file never runs code.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any, BinaryIO, Union

import numpy as np

from rustgrad import _rustgrad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import DTypeError, RustgradError

__all__ = ["load", "save"]

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]

_META_KEY = "__rustgrad__"
_TENSOR_KEY = "tensor"
_FORMAT_VERSION = 1
_DTYPES = {"float32", "float64", "bool"}


class SerializationError(RustgradError, RuntimeError):
    """A file that ``rustgrad.load`` cannot read as tensors."""


def _array_of(t: Tensor, where: str) -> np.ndarray:
    if t.dtype.name not in _DTYPES:  # pragma: no cover - every rustgrad dtype is supported
        raise DTypeError(f"save: {where} has unsupported dtype {t.dtype.name}")
    return np.asarray(t.detach().numpy(), order="C")


def save(obj: Any, f: PathOrFile) -> None:
    """Saves a tensor, or a dict (str keys) of tensors, to ``f`` (a path or a binary file object).

    The file is written at exactly the given path (numpy's ``.npz`` suffix is not appended), and
    ``rustgrad.load`` gives back tensors with the same dtypes, shapes and values.
    """
    arrays: dict[str, Any]
    meta: dict[str, Any]
    if isinstance(obj, Tensor):
        arrays = {_TENSOR_KEY: _array_of(obj, "the tensor")}
        meta = {"kind": "tensor", "requires_grad": {_TENSOR_KEY: bool(obj.requires_grad)}}
    elif isinstance(obj, dict):
        arrays = {}
        requires_grad = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"save: dict keys must be str, got {type(key).__name__} key {key!r}; "
                    "rustgrad.save stores a tensor or a dict of str -> tensor"
                )
            if key == _META_KEY:
                raise ValueError(f"save: the key {_META_KEY!r} is reserved for rustgrad's metadata")
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"save: value for key {key!r} is a {type(value).__name__}, not a Tensor; "
                    "rustgrad.save stores a tensor or a dict of str -> tensor (nested containers and "
                    "other Python objects are not supported)"
                )
            arrays[key] = _array_of(value, f"tensor {key!r}")
            requires_grad[key] = bool(value.requires_grad)
        meta = {"kind": "dict", "requires_grad": requires_grad}
    else:
        raise TypeError(
            f"save: cannot save an object of type {type(obj).__name__}; rustgrad.save stores a tensor or "
            "a dict of str -> tensor (in numpy's .npz format)"
        )
    meta["version"] = _FORMAT_VERSION
    arrays[_META_KEY] = np.array(json.dumps(meta))
    if hasattr(f, "write"):
        np.savez(f, **arrays)  # type: ignore[arg-type]
    else:
        with open(os.fspath(f), "wb") as handle:  # type: ignore[arg-type]
            np.savez(handle, **arrays)


def load(f: PathOrFile, map_location: Any = None, weights_only: bool = True, **kwargs: Any) -> Any:
    """Loads what ``save`` wrote: a tensor, or a dict of tensors when a dict was saved.

    A plain ``.npz`` written by ``numpy.savez`` loads as a dict of tensors. ``map_location`` is
    accepted for compatibility (rustgrad tensors always live on the CPU).
    """
    if map_location is not None:
        _rustgrad.device(map_location if not callable(map_location) else "cpu")
    try:
        archive = np.load(f, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        raise SerializationError(
            f"load: {f!r} is not an .npz archive written by rustgrad.save (numpy could not read it as one)"
        ) from err
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise SerializationError(
            f"load: {f!r} holds a single .npy array, not an .npz archive written by rustgrad.save; "
            "use rustgrad.from_numpy(numpy.load(path)) for it"
        )
    with archive:
        meta: dict[str, Any] = {"kind": "dict", "requires_grad": {}}
        if _META_KEY in archive.files:
            meta = json.loads(str(archive[_META_KEY][()]))
        tensors = {
            key: _tensor_of(archive[key], key, bool(meta["requires_grad"].get(key, False)), f)
            for key in archive.files if key != _META_KEY
        }
    if meta["kind"] == "tensor":
        return tensors[_TENSOR_KEY]
    return tensors


def _tensor_of(array: np.ndarray, key: str, requires_grad: bool, f: Any) -> Tensor:
    if array.dtype.name not in _DTYPES:
        raise DTypeError(
            f"load: array {key!r} in {f!r} has numpy dtype {array.dtype}; rustgrad tensors are float32, "
            "float64 or bool"
        )
    return _rustgrad._from_numpy(np.asarray(array, order="C"), requires_grad)
