"""The error contract: classes, the panic guard, failed calls that change nothing,
Ctrl-C during long runs, and anomaly detection."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from _child import child_env

import rustgrad
import rustgrad.static as tf
from rustgrad import autograd, errors
from rustgrad.autograd import Function


@pytest.fixture(autouse=True)
def _fresh_graph_and_anomaly_mode():
    tf.reset_default_graph()
    autograd.set_detect_anomaly(False)
    yield
    autograd.set_detect_anomaly(False)
    tf.reset_default_graph()


def assert_still_usable() -> None:
    a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = (a @ a).sum()
    loss.backward()
    assert loss.item() == 54.0
    assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]]
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, (None, 2))
        with tf.Session(graph=graph) as sess:
            assert sess.run(tf.reduce_sum(x * 2.0), {x: [[1.0, 2.0]]}) == 6.0


# ---------------------------------------------------------------- classes


def _bool_in_float_op():
    return rustgrad.tensor([True, False]) - rustgrad.tensor([True, True])


def _backward_twice():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    y.backward()


def _inplace_on_leaf():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    x.add_(1.0)


def _stale_saved_tensor():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    loss = y.sum()
    with rustgrad.no_grad():
        y.mul_(2.0)
    loss.backward()


def _nothing_requires_grad():
    rustgrad.tensor([1.0, 2.0]).sum().backward()


def _non_scalar_backward():
    (rustgrad.tensor([1.0, 2.0], requires_grad=True) * 2).backward()


def _bad_custom_backward_count():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    Two.apply(rustgrad.tensor([1.0], requires_grad=True)).sum().backward()


def _static_missing_feed():
    x = tf.placeholder(tf.float32, (None, 3))
    with tf.Session() as sess:
        sess.run(x * 2.0)


def _static_bad_feed_shape():
    x = tf.placeholder(tf.float32, (None, 3))
    with tf.Session() as sess:
        sess.run(x * 2.0, {x: np.ones((2, 4))})


def _static_uninitialised():
    v = tf.Variable(tf.zeros((2,)))
    with tf.Session() as sess:
        sess.run(v * 2.0)


def _static_closed_session():
    x = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    sess.run(x)


def _static_matmul_build():
    tf.matmul(tf.placeholder(tf.float32, (None, 3)), tf.placeholder(tf.float32, (4, 5)))


def _static_mixed_dtypes():
    tf.add(tf.placeholder(tf.float32, (2,)), tf.placeholder(tf.float64, (2,)))


def _static_runtime_shape_error():
    a = tf.placeholder(tf.float32, (None, None))
    b = tf.placeholder(tf.float32, (None, None))
    with tf.Session() as sess:
        sess.run(tf.matmul(a, b), {a: np.ones((2, 3)), b: np.ones((4, 5))})


class _NoBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x


class _SavesAnInt(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(3)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g


ERROR_CASES = [
    ("mm_shapes", lambda: rustgrad.ones(2, 3).mm(rustgrad.ones(4, 5)), errors.ShapeError, (RuntimeError, ValueError)),
    ("broadcast", lambda: rustgrad.ones(2, 3) + rustgrad.ones(2, 4), errors.ShapeError, (RuntimeError, ValueError)),
    ("reshape", lambda: rustgrad.ones(3, 4).reshape(5, 7), errors.ShapeError, (RuntimeError, ValueError)),
    ("item", lambda: rustgrad.ones(2, 3).item(), errors.ShapeError, (RuntimeError, ValueError)),
    ("negative_dim", lambda: rustgrad.zeros(-1, 3), errors.ShapeError, (RuntimeError, ValueError)),
    ("ragged", lambda: rustgrad.tensor([[1.0, 2.0], [3.0]]), errors.ShapeError, (RuntimeError, ValueError)),
    ("unknown_dtype", lambda: rustgrad.zeros(2, dtype="float17"), errors.DTypeError, (TypeError,)),
    ("bool_in_float_op", _bool_in_float_op, errors.DTypeError, (TypeError,)),
    ("index", lambda: rustgrad.ones(3)[5], errors.IndexOutOfRangeError, (IndexError,)),
    ("setitem_index", lambda: rustgrad.ones(3).__setitem__(7, 1.0), errors.IndexOutOfRangeError, (IndexError,)),
    ("cuda", lambda: rustgrad.zeros(2, device="cuda"), errors.DeviceError, (RuntimeError,)),
    ("backward_twice", _backward_twice, errors.GradientError, (RuntimeError,)),
    ("inplace_leaf", _inplace_on_leaf, errors.GradientError, (RuntimeError,)),
    ("stale_saved", _stale_saved_tensor, errors.GradientError, (RuntimeError,)),
    ("nothing_requires_grad", _nothing_requires_grad, errors.GradientError, (RuntimeError,)),
    ("non_scalar_backward", _non_scalar_backward, errors.GradientError, (RuntimeError,)),
    ("custom_backward_count", _bad_custom_backward_count, errors.GradientError, (RuntimeError,)),
    ("static_missing_feed", _static_missing_feed, errors.InvalidArgumentError, (ValueError,)),
    ("static_bad_feed_shape", _static_bad_feed_shape, errors.InvalidArgumentError, (ValueError,)),
    ("static_uninitialised", _static_uninitialised, errors.FailedPreconditionError, (RuntimeError,)),
    ("static_closed", _static_closed_session, errors.FailedPreconditionError, (RuntimeError,)),
    ("static_matmul_build", _static_matmul_build, errors.ShapeError, (ValueError,)),
    ("static_mixed_dtypes", _static_mixed_dtypes, errors.DTypeError, (TypeError,)),
    ("static_runtime_shape", _static_runtime_shape_error, errors.ShapeError, (ValueError,)),
    ("set_num_threads_zero", lambda: rustgrad.set_num_threads(0), errors.RustgradError, (ValueError,)),
    ("transpose_dim", lambda: rustgrad.ones(2, 3).transpose(0, 5), errors.IndexOutOfRangeError, (IndexError,)),
    ("where_condition", lambda: rustgrad.where(rustgrad.ones(2), rustgrad.ones(2), rustgrad.zeros(2)),
     errors.DTypeError, (TypeError,)),
    ("bool_requires_grad", lambda: rustgrad.ones(2, dtype=rustgrad.bool, requires_grad=True), errors.GradientError,
     (RuntimeError,)),
    # Raised by the Python layer; the contract covers them too.
    ("from_numpy_of_a_list", lambda: rustgrad.from_numpy([1.0, 2.0]), errors.RustgradError, (TypeError,)),
    ("function_without_backward", lambda: _NoBackward.apply(rustgrad.ones(2, requires_grad=True)),
     errors.RustgradError, (TypeError,)),
    ("save_for_backward_non_tensor", lambda: _SavesAnInt.apply(rustgrad.ones(2, requires_grad=True)),
     errors.RustgradError, (TypeError,)),
    ("len_of_0d", lambda: len(rustgrad.tensor(1.0)), errors.RustgradError, (TypeError,)),
    ("static_tensor_as_bool", lambda: bool(tf.constant(1.0)), errors.RustgradError, (TypeError,)),
]


@pytest.mark.parametrize("call, cls, builtins", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_every_error_is_a_rustgrad_error_and_the_right_builtin(call, cls, builtins):
    with pytest.raises(errors.RustgradError) as info:
        call()
    err = info.value
    assert isinstance(err, cls), type(err).__mro__
    for builtin in builtins:
        assert isinstance(err, builtin), (type(err).__mro__, builtin)
    assert str(err).strip(), "the message must say what went wrong"
    assert not isinstance(err, errors.InternalError), str(err)
    assert_still_usable()


def test_static_errors_module_exposes_the_same_classes():
    assert tf.errors.InvalidArgumentError is errors.InvalidArgumentError
    assert tf.errors.FailedPreconditionError is errors.FailedPreconditionError
    assert issubclass(tf.errors.OpError, errors.RustgradError)


# ---------------------------------------------------------------- the panic guard


def test_panic_becomes_internal_error():
    with pytest.raises(errors.InternalError) as info:
        rustgrad._rustgrad._panic_for_test("boom")
    err = info.value
    assert isinstance(err, RuntimeError)
    assert isinstance(err, errors.RustgradError)
    assert "boom" in str(err)
    assert "bug" in str(err).lower()
    assert_still_usable()


def test_panic_is_catchable_as_exception_and_repeatable():
    for i in range(20):
        try:
            rustgrad._rustgrad._panic_for_test(f"boom {i}")
        except Exception as err:  # noqa: BLE001 - the point: a plain `except Exception` catches it
            assert isinstance(err, errors.InternalError)
        else:
            raise AssertionError("no exception")
    assert_still_usable()


def test_panic_in_a_worker_thread_becomes_internal_error():
    caught: list[BaseException] = []

    def work():
        try:
            rustgrad._rustgrad._panic_for_test("boom in thread")
        except BaseException as err:  # noqa: BLE001
            caught.append(err)

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert not t.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], errors.InternalError), caught
    assert_still_usable()


# ---------------------------------------------------------------- a failed backward changes nothing


class BoomOnSecondCall(Function):
    """Identity whose backward raises the second time any instance's backward runs."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        BoomOnSecondCall.calls += 1
        if BoomOnSecondCall.calls == 2:
            raise ValueError("boom in backward")
        return g


