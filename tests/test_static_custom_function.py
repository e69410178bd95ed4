"""User ``rustgrad.autograd.Function``s applied to graph tensors.

``Function.apply`` on graph tensors records the forward as graph nodes and makes
``tf.gradients`` call the user's ``backward`` (on graph tensors) to build the
gradient nodes. Every case is compared with the same Function in eager mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad.autograd import Function
from rustgrad.errors import GradientError

F64 = rustgrad.float64


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


class MyReLU(Function):
    """Exactly as in the PyTorch reference program (uses ctx.save_for_backward)."""

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


class AttrReLU(Function):
    """MyReLU, but stashing the input as a ctx attribute instead of save_for_backward."""

    @staticmethod
    def forward(ctx, input):
        ctx.input = input
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_outputs):
        grad_input = grad_outputs.clone()
        grad_input[ctx.input < 0] = 0
        return grad_input


class TripleGrad(Function):
    """Identity forward; backward deliberately returns 3 * grad."""

    calls = 0

    @staticmethod
    def forward(ctx, input):
        return input * 1.0

    @staticmethod
    def backward(ctx, grad_output):
        TripleGrad.calls += 1
        return grad_output * 3.0


class ScaledMul(Function):
    """a * b * alpha, with alpha a Python float (a non-tensor argument)."""

    @staticmethod
    def forward(ctx, a, alpha, b):
        ctx.a, ctx.b, ctx.alpha = a, b, alpha
        ctx.seen_needs = ctx.needs_input_grad
        return a * b * alpha

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.b * ctx.alpha, None, grad * ctx.a * ctx.alpha


class SumDiff(Function):
    """Two outputs: (a + b, a - b)."""

    @staticmethod
    def forward(ctx, a, b):
        return a + b, a - b

    @staticmethod
    def backward(ctx, g_sum, g_diff):
        return g_sum + g_diff, g_sum - g_diff


X = np.array([[-1.5, 2.0, 0.5], [3.0, -0.25, -4.0]])
W = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def graph_value_and_grads(fn, arrays, w, n_out=1):
    """fn(*placeholders) (one output or a tuple); grads of sum_i sum(out_i * w_i)."""
    ws = w if isinstance(w, list) else [w]
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.float64, shape=a.shape) for a in arrays]
        out = fn(*phs)
        outs = list(out) if isinstance(out, tuple) else [out]
        assert len(outs) == n_out
        for o in outs:
            assert isinstance(o, tf.Tensor)
        loss = sum(
            tf.reduce_sum(o * tf.constant(wi, dtype=tf.float64)) for o, wi in zip(outs, ws))
        grads = tf.gradients(loss, phs)
        fetch = [g for g in grads if g is not None]
        with tf.Session() as sess:
            values, got = sess.run([outs, fetch], dict(zip(phs, arrays)))
    it = iter(got)
    return values, [None if g is None else next(it) for g in grads]


def eager_value_and_grads(fn, arrays, w):
    ws = w if isinstance(w, list) else [w]
    leaves = [rustgrad.tensor(a, dtype=F64, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    outs = list(out) if isinstance(out, tuple) else [out]
    loss = None
    for o, wi in zip(outs, ws):
        term = (o * rustgrad.tensor(wi, dtype=F64)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    return [o.detach().numpy() for o in outs], [None if t.grad is None else t.grad.numpy() for t in leaves]


# ---------------------------------------------------------------- MyReLU


@pytest.mark.parametrize("relu", [MyReLU, AttrReLU], ids=["save_for_backward", "ctx_attribute"])
def test_relu_function_forward_and_gradient(relu):
    (value,), (g,) = graph_value_and_grads(relu.apply, [X], W)
    np.testing.assert_array_equal(value, np.maximum(X, 0.0))
    np.testing.assert_array_equal(g, np.where(X < 0, 0.0, W))
    (e_value,), (e_g,) = eager_value_and_grads(relu.apply, [X], W)
    np.testing.assert_array_equal(value, e_value)
    np.testing.assert_array_equal(g, e_g)


@pytest.mark.parametrize("relu", [MyReLU, AttrReLU], ids=["save_for_backward", "ctx_attribute"])
def test_relu_function_in_two_layer_graph_matches_eager(relu):
    rs = np.random.RandomState(3)
    x, w1, w2 = rs.randn(5, 4), rs.randn(4, 6), rs.randn(6, 2)
    y = rs.randn(5, 2)

    def static(xx, a, b):
        return tf.reduce_sum((tf.matmul(relu.apply(tf.matmul(xx, a)), b) - y) ** 2.0)

    def eager(xx, a, b):
        return (relu.apply(xx.mm(a)).mm(b) - rustgrad.tensor(y, dtype=F64)).pow(2).sum()

    (value,), grads = graph_value_and_grads(static, [x, w1, w2], np.array(1.0))
    (e_value,), e_grads = eager_value_and_grads(eager, [x, w1, w2], np.array(1.0))
    np.testing.assert_allclose(value, e_value, rtol=1e-12)
    for g, e in zip(grads, e_grads):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    # And the same as the built-in relu / maximum in the graph.
    (_,), builtin = graph_value_and_grads(
        lambda xx, a, b: tf.reduce_sum((tf.matmul(tf.maximum(tf.matmul(xx, a), 0.0), b) - y) ** 2.0),
        [x, w1, w2], np.array(1.0))
    for g, b in zip(grads, builtin):
        np.testing.assert_allclose(g, b, rtol=1e-10, atol=1e-12)


def test_custom_function_output_metadata():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    y = AttrReLU.apply(x)
    assert isinstance(y, tf.Tensor)
    assert y.dtype == tf.float32
    assert y.shape.as_list() == [None, 3]
    assert y.graph is x.graph


# ---------------------------------------------------------------- the user's backward is used


def test_gradients_use_the_users_backward():
    TripleGrad.calls = 0
    (value,), (g,) = graph_value_and_grads(TripleGrad.apply, [X], W)
    np.testing.assert_array_equal(value, X)
    np.testing.assert_array_equal(g, 3.0 * W)  # not W: the user's (wrong on purpose) backward ran
    assert TripleGrad.calls == 1
    (_,), (e_g,) = eager_value_and_grads(TripleGrad.apply, [X], W)
    np.testing.assert_array_equal(g, e_g)


def test_users_backward_runs_at_gradients_time_not_per_run():
    TripleGrad.calls = 0
    x = tf.placeholder(tf.float64, shape=(2,))
    y = TripleGrad.apply(x)
    assert TripleGrad.calls == 0
    (g,) = tf.gradients(tf.reduce_sum(y * y), [x])
    assert TripleGrad.calls == 1
    with tf.Session() as sess:
        for _ in range(3):
            np.testing.assert_allclose(sess.run(g, {x: [1.0, 2.0]}), [6.0, 12.0])
    assert TripleGrad.calls == 1


def test_custom_function_composed_twice_multiplies_gradients():
    (value,), (g,) = graph_value_and_grads(lambda t: TripleGrad.apply(TripleGrad.apply(t) * 2.0),
                                           [X], W)
    np.testing.assert_array_equal(value, 2.0 * X)
    np.testing.assert_array_equal(g, 18.0 * W)


# ---------------------------------------------------------------- several inputs, non-tensor args


def test_two_tensor_inputs_and_a_python_float():
    a = np.array([[1.0, -2.0], [0.5, 3.0]])
    b = np.array([[4.0, 1.5], [-1.0, 2.0]])
    w = np.array([[1.0, 2.0], [3.0, 4.0]])

    def fn(x, y):
        return ScaledMul.apply(x, 2.5, y)

    (value,), (ga, gb) = graph_value_and_grads(fn, [a, b], w)
    np.testing.assert_allclose(value, a * b * 2.5)
    np.testing.assert_allclose(ga, w * b * 2.5)
    np.testing.assert_allclose(gb, w * a * 2.5)
    (e_value,), (e_ga, e_gb) = eager_value_and_grads(fn, [a, b], w)
    np.testing.assert_allclose(value, e_value)
    np.testing.assert_allclose(ga, e_ga)
    np.testing.assert_allclose(gb, e_gb)


def test_needs_input_grad_on_graph_tensors():
    a = tf.placeholder(tf.float64, shape=(2,))
    b = tf.placeholder(tf.float64, shape=(2,))
    ctx_holder = {}

    class Spy(Function):
        @staticmethod
        def forward(ctx, x, alpha, y):
            ctx_holder["needs"] = ctx.needs_input_grad
            return x * y * alpha

        @staticmethod
        def backward(ctx, grad):
            return grad, None, grad

    Spy.apply(a, 1.0, b)
    assert ctx_holder["needs"] == (True, False, True)


def test_gradient_only_for_one_of_two_inputs():
    a = np.array([1.0, 2.0])
    b = np.array([3.0, 4.0])
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, shape=(2,))
        y = tf.constant(b, dtype=tf.float64)
        out = ScaledMul.apply(x, 2.0, y)
        (g,) = tf.gradients(tf.reduce_sum(out), [x])
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(g, {x: a}), b * 2.0)


# ---------------------------------------------------------------- two outputs


def test_two_outputs_both_used():
    a = np.array([1.0, -2.0, 3.0])
    b = np.array([0.5, 4.0, -1.0])
    w1 = np.array([1.0, 2.0, 3.0])
    w2 = np.array([10.0, 20.0, 30.0])
    (s, d), (ga, gb) = graph_value_and_grads(SumDiff.apply, [a, b], [w1, w2], n_out=2)
    np.testing.assert_allclose(s, a + b)
    np.testing.assert_allclose(d, a - b)
    np.testing.assert_allclose(ga, w1 + w2)
    np.testing.assert_allclose(gb, w1 - w2)
    (es, ed), (ega, egb) = eager_value_and_grads(SumDiff.apply, [a, b], [w1, w2])
    np.testing.assert_allclose(s, es)
    np.testing.assert_allclose(d, ed)
    np.testing.assert_allclose(ga, ega)
    np.testing.assert_allclose(gb, egb)


@pytest.mark.parametrize("which", [0, 1])
def test_two_outputs_only_one_used(which):
    a = np.array([1.0, -2.0, 3.0])
    b = np.array([0.5, 4.0, -1.0])
    w = np.array([1.0, 2.0, 3.0])

    def fn(x, y):
        return SumDiff.apply(x, y)[which]

    (value,), (ga, gb) = graph_value_and_grads(fn, [a, b], w)
    np.testing.assert_allclose(value, a + b if which == 0 else a - b)
    np.testing.assert_allclose(ga, w)
    np.testing.assert_allclose(gb, w if which == 0 else -w)
    (_,), (ega, egb) = eager_value_and_grads(fn, [a, b], w)
    np.testing.assert_allclose(ga, ega)
    np.testing.assert_allclose(gb, egb)


def test_two_outputs_fetched_together_in_one_run():
    x = tf.placeholder(tf.float32, shape=(2,))
    y = tf.placeholder(tf.float32, shape=(2,))
    s, d = SumDiff.apply(x, y)
    assert s.name != d.name
    with tf.Session() as sess:
        sv, dv = sess.run([s, d], {x: [1.0, 2.0], y: [3.0, 5.0]})
    np.testing.assert_array_equal(sv, [4.0, 7.0])
    np.testing.assert_array_equal(dv, [-2.0, -3.0])


# ---------------------------------------------------------------- misuse


def test_backward_with_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = tf.placeholder(tf.float64, shape=(2,))
    y = tf.placeholder(tf.float64, shape=(2,))
    out = Bad.apply(x, y)
    with pytest.raises(GradientError, match="incorrect number of gradients"):
        tf.gradients(tf.reduce_sum(out), [x, y])
    # The graph is still usable afterwards.
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out, {x: [1.0, 2.0], y: [3.0, 4.0]}), [3.0, 8.0])


def test_backward_with_wrong_gradient_shape():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            return tf.reduce_sum(grad, axis=0)

    x = tf.placeholder(tf.float64, shape=(2, 3))
    out = BadShape.apply(x)
    with pytest.raises(GradientError, match="invalid gradient"):
        tf.gradients(tf.reduce_sum(out), [x])


def test_user_exception_in_backward_propagates_unchanged():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            raise KeyError("boom from backward")

    x = tf.placeholder(tf.float64, shape=(2,))
    out = Boom.apply(x)
    with pytest.raises(KeyError, match="boom from backward"):
        tf.gradients(tf.reduce_sum(out), [x])
