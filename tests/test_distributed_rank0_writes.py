"""Only rank 0 writes: SummaryWriter, tf.summary.FileWriter and tf.train.Saver on 2 and 3 ranks
sharing one folder. Launched as in tests/test_distributed_mpi.py."""

from __future__ import annotations

import importlib.util

import pytest
from test_distributed_mpi import SCRIPTS, launch, pytestmark  # noqa: F401 - the same skips


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="tensorboard is not installed")
@pytest.mark.parametrize("ranks", [2, 3])
def test_summary_writers_and_saver_write_only_on_rank_0(ranks, tmp_path):
    result = launch(ranks, "-m", "mpi4py", str(SCRIPTS / "rank0_writes.py"), str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(f"rank {r}: rank0 writes ok" in result.stdout for r in range(ranks)), result.stdout
