"""The environment of a child interpreter that must import the same rustgrad as this
test session (tests run some cases in a fresh process: crashes, memory caps, signals)."""

from __future__ import annotations

import os
from pathlib import Path

import rustgrad


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, **extra)
    pkg_parent = str(Path(rustgrad.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    return env
