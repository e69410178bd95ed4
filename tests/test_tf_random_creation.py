"""TF1's creation and random ops: range, fill, truncated_normal, integer random_uniform,
random_shuffle, graph seeds and get_seed, and TF1's errors for bad arguments.

The statistical checks draw from fixed seeds and compare chi-square statistics with the
distribution's 99.99% quantile, with test_random_creation.py's helpers."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from test_random_creation import chi2, chi2_bound

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors

# ---------------------------------------------------------------- TF1: range and fill


@pytest.mark.parametrize("args, kwargs, dtype, expected", [
    ((5,), {}, "int32", np.arange(5)),
    ((1, 10, 3), {}, "int32", np.arange(1, 10, 3)),
    ((5, 0, -2), {}, "int32", np.arange(5, 0, -2)),
    ((0, 1, 0.25), {}, "float32", np.arange(0, 1, 0.25)),
    ((1, 2.5), {}, "float32", np.arange(1, 2.5)),
    ((4,), {"dtype": "int64"}, "int64", np.arange(4)),
    ((4,), {"dtype": "float64"}, "float64", np.arange(4.0)),
    ((np.int64(3),), {}, "int64", np.arange(3)),
    ((2**31, 2**31 + 3), {}, "int64", np.arange(2**31, 2**31 + 3)),
    ((3, 3), {}, "int32", np.arange(3, 3)),
])
def test_tf_range_of_numbers_is_a_constant_typed_as_tf1(args, kwargs, dtype, expected):
    with tf.Graph().as_default():
        if "dtype" in kwargs:
            kwargs = {"dtype": getattr(tf, kwargs["dtype"])}
        r = tf.range(*args, **kwargs)
        assert r.dtype is getattr(tf, dtype)
        assert r.op.name == "range"
        assert r.shape.as_list() == [len(expected)]
        with tf.Session() as sess:
            value = sess.run(r)
        assert value.dtype == getattr(np, dtype) and value.tolist() == expected.tolist()


def test_tf_range_of_graph_tensors_is_computed_at_run_time():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        start = tf.placeholder(tf.int64, [])
        r = tf.range(n)
        assert r.dtype is tf.int32 and r.shape.as_list() == [None] and r.op.type == "Range"
        wide = tf.range(start, 10, 2)  # Python ints join the tensor's int64
        mixed = tf.range(n, 4.5)  # int32 and float32: float32, as TF1
        assert wide.dtype is tf.int64 and mixed.dtype is tf.float32
        with tf.Session() as sess:
            assert sess.run(r, {n: 4}).tolist() == [0, 1, 2, 3]
            assert sess.run(wide, {start: 3}).tolist() == [3, 5, 7, 9]
            assert sess.run(mixed, {n: 2}).tolist() == [2.0, 3.0, 4.0]
            with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit when delta > 0"):
                sess.run(tf.range(n, 0), {n: 3})


def test_tf_range_errors_are_tf1s():
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="Requires delta != 0"):
            tf.range(0, 5, 0)
        with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit when delta > 0: 5/3"):
            tf.range(5, 3)
        with pytest.raises(errors.InvalidArgumentError, match="Requires start >= limit when delta < 0"):
            tf.range(3, 5, -1)
        with pytest.raises(errors.DTypeError, match="Expected int32, got 2.5"):
            tf.range(2.5, dtype=tf.int32)
        d = tf.placeholder(tf.int32, [])
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match="Requires delta != 0"):
            sess.run(tf.range(0, 5, d), {d: 0})


def test_tf_fill_with_numbers_tensors_and_its_gradient():
    with tf.Graph().as_default():
        c = tf.fill([2, 3], 7)
        f = tf.fill([2], 1.5)
        assert c.dtype is tf.int32 and c.shape.as_list() == [2, 3] and f.dtype is tf.float32
        dims = tf.placeholder(tf.int32, [2])
        value = tf.placeholder(tf.float64, [])
        by_dims = tf.fill(dims, value)
        assert by_dims.shape.as_list() == [None, None] and by_dims.dtype is tf.float64
        known = tf.fill([4, 5], value)
        assert known.shape.as_list() == [4, 5]
        (grad,) = tf.gradients(tf.reduce_sum(known * 3.0), [value])
        variable = tf.Variable(tf.fill([3], 0.5))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(c).tolist() == [[7] * 3] * 2
            assert sess.run(by_dims, {dims: [1, 2], value: 2.0}).tolist() == [[2.0, 2.0]]
            assert sess.run(grad, {value: 1.0}) == pytest.approx(60.0)
            assert sess.run(variable).tolist() == [0.5] * 3
            with pytest.raises(errors.InvalidArgumentError, match="dimensions must be >= 0, got -1"):
                sess.run(by_dims, {dims: [-1, 2], value: 1.0})
        with pytest.raises(errors.InvalidArgumentError, match=r"fill: dims must be >= 0, got \[2, -3\]"):
            tf.fill([2, -3], 1.0)
        with pytest.raises(errors.ShapeError, match="fill: value must be a scalar"):
            tf.fill([2], tf.placeholder(tf.float32, [3]))


# ---------------------------------------------------------------- TF1: random ops and seeds


def test_tf_truncated_normal_stays_within_two_standard_deviations():
    with tf.Graph().as_default():
        t = tf.truncated_normal((400, 500), mean=3.0, stddev=2.0, dtype=tf.float64, seed=1)
        assert t.op.type == "TruncatedNormal" and t.shape.as_list() == [400, 500]
        with tf.Session() as sess:
            v = sess.run(t)
    assert v.dtype == np.float64 and np.abs(v - 3.0).max() <= 4.0
    assert abs(v.mean() - 3.0) < 0.01
    # A standard normal cut at +-2 has standard deviation 0.8796.
    assert abs(v.std() - 2 * 0.8796) < 0.01
    assert np.abs(v - 3.0).max() > 3.9  # the tails up to the cut are there


def test_tf_random_uniform_of_integers_needs_maxval_and_is_uniform():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype int32"):
            tf.random_uniform([3], dtype=tf.int32)
        with pytest.raises(errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
            tf.random_uniform([3], 5, 5, dtype=tf.int64)
        with pytest.raises(errors.DTypeError, match="float32, float64, int32 or int64, got uint8"):
            tf.random_uniform([3], maxval=5, dtype=tf.uint8)
        u = tf.random_uniform([50_000], minval=-3, maxval=4, dtype=tf.int32, seed=2)
        assert u.dtype is tf.int32 and u.op.type == "RandomUniformInt"
        with tf.Session() as sess:
            v = sess.run(u)
    assert v.dtype == np.int32 and v.min() == -3 and v.max() == 3
    assert chi2(np.bincount(v + 3), np.full(7, 50_000 / 7)) < chi2_bound(6)


def test_tf_random_shuffle_permutes_rows_anew_each_run():
    data = np.arange(60).reshape(20, 3)
    with tf.Graph().as_default():
        s = tf.random_shuffle(tf.constant(data))
        seeded = tf.random_shuffle(data, seed=4)
        assert s.op.type == "RandomShuffle" and s.shape.as_list() == [20, 3] and s.dtype is tf.int64
        with tf.Session() as sess:
            runs = [sess.run(s) for _ in range(3)]
            seeded_runs = [sess.run(seeded) for _ in range(2)]
        with tf.Session() as sess:
            seeded_again = [sess.run(seeded) for _ in range(2)]
    for run in runs:
        assert sorted(map(tuple, run.tolist())) == sorted(map(tuple, data.tolist()))
    assert not np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[1], runs[2])
    assert all(np.array_equal(a, b) for a, b in zip(seeded_runs, seeded_again))
    assert not np.array_equal(seeded_runs[0], seeded_runs[1])


def test_unseeded_random_ops_draw_fresh_values_every_run():
    with tf.Graph().as_default():
        ops = [tf.random_normal([5]), tf.random_uniform([5]), tf.truncated_normal([5]),
               tf.random_uniform([5], maxval=1000, dtype=tf.int64)]
        with tf.Session() as sess:
            first, second = sess.run(ops), sess.run(ops)
    assert all(not np.array_equal(a, b) for a, b in zip(first, second))


def test_a_graph_seed_makes_every_random_op_repeat_per_session():
    def draw(seed):
        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(seed)
            a, b = tf.random_normal([4]), tf.random_normal([4])
            with tf.Session() as sess:
                runs = [sess.run([a, b]) for _ in range(2)]
        return runs

    first = draw(7)
    again = draw(7)
    other = draw(8)
    assert all(np.array_equal(x, y) for run1, run2 in zip(first, again) for x, y in zip(run1, run2))
    assert not np.array_equal(first[0][0], first[0][1])  # two ops, two sequences
    assert not np.array_equal(first[0][0], first[1][0])  # the sequence moves on within a session
    assert not np.array_equal(first[0][0], other[0][0])


def test_get_seed_follows_tf1():
    with tf.Graph().as_default() as graph:
        assert tf.get_seed(None) == (None, None)
        assert tf.get_seed(5) == (87654321, 5)
        tf.set_random_seed(3)
        assert graph.seed == 3
        tf.constant(1.0)
        assert tf.get_seed(None) == (3, graph._core.num_nodes())
        assert tf.get_seed(9) == (3, 9)
        tf.set_random_seed(0)
        assert tf.get_seed(0) == (0, 2**31 - 1)
    assert tf.Graph().seed is None


def test_random_ops_take_a_shape_tensor():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        dims = tf.placeholder(tf.int32, [2])
        noise = tf.random_normal(dims, seed=1)
        ints = tf.random_uniform(dims, maxval=3, dtype=tf.int32)
        assert noise.shape.as_list() == [None, None]
        y = x + noise
        with tf.Session() as sess:
            value = sess.run(y, {x: np.zeros((2, 3), np.float32), dims: [2, 3]})
            assert value.shape == (2, 3)
            assert sess.run(ints, {dims: [4, 1]}).shape == (4, 1)
            with pytest.raises(errors.InvalidArgumentError, match="dimensions must be >= 0"):
                sess.run(noise, {dims: [-2, 3]})


def test_tf_random_namespace_names_the_same_functions():
    assert tf.random.normal is tf.random_normal
    assert tf.random.uniform is tf.random_uniform
    assert tf.random.truncated_normal is tf.truncated_normal
    assert tf.random.shuffle is tf.random_shuffle
    assert tf.random.set_random_seed is tf.set_random_seed
    assert tf.random.get_seed is tf.get_seed


def test_tf_float_random_ops_refuse_integer_dtypes():
    with tf.Graph().as_default():
        with pytest.raises(errors.DTypeError, match="random_normal: dtype must be a float type"):
            tf.random_normal([2], dtype=tf.int32)
        with pytest.raises(errors.DTypeError, match="truncated_normal: dtype must be a float type"):
            tf.truncated_normal([2], dtype=tf.int64)


def _sha(array: np.ndarray) -> str:
    return hashlib.sha256(array.tobytes()).hexdigest()


def test_manual_seed_also_seeds_unseeded_graph_ops():
    with tf.Graph().as_default():
        r = tf.random_normal([6])
        rustgrad.manual_seed(77)
        with tf.Session() as sess:
            a = _sha(sess.run(r))
        rustgrad.manual_seed(77)
        with tf.Session() as sess:
            b = _sha(sess.run(r))
    assert a == b
