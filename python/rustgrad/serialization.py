"""``rustgrad.save`` / ``rustgrad.load``: checkpoints as safetensors files, never pickle.

``save`` takes what people save: a tensor, or nested dicts (str or int keys; ``OrderedDict`` kept),
lists and tuples of tensors, ints, floats (inf and nan too), strings, bools and None — a training
checkpoint such as ``{"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict()}``.
Anything else is refused at save time with a ``TypeError`` naming where it is in the object.

The file is a safetensors file (https://github.com/huggingface/safetensors), so other programs
read its tensors. Its ``__metadata__`` holds two strings:

- ``"rustgrad"``: JSON ``{"version": 3, "object": <node>, "requires_grad": [<tensor name>, ...]}``
  where a node is JSON ``null``, ``true``/``false``, a string, an int, a finite float, a list (a
  Python list), or an object with one tag: ``{"tensor": <name>}``, ``{"float": "inf"|"-inf"|"nan"}``,
  ``{"tuple": [<node>, ...]}``, ``{"dict": [[<key>, <node>], ...]}`` or ``{"odict": [...]}`` (an
  ``OrderedDict``) with each key a JSON string or int;
- ``"rustgrad.crc32"``: the CRC-32 (hex) of the header in canonical form (without this entry) and
  of the tensor bytes in file order, so a damaged rustgrad file raises instead of loading wrong
  values.

Tensors are named by their place in the object (``model.fc.weight``; a dict of tensors saved as
itself keeps its keys), and one tensor object saved in several places is stored once and loads as
one tensor.

``load`` reads this format (version 3), the ``.npz`` formats earlier versions wrote (versions 1 and
2, and plain ``numpy.savez`` files, as a dict of tensors), and safetensors files written by other
programs (a dict of tensors, in the file's order; float16/bfloat16 widen to float32 and
int8/int16/uint16 to int32, uint32 to int64). Every declared size and offset is checked against the
file before anything is allocated. Nothing in a file is ever executed.
"""

from __future__ import annotations

import collections
import json
import math
import os
import zlib
from typing import Any, BinaryIO, Callable, Optional, Union

import numpy as np

from rustgrad import _npz, _rustgrad, _safetensors
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, PathNotFoundError, SerializationError

__all__ = ["load", "save"]

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]

FORMAT_VERSION = 3
_META_KEY = "rustgrad"
_CRC_KEY = "rustgrad.crc32"
_NPZ_META_MEMBER = "__rustgrad__.npy"
_TENSOR_KEY = "tensor"
_KINDS = ("tensor", "dict")
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_WHAT_SAVE_STORES = ("rustgrad.save stores tensors, dicts (str or int keys), lists, tuples, ints, floats, "
                     "strings, bools and None")


# ---------------------------------------------------------------- saving


class _Encoder:
    """Turns the object into a JSON node, collecting its tensors (each object once)."""

    def __init__(self) -> None:
        self.tensors: list[tuple[str, Tensor]] = []
        self._names: dict[int, str] = {}
        self._taken: set[str] = {"__metadata__"}
        self._active: set[int] = set()

    def encode(self, obj: Any, path: str, name: str) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, Tensor):
            return {"tensor": self._tensor_name(obj, name)}
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
            return int(obj)
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, (float, np.floating)):
            value = float(obj)
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(obj, (list, tuple, dict)):
            return self._container(obj, path, name)
        hint = " (convert it with rustgrad.from_numpy)" if isinstance(obj, np.ndarray) else ""
        raise ArgumentTypeError(f"save: cannot save {path}, an object of type {type(obj).__name__}{hint}; "
                                f"{_WHAT_SAVE_STORES}")

    def _container(self, obj: Any, path: str, name: str) -> Any:
        kind = self._kind(obj, path)
        if id(obj) in self._active:
            raise ArgumentTypeError(f"save: {path} contains itself; {_WHAT_SAVE_STORES} without cycles")
        self._active.add(id(obj))
        try:
            if kind in ("list", "tuple"):
                items = [self.encode(v, f"{path}[{i}]", _join(name, str(i))) for i, v in enumerate(obj)]
                return items if kind == "list" else {"tuple": items}
            pairs = []
            for key, value in obj.items():
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    raise ArgumentTypeError(
                        f"save: {path} has a key of type {type(key).__name__} ({key!r:.100}); dict keys "
                        "must be str or int"
                    )
                pairs.append([key, self.encode(value, f"{path}[{key!r}]", _join(name, str(key)))])
            return {kind: pairs}
        finally:
            self._active.discard(id(obj))

    @staticmethod
    def _kind(obj: Any, path: str) -> str:
        if type(obj) in (list, tuple):
            return type(obj).__name__
        if type(obj) is collections.OrderedDict:
            return "odict"
        if type(obj) in (dict, collections.Counter, collections.defaultdict):
            return "dict"
        raise ArgumentTypeError(f"save: cannot save {path}, an object of type {type(obj).__name__} (a subclass of "
                                f"{type(obj).__mro__[1].__name__}); {_WHAT_SAVE_STORES}")

    def _tensor_name(self, t: Tensor, name: str) -> str:
        known = self._names.get(id(t))
        if known is not None:
            return known
        if name in self._taken or not _encodable(name):
            base, counter = ("tensor" if not _encodable(name) else name), 1
            while f"{base}#{counter}" in self._taken:
                counter += 1
            name = f"{base}#{counter}"
        self._taken.add(name)
        self._names[id(t)] = name
        self.tensors.append((name, t))
        return name


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _encodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return bool(name)


