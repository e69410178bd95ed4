"""The PyTorch reference program runs unmodified except for its import line."""

from __future__ import annotations

import math
import re

import _reference
import pytest

NAME = "two_layer_torch.py"
SHARED = _reference.shared_path(NAME)
FALLBACK = _reference.fallback_path(NAME)
ITERATIONS = 50


def patched_source() -> str:
    return _reference.patched(NAME, "import torch", "import rustgrad as torch", ITERATIONS)


def test_fallback_copy_is_identical_to_shared_reference():
    if not SHARED.is_file():
        pytest.skip("shared reference not present; only the fallback copy is available")
    assert FALLBACK.read_bytes() == SHARED.read_bytes()


@pytest.fixture(scope="module")
def run(run_python):
    return run_python(patched_source(), timeout=300)


def test_reference_program_runs(run):
    assert run.returncode == 0, f"stderr:\n{run.stderr[-4000:]}"


def test_reference_program_loss_falls(run):
    assert run.returncode == 0, f"stderr:\n{run.stderr[-4000:]}"
    lines = [line.strip() for line in run.stdout.splitlines() if line.strip()]
    matches = [re.fullmatch(r"(\d+) (\S+)", line) for line in lines]
    assert all(matches), f"unexpected output lines:\n{run.stdout[:2000]}"
    steps = [int(m.group(1)) for m in matches]
    losses = [float(m.group(2)) for m in matches]
    assert steps == list(range(ITERATIONS))
    assert len(losses) == ITERATIONS
    assert all(math.isfinite(v) for v in losses), losses
    assert losses[0] > 0
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])
