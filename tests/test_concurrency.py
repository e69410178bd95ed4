"""Threads: kernels release the GIL, eager training in threads is deterministic, one Session
serves several threads, and custom backwards run from worker threads. Every join has a
timeout, so a deadlock fails the test instead of hanging the run."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any, Callable

import numpy as np
import pytest
from _gil_probe import GilProbe, python_busy_loop

import rustgrad
import rustgrad.static as tf
from rustgrad._demo import MyReLU  # the reference program's custom ReLU

JOIN_TIMEOUT = 60.0


@pytest.fixture
def restore_threads():
    previous = rustgrad.get_num_threads()
    yield
    rustgrad.set_num_threads(previous)


def run_threads(targets: list[Callable[[], Any]], timeout: float = JOIN_TIMEOUT) -> list[Any]:
    """Runs each target in its own thread; returns their results, re-raising the first error."""
    results: list[Any] = [None] * len(targets)
    failures: list[BaseException] = []
    start = threading.Barrier(len(targets))

    def wrap(i: int, target: Callable[[], Any]) -> None:
        try:
            start.wait(timeout)
            results[i] = target()
        except BaseException as err:  # noqa: BLE001 - reported below
            failures.append(err)

    threads = [threading.Thread(target=wrap, args=(i, t), daemon=True) for i, t in enumerate(targets)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"threads still running after {timeout} s (deadlock?): {alive}"
    if failures:
        raise failures[0]
    return results


# ---------------------------------------------------------------- the GIL is released in kernels


# 63² = 3969 elements: below the 4096 from which a product releases the GIL (rust/python/tensor/mod.rs)
SMALL_MATMUL_SIDE = 63


def assert_the_probe_sees_a_held_gil(probe: GilProbe) -> None:
    """Negative controls: pure Python and a below-threshold product hold the GIL, and the counter stays put."""
    assert probe.count_during(python_busy_loop) == 0, "the counter moved during pure Python: the probe is broken"
    small = rustgrad.randn(SMALL_MATMUL_SIDE, SMALL_MATMUL_SIDE)
    assert probe.count_during(lambda: small @ small) == 0, "the counter moved during a small product that keeps the GIL"


def test_views_of_a_large_contiguous_tensor_keep_the_gil_and_a_copying_reshape_releases_it():
    """A view touches no element, so it keeps the GIL whatever the size (releasing it cost more than
    the view); a reshape that must copy a large strided tensor still lets other threads run."""
    big = rustgrad.ones(256, 256)  # 65536 elements: above the 2^14 from which kernels release the GIL
    strided = rustgrad.ones(1024, 1024).t()  # its reshape copies a million elements
    views = [lambda: big[5], lambda: big[1:3, ::2], lambda: big.t(), lambda: big.unsqueeze(0),
             lambda: big.reshape(-1), lambda: big.narrow(0, 1, 3), lambda: big.view(-1, 64)]
    with GilProbe() as probe:
        assert_the_probe_sees_a_held_gil(probe)
        # A first call may initialise what the parser keeps (interned names), which can release
        # the GIL once; the keys' tuples and slices start collections, whose finalizers of earlier
        # garbage may release it too. So: each view once first, then the collector off.
        [view() for view in views]
        gc.collect()
        gc.disable()
        try:
            held = probe.count_during(lambda: [view() for view in views for _ in range(300)])
        finally:
            gc.enable()
        copies = probe.releases_the_gil(lambda: strided.reshape(-1))
    assert held == 0, f"another thread ran {held} times during views that keep the GIL"
    assert copies[-1] > 0, f"no Python ran during any of {len(copies)} copying reshapes of a million elements"


def test_the_gil_probe_tells_a_held_gil_from_a_released_one():
    with GilProbe() as probe:
        assert_the_probe_sees_a_held_gil(probe)
        counts = probe.releases_the_gil(lambda: time.sleep(0.01))  # a blocking call releases the GIL
        assert counts[-1] > 0, f"the counter never moved while this thread slept: {counts}"


def _big_graph_backward():
    x = rustgrad.randn(1024, 1024, requires_grad=True)
    loss = (x @ x).sum()
    return lambda: loss.backward(retain_graph=True)  # the probe may call it more than once


def _big_session_run():
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.float32, (None, 1024))
        out = tf.reduce_sum(tf.matmul(tf.matmul(p, p), p))
        sess = tf.Session(graph=graph)
    feed = {p: np.ones((1024, 1024), dtype=np.float32)}
    sess.run(out, feed)  # compile the plan first
    return lambda: sess.run(out, feed)


@pytest.mark.parametrize("make_work", [
    lambda: (lambda a: lambda: a @ a)(rustgrad.randn(1024, 1024)),
    lambda: (lambda a: lambda: a.exp().tanh().sum())(rustgrad.randn(1000, 1000)),
    _big_graph_backward,
    _big_session_run,
    # Small inputs, a large output: a column plus a row, an outer product.
    lambda: (lambda c, r: lambda: c + r)(rustgrad.randn(4000, 1), rustgrad.randn(1, 4000)),
    lambda: (lambda c, r: lambda: c @ r)(rustgrad.randn(4000, 1), rustgrad.randn(1, 4000)),
], ids=["matmul", "elementwise_and_sum", "backward", "session_run", "broadcast_to_large", "outer_product"])
def test_other_python_threads_run_while_a_kernel_computes(make_work, restore_threads):
    """Independent of the number of cores and of the machine's load: the counter moves only while the GIL is free."""
    rustgrad.set_num_threads(1)
    work = make_work()
    with GilProbe() as probe:
        assert_the_probe_sees_a_held_gil(probe)
        counts = probe.releases_the_gil(work)
    assert counts[-1] > 0, f"no Python ran in the other thread during any of {len(counts)} calls: the GIL was held"


