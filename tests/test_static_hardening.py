"""Hardening of the static (TF1-shaped) API: gradients' grad_ys, failed calls,
use_locking, double feeds, the plan cache, and eager tensors mixed into graphs."""

from __future__ import annotations

import textwrap
import threading

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, DTypeError, RustgradError, ShapeError
from rustgrad.static._session import PLAN_CACHE_CAPACITY
from rustgrad.static.errors import InvalidArgumentError


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def _ops(graph: tf.Graph) -> list[tuple[str, str]]:
    return [(op.name, op.type) for op in graph.get_operations()]


# ---------------------------------------------------------------- grad_ys of gradients


def test_a_grad_ys_of_a_known_wrong_shape_raises_shape_error_when_the_graph_is_built():
    x = tf.placeholder(tf.float32, shape=(3,), name="x")
    y = tf.multiply(x, 2.0, name="y")
    message = r"Incompatible shapes: grad_ys\[0\] has shape \(2,\) but ys\[0\] \('y:0'\) has shape \(3,\)"
    with pytest.raises(ShapeError, match=message) as err:
        tf.gradients(y, [x], grad_ys=np.ones(2, np.float32))
    assert all(isinstance(err.value, cls) for cls in (RustgradError, RuntimeError, ValueError))
    # A grad_ys that would broadcast to y's shape is refused too, as in eager backward().
    with pytest.raises(ShapeError, match=r"has shape \(1, 3\) but ys\[0\] \('y:0'\) has shape \(3,\)"):
        tf.gradients(y, [x], grad_ys=np.ones((1, 3), np.float32))
    g = tf.placeholder(tf.float32, shape=(None, 4))
    with pytest.raises(ShapeError, match=r"has shape \(\?, 4\) but ys\[0\] \('y:0'\) has shape \(3,\)"):
        tf.gradients(y, [x], grad_ys=g)


def test_a_grad_ys_whose_shape_is_known_only_at_run_time_is_checked_when_the_session_runs():
    x = tf.placeholder(tf.float32, shape=(None,))
    g = tf.placeholder(tf.float32, shape=(None,))
    grad, = tf.gradients(x * x, [x], grad_ys=g)
    x_value = np.array([1.0, -2.0, 3.0], np.float32)
    g_value = np.array([0.5, 2.0, -1.0], np.float32)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {x: x_value, g: g_value}), 2 * x_value * g_value)
        with pytest.raises(ShapeError, match=r"grad_ys\[0\] has shape \(2,\) but ys\[0\] has shape \(3,\)"):
            sess.run(grad, {x: x_value, g: g_value[:2]})
        # One element would broadcast silently to a gradient of the wrong shape.
        with pytest.raises(ShapeError, match=r"grad_ys\[0\] has shape \(1,\) but ys\[0\] has shape \(3,\)"):
            sess.run(grad, {x: x_value, g: g_value[:1]})


def test_a_grad_ys_of_unknown_rank_is_checked_when_the_session_runs():
    x = tf.placeholder(tf.float64, shape=(2, 2))
    g = tf.placeholder(tf.float64)  # rank unknown until fed
    grad, = tf.gradients(tf.tanh(x), [x], grad_ys=g)
    x_value = np.array([[0.1, -0.2], [0.3, 0.4]])
    g_value = np.array([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {x: x_value, g: g_value}), (1 - np.tanh(x_value) ** 2) * g_value)
        with pytest.raises(ShapeError, match=r"grad_ys\[0\] has shape \(4,\) but ys\[0\] has shape \(2, 2\)"):
            sess.run(grad, {x: x_value, g: g_value.ravel()})


def test_grad_ys_of_several_ys_are_each_checked_against_their_own_y():
    x = tf.placeholder(tf.float32, shape=(3,))
    y0, y1 = x * 2.0, tf.reduce_sum(x)
    grad, = tf.gradients([y0, y1], [x], grad_ys=[np.array([1.0, 2.0, 3.0], np.float32), np.float32(10.0)])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {x: np.zeros(3)}), [12.0, 14.0, 16.0])
    with pytest.raises(ShapeError, match=r"grad_ys\[1\] has shape \(3,\) but ys\[1\]"):
        tf.gradients([y0, y1], [x], grad_ys=[None, np.ones(3, np.float32)])