def save(obj: Any, f: PathOrFile) -> None:
    """Saves ``obj`` to ``f`` (a path or a binary file object) as a safetensors file with a JSON
    description of the object (see the module's documentation for the format).

    ``obj`` is a tensor or nested dicts (str or int keys), lists and tuples of tensors, ints,
    floats, strings, bools and None; anything else raises ``TypeError`` naming its place (for
    example ``obj['model']['fc.weight']``) and writes nothing. The file is written at exactly
    the given path, through a temporary file renamed over it at the end, so a failed save leaves no
    partial file; a missing parent folder raises ``PathNotFoundError``.
    """
    encoder = _Encoder()
    node = encoder.encode(obj, "obj", "tensor" if isinstance(obj, Tensor) else "")
    arrays = [(name, _array_of(t)) for name, t in encoder.tensors]
    description = {
        "version": FORMAT_VERSION,
        "object": node,
        "requires_grad": [name for name, t in encoder.tensors if t.requires_grad],
    }
    metadata = {_META_KEY: json.dumps(description, separators=(",", ":"), allow_nan=False)}
    entries = [(name, _safetensors.WRITE_DTYPES[a.dtype.name], list(a.shape), a.nbytes) for name, a in arrays]
    crc = zlib.crc32(_canonical(_safetensors.header_bytes(entries, metadata)[8:]))
    data = [_safetensors.little_endian_bytes(a) for _, a in arrays]
    for chunk in data:
        crc = zlib.crc32(chunk.data, crc)
    metadata[_CRC_KEY] = f"{crc:08x}"
    header = _safetensors.header_bytes(entries, metadata)
    if not hasattr(f, "write"):
        parent = _npz.missing_parent(_npz.fspath_of(f, "save"))
        if parent is not None:
            raise PathNotFoundError(
                f"save: parent directory {parent} does not exist; create it first (os.makedirs) or save elsewhere"
            )

    def write(handle: BinaryIO) -> None:
        handle.write(header)
        for chunk in data:
            _write_bytes(handle, chunk)

    _npz.write_atomically(f, write, "save", SerializationError)


def _write_bytes(handle: BinaryIO, chunk: np.ndarray) -> None:
    handle.write(memoryview(chunk))  # type: ignore[arg-type]


def _array_of(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().numpy(), order="C")


def _canonical(header_json: bytes) -> bytes:
    """The header as the checksum sees it: parsed, without the checksum entry, dumped canonically."""
    header = json.loads(header_json.decode("utf-8"))
    header["__metadata__"] = {k: v for k, v in header["__metadata__"].items() if k != _CRC_KEY}
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")


# ---------------------------------------------------------------- loading


