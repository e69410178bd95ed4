"""The process group: one duplicate of an MPI communicator, made by ``init_process_group``.

mpi4py is imported only here, and only when a process group is made, so ``import rustgrad`` works
without it. Every collective of this package runs on the duplicate, so a user's own MPI calls on
``COMM_WORLD`` can never be matched with ours.
"""

from __future__ import annotations

import datetime
import sys
import time
from typing import Any, Optional

from rustgrad.errors import ArgumentTypeError, RustgradError

__all__ = ["DistributedError", "MPINotFoundError"]

_INSTALL = "install it with pip install 'rustgrad[mpi]' (mpi4py and the MPICH wheel)"


class DistributedError(RustgradError, RuntimeError):
    """A collective or process-group call that cannot run: no process group, another backend."""


class MPINotFoundError(RustgradError, ModuleNotFoundError):
    """``rustgrad.distributed`` used without the optional ``mpi4py`` package."""


# Documented where users import them from.
DistributedError.__module__ = MPINotFoundError.__module__ = "rustgrad.distributed"


class _Group:
    """The state of the default process group: the duplicated communicator and its rank and size."""

    def __init__(self, comm: Any, mpi: Any) -> None:
        self.comm = comm
        self.mpi = mpi
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.ordered_sequence: Any = None  # made by distributed/_ordered.py's first rank-order sum


_default: Optional[_Group] = None


class _World:
    """``group.WORLD``: the default process group, as a value to pass as ``group=``."""

    def __repr__(self) -> str:
        return "group.WORLD"


WORLD = _World()


class group:  # noqa: N801 - torch.distributed.group
    """torch's ``dist.group`` namespace: ``group.WORLD`` names the default process group."""

    WORLD = WORLD


def _import_mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise MPINotFoundError(
            f"rustgrad.distributed needs the mpi4py package, which is not installed; {_INSTALL}"
        ) from err
    return MPI


def is_available() -> bool:
    """Whether the MPI backend can be used: mpi4py imports (``pip install 'rustgrad[mpi]'``)."""
    try:
        _import_mpi()
    except MPINotFoundError:
        return False
    return True


def is_mpi_available() -> bool:
    """torch's name for the same question: rustgrad's only backend is MPI."""
    return is_available()


def init_process_group(backend: Optional[str] = "mpi", init_method: Optional[str] = None,
                       timeout: Optional[datetime.timedelta] = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None, device_id: Any = None,
                       comm: Any = None) -> None:
    """Joins the process group of all the ranks ``mpiexec`` started (or of ``comm``, an mpi4py
    communicator). Calling it again does nothing.

    Only ``backend="mpi"`` (or None) is accepted. ``init_method``, ``timeout``, ``store``,
    ``group_name``, ``pg_options`` and ``device_id`` are accepted and ignored: MPI's launcher already
    connected the ranks. ``world_size`` and ``rank``, when given, must be what MPI says.
    """
    global _default
    if backend is not None and str(backend).lower() != "mpi":
        raise DistributedError(
            f"init_process_group: backend {backend!r} is not available; rustgrad's only backend is 'mpi' "
            "(no NCCL or gloo): call init_process_group('mpi') and launch with mpiexec"
        )
    if _default is not None:
        return
    mpi = _import_mpi()
    parent = mpi.COMM_WORLD if comm is None else comm
    if not isinstance(parent, mpi.Comm):
        raise ArgumentTypeError(
            f"init_process_group: comm must be an mpi4py communicator (such as MPI.COMM_WORLD), "
            f"got {type(parent).__name__}"
        )
    group = _Group(parent.Dup(), mpi)
    for name, given, actual in (("world_size", world_size, group.size), ("rank", rank, group.rank)):
        if given not in (-1, None) and given != actual:
            group.comm.Free()
            raise DistributedError(
                f"init_process_group: {name}={given} but MPI says {actual}; leave {name} out (MPI's "
                "launcher sets it: mpiexec -n N)"
            )
    _default = group
    _install_excepthook(group)


_previous_excepthook: Any = None
# MPI_Abort kills the launcher's output forwarding at once: give it this long to pass the traceback on.
_FORWARD_SECONDS = 0.3


def _install_excepthook(g: _Group) -> None:
    """An uncaught exception on one rank aborts the whole job (the other ranks would otherwise wait
    for it forever), also when the script was not started with ``python -m mpi4py``."""
    global _previous_excepthook
    if _previous_excepthook is not None:
        return
    previous = _previous_excepthook = sys.excepthook

    def abort_the_job(kind: Any, value: Any, tb: Any) -> None:
        try:
            previous(kind, value, tb)
            sys.stderr.write(
                f"rustgrad.distributed: rank {g.rank} of {g.size} raised an uncaught {kind.__name__}; "
                "aborting the job\n"
            )
            sys.stderr.flush()
            time.sleep(_FORWARD_SECONDS)
        finally:
            g.mpi.COMM_WORLD.Abort(1)

    sys.excepthook = abort_the_job


def writes_here() -> bool:
    """Whether the checkpoint and summary helpers write on this process: not on ranks other than 0
    of an initialized process group, where every rank holds the same weights (Horovod's rule)."""
    return _default is None or _default.rank == 0


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not since)."""
    return _default is not None


def destroy_process_group(group: Any = None) -> None:
    """Frees the process group's communicator; ``init_process_group`` may be called again."""
    global _default
    if _default is None:
        return
    global _previous_excepthook
    group, _default = _default, None
    if _previous_excepthook is not None:
        sys.excepthook, _previous_excepthook = _previous_excepthook, None
    if not group.mpi.Is_finalized():
        group.comm.Free()
        if group.ordered_sequence is not None:
            group.ordered_sequence.comm.Free()


def _group(op: str, group: Any = None) -> _Group:
    """The default group, for the collective ``op``; ``group`` must be None or ``group.WORLD``."""
    if group is not None and group is not WORLD:
        raise DistributedError(
            f"{op}: only the default process group exists in rustgrad (group=None or group.WORLD), got {group!r}"
        )
    if _default is None:
        raise DistributedError(
            f"{op}: the default process group has not been initialized; call "
            "rustgrad.distributed.init_process_group('mpi') first (and launch with mpiexec -n N python -m mpi4py ...)"
        )
    return _default


def get_rank(group: Any = None) -> int:
    """This process's rank, from 0 to ``get_world_size() - 1``."""
    return _group("get_rank", group).rank


def get_world_size(group: Any = None) -> int:
    """The number of ranks."""
    return _group("get_world_size", group).size


def get_backend(group: Any = None) -> str:
    """Always ``'mpi'``."""
    _group("get_backend", group)
    return "mpi"