def test_a_grad_ys_list_of_another_length_than_ys_raises_invalid_argument():
    x = tf.placeholder(tf.float32, shape=(3,))
    with pytest.raises(InvalidArgumentError, match="Passed 2 grad_ys for 1 ys"):
        tf.gradients([x * 2.0], [x], grad_ys=[None, None])


# ---------------------------------------------------------------- a failed gradients call changes nothing


class _FailingBackward(rustgrad.autograd.Function):
    """Its backward adds nodes, then raises: the failure comes after the graph grew."""

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, grad):
        grad * 3.0 + 1.0
        raise RuntimeError("backward failed on purpose")


class _WrongShapeBackward(rustgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, grad):
        return tf.reduce_sum(grad * 3.0)


def _failing_calls() -> dict:
    """Each builds a graph and returns a gradients call on it that fails, and the error it raises."""

    def wrong_grad_ys():
        x = tf.placeholder(tf.float32, shape=(3,))
        y = tf.exp(x) * 2.0
        return lambda: tf.gradients(y, [x], grad_ys=np.ones(4, np.float32)), ShapeError

    def non_tensor_in_xs():
        x = tf.placeholder(tf.float32, shape=(3,))
        y = tf.exp(x)
        return lambda: tf.gradients(y, [x, 3.0]), ArgumentTypeError

    def y_not_in_the_graph():
        x = tf.placeholder(tf.float32, shape=(3,))
        with tf.Graph().as_default():
            other = tf.placeholder(tf.float32, shape=(3,)) * 2.0
        y = tf.exp(x)
        return lambda: tf.gradients([y, other], [x]), InvalidArgumentError

    def stop_gradient_not_in_the_graph():
        x = tf.placeholder(tf.float32, shape=(3,))
        with tf.Graph().as_default():
            other = tf.placeholder(tf.float32, shape=(3,))
        y = tf.exp(x)
        return lambda: tf.gradients(y, [x], grad_ys=np.ones(3, np.float32), stop_gradients=[other]), \
            InvalidArgumentError

    def grad_ys_of_another_dtype():
        x = tf.placeholder(tf.float32, shape=(3,))
        g = tf.placeholder(tf.float64, shape=(3,))
        y0, y1 = tf.exp(x), x * 2.0
        return lambda: tf.gradients([y0, y1], [x], grad_ys=[np.ones(3, np.float32), g]), DTypeError

    def backward_raising_after_adding_nodes():
        x = tf.placeholder(tf.float32, shape=(3,))
        y = tf.reduce_sum(tf.exp(_FailingBackward.apply(tf.tanh(x))))
        return lambda: tf.gradients(y, [x]), RuntimeError

    def backward_returning_a_wrong_shape():
        x = tf.placeholder(tf.float32, shape=(3,))
        y = tf.reduce_sum(tf.exp(_WrongShapeBackward.apply(x)))
        return lambda: tf.gradients(y, [x]), RustgradError

    def optimizer_with_a_wrong_grad_loss():
        w = tf.Variable(np.ones(3, np.float32))
        loss = tf.reduce_sum(w * w)
        opt = tf.train.AdamOptimizer(0.1)
        return lambda: opt.minimize(loss, grad_loss=np.ones(2, np.float32)), ShapeError

    return {f.__name__: f for f in (wrong_grad_ys, non_tensor_in_xs, y_not_in_the_graph, stop_gradient_not_in_the_graph,
                                    grad_ys_of_another_dtype,
                                    backward_raising_after_adding_nodes, backward_returning_a_wrong_shape,
                                    optimizer_with_a_wrong_grad_loss)}


