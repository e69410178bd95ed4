"""tf.train.RMSPropOptimizer and AdagradOptimizer against float64 numpy versions of TF1's kernels
(ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad), tf.clip_by_norm / clip_by_global_norm /
global_norm against numpy, and the rustgrad error classes of the optimizers' bad input."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, DTypeError, InvalidArgumentError, RustgradError, ShapeError

RUNS = 5


@pytest.fixture
def problem(rng):
    """A float64 regression loss = mean((x @ w + b - y)^2) with its numpy gradient."""
    x = rng.standard_normal((6, 3))
    y = rng.standard_normal((6, 2))
    w0 = rng.standard_normal((3, 2))
    b0 = rng.standard_normal(2)
    with tf.Graph().as_default() as graph:
        w = tf.Variable(w0, name="w")
        b = tf.Variable(b0, name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x), w) + b - tf.constant(y)))

        def grads(wv, bv):
            d = 2 * (x @ wv + bv - y) / y.size
            return [x.T @ d, d.sum(0)]

        yield dict(graph=graph, w=w, b=b, loss=loss, init=[w0, b0], grads=grads)


def _train(problem, opt, step):
    """Runs ``opt.minimize`` RUNS times; after each run the variables equal numpy's ``step``."""
    w, b = problem["w"], problem["b"]
    train_op = opt.minimize(problem["loss"])
    values = [v.copy() for v in problem["init"]]
    state: list[dict] = [{}, {}]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(RUNS):
            sess.run(train_op)
            grads = problem["grads"](*values)
            values = [step(v, g, s, t) for v, g, s in zip(values, grads, state)]
            for got, want in zip(sess.run([w, b]), values):
                np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _rmsprop(lr, decay, momentum, epsilon, centered):
    def step(var, grad, s, t):
        ms = s.get("ms", np.ones_like(var))  # TF1 starts the mean square at ONE
        mom = s.get("mom", np.zeros_like(var))
        mg = s.get("mg", np.zeros_like(var))
        ms = decay * ms + (1 - decay) * grad * grad
        if centered:
            mg = decay * mg + (1 - decay) * grad
            denominator = ms - mg * mg + epsilon
        else:
            denominator = ms + epsilon  # epsilon inside the square root, as TF1's kernel
        mom = momentum * mom + lr * grad / np.sqrt(denominator)
        s.update(ms=ms, mom=mom, mg=mg)
        return var - mom

    return step


@pytest.mark.parametrize("decay, momentum, epsilon, centered", [
    (0.9, 0.0, 1e-10, False),
    (0.8, 0.9, 1e-3, False),
    (0.9, 0.5, 1e-10, True),
    (0.7, 0.0, 0.1, True),
])
def test_rmsprop_follows_tf1_formulas_over_several_steps(problem, decay, momentum, epsilon, centered):
    opt = tf.train.RMSPropOptimizer(0.05, decay=decay, momentum=momentum, epsilon=epsilon, centered=centered)
    _train(problem, opt, _rmsprop(0.05, decay, momentum, epsilon, centered))


def test_rmsprop_slots_hold_tf1_values_and_names(problem):
    opt = tf.train.RMSPropOptimizer(0.01, momentum=0.9, centered=True)
    w = problem["w"]
    train_op = opt.minimize(problem["loss"])
    assert sorted(opt.get_slot_names()) == ["mg", "momentum", "rms"]
    assert [opt.get_slot(w, n).name for n in ("rms", "mg", "momentum")] == [
        "w/RMSProp:0", "w/RMSProp_1:0", "w/RMSProp_2:0"]
    assert all(not s.trainable for s in opt.variables())
    step = _rmsprop(0.01, 0.9, 0.9, 1e-10, True)
    s: dict = {}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "rms")), np.ones((3, 2)))
        sess.run(train_op)
        step(problem["init"][0], problem["grads"](*problem["init"])[0], s, 0)
        got_ms, got_mg, got_mom = sess.run([opt.get_slot(w, n) for n in ("rms", "mg", "momentum")])
    np.testing.assert_allclose(got_ms, s["ms"], rtol=1e-12)
    np.testing.assert_allclose(got_mg, s["mg"], rtol=1e-12)
    np.testing.assert_allclose(got_mom, s["mom"], rtol=1e-12)


def test_rmsprop_without_centering_makes_two_slots(problem):
    opt = tf.train.RMSPropOptimizer(0.01)
    opt.minimize(problem["loss"])
    assert opt.get_slot(problem["w"], "mg") is None
    assert opt.get_slot(problem["b"], "momentum").name == "b/RMSProp_1:0"


