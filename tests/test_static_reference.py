"""The TF1 reference program runs on rustgrad.compat.v1, and the static two-layer net
trains exactly like the eager (PyTorch-shaped) one on the same data and weights."""

from __future__ import annotations

import math

import _reference
import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf

NAME = "two_layer_tf1.py"
SHARED = _reference.shared_path(NAME)
FALLBACK = _reference.fallback_path(NAME)
ITERATIONS = 50


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def patched_source() -> str:
    src = _reference.patched(NAME, "import tensorflow.compat.v1 as tf", "import rustgrad.compat.v1 as tf", ITERATIONS)
    assert "tensorflow" not in src
    return src


def test_fallback_copy_is_identical_to_shared_reference():
    if not SHARED.is_file():
        pytest.skip("shared reference not present; only the fallback copy is available")
    assert FALLBACK.read_bytes() == SHARED.read_bytes()


@pytest.fixture(scope="module")
def run(run_python):
    return run_python(patched_source(), timeout=300)


def test_reference_program_runs(run):
    assert run.returncode == 0, f"stderr:\n{run.stderr[-4000:]}"


def test_reference_program_loss_falls_and_is_finite(run):
    assert run.returncode == 0, f"stderr:\n{run.stderr[-4000:]}"
    lines = [line.strip() for line in run.stdout.splitlines() if line.strip()]
    assert len(lines) == ITERATIONS, run.stdout[:2000]
    losses = [float(line) for line in lines]  # each line is one loss value
    assert all(math.isfinite(v) for v in losses), losses
    assert losses[0] > 0
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])
    # Mostly monotone: plain gradient descent with a small step on this problem.
    decreasing = sum(b < a for a, b in zip(losses, losses[1:]))
    assert decreasing >= 0.9 * (ITERATIONS - 1), losses


# ---------------------------------------------------------------- static == eager

N, D_IN, H, D_OUT = 64, 1000, 100, 10
LEARNING_RATE = 1e-6
STEPS = 30


class MyReLU(rustgrad.autograd.Function):
    """Exactly as in the PyTorch reference program."""

    @staticmethod
    def forward(ctx, input):
        """ctx is the context object; it can stash information for backward."""
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_outputs):
        input, = ctx.saved_tensors
        grad_input = grad_outputs.clone()
        grad_input[input < 0] = 0
        return grad_input


@pytest.fixture(scope="module")
def data():
    rs = np.random.RandomState(0)
    x = rs.randn(N, D_IN)  # float64, as the reference feeds it
    y = rs.randn(N, D_OUT)
    w1 = rs.randn(D_IN, H).astype(np.float32)
    w2 = rs.randn(H, D_OUT).astype(np.float32)
    return x, y, w1, w2


def train_static(x_value, y_value, w1_init, w2_init, steps=STEPS):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(None, D_IN))
        y = tf.placeholder(tf.float32, shape=(None, D_OUT))
        w1 = tf.Variable(w1_init)
        w2 = tf.Variable(w2_init)
        h = tf.matmul(x, w1)
        h_relu = tf.maximum(h, tf.zeros(1))
        y_pred = tf.matmul(h_relu, w2)
        loss = tf.reduce_sum((y - y_pred) ** 2.0)
        grad_w1, grad_w2 = tf.gradients(loss, [w1, w2])
        new_w1 = w1.assign(w1 - LEARNING_RATE * grad_w1)
        new_w2 = w2.assign(w2 - LEARNING_RATE * grad_w2)
        losses = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                loss_value, _, _ = sess.run([loss, new_w1, new_w2],
                                            feed_dict={x: x_value, y: y_value})
                losses.append(loss_value)
            final = sess.run([w1, w2])
    assert loss.dtype == tf.float32
    return losses, final


def train_eager(x_value, y_value, w1_init, w2_init, steps=STEPS):
    torch = rustgrad
    x = torch.tensor(x_value.astype(np.float32))
    y = torch.tensor(y_value.astype(np.float32))
    w1 = torch.tensor(w1_init, requires_grad=True)
    w2 = torch.tensor(w2_init, requires_grad=True)
    assert w1.dtype == torch.float32
    losses = []
    for _ in range(steps):
        relu = MyReLU.apply
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= LEARNING_RATE * w1.grad
            w2 -= LEARNING_RATE * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return losses, [w1.detach().numpy(), w2.detach().numpy()]


@pytest.fixture(scope="module")
def both_runs(data):
    x, y, w1, w2 = data
    return train_static(x, y, w1, w2), train_eager(x, y, w1, w2)


def numpy_first_loss(x, y, w1, w2):
    x32, y32 = x.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64)
    h = np.maximum(x32 @ w1.astype(np.float64), 0.0)
    return float(((h @ w2.astype(np.float64) - y32) ** 2).sum())


def test_static_losses_are_numpy_float32_scalars(both_runs):
    (static_losses, _), _ = both_runs
    assert len(static_losses) == STEPS
    for v in static_losses:
        assert isinstance(v, np.float32), type(v)
        assert np.ndim(v) == 0


def test_first_loss_matches_between_static_eager_and_numpy(both_runs, data):
    (static_losses, _), (eager_losses, _) = both_runs
    expected = numpy_first_loss(*data)
    assert static_losses[0] == pytest.approx(eager_losses[0], rel=1e-6)
    assert static_losses[0] == pytest.approx(expected, rel=1e-5)
    assert eager_losses[0] == pytest.approx(expected, rel=1e-5)


def test_static_and_eager_loss_curves_agree_step_by_step(both_runs):
    (static_losses, _), (eager_losses, _) = both_runs
    static_losses = np.asarray(static_losses, dtype=np.float64)
    eager_losses = np.asarray(eager_losses, dtype=np.float64)
    assert np.all(np.isfinite(static_losses)) and np.all(np.isfinite(eager_losses))
    # The loss is actually being trained (otherwise agreement would prove little).
    assert static_losses[-1] < static_losses[0] / 5
    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-4, atol=0)


def test_static_and_eager_final_weights_agree(both_runs, data):
    (_, static_w), (_, eager_w) = both_runs
    _, _, w1_init, w2_init = data
    for s, e, init in zip(static_w, eager_w, (w1_init, w2_init)):
        assert s.dtype == np.float32 and e.dtype == np.float32
        # The weights moved ...
        assert np.abs(s - init).max() > 1e-4
        # ... and by the same amounts in both modes.
        np.testing.assert_allclose(s - init, e - init, rtol=1e-3, atol=1e-6)
