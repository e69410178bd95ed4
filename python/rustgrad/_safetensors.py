"""The safetensors format (https://github.com/huggingface/safetensors), read and written with numpy.

A file is: an 8-byte little-endian unsigned header length ``N``; ``N`` bytes of UTF-8 JSON, an
object mapping each tensor's name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` plus an
optional ``"__metadata__"`` map of str to str; then the tensors' raw little-endian bytes, offsets
counted from the end of the header.

Reading trusts nothing in the file: the header length, every shape, dtype and offset are checked
against the file's length before anything is allocated; the tensors must tile the data section
exactly (no gap, no overlap, nothing after), as the reference implementation requires. Any
inconsistency raises ``SerializationError`` naming the file and the problem; a dtype rustgrad
cannot hold raises ``DTypeError``.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
import zlib
from typing import Any, BinaryIO, Optional

import numpy as np

from rustgrad.errors import DTypeError, InvalidArgumentError, OutOfMemoryError, SerializationError

MAX_HEADER_SIZE = 100_000_000  # the reference implementation's limit
_MAX_NDIM = 64
_CHUNK = 1 << 22

# safetensors dtype -> (numpy dtype of the stored bytes, numpy dtype of the tensor rustgrad makes)
_READ_DTYPES: dict[str, tuple[np.dtype, np.dtype]] = {
    "F32": (np.dtype("<f4"), np.dtype(np.float32)),
    "F64": (np.dtype("<f8"), np.dtype(np.float64)),
    "I64": (np.dtype("<i8"), np.dtype(np.int64)),
    "I32": (np.dtype("<i4"), np.dtype(np.int32)),
    "U8": (np.dtype("u1"), np.dtype(np.uint8)),
    "BOOL": (np.dtype("u1"), np.dtype(np.bool_)),
    # Other frameworks' dtypes that widen exactly into one rustgrad has.
    "F16": (np.dtype("<f2"), np.dtype(np.float32)),
    "BF16": (np.dtype("<u2"), np.dtype(np.float32)),
    "I8": (np.dtype("i1"), np.dtype(np.int32)),
    "I16": (np.dtype("<i2"), np.dtype(np.int32)),
    "U16": (np.dtype("<u2"), np.dtype(np.int32)),
    "U32": (np.dtype("<u4"), np.dtype(np.int64)),
}
# Dtypes of the format that rustgrad has no exact home for.
_UNSUPPORTED = {"U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64", "C128", "I4", "U4"}
WRITE_DTYPES = {"float32": "F32", "float64": "F64", "int64": "I64", "int32": "I32", "uint8": "U8", "bool": "BOOL"}


class Entry:
    """One tensor of a file's header, validated: name, dtype, shape and absolute byte range."""

    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name: str, dtype: str, shape: tuple[int, ...], begin: int, end: int) -> None:
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end


