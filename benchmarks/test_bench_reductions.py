"""Reductions and scans of the op table against numpy, float32 at 1M and 16M elements:
``cumsum`` and ``max(dim)`` (the issue's rows), ``cumprod``, ``prod``, ``var``, ``norm`` and
``argmax``, over a whole tensor and along each dim of a (n/1024, 1024) matrix."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad

SIZES = [1 << 20, 1 << 24]
IDS = ["1M", "16M"]

# (name, rustgrad call, numpy call)
OPS = [
    ("cumsum", lambda t: t.cumsum(0), lambda a: np.cumsum(a, 0)),
    ("cumsum_rows", lambda t: t.cumsum(1), lambda a: np.cumsum(a, 1)),
    ("cumprod", lambda t: t.cumprod(0), lambda a: np.cumprod(a, 0)),
    ("prod", lambda t: t.prod(), lambda a: np.prod(a)),
    ("prod_dim0", lambda t: t.prod(0), lambda a: np.prod(a, 0)),
    ("var", lambda t: t.var(), lambda a: np.var(a, ddof=1)),
    ("var_dim1", lambda t: t.var(1), lambda a: np.var(a, 1, ddof=1)),
    ("norm", lambda t: t.norm(), lambda a: np.linalg.norm(a.ravel())),
    # torch's max(dim) also gives the indices; numpy's max(axis) only the values.
    ("max_dim1", lambda t: t.max(1), lambda a: np.max(a, 1)),
    ("argmax_dim0", lambda t: t.argmax(0), lambda a: np.argmax(a, 0)),
]


@pytest.fixture(scope="module", params=SIZES, ids=IDS)
def data(request):
    # Values near 1, so that products stay in range and every path runs its fast blocks.
    a = np.random.default_rng(0).uniform(0.999, 1.001, request.param).astype(np.float32)
    return a, rustgrad.from_numpy(a)


def _operand(data, name):
    a, t = data
    two_d = name.endswith(("_rows", "_dim0", "_dim1"))
    return (a.reshape(-1, 1024), t.reshape(-1, 1024)) if two_d else (a, t)


@pytest.mark.parametrize("name, ours, _", OPS, ids=[op[0] for op in OPS])
@pytest.mark.benchmark(group="reductions")
def test_reduction_rustgrad(benchmark, data, name, ours, _):
    _, t = _operand(data, name)
    benchmark(ours, t)


@pytest.mark.parametrize("name, _, theirs", OPS, ids=[op[0] for op in OPS])
@pytest.mark.benchmark(group="reductions")
def test_reduction_numpy(benchmark, data, name, _, theirs):
    a, _ = _operand(data, name)
    benchmark(theirs, a)
