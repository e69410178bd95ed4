"""numpy ``.npz`` archives read and written safely: the layer under ``rustgrad.save``/``load`` and
``tf.train.Saver``.

Reading trusts nothing in the file. Every size the file declares (a member's sizes in the zip
directory, the ``.npy`` header's length, shape and dtype) is checked against the bytes actually
there before anything is allocated or decompressed, and each array is read in chunks straight into
its final buffer (no second copy). Any inconsistency raises the caller's error class, with a message
naming the file and what is wrong. Nothing is ever unpickled.

Writing goes to a temporary file next to the target, renamed over it once complete, so a failed
save leaves no partial file behind.
"""

from __future__ import annotations

import ast
import contextlib
import math
import os
import re
import secrets
import struct
import zipfile
import zlib
from typing import Any, BinaryIO, Callable, Iterable, Optional, Union

import numpy as np

from rustgrad.errors import ArgumentTypeError, DTypeError, OutOfMemoryError, PathNotFoundError, RustgradError

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]

_NPY_MAGIC = b"\x93NUMPY"
_MAX_HEADER_SIZE = 10_000  # numpy's own limit for a .npy header it reads without allow_pickle
_MAX_NDIM = 64  # numpy's
# Deflate cannot expand data more than about 1032-fold; a member declaring more is forged.
_MAX_DEFLATE_RATIO = 1032
_CHUNK = 1 << 22
_ARRAY_DTYPES = {
    descr: np.dtype(descr)
    for descr in ("<f4", ">f4", "<f8", ">f8", "<i8", ">i8", "<i4", ">i4", "|u1", "|b1")
}
_TEXT_DESCR = re.compile(r"<U([0-9]{1,9})")

# What the zipfile and zlib modules raise on a damaged archive (they use builtins throughout;
# RuntimeError is "File is encrypted").
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    OverflowError,
    NotImplementedError,
    RuntimeError,
    KeyError,
    IndexError,
)


def describe(f: Any) -> str:
    """How messages name a path or file object."""
    if hasattr(f, "read") or hasattr(f, "write"):
        name = getattr(f, "name", None)
        return repr(name) if isinstance(name, str) else f"the file object {f!r}"
    return repr(os.fspath(f))


def fspath_of(f: Any, what: str) -> str:
    try:
        return os.fspath(f)
    except TypeError as err:
        raise ArgumentTypeError(
            f"{what}: f must be a path (str or os.PathLike) or a binary file object, got {type(f).__name__}"
        ) from err


def key_of(member: str) -> str:
    """The key numpy gives a member: its name without the ``.npy`` suffix."""
    return member[:-4] if member.endswith(".npy") else member


