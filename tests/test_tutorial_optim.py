"""The PyTorch tutorial program "PyTorch: optim" (tests/tutorial/polynomial_optim.py: Sequential(Linear,
Flatten), MSELoss(reduction='sum'), RMSprop) runs with only the import changed and its loss falls as
torch's does (from about 10^4 to tens over 2000 steps)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from _child import child_env

import rustgrad

PROGRAM = Path(__file__).resolve().parent / "tutorial" / "polynomial_optim.py"


def test_the_program_is_torchs_with_only_the_import_changed():
    source = PROGRAM.read_text(encoding="utf-8")
    assert "import rustgrad as torch\n" in source and "import torch\n" not in source
    assert "torch.optim.RMSprop(model.parameters(), lr=learning_rate)" in source


@pytest.mark.skipif(not hasattr(rustgrad.nn, "Sequential"),
                    reason="needs nn.Sequential/Linear/Flatten/MSELoss (the nn.Module work, merged separately)")
def test_polynomial_optim_tutorial_runs_and_its_loss_falls():
    result = subprocess.run([sys.executable, str(PROGRAM)], env=child_env(), capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    losses = [float(line.split()[1]) for line in lines[:-1]]
    assert [int(line.split()[0]) for line in lines[:-1]] == list(range(99, 2000, 100))
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[0] > 1000 and losses[-1] < 100, losses
    assert re.fullmatch(r"Result: y = \S+ \+ \S+ x \+ \S+ x\^2 \+ \S+ x\^3", lines[-1])
