"""Second derivatives in static graphs: ``tf.gradients`` of a ``tf.gradients``.

The derivative rules are shared with eager mode, so the backward-only ops they
emit (the reduction's spread, indexing's scatter, ...) need rules of their own.
Each case also checks "one answer, two modes": the eager Hessian from
``grad(..., create_graph=True)`` agrees to float64 rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad.autograd import grad

F64 = rustgrad.float64
RNG = np.random.default_rng(0)
X = RNG.uniform(-1.5, 1.5, size=4)
A = RNG.normal(size=(4, 4))


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def static_hessian(f, x0):
    """Rows of d²f/dx² built as gradients of each gradient element, run once."""
    x = tf.placeholder(tf.float64, shape=(x0.size,))
    (g,) = tf.gradients(f(x), x)
    rows = [tf.gradients(g[i], x)[0] for i in range(x0.size)]
    rows = [r if r is not None else tf.zeros_like(x) for r in rows]
    with tf.Session() as sess:
        return np.stack(sess.run(rows, feed_dict={x: x0}))


def eager_hessian(f, x0):
    x = rustgrad.tensor(x0, dtype=F64, requires_grad=True)
    (g,) = grad(f(x), x, create_graph=True)
    rows = []
    for i in range(x0.size):
        (row,) = grad(g[i], x, retain_graph=True, allow_unused=True)
        rows.append(np.zeros(x0.size) if row is None else np.asarray(row.detach()))
    return np.stack(rows)


def softmax_np(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_gradient_of_a_gradient_through_a_reduction_is_6x():
    """The case from the issue, which raised "no double backward through ExpandReducedBackward0"."""
    x = tf.placeholder(tf.float64, shape=(4,))
    (g,) = tf.gradients(tf.reduce_sum(x * x * x), x)
    (gg,) = tf.gradients(g, x)
    with tf.Session() as sess:
        out = sess.run(gg, feed_dict={x: X})
    np.testing.assert_allclose(out, 6 * X, rtol=1e-12)


def test_gradient_of_a_gradient_through_reduce_mean():
    x = tf.placeholder(tf.float64, shape=(2, 2))
    (g,) = tf.gradients(tf.reduce_mean(tf.reduce_sum(x * x * x, axis=1)), x)
    (gg,) = tf.gradients(g, x)
    with tf.Session() as sess:
        out = sess.run(gg, feed_dict={x: X.reshape(2, 2)})
    np.testing.assert_allclose(out, 6 * X.reshape(2, 2) / 2, rtol=1e-12)


CASES = {
    "cubes": (lambda x, m: (x * x * x).sum(), lambda x: np.diag(6 * x)),
    "quadratic_form": (
        lambda x, m: (m.matmul(x.reshape(4, 1)) * x.reshape(4, 1)).sum(),
        lambda x: A + A.T,
    ),
    "log_sum_exp": (
        lambda x, m: m.log(m.exp(x).sum()),
        lambda x: np.diag(softmax_np(x)) - np.outer(softmax_np(x), softmax_np(x)),
    ),
}


class Eager:
    """The few ops the cases use, spelled for eager tensors."""

    @staticmethod
    def matmul(a, b):
        return rustgrad.tensor(a, dtype=F64) @ b

    exp = staticmethod(rustgrad.exp)
    log = staticmethod(rustgrad.log)


class _Ops:
    """``m.matmul(x)`` multiplies by A; ``m.exp``/``m.log`` are the mode's ops."""

    def __init__(self, ops):
        self._ops = ops

    def matmul(self, x):
        return self._ops.matmul(A, x)

    def exp(self, x):
        return self._ops.exp(x)

    def log(self, x):
        return self._ops.log(x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_in_both_modes_matches_the_closed_form_and_each_other(name):
    f, closed = CASES[name]

    def eager_f(x):
        return f(x, _Ops(Eager))

    def static_f(x):
        return f(_StaticTensor(x), _StaticOps())._t

    eager = eager_hessian(eager_f, X)
    static = static_hessian(static_f, X)
    np.testing.assert_allclose(eager, closed(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(static, closed(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(static, eager, rtol=1e-13, atol=1e-14)


class _StaticTensor:
    """Wraps a graph tensor so the cases' method calls (`.sum()`, `.reshape()`) read as TF1's."""

    def __init__(self, t):
        self._t = t

    def __mul__(self, other):
        return _StaticTensor(self._t * _unwrap(other))

    def sum(self):
        return _StaticTensor(tf.reduce_sum(self._t))

    def reshape(self, *shape):
        return _StaticTensor(tf.reshape(self._t, shape))


def _unwrap(v):
    return v._t if isinstance(v, _StaticTensor) else v


class _StaticOps:
    def matmul(self, x):
        return _StaticTensor(tf.matmul(tf.constant(A, dtype=tf.float64), _unwrap(x)))

    def exp(self, x):
        return _StaticTensor(tf.exp(_unwrap(x)))

    def log(self, x):
        return _StaticTensor(tf.log(_unwrap(x)))


def test_static_third_derivative_of_sin_is_minus_cos():
    x = tf.placeholder(tf.float64, shape=(4,))
    (d1,) = tf.gradients(tf.reduce_sum(tf.sin(x)), x)
    (d2,) = tf.gradients(tf.reduce_sum(d1), x)
    (d3,) = tf.gradients(tf.reduce_sum(d2), x)
    with tf.Session() as sess:
        out = sess.run([d1, d2, d3], feed_dict={x: X})
    np.testing.assert_allclose(out[0], np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(out[1], -np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(out[2], -np.cos(X), rtol=1e-12)


def test_static_second_derivative_through_indexing_and_masks_agrees_with_eager():
    def eager_f(x):
        return (x[[0, 2, 2, 3]] ** 3).sum() + (x[x > 0] ** 3).sum() + (x[1:3] ** 3).sum()

    def static_f(x):
        picked = tf.gather(x, [0, 2, 2, 3])
        masked = tf.boolean_mask(x, x > 0)
        return tf.reduce_sum(picked**3) + tf.reduce_sum(masked**3) + tf.reduce_sum(x[1:3] ** 3)

    np.testing.assert_allclose(static_hessian(static_f, X), eager_hessian(eager_f, X), rtol=1e-12, atol=1e-14)


def test_static_second_derivatives_through_fused_backward_ops_agree_with_eager():
    """softmax's, softplus's and elu's gradients are fused ops; their rules are composites."""
    c = RNG.normal(size=4)
    F = rustgrad.nn.functional

    def eager_f(x):
        ct = rustgrad.tensor(c, dtype=F64)
        return (F.softmax(x, dim=0) * ct).sum() + (F.softplus(x) * x).sum() + (F.elu(x) * ct).sum()

    def static_f(x):
        ct = tf.constant(c, dtype=tf.float64)
        return (
            tf.reduce_sum(tf.nn.softmax(x) * ct)
            + tf.reduce_sum(tf.nn.softplus(x) * x)
            + tf.reduce_sum(tf.nn.elu(x) * ct)
        )

    np.testing.assert_allclose(static_hessian(static_f, X), eager_hessian(eager_f, X), rtol=1e-12, atol=1e-14)


def test_static_second_derivatives_through_layer_ops_agree_with_eager():
    """linear, gelu, layer_norm and cross_entropy: their gradients are fused ops."""
    rng = np.random.default_rng(5)
    data, targets = rng.normal(size=(4, 3)), np.array([1, 0, 1, 1])
    x0 = rng.normal(size=6)
    F = rustgrad.nn.functional

    def eager_f(x):
        t = rustgrad.tensor
        hidden = F.gelu(F.linear(t(data, dtype=F64), x.reshape(2, 3), t(np.zeros(2), dtype=F64)))
        normed = F.layer_norm(hidden * x[:2], (2,), t(np.ones(2), dtype=F64), t(np.zeros(2), dtype=F64))
        return F.cross_entropy(normed * 3.0, t(targets))

    def static_f(x):
        c = tf.constant
        hidden = tf.gelu(tf.linear(c(data, dtype=tf.float64), tf.reshape(x, (2, 3)), c(np.zeros(2), dtype=tf.float64)))
        normed = tf.layer_norm(hidden * x[:2], c(np.ones(2), dtype=tf.float64), c(np.zeros(2), dtype=tf.float64), (2,))
        return tf.cross_entropy(normed * 3.0, c(targets), c(np.zeros(0), dtype=tf.float64))

    np.testing.assert_allclose(static_hessian(static_f, x0), eager_hessian(eager_f, x0), rtol=1e-10, atol=1e-13)


def test_static_second_derivatives_through_nhwc_convolution_and_max_pooling_agree_with_eager():
    """TF's NHWC layout in the graph, torch's NCHW eagerly: the same function."""
    rng = np.random.default_rng(6)
    image = rng.normal(size=(1, 3, 4, 1))  # NHWC
    x0 = rng.normal(size=4)  # a 2x2 filter, one channel in and out
    F = rustgrad.nn.functional

    def eager_f(x):
        nchw = rustgrad.tensor(image, dtype=F64).permute(0, 3, 1, 2)
        conv = F.conv2d(nchw, x.reshape(2, 2, 1, 1).permute(3, 2, 0, 1))
        return (F.max_pool2d(conv * conv, (1, 2), stride=1) ** 2).sum()

    def static_f(x):
        conv = tf.nn.conv2d(tf.constant(image, dtype=tf.float64), tf.reshape(x, (2, 2, 1, 1)), 1, "VALID")
        return tf.reduce_sum(tf.nn.max_pool2d(conv * conv, (1, 2), 1, "VALID") ** 2)

    np.testing.assert_allclose(static_hessian(static_f, x0), eager_hessian(eager_f, x0), rtol=1e-10, atol=1e-13)


NN = rustgrad.nn.functional
X_ZERO = np.array([0.9, 0.0, -1.3, 1.1])  # a zero, for the products' exact rules
C4 = np.array([0.5, -1.0, 2.0, 1.5])


def _eager_cumprod(x, exclusive, reverse):
    return rustgrad._rustgrad.ops["cumprod"](x, 0, exclusive, reverse, False)


_ZERO_CASES = {
    "prod": (
        lambda x, t: (x.reshape(2, 2).prod(dim=1) * x[:2]).sum() + x.prod() + x.reshape(2, 2).prod(dim=(0, 1)),
        lambda x: tf.reduce_sum(tf.reduce_prod(tf.reshape(x, (2, 2)), axis=1) * x[:2])
        + tf.reduce_prod(x)
        + tf.reduce_prod(tf.reshape(x, (2, 2)), axis=[0, 1]),
    ),
    "cumprod": (
        lambda x, t: (x.cumprod(0) * t(C4)).sum() + (_eager_cumprod(x, True, True) * t(C4)).sum(),
        lambda x: tf.reduce_sum(tf.math.cumprod(x) * C4) + tf.reduce_sum(tf.math.cumprod(x, 0, True, True) * C4),
    ),
    "group_norm": (
        lambda x, t: (NN.group_norm(x.reshape(1, 4, 1) ** 2, 2, x, x * x) * t(C4).reshape(1, 4, 1)).sum(),
        lambda x: tf.reduce_sum(tf.group_norm(tf.reshape(x**2, (1, 4, 1)), x, x * x, 2) * C4.reshape(1, 4, 1)),
    ),
    "embedding_padding_idx": (
        lambda x, t: (NN.embedding(rustgrad.tensor([1, 0, 1]), x.reshape(2, 2), padding_idx=1) ** 3).sum(),
        lambda x: tf.reduce_sum(tf.embedding(tf.constant([1, 0, 1]), tf.reshape(x, (2, 2)), padding_idx=1) ** 3),
    ),
    "scatter_add_source": (
        lambda x, t: (t(A).scatter_add(0, rustgrad.tensor([[3, 0], [1, 3]]), x.reshape(2, 2) ** 3) ** 2).sum(),
        lambda x: tf.reduce_sum(
            tf.scatter_elements_add(tf.constant(A), tf.constant([[3, 0], [1, 3]]), tf.reshape(x**3, (2, 2)), 0) ** 2
        ),
    ),
    "class_weights": (
        lambda x, t: NN.cross_entropy(
            x.reshape(2, 2) * t(C4[:2]), rustgrad.tensor([1, 0]), weight=x[2:] ** 2, label_smoothing=0.1
        ),
        lambda x: tf.cross_entropy(
            tf.reshape(x, (2, 2)) * C4[:2], tf.constant([1, 0]), x[2:] ** 2, label_smoothing=0.1
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(_ZERO_CASES))
def test_static_second_derivatives_of_the_once_underivable_backward_ops_agree_with_eager(name):
    """prod, cumprod (exclusive and reversed too), group_norm, embedding with padding_idx, the
    scatter source and the class weights: one answer, two modes, at a point with a zero."""
    eager_f, static_f = _ZERO_CASES[name]

    def eager(x):
        return eager_f(x, lambda a: rustgrad.tensor(a, dtype=F64))

    static = static_hessian(static_f, X_ZERO)
    np.testing.assert_allclose(static, eager_hessian(eager, X_ZERO), rtol=1e-12, atol=1e-13)
    x = rustgrad.tensor(X_ZERO, dtype=F64, requires_grad=True)
    assert rustgrad.autograd.gradgradcheck(eager, (x,), eps=1e-6, atol=1e-5, rtol=1e-4)
