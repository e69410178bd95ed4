"""``tf.control_dependencies``, ``tf.group``, ``tf.no_op`` and ``tf.tuple``: which ops run,
in what order, and what the reads ordered after an assign see.

The control inputs TF1 gives each op of ``tools/tf_reference/control_program.py`` come from
TF's ``tf.compat.v1`` (``tests/fixtures/tf1/control_dependencies.json``, written offline by
``tools/tf_reference/make_control_fixtures.py``)."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "tf1" / "control_dependencies.json").read_text())


def control_program():
    path = ROOT / "tools" / "tf_reference" / "control_program.py"
    spec = importlib.util.spec_from_file_location("control_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.mark.parametrize("key", sorted(FIXTURE["ops"]))
def test_ops_get_the_names_types_and_control_inputs_tf1_gives_them(graph, key):
    ops = control_program().build(tf)
    expected = FIXTURE["ops"][key]
    op = ops[key]
    assert (op.name, op.type, [c.name for c in op.control_inputs]) == (
        expected["name"], expected["type"], expected["control_inputs"])


def test_a_read_inside_the_block_sees_the_assigned_value_and_one_outside_the_start_value(graph):
    v = tf.Variable(1.0, name="v")
    assign = tf.assign(v, 5.0)
    with tf.control_dependencies([assign]):
        after = tf.identity(v)
        doubled = v * 2.0
    before = tf.identity(v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([before, after, doubled]) == [1.0, 5.0, 10.0]
        assert sess.run(v) == 5.0
        sess.run(v.initializer)
        assert sess.run(doubled) == 10.0, "fetching an op of the block runs the assign"
        assert sess.run(v) == 5.0


def test_assign_adds_ordered_by_control_dependencies_add_up_in_one_run(graph):
    counter = tf.Variable(0, dtype=tf.int64, name="counter")
    first = tf.assign_add(counter, 1)
    with tf.control_dependencies([first]):
        second = tf.assign_add(counter, 10)
        with tf.control_dependencies([second]):
            third = tf.assign_sub(counter, 100)
    unordered = tf.assign_add(counter, 1000)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        assert sess.run(third) == -89
        assert sess.run(counter) == -89
        assert sess.run([first, second]) == [-88, -78]
        assert sess.run(unordered) == 922, "an assign_add outside the blocks adds to the start value"


def test_a_loss_computed_after_the_train_op_sees_the_updated_weights(graph):
    rng = np.random.default_rng(0)
    x_value = rng.standard_normal((8, 3)).astype(np.float32)
    y_value = rng.standard_normal((8, 1)).astype(np.float32)
    w0 = rng.standard_normal((3, 1)).astype(np.float32)
    x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(w0, name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.control_dependencies([train]):
        loss_after = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    with tf.Session() as sess:
        sess.run(w.initializer)
        before, after = sess.run([loss, loss_after], {x: x_value, y: y_value})
        new_w = sess.run(w)
    xd, yd, wd = (a.astype(np.float64) for a in (x_value, y_value, w0))
    grad = 2.0 / len(xd) * xd.T @ (xd @ wd - yd)
    expected_w = wd - 0.1 * grad
    np.testing.assert_allclose(new_w, expected_w, rtol=1e-5)
    np.testing.assert_allclose(before, np.mean((xd @ wd - yd) ** 2), rtol=1e-5)
    np.testing.assert_allclose(after, np.mean((xd @ expected_w - yd) ** 2), rtol=1e-5)


def test_batch_norm_update_ops_run_with_the_train_op_under_control_dependencies(graph):
    rng = np.random.default_rng(1)
    x_value = rng.standard_normal((16, 4)).astype(np.float32) * 3.0 + 2.0
    x = tf.placeholder(tf.float32, [None, 4])
    h = tf.layers.batch_normalization(tf.layers.dense(x, 4, name="dense"), training=True, name="bn")
    loss = tf.reduce_mean(tf.square(h))
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(update_ops) == 2
    with tf.control_dependencies(update_ops):
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    without_updates = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    moving_mean, moving_variance = (tf.get_default_graph().get_tensor_by_name(f"bn/{n}:0")
                                    for n in ("moving_mean", "moving_variance"))
    dense_out = tf.get_default_graph().get_tensor_by_name("dense/BiasAdd:0")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(without_updates, {x: x_value})
        np.testing.assert_array_equal(sess.run(moving_mean), np.zeros(4, np.float32))
        sess.run(tf.global_variables_initializer())
        features = sess.run(dense_out, {x: x_value}).astype(np.float64)
        sess.run(train, {x: x_value})
        mean, variance = sess.run([moving_mean, moving_variance])
    np.testing.assert_allclose(mean, 0.01 * features.mean(axis=0), rtol=1e-5, atol=1e-7)
    assert not np.allclose(variance, 1.0), "the moving variance was not updated"


def test_group_runs_its_members_as_control_inputs_and_has_no_value(graph):
    a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
    both = tf.group(tf.assign(a, 10.0), tf.assign(b, 20.0).op, name="both")
    assert (both.type, both.inputs, [c.type for c in both.control_inputs]) == ("NoOp", [], ["Assign", "Assign"])
    nothing = tf.no_op(name="nothing")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([both, nothing]) == [None, None]
        assert sess.run([a, b]) == [10.0, 20.0]


def test_tuple_gates_each_result_on_all_of_them(graph):
    v = tf.Variable(0.0, name="v")
    x = tf.constant([1.0, 2.0], name="x")
    assign, value = tf.tuple([tf.assign(v, 7.0), x])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(value), [1.0, 2.0])
        assert sess.run(v) == 7.0, "fetching one result of the tuple ran the other's op"
    assert tf.tuple([None, x])[0] is None


def test_variables_made_inside_a_block_initialize_without_running_its_controls(graph):
    flag = tf.Variable(0.0, name="flag")
    set_flag = tf.assign(flag, 1.0)
    with tf.control_dependencies([set_flag]):
        w = tf.get_variable("w", shape=[2], initializer=tf.zeros_initializer())
    with tf.Session() as sess:
        sess.run(flag.initializer)
        sess.run(w.initializer)
        assert sess.run(flag) == 0.0


def test_control_dependencies_of_an_op_nothing_fetched_still_runs_through_a_group(graph):
    v = tf.Variable(3.0, name="v")
    with tf.control_dependencies([tf.assign_add(v, 1.0)]):
        step = tf.no_op()
    with tf.Session() as sess:
        sess.run(v.initializer)
        for _ in range(3):
            sess.run(step)
        assert sess.run(v) == 6.0


def test_bad_control_inputs_raise_tf1_errors(graph):
    with pytest.raises(ArgumentTypeError, match="Control input must be Operation or Tensor: 3"):
        with tf.control_dependencies([3]):
            pass
    with pytest.raises(TypeError, match="Expected tf.group"):
        tf.group(1.0)
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0, name="foreign")
    with pytest.raises(InvalidArgumentError, match="foreign.*another graph") as caught:
        with tf.control_dependencies([foreign]):
            pass
    assert isinstance(caught.value, ValueError)
    with pytest.raises(InvalidArgumentError, match="at least one Tensor"):
        tf.tuple([None])


def test_a_block_left_by_an_exception_stops_adding_controls(graph):
    c = tf.constant(1.0, name="c")
    with pytest.raises(RuntimeError):
        with tf.control_dependencies([c]):
            raise RuntimeError("boom")
    assert tf.constant(2.0).op.control_inputs == []


def test_control_inputs_can_be_named(graph):
    tf.constant(1.0, name="c")
    with tf.control_dependencies(["c", "c:0"]):
        d = tf.constant(2.0)
    assert [op.name for op in d.op.control_inputs] == ["c"]


def test_an_assert_as_a_control_input_guards_the_ops_of_the_block(graph):
    x = tf.placeholder(tf.float32, [None])
    v = tf.Variable(0.0, name="v")
    with tf.control_dependencies([tf.assert_positive(x, message="x must be positive")]):
        total = tf.reduce_sum(x)
        update = tf.assign(v, total)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(update, {x: [1.0, 2.0]}) == 3.0
        with pytest.raises(InvalidArgumentError, match="x must be positive"):
            sess.run(update, {x: [1.0, -2.0]})
        assert sess.run(v) == 3.0, "the failed run stored no assignment"


def test_a_print_as_a_control_input_runs_before_the_ops_of_the_block(tmp_path):
    import subprocess
    import sys

    program = (
        "import rustgrad.compat.v1 as tf\n"
        "x = tf.constant([1.0, 2.0])\n"
        "with tf.control_dependencies([tf.Print(x, [x], message='x is ')]):\n"
        "    y = x * 2.0\n"
        "print(tf.Session().run(y).tolist())\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[2.0, 4.0]"
    assert "x is [1 2]" in result.stderr
