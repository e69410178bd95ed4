"""The MLP step the benchmarks time is the same computation all three ways (modules and optimizer,
bare ops, numpy by hand): a benchmark of a wrong step would measure nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from nn_steps import MlpProblem, bare_step, module_step, numpy_step  # noqa: E402


def test_the_three_mlp_steps_follow_the_same_loss_curve():
    problem = MlpProblem.make(1)
    steps = [module_step(problem), bare_step(problem), numpy_step(problem)]
    curves = np.array([[step() for step in steps] for _ in range(6)])
    assert curves[-1, 0] < curves[0, 0]
    np.testing.assert_array_equal(curves[:, 0], curves[:, 1])
    np.testing.assert_allclose(curves[:, 2], curves[:, 0], rtol=1e-5)
