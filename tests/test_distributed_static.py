"""Static mode over MPI (DistributedOptimizer, broadcast_global_variables): each MPI test launches
``mpiexec -n N python -m mpi4py`` on a script of tests/distributed_scripts/ (one thread per rank),
which asserts on every rank and prints one line per rank."""

from __future__ import annotations

import importlib.util
import re

import pytest
from test_distributed_mpi import SCRIPTS, launch
from test_distributed_mpi import pytestmark as needs_mpi

import rustgrad.distributed as dist
import rustgrad.static as tf


def run_script(ranks: int, name: str, *args: str) -> str:
    result = launch(ranks, "-m", "mpi4py", str(SCRIPTS / name), *args, timeout=120)
    assert result.returncode == 0, f"{name} on {ranks} ranks failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def digests(out: str, ranks: int) -> set[str]:
    found = {m.group(1) for m in re.finditer(r"rank \d+: static ok via .*; digest ([0-9a-f]{64})", out)}
    assert len(re.findall(r"rank \d+: static ok", out)) == ranks, out
    return found


@needs_mpi[0]
@needs_mpi[1]
@pytest.mark.parametrize("ranks", [2, 3])
def test_static_k_ranks_equal_one_process_and_reruns_repeat_the_bits(ranks):
    first = digests(run_script(ranks, "static_train.py"), ranks)
    assert len(first) == 1, "the ranks ended with different weights"
    assert digests(run_script(ranks, "static_train.py"), ranks) == first, "a rerun gave other bits"


@needs_mpi[0]
@needs_mpi[1]
def test_static_collectives_call_mpi_from_rust_and_fall_back_to_mpi4py_with_one_warning():
    out = run_script(2, "static_train.py")
    assert all(f"rank {r}: static ok via MPI from Rust (" in out for r in range(2)), out
    fallback = run_script(2, "static_train.py", "fallback")
    assert all(f"rank {r}: static ok via mpi4py (Python fallback)" in fallback for r in range(2)), fallback
    assert digests(fallback, 2) == digests(out, 2), "the fallback summed in another order"


@needs_mpi[0]
@needs_mpi[1]
def test_static_ranks_with_different_gradient_shapes_or_dtypes_get_a_clear_error():
    out = run_script(2, "static_mismatch.py")
    assert all(f"rank {r}: mismatch ok" in out for r in range(2)), out


def test_distributed_optimizer_without_a_process_group_raises_distributed_error():
    assert not dist.is_initialized()
    with pytest.raises(dist.DistributedError, match=r"DistributedOptimizer: the default process group has not "
                       r"been initialized"):
        dist.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))
    with pytest.raises(dist.DistributedError, match=r"broadcast_global_variables: the default process group"):
        dist.broadcast_global_variables(0)


def test_distributed_optimizer_of_something_else_than_a_static_optimizer_raises_type_error():
    import rustgrad

    with pytest.raises(TypeError, match=r"DistributedOptimizer: expected a rustgrad.static.train optimizer .*got "
                       r"SGD; for eager mode use rustgrad.nn.parallel.DistributedDataParallel"):
        dist.DistributedOptimizer(rustgrad.optim.SGD([rustgrad.zeros(2, requires_grad=True)], lr=0.1))



@needs_mpi[0]
@needs_mpi[1]
def test_the_distributed_demo_trains_in_both_modes_and_only_rank_0_prints():
    result = launch(2, "-m", "rustgrad", "distributed", "--steps", "5", timeout=120)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    out = result.stdout
    for run in ("reference net, eager (all_reduce)", "reference net, static (DistributedOptimizer)"):
        assert out.count(f"{run}: loss ") == 1, out
    assert out.count("rustgrad 0.") == 1 and "2 ranks, 1 thread(s) each" in out, out
    assert len(re.findall(r"rank [01]: +\d+ samples/s, +[\d.]+ ms/step, allreduce +[\d.]+% of the step", out)) >= 4
    has_sklearn = importlib.util.find_spec("sklearn") is not None
    assert ("digits CNN, static (DistributedOptimizer): loss" in out) == has_sklearn, out


@needs_mpi[0]
@needs_mpi[1]
def test_a_rank_that_raises_ends_the_job_while_another_waits_in_a_static_allreduce(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(
        "import numpy as np\n"
        "import rustgrad.distributed as dist\n"
        "import rustgrad.static as tf\n"
        "dist.init_process_group('mpi')\n"
        "w = tf.Variable(np.ones(3))\n"
        "train = dist.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(tf.reduce_sum(w * w))\n"
        "with tf.Session() as sess:\n"
        "    sess.run(tf.global_variables_initializer())\n"
        "    if dist.get_rank() == 1:\n"
        "        raise ValueError('rank one gives up')\n"
        "    sess.run(train)  # rank 0 waits in the allreduce, inside Session.run\n"
        "print('unreachable', flush=True)\n"
    )
    result = launch(2, str(script), timeout=30)
    assert result.returncode != 0
    assert "ValueError: rank one gives up" in result.stderr, result.stderr
    assert "rustgrad.distributed: rank 1 of 2 raised an uncaught ValueError; aborting the job" in result.stderr
    assert "unreachable" not in result.stdout
