"""Float sums over 3 or more ranks are added in rank order, so ranks and reruns agree bitwise
(MPI_Allreduce does not promise an order). Launched as in tests/test_distributed_mpi.py."""

from __future__ import annotations

import pytest
from test_distributed_mpi import pytestmark, run_script  # noqa: F401 - the same skips


@pytest.mark.parametrize("ranks", [3, 4])
def test_sums_over_the_ranks_are_added_in_rank_order(ranks):
    out = run_script(ranks, "ordered_sum.py")
    assert all(f"rank {r}: ordered ok" in out for r in range(ranks)), out
