"""``rustgrad.save`` / ``rustgrad.load``: tensors on disk in numpy's open ``.npz`` format.

A file holds one tensor or a dict of tensors with string keys (a model's
parameters, for example). It is an ordinary zip of ``.npy`` arrays, readable
with ``numpy.load`` by any program; rustgrad adds one small metadata entry,
``__rustgrad__``, recording which of the two was saved and, for each tensor, its
key, its member in the zip and its ``requires_grad``. A member is named after
its key (``<key>.npy``) when the zip format can hold that name and no other
member has it; otherwise it gets a free ``arr_<i>.npy`` name. So every str key
round-trips exactly, whatever it looks like.

Nothing is pickled, so loading a file never runs code. Loading checks every size
the file declares against the bytes actually there before it allocates, and a
corrupt, truncated or foreign file raises ``SerializationError``.

Format versions: 1 (rustgrad before this change: members always ``<key>.npy``,
metadata ``{"version": 1, "kind", "requires_grad": {key: bool}}``) and 2 (the
current one, metadata ``{"version": 2, "kind", "entries": [[key, member,
requires_grad], ...]}``). Both load; a plain ``numpy.savez`` file loads as a dict.
"""

from __future__ import annotations

import json
import os
from typing import Any, BinaryIO, Union

import numpy as np

from rustgrad import _npz, _rustgrad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import DTypeError, PathNotFoundError, SerializationError

__all__ = ["load", "save"]

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]

_META_MEMBER = "__rustgrad__.npy"
_TENSOR_KEY = "tensor"
_FORMAT_VERSION = 2
_KINDS = ("tensor", "dict")
_DTYPES = {"float32", "float64", "int64", "int32", "uint8", "bool"}


def _array_of(t: Tensor, where: str) -> np.ndarray:
    if t.dtype.name not in _DTYPES:  # pragma: no cover - every rustgrad dtype is supported
        raise DTypeError(f"save: {where} has unsupported dtype {t.dtype.name}")
    return np.asarray(t.detach().numpy(), order="C")


def _entries_of(obj: Any) -> tuple[str, list[tuple[str, np.ndarray, bool]]]:
    """What ``save`` stores: the kind and (key, array, requires_grad) for each tensor."""
    if isinstance(obj, Tensor):
        return "tensor", [(_TENSOR_KEY, _array_of(obj, "the tensor"), bool(obj.requires_grad))]
    if not isinstance(obj, dict):
        raise TypeError(
            f"save: cannot save an object of type {type(obj).__name__}; rustgrad.save stores a tensor or "
            "a dict of str -> tensor (in numpy's .npz format)"
        )
    entries = []
    for key, value in obj.items():
        if not isinstance(key, str):
            raise TypeError(
                f"save: dict keys must be str, got {type(key).__name__} key {key!r}; "
                "rustgrad.save stores a tensor or a dict of str -> tensor"
            )
        if not isinstance(value, Tensor):
            raise TypeError(
                f"save: value for key {key!r} is a {type(value).__name__}, not a Tensor; "
                "rustgrad.save stores a tensor or a dict of str -> tensor (nested containers and "
                "other Python objects are not supported)"
            )
        entries.append((key, _array_of(value, f"tensor {key!r}"), bool(value.requires_grad)))
    return "dict", entries


def _member_names(keys: list[str]) -> list[str]:
    """Zip member names for the keys: ``<key>.npy`` where the zip format holds that name unchanged
    and it is free, else the first free ``arr_<i>.npy``."""
    taken = {_META_MEMBER}
    names: list[Any] = [None] * len(keys)
    for i, key in enumerate(keys):
        name = f"{key}.npy"
        if name not in taken and _npz.zip_name_ok(name):
            names[i] = name
            taken.add(name)
    counter = 0
    for i, name in enumerate(names):
        if name is None:
            while f"arr_{counter}.npy" in taken:
                counter += 1
            names[i] = f"arr_{counter}.npy"
            taken.add(names[i])
    return names


def save(obj: Any, f: PathOrFile) -> None:
    """Saves a tensor, or a dict (str keys) of tensors, to ``f`` (a path or a binary file object).

    The file is written at exactly the given path (numpy's ``.npz`` suffix is not appended), and
    ``rustgrad.load`` gives back tensors with the same keys, dtypes, shapes and values. A path is
    written through a temporary file renamed over it at the end, so a failed save leaves no partial
    file; a missing parent folder raises ``PathNotFoundError``.
    """
    kind, entries = _entries_of(obj)
    members = _member_names([key for key, _, _ in entries])
    meta = {
        "version": _FORMAT_VERSION,
        "kind": kind,
        "entries": [[key, member, requires_grad] for (key, _, requires_grad), member in zip(entries, members)],
    }
    if not hasattr(f, "write"):
        parent = _npz.missing_parent(_npz.fspath_of(f, "save"))
        if parent is not None:
            raise PathNotFoundError(
                f"save: parent directory {parent} does not exist; create it first (os.makedirs) or save elsewhere"
            )
    arrays = [(_META_MEMBER, np.array(json.dumps(meta)))]
    arrays += [(member, array) for (_, array, _), member in zip(entries, members)]
    _npz.write_npz(f, arrays, "save", SerializationError)


