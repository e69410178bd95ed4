"""Memory: RSS stays flat over many training steps (eager and static), a custom Function's ctx
and saved tensors are freed with their graph, the tape is freed by backward unless
retain_graph=True, and allocation failure raises MemoryError with the process still usable."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest
from _child import child_env

import rustgrad
import rustgrad.static as tf
from rustgrad import errors
from rustgrad._demo import MyReLU  # the reference program's custom ReLU
from rustgrad.autograd import Function

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_MARGIN = 8 * MIB


def rss() -> int:
    """Resident memory in use: freed buffers that rustgrad keeps for reuse
    (rustgrad.memory_cached()) do not count, since the next tensor of their size takes them."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE - rustgrad.memory_cached()


@pytest.fixture
def no_gc():
    """Freeing must not depend on the cycle collector: turn it off for the test."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()


# ---------------------------------------------------------------- RSS stays flat


def test_rss_is_flat_over_10000_eager_steps():
    n, d_in, hidden, d_out = 16, 64, 32, 4
    rustgrad.manual_seed(0)
    x = rustgrad.randn(n, d_in)
    y = rustgrad.randn(n, d_out)
    w1 = rustgrad.randn(d_in, hidden, requires_grad=True)
    w2 = rustgrad.randn(hidden, d_out, requires_grad=True)
    learning_rate = 1e-6

    def step():
        nonlocal w1, w2
        y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with rustgrad.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
        return loss

    for _ in range(1000):  # warm-up: allocator pools, caches, interned objects
        step()
    start = rss()
    for _ in range(10_000):
        loss = step()
    grown = rss() - start
    assert np.isfinite(loss.item())
    assert grown <= RSS_MARGIN, f"RSS grew by {grown / MIB:.1f} MiB over 10,000 eager steps"


def test_rss_is_flat_over_10000_session_runs():
    n, d_in, hidden, d_out = 16, 64, 32, 4
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(None, d_in))
        y = tf.placeholder(tf.float32, shape=(None, d_out))
        w1 = tf.Variable(tf.random_normal((d_in, hidden), seed=1))
        w2 = tf.Variable(tf.random_normal((hidden, d_out), seed=2))
        y_pred = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = tf.reduce_sum((y - y_pred) ** 2.0)
        grad_w1, grad_w2 = tf.gradients(loss, [w1, w2])
        updates = tf.group(w1.assign(w1 - 1e-6 * grad_w1), w2.assign(w2 - 1e-6 * grad_w2))
        feed = {x: rng.standard_normal((n, d_in)), y: rng.standard_normal((n, d_out))}
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(1000):
                sess.run([loss, updates], feed_dict=feed)
            start = rss()
            for _ in range(10_000):
                value, _ = sess.run([loss, updates], feed_dict=feed)
            grown = rss() - start
    assert np.isfinite(value)
    assert grown <= RSS_MARGIN, f"RSS grew by {grown / MIB:.1f} MiB over 10,000 Session.run steps"


# ---------------------------------------------------------------- the tape and custom Functions are freed


def forward_with_refs():
    """A graph through MyReLU; returns (loss, leaf, weakref to ctx, weakrefs to its saved tensors)."""
    captured = {}

    class Spy(MyReLU):
        @staticmethod
        def forward(ctx, input):
            captured["ctx"] = ctx
            return MyReLU.forward(ctx, input)

    w = rustgrad.randn(8, 6, requires_grad=True)
    x = rustgrad.randn(5, 8)
    loss = Spy.apply(x @ w).sum()
    ctx = captured.pop("ctx")
    saved = [weakref.ref(t) for t in ctx._saved]
    return loss, w, weakref.ref(ctx), saved


def test_ctx_and_saved_tensors_are_freed_with_the_graph(no_gc):
    loss, w, ctx_ref, saved_refs = forward_with_refs()
    assert ctx_ref() is not None and all(r() is not None for r in saved_refs)
    del loss
    assert ctx_ref() is None, "the graph is gone but its custom Function's ctx is still alive"
    assert all(r() is None for r in saved_refs), "saved tensors outlive their graph"


def test_ctx_and_saved_tensors_are_freed_after_backward_and_drop(no_gc):
    loss, w, ctx_ref, saved_refs = forward_with_refs()
    loss.backward()
    assert w.grad is not None
    # backward without retain_graph frees the saved tensors while the graph is still referenced
    assert all(r() is None for r in saved_refs), "backward did not free the saved tensors"
    del loss
    assert ctx_ref() is None


def test_retain_graph_keeps_saved_tensors_until_the_last_backward(no_gc):
    loss, w, ctx_ref, saved_refs = forward_with_refs()
    loss.backward(retain_graph=True)
    assert all(r() is not None for r in saved_refs), "retain_graph=True must keep the saved tensors"
    first = w.grad.clone()
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * first.numpy(), rtol=1e-6)
    assert all(r() is None for r in saved_refs)
    with pytest.raises(errors.GradientError, match="second time"):
        loss.backward()
    del loss
    assert ctx_ref() is None


def test_graph_with_a_custom_function_in_a_cycle_free_chain_is_freed(no_gc):
    """Many steps with no backward at all: every ctx must go with its graph."""
    refs = []
    for _ in range(50):
        loss, w, ctx_ref, _ = forward_with_refs()
        refs.append(ctx_ref)
        del loss
    assert all(r() is None for r in refs)


class FailingBackward(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("failing backward")


def test_ctx_is_freed_after_a_failed_backward(no_gc):
    captured = {}

    class Spy(FailingBackward):
        @staticmethod
        def forward(ctx, x):
            captured["ctx"] = ctx
            return FailingBackward.forward(ctx, x)

    w = rustgrad.randn(4, requires_grad=True)
    loss = Spy.apply(w.exp()).sum()
    ctx_ref = weakref.ref(captured.pop("ctx"))
    try:
        loss.backward()
    except ValueError:
        pass
    else:
        raise AssertionError("backward did not fail")
    assert w.grad is None
    del loss
    assert ctx_ref() is None, "a failed backward leaked its graph (the custom Function's ctx is alive)"


def test_rss_is_flat_over_many_failed_backwards_and_failed_runs():
    x = rustgrad.randn(64, 64, requires_grad=True)
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.float32, (None, None))
        out = tf.matmul(p, tf.ones((64, 8)))
        with tf.Session(graph=graph) as sess:

            def fail_both():
                try:
                    FailingBackward.apply(x @ x).sum().backward()
                except ValueError:
                    pass
                try:
                    sess.run(out, {p: np.ones((64, 63), dtype=np.float32)})
                except errors.ShapeError:
                    pass

            for _ in range(300):
                fail_both()
            start = rss()
            for _ in range(3000):
                fail_both()
            grown = rss() - start
    assert x.grad is None
    assert grown <= RSS_MARGIN, f"RSS grew by {grown / MIB:.1f} MiB over 3,000 failed backwards and runs"


BIG = 25_000_000  # float32 elements: 100 MB


def test_backward_frees_saved_tensors_of_builtin_ops():
    # Buffers earlier tests left in the reuse pool would be evicted by these ones, and glibc
    # keeps some freed memory resident: with them gone, what is measured is this test's own.
    rustgrad.empty_cache()
    x = rustgrad.zeros(BIG, requires_grad=True)
    start = rss()
    h = x.exp()        # ExpBackward0 saves its output: 100 MB kept alive by the graph
    loss = h.sum()
    del h
    held = rss() - start
    assert held >= 80 * MIB, f"expected the saved output to be resident ({held / MIB:.0f} MiB)"
    loss.backward()    # frees the saved output (the graph itself is still referenced by loss)
    after = rss() - start
    # what is left: x.grad (100 MB); the saved output (another 100 MB) must be gone
    assert after <= held + 20 * MIB, f"RSS after backward: {after / MIB:.0f} MiB (held {held / MIB:.0f})"
    del x, loss  # the graph (which references x through its AccumulateGrad edge), x and x.grad
    assert rss() - start <= -80 * MIB, "x and its grad (allocated before `start`) were not freed with the graph"


def test_retain_graph_keeps_builtin_saved_tensors_and_a_later_backward_frees_them():
    x = rustgrad.zeros(BIG, requires_grad=True)
    base = rss()
    loss = x.exp().sum()
    loss.backward(retain_graph=True)
    with_grad = rss() - base   # saved output + x.grad
    assert with_grad >= 160 * MIB
    loss.backward()            # accumulates in place, then frees the saved output
    assert x.grad.numpy()[:3].tolist() == [2.0, 2.0, 2.0]
    assert rss() - base <= with_grad - 80 * MIB, "the last backward did not free the saved output"


def test_a_freed_large_buffer_is_reused_by_the_next_tensor_of_its_size():
    rustgrad.empty_cache()
    a = rustgrad.ones(4 * MIB)  # 16 MiB
    address = a.data_ptr()
    del a
    assert rustgrad.memory_cached() == 16 * MIB
    b = rustgrad.ones(4 * MIB)
    assert b.data_ptr() == address
    assert rustgrad.memory_cached() == 0
    c = rustgrad.ones(4 * MIB + 1)  # another size gets new memory
    assert c.data_ptr() != address
    del b, c
    rustgrad.empty_cache()
    assert rustgrad.memory_cached() == 0


def test_empty_cache_returns_the_kept_memory_to_the_system():
    rustgrad.empty_cache()
    with open("/proc/self/statm") as f:
        before = int(f.read().split()[1]) * PAGE
    x = rustgrad.ones(25 * MIB)  # 100 MiB, touched
    del x
    assert rustgrad.memory_cached() == 100 * MIB
    rustgrad.empty_cache()
    with open("/proc/self/statm") as f:
        after = int(f.read().split()[1]) * PAGE
    assert after <= before + RSS_MARGIN


def test_the_reuse_pool_is_bounded():
    rustgrad.empty_cache()
    # Twelve 64 MiB tensors of different sizes, freed together: the pool keeps at most 512 MiB.
    tensors = [rustgrad.ones(16 * MIB + i) for i in range(12)]
    del tensors
    assert 0 < rustgrad.memory_cached() <= 512 * MIB
    rustgrad.ones(200 * MIB // 4)  # larger than a quarter of the pool: freed, not kept
    assert rustgrad.memory_cached() <= 512 * MIB
    rustgrad.empty_cache()


# ---------------------------------------------------------------- allocation failure


OOM_CASES = {
    "zeros": "rustgrad.zeros(10**7, 10**7)",
    "randn": "rustgrad.randn(10**7, 10**7)",
    "full_f64": "rustgrad.full((10**7, 10**7), 1.5, dtype=rustgrad.float64)",
    "matmul_output": "rustgrad.ones(10**6, 1) @ rustgrad.ones(1, 10**6)",
    "broadcast_output": "rustgrad.ones(10**6, 1) + rustgrad.ones(1, 10**6)",
    "broadcast_compare": "rustgrad.ones(10**6, 1) < rustgrad.ones(1, 10**6)",
    "backward_grad": "(rustgrad.ones(10**6, 1, requires_grad=True) * rustgrad.ones(1, 10**6)).sum().backward()",
    "static_run": textwrap.dedent(
        """
        import rustgrad.static as tf
        a = tf.placeholder(tf.float32, (None, 1))
        b = tf.placeholder(tf.float32, (1, None))
        with tf.Session() as sess:
            sess.run(a * b, {a: np.ones((10**6, 1)), b: np.ones((1, 10**6))})
        """
    ),
}

OOM_CHILD = """
import numpy as np
import rustgrad
from rustgrad import errors
def case():
{body}
try:
    case()