def load(f: PathOrFile, map_location: Any = None, weights_only: bool = True, **kwargs: Any) -> Any:
    """Loads what ``save`` wrote, with the same structure: dicts (``OrderedDict`` kept), lists,
    tuples, tensors (with their ``requires_grad``), numbers, strings, bools and None.

    Also reads the ``.npz`` files of earlier rustgrad versions and of ``numpy.savez``, and
    safetensors files of other programs (a dict of tensors). ``map_location`` is accepted for
    compatibility (rustgrad tensors always live on the CPU); ``weights_only`` too: the format holds
    only data, so loading never runs code whatever its value. A missing file raises
    ``PathNotFoundError``, a corrupt, truncated or foreign one ``SerializationError``.
    """
    if map_location is not None:
        _rustgrad.device(map_location if not callable(map_location) else "cpu")
    label = _npz.describe(f) if hasattr(f, "read") else None
    handle: Optional[BinaryIO] = None
    if not hasattr(f, "read"):
        path = _npz.fspath_of(f, "load")
        label = repr(path)
        try:
            handle = open(path, "rb")
        except FileNotFoundError as err:
            raise PathNotFoundError(f"load: no such file: {path!r}") from err
        except OSError as err:
            raise SerializationError(f"load: cannot open {path!r}: {err.strerror or err}") from err
    try:
        source = _safetensors.seekable(handle or f)  # type: ignore[arg-type]
        start = source.tell()
        magic = source.read(4)
        source.seek(start)
        if magic in _ZIP_MAGICS or magic[:3] == b"\x93NU":
            return _load_npz(source, label)
        if magic[:1] == b"\x80" and magic[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
            raise SerializationError(
                f"load: {label} is a pickle file (the format of torch.save before PyTorch 1.6); rustgrad never "
                "unpickles, as that can run any code: load it with torch and save its tensors with "
                "safetensors.torch.save_file"
            )
        return _load_safetensors(source, str(label))
    finally:
        if handle is not None:
            handle.close()


def _load_safetensors(handle: BinaryIO, label: str) -> Any:
    reader = _safetensors.Reader(handle, label, "load")
    meta = reader.metadata or {}
    if _META_KEY not in meta and _CRC_KEY not in meta:  # another program's file: its tensors by name
        return {entry.name: _tensor_of(reader.read(entry), False) for entry in reader.entries}
    crc = [_checked_header_crc(reader, meta)]
    description = _description(reader, meta)
    by_name = {entry.name: entry for entry in reader.entries}
    if set(description["requires_grad"]) - set(by_name):
        raise reader.fail("has invalid rustgrad metadata: 'requires_grad' names a tensor the file lacks")
    arrays = {entry.name: reader.read(entry, crc) for entry in sorted(reader.entries, key=lambda e: e.begin)}
    if f"{crc[0]:08x}" != meta[_CRC_KEY]:
        raise reader.fail(f"is corrupt: its checksum is {crc[0]:08x} but the file records {meta[_CRC_KEY][:16]}")
    requires_grad = set(description["requires_grad"])
    tensors = {name: _tensor_of(array, name in requires_grad) for name, array in arrays.items()}
    used: set[str] = set()
    obj = _Decoder(tensors, used, reader.fail).decode(description["object"], 0)
    if used != set(tensors):
        raise reader.fail("has invalid rustgrad metadata: the object does not use every tensor of the file")
    return obj


def _checked_header_crc(reader: _safetensors.Reader, meta: dict[str, str]) -> int:
    if _CRC_KEY not in meta or _META_KEY not in meta:
        raise reader.fail(f"has invalid rustgrad metadata: it lacks {_CRC_KEY if _META_KEY in meta else _META_KEY!r}")
    header = dict(reader.header, __metadata__={k: v for k, v in meta.items() if k != _CRC_KEY})
    return zlib.crc32(json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def _description(reader: _safetensors.Reader, meta: dict[str, str]) -> dict[str, Any]:
    try:
        description = json.loads(meta[_META_KEY], parse_constant=_safetensors.refuse_constant)
    except (ValueError, RecursionError) as err:
        raise reader.fail(f"has invalid rustgrad metadata: it is not JSON ({str(err)[:200]})") from err
    if not isinstance(description, dict):
        raise reader.fail("has invalid rustgrad metadata: it is not a JSON object")
    version = description.get("version")
    if version != FORMAT_VERSION:
        raise reader.fail(f"has invalid rustgrad metadata: unknown format version {str(version)[:20]}; this rustgrad "
                          f"reads versions 1 to {FORMAT_VERSION} (a newer rustgrad may have written it)")
    names = description.get("requires_grad")
    if set(description) != {"version", "object", "requires_grad"} or not (
            isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise reader.fail("has invalid rustgrad metadata: expected {version, object, requires_grad: [names]}")
    return description


class _Decoder:
    """Rebuilds the object from its JSON node, refusing anything that is not a node ``save`` writes."""

    _MAX_DEPTH = 500

    def __init__(self, tensors: dict[str, Tensor], used: set[str], fail: Callable[[str], SerializationError]) -> None:
        self._tensors, self._used, self._fail = tensors, used, fail

    def decode(self, node: Any, depth: int) -> Any:
        if depth > self._MAX_DEPTH:
            raise self._bad(f"the object is nested more than {self._MAX_DEPTH} levels deep")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(item, depth + 1) for item in node]
        if not isinstance(node, dict) or len(node) != 1:
            raise self._bad(f"unexpected node {str(node)[:100]}")
        ((tag, value),) = node.items()
        if tag == "tensor" and isinstance(value, str) and value in self._tensors:
            self._used.add(value)
            return self._tensors[value]
        if tag == "float" and value in ("inf", "-inf", "nan"):
            return float(value)
        if tag == "tuple" and isinstance(value, list):
            return tuple(self.decode(item, depth + 1) for item in value)
        if tag in ("dict", "odict") and isinstance(value, list):
            result: dict[Any, Any] = {} if tag == "dict" else collections.OrderedDict()
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (str, int))
                        and not isinstance(pair[0], bool)):
                    raise self._bad(f"a dict entry is not [str or int key, value]: {str(pair)[:100]}")
                result[pair[0]] = self.decode(pair[1], depth + 1)
            return result
        raise self._bad(f"unexpected node {str(node)[:100]}")

    def _bad(self, detail: str) -> SerializationError:
        return self._fail(f"has invalid rustgrad metadata: {detail}")


