"""The ``checkpoint`` state file TF1 writes beside its checkpoints, and the functions that read it
(``tf.train.latest_checkpoint``, ``get_checkpoint_state``, ...).

The file is a ``CheckpointState`` protocol buffer in protobuf's text format, as TF1 writes it::

    model_checkpoint_path: "model-3"
    all_model_checkpoint_paths: "model-2"
    all_model_checkpoint_paths: "model-3"

Strings are C-escaped as protobuf escapes them (non-ASCII bytes as octal). Paths relative to the
folder are read as relative to it. The checkpoints themselves are rustgrad's ``.npz`` files, one
file at each path (TF1 writes ``<path>.index`` and ``<path>.data-*``).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
from typing import Any, Iterable, Optional, Sequence

from rustgrad import _npz
from rustgrad.errors import InvalidArgumentError, SerializationError

__all__ = [
    "CheckpointState",
    "checkpoint_exists",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "latest_checkpoint",
    "remove_checkpoint",
    "update_checkpoint_state",
]

_log = logging.getLogger("rustgrad.static")
_STATE_FILENAME = "checkpoint"


class CheckpointState:
    """What a ``checkpoint`` state file holds: the newest checkpoint's path and every kept one's,
    oldest first (TF1's ``CheckpointState`` message)."""

    __slots__ = ("model_checkpoint_path", "all_model_checkpoint_paths", "all_model_checkpoint_timestamps",
                 "last_preserved_timestamp")

    def __init__(self, model_checkpoint_path: str = "", all_model_checkpoint_paths: Iterable[str] = (),
                 all_model_checkpoint_timestamps: Iterable[float] = (),
                 last_preserved_timestamp: float = 0.0) -> None:
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckpointState) and all(
            getattr(self, field) == getattr(other, field) for field in self.__slots__)

    def __repr__(self) -> str:
        return _to_text(self)