except errors.OutOfMemoryError as e:
    assert isinstance(e, MemoryError), type(e).__mro__
    assert isinstance(e, errors.RustgradError)
    assert "allocate" in str(e), str(e)
else:
    raise SystemExit("no error raised")
a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
(a @ a).sum().backward()
assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]]
print("ok")
"""


def run_child(source: str) -> subprocess.CompletedProcess:
    env = child_env(RUST_BACKTRACE="0")
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("name", sorted(OOM_CASES))
def test_allocation_failure_raises_memory_error_and_the_process_survives(name):
    # In a child first: an abort on allocation failure must not take the test session down.
    body = textwrap.indent(OOM_CASES[name].strip(), "    ")
    proc = run_child(OOM_CHILD.format(body=body))
    detail = f"rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr[-2000:]}"
    assert proc.returncode == 0, detail
    assert proc.stdout.strip() == "ok", detail
    # The child survived, so the same failure in this process is safe to try.
    namespace = {"np": np, "rustgrad": rustgrad}
    with pytest.raises(errors.OutOfMemoryError) as info:
        exec(compile(OOM_CASES[name].strip(), name, "exec"), namespace)  # noqa: S102
    assert isinstance(info.value, MemoryError)
    a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (a @ a).sum().backward()
    assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]]