def test_rmsprop_takes_a_tensor_learning_rate(problem):
    lr = tf.placeholder(tf.float64, ())
    opt = tf.train.RMSPropOptimizer(lr, decay=0.9, momentum=0.5)
    train_op = opt.minimize(problem["loss"])
    step = _rmsprop(0.02, 0.9, 0.5, 1e-10, False)
    values, state = [v.copy() for v in problem["init"]], [{}, {}]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(3):
            sess.run(train_op, feed_dict={lr: 0.02})
            values = [step(v, g, s, t) for v, g, s in zip(values, problem["grads"](*values), state)]
        np.testing.assert_allclose(sess.run(problem["w"]), values[0], rtol=1e-10)


def _adagrad(lr, initial):
    def step(var, grad, s, t):
        accumulator = s.get("acc", np.full_like(var, initial)) + grad * grad
        s["acc"] = accumulator
        return var - lr * grad / np.sqrt(accumulator)

    return step


@pytest.mark.parametrize("initial", [0.1, 2.5])
def test_adagrad_follows_tf1_formulas_over_several_steps(problem, initial):
    kwargs = {} if initial == 0.1 else {"initial_accumulator_value": initial}
    opt = tf.train.AdagradOptimizer(0.3, **kwargs)
    _train(problem, opt, _adagrad(0.3, initial))
    assert opt.get_slot_names() == ["accumulator"]
    assert opt.get_slot(problem["w"], "accumulator").name == "w/Adagrad:0"


def test_adagrad_accumulator_slot_holds_the_sum_of_squares(problem):
    opt = tf.train.AdagradOptimizer(0.1)
    train_op = opt.minimize(problem["loss"])
    slot = opt.get_slot(problem["b"], "accumulator")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(slot), [0.1, 0.1])
        sess.run(train_op)
        g = problem["grads"](*problem["init"])[1]
        np.testing.assert_allclose(sess.run(slot), 0.1 + g * g, rtol=1e-12)


@pytest.mark.parametrize("value", [0.0, -1.0, "x", None])
def test_adagrad_needs_a_positive_initial_accumulator(value):
    with pytest.raises(InvalidArgumentError, match="initial_accumulator_value must be positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=value)


def test_optimizers_in_float32_train_with_a_decaying_learning_rate():
    with tf.Graph().as_default():
        w = tf.Variable(np.array([3.0, -2.0], np.float32))
        loss = tf.reduce_sum(w * w)
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.5, step, 10, 0.9)
        train_op = tf.train.RMSPropOptimizer(lr).minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(20):
                sess.run(train_op)
            assert sess.run(step) == 20
            assert sess.run(loss) < first / 10


# ----- the optimizers' errors are rustgrad errors that are also the builtins -----


def test_an_empty_optimizer_name_raises_invalid_argument():
    with pytest.raises(InvalidArgumentError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")


def test_errors_of_compute_and_apply_gradients_are_rustgrad_errors(problem):
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ArgumentTypeError, match="loss must be a graph Tensor"):
        opt.compute_gradients(1.0)
    with pytest.raises(ArgumentTypeError, match="var_list must hold Variables"):
        opt.compute_gradients(problem["loss"], var_list=[problem["loss"]])
    with pytest.raises(InvalidArgumentError, match="No variables provided"):
        opt.apply_gradients([])
    with pytest.raises(ArgumentTypeError, match="expected Variables"):
        opt.apply_gradients([(problem["loss"], problem["loss"])])
    g = tf.ones((3, 2), tf.float64)
    with pytest.raises(InvalidArgumentError, match="more than once"):
        opt.apply_gradients([(g, problem["w"]), (g, problem["w"])])
    with pytest.raises(InvalidArgumentError, match="No gradients provided"):
        opt.apply_gradients([(None, problem["w"])])
    for error in (ArgumentTypeError, InvalidArgumentError):
        assert issubclass(error, RustgradError)
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(InvalidArgumentError, ValueError)


def test_an_integer_variable_in_var_list_raises_invalid_argument(problem):
    with problem["graph"].as_default():
        counter = tf.Variable(np.int64(0), name="counter")
    with pytest.raises(InvalidArgumentError, match="Invalid type int64 for counter:0"):
        tf.train.AdamOptimizer().compute_gradients(problem["loss"], var_list=[counter])


def test_a_learning_rate_of_the_wrong_kind_raises_argument_type_error(problem):
    with pytest.raises(ArgumentTypeError, match="RMSPropOptimizer: learning_rate must be a number"):
        tf.train.RMSPropOptimizer("fast").minimize(problem["loss"])


# ----- clipping -----


def _global_norm(arrays):
    return np.sqrt(sum(np.sum(a.astype(np.float64) ** 2) for a in arrays))