class NpzReader:
    """An open ``.npz`` archive whose members are read with every declared size checked.

    ``error`` is the class raised for a file that is corrupt or of another kind; ``what`` names the
    caller in messages ("load", "Saver.restore").
    """

    def __init__(self, f: PathOrFile, what: str, error: type[RustgradError]) -> None:
        self._what, self._error, self._label = what, error, None
        self._owned: Optional[BinaryIO] = None
        if hasattr(f, "read"):
            handle: BinaryIO = f  # type: ignore[assignment]
            self._label = describe(f)
        else:
            path = fspath_of(f, what)
            self._label = repr(path)
            try:
                handle = self._owned = open(path, "rb")
            except FileNotFoundError as err:
                raise PathNotFoundError(f"{what}: no such file: {path!r}") from err
            except OSError as err:
                raise error(f"{what}: cannot open {path!r}: {err.strerror or err}") from err
        try:
            self._zip = self._open_zip(handle)
        except BaseException:
            self.close()
            raise
        self.names = self._zip.namelist()
        self.keys = [key_of(name) for name in self.names]
        if len(set(self.names)) != len(self.names):
            self.close()
            raise self._fail("is corrupt: two members of the zip archive have the same name")

    def _fail(self, detail: str) -> RustgradError:
        return self._error(f"{self._what}: {self._label} {detail}")

    def _open_zip(self, handle: BinaryIO) -> zipfile.ZipFile:
        try:
            start = handle.tell()
            self._size = handle.seek(0, os.SEEK_END)
            handle.seek(start)
            magic = handle.read(len(_NPY_MAGIC))
            handle.seek(start)
            if magic == _NPY_MAGIC:
                raise self._fail(
                    "holds a single .npy array, not an .npz archive; read it with numpy.load (and "
                    "rustgrad.from_numpy)"
                )
            archive = zipfile.ZipFile(handle)
            declared = _declared_entries(handle)
            if declared is not None and declared != len(archive.infolist()):
                archive.close()
                raise self._fail(
                    f"is corrupt: its zip directory declares {declared} members but lists {len(archive.infolist())}"
                )
            return archive
        except RustgradError:
            raise
        except _ZIP_ERRORS as err:
            raise self._fail(
                "is not an .npz archive (a zip of .npy arrays), or it is truncated or corrupt "
                f"({type(err).__name__}: {err})"
            ) from err

    def close(self) -> None:
        zf = getattr(self, "_zip", None)
        if zf is not None:
            zf.close()
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> NpzReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def read_array(self, member: str, label: str) -> np.ndarray:
        """The member's array of a rustgrad dtype, native byte order, C-contiguous.

        Other dtypes raise ``DTypeError``; the bytes of a bool array must all be 0 or 1.
        """
        with self._member(member) as (stream, info):
            descr, shape, fortran, header_len = self._read_header(stream, info, member)
            dtype = _ARRAY_DTYPES.get(descr) if isinstance(descr, str) else None
            if dtype is None:
                raise DTypeError(
                    f"{self._what}: {label} in {self._label} has numpy dtype {_dtype_name(descr)}; rustgrad "
                    "tensors are float32, float64, int64, int32, uint8 or bool"
                )
            self._check_data_size(info, member, header_len, shape, dtype)
            storage = np.dtype(np.uint8) if dtype.kind == "b" else dtype
            try:
                array = np.empty(shape, dtype=storage, order="F" if fortran else "C")
            except MemoryError as err:
                raise OutOfMemoryError(
                    f"{self._what}: cannot allocate {math.prod(shape) * dtype.itemsize} bytes for {label} "
                    f"(shape {list(shape)}, {dtype.name}) from {self._label}"
                ) from err
            self._read_into(stream, array, member)
        if dtype.kind == "b":
            if array.size and int(array.max()) > 1:
                raise self._fail(f"is corrupt: member {member!r} holds bool values other than 0 and 1")
            array = array.view(np.bool_)
        if not dtype.isnative:
            array = array.byteswap(inplace=True).view(dtype.newbyteorder("="))
        if not array.flags.c_contiguous:  # Fortran order (another program's file): one reordering copy
            array = array.copy(order="C")
        return array

    def read_text(self, member: str) -> str:
        """The member's text: a 0-d numpy unicode array (how rustgrad stores its metadata)."""
        with self._member(member) as (stream, info):
            descr, shape, fortran, header_len = self._read_header(stream, info, member)
            match = _TEXT_DESCR.fullmatch(descr) if isinstance(descr, str) else None
            if match is None or shape != ():
                raise self._fail(f"is corrupt: member {member!r} is not a text entry (dtype {descr!r}, shape {shape})")
            dtype = np.dtype(descr)
            self._check_data_size(info, member, header_len, shape, dtype)
            data = bytearray(dtype.itemsize)
            self._read_into(stream, np.frombuffer(data, dtype=np.uint8), member)
        try:
            return data.decode("utf-32-le").rstrip("\x00")
        except UnicodeDecodeError as err:
            raise self._fail(f"is corrupt: member {member!r} is not valid text ({err})") from err

    @contextlib.contextmanager
    def _member(self, member: str) -> Any:
        """Opens a member after checking its declared sizes against the file; zip errors while it is
        read become the caller's error class."""
        try:
            info = self._zip.getinfo(member)
        except KeyError:
            raise self._fail(f"has no member {member!r}") from None
        self._check_member_sizes(info, member)
        try:
            with self._zip.open(info) as stream:
                yield stream, info
        except RustgradError:
            raise
        except _ZIP_ERRORS as err:
            raise self._fail(f"is corrupt: member {member!r} cannot be read ({type(err).__name__}: {err})") from err

    def _check_member_sizes(self, info: zipfile.ZipInfo, member: str) -> None:
        if info.flag_bits & 0x1:
            raise self._fail(f"is not readable: member {member!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise self._fail(
                f"is not readable: member {member!r} uses zip compression method {info.compress_type}; "
                "rustgrad reads stored or deflated members (as numpy writes them)"
            )
        if info.header_offset + info.compress_size > self._size:
            raise self._fail(
                f"is truncated or corrupt: member {member!r} declares {info.compress_size} bytes at offset "
                f"{info.header_offset}, past the end of the {self._size}-byte file"
            )
        limit = info.compress_size if info.compress_type == zipfile.ZIP_STORED else (
            info.compress_size * _MAX_DEFLATE_RATIO + 1024
        )
        if info.file_size > limit:
            raise self._fail(
                f"is corrupt: member {member!r} declares {info.file_size} bytes of content, more than its "
                f"{info.compress_size} stored bytes can hold"
            )

    def _read_header(self, stream: BinaryIO, info: zipfile.ZipInfo, member: str) -> tuple[Any, tuple, bool, int]:
        """The .npy header's (descr, shape, fortran_order, header length), every field validated."""
        prefix = stream.read(8)
        if len(prefix) < 8 or prefix[:6] != _NPY_MAGIC:
            raise self._fail(f"is corrupt: member {member!r} is not a .npy array (no .npy magic string)")
        version = (prefix[6], prefix[7])
        if version == (1, 0):
            length_format, encoding = "<H", "latin1"
        elif version in ((2, 0), (3, 0)):
            length_format, encoding = "<I", "latin1" if version == (2, 0) else "utf8"
        else:
            raise self._fail(f"is corrupt: member {member!r} has unknown .npy format version {version[0]}.{version[1]}")
        length_bytes = stream.read(struct.calcsize(length_format))
        if len(length_bytes) < struct.calcsize(length_format):
            raise self._fail(f"is truncated: member {member!r} ends inside its .npy header")
        (length,) = struct.unpack(length_format, length_bytes)
        header_len = 8 + len(length_bytes) + length
        if length > _MAX_HEADER_SIZE or header_len > info.file_size:
            raise self._fail(
                f"is corrupt: member {member!r} declares a {length}-byte .npy header (the limit is "
                f"{_MAX_HEADER_SIZE}; the member holds {info.file_size} bytes)"
            )
        text = stream.read(length)
        if len(text) < length:
            raise self._fail(f"is truncated: member {member!r} ends inside its .npy header")
        header = _literal(text, encoding)
        if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
            raise self._fail(f"is corrupt: member {member!r} has an invalid .npy header {text[:200]!r}")
        shape, fortran = header["shape"], header["fortran_order"]
        if not isinstance(fortran, bool) or not _is_shape(shape):
            raise self._fail(
                f"is corrupt: member {member!r} has an invalid .npy header (shape {shape!r}, fortran_order "
                f"{fortran!r})"
            )
        return header["descr"], shape, fortran, header_len

    def _check_data_size(self, info: zipfile.ZipInfo, member: str, header_len: int, shape: tuple,
                         dtype: np.dtype) -> None:
        declared = math.prod(shape) * dtype.itemsize
        held = info.file_size - header_len
        if declared != held:
            raise self._fail(
                f"is corrupt or truncated: member {member!r} declares shape {list(shape)} of {dtype} "
                f"({declared} bytes) but holds {held} bytes of data"
            )

    def _read_into(self, stream: BinaryIO, array: np.ndarray, member: str) -> None:
        if array.size == 0:
            return
        view = memoryview(array.reshape(-1, order="A").view(np.uint8))  # type: ignore[arg-type]
        done, total = 0, len(view)
        while done < total:
            chunk = stream.read(min(_CHUNK, total - done))
            if not chunk:
                raise self._fail(f"is truncated: member {member!r} ends after {done} of {total} data bytes")
            view[done:done + len(chunk)] = chunk
            done += len(chunk)


