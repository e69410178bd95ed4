"""``rustgrad.nn``: neural-network helpers. ``rustgrad.nn.functional`` has the functional ops
(``import rustgrad.nn.functional as F``)."""

from __future__ import annotations

from rustgrad.nn import functional

__all__ = ["functional"]
