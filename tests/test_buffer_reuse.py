"""A loop that makes the same large tensors every step must reuse their memory: a large output
made in new memory each call pays a page fault per 4 KiB page it touches, every call, and fills
the buffer pool with buffers nothing takes (``benchmarks/steady_faults.py`` finds such ops).
Counted in minor page faults, which do not depend on the machine's speed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import rustgrad
import rustgrad.nn.functional as F

resource = pytest.importorskip("resource")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux page faults")

RNG = np.random.default_rng(0)


def _data(*shape: int) -> rustgrad.Tensor:
    return rustgrad.tensor(RNG.standard_normal(shape).astype(np.float32))


def _step(make, leaf, grad):
    """One step: the leaf's gradient cleared, then `make(leaf)` run forward and backward from `grad`."""

    def run() -> None:
        leaf.grad = None
        make(leaf).backward(grad)

    return run


def _workloads():
    rows, images, table = _data(512, 1024), _data(32, 16, 32, 32), _data(10_000, 128)
    for leaf in (rows, images, table):
        leaf.requires_grad_(True)
    ids = rustgrad.tensor(RNG.integers(0, 10_000, 4096))
    labels = rustgrad.tensor(RNG.integers(0, 1024, 512))
    return {
        "layer_norm": _step(lambda x: F.layer_norm(x, (1024,)), rows, _data(512, 1024)),
        "batch_norm": _step(lambda x: F.batch_norm(x, None, None, training=True), images, _data(32, 16, 32, 32)),
        "max_pool2d": _step(lambda x: F.max_pool2d(x, 2), images, _data(32, 16, 16, 16)),
        "cross_entropy": _step(lambda x: F.cross_entropy(x, labels), rows, None),
        "embedding": _step(lambda w: F.embedding(ids, w), table, _data(4096, 128)),
    }


WORKLOADS = _workloads()


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_a_warm_training_loop_takes_no_new_memory(name):
    step = WORKLOADS[name]
    for _ in range(5):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    calls = 10
    for _ in range(calls):
        step()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls
    # Each workload makes outputs of 2 MiB or more (512 pages); before their memory was reused
    # they faulted 256–2900 times per call.
    assert faults < 64, f"{name}: {faults:.0f} page faults per call once warm"
