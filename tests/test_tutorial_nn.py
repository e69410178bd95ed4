"""The nn, custom-Module and DynamicNet programs of PyTorch's "Learning PyTorch with Examples"
tutorial (tests/tutorial/, written for torch) run with only `import torch` changed to
`import rustgrad as torch`, and their losses fall as torch's do."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _child import child_env

TUTORIAL = Path(__file__).resolve().parent / "tutorial"
LEAST_SQUARES_B, LEAST_SQUARES_D = 0.8567, -0.0933  # the cubic closest to sin on [-pi, pi]


def run_with_rustgrad(name: str, steps: int) -> tuple[list[float], str]:
    """The program's printed losses, in order, and its Result line."""
    lines = (TUTORIAL / name).read_text(encoding="utf-8").splitlines()
    imports = [i for i, line in enumerate(lines) if line == "import torch"]
    assert len(imports) == 1, f"{name} must have exactly one `import torch` line"
    assert not [line for line in lines if re.match(r"(import|from) rustgrad", line)], "the program is torch's"
    lines[imports[0]] = "import rustgrad as torch"
    source = "\n".join(lines) + "\n"
    result = subprocess.run([sys.executable, "-c", source], env=child_env(TUTORIAL_STEPS=str(steps)),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    losses = [float(m) for m in re.findall(r"^loss \d+ (\S+)$", result.stdout, re.M)]
    (result_line,) = re.findall(r"^Result: .*$", result.stdout, re.M)
    return losses, result_line


def coefficients_with_constant(result_line: str) -> list[float]:
    """a, b, c, d of the Result line `y = a + b x + c x^2 + d x^3`."""
    match = re.fullmatch(r"Result: y = (\S+) \+ (\S+) x \+ (\S+) x\^2 \+ (\S+) x\^3", result_line)
    assert match, result_line
    return [float(v) for v in match.groups()]


@pytest.mark.parametrize("name", ["polynomial_nn.py", "polynomial_module.py"])
def test_polynomial_programs_fit_sin_as_torch_does(name):
    losses, result_line = run_with_rustgrad(name, 2000)
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0] / 10
    assert losses[-1] < 30  # torch ends near 9-12 after 2000 steps; the best cubic has 8.8
    a, b, c, d = coefficients_with_constant(result_line)
    # The weights start unseeded (torch's program), and plain SGD at lr 1e-6 leaves the coefficients
    # still on their way after 2000 steps by an amount that depends on the start: over 5,000 random
    # starts of the same SGD in float64 numpy the worst ends were |b - B| = 0.075 and |d - D| = 0.0107
    # (a CI run ended at 0.0601 over an earlier 0.06 bar). The loss checks below pin the fit itself.
    assert abs(b - LEAST_SQUARES_B) < 0.12 and abs(d - LEAST_SQUARES_D) < 0.02, result_line
    x = np.linspace(-math.pi, math.pi, 2000, dtype=np.float32).astype(np.float64)
    features = np.stack([np.ones_like(x), x, x**2, x**3], axis=1)
    _, residual, *_ = np.linalg.lstsq(features, np.sin(x), rcond=None)
    assert min(losses) >= 0.99 * residual[0]  # nothing beats least squares
    fitted = a + b * x + c * x**2 + d * x**3
    # The printed polynomial is the fitted one: its loss is about the last one printed, a step earlier.
    assert abs(np.sum((fitted - np.sin(x)) ** 2) - losses[-1]) < 0.01 * losses[-1], (result_line, losses[-1])


def test_dynamic_net_trains_with_a_randomly_reused_parameter():
    # The tutorial's own step count: its weights and branch choices are unseeded, and 8000 steps left it flaky.
    losses, result_line = run_with_rustgrad("dynamic_net.py", 30000)
    assert all(math.isfinite(v) for v in losses)
    # Trained: the loss fell 1000-fold, or ended under 30. The start is unseeded: a CI run fell from
    # 7,237 to 8.86 (the best cubic's loss is 8.8), short of 1000-fold only because it started low.
    assert losses[-1] < max(losses[0] / 1000, 30), losses
    assert "x^4 ?" in result_line