def get_checkpoint_state(checkpoint_dir: Any, latest_filename: Optional[str] = None) -> Optional[CheckpointState]:
    """The ``CheckpointState`` in ``checkpoint_dir``'s state file (``checkpoint``, or ``latest_filename``),
    with relative paths joined to ``checkpoint_dir``; None when there is no such file or it cannot be
    parsed (logged as a warning, as TF1). A file that names no model checkpoint raises ``ValueError``."""
    directory = os.fspath(checkpoint_dir)
    path = os.path.join(directory, latest_filename or _STATE_FILENAME)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            state = _parse(handle.read())
    except (OSError, InvalidArgumentError) as err:  # TF1 ignores a file it cannot parse
        _log.warning("%s: %s; Checkpoint ignored", path, err)
        return None
    if not state.model_checkpoint_path:
        raise InvalidArgumentError(
            f"get_checkpoint_state: Invalid checkpoint state loaded from {directory}: {path} names no "
            "model_checkpoint_path; delete the file or save a checkpoint"
        )
    state.model_checkpoint_path = _under(directory, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [_under(directory, p) for p in state.all_model_checkpoint_paths]
    return state


def latest_checkpoint(checkpoint_dir: Any, latest_filename: Optional[str] = None) -> Optional[str]:
    """The path of the newest checkpoint the state file in ``checkpoint_dir`` names (what
    ``Saver.restore`` takes), or None when there is no state file or that checkpoint is gone."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not state.model_checkpoint_path:
        return None
    if checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def checkpoint_exists(checkpoint_prefix: Any) -> bool:
    """Whether a checkpoint is saved at ``checkpoint_prefix`` (a path or a glob pattern)."""
    path = os.fspath(checkpoint_prefix)
    return os.path.isfile(path) or any(os.path.isfile(p) for p in glob.glob(path))


def get_checkpoint_mtimes(checkpoint_prefixes: Sequence[Any]) -> list[float]:
    """The modification times of the checkpoints that exist among ``checkpoint_prefixes``."""
    times = []
    for prefix in checkpoint_prefixes:
        with contextlib.suppress(OSError):
            times.append(os.path.getmtime(os.fspath(prefix)))
    return times


def remove_checkpoint(checkpoint_prefix: Any, checkpoint_format_version: int = 2,
                      meta_graph_suffix: str = "meta") -> None:
    """Deletes the checkpoint at ``checkpoint_prefix`` (and its ``.meta`` file, if any); a missing
    file is not an error, as in TF1."""
    path = os.fspath(checkpoint_prefix)
    for name in (path, f"{path}.{meta_graph_suffix}"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(name)


def update_checkpoint_state(save_dir: Any, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Optional[Sequence[str]] = None,
                            latest_filename: Optional[str] = None,
                            all_model_checkpoint_timestamps: Optional[Sequence[float]] = None,
                            last_preserved_timestamp: Optional[float] = None) -> None:
    """Writes the state file of ``save_dir``, as ``Saver.save`` does (see ``write_state``)."""
    write_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths, latest_filename, False,
                all_model_checkpoint_timestamps, last_preserved_timestamp)


def write_state(save_dir: Any, model_checkpoint_path: str, all_model_checkpoint_paths: Optional[Sequence[str]],
                latest_filename: Optional[str], save_relative_paths: bool,
                timestamps: Optional[Sequence[float]] = None, last_preserved: Optional[float] = None) -> None:
    """TF1's ``update_checkpoint_state_internal``: the newest path is appended to the list when it
    is not its last entry; with a relative ``save_dir`` (or ``save_relative_paths``) the relative
    paths are written relative to ``save_dir``. The file is replaced atomically."""
    directory = os.fspath(save_dir)
    model_path = os.fspath(model_checkpoint_path)
    paths = [os.fspath(p) for p in all_model_checkpoint_paths or []]
    if save_relative_paths:
        model_path = _relative_if_absolute(model_path, directory)
        paths = [_relative_if_absolute(p, directory) for p in paths]
    if not paths or paths[-1] != model_path:
        paths.append(model_path)
    if not os.path.isabs(directory):
        model_path = model_path if os.path.isabs(model_path) else os.path.relpath(model_path, directory or ".")
        paths = [p if os.path.isabs(p) else os.path.relpath(p, directory or ".") for p in paths]
    state_path = os.path.join(directory, latest_filename or _STATE_FILENAME)
    if state_path == model_path:
        raise SerializationError(
            f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state. "
            "Please use a different save path."
        )
    state = CheckpointState(model_path, paths, timestamps or (), last_preserved or 0.0)
    text = _to_text(state).encode("ascii")
    _npz.write_atomically(state_path, lambda handle: handle.write(text), "update_checkpoint_state",
                          SerializationError)


def _relative_if_absolute(path: str, directory: str) -> str:
    return os.path.relpath(path, directory or ".") if os.path.isabs(path) else path


def _under(directory: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(directory, path)


# ----- protobuf's text format, for the four fields of CheckpointState -----

_SIMPLE_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
                   ord("\\"): "\\\\"}
_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\", "a": "\a", "b": "\b",
              "f": "\f", "v": "\v", "?": "?"}


def _escape(text: str) -> str:
    """protobuf's ``CEscape`` (``as_utf8=False``): every byte outside printable ASCII as ``\\ooo``."""
    out = []
    for byte in text.encode("utf-8", "surrogateescape"):
        if byte in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[byte])
        elif 32 <= byte < 127:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def _to_text(state: CheckpointState) -> str:
    lines = []
    if state.model_checkpoint_path:
        lines.append(f'model_checkpoint_path: "{_escape(state.model_checkpoint_path)}"')
    lines += [f'all_model_checkpoint_paths: "{_escape(p)}"' for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {float(t)!r}" for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp:
        lines.append(f"last_preserved_timestamp: {float(state.last_preserved_timestamp)!r}")
    return "".join(line + "\n" for line in lines)


_TOKEN = re.compile(r"""
    \s+ | \#[^\n]* |                                   # skipped
    (?P<number>[-+]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?)(?![A-Za-z0-9_])) |
    (?P<name>[A-Za-z_][A-Za-z0-9_]*) |
    (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*') |
    (?P<punct>[:\[\],;])
""", re.VERBOSE | re.IGNORECASE)
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)