@pytest.mark.parametrize("failure", list(_failing_calls()))
def test_a_failed_gradients_call_leaves_the_graph_as_it_was(failure):
    graph = tf.Graph()
    with graph.as_default():
        call, error = _failing_calls()[failure]()
        before, variables = _ops(graph), tf.global_variables()
        with pytest.raises(error):
            call()
        assert _ops(graph) == before
        assert tf.global_variables() == variables
        # The names the failed call took are free again: later nodes are named as in a
        # graph where the call never happened.
        later = _probe_names()
    fresh = tf.Graph()
    with fresh.as_default():
        _failing_calls()[failure]()
        assert _probe_names() == later


def _probe_names() -> list[str]:
    """Adds a constant and a gradients call, and returns the names of what they added."""
    graph = tf.get_default_graph()
    start = len(graph.get_operations())
    px = tf.placeholder(tf.float32, shape=(3,))
    tf.gradients(tf.reduce_sum(tf.exp(px) * tf.constant(2.0)), [px], grad_ys=tf.constant(1.0))
    return [op.name for op in graph.get_operations()[start:]]


def test_a_grad_ys_that_would_broadcast_is_refused_and_one_of_the_shape_of_y_works():
    x = tf.placeholder(tf.float32, shape=(3,))
    y = x * x
    before = _ops(tf.get_default_graph())
    with pytest.raises(ShapeError, match=r"grad_ys\[0\] has shape \(1,\) but ys\[0\]"):
        tf.gradients(y, [x], grad_ys=np.ones(1, np.float32))
    assert _ops(tf.get_default_graph()) == before
    grad, = tf.gradients(y, [x], grad_ys=np.full(3, 2.0, np.float32))
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {x: [1.0, 2.0, 3.0]}), [4.0, 8.0, 12.0])


class _BackwardThatLetsAnotherThreadIn(rustgrad.autograd.Function):
    started = threading.Event()
    may_fail = threading.Event()

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, grad):
        grad * 2.0
        _BackwardThatLetsAnotherThreadIn.started.set()
        # The other thread runs meanwhile (this thread waits without the GIL).
        _BackwardThatLetsAnotherThreadIn.may_fail.wait(timeout=0.3)
        raise RuntimeError("backward failed on purpose")


def test_nodes_another_thread_adds_during_a_failed_gradients_call_are_kept():
    fn = _BackwardThatLetsAnotherThreadIn
    fn.started.clear()
    fn.may_fail.clear()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(2,))
        y = tf.reduce_sum(fn.apply(x))
    before = _ops(graph)
    added = []

    def other_thread():
        fn.started.wait(timeout=30)
        with graph.as_default():
            added.append(tf.constant([5.0, 6.0], name="from_other_thread") * 2.0)

    worker = threading.Thread(target=other_thread)
    worker.start()
    with graph.as_default(), pytest.raises(RuntimeError, match="on purpose"):
        tf.gradients(y, [x])
    worker.join(timeout=30)
    fn.may_fail.set()
    assert not worker.is_alive()
    product, = added
    assert _ops(graph) == before + [("from_other_thread", "Const"), (product.op.name, "Mul")]
    with tf.Session(graph=graph) as sess:
        np.testing.assert_array_equal(sess.run(product), [10.0, 12.0])


# ---------------------------------------------------------------- use_locking


def _slow_one(graph_size: int = 300_000) -> tf.Tensor:
    """1.0, computed slowly enough that concurrent runs overlap."""
    big = tf.constant(np.linspace(0.0, 1.0, graph_size, dtype=np.float32))
    return tf.reduce_sum(tf.tanh(big) * tf.exp(big)) * 0.0 + 1.0


def _run_from_threads(sess: tf.Session, fetch, threads: int = 4, runs: int = 100) -> None:
    errors = []

    def work():
        try:
            for _ in range(runs):
                sess.run(fetch)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors


