"""tf.train's learning-rate schedules (graph tensors of the global step) against TF1's formulas in
float64 numpy, and the global step: get_or_create_global_step / get_global_step / create_global_step."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, DTypeError, InvalidArgumentError

STEPS = [0, 1, 4, 5, 6, 9, 10, 11, 25, 100]


def _values(schedule, steps=STEPS, dtype=tf.int64):
    """The schedule's value at each step, the step fed to a placeholder."""
    with tf.Graph().as_default():
        step = tf.placeholder(dtype, ())
        lr = schedule(step)
        with tf.Session() as sess:
            return [sess.run(lr, feed_dict={step: s}) for s in steps], lr


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay_matches_tf1_formula(staircase):
    got, lr = _values(lambda s: tf.train.exponential_decay(0.1, s, 5, 0.5, staircase=staircase))
    for s, value in zip(STEPS, got):
        p = math.floor(s / 5) if staircase else s / 5
        np.testing.assert_allclose(value, 0.1 * 0.5 ** p, rtol=1e-6)
    assert lr.dtype == tf.float32 and lr.shape == ()


@pytest.mark.parametrize("staircase", [False, True])
def test_natural_exp_and_inverse_time_decay_match_tf1_formulas(staircase):
    natural, _ = _values(lambda s: tf.train.natural_exp_decay(0.2, s, 4, 0.3, staircase=staircase))
    inverse, _ = _values(lambda s: tf.train.inverse_time_decay(0.2, s, 4, 0.3, staircase=staircase))
    for s, n, i in zip(STEPS, natural, inverse):
        p = math.floor(s / 4) if staircase else s / 4
        np.testing.assert_allclose(n, 0.2 * math.exp(-0.3 * p), rtol=1e-6)
        np.testing.assert_allclose(i, 0.2 / (1 + 0.3 * p), rtol=1e-6)


def _polynomial(lr, step, decay_steps, end, power, cycle):
    if cycle:
        decay_steps = decay_steps * (1.0 if step == 0 else math.ceil(step / decay_steps))
    else:
        step = min(step, decay_steps)
    return (lr - end) * (1 - step / decay_steps) ** power + end


@pytest.mark.parametrize("power, cycle", [(1.0, False), (2.0, False), (0.5, True), (1.0, True)])
def test_polynomial_decay_matches_tf1_formula(power, cycle):
    got, _ = _values(lambda s: tf.train.polynomial_decay(0.5, s, 10, end_learning_rate=0.01, power=power,
                                                        cycle=cycle))
    for s, value in zip(STEPS, got):
        np.testing.assert_allclose(value, _polynomial(0.5, s, 10, 0.01, power, cycle), rtol=1e-6, atol=1e-7)


def test_polynomial_decay_default_end_rate_is_tf1s():
    got, _ = _values(lambda s: tf.train.polynomial_decay(0.1, s, 10), steps=[10, 50])
    np.testing.assert_allclose(got, [0.0001, 0.0001], rtol=1e-6)


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_cosine_decay_matches_tf1_formula(alpha):
    got, _ = _values(lambda s: tf.train.cosine_decay(0.3, s, 10, alpha=alpha))
    for s, value in zip(STEPS, got):
        fraction = min(s, 10) / 10
        expected = 0.3 * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)
        np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-7)


def test_piecewise_constant_takes_each_value_up_to_and_including_its_boundary():
    got, lr = _values(lambda s: tf.train.piecewise_constant(s, [5, 10], [1.0, 0.5, 0.1]))
    expected = [1.0 if s <= 5 else 0.5 if s <= 10 else 0.1 for s in STEPS]
    np.testing.assert_allclose(got, expected, rtol=1e-7)
    assert lr.dtype == tf.float32


def test_piecewise_constant_of_a_float_step_and_one_boundary():
    got, _ = _values(lambda s: tf.train.piecewise_constant(s, [2.5], [3.0, 4.0]), steps=[2.0, 2.5, 3.0],
                     dtype=tf.float32)
    np.testing.assert_array_equal(got, [3.0, 3.0, 4.0])


