"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

The flag itself lives in Rust and is thread-local, as in PyTorch: a new thread
starts with grad enabled whatever the thread that made it was doing.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from rustgrad import _rustgrad

F = TypeVar("F", bound=Callable[..., Any])

is_grad_enabled = _rustgrad.is_grad_enabled


class _GradModeContext:
    """Base of the grad-mode context managers; each instance also works as a decorator."""

    _enabled: bool

    def __init__(self) -> None:
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(_rustgrad.is_grad_enabled())
        _rustgrad._set_grad_enabled(self._enabled)

    def __exit__(self, *exc: object) -> None:
        _rustgrad._set_grad_enabled(self._previous.pop())

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):
    """Disables recording: ops inside give results with ``requires_grad=False``."""

    _enabled = False


class enable_grad(_GradModeContext):
    """Re-enables recording inside a ``no_grad`` block."""

    _enabled = True


class set_grad_enabled(_GradModeContext):
    """``set_grad_enabled(False)`` sets the mode now, and restores it when used as a context manager."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._enabled = bool(mode)
        self._before_call = _rustgrad.is_grad_enabled()
        _rustgrad._set_grad_enabled(self._enabled)

    def __enter__(self) -> None:
        self._previous.append(self._before_call)

    def __call__(self, func: F) -> F:
        _rustgrad._set_grad_enabled(self._before_call)
        enabled = self._enabled

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(enabled):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


inference_mode = no_grad