def snapshot(leaves):
    return [None if t.grad is None else t.grad.detach().clone().numpy() for t in leaves]


def assert_grads_unchanged(leaves, before, grad_objects):
    for t, b, obj in zip(leaves, before, grad_objects):
        if b is None:
            assert t.grad is None
        else:
            np.testing.assert_array_equal(t.grad.numpy(), b)
            np.testing.assert_array_equal(obj.numpy(), b)  # the old handle was not written either


def test_backward_failing_in_a_custom_function_leaves_every_grad_as_before():
    BoomOnSecondCall.calls = 0
    x = rustgrad.randn(4, 3, dtype=rustgrad.float64)
    w1 = rustgrad.randn(3, 5, dtype=rustgrad.float64, requires_grad=True)
    w2 = rustgrad.randn(5, 2, dtype=rustgrad.float64, requires_grad=True)
    b2 = rustgrad.randn(2, dtype=rustgrad.float64, requires_grad=True)
    w2.grad = rustgrad.full((5, 2), 7.0, dtype=rustgrad.float64)  # pre-existing
    b2.grad = rustgrad.full((2,), -3.0, dtype=rustgrad.float64)
    leaves = [w1, w2, b2]
    before, objects = snapshot(leaves), [t.grad for t in leaves]

    h = BoomOnSecondCall.apply(x @ w1)
    out = BoomOnSecondCall.apply(h @ w2 + b2)  # reverse pass: this node (ok), w2/b2 grads, then h's node (boom)
    loss = (out * out).sum()
    with pytest.raises(ValueError, match="boom in backward"):
        loss.backward()
    assert BoomOnSecondCall.calls == 2
    assert_grads_unchanged(leaves, before, objects)

    # The process and autograd stay usable, and a later backward accumulates onto the old grads.
    BoomOnSecondCall.calls = 10
    h = BoomOnSecondCall.apply(x @ w1)
    loss = ((BoomOnSecondCall.apply(h @ w2 + b2)) ** 2).sum()
    loss.backward()
    expected_b2 = -3.0 + 2 * ((x @ w1) @ w2 + b2).detach().numpy().sum(0)
    np.testing.assert_allclose(b2.grad.numpy(), expected_b2, rtol=1e-12)


