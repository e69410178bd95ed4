"""Shared fixtures for the eager (PyTorch-shaped) rustgrad tests."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from _child import child_env

import rustgrad


@pytest.fixture(autouse=True)
def _fresh_state():
    """Seed the RNG and make sure no test leaks a disabled grad mode into the next."""
    rustgrad.manual_seed(0)
    rustgrad.set_grad_enabled(True)
    yield
    leaked = not rustgrad.is_grad_enabled()
    rustgrad.set_grad_enabled(True)
    assert not leaked, "test left grad mode disabled"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def run_python():
    """Run Python source in a fresh interpreter that imports the same rustgrad as this session."""
    env = child_env()

    def run(source: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", source], capture_output=True, text=True, timeout=timeout, env=env
        )

    return run


# Hypothesis profiles for the property tests: "ci" (the default) is derandomized with a fixed
# number of examples per test; HYPOTHESIS_PROFILE=long runs many more.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is a test extra
    _hypothesis_settings = None

if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile(
        "ci", derandomize=True, max_examples=40, deadline=None, print_blob=True
    )
    _hypothesis_settings.register_profile("long", max_examples=2000, deadline=None, print_blob=True)
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
