"""``rustgrad.utils``: helpers with ``torch.utils``'s names (``rustgrad.utils.data``,
``rustgrad.utils.tensorboard``)."""

from __future__ import annotations

from rustgrad.utils import data, tensorboard

__all__ = ["data", "tensorboard"]