@pytest.mark.parametrize("form", ["assign_add", "assign_sub", "assign"])
def test_use_locking_serialises_concurrent_updates_of_a_variable(form):
    v = tf.Variable(0.0)
    one = _slow_one()
    update = {
        "assign_add": lambda: v.assign_add(one, use_locking=True),
        "assign_sub": lambda: v.assign_sub(one, use_locking=True),
        "assign": lambda: v.assign(v + one, use_locking=True),
    }[form]()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _run_from_threads(sess, update.op)
        assert sess.run(v) == (-400.0 if form == "assign_sub" else 400.0)


@pytest.mark.parametrize("make_optimizer", [
    lambda: tf.train.GradientDescentOptimizer(0.01, use_locking=True),
    lambda: tf.train.MomentumOptimizer(0.01, 0.9, use_locking=True),
    lambda: tf.train.AdamOptimizer(0.01, use_locking=True),
], ids=["sgd", "momentum", "adam"])
def test_an_optimizer_with_use_locking_applies_every_step_of_concurrent_runs(make_optimizer):
    """Every run computes the same gradient, so serialised runs end where as many serial steps end."""

    def train(threads: int, runs: int) -> np.ndarray:
        graph = tf.Graph()
        with graph.as_default():
            w = tf.Variable(np.array([1.0, -2.0, 3.0], np.float32))
            loss = tf.reduce_sum(w * np.array([0.5, 1.0, -1.5], np.float32)) * _slow_one(100_000)
            train_op = make_optimizer().minimize(loss)
            init = tf.global_variables_initializer()
        with tf.Session(graph=graph) as sess:
            sess.run(init)
            _run_from_threads(sess, train_op, threads=threads, runs=runs)
            return sess.run(w)

    np.testing.assert_array_equal(train(threads=4, runs=40), train(threads=1, runs=160))


# ---------------------------------------------------------------- feeding a placeholder twice


def test_feeding_one_placeholder_under_two_keys_raises_invalid_argument():
    x = tf.placeholder(tf.float32, shape=(2,), name="x")
    y = x * 2.0
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match=r"placeholder 'x:0' is fed twice.*'x:0'") as err:
            sess.run(y, feed_dict={x: [1.0, 2.0], "x:0": [3.0, 4.0]})
        assert "Tensor 'x:0'" in str(err.value)
        with pytest.raises(InvalidArgumentError, match="fed twice"):
            sess.run(y, feed_dict={"x:0": [3.0, 4.0], x: [1.0, 2.0]})
        np.testing.assert_array_equal(sess.run(y, feed_dict={"x:0": [3.0, 4.0]}), [6.0, 8.0])


def test_the_session_core_refuses_a_feed_list_naming_a_placeholder_twice():
    x = tf.placeholder(tf.float32, shape=(2,), name="x")
    y = x * 2.0
    with tf.Session() as sess:
        values = [np.ones(2, np.float32), np.zeros(2, np.float32)]
        with pytest.raises(InvalidArgumentError, match="placeholder 'x:0' is fed twice"):
            sess._core.run([y._id], [x._id, x._id], values)


# ---------------------------------------------------------------- the plan cache


def test_a_session_keeps_at_most_plan_cache_capacity_plans():
    x = tf.placeholder(tf.float32, shape=(4,))
    nodes = [x * float(i) for i in range(PLAN_CACHE_CAPACITY + 40)]
    feed = {x: np.arange(4, dtype=np.float32)}
    with tf.Session() as sess:
        for i, node in enumerate(nodes):
            np.testing.assert_array_equal(sess.run(node, feed), np.arange(4) * float(i))
            assert sess._plan_cache_size() == min(i + 1, PLAN_CACHE_CAPACITY)
        # Plans dropped from the cache are compiled again, and give the same values.
        np.testing.assert_array_equal(sess.run(nodes[0], feed), [0.0, 0.0, 0.0, 0.0])
        np.testing.assert_array_equal(sess.run(nodes[1], feed), [0.0, 1.0, 2.0, 3.0])
        assert sess._plan_cache_size() == PLAN_CACHE_CAPACITY
    assert 16 <= PLAN_CACHE_CAPACITY <= 1024


