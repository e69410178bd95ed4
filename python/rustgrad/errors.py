"""The exception hierarchy.

Every error rustgrad raises is a :class:`RustgradError`. Each subclass is also
the built-in exception that PyTorch or TF1 raise in the same situation, so an
existing ``except RuntimeError`` or ``except ValueError`` keeps working.

The Rust core has one error enum; ``rust/python/errors.rs`` maps each variant to
one of these classes, and that is the only place the mapping happens.
"""

from __future__ import annotations

__all__ = [
    "RustgradError",
    "ShapeError",
    "DTypeError",
    "ArgumentTypeError",
    "NumericOverflowError",
    "IndexOutOfRangeError",
    "OutOfMemoryError",
    "GradientError",
    "InternalError",
    "DivisionByZeroError",
    "OpError",
    "InvalidArgumentError",
    "FailedPreconditionError",
    "DeviceError",
    "SerializationError",
    "PathNotFoundError",
    "DataLossError",
    "DLPackError",
    "DLPackDeviceError",
    "StateDictError",
    "ModuleAttributeError",
    "ModuleKeyError",
    "ForwardNotDefinedError",
    "ParamGroupKeyError",
    "DataLoaderError",
    "CompileError",
]


class RustgradError(Exception):
    """Base class of every error raised by rustgrad."""


class ShapeError(RustgradError, RuntimeError, ValueError):
    """Shapes that do not fit: matmul inner dims, broadcasting, reshape, ragged data.

    PyTorch raises RuntimeError here and TF1 raises ValueError, so this is both.
    """


class DTypeError(RustgradError, TypeError):
    """An unknown dtype, or a dtype an op does not accept."""


class ArgumentTypeError(RustgradError, TypeError):
    """An argument of the wrong kind (a list where an array is needed, a tensor used as a bool)."""


class NumericOverflowError(RustgradError, OverflowError):
    """A number too large for what it is converted to: ``int()`` of an infinite tensor, an
    integer argument that does not fit in 64 bits."""


class IndexOutOfRangeError(RustgradError, IndexError):
    """An index outside a dimension's bounds."""


class OutOfMemoryError(RustgradError, MemoryError):
    """An allocation the machine cannot satisfy. The process stays usable."""


class GradientError(RustgradError, RuntimeError):
    """Misuse of backward: freed graphs, nothing requiring grad, stale saved tensors."""


class DivisionByZeroError(RustgradError, RuntimeError, ZeroDivisionError):
    """An integer division or remainder by zero (``//``, ``%``, ``floor_divide``, ``remainder``).

    PyTorch raises ``RuntimeError: ZeroDivisionError`` and Python raises ``ZeroDivisionError``;
    this is both.
    """


class InternalError(RustgradError, RuntimeError):
    """A bug in rustgrad itself (a Rust panic caught at the boundary)."""


class OpError(RustgradError):
    """Base of the TF1-style errors raised while running static graphs."""


class InvalidArgumentError(OpError, ValueError):
    """A bad argument: a feed that does not fit, an unknown name, a bad option."""


class FailedPreconditionError(OpError, RuntimeError):
    """Something used before it is ready: an uninitialised variable, a closed session."""


class DeviceError(RustgradError, RuntimeError):
    """A device rustgrad does not have (it runs on the CPU only)."""


class SerializationError(RustgradError, RuntimeError):
    """A file that ``rustgrad.load`` cannot read as tensors (corrupt, truncated or of another kind),
    or one that ``rustgrad.save`` could not write."""


class PathNotFoundError(SerializationError, FileNotFoundError):
    """``rustgrad.load`` of a file that does not exist, or ``rustgrad.save`` into a missing folder.

    PyTorch raises ``FileNotFoundError`` for the first and ``RuntimeError`` for the second; this is both.
    """


class DataLossError(OpError, RuntimeError):
    """``Saver.restore`` of a checkpoint that is corrupt or truncated (TF1 raises ``DataLossError``)."""


class DLPackError(RustgradError, BufferError):
    """A DLPack exchange that cannot be done as asked (a DLPack version rustgrad does not read).

    The array-API standard names ``BufferError`` for these, so this is one.
    """


class DLPackDeviceError(DLPackError, DeviceError):
    """A DLPack exchange with a device rustgrad does not have: both a ``BufferError`` and a `DeviceError`."""


class StateDictError(RustgradError, RuntimeError):
    """``Module.load_state_dict`` of a state dict that does not fit the module: missing or
    unexpected keys (with ``strict=True``), shapes that differ, values that are not tensors."""


class ModuleAttributeError(RustgradError, AttributeError):
    """A ``Module`` attribute or submodule that does not exist, or one assigned before
    ``Module.__init__()`` ran."""


class ModuleKeyError(RustgradError, KeyError):
    """A parameter, buffer or submodule name a ``Module`` cannot take (empty, dotted, already an
    attribute), or a key missing from a ``ModuleDict``/``ParameterDict``."""


class ForwardNotDefinedError(RustgradError, NotImplementedError):
    """Calling a ``Module`` whose class defines no ``forward``."""


class ParamGroupKeyError(RustgradError, KeyError):
    """An optimizer parameter group without a key that is needed: ``initial_lr`` when a learning-rate
    scheduler resumes (``last_epoch`` other than -1)."""


class DataLoaderError(RustgradError, RuntimeError):
    """A ``DataLoader`` worker thread that timed out (``timeout=``), or whose exception cannot be
    re-raised as its own type (the message carries the worker's traceback)."""


class CompileError(RustgradError, RuntimeError):
    """``rustgrad.compile`` cannot do what was asked: a bad ``mode`` or ``backend``, or (with
    ``fullgraph=True``) a call it cannot trace into one program, as torch's ``Unsupported``."""