def test_clip_by_global_norm_scales_every_tensor_by_one_factor_and_passes_none_through(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(5)
    norm = _global_norm([a, b])
    with tf.Graph().as_default():
        clipped, global_norm = tf.clip_by_global_norm([tf.constant(a), None, tf.constant(b)], 1.5)
        assert clipped[1] is None and len(clipped) == 3
        with tf.Session() as sess:
            ca, cb, n = sess.run([clipped[0], clipped[2], global_norm])
    np.testing.assert_allclose(n, norm, rtol=1e-12)
    np.testing.assert_allclose(ca, a * 1.5 / norm, rtol=1e-12)
    np.testing.assert_allclose(cb, b * 1.5 / norm, rtol=1e-12)
    np.testing.assert_allclose(_global_norm([ca, cb]), 1.5, rtol=1e-12)


def test_clip_by_global_norm_leaves_tensors_under_the_norm_unchanged(rng):
    a = rng.standard_normal(4)
    with tf.Graph().as_default():
        (clipped,), norm = tf.clip_by_global_norm([tf.constant(a)], 100.0)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(clipped), a, rtol=1e-15)
            np.testing.assert_allclose(sess.run(norm), np.linalg.norm(a), rtol=1e-12)


def test_clip_by_global_norm_uses_the_given_norm_and_keeps_zero_tensors_finite():
    with tf.Graph().as_default():
        (c,), n = tf.clip_by_global_norm([tf.constant([3.0, 4.0])], 1.0, use_norm=tf.constant(10.0))
        (z,), zn = tf.clip_by_global_norm([tf.zeros((2,))], 1.0)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(c), [0.3, 0.4], rtol=1e-6)
            assert sess.run(n) == 10.0
            np.testing.assert_array_equal(sess.run(z), [0.0, 0.0])
            assert sess.run(zn) == 0.0


def test_clip_by_global_norm_of_an_infinite_norm_gives_nan_as_tf1():
    with tf.Graph().as_default():
        (c, d), n = tf.clip_by_global_norm([tf.constant([np.inf, 1.0]), tf.constant([2.0])], 1.0)
        with tf.Session() as sess:
            assert np.isinf(sess.run(n))
            assert np.isnan(sess.run(c)).all() and np.isnan(sess.run(d)).all()


def test_clip_by_global_norm_in_a_training_step_bounds_the_update(problem):
    opt = tf.train.GradientDescentOptimizer(1.0)
    grads_and_vars = opt.compute_gradients(problem["loss"])
    grads, variables = zip(*grads_and_vars)
    clipped, _ = tf.clip_by_global_norm(list(grads), 0.01)
    train_op = opt.apply_gradients(list(zip(clipped, variables)))
    g = problem["grads"](*problem["init"])
    scale = 0.01 / _global_norm(g)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_op)
        np.testing.assert_allclose(sess.run(problem["w"]), problem["init"][0] - scale * g[0], rtol=1e-12)


def test_global_norm_skips_none_and_rejects_bad_lists(rng):
    a = rng.standard_normal((2, 2)).astype(np.float32)
    with tf.Graph().as_default():
        n = tf.global_norm([None, tf.constant(a)])
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(n), np.linalg.norm(a), rtol=1e-6)
        with pytest.raises(ArgumentTypeError, match="t_list should be a sequence"):
            tf.global_norm(tf.constant(a))
        with pytest.raises(ArgumentTypeError, match="t_list should be a sequence"):
            tf.clip_by_global_norm("ab", 1.0)
        with pytest.raises(InvalidArgumentError, match="holds no tensors"):
            tf.global_norm([None])
        with pytest.raises(DTypeError, match="one dtype"):
            tf.global_norm([tf.constant(a), tf.constant(a.astype(np.float64))])


@pytest.mark.parametrize("axes", [None, 0, [1]])
def test_clip_by_norm_matches_numpy(rng, axes):
    t = rng.standard_normal((3, 4)) * 3
    np_axes = None if axes is None else tuple(np.atleast_1d(axes))
    l2 = np.sqrt(np.sum(t * t, axis=np_axes, keepdims=True))
    expected = t * 2.0 / np.maximum(l2, 2.0)
    with tf.Graph().as_default():
        out = tf.clip_by_norm(tf.constant(t), 2.0, axes=axes)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(out), expected, rtol=1e-12)
    assert out.shape == (3, 4)


def test_clip_by_norm_of_zero_has_a_finite_gradient():
    with tf.Graph().as_default():
        x = tf.Variable(np.zeros(3))
        out = tf.clip_by_norm(x, 1.0)
        (grad,) = tf.gradients(tf.reduce_sum(out), [x])
        with tf.Session() as sess:
            sess.run(x.initializer)
            np.testing.assert_array_equal(sess.run(out), np.zeros(3))
            assert np.isfinite(sess.run(grad)).all()


def test_clip_by_norm_refuses_a_clip_norm_that_broadcasts_t():
    with tf.Graph().as_default():
        with pytest.raises(ShapeError, match="clip_by_norm"):
            tf.clip_by_norm(tf.constant([1.0, 2.0]), tf.constant([[1.0], [2.0]]))
        with pytest.raises(DTypeError, match="floating-point"):
            tf.clip_by_norm(tf.constant([1, 2]), 1.0)
