"""The kernel threads' policy (docs/performance.md, "Threads"): `set_num_threads` sizes the
spin helpers too and bounds its argument, the spin after a job is a setting (`set_spin_us`,
`RUSTGRAD_SPIN_US`), and idle helpers park without waking up. No timings are asserted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import rustgrad
from rustgrad import errors

HAS_PROC_TASKS = Path("/proc/self/task").is_dir()
needs_proc = pytest.mark.skipif(not HAS_PROC_TASKS, reason="needs Linux's /proc/self/task")


@pytest.fixture(autouse=True)
def restore_thread_settings():
    threads, spin = rustgrad.get_num_threads(), rustgrad.get_spin_us()
    yield
    rustgrad.set_num_threads(threads)
    rustgrad.set_spin_us(spin)


def spin_helper_tasks() -> list[Path]:
    """This process's live threads named rustgrad-spin-*. A joined thread can stay listed in
    /proc for a moment after `pthread_join` returns (the kernel reaps it after clearing its
    tid), so tasks that are exiting (zombie or dead) are not counted."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            if (task / "comm").read_text().startswith("rustgrad-spin") and task_state(task) not in "ZX":
                found.append(task)
        except OSError:  # the thread exited meanwhile
            pass
    return found


def task_state(task: Path) -> str:
    """The one-letter State of /proc/<pid>/task/<tid>/status ('R', 'S', 'Z', ...)."""
    for line in (task / "status").read_text().splitlines():
        if line.startswith("State:"):
            return line.split()[1]
    return "?"


def settled_spin_helper_count(expected: int, timeout: float = 2.0) -> int:
    """How many spin helpers /proc lists, once it lists `expected` or `timeout` seconds
    passed: an exiting thread leaves /proc shortly after it was joined."""
    deadline = time.monotonic() + timeout
    while (count := len(spin_helper_tasks())) != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return count


def context_switches(task: Path) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line)
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def split_product() -> np.ndarray:
    """A float32 product large enough to be split over the threads (and the spin helpers)."""
    rng = np.random.default_rng(7)
    a = rustgrad.from_numpy(rng.standard_normal((256, 512)).astype(np.float32))
    b = rustgrad.from_numpy(rng.standard_normal((512, 384)).astype(np.float32))
    return (a @ b).numpy()


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "RUSTGRAD_SPIN_US"}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=environment, timeout=60
    )


# --- set_num_threads -----------------------------------------------------------------------


@pytest.mark.parametrize("threads", [0, -1, 1025])
def test_set_num_threads_rejects_counts_outside_1_to_1024(threads):
    before = rustgrad.get_num_threads()
    with pytest.raises(errors.InvalidArgumentError, match=rf"set_num_threads: .*between 1 and 1024, got {threads}"):
        rustgrad.set_num_threads(threads)
    assert rustgrad.get_num_threads() == before


def test_a_refused_thread_count_leaves_the_spin_helpers_alone():
    rustgrad.set_num_threads(3)
    with pytest.raises(ValueError, match="between 1 and 1024, got 1025"):
        rustgrad.set_num_threads(1025)
    assert rustgrad._rustgrad._spin_helper_count() == 2
    assert rustgrad.get_num_threads() == 3


def test_set_num_threads_rejects_non_integers():
    with pytest.raises(errors.ArgumentTypeError, match="set_num_threads: argument 'threads' must be an int, got float"):
        rustgrad.set_num_threads(2.0)


def test_get_num_threads_reports_what_set_num_threads_set():
    rustgrad.set_num_threads(3)
    assert rustgrad.get_num_threads() == 3
    assert "get_num_threads" in rustgrad.__all__ and "set_num_threads" in rustgrad.__all__


def test_one_and_two_threads_give_bitwise_equal_products():
    rustgrad.set_num_threads(1)
    alone = split_product()
    rustgrad.set_num_threads(2)
    split = split_product()
    np.testing.assert_array_equal(alone, split)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal((512, 384)).astype(np.float32)
    np.testing.assert_allclose(split, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)


@needs_proc
def test_spin_helpers_follow_set_num_threads():
    for threads in (3, 1, 2, 4, 2):
        rustgrad.set_num_threads(threads)
        assert settled_spin_helper_count(threads - 1) == threads - 1, f"after set_num_threads({threads})"
        assert rustgrad._rustgrad._spin_helper_count() == threads - 1
        split_product()  # and the pool works at that size
        assert settled_spin_helper_count(threads - 1) == threads - 1


@needs_proc
def test_one_thread_runs_products_without_any_helper():
    rustgrad.set_num_threads(1)
    split_product()
    assert spin_helper_tasks() == []


