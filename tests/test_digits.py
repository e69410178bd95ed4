"""The digits example end to end, in CI size: a few epochs, a lower bar than the full run's 97%."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("sklearn", reason="the digits example needs scikit-learn (the test extra installs it)")

from rustgrad import _digits  # noqa: E402


def test_a_few_epochs_reach_a_high_test_accuracy():
    _, history = _digits.train(epochs=4, quiet=True)
    assert history.losses[-1] < history.losses[0]
    assert history.accuracies[-1] >= 0.93, history.accuracies


def test_training_resumed_from_a_checkpoint_continues_the_same_curve(tmp_path):
    _, whole = _digits.train(epochs=3, quiet=True)
    checkpoint = str(tmp_path / "digits.safetensors")
    _digits.train(epochs=3, checkpoint=checkpoint, quiet=True, stop_after=2)
    _, resumed = _digits.train(epochs=3, checkpoint=checkpoint, resume=True, quiet=True)
    assert resumed.losses == whole.losses
    assert resumed.accuracies == whole.accuracies


def test_the_split_is_fixed_by_numpys_generator_seeded_with_zero():
    train, test = _digits.split(*_digits.load_digits())
    assert (len(train), len(test)) == (1400, 397)


def test_the_demo_entry_runs():  # tests/test_typing.py runs examples/digits.py, the full 20 epochs
    command = [sys.executable, "-m", "rustgrad", "digits", "--epochs", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "test accuracy" in result.stdout and "epoch   1" in result.stdout
