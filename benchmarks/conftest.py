"""Shared fixtures for the benchmark suite (not part of the test run).

Run with ``python -m pytest benchmarks`` or, for the report, ``python benchmarks/report.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rustgrad._demo import Problem  # noqa: E402


@pytest.fixture(scope="session")
def seed_problem() -> Problem:
    return Problem.make(0)


@pytest.fixture(autouse=True)
def _all_threads():
    """Every benchmark starts with rustgrad on all cores; those that vary it restore this."""
    import rustgrad

    threads = rustgrad.get_num_threads()
    yield
    rustgrad.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _settle():
    """BLAS threads (numpy's and ours) spin for a while after their last job; a pause lets
    them park, so one benchmark's spinning threads do not slow the next one."""
    time.sleep(0.3)
