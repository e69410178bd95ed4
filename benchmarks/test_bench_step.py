"""The seed two-layer step (64x1000x100x10, float32), six ways, on the same data."""

from __future__ import annotations

import pytest

from steps import compiled_step, eager_step, numpy_step, static_step, torch_step


@pytest.mark.benchmark(group="seed step")
def test_eager_custom_function(benchmark, seed_problem):
    benchmark(eager_step(seed_problem, custom_relu=True))


@pytest.mark.benchmark(group="seed step")
def test_eager_builtin_relu(benchmark, seed_problem):
    benchmark(eager_step(seed_problem, custom_relu=False))


@pytest.mark.benchmark(group="seed step")
def test_compiled_custom_function(benchmark, seed_problem):
    benchmark(compiled_step(seed_problem, custom_relu=True))


@pytest.mark.benchmark(group="seed step")
def test_static_session(benchmark, seed_problem):
    benchmark(static_step(seed_problem))


@pytest.mark.benchmark(group="seed step")
def test_numpy_in_place(benchmark, seed_problem):
    benchmark(numpy_step(seed_problem, in_place=True))


@pytest.mark.benchmark(group="seed step")
def test_numpy_one_array_per_op(benchmark, seed_problem):
    benchmark(numpy_step(seed_problem, in_place=False))


@pytest.mark.benchmark(group="seed step")
def test_pytorch(benchmark, seed_problem):
    pytest.importorskip("torch")
    benchmark(torch_step(seed_problem))
