"""rustgrad.distributed's errors that need no MPI job: no process group, another backend, no mpi4py."""

from __future__ import annotations

import subprocess
import sys
from unittest import mock

import pytest
from _child import child_env

import rustgrad
import rustgrad.distributed as dist
from rustgrad.errors import RustgradError
from rustgrad.nn.parallel import DistributedDataParallel


def test_importing_rustgrad_does_not_import_mpi4py(tmp_path):
    code = "import sys, rustgrad, rustgrad.distributed, rustgrad.nn.parallel; print('mpi4py' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.parametrize("call", [
    lambda: dist.get_rank(),
    lambda: dist.get_world_size(),
    lambda: dist.barrier(),
    lambda: dist.all_reduce(rustgrad.ones(2)),
    lambda: dist.broadcast(rustgrad.ones(2), 0),
    lambda: dist.broadcast_parameters(rustgrad.nn.Linear(2, 2)),
    lambda: DistributedDataParallel(rustgrad.nn.Linear(2, 2)),
], ids=["get_rank", "get_world_size", "barrier", "all_reduce", "broadcast", "broadcast_parameters", "DDP"])
def test_collectives_without_init_process_group_raise_distributed_error(call):
    assert not dist.is_initialized()
    with pytest.raises(dist.DistributedError, match=r"the default process group has not been initialized; call "
                       r"rustgrad\.distributed\.init_process_group\('mpi'\) first"):
        call()


def test_the_error_classes_are_rustgrad_errors_and_the_builtins():
    assert issubclass(dist.DistributedError, RustgradError) and issubclass(dist.DistributedError, RuntimeError)
    assert issubclass(dist.MPINotFoundError, RustgradError) and issubclass(dist.MPINotFoundError, ModuleNotFoundError)


@pytest.mark.parametrize("backend", ["nccl", "gloo"])
def test_a_backend_other_than_mpi_raises_distributed_error(backend):
    with pytest.raises(dist.DistributedError, match=rf"init_process_group: backend '{backend}' is not available; "
                       r"rustgrad's only backend is 'mpi' \(no NCCL or gloo\)"):
        dist.init_process_group(backend)
    assert not dist.is_initialized()


def test_without_mpi4py_init_process_group_names_the_extra_to_install():
    with mock.patch.dict(sys.modules, {"mpi4py": None}):
        assert dist.is_available() is False
        with pytest.raises(dist.MPINotFoundError, match=r"needs the mpi4py package, which is not installed; install "
                           r"it with pip install 'rustgrad\[mpi\]'"):
            dist.init_process_group("mpi")
    assert not dist.is_initialized()


def test_reduce_op_names_torchs_ops():
    assert [op.name for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
                               dist.ReduceOp.MAX)] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    assert repr(dist.ReduceOp.AVG) == "ReduceOp.AVG"