def _tokens(data: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(data):
        match = _TOKEN.match(data, position)
        if match is None:
            raise InvalidArgumentError(f"unexpected text at offset {position}: {data[position:position + 20]!r}")
        position = match.end()
        if match.lastgroup is not None:
            tokens.append((match.lastgroup, match.group(match.lastgroup)))
    return tokens


def _unescape(quoted: str) -> bytes:
    def replace(match: re.Match) -> bytes:
        octal, hexadecimal, char = match.groups()
        if octal is not None:
            return bytes([int(octal, 8) & 0xFF])
        if hexadecimal is not None:
            return bytes([int(hexadecimal, 16)])
        letter = char.decode("latin-1")
        if letter not in _UNESCAPES:
            raise InvalidArgumentError(f"invalid escape sequence \\{letter}")
        return _UNESCAPES[letter].encode("ascii")

    return _ESCAPE.sub(replace, quoted[1:-1].encode("utf-8"))


_STRING_FIELDS = {"model_checkpoint_path": False, "all_model_checkpoint_paths": True}
_NUMBER_FIELDS = {"last_preserved_timestamp": False, "all_model_checkpoint_timestamps": True}


def _parse(data: bytes) -> CheckpointState:
    """A CheckpointState from protobuf text format; raises ``InvalidArgumentError`` on anything else."""
    try:
        tokens = _tokens(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise InvalidArgumentError(f"not UTF-8 text: {err}") from None
    fields: dict[str, list[Any]] = {}
    i = 0
    while i < len(tokens):
        kind, name = tokens[i]
        if kind != "name" or (name not in _STRING_FIELDS and name not in _NUMBER_FIELDS):
            raise InvalidArgumentError(f'Message type "tensorflow.CheckpointState" has no field named "{name}"')
        i += 1
        if i < len(tokens) and tokens[i] == ("punct", ":"):
            i += 1
        values, i = _values(tokens, i, name in _STRING_FIELDS)
        repeated = _STRING_FIELDS.get(name, _NUMBER_FIELDS.get(name))
        if not repeated and (name in fields or len(values) != 1):
            raise InvalidArgumentError(
                f'Message type "tensorflow.CheckpointState" should not have multiple "{name}" fields'
            )
        fields.setdefault(name, []).extend(values)
        if i < len(tokens) and tokens[i] in (("punct", ","), ("punct", ";")):
            i += 1
    return CheckpointState(
        fields.get("model_checkpoint_path", [""])[0],
        fields.get("all_model_checkpoint_paths", []),
        fields.get("all_model_checkpoint_timestamps", []),
        fields.get("last_preserved_timestamp", [0.0])[0],
    )


def _values(tokens: list[tuple[str, str]], i: int, strings: bool) -> tuple[list[Any], int]:
    """The value (or ``[list]`` of values) starting at token ``i``, and the index after it."""
    if i < len(tokens) and tokens[i] == ("punct", "["):
        values, i = [], i + 1
        while i < len(tokens) and tokens[i] != ("punct", "]"):
            value, i = _value(tokens, i, strings)
            values.append(value)
            if i < len(tokens) and tokens[i] == ("punct", ","):
                i += 1
        if i >= len(tokens):
            raise InvalidArgumentError("a list is not closed with ']'")
        return values, i + 1
    value, i = _value(tokens, i, strings)
    return [value], i


def _value(tokens: list[tuple[str, str]], i: int, strings: bool) -> tuple[Any, int]:
    kind = tokens[i][0] if i < len(tokens) else "end"
    if strings:
        if kind != "string":
            raise InvalidArgumentError("expected a string")
        raw = b""
        while i < len(tokens) and tokens[i][0] == "string":  # adjacent strings concatenate
            raw += _unescape(tokens[i][1])
            i += 1
        try:
            return raw.decode("utf-8"), i
        except UnicodeDecodeError as err:
            raise InvalidArgumentError(f"a path is not UTF-8: {err}") from None
    if kind != "number":
        raise InvalidArgumentError("expected a number")
    text = tokens[i][1]
    if text[-1] in "fF" and not text.lower().endswith("inf"):
        text = text[:-1]
    return float(text), i + 1