def _declared_entries(handle: BinaryIO) -> Optional[int]:
    """The member count in the zip's end record. zipfile reads the directory by its byte size and does
    not compare the two, so a damaged end record could hide members without this check."""
    find_end_record = getattr(zipfile, "_EndRecData", None)  # private to zipfile; skipped if it goes
    index = getattr(zipfile, "_ECD_ENTRIES_TOTAL", None)
    if find_end_record is None or index is None:
        return None
    end_record = find_end_record(handle)
    return int(end_record[index]) if end_record else None


def _literal(text: bytes, encoding: str) -> Any:
    """Parses a .npy header as numpy does (a Python literal, never code)."""
    try:
        return ast.literal_eval(text.decode(encoding))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _is_shape(shape: Any) -> bool:
    return (isinstance(shape, tuple) and len(shape) <= _MAX_NDIM
            and all(type(d) is int and d >= 0 for d in shape))


def _dtype_name(descr: Any) -> str:
    """numpy's name for a header's dtype, for messages (without trusting the header)."""
    if isinstance(descr, str) and len(descr) <= 32:
        with contextlib.suppress(Exception):  # numpy raises several kinds for unknown dtype strings
            return str(np.dtype(descr))
    return repr(descr)[:100]


# ---------------------------------------------------------------- writing


