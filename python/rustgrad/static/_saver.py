"""``tf.train.Saver``: variables' values saved per Session as ``.npz`` files, TF1's retention of
the newest ``max_to_keep`` checkpoints, and the ``checkpoint`` state file beside them."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Optional, Sequence, Union

import numpy as np

from rustgrad import _npz
from rustgrad.errors import (
    ArgumentTypeError,
    DataLossError,
    FailedPreconditionError,
    InvalidArgumentError,
    SerializationError,
)
from rustgrad.static._checkpoint_state import get_checkpoint_mtimes, remove_checkpoint, write_state
from rustgrad.static._dtypes import numpy_dtype
from rustgrad.static._graph import Tensor
from rustgrad.static._variables import Variable, global_variables

__all__ = ["Saver"]

_log = logging.getLogger("rustgrad.static")


def _now() -> float:
    return time.time()


class Saver:
    """Saves and restores variables' values, per Session, in numpy's open ``.npz`` format
    (one array per variable, keyed by the variable's name, e.g. ``"Variable"``, ``"w/Adam"``).

    ``var_list`` is a list of variables or a dict of name -> variable; by default, every global
    variable that exists when the Saver is made (so make it after ``minimize`` to include slots).

    Each ``save`` writes one file at the path it returns (``save_path-<global_step>`` with a step)
    and, with ``write_state=True``, the ``checkpoint`` state file in the same folder, which
    ``tf.train.latest_checkpoint`` reads. As TF1, the Saver keeps the newest ``max_to_keep``
    checkpoints it wrote and deletes older ones (``None`` or 0 keeps all), except that one
    checkpoint every ``keep_checkpoint_every_n_hours`` is kept for good.
    """

    def __init__(self, var_list: Union[Sequence[Variable], dict[str, Variable], None] = None,
                 reshape: bool = False, sharded: bool = False, max_to_keep: Optional[int] = 5,
                 keep_checkpoint_every_n_hours: float = 10000.0, name: Optional[str] = None,
                 restore_sequentially: bool = False, saver_def: Any = None, builder: Any = None,
                 defer_build: bool = False, allow_empty: bool = False, write_version: int = 2,
                 pad_step_number: bool = False, save_relative_paths: bool = False,
                 filename: Optional[str] = None) -> None:
        self._vars = _named_variables(var_list, allow_empty)
        self._max_to_keep = _max_to_keep(max_to_keep)
        self._keep_every_seconds = _hours(keep_checkpoint_every_n_hours) * 3600.0
        self._next_checkpoint_time = _now() + self._keep_every_seconds
        self._pad_step_number = bool(pad_step_number)
        self._save_relative_paths = bool(save_relative_paths)
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    # ----- saving -----

    def save(self, sess: Any, save_path: Union[str, os.PathLike], global_step: Any = None,
             latest_filename: Optional[str] = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = True, write_state: bool = True, strip_default_attrs: bool = False,
             save_debug_info: bool = False) -> str:
        """Writes the variables' values in ``sess`` to ``save_path`` (``save_path-<global_step>`` when
        a step is given) and returns the path written. The file is written through a temporary file
        renamed over it at the end, so a failed save leaves no partial file. With ``write_state``, the
        path is recorded in the state file ``latest_filename`` (default ``checkpoint``) of its folder
        and the oldest checkpoint beyond ``max_to_keep`` is deleted. On ranks other than 0 of an
        initialized ``rustgrad.distributed`` process group nothing is written (the path is returned)."""
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise InvalidArgumentError(
                f"Saver.save: 'latest_filename' must not contain path components: {latest_filename!r}"
            )
        prefix = os.fspath(save_path)
        path = self._checkpoint_path(sess, prefix, global_step)
        if global_step is None and os.path.basename(prefix) == latest_filename:
            raise InvalidArgumentError(
                f"Saver.save: 'latest_filename' collides with 'save_path': '{latest_filename}' and '{prefix}'; "
                "name the checkpoint differently"
            )
        parent = _npz.missing_parent(path)
        if parent is not None:
            raise InvalidArgumentError(f"Parent directory of {path} doesn't exist, can't save.")
        from rustgrad.distributed._group import writes_here

        if not writes_here():  # every rank of a data-parallel job holds the same values: rank 0 writes
            return path
        _npz.write_npz(path, self._arrays(sess), "Saver.save", SerializationError)
        if write_state:
            with self._lock:
                self._record(path, os.path.dirname(prefix), latest_filename)
        return path

    def _checkpoint_path(self, sess: Any, prefix: str, global_step: Any) -> str:
        if global_step is None:
            return prefix
        step = sess.run(global_step) if isinstance(global_step, Tensor) else global_step
        try:
            step = int(step)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"Saver.save: global_step must be an integer or an integer tensor, "
                                    f"got {global_step!r}") from None
        return f"{prefix}-{step:08d}" if self._pad_step_number else f"{prefix}-{step}"

    def _arrays(self, sess: Any) -> list[tuple[str, np.ndarray]]:
        arrays = []
        for key, v in self._vars.items():
            self._check_session(sess, v)
            value = sess._core.variable_value(v._var)
            if value is None:
                raise FailedPreconditionError(
                    f"Saver.save: variable {key} is uninitialized in this session; run its initializer "
                    "(sess.run(global_variables_initializer())) before saving"
                )
            if not _npz.zip_name_ok(f"{key}.npy"):
                raise InvalidArgumentError(f"Saver.save: the name {key!r} cannot be stored in an .npz checkpoint")
            arrays.append((f"{key}.npy", np.asarray(value)))
        return arrays

    def _record(self, path: str, save_dir: str, latest_filename: str) -> None:
        """TF1's ``_RecordLastCheckpoint``, the state file, then ``_MaybeDeleteOldCheckpoints``: the
        state file is written before the Saver's list changes, so a failed write changes nothing."""
        last = list(self._last_checkpoints)
        to_delete = list(self._checkpoints_to_be_deleted)
        if self._max_to_keep:
            last = [p for p in last if p[0] != path]
            last.append((path, _now()))
            if len(last) > self._max_to_keep:
                to_delete.append(last.pop(0))
        write_state(save_dir, path, [p for p, _ in last], latest_filename, self._save_relative_paths)
        self._last_checkpoints = last
        self._checkpoints_to_be_deleted = to_delete
        self._maybe_delete_old_checkpoint()

    def _maybe_delete_old_checkpoint(self) -> None:
        if not self._checkpoints_to_be_deleted:
            return
        path, saved_at = self._checkpoints_to_be_deleted.pop(0)
        if saved_at > self._next_checkpoint_time:  # the first one saved after each N-hour mark stays
            self._next_checkpoint_time += self._keep_every_seconds
            return
        try:
            remove_checkpoint(path)
        except OSError as err:  # TF1 logs and goes on: the next save should not fail for it
            _log.warning("Ignoring: %s", err)

    # ----- the list of kept checkpoints -----

    @property
    def last_checkpoints(self) -> list[str]:
        """The paths of the kept checkpoints this Saver wrote (or recovered), oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: Sequence[str]) -> None:
        """Replaces the list of kept checkpoints (never kept for good by the hours rule)."""
        if not isinstance(last_checkpoints, (list, tuple)):
            raise ArgumentTypeError(f"Saver.set_last_checkpoints: expected a list of paths, got {last_checkpoints!r}")
        self._last_checkpoints = [(os.fspath(p), float("inf")) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: Sequence[tuple[str, float]]) -> None:
        """Replaces the list of kept checkpoints with (path, save time) pairs, oldest first."""
        if not isinstance(last_checkpoints_with_time, (list, tuple)):
            raise ArgumentTypeError("Saver.set_last_checkpoints_with_time: expected a list of (path, time) pairs, "
                                    f"got {last_checkpoints_with_time!r}")
        self._last_checkpoints = [(os.fspath(p), float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: Sequence[str]) -> None:
        """Takes over ``checkpoint_paths`` (e.g. ``get_checkpoint_state(dir).all_model_checkpoint_paths``
        after a restart) as the kept checkpoints, with their files' times; missing ones are skipped.
        The next saves then delete them in turn, as if this Saver had written them."""
        recovered = []
        for path in checkpoint_paths:
            times = get_checkpoint_mtimes([path])
            if times:
                recovered.append((os.fspath(path), times[0]))
        self.set_last_checkpoints_with_time(recovered)

    # ----- restoring -----

    def restore(self, sess: Any, save_path: Union[str, os.PathLike, None]) -> None:
        """Sets the variables in ``sess`` to the values saved at ``save_path``.

        A missing path raises ``InvalidArgumentError``; a corrupt or truncated checkpoint raises
        ``DataLossError``, and then no variable changes.
        """
        if save_path is None:
            raise InvalidArgumentError(
                "Saver.restore: Can't load save_path when it is None (tf.train.latest_checkpoint returns "
                "None when the folder has no `checkpoint` state file or its newest checkpoint is gone)"
            )
        path = os.fspath(save_path)
        if not os.path.exists(path):
            raise InvalidArgumentError(f"The passed save_path is not a valid checkpoint: {path}")
        with _npz.NpzReader(path, "Saver.restore", DataLossError) as archive:
            values = {}
            for key, v in self._vars.items():
                self._check_session(sess, v)
                if f"{key}.npy" not in archive.names:
                    raise InvalidArgumentError(
                        f"Key {key} not found in checkpoint {path} (it holds: {sorted(archive.keys)})"
                    )
                value = archive.read_array(f"{key}.npy", f"variable {key}")
                if tuple(value.shape) != tuple(v.shape):
                    raise InvalidArgumentError(
                        f"Saver.restore: checkpoint value for {key} has shape {value.shape}, but the variable "
                        f"has shape {tuple(v.shape)}"
                    )
                values[key] = np.asarray(value, dtype=numpy_dtype(v.dtype), order="C")
        for key, v in self._vars.items():
            sess._core.set_variable_value(v._var, values[key])

    @staticmethod
    def _check_session(sess: Any, v: Variable) -> None:
        if getattr(sess, "graph", None) is not v.graph:
            raise InvalidArgumentError(f"Saver: variable {v.name} is not in the session's graph")


def _named_variables(var_list: Any, allow_empty: bool) -> dict[str, Variable]:
    if var_list is None:
        var_list = global_variables()
    if isinstance(var_list, dict):
        named = dict(var_list)
    else:
        named = {}
        for v in var_list:
            if not isinstance(v, Variable):
                raise ArgumentTypeError(f"Saver: var_list must hold Variables, got {v!r}")
            key = v.op.name
            if key in named and named[key] is not v:
                raise InvalidArgumentError(
                    f"Saver: At least two variables have the same name: {key}; pass a dict of names to variables"
                )
            named[key] = v
    for key, v in named.items():
        if not isinstance(v, Variable):
            raise ArgumentTypeError(f"Saver: the value for {key!r} is not a Variable: {v!r}")
    if not named and not allow_empty:
        raise InvalidArgumentError("Saver: No variables to save; create variables first, or pass allow_empty=True")
    return named


def _max_to_keep(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"Saver: max_to_keep must be an integer or None, got {value!r}")
    if value < 0:
        raise InvalidArgumentError(f"Saver: max_to_keep must not be negative, got {value} (None or 0 keeps all)")
    return int(value)


def _hours(value: Any) -> float:
    if isinstance(value, bool) or isinstance(value, Tensor):
        raise ArgumentTypeError(f"Saver: keep_checkpoint_every_n_hours must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"Saver: keep_checkpoint_every_n_hours must be a number, got {value!r}") from None