# ---------------------------------------------------------------- the .npz formats of versions 1 and 2


def _load_npz(handle: BinaryIO, label: Any) -> Any:
    with _npz.NpzReader(handle, "load", SerializationError) as archive:
        if any(name.endswith("data.pkl") for name in archive.names):
            raise SerializationError(
                f"load: {label} is a PyTorch (torch.save) archive of pickled objects; rustgrad never unpickles, "
                "as that can run any code: load it with torch and save its tensors with safetensors.torch.save_file"
            )
        kind, entries = _entries_in(archive, str(label))
        tensors = {
            key: _tensor_of(archive.read_array(member, f"tensor {key!r}"), requires_grad)
            for key, member, requires_grad in entries
        }
    if kind == "tensor":
        return tensors[_TENSOR_KEY]
    return tensors


def _entries_in(archive: _npz.NpzReader, label: str) -> tuple[str, list[tuple[str, str, bool]]]:
    """The kind and (key, member, requires_grad) of each tensor, from the metadata when present."""
    if _NPZ_META_MEMBER not in archive.names:  # a plain numpy .npz
        if len(set(archive.keys)) != len(archive.keys):
            raise SerializationError(f"load: {label} has two members for one key ({archive.names})")
        return "dict", [(key, name, False) for key, name in zip(archive.keys, archive.names)]

    def bad(detail: str) -> SerializationError:
        return SerializationError(f"load: {label} has invalid rustgrad metadata: {detail}")

    try:
        meta = json.loads(archive.read_text(_NPZ_META_MEMBER))
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
    members = [name for name in archive.names if name != _NPZ_META_MEMBER]
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
    if len(set(keys)) != len(keys) or len(set(members)) != len(members) or _NPZ_META_MEMBER in members:
        raise bad("two entries share a key or a member")
    missing = sorted(set(members) - set(archive.names))
    if missing:
        raise bad(f"the archive has no member {missing[0]!r}")
    return [(key, member, requires_grad) for key, member, requires_grad in entries]


def _tensor_of(array: np.ndarray, requires_grad: bool) -> Tensor:
    # The array is new and C-contiguous; the tensor takes over its memory instead of copying it.
    return _rustgrad._from_numpy(array, requires_grad, True)
