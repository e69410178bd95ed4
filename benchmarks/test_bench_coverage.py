"""One benchmark per op or module family that the other files do not time (the cases are in
coverage_cases.py), each against the same work in numpy, at one mid size so that the whole file
runs in seconds."""

from __future__ import annotations

import pytest

from coverage_cases import CASES


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.benchmark(group="coverage")
def test_coverage_rustgrad(benchmark, name):
    benchmark(CASES[name].ours())


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.benchmark(group="coverage")
def test_coverage_numpy(benchmark, name):
    benchmark(CASES[name].theirs())