def test_backward_failing_on_a_stale_saved_tensor_deep_in_the_graph_leaves_grads_as_before():
    a = rustgrad.tensor([0.5, -1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    w = rustgrad.tensor([3.0, 4.0, 5.0], dtype=rustgrad.float64, requires_grad=True)
    c = rustgrad.tensor([1.0, 1.0, 1.0], dtype=rustgrad.float64, requires_grad=True)
    w.grad = rustgrad.tensor([10.0, 20.0, 30.0], dtype=rustgrad.float64)
    leaves = [a, w, c]
    before, objects = snapshot(leaves), [t.grad for t in leaves]
    h = a.exp()          # ExpBackward0 saves its output h ...
    h.add_(1.0)          # ... which is then modified in place (version 0 -> 1)
    loss = (h * w).sum() + (c * 2.0).sum()  # w and c get their grads before ExpBackward0 runs
    with pytest.raises(errors.GradientError, match="modified by an inplace operation"):
        loss.backward()
    assert_grads_unchanged(leaves, before, objects)


def test_autograd_grad_failing_midway_leaves_grads_as_before():
    BoomOnSecondCall.calls = 0
    x = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    x.grad = rustgrad.tensor([5.0, 6.0], dtype=rustgrad.float64)
    y = BoomOnSecondCall.apply(BoomOnSecondCall.apply(x * 3.0) * 2.0)
    with pytest.raises(ValueError, match="boom"):
        autograd.grad([y.sum()], [x])
    assert x.grad.tolist() == [5.0, 6.0]


# ---------------------------------------------------------------- a failed Session.run changes nothing


def test_session_run_failing_on_an_uninitialised_variable_changes_nothing():
    v = tf.Variable(np.array([1.0, 2.0], dtype=np.float32), name="v")
    u = tf.Variable(np.array([5.0, 5.0], dtype=np.float32), name="u")
    step = v.assign_add([1.0, 1.0])
    bad = v.assign(v * 10.0 + u)  # reads u, which this session never initialises
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(step)
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
            sess.run([step, bad])
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
        sess.run(step)  # still usable
        np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])