def zip_name_ok(name: str) -> bool:
    """Whether ``name`` is stored unchanged as a zip member name."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return len(encoded) <= 0xFFFF and zipfile.ZipInfo(name).filename == name


def missing_parent(path: str) -> Optional[str]:
    """The folder that should hold ``path`` when it does not exist, else None."""
    parent = os.path.dirname(os.path.abspath(path))
    return None if os.path.isdir(parent) else parent


def write_npz(target: PathOrFile, members: Iterable[tuple[str, np.ndarray]], what: str,
              error: type[RustgradError]) -> None:
    """Writes the arrays as an .npz archive of uncompressed ``.npy`` members with these names
    (atomically, see ``write_atomically``)."""
    write_atomically(target, lambda handle: _write_zip(handle, members), what, error)


def write_atomically(target: PathOrFile, write: Callable[[BinaryIO], None], what: str,
                     error: type[RustgradError]) -> None:
    """Calls ``write`` with a binary file: ``target`` itself when it is a file object, else a temporary
    file renamed over the path at the end, so a failure leaves no partial file (and an existing file
    at the path unchanged). An OSError becomes ``error``."""
    if hasattr(target, "write"):
        try:
            write(target)  # type: ignore[arg-type]
        except OSError as err:
            raise error(f"{what}: could not write to {describe(target)}: {err}") from err
        return
    path = fspath_of(target, what)
    folder, base = os.path.split(path)
    temp = os.path.join(folder, f".{base[:64]}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except FileNotFoundError as err:
        raise PathNotFoundError(f"{what}: parent directory {os.path.abspath(folder or '.')} does not exist") from err
    except OSError as err:
        raise error(f"{what}: cannot write {path!r}: {err.strerror or err}") from err
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError):
            raise error(f"{what}: could not write {path!r}: {err.strerror or err}") from err
        raise


def _write_zip(handle: BinaryIO, members: Iterable[tuple[str, np.ndarray]]) -> None:
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(info, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, array, allow_pickle=False)
