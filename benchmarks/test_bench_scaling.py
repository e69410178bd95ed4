"""The two-layer step at larger sizes, eager and static, against numpy in place."""

from __future__ import annotations

import pytest

from steps import eager_step, numpy_step, scaled_problem, static_step

SIZES = [(256, 4096, 1024, 10), (1024, 4096, 4096, 1000)]
IDS = ["256x4096x1024x10", "1024x4096x4096x1000"]


@pytest.fixture(scope="module", params=SIZES, ids=IDS)
def problem(request):
    return scaled_problem(request.param)


@pytest.mark.benchmark(group="scaling", min_rounds=3)
def test_scaling_eager(benchmark, problem):
    benchmark(eager_step(problem))


@pytest.mark.benchmark(group="scaling", min_rounds=3)
def test_scaling_static(benchmark, problem):
    benchmark(static_step(problem))


@pytest.mark.benchmark(group="scaling", min_rounds=3)
def test_scaling_numpy_in_place(benchmark, problem):
    benchmark(numpy_step(problem, in_place=True))
