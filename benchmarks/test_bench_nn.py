"""The framework layer's MLP step (784-256-10, CrossEntropyLoss, Adam, batch 64) three ways: with
modules and the optimizer, with the same ops on plain tensors, and by hand in numpy."""

from __future__ import annotations

import pytest

from nn_steps import MlpProblem, bare_step, module_step, numpy_step


@pytest.fixture(scope="module")
def mlp_problem() -> MlpProblem:
    return MlpProblem.make(0)


@pytest.mark.benchmark(group="mlp step")
def test_mlp_modules_and_optimizer(benchmark, mlp_problem):
    benchmark(module_step(mlp_problem))


@pytest.mark.benchmark(group="mlp step")
def test_mlp_bare_ops(benchmark, mlp_problem):
    benchmark(bare_step(mlp_problem))


@pytest.mark.benchmark(group="mlp step")
def test_mlp_numpy(benchmark, mlp_problem):
    benchmark(numpy_step(mlp_problem))
