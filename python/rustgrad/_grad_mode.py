"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The flag itself lives in Rust and is thread-local, as in PyTorch: a new thread
starts with grad enabled whatever the thread that made it was doing.

Each switch is a context manager and a decorator. As in PyTorch, a decorated
generator function runs under the mode each time it is resumed, and the
caller's mode is back in force whenever it yields.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Generator, TypeVar

from rustgrad import _rustgrad
from rustgrad.errors import ArgumentTypeError

F = TypeVar("F", bound=Callable[..., Any])

is_grad_enabled = _rustgrad.is_grad_enabled


def _decorate(func: F, make_context: Callable[[], Any]) -> F:
    """``func`` run under a fresh context from ``make_context`` at each call (or each resumption)."""
    if not callable(func):
        raise ArgumentTypeError(
            f"a grad-mode decorator needs a function, got {type(func).__name__}; "
            "use it as @no_grad() or `with no_grad():`"
        )
    if inspect.isgeneratorfunction(func):
        return _decorate_generator(func, make_context)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with make_context():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _decorate_generator(func: F, make_context: Callable[[], Any]) -> F:
    """Steps the generator under the mode and hands each value out under the caller's mode."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        generator = func(*args, **kwargs)  # runs none of the body yet
        try:
            with make_context():
                value = generator.send(None)
            while True:
                try:
                    sent = yield value
                except GeneratorExit:
                    with make_context():
                        generator.close()
                    raise
                except BaseException as exc:  # thrown in by the caller: pass it on
                    with make_context():
                        value = generator.throw(exc)
                else:
                    with make_context():
                        value = generator.send(sent)
        except StopIteration as stop:
            return stop.value

    return wrapper  # type: ignore[return-value]


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

    def _clone(self) -> _GradModeContext:
        return self.__class__()

    def __call__(self, func: F) -> F:
        return _decorate(func, self._clone)


class _NoParamGradModeContext(_GradModeContext):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, func: Any = None) -> Any:
        if func is None:
            return super().__new__(cls)
        return cls()(func)

    def __init__(self, func: Any = None) -> None:
        super().__init__()


class no_grad(_NoParamGradModeContext):
    """Disables recording: ops inside give results with ``requires_grad=False``."""

    _enabled = False


class enable_grad(_NoParamGradModeContext):
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
        _rustgrad._set_grad_enabled(self._enabled)

    def _clone(self) -> set_grad_enabled:
        return set_grad_enabled(self._enabled)

    def __call__(self, func: F) -> F:
        # As a decorator it must not change the mode of the code that decorates.
        _rustgrad._set_grad_enabled(self._before_call)
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """``inference_mode()`` records nothing, like ``no_grad``; ``inference_mode(False)`` records, like
    ``enable_grad`` (as in PyTorch, where leaving inference mode turns grad mode back on).

    rustgrad has no inference tensors: inside, this is exactly ``no_grad``.
    Usable as ``@inference_mode``, ``@inference_mode()`` and ``@inference_mode(False)`` too.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        if callable(mode):
            return cls()(mode)
        raise ArgumentTypeError(
            f"inference_mode(mode): mode must be True, False or a function to decorate, "
            f"got {type(mode).__name__}"
        )

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._mode = mode
        self._enabled = not mode

    def _clone(self) -> inference_mode:
        return inference_mode(self._mode)
