"""A rank that dies ends the whole job, with a non-zero exit that says what happened, instead of a
hang. (A rank that raises: tests/test_distributed_mpi.py.) Launched as in tests/test_distributed_mpi.py."""

from __future__ import annotations

from test_distributed_mpi import launch, pytestmark  # noqa: F401 - the same skips


def rank_one_leaves(tmp_path, how: str):
    """Runs 2 ranks where rank 1 leaves by `how` while rank 0 waits in an all_reduce."""
    script = tmp_path / "leaves.py"
    script.write_text(
        "import os\n"
        "import rustgrad as torch\n"
        "import rustgrad.distributed as dist\n"
        "dist.init_process_group('mpi')\n"
        "if dist.get_rank() == 1:\n"
        f"    {how}\n"
        "dist.all_reduce(torch.ones(3))  # rank 0 would wait here forever\n"
        "print('unreachable', flush=True)\n"
    )
    result = launch(2, "-m", "mpi4py", str(script), timeout=10)  # a hang raises TimeoutExpired
    assert "unreachable" not in result.stdout
    return result


def test_a_rank_killed_by_a_signal_ends_the_job_within_ten_seconds(tmp_path):
    result = rank_one_leaves(tmp_path, "os.kill(os.getpid(), 9)")
    assert result.returncode != 0
    assert "signal 9" in result.stdout + result.stderr, result.stdout + result.stderr


def test_a_rank_that_exits_early_ends_the_job_with_its_exit_code(tmp_path):
    # os._exit skips every handler, so nothing can print a message; the launcher passes the code on.
    # On a loaded machine MPICH's launcher can notice the rank's closed connection before its exit
    # status, kill the waiting rank, and report that SIGKILL (9) instead (seen once in a full run).
    result = rank_one_leaves(tmp_path, "os._exit(3)")
    assert result.returncode in (3, 9), result.stdout + result.stderr
