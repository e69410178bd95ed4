"""The ring-allreduce model and the fit that benchmarks/distributed_scaling.py reports with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import distributed_scaling as model  # noqa: E402


def test_ring_allreduce_cost_matches_the_textbook_formula():
    # p = 4, 1 MB, alpha 2 us, beta 1 GB/s: 2*3/4 * 1e6/1e9 + 2*3*2e-6 = 1.5 ms + 12 us
    assert model.ring_allreduce_seconds(1e6, 4, 2e-6, 1e9) == pytest.approx(1.5e-3 + 12e-6, rel=1e-12)
    # one rank sends nothing
    assert model.ring_allreduce_seconds(1e6, 1, 2e-6, 1e9) == 0.0


def test_bandwidth_term_approaches_twice_the_buffer_over_beta():
    many = model.ring_allreduce_seconds(1e9, 10_000, 0.0, 1e9)
    assert many == pytest.approx(2.0, rel=1e-3)


def test_alpha_and_beta_are_recovered_from_exact_model_times():
    alpha, beta = 3e-6, 5e9
    sizes = [4, 64, 1024, 1 << 22, 1 << 24]
    times = [n / beta + 2 * alpha for n in sizes]
    got_alpha, got_beta = model.fit_alpha_beta(sizes, times)
    assert got_beta == pytest.approx(beta, rel=1e-9)
    assert got_alpha == pytest.approx(alpha + 2 / beta, rel=1e-9)  # the 4-byte message's own transfer


def test_efficiency_without_and_with_overlap():
    assert model.efficiency(1.0, 0.25, overlapped=False) == pytest.approx(0.8)
    assert model.efficiency(1.0, 0.25, overlapped=True) == 1.0
    assert model.efficiency(1.0, 2.0, overlapped=True) == pytest.approx(0.5)
