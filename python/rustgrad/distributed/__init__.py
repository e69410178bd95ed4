"""``rustgrad.distributed``: data-parallel training over MPI, with ``torch.distributed``'s names.

Install with ``pip install 'rustgrad[mpi]'`` (mpi4py and the MPICH wheel) and launch with
``mpiexec -n 2 python -m mpi4py train.py``. Importing this module does not need mpi4py;
``init_process_group`` does. See docs/distributed.md.
"""

from __future__ import annotations

from rustgrad.distributed._collectives import (
    ReduceOp,
    Work,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    reduce_scatter,
)
from rustgrad.distributed._group import (
    DistributedError,
    MPINotFoundError,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
)
from rustgrad.distributed._horovod import broadcast_optimizer_state, broadcast_parameters

# mpistatic (issue 17): static mode.
from rustgrad.distributed._static import DistributedOptimizer, broadcast_global_variables

__all__ = [
    "DistributedError", "MPINotFoundError", "ReduceOp", "Work", "all_gather", "all_reduce", "barrier", "broadcast",
    "broadcast_optimizer_state", "broadcast_parameters", "destroy_process_group", "get_backend", "get_rank",
    "get_world_size", "group", "init_process_group", "is_available", "is_initialized", "is_mpi_available",
    "reduce_scatter",
    # mpistatic (issue 17): static mode.
    "DistributedOptimizer", "broadcast_global_variables",
]
