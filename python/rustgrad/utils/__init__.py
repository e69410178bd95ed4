"""``rustgrad.utils``: helpers with ``torch.utils``'s names (``rustgrad.utils.data``)."""

from __future__ import annotations

from rustgrad.utils import data

__all__ = ["data"]