# ---------------------------------------------------------------- threaded eager training


def train(seed: int, steps: int = 20) -> tuple[list[bytes], bytes, bytes]:
    """The reference two-layer loop on data from ``seed``; returns loss bytes and final weights."""
    rng = np.random.default_rng(seed)
    n, d_in, hidden, d_out = 64, 256, 128, 10
    x = rustgrad.tensor(rng.standard_normal((n, d_in)).astype(np.float32))
    y = rustgrad.tensor(rng.standard_normal((n, d_out)).astype(np.float32))
    w1 = rustgrad.tensor(rng.standard_normal((d_in, hidden)).astype(np.float32), requires_grad=True)
    w2 = rustgrad.tensor(rng.standard_normal((hidden, d_out)).astype(np.float32), requires_grad=True)
    learning_rate = 1e-6
    losses = []
    for _ in range(steps):
        y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.detach().numpy().tobytes())
        loss.backward()
        with rustgrad.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return losses, w1.detach().numpy().tobytes(), w2.detach().numpy().tobytes()


def test_four_threads_training_match_sequential_runs_bitwise():
    seeds = [11, 22, 33, 44]
    sequential = [train(s) for s in seeds]
    threaded = run_threads([lambda s=s: train(s) for s in seeds])
    for seed, seq, thr in zip(seeds, sequential, threaded):
        assert thr[0] == seq[0], f"losses differ for seed {seed}"
        assert thr[1] == seq[1] and thr[2] == seq[2], f"weights differ for seed {seed}"
    assert len({r[1] for r in sequential}) == len(seeds)  # the four runs really are different


def test_grad_mode_is_per_thread():
    """no_grad in one thread must not stop another thread from recording."""
    inside = threading.Event()
    release = threading.Event()

    def hold_no_grad():
        with rustgrad.no_grad():
            inside.set()
            assert release.wait(JOIN_TIMEOUT)
            return rustgrad.is_grad_enabled()

    def record():
        assert inside.wait(JOIN_TIMEOUT)
        try:
            x = rustgrad.ones(3, requires_grad=True)
            y = (x * 2).sum()
            return rustgrad.is_grad_enabled(), y.requires_grad
        finally:
            release.set()

    held, (enabled, recorded) = run_threads([hold_no_grad, record])
    assert held is False
    assert enabled and recorded