# --- the spin setting ----------------------------------------------------------------------


@pytest.mark.parametrize("us", [-1, 1_000_001, 10**30])
def test_set_spin_us_rejects_values_outside_0_to_1000000(us):
    before = rustgrad.get_spin_us()
    expected = rf"set_spin_us: .*between 0 and 1000000 microseconds, got {us}"
    with pytest.raises(errors.InvalidArgumentError, match=expected):
        rustgrad.set_spin_us(us)
    assert rustgrad.get_spin_us() == before


@pytest.mark.parametrize("us", [1.5, "300", None])
def test_set_spin_us_rejects_non_integers(us):
    with pytest.raises(errors.ArgumentTypeError, match="set_spin_us: argument 'us' must be an int"):
        rustgrad.set_spin_us(us)


def test_the_spin_setting_round_trips_and_defaults_to_300():
    assert run_python("import rustgrad; print(rustgrad.get_spin_us())").stdout.strip() == "300"
    for us in (0, 1, 300, 1_000_000):
        rustgrad.set_spin_us(us)
        assert rustgrad.get_spin_us() == us
    assert {"get_spin_us", "set_spin_us"} <= set(rustgrad.__all__)


def test_products_are_unchanged_with_no_spinning():
    rustgrad.set_num_threads(2)
    spinning = split_product()
    rustgrad.set_spin_us(0)
    for _ in range(3):
        np.testing.assert_array_equal(split_product(), spinning)


@pytest.mark.parametrize("value", ["0", "120", " 5000 ", "1000000"])
def test_rustgrad_spin_us_sets_the_spin_at_start_up(value):
    done = run_python("import rustgrad; print(rustgrad.get_spin_us())", RUSTGRAD_SPIN_US=value)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == value.strip()
    assert "Warning" not in done.stderr


@pytest.mark.parametrize("value", ["fast", "-5", "2000000", "2.5"])
def test_a_bad_rustgrad_spin_us_warns_once_and_keeps_the_default(value):
    code = """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import rustgrad
        print(rustgrad.get_spin_us())
        print(len(caught), caught[0].category.__name__)
        print(caught[0].message)
    """
    done = run_python(code, RUSTGRAD_SPIN_US=value)
    assert done.returncode == 0, done.stderr
    spin, count, message = done.stdout.splitlines()
    assert spin == "300"
    assert count == "1 RuntimeWarning"
    assert "RUSTGRAD_SPIN_US" in message and repr(value).replace("'", '"') in message
    assert "between 0 and 1000000" in message and "default of 300" in message


def test_an_empty_rustgrad_spin_us_means_the_default():
    done = run_python("import rustgrad; print(rustgrad.get_spin_us())", RUSTGRAD_SPIN_US="")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "300", "")


# --- idle helpers ----------------------------------------------------------------------------


@needs_proc
@pytest.mark.parametrize("spin_us", [0, 300])
def test_idle_spin_helpers_stay_parked(spin_us):
    rustgrad.set_num_threads(3)
    rustgrad.set_spin_us(spin_us)
    for _ in range(5):
        split_product()
    time.sleep(0.2)  # well past the spin window: the helpers have parked
    helpers = spin_helper_tasks()
    assert len(helpers) == 2
    before = [context_switches(t) for t in helpers]
    time.sleep(0.3)
    assert [context_switches(t) for t in helpers] == before, "an idle helper woke up"


@pytest.mark.skipif(not (hasattr(os, "fork") and HAS_PROC_TASKS), reason="needs os.fork and /proc")
def test_a_forked_child_starts_its_own_helpers_of_the_parents_count():
    code = """
        import os
        from pathlib import Path
        import numpy as np
        import rustgrad

        def helpers():
            return sum((t / "comm").read_text().startswith("rustgrad-spin") for t in Path("/proc/self/task").iterdir())

        # A pooling this large splits its planes over the spin helpers on every CPU; products
        # go to the gemm crate's own threads when AVX-512 is off (RUSTGRAD_DISABLE_AVX512).
        x = rustgrad.from_numpy(np.random.default_rng(0).standard_normal((1, 64, 64, 64)).astype(np.float32))
        rustgrad.set_num_threads(3)
        expected = rustgrad.nn.functional.max_pool2d(x, 2).numpy()
        pid = os.fork()
        if pid == 0:
            ok = helpers() == 0 and rustgrad.get_num_threads() == 3
            got = rustgrad.nn.functional.max_pool2d(x, 2).numpy()
            ok = ok and helpers() == 2 and np.array_equal(got, expected)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), helpers())
    """
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "2"]