def load(f: PathOrFile, map_location: Any = None, weights_only: bool = True, **kwargs: Any) -> Any:
    """Loads what ``save`` wrote: a tensor, or a dict of tensors when a dict was saved.

    A plain ``.npz`` written by ``numpy.savez`` loads as a dict of tensors. ``map_location`` is
    accepted for compatibility (rustgrad tensors always live on the CPU). A missing file raises
    ``PathNotFoundError`` and a corrupt, truncated or foreign one ``SerializationError``.
    """
    if map_location is not None:
        _rustgrad.device(map_location if not callable(map_location) else "cpu")
    with _npz.NpzReader(f, "load", SerializationError) as archive:
        kind, entries = _entries_in(archive, _npz.describe(f))
        tensors = {
            key: _tensor_of(archive.read_array(member, f"tensor {key!r}"), requires_grad)
            for key, member, requires_grad in entries
        }
    if kind == "tensor":
        return tensors[_TENSOR_KEY]
    return tensors


def _entries_in(archive: _npz.NpzReader, label: str) -> tuple[str, list[tuple[str, str, bool]]]:
    """The kind and (key, member, requires_grad) of each tensor, from the metadata when present."""
    if _META_MEMBER not in archive.names:  # a plain numpy .npz
        if len(set(archive.keys)) != len(archive.keys):
            raise SerializationError(f"load: {label} has two members for one key ({archive.names})")
        return "dict", [(key, name, False) for key, name in zip(archive.keys, archive.names)]

    def bad(detail: str) -> SerializationError:
        return SerializationError(f"load: {label} has invalid rustgrad metadata: {detail}")

    try:
        meta = json.loads(archive.read_text(_META_MEMBER))
    except (ValueError, RecursionError) as err:
        raise bad(f"it is not JSON ({err})") from err
    if not isinstance(meta, dict) or meta.get("kind") not in _KINDS:
        raise bad(f"expected an object with a 'kind' of {_KINDS}, got {str(meta)[:200]}")
    version = meta.get("version")
    if version == 1:
        entries = _entries_v1(archive, meta, bad)
    elif version == 2:
        entries = _entries_v2(archive, meta, bad)
    else:
        raise bad(f"unknown format version {version!r}; this rustgrad reads versions 1 and 2 (a newer rustgrad "
                  "may have written it)")
    if meta["kind"] == "tensor" and [key for key, _, _ in entries] != [_TENSOR_KEY]:
        raise bad("a saved tensor must have exactly one entry")
    return meta["kind"], entries


def _entries_v1(archive: _npz.NpzReader, meta: dict, bad: Any) -> list[tuple[str, str, bool]]:
    requires_grad = meta.get("requires_grad")
    if not isinstance(requires_grad, dict) or not all(isinstance(v, bool) for v in requires_grad.values()):
        raise bad("'requires_grad' must map keys to booleans")
    members = [name for name in archive.names if name != _META_MEMBER]
    keys = [_npz.key_of(name) for name in members]
    if len(set(keys)) != len(keys):
        raise bad(f"two members for one key ({members})")
    return [(key, name, requires_grad.get(key, False)) for key, name in zip(keys, members)]


def _entries_v2(archive: _npz.NpzReader, meta: dict, bad: Any) -> list[tuple[str, str, bool]]:
    entries = meta.get("entries")
    if not isinstance(entries, list) or not all(
        isinstance(e, list) and len(e) == 3 and isinstance(e[0], str) and isinstance(e[1], str)
        and isinstance(e[2], bool) for e in entries
    ):
        raise bad("'entries' must be a list of [key, member, requires_grad]")
    keys = [e[0] for e in entries]
    members = [e[1] for e in entries]
    if len(set(keys)) != len(keys) or len(set(members)) != len(members) or _META_MEMBER in members:
        raise bad("two entries share a key or a member")
    missing = sorted(set(members) - set(archive.names))
    if missing:
        raise bad(f"the archive has no member {missing[0]!r}")
    return [(key, member, requires_grad) for key, member, requires_grad in entries]


def _tensor_of(array: np.ndarray, requires_grad: bool) -> Tensor:
    # The array is new and C-contiguous; the tensor takes over its memory instead of copying it.
    return _rustgrad._from_numpy(array, requires_grad, True)
