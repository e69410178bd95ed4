"""Handles that remove the hooks a ``Module`` registered."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Returned by ``register_forward_hook`` and friends; ``remove()`` unregisters the hook (also
    usable as a context manager)."""

    _next_id = itertools.count()

    def __init__(self, *hooks_dicts: dict[int, Any]) -> None:
        self.hooks_dicts = hooks_dicts
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        for hooks in self.hooks_dicts:
            hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