def test_running_thousands_of_distinct_fetch_sets_does_not_grow_memory_linearly(run_python):
    code = textwrap.dedent("""
        import itertools
        import numpy as np
        import rustgrad.compat.v1 as tf

        def rss_mb():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096 / 1e6

        x = tf.placeholder(tf.float32, shape=(16000,))
        nodes = [x * float(i) + 1.0 for i in range(60)]
        pairs = list(itertools.combinations(nodes, 2))
        feed = {x: np.ones(16000, np.float32)}
        with tf.Session() as sess:
            for pair in pairs[:200]:
                sess.run(list(pair), feed)
            before = rss_mb()
            for pair in pairs[200:1700]:
                sess.run(list(pair), feed)
            print(rss_mb() - before, sess._plan_cache_size())
    """)
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    growth, cached = result.stdout.split()
    assert int(cached) == PLAN_CACHE_CAPACITY
    # Without a bound, 1,500 more plans (each keeping the buffers of its runs) add ~100 MB.
    assert float(growth) < 25.0, f"RSS grew by {growth} MB over 1,500 distinct fetch sets"


# ---------------------------------------------------------------- eager tensors mixed with graph tensors


_BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "lt": (lambda a, b: a < b, np.less),
    "le": (lambda a, b: a <= b, np.less_equal),
    "gt": (lambda a, b: a > b, np.greater),
    "ge": (lambda a, b: a >= b, np.greater_equal),
}


@pytest.mark.parametrize("op", list(_BINARY))
def test_an_eager_tensor_on_either_side_of_a_graph_tensor_becomes_a_constant(op):
    apply, reference = _BINARY[op]
    eager_value = np.array([1.0, -2.0, 4.0], np.float32)
    fed = np.array([2.0, 0.5, 4.0], np.float32)
    x = tf.placeholder(tf.float32, shape=(3,))
    left = apply(rustgrad.tensor(eager_value), x)
    right = apply(x, rustgrad.tensor(eager_value))
    assert isinstance(left, tf.Tensor) and isinstance(right, tf.Tensor)
    with tf.Session() as sess:
        left_value, right_value = sess.run([left, right], {x: fed})
    np.testing.assert_allclose(left_value, reference(eager_value, fed))
    np.testing.assert_allclose(right_value, reference(fed, eager_value))


def test_an_eager_matrix_on_either_side_of_a_graph_matmul_becomes_a_constant():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)
    x = tf.placeholder(tf.float32, shape=(2, 2))
    left, right = rustgrad.tensor(a) @ x, x @ rustgrad.tensor(a)
    assert isinstance(left, tf.Tensor) and isinstance(right, tf.Tensor)
    with tf.Session() as sess:
        left_value, right_value = sess.run([left, right], {x: b})
    np.testing.assert_allclose(left_value, a @ b)
    np.testing.assert_allclose(right_value, b @ a)


def test_an_eager_tensor_that_requires_grad_is_refused_by_a_graph_on_either_side():
    x = tf.placeholder(tf.float32, shape=(3,))
    w = rustgrad.ones(3, requires_grad=True)
    with pytest.raises(ArgumentTypeError, match="requires grad.*detach"):
        x + w
    with pytest.raises(ArgumentTypeError, match="requires grad.*detach"):
        w + x
    assert isinstance(w.detach() + x, tf.Tensor)


def test_an_eager_tensor_as_the_exponent_or_base_of_a_graph_tensor_is_a_constant_on_either_side():
    x = tf.placeholder(tf.float32, shape=(3,))
    power, base = x ** rustgrad.full((3,), 2.0), rustgrad.full((3,), 2.0) ** x
    with tf.Session() as sess:
        got_power, got_base = sess.run([power, base], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(got_power, [1.0, 4.0, 9.0])
    np.testing.assert_allclose(got_base, [2.0, 4.0, 8.0])
    with pytest.raises(ArgumentTypeError, match="requires grad.*detach"):
        x ** rustgrad.ones(3, requires_grad=True)