class Reader:
    """A safetensors file opened for reading: ``header`` (the parsed JSON), ``metadata`` (the
    ``__metadata__`` map or None) and ``entries`` (in the header's order)."""

    def __init__(self, handle: BinaryIO, label: str, what: str) -> None:
        self._handle, self._label, self._what = handle, label, what
        start = handle.tell()  # a file object may hold the checkpoint after other data
        size = handle.seek(0, os.SEEK_END) - start
        handle.seek(start)
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise self.fail(f"is not a safetensors file or an .npz archive: it holds only {len(prefix)} bytes")
        (length,) = struct.unpack("<Q", prefix)
        if length > min(size - 8, MAX_HEADER_SIZE):
            raise self.fail(
                f"is not a safetensors file or an .npz archive, or it is truncated: its first 8 bytes declare a "
                f"{length}-byte header, but the file holds {size} bytes (and the limit is {MAX_HEADER_SIZE})"
            )
        raw = handle.read(length)
        if len(raw) < length:
            raise self.fail(f"is truncated: it ends inside its {length}-byte header")
        self.raw_header = raw
        self.header = self._parse(raw)
        self.data_start = start + 8 + length
        self.metadata = self._metadata()
        self.entries = self._entries(size - 8 - length)

    def fail(self, detail: str) -> SerializationError:
        return SerializationError(f"{self._what}: {self._label} {detail}")

    def _parse(self, raw: bytes) -> dict[str, Any]:
        if not raw[:1] == b"{":
            raise self.fail("is not a safetensors file or an .npz archive (its header is not a JSON object)")
        try:
            header = json.loads(raw.decode("utf-8"), parse_constant=refuse_constant)
        except (ValueError, RecursionError) as err:
            raise self.fail(f"is corrupt: its safetensors header is not valid JSON ({str(err)[:200]})") from err
        if not isinstance(header, dict):
            raise self.fail("is corrupt: its safetensors header is not a JSON object")
        return header

    def _metadata(self) -> Optional[dict[str, str]]:
        meta = self.header.get("__metadata__")
        if meta is None:
            return None
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise self.fail("is corrupt: its safetensors __metadata__ is not a map of strings to strings")
        return meta

    def _entries(self, data_size: int) -> list[Entry]:
        entries = []
        for name, info in self.header.items():
            if name == "__metadata__":
                continue
            entries.append(self._entry(name, info))
        position = 0
        for entry in sorted(entries, key=lambda e: (e.begin, e.end)):
            if entry.begin != position:
                problem = "overlaps the one before it" if entry.begin < position else "leaves a gap before it"
                raise self.fail(f"is corrupt: tensor {entry.name!r} (bytes {entry.begin}-{entry.end} of the data) "
                                f"{problem}")
            position = entry.end
        if position != data_size:
            raise self.fail(f"is truncated or corrupt: its tensors cover {position} bytes of data, but the file "
                            f"holds {data_size} bytes after the header")
        for entry in entries:
            entry.begin += self.data_start
            entry.end += self.data_start
        return entries

    def _entry(self, name: str, info: Any) -> Entry:
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise self.fail(f"is corrupt: header entry {name[:100]!r} is not {{dtype, shape, data_offsets}}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype in _UNSUPPORTED:
            raise DTypeError(f"{self._what}: tensor {name[:100]!r} in {self._label} has dtype {dtype}, which rustgrad "
                             "cannot hold (it has float32, float64, int64, int32, uint8 and bool)")
        if dtype not in _READ_DTYPES:
            raise self.fail(f"is corrupt: tensor {name[:100]!r} has unknown dtype {str(dtype)[:40]!r}")
        if not (isinstance(shape, list) and len(shape) <= _MAX_NDIM
                and all(type(d) is int and d >= 0 for d in shape)):
            raise self.fail(f"is corrupt: tensor {name[:100]!r} has an invalid shape {str(shape)[:100]}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise self.fail(f"is corrupt: tensor {name[:100]!r} has invalid data_offsets {str(offsets)[:100]}")
        nbytes = math.prod(shape) * _READ_DTYPES[dtype][0].itemsize
        if offsets[1] - offsets[0] != nbytes:
            raise self.fail(f"is corrupt: tensor {name[:100]!r} declares shape {shape} of {dtype} ({nbytes} bytes) "
                            f"but data_offsets {offsets} ({offsets[1] - offsets[0]} bytes)")
        return Entry(name, dtype, tuple(shape), offsets[0], offsets[1])

    def read(self, entry: Entry, crc: Optional[list[int]] = None) -> np.ndarray:
        """The tensor's values, in a new C-contiguous array of a rustgrad dtype (its size was checked
        against the file when the header was read). ``crc``, when given, accumulates a CRC-32 of the
        bytes read."""
        stored, target = _READ_DTYPES[entry.dtype]
        try:
            array = np.empty(entry.shape, dtype=stored)
        except MemoryError as err:
            raise OutOfMemoryError(f"{self._what}: cannot allocate {entry.end - entry.begin} bytes for tensor "
                                   f"{entry.name!r} from {self._label}") from err
        flat = array.reshape(-1).view(np.uint8)
        self._handle.seek(entry.begin)
        done, total = 0, flat.size
        while done < total:
            got = self._handle.readinto(flat[done:done + _CHUNK].data)  # type: ignore[attr-defined]
            if not got:
                raise self.fail(f"is truncated: tensor {entry.name!r} ends after {done} of {total} bytes")
            done += got
        if crc is not None:
            crc[0] = zlib.crc32(flat.data, crc[0])
        return _convert(array, entry, self)


def refuse_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not JSON, so a header holding them is corrupt."""
    raise InvalidArgumentError(f"{name} is not JSON")


def _convert(array: np.ndarray, entry: Entry, reader: Reader) -> np.ndarray:
    if entry.dtype == "BOOL":
        if array.size and int(array.max()) > 1:
            raise reader.fail(f"is corrupt: bool tensor {entry.name!r} holds bytes other than 0 and 1")
        return array.view(np.bool_)
    if entry.dtype == "BF16":  # the top half of a float32
        return (array.astype(np.uint32) << 16).view(np.float32)
    target = _READ_DTYPES[entry.dtype][1]
    if array.dtype != target:
        return array.astype(target)
    if not array.dtype.isnative:
        return array.byteswap().view(array.dtype.newbyteorder("="))
    return array


def seekable(handle: BinaryIO) -> BinaryIO:
    """The file itself when it can seek, else its bytes in memory."""
    try:
        if handle.seekable():
            return handle
    except (AttributeError, OSError, ValueError):
        pass
    return io.BytesIO(handle.read())


def header_bytes(entries: list[tuple[str, str, list[int], int]], metadata: dict[str, str]) -> bytes:
    """The length prefix and JSON header for (name, dtype, shape, nbytes) entries stored in that order,
    padded with spaces to a multiple of 8 bytes as the reference implementation does."""
    header: dict[str, Any] = {"__metadata__": metadata}
    offset = 0
    for name, dtype, shape, nbytes in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def little_endian_bytes(array: np.ndarray) -> np.ndarray:
    """The array's bytes as a flat uint8 array, C order, little-endian."""
    array = np.ascontiguousarray(array)
    if array.dtype.itemsize > 1 and array.dtype.byteorder != "<" and not (
            array.dtype.byteorder in "=|" and np.little_endian):
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.reshape(-1).view(np.uint8)