def test_piecewise_constant_errors_follow_tf1():
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, ())
        with pytest.raises(InvalidArgumentError, match="1 less than the length of values"):
            tf.train.piecewise_constant(step, [1, 2], [1.0, 2.0])
        with pytest.raises(InvalidArgumentError, match="same dtype as x"):
            tf.train.piecewise_constant(step, [1.5], [1.0, 2.0])
        with pytest.raises(InvalidArgumentError, match="all with the same dtype"):
            tf.train.piecewise_constant(step, [1], [1.0, 2])
        with pytest.raises(InvalidArgumentError, match="increase strictly"):
            tf.train.piecewise_constant(step, [5, 2], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("schedule", [tf.train.exponential_decay, tf.train.natural_exp_decay,
                                      tf.train.inverse_time_decay])
def test_a_decay_without_global_step_raises_as_tf1(schedule):
    with tf.Graph().as_default():
        with pytest.raises(InvalidArgumentError, match="global_step is required"):
            schedule(0.1, None, 10, 0.5)


def test_an_integer_learning_rate_tensor_raises_dtype_error():
    with tf.Graph().as_default():
        with pytest.raises(DTypeError, match="floating-point"):
            tf.train.exponential_decay(tf.constant(1), tf.constant(3), 10, 0.5)


def test_a_float64_learning_rate_keeps_its_dtype_and_a_tensor_decay_rate_works():
    with tf.Graph().as_default():
        rate = tf.placeholder(tf.float64, ())
        lr = tf.train.exponential_decay(tf.constant(0.1, tf.float64), tf.constant(3, tf.int64), 2, rate)
        assert lr.dtype == tf.float64
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(lr, feed_dict={rate: 0.5}), 0.1 * 0.5 ** 1.5, rtol=1e-14)


def test_a_schedule_of_the_global_step_decays_as_minimize_advances_it():
    with tf.Graph().as_default():
        w = tf.Variable(np.ones(2, np.float32))
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.1, step, 2, 0.5, staircase=True)
        train_op = tf.train.GradientDescentOptimizer(lr).minimize(tf.reduce_sum(w), global_step=step)
        expected = np.ones(2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for t in range(6):
                np.testing.assert_allclose(sess.run(lr), 0.1 * 0.5 ** (t // 2), rtol=1e-6)
                sess.run(train_op)
                expected -= 0.1 * 0.5 ** (t // 2)  # the gradient of sum(w) is 1
            assert sess.run(step) == 6
            np.testing.assert_allclose(sess.run(w), expected, rtol=1e-6)


# ----- the global step -----


def test_get_or_create_global_step_makes_one_int64_scalar_not_trainable():
    with tf.Graph().as_default() as graph:
        assert tf.train.get_global_step() is None
        step = tf.train.get_or_create_global_step()
        assert step.name == "global_step:0" and step.dtype == tf.int64 and step.shape == ()
        assert not step.trainable
        assert step in tf.global_variables() and step not in tf.trainable_variables()
        assert tf.train.get_or_create_global_step() is step
        assert tf.train.get_global_step() is step and tf.train.get_global_step(graph) is step
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(step) == 0


def test_create_global_step_twice_raises_as_tf1():
    with tf.Graph().as_default():
        tf.train.create_global_step()
        with pytest.raises(InvalidArgumentError, match='"global_step" already exists'):
            tf.train.create_global_step()


def test_the_global_step_belongs_to_the_graph_it_was_made_in():
    first, second = tf.Graph(), tf.Graph()
    step = tf.train.create_global_step(first)
    assert step.graph is first
    assert tf.train.get_global_step(second) is None
    with second.as_default():
        other = tf.train.get_or_create_global_step()
    assert other is not step and other.graph is second


def test_a_hand_made_global_step_variable_is_found_by_name():
    with tf.Graph().as_default():
        step = tf.Variable(0, name="global_step", trainable=False)
        assert tf.train.get_global_step() is step
        assert tf.train.get_or_create_global_step() is step
        with pytest.raises(InvalidArgumentError, match="already exists"):
            tf.train.create_global_step()


def test_a_global_step_that_is_not_an_integer_scalar_raises_type_error():
    with tf.Graph().as_default():
        tf.Variable(0.0, name="global_step")
        with pytest.raises(ArgumentTypeError, match="integer type"):
            tf.train.get_global_step()
    with tf.Graph().as_default():
        tf.Variable([1, 2], name="global_step")
        with pytest.raises(ArgumentTypeError, match="not a scalar"):
            tf.train.get_or_create_global_step()