# ---------------------------------------------------------------- one Session, many threads


def test_threads_share_one_session():
    graph = tf.Graph()
    rng = np.random.default_rng(5)
    w_value = rng.standard_normal((200, 100))
    with graph.as_default():
        x = tf.placeholder(tf.float64, (None, 200))
        w = tf.Variable(w_value)
        out = tf.nn.relu(tf.matmul(x, w))
        total = tf.reduce_sum(out * out)
        grad_w, = tf.gradients(total, [w])
        sess = tf.Session(graph=graph)
    sess.run(w.initializer)
    feeds = [rng.standard_normal((64 + 8 * i, 200)) for i in range(6)]

    def worker(feed: np.ndarray) -> int:
        hidden = np.maximum(feed @ w_value, 0)
        for _ in range(15):
            got_out, got_total, got_grad = sess.run([out, total, grad_w], {x: feed})
            np.testing.assert_allclose(got_out, hidden, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(got_total, np.sum(hidden ** 2), rtol=1e-10)
            np.testing.assert_allclose(got_grad, feed.T @ (2 * hidden), rtol=1e-9, atol=1e-9)
        return 15

    try:
        assert run_threads([lambda f=f: worker(f) for f in feeds]) == [15] * len(feeds)
    finally:
        sess.close()


def test_threads_share_one_session_with_custom_function_and_assigns():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, (None, 4))
        v = tf.Variable(np.ones((4, 4), dtype=np.float32))
        y = MyReLU.apply(tf.matmul(x, v))
        g, = tf.gradients(tf.reduce_sum(y), [x])
        counter = tf.Variable(0.0)
        bump = counter.assign_add(1.0)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())

            def worker(sign: float) -> None:
                feed = np.full((3, 4), sign, dtype=np.float32)
                for _ in range(50):
                    got_y, got_g, _ = sess.run([y, g, bump], {x: feed})
                    np.testing.assert_array_equal(got_y, np.maximum(feed @ np.ones((4, 4)), 0))
                    np.testing.assert_array_equal(got_g, np.full((3, 4), 4.0 if sign > 0 else 0.0))

            run_threads([lambda s=s: worker(s) for s in (1.0, -1.0, 2.0, -0.5)])
            assert 1.0 <= sess.run(counter) <= 200.0


# ---------------------------------------------------------------- custom backward in worker threads


def _custom_backward_loop(seed: int, n: int = 10) -> bytes:
    rng = np.random.default_rng(seed)
    x = rustgrad.tensor(rng.standard_normal((128, 128)), requires_grad=True)
    for _ in range(n):
        MyReLU.apply(x @ x).sum().backward()  # big enough that matmul releases the GIL
    return x.grad.numpy().tobytes()


def test_custom_function_backward_in_a_worker_thread():
    expected = _custom_backward_loop(3)
    result, = run_threads([lambda: _custom_backward_loop(3)])
    assert result == expected


def test_custom_function_backwards_in_several_threads_and_the_main_thread():
    expected = {s: _custom_backward_loop(s) for s in (1, 2, 3)}
    box: dict[int, bytes] = {}
    done = threading.Event()

    def workers():
        box.update(zip((1, 2), run_threads([lambda: _custom_backward_loop(1), lambda: _custom_backward_loop(2)])))
        done.set()

    t = threading.Thread(target=workers, daemon=True)
    t.start()
    main_result = _custom_backward_loop(3)  # the main thread is busy in backward at the same time
    t.join(JOIN_TIMEOUT)
    assert done.is_set(), "worker threads deadlocked"
    assert box == {1: expected[1], 2: expected[2]}
    assert main_result == expected[3]