def test_session_run_failing_midway_on_a_bad_feed_changes_nothing():
    x = tf.placeholder(tf.float32, (None, None), name="x")
    v = tf.Variable(np.eye(3, dtype=np.float32), name="v")
    y = tf.matmul(x, v)  # x's second dim is only checked when the run reaches the matmul
    update = v.assign(v + tf.reduce_sum(y))
    counter = tf.Variable(0.0, name="counter")
    tick = counter.assign_add(1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(v)
        with pytest.raises(errors.ShapeError):
            sess.run([tick, update], {x: np.ones((2, 4))})
        with pytest.raises(errors.InvalidArgumentError):
            sess.run([tick, update], {x: np.ones((2, 3, 1))})
        with pytest.raises(errors.InvalidArgumentError):
            sess.run([tick, update], {x: [["a", "b", "c"]]})
        np.testing.assert_array_equal(sess.run(v), before)
        assert sess.run(counter) == 0.0
        sess.run([tick, update], {x: np.ones((1, 3))})
        np.testing.assert_array_equal(sess.run(v), before + 3.0)
        assert sess.run(counter) == 1.0


# ---------------------------------------------------------------- Ctrl-C


def _child_env() -> dict:
    return child_env(RUST_BACKTRACE="0")


def interrupt_child(source: str, delay: float = 0.2, timeout: float = 60.0) -> tuple[str, str, float]:
    """Runs source, waits for it to print STARTED, sends SIGINT after ``delay``; returns output and latency."""
    proc = subprocess.Popen([sys.executable, "-u", "-c", textwrap.dedent(source)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_child_env())
    try:
        deadline = time.monotonic() + timeout
        line = ""
        while "STARTED" not in line:
            line = proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                proc.kill()
                out, err = proc.communicate()
                raise AssertionError(f"child did not start: {line}{out}\n{err[-3000:]}")
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"child hung after SIGINT:\n{out}\n{err[-3000:]}") from None
        return out, err, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


BACKWARD_CHILD = """
import time
import rustgrad
x = rustgrad.ones(16, requires_grad=True)
z = x
for _ in range(600_000):
    z = z * 1.0000001
loss = z.sum()
print("STARTED", flush=True)
t0 = time.monotonic()
try:
    loss.backward()
except KeyboardInterrupt:
    print("INTERRUPTED after %.3f s" % (time.monotonic() - t0))
    print("GRAD", x.grad)
    a = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    (a * a).sum().backward()
    print("USABLE", a.grad.tolist())
else:
    print("FINISHED after %.3f s" % (time.monotonic() - t0))
"""


def test_ctrl_c_interrupts_a_long_backward_pass():
    out, err, latency = interrupt_child(BACKWARD_CHILD)
    assert "INTERRUPTED" in out, f"backward was not interrupted:\n{out}\n{err[-2000:]}"
    assert "GRAD None" in out, f"an interrupted backward must not write .grad:\n{out}"
    assert "USABLE [2.0, 4.0]" in out, out
    assert latency < 20, latency


SESSION_CHILD = """
import time
import numpy as np
import rustgrad.static as tf
w = tf.Variable(tf.random_normal((1024, 1024), seed=1) / 32.0)
x = tf.placeholder(tf.float32, (None, 1024))
h = x
for _ in range(400):
    h = tf.matmul(h, w)
total = tf.reduce_sum(h)
update = w.assign(w * 2.0)
with tf.Session() as sess:
    sess.run(w.initializer)
    before = sess.run(w)
    feed = {x: np.ones((1024, 1024), dtype=np.float32)}
    print("STARTED", flush=True)
    t0 = time.monotonic()
    try:
        sess.run([total, update], feed)
    except KeyboardInterrupt:
        print("INTERRUPTED after %.3f s" % (time.monotonic() - t0))
        print("UNCHANGED", bool(np.array_equal(sess.run(w), before)))
        print("USABLE", sess.run(tf.reduce_sum(x[:1, :2]), feed))
    else:
        print("FINISHED after %.3f s" % (time.monotonic() - t0))
"""


def test_ctrl_c_interrupts_a_long_session_run():
    out, err, latency = interrupt_child(SESSION_CHILD)
    assert "INTERRUPTED" in out, f"Session.run was not interrupted:\n{out}\n{err[-2000:]}"
    assert "UNCHANGED True" in out, f"an interrupted run must not store its assignments:\n{out}"
    assert "USABLE 2.0" in out, out
    assert latency < 20, latency


# ---------------------------------------------------------------- anomaly detection


def sqrt_case():
    x = rustgrad.tensor([-1.0, 4.0], dtype=rustgrad.float64, requires_grad=True)
    return x, x.sqrt().sum()


def log_first_case():
    # Both LogBackward0 (0/0) and SqrtBackward0 below it would give NaN; Log runs first.
    x = rustgrad.tensor([0.0, 1.0], dtype=rustgrad.float64, requires_grad=True)
    return x, (x.sqrt().log() * 0.0).sum()


def message_names(message: str, node: str, op: str) -> None:
    assert node in message, message
    assert op in message.replace(node, ""), f"the forward op {op!r} is not named: {message}"


@pytest.mark.parametrize("case, node, op", [(sqrt_case, "SqrtBackward0", "sqrt"),
                                            (log_first_case, "LogBackward0", "log")], ids=["sqrt", "log"])
def test_set_detect_anomaly_raises_at_the_first_nan_node(case, node, op):
    autograd.set_detect_anomaly(True)
    assert autograd.is_anomaly_enabled()
    x, loss = case()
    with pytest.raises(errors.GradientError) as info:
        loss.backward()
    message_names(str(info.value), node, op)
    if node == "LogBackward0":
        assert "SqrtBackward0" not in str(info.value)
    assert x.grad is None
    autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()
    x, loss = case()
    loss.backward()  # off again: NaN gradients are returned, no error
    assert np.isnan(x.grad.numpy()).any()


@pytest.mark.parametrize("case, node, op", [(sqrt_case, "SqrtBackward0", "sqrt"),
                                            (log_first_case, "LogBackward0", "log")], ids=["sqrt", "log"])
def test_detect_anomaly_context_manager(case, node, op):
    with autograd.detect_anomaly():
        assert autograd.is_anomaly_enabled()
        x, loss = case()
        with pytest.raises(errors.GradientError) as info:
            loss.backward()
        message_names(str(info.value), node, op)
        x2, loss2 = case()
        with pytest.raises(errors.GradientError):
            autograd.grad([loss2], [x2])
    assert not autograd.is_anomaly_enabled()
    x, loss = case()
    loss.backward()
    assert np.isnan(x.grad.numpy()).any()


def test_detect_anomaly_names_a_custom_function():
    class BadGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    with autograd.detect_anomaly():
        with pytest.raises(errors.GradientError, match="BadGrad"):
            BadGrad.apply(x).sum().backward()
    assert x.grad is None


def test_detect_anomaly_does_not_fire_on_finite_gradients():
    with autograd.detect_anomaly():
        x = rustgrad.tensor([1.0, 4.0], dtype=rustgrad.float64, requires_grad=True)
        x.sqrt().log().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (2 * np.array([1.0, 4.0])))
