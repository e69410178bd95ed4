"""``tf.hessians``: closed forms, TF 1.15's shapes, and the same answer as eager's ``hessian``."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad.autograd.functional import hessian

RNG = np.random.default_rng(11)


def run_hessian(build, x_value: np.ndarray) -> np.ndarray:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, list(x_value.shape))
        (h,) = tf.hessians(build(x), x)
        with tf.Session() as sess:
            return sess.run(h, {x: x_value})


def test_elementwise_hessian_is_block_diagonal_with_tf_shape():
    x = RNG.standard_normal((2, 3))
    got = run_hessian(lambda t: tf.exp(t) * t, x)
    assert got.shape == (2, 3, 2, 3)
    want = np.zeros((6, 6))
    np.fill_diagonal(want, (np.exp(x) * (2 + x)).reshape(-1))
    np.testing.assert_allclose(got.reshape(6, 6), want, rtol=1e-12, atol=1e-15)


def test_hessian_of_cubes_through_a_reduction():
    x = RNG.standard_normal(4)
    got = run_hessian(lambda t: tf.reduce_sum(t * t * t), x)
    np.testing.assert_allclose(got, np.diag(6 * x), rtol=1e-12, atol=1e-15)


def test_hessian_of_a_quadratic_form():
    a = RNG.standard_normal((3, 3))

    def quadratic(t):
        column = tf.reshape(t, [3, 1])
        return tf.reduce_sum(column * tf.matmul(tf.constant(a), column))

    got = run_hessian(quadratic, RNG.standard_normal(3))
    np.testing.assert_allclose(got, a + a.T, rtol=1e-12, atol=1e-14)


def test_hessian_of_log_sum_exp():
    x = RNG.standard_normal(5)
    got = run_hessian(lambda t: tf.log(tf.reduce_sum(tf.exp(t))), x)
    p = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(got, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-14)


CASES = {
    "sin_times_square": (lambda t: tf.reduce_sum(tf.sin(t) * t * t), lambda t: (t.sin() * t * t).sum()),
    "softplus_mean": (lambda t: tf.reduce_mean(tf.nn.softplus(t * 2.0)),
                      lambda t: rustgrad.nn.functional.softplus(t * 2.0).mean()),
    "tanh_dot": (lambda t: tf.reduce_sum(tf.tanh(t) * tf.tanh(t[::-1])),
                 lambda t: (t.tanh() * t.flip(0).tanh()).sum()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_static_and_eager_hessians_agree(case: str):
    static_fn, eager_fn = CASES[case]
    x = RNG.standard_normal(4)
    static = run_hessian(static_fn, x)
    eager = np.asarray(hessian(eager_fn, rustgrad.tensor(x)))
    np.testing.assert_allclose(static, eager, rtol=1e-10, atol=1e-13)


def test_independent_x_gets_none():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [2])
        other = tf.placeholder(tf.float64, [2])
        assert tf.hessians(tf.reduce_sum(x * x), [x, other])[1] is None


def test_an_unknown_size_gets_tfs_loop_over_rows_with_the_same_answer():
    x_value = RNG.standard_normal((3, 2))
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [None, 2])
        (h,) = tf.hessians(tf.reduce_sum(tf.sin(x) * x), x)
        assert h.shape.rank == 4
        with tf.Session() as sess:
            got = sess.run(h, {x: x_value})
    want = run_hessian(lambda t: tf.reduce_sum(tf.sin(t) * t), x_value)
    assert got.shape == (3, 2, 3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
