"""rustgrad runs on the CPU only; this module answers the questions PyTorch code asks."""

from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0
