"""``rustgrad.autograd.Variable``: torch's legacy name, kept for ``Variable._execution_engine.queue_callback``,
the one way torch code (DDP, FSDP, optimizers in backward) runs something once the backward pass is over."""

from __future__ import annotations

from typing import Any, Callable

from rustgrad import _rustgrad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError


class _ExecutionEngine:
    """``Variable._execution_engine``: the reverse pass, seen from Python."""

    @staticmethod
    def queue_callback(callback: Callable[[], object]) -> None:
        """Runs ``callback()`` once the backward pass running now is over: after every node has run and
        every ``.grad`` is written, before ``backward()`` (or ``autograd.grad``) returns. Call it from a hook
        or a custom Function's backward; outside a pass it raises ``GradientError``. Callbacks run in the
        order they were queued (one queued by a callback runs too); an exception from one propagates out
        of ``backward()`` and the rest do not run. A pass that fails drops its callbacks without running them.
        """
        _rustgrad._queue_callback(callback)


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch's deprecated ``Variable``: every Tensor is one (``isinstance(t, Variable)``), and
    ``Variable(data, requires_grad=False)`` returns ``data`` detached from its history (sharing its memory).

    ``Variable._execution_engine.queue_callback(callback)``, called from a hook or a custom Function's
    backward, runs ``callback()`` once the running backward pass is over (every ``.grad`` written),
    before ``backward()`` or ``autograd.grad`` returns; outside a pass it raises ``GradientError``.
    """

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data: Tensor, requires_grad: bool = False) -> Tensor:  # type: ignore[misc]
        if not isinstance(data, Tensor):
            raise ArgumentTypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
