"""rustgrad.distributed and DistributedDataParallel on real MPI ranks: each test launches
``mpiexec -n N python -m mpi4py script.py`` (one thread per rank) on a script of
tests/distributed_scripts/, which asserts against numpy on every rank and prints one line per rank."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from _child import child_env

SCRIPTS = Path(__file__).resolve().parent / "distributed_scripts"
TIMEOUT = 60


def _mpiexec() -> str | None:
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / "mpiexec").exists():
            return str(folder / "mpiexec")
    return None


MPIEXEC = _mpiexec()
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                       reason="mpi4py is not installed (pip install '.[mpi]' or '.[test]')"),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec next to this Python (pip install mpich, or '.[mpi]')"),
]


def launch(ranks: int, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    env = child_env(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_script(ranks: int, name: str) -> str:
    result = launch(ranks, "-m", "mpi4py", str(SCRIPTS / name))
    assert result.returncode == 0, f"{name} on {ranks} ranks failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_collectives_match_numpy_and_mismatched_ranks_get_clear_errors():
    out = run_script(2, "collectives.py")
    assert all(f"rank {r}: {what} ok" in out for r in range(2) for what in ("collectives", "comm=")), out


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_on_k_ranks_equals_one_process_on_the_whole_batch(ranks):
    out = run_script(ranks, "ddp.py")
    assert all(f"rank {r}: ddp ok" in out for r in range(ranks)), out


@pytest.mark.parametrize("runner", [["-m", "mpi4py"], []], ids=["python -m mpi4py", "plain python"])
def test_an_exception_on_one_rank_ends_the_job_instead_of_hanging(runner, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(
        "import rustgrad as torch\n"
        "import rustgrad.distributed as dist\n"
        "dist.init_process_group('mpi')\n"
        "if dist.get_rank() == 1:\n"
        "    raise ValueError('rank one gives up')\n"
        "dist.all_reduce(torch.ones(3))  # rank 0 would wait here forever\n"
        "print('unreachable', flush=True)\n"
    )
    result = launch(2, *runner, str(script), timeout=30)
    assert result.returncode != 0
    assert "ValueError: rank one gives up" in result.stderr, result.stderr
    assert "unreachable" not in result.stdout
    assert "rustgrad.distributed: rank 1 of 2 raised an uncaught ValueError; aborting the job" in result.stderr
