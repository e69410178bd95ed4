"""Forked children (os.fork and multiprocessing's "fork" start method) can use rustgrad after the
parent has used the thread pool: a pooled matmul, a backward pass and a Session.run, checked for
correct values, with timeouts so a hang fails the test."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

import rustgrad
import rustgrad.static as tf

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

CHILD_TIMEOUT = 60.0
N = 768  # big enough that matmul splits its work over the pool


def use_the_pool() -> None:
    """Parent-side work that starts the pool's threads."""
    rustgrad.set_num_threads(2)
    a = rustgrad.randn(N, N)
    (a @ a).sum().item()
    x = rustgrad.randn(N, N, requires_grad=True)
    (x @ x).sum().backward()


def child_work() -> str:
    """Everything a child checks; returns "ok" or raises."""
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((N, N))
    a = rustgrad.tensor(a_np)
    np.testing.assert_allclose((a @ a).numpy(), a_np @ a_np, rtol=1e-9, atol=1e-9)
    x = rustgrad.tensor(a_np, requires_grad=True)
    (x @ x).sum().backward()
    ones = np.ones((N, N))
    np.testing.assert_allclose(x.grad.numpy(), ones @ a_np.T + a_np.T @ ones, rtol=1e-9, atol=1e-8)
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.float64, (None, N))
        w = tf.Variable(a_np)
        y = tf.reduce_sum(tf.matmul(p, w))
        g, = tf.gradients(y, [w])
        with tf.Session(graph=graph) as sess:
            sess.run(w.initializer)
            got_y, got_g = sess.run([y, g], {p: a_np})
    np.testing.assert_allclose(got_y, np.sum(a_np @ a_np), rtol=1e-9)
    np.testing.assert_allclose(got_g, a_np.T @ ones, rtol=1e-9, atol=1e-8)
    return "ok"


def wait_for_child(pid: int, timeout: float = CHILD_TIMEOUT) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked child {pid} hung for {timeout} s")


def fork_and_run(target) -> int:
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 1
        try:
            code = 0 if target() == "ok" else 1
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return wait_for_child(pid)


@pytest.fixture
def restore_threads():
    previous = rustgrad.get_num_threads()
    yield
    rustgrad.set_num_threads(previous)


def test_os_fork_child_can_use_rustgrad_after_parent_used_the_pool(restore_threads):
    use_the_pool()
    assert fork_and_run(child_work) == 0
    use_the_pool()  # the parent's pool still works


def test_os_fork_child_of_a_child(restore_threads):
    use_the_pool()

    def grandchild():
        child_work()
        return "ok" if fork_and_run(child_work) == 0 else "grandchild failed"

    assert fork_and_run(grandchild) == 0


def test_os_fork_while_another_thread_runs_kernels(restore_threads):
    """Forking while the pool is busy (its locks may be held at that instant)."""
    use_the_pool()
    stop = threading.Event()
    a = rustgrad.randn(N, N)

    def busy():
        while not stop.is_set():
            (a @ a).sum().item()
            rustgrad.randn(64, 64).sum().item()

    t = threading.Thread(target=busy, daemon=True)
    t.start()
    try:
        codes = []
        for _ in range(4):
            time.sleep(0.03)
            codes.append(fork_and_run(child_work))
    finally:
        stop.set()
        t.join(CHILD_TIMEOUT)
    assert codes == [0] * len(codes)
    assert not t.is_alive()


def _mp_target(queue) -> None:
    try:
        queue.put(child_work())
    except BaseException as err:  # noqa: BLE001
        queue.put(f"error: {type(err).__name__}: {err}")


def test_multiprocessing_fork_children(restore_threads):
    use_the_pool()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_mp_target, args=(queue,), daemon=True) for _ in range(2)]
    for p in procs:
        p.start()
    results = []
    try:
        for _ in procs:
            results.append(queue.get(timeout=CHILD_TIMEOUT))
    finally:
        for p in procs:
            p.join(CHILD_TIMEOUT)
            if p.is_alive():
                p.kill()
                p.join()
    assert results == ["ok", "ok"]
    assert [p.exitcode for p in procs] == [0, 0]


def _mp_square(seed: int) -> float:
    x = rustgrad.tensor(np.random.default_rng(seed).standard_normal((N, N)), requires_grad=True)
    (x @ x).sum().backward()
    return float(x.grad.sum().item())


def test_multiprocessing_fork_pool_map(restore_threads):
    use_the_pool()
    expected = [_mp_square(s) for s in range(4)]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        got = pool.map_async(_mp_square, range(4)).get(timeout=CHILD_TIMEOUT)
    assert got == expected
