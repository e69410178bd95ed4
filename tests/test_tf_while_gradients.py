"""tf.gradients through tf.while_loop (and map_fn, scan, foldl, foldr), with TF 1.15's semantics:
the forward loop keeps what each iteration's gradient needs, and a gradient loop run in Rust
replays the iterations in reverse. Checked against float64 finite differences, closed forms and
the same computation unrolled in eager rustgrad."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad.errors import RustgradError

RNG = np.random.default_rng(16)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def finite_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(f(x)) / dx by central differences, in float64."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += eps
        down[j] -= eps
        grad[j] = (np.sum(f(up)) - np.sum(f(down))) / (2 * eps)
    return grad


def power_loop(x, k):
    """x**k by k multiplies in a loop; k a tensor read when the graph runs."""
    _, y = tf.while_loop(lambda i, y: i < k, lambda i, y: (i + 1, y * x), (tf.constant(0), tf.ones_like(x)))
    return y


def test_power_by_repeated_multiply_has_the_closed_form_gradient_for_each_fed_trip_count():
    x = tf.placeholder(tf.float64, [3])
    k = tf.placeholder(tf.int32, [])
    (g,) = tf.gradients(power_loop(x, k), [x])
    value = np.array([0.5, -1.5, 2.0])
    with tf.Session() as sess:
        for trips in (0, 1, 2, 5, 9):
            got = sess.run(g, {x: value, k: trips})
            want = trips * value ** (trips - 1) if trips else np.zeros(3)
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_data_dependent_trip_count_matches_finite_differences():
    """``while y < limit: y = 1.5 * y + x``: how often it runs depends on the fed values."""
    x = tf.placeholder(tf.float64, [])
    limit = tf.placeholder(tf.float64, [])
    y0 = tf.placeholder(tf.float64, [])
    count, y = tf.while_loop(lambda c, y: y < limit, lambda c, y: (c + 1, 1.5 * y + x * y * 0.1 + x),
                             (tf.constant(0), y0))
    gx, gy0 = tf.gradients(y, [x, y0])

    def loop(x_value, y_value, limit_value):
        y_value = np.asarray(y_value, dtype=np.float64)
        while y_value < limit_value:
            y_value = 1.5 * y_value + x_value * y_value * 0.1 + x_value
        return y_value

    trip_counts = set()
    with tf.Session() as sess:
        for x_value, y_value, limit_value in ((0.3, 0.2, 5.0), (0.3, 0.2, 50.0), (1.1, 1.0, 1e3), (0.3, 9.0, 5.0)):
            feed = {x: x_value, y0: y_value, limit: limit_value}
            trips, got_x, got_y0 = sess.run([count, gx, gy0], feed)
            trip_counts.add(int(trips))
            want_x = finite_difference(lambda v, y=y_value, c=limit_value: loop(v, y, c), np.array(x_value))
            want_y0 = finite_difference(lambda v, a=x_value, c=limit_value: loop(a, v, c), np.array(y_value))
            np.testing.assert_allclose([got_x, got_y0], [want_x, want_y0], rtol=1e-6)
    assert len(trip_counts) == 4, trip_counts


def test_an_rnn_over_a_captured_weight_matches_eager_unrolled():
    """h = tanh(h @ W + x_t) over the rows of xs; W is read in the body (a capture)."""
    steps, batch, hidden = 6, 2, 3
    xs_value = RNG.standard_normal((steps, batch, hidden))
    w_value = RNG.standard_normal((hidden, hidden)) * 0.5
    h0_value = RNG.standard_normal((batch, hidden))
    xs = tf.placeholder(tf.float64, [None, batch, hidden])
    w = tf.placeholder(tf.float64, [hidden, hidden])
    h0 = tf.placeholder(tf.float64, [batch, hidden])
    n = tf.shape(xs)[0]
    _, h = tf.while_loop(lambda t, h: t < n, lambda t, h: (t + 1, tf.tanh(tf.matmul(h, w) + tf.gather(xs, t))),
                         (tf.constant(0), h0))
    loss = tf.reduce_sum(h * h)
    grads = tf.gradients(loss, [w, h0, xs])
    with tf.Session() as sess:
        got = sess.run(grads, {xs: xs_value, w: w_value, h0: h0_value})

    w_e, h_e, xs_e = (rustgrad.tensor(v, dtype=rustgrad.float64, requires_grad=True)
                      for v in (w_value, h0_value, xs_value))
    state = h_e
    for t in range(steps):
        state = (state.mm(w_e) + xs_e[t]).tanh()
    (state * state).sum().backward()
    for g, leaf in zip(got, (w_e, h_e, xs_e)):
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_captured_weight_gets_the_sum_of_its_per_iteration_gradients():
    x = tf.placeholder(tf.float64, [])
    w = tf.placeholder(tf.float64, [])
    _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * w + tf.sin(w)), (tf.constant(0), x))
    gw, gx = tf.gradients(y, [w, x])

    def loop(x_value, w_value):
        for _ in range(4):
            x_value = x_value * w_value + np.sin(w_value)
        return x_value

    with tf.Session() as sess:
        got_w, got_x = sess.run([gw, gx], {x: 0.7, w: 1.3})
    np.testing.assert_allclose(got_w, finite_difference(lambda v: loop(0.7, v), np.array(1.3)), rtol=1e-7)
    np.testing.assert_allclose(got_x, 1.3 ** 4, rtol=1e-12)


def test_maximum_iterations_bounds_the_gradient_loop_too():
    x = tf.placeholder(tf.float64, [])
    cap = tf.placeholder(tf.int32, [])
    one = tf.constant(1.0, tf.float64)
    _, y = tf.while_loop(lambda i, y: i < 100, lambda i, y: (i + 1, y * x), (tf.constant(0), one),
                         maximum_iterations=cap)
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        for trips in (0, 3, 7):
            np.testing.assert_allclose(sess.run(g, {x: 1.5, cap: trips}), trips * 1.5 ** (trips - 1) if trips else 0.0)


def test_back_prop_false_gives_no_gradient_as_tf1():
    x = tf.placeholder(tf.float64, [])
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), (tf.constant(0), x), back_prop=False)
    assert tf.gradients(y, [x]) == [None]
    assert tf.gradients(y + x, [x])[0] is not None
    with tf.Session() as sess:
        assert sess.run(tf.gradients(y + x, [x])[0], {x: 2.0}) == 1.0


def test_integer_loop_counters_get_no_gradient():
    x = tf.placeholder(tf.float64, [])
    start = tf.constant(0)
    i, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x + tf.cast(i, tf.float64)), (start, x))
    assert tf.gradients(y, [start]) == [None]
    assert tf.gradients(i, [x]) == [None]


def test_gradients_after_the_loop_ran_without_them_and_twice_for_different_xs():
    """Gradients added to a graph whose loop already ran (and was cached) still get their stacks."""
    x = tf.placeholder(tf.float64, [])
    w = tf.placeholder(tf.float64, [])
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.sin(y) * w), (tf.constant(0), x))
    with tf.Session() as sess:
        forward = sess.run(y, {x: 0.4, w: 1.2})
        (gx,) = tf.gradients(y, [x])
        (gw,) = tf.gradients(y, [w])
        got = sess.run([y, gx, gw], {x: 0.4, w: 1.2})

    def loop(x_value, w_value):
        for _ in range(3):
            x_value = np.sin(x_value) * w_value
        return x_value

    assert got[0] == forward
    np.testing.assert_allclose(got[1], finite_difference(lambda v: loop(v, 1.2), np.array(0.4)), rtol=1e-7)
    np.testing.assert_allclose(got[2], finite_difference(lambda v: loop(0.4, v), np.array(1.2)), rtol=1e-7)


def test_map_fn_gradient_matches_finite_differences():
    elems_value = RNG.standard_normal((5, 3))
    w_value = RNG.standard_normal(3)
    elems = tf.placeholder(tf.float64, [None, 3])
    w = tf.placeholder(tf.float64, [3])
    out = tf.map_fn(lambda row: tf.sin(row) * w + tf.reduce_sum(row * row), elems)
    loss = tf.reduce_sum(out * out)
    ge, gw = tf.gradients(loss, [elems, w])

    def f(e, w_v):
        rows = np.sin(e) * w_v + np.sum(e * e, axis=1, keepdims=True)
        return np.sum(rows * rows)

    with tf.Session() as sess:
        got_e, got_w = sess.run([ge, gw], {elems: elems_value, w: w_value})
    np.testing.assert_allclose(got_e, finite_difference(lambda v: f(v, w_value), elems_value), rtol=1e-6)
    np.testing.assert_allclose(got_w, finite_difference(lambda v: f(elems_value, v), w_value), rtol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_initializer", [False, True])
def test_scan_gradient_matches_finite_differences(reverse, with_initializer):
    elems_value = RNG.standard_normal((4, 2))
    elems = tf.placeholder(tf.float64, [4, 2])
    init = tf.constant(np.array([0.5, -0.3])) if with_initializer else None
    out = tf.scan(lambda a, row: tf.tanh(a * 1.3 + row), elems, initializer=init, reverse=reverse)
    weights = RNG.standard_normal((4, 2))
    (g,) = tf.gradients(tf.reduce_sum(out * weights), [elems])

    def f(e):
        order = range(3, -1, -1) if reverse else range(4)
        a = np.array([0.5, -0.3]) if with_initializer else None
        rows = {}
        for j in order:
            a = e[j] if a is None else np.tanh(a * 1.3 + e[j])
            rows[j] = a
        return np.sum(np.stack([rows[j] for j in range(4)]) * weights)

    with tf.Session() as sess:
        got = sess.run(g, {elems: elems_value})
    np.testing.assert_allclose(got, finite_difference(f, elems_value), rtol=1e-6, atol=1e-9)


def test_foldl_and_foldr_gradients_match_finite_differences():
    elems_value = RNG.standard_normal(5)
    elems = tf.placeholder(tf.float64, [None])
    left = tf.foldl(lambda a, x: a * 0.9 + tf.sin(x) * a + x, elems, initializer=tf.constant(1.0, tf.float64))
    right = tf.foldr(lambda a, x: a * x + 1.0, elems)
    g_left, g_right = tf.gradients(left, [elems])[0], tf.gradients(right, [elems])[0]

    def f_left(e):
        a = 1.0
        for x in e:
            a = a * 0.9 + np.sin(x) * a + x
        return a

    def f_right(e):
        a = e[-1]
        for x in e[-2::-1]:
            a = a * x + 1.0
        return a

    with tf.Session() as sess:
        got_left, got_right = sess.run([g_left, g_right], {elems: elems_value})
    np.testing.assert_allclose(got_left, finite_difference(f_left, elems_value), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_right, finite_difference(f_right, elems_value), rtol=1e-6)


def test_map_fn_stacks_rows_of_unknown_shape_and_an_empty_input():
    elems = tf.placeholder(tf.float64, [None, None])
    out = tf.map_fn(lambda row: row * 2.0, elems)
    (g,) = tf.gradients(tf.reduce_sum(out), [elems])
    with tf.Session() as sess:
        value = RNG.standard_normal((3, 4))
        np.testing.assert_allclose(sess.run(out, {elems: value}), value * 2.0)
        np.testing.assert_allclose(sess.run(g, {elems: value}), np.full((3, 4), 2.0))
        assert sess.run(out, {elems: np.zeros((0, 4))}).shape[0] == 0


def test_a_cond_inside_the_body_differentiates_the_branch_each_iteration_took():
    x = tf.placeholder(tf.float64, [])

    def body(i, y):
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: y * x, lambda: tf.sin(y) + x)

    _, y = tf.while_loop(lambda i, y: i < 5, body, (tf.constant(0), x))
    (g,) = tf.gradients(y, [x])

    def loop(x_value):
        y_value = x_value
        for i in range(5):
            y_value = y_value * x_value if i % 2 == 0 else np.sin(y_value) + x_value
        return y_value

    with tf.Session() as sess:
        got = sess.run(g, {x: 0.8})
    np.testing.assert_allclose(got, finite_difference(loop, np.array(0.8)), rtol=1e-7)


def test_a_loop_inside_a_cond_branch_is_differentiated_when_its_branch_ran():
    x = tf.placeholder(tf.float64, [])

    def branch():
        return tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.sin(y) * x), (tf.constant(0), x))[1]

    y = tf.cond(x > 0.0, branch, lambda: x * x)
    (g,) = tf.gradients(y, [x])

    def f(v):
        if v <= 0.0:
            return v * v
        y_value = v
        for _ in range(3):
            y_value = np.sin(y_value) * v
        return y_value

    with tf.Session() as sess:
        for v in (0.7, -0.4):
            np.testing.assert_allclose(sess.run(g, {x: v}), finite_difference(f, np.array(v)), rtol=1e-7)


def test_a_value_the_gradient_keeps_must_keep_its_shape_across_iterations():
    x = tf.placeholder(tf.float64, [None])
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.concat([y * y, [1.0]], 0)),
                         (tf.constant(0), x), shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    with tf.Session() as sess:
        assert sess.run(y, {x: [2.0]}).shape == (4,)
        with pytest.raises(ValueError, match=r"gradients through while_loop: '.*' has shape \(1,\) in one iteration "
                                             r"and \(2,\) in another; the gradient keeps each iteration's value"):
            sess.run(g, {x: [2.0]})
        with pytest.raises(RustgradError):
            sess.run(g, {x: [2.0]})


def test_second_derivative_through_a_loop():
    x = tf.placeholder(tf.float64, [])
    y = power_loop(x, tf.constant(4))
    (g,) = tf.gradients(y, [x])
    (gg,) = tf.gradients(g, [x])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run([g, gg], {x: 1.5}), [4 * 1.5 ** 3, 12 * 1.5 ** 2], rtol=1e-12)


def test_hessians_of_a_tensor_whose_size_is_unknown_when_the_graph_is_built():
    x = tf.placeholder(tf.float64, [None])
    a = tf.placeholder(tf.float64, [None, None])
    (h,) = tf.hessians(tf.reduce_sum(x * tf.reduce_sum(a * x, axis=1)) + tf.reduce_sum(x ** 3), x)
    with tf.Session() as sess:
        for n in (1, 3, 4):
            x_value, a_value = RNG.standard_normal(n), RNG.standard_normal((n, n))
            got = sess.run(h, {x: x_value, a: a_value})
            np.testing.assert_allclose(got, a_value + a_value.T + np.diag(6 * x_value), rtol=1e-12, atol=1e-12)


def test_a_loop_nested_in_a_loop_body_matches_finite_differences():
    x = tf.placeholder(tf.float64, [])

    def outer_body(i, y):
        _, z = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, tf.sin(z) * x), (tf.constant(0), y))
        return i + 1, z + y

    _, y = tf.while_loop(lambda i, y: i < 3, outer_body, (tf.constant(0), x))
    (g,) = tf.gradients(y, [x])

    def f(v):
        y_value = v
        for _ in range(3):
            z = y_value
            for _ in range(2):
                z = np.sin(z) * v
            y_value = z + y_value
        return y_value

    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: 0.7}), finite_difference(f, np.array(0.7)), rtol=1e-7)
