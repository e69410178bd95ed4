"""tf.name_scope, tf.variable_scope and tf.get_variable: the names TF 1.15 gives (written by
hand from TF1's rules), sharing and reuse, and TF1's errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, RustgradError


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def op_names(g):
    return [op.name for op in g.get_operations()]


# ----- name scopes -----

def test_name_scope_prefixes_op_names_and_yields_its_full_name():
    with tf.name_scope("layer") as scope:
        c = tf.constant(1.0, name="c")
        d = tf.constant(2.0)
    assert scope == "layer/"
    assert (c.name, d.name, c.op.name) == ("layer/c:0", "layer/Const:0", "layer/c")


def test_ops_of_one_type_in_a_scope_are_numbered():
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with tf.name_scope("layer"):
        a = tf.matmul(x, x)
        b = tf.matmul(a, x)
    assert (a.op.name, b.op.name) == ("layer/MatMul", "layer/MatMul_1")


def test_entering_a_name_scope_again_opens_a_new_unique_one():
    names = []
    for _ in range(3):
        with tf.name_scope("a") as scope:
            names.append(scope)
    assert names == ["a/", "a_1/", "a_2/"]


def test_nested_name_scopes_join_with_slashes():
    with tf.name_scope("outer"):
        with tf.name_scope("inner") as scope:
            c = tf.constant(0.0)
            assert tf.get_default_graph().get_name_scope() == "outer/inner"
    assert scope == "outer/inner/"
    assert c.name == "outer/inner/Const:0"
    assert tf.get_name_scope() == ""


def test_scope_names_and_op_names_share_one_namespace():
    tf.constant(1.0, name="a")
    with tf.name_scope("a") as scope:
        pass
    with tf.name_scope("b"):
        pass
    b = tf.constant(1.0, name="b")
    assert (scope, b.name) == ("a_1/", "b_1:0")


def test_names_are_made_unique_without_regard_to_case():
    tf.constant(1.0, name="Foo")
    assert tf.constant(1.0, name="foo").name == "foo_1:0"


def test_a_name_taken_by_hand_is_skipped_when_numbering():
    tf.constant(1.0, name="c_1")
    tf.constant(1.0, name="c")
    assert tf.constant(1.0, name="c").name == "c_2:0"


def test_a_scope_name_ending_in_slash_is_entered_as_it_is():
    with tf.name_scope("a") as a_scope:
        pass
    with tf.name_scope("other"):
        with tf.name_scope(a_scope) as scope:
            c = tf.constant(1.0)
        with tf.name_scope("abs/") as absolute:
            pass
    assert (scope, c.name, absolute) == ("a/", "a/Const:0", "abs/")


def test_name_scope_none_goes_back_to_the_root():
    with tf.name_scope("a"):
        with tf.name_scope(None) as scope:
            c = tf.constant(1.0)
        d = tf.constant(1.0)
    assert (scope, c.name, d.name) == ("", "Const:0", "a/Const:0")


def test_name_scope_default_name_and_values():
    g2 = tf.Graph()
    with g2.as_default():
        x = tf.constant(1.0, name="x")
    with tf.name_scope(None, "default", [x]) as scope:
        assert tf.get_default_graph() is g2, "the scope opens in the graph of its values"
        y = tf.identity(x)
    assert (scope, y.name) == ("default/", "default/Identity:0")
    with pytest.raises(InvalidArgumentError, match="At least one of name"):
        with tf.name_scope(None, None, [x]):
            pass


def test_an_invalid_scope_name_raises_value_error():
    with pytest.raises(InvalidArgumentError, match="'_bad' is not a valid scope name") as info:
        with tf.name_scope("_bad"):
            pass
    assert isinstance(info.value, ValueError)


def test_graph_unique_name_predicts_without_taking():
    g = tf.get_default_graph()
    tf.constant(1.0, name="w")
    assert g.unique_name("w", mark_as_used=False) == "w_1"
    assert g.unique_name("w", mark_as_used=False) == "w_1"
    assert g.unique_name("w") == "w_1"
    assert tf.constant(1.0, name="w").name == "w_2:0"


def test_each_thread_has_its_own_name_scope():
    g = tf.get_default_graph()
    seen = []

    def other():
        with g.as_default():
            seen.append(tf.constant(1.0, name="t").name)

    with tf.name_scope("main"):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert seen == ["t:0"]


# ----- tf.Variable under name scopes -----

def test_a_variable_and_its_ops_are_named_under_the_name_scope():
    g = tf.get_default_graph()
    with tf.name_scope("a"):
        v = tf.Variable(1.0, name="v")
    assert (v.name, v.op.name) == ("a/v:0", "a/v")
    assert v.initializer.name == "a/v/Assign"
    assert v.initial_value.name == "a/v/initial_value:0"
    assert g.get_tensor_by_name("a/v:0") is not None
    assert v.value().name == "a/v/read:0" and g.get_tensor_by_name("a/v/read:0").op == v.value().op
    assert v.read_value().name == "read:0"
    with tf.name_scope("elsewhere"):
        assert v.read_value().name == "elsewhere/read:0"


def test_variables_with_one_name_are_numbered():
    v1 = tf.Variable(1.0, name="v")
    v2 = tf.Variable(1.0, name="v")
    v3 = tf.Variable(1.0)
    assert (v1.name, v2.name, v3.name) == ("v:0", "v_1:0", "Variable:0")
    assert v2.initializer.name == "v_1/Assign"
    assert v2.initial_value.name == "v_1/initial_value:0"


def test_optimizer_slots_are_named_after_their_variable_in_any_name_scope():
    with tf.variable_scope("dense"):
        w = tf.get_variable("kernel", initializer=[1.0])
    with tf.name_scope("train"):
        tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(w * w))
    assert "dense/kernel/Momentum:0" in [v.name for v in tf.global_variables()]


# ----- variable scopes and get_variable -----

def test_get_variable_names_the_variable_after_the_variable_scope():
    g = tf.get_default_graph()
    with tf.variable_scope("dense"):
        k = tf.get_variable("kernel", [3, 4])
        b = tf.get_variable("bias", [4], initializer=tf.zeros_initializer())
    assert (k.name, k.op.name, b.name) == ("dense/kernel:0", "dense/kernel", "dense/bias:0")
    assert g.get_tensor_by_name("dense/kernel:0").op == k.op
    for name in ("dense/kernel/Initializer/random_uniform", "dense/kernel/Assign", "dense/kernel/read",
                 "dense/bias/Initializer/zeros", "dense/bias/Assign", "dense/bias/read"):
        assert g.get_operation_by_name(name).name == name
    assert tuple(k.shape) == (3, 4) and k.dtype == tf.float32


def test_ops_in_a_variable_scope_are_in_its_name_scope():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.variable_scope("dense"):
        k = tf.get_variable("kernel", [3, 4])
        y = tf.matmul(x, k)
        z = tf.matmul(x, k)
    assert (y.op.name, z.op.name) == ("dense/MatMul", "dense/MatMul_1")
    assert tf.get_default_graph().get_operation_by_name("dense/MatMul_1") == z.op


def test_default_name_is_made_unique_per_scope():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    names = []
    for _ in range(2):
        with tf.variable_scope(None, default_name="dense") as scope:
            k = tf.get_variable("kernel", [3, 3])
            y = tf.matmul(x, k)
        names.append((scope.name, scope.original_name_scope, k.name, y.op.name))
    assert names == [("dense", "dense/", "dense/kernel:0", "dense/MatMul"),
                     ("dense_1", "dense_1/", "dense_1/kernel:0", "dense_1/MatMul")]


def test_default_name_counters_restart_when_the_parent_is_entered_again():
    # TF1's documented example (variable_scope's docstring).
    with tf.variable_scope("foo") as vs:
        with tf.variable_scope(None, default_name="bar"):
            a = tf.get_variable("a", [1])
        with tf.variable_scope(None, default_name="bar"):
            b = tf.get_variable("b", [1])
    with tf.variable_scope(vs):
        with tf.variable_scope(None, default_name="bar"):
            c = tf.get_variable("c", [1])
    assert (a.name, b.name, c.name) == ("foo/bar/a:0", "foo/bar_1/b:0", "foo/bar/c:0")


def test_nested_variable_scopes_join_names():
    with tf.variable_scope("foo"):
        with tf.variable_scope("bar") as scope:
            v = tf.get_variable("v", [1])
            c = tf.constant(1.0)
    assert (scope.name, v.name, c.name) == ("foo/bar", "foo/bar/v:0", "foo/bar/Const:0")


def test_reuse_true_returns_the_same_variable_object():
    with tf.variable_scope("foo"):
        v = tf.get_variable("v", [1])
    with tf.variable_scope("foo", reuse=True):
        v1 = tf.get_variable("v", [1])
        c = tf.constant(1.0)
    assert v1 is v
    assert c.name == "foo_1/Const:0", "the second entry opens the name scope foo_1"
    assert len(tf.global_variables()) == 1


def test_reuse_is_inherited_by_sub_scopes():
    with tf.variable_scope("foo"):
        with tf.variable_scope("bar"):
            v = tf.get_variable("v", [1])
    with tf.variable_scope("foo", reuse=True):
        with tf.variable_scope("bar") as scope:
            assert scope.reuse is True
            assert tf.get_variable("v", [1]) is v


def test_reuse_variables_turns_on_reuse_in_the_open_scope():
    with tf.variable_scope("foo") as scope:
        v = tf.get_variable("v", [1])
        assert scope.reuse is False
        scope.reuse_variables()
        assert tf.get_variable_scope().reuse is True
        assert tf.get_variable("v", [1]) is v


def test_auto_reuse_creates_then_returns():
    def block():
        with tf.variable_scope("foo", reuse=tf.AUTO_REUSE):
            return tf.get_variable("v", [2])

    assert block() is block()
    assert [v.name for v in tf.global_variables()] == ["foo/v:0"]


def test_reentering_a_captured_scope_object_shares_its_variables():
    with tf.variable_scope("foo") as vs:
        v = tf.get_variable("v", [1])
    assert vs.original_name_scope == "foo/"
    with tf.variable_scope(vs, reuse=True) as again:
        assert again.name == "foo"
        assert tf.get_default_graph().get_name_scope() == "foo_1"
        assert tf.get_variable("v", [1]) is v
    with tf.variable_scope(vs, auxiliary_name_scope=False):
        with tf.name_scope(vs.original_name_scope):
            c = tf.constant([1], name="c")
            w = tf.get_variable("w", [1])
    assert (c.name, w.name) == ("foo/c:0", "foo/w:0")


def test_reentering_the_same_variable_scope_object():
    scope = tf.variable_scope("foo")
    with scope:
        v = tf.get_variable("v", [1])
    with scope as entered:
        entered.reuse_variables()
        assert tf.get_variable("v", [1]) is v


def test_variable_names_ignore_name_scopes():
    with tf.name_scope("ns"):
        with tf.variable_scope("vs"):
            with tf.name_scope("inner"):
                v = tf.get_variable("v", [1])
                c = tf.constant(1.0)
    assert (v.name, c.name) == ("vs/v:0", "ns/vs/inner/Const:0")


def test_get_variable_scope_outside_any_scope_is_the_root():
    scope = tf.get_variable_scope()
    assert isinstance(scope, tf.VariableScope)
    assert (scope.name, scope.reuse, scope.original_name_scope) == ("", False, "")


def test_scope_initializer_and_dtype_are_defaults_for_get_variable():
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.5), dtype=tf.float64):
        with tf.variable_scope("inner"):
            v = tf.get_variable("v", [2])
        w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        i = tf.get_variable("i", [2], dtype=tf.int32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vv, wv, iv = sess.run([v, w, i])
    assert v.dtype == tf.float64 and i.dtype == tf.int32
    np.testing.assert_array_equal(vv, [0.5, 0.5])
    np.testing.assert_array_equal(wv, [1.0, 1.0])
    np.testing.assert_array_equal(iv, [0, 0])


def test_integer_and_bool_variables_default_to_zeros():
    i = tf.get_variable("i", [3], dtype=tf.int64)
    b = tf.get_variable("b", [2], dtype=tf.bool)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(i), [0, 0, 0])
        np.testing.assert_array_equal(sess.run(b), [False, False])


def test_a_value_initializer_gives_the_shape_and_dtype():
    v = tf.get_variable("v", initializer=[[1.0, 2.0]])
    n = tf.get_variable("n", initializer=np.arange(3, dtype=np.int64))
    assert (tuple(v.shape), v.dtype, tuple(n.shape), n.dtype) == ((1, 2), tf.float32, (3,), tf.int64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), [[1.0, 2.0]])


def test_an_initializer_class_or_no_argument_callable_is_accepted():
    z = tf.get_variable("z", [2], initializer=tf.zeros_initializer)
    c = tf.get_variable("c", initializer=lambda: tf.constant([3.0, 4.0]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(z), [0.0, 0.0])
        np.testing.assert_array_equal(sess.run(c), [3.0, 4.0])


def test_trainable_false_and_collections():
    v = tf.get_variable("v", [1], trainable=False)
    w = tf.get_variable("w", [1], collections=["mine"])
    assert v in tf.global_variables() and v not in tf.trainable_variables()
    assert w not in tf.global_variables() and w in tf.trainable_variables()
    assert tf.get_collection("mine") == [w]


def test_regularizer_adds_its_loss_to_the_collection():
    g = tf.get_default_graph()
    with tf.variable_scope("dense", regularizer=lambda w: 0.1 * tf.reduce_sum(tf.square(w))):
        k = tf.get_variable("kernel", initializer=[[1.0, 2.0]])
        b = tf.get_variable("bias", [2], regularizer=tf.no_regularizer)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1 and losses[0].name.startswith("dense/kernel/Regularizer/")
    assert b.name == "dense/bias:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(losses[0]) == pytest.approx(0.5)
    assert g.get_operation_by_name("dense/kernel/Assign") == k.initializer


# ----- errors -----

def test_creating_an_existing_variable_raises_tf1s_error():
    with tf.variable_scope("dense"):
        tf.get_variable("kernel", [2, 2])
    with pytest.raises(InvalidArgumentError) as info:
        with tf.variable_scope("dense"):
            tf.get_variable("kernel", [2, 2])
    assert isinstance(info.value, ValueError) and isinstance(info.value, RustgradError)
    assert str(info.value) == ("Variable dense/kernel already exists, disallowed. Did you mean to set reuse=True "
                               "or reuse=tf.AUTO_REUSE in VarScope?")


def test_reusing_a_missing_variable_raises_tf1s_error():
    with pytest.raises(InvalidArgumentError) as info:
        with tf.variable_scope("dense", reuse=True):
            tf.get_variable("kernel", [2, 2])
    assert isinstance(info.value, ValueError)
    assert str(info.value) == ("Variable dense/kernel does not exist, or was not created with tf.get_variable(). "
                               "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?")


def test_a_tf_variable_is_not_in_the_get_variable_store():
    with tf.variable_scope("s"):
        tf.Variable(1.0, name="v")
    with pytest.raises(InvalidArgumentError, match="Variable s/v does not exist"):
        with tf.variable_scope("s", reuse=True):
            tf.get_variable("v", [])


def test_reusing_with_another_shape_or_dtype_raises():
    with tf.variable_scope("foo"):
        tf.get_variable("v", [1])
    with tf.variable_scope("foo", reuse=True):
        with pytest.raises(InvalidArgumentError, match=r"^Trying to share variable foo/v, but specified shape "
                                                       r"\(2,\) and found shape \(1,\)\.$"):
            tf.get_variable("v", [2])
        with pytest.raises(InvalidArgumentError, match="specified dtype float64 and found dtype float32"):
            tf.get_variable("v", [1], dtype=tf.float64)
        assert tf.get_variable("v", [None]).name == "foo/v:0", "an unknown dim is compatible"


def test_shape_with_a_constant_initializer_raises():
    with pytest.raises(InvalidArgumentError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("v", [2], initializer=[1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="Initializer type 'float32' and explicit dtype 'int32'"):
        tf.get_variable("v", dtype=tf.int32, initializer=[1.0, 2.0])


def test_an_initializer_needing_a_shape_without_one_raises():
    with pytest.raises(InvalidArgumentError, match="The initializer passed is not valid"):
        tf.get_variable("v", initializer=tf.zeros_initializer())


def test_variable_scope_argument_errors():
    with pytest.raises(ArgumentTypeError, match="If default_name is None then name_or_scope is required") as info:
        tf.variable_scope(None)
    assert isinstance(info.value, TypeError)
    with pytest.raises(InvalidArgumentError, match="The reuse parameter must be True or False or None."):
        tf.variable_scope("a", reuse="yes")
    with pytest.raises(InvalidArgumentError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="d", reuse=True):
            pass
    with pytest.raises(ArgumentTypeError, match="name_or_scope must be a string or VariableScope"):
        tf.variable_scope(3)
    assert tf.get_variable_scope().name == "" and tf.get_name_scope() == ""


def test_a_failed_get_variable_changes_nothing():
    g = tf.get_default_graph()
    before = op_names(g)

    def broken(shape, dtype=None, partition_info=None):
        tf.constant(0.0, name="made_before_the_failure")
        raise RuntimeError("initializer failed")

    with pytest.raises(RuntimeError, match="initializer failed"):
        with tf.variable_scope("dense"):
            tf.get_variable("kernel", [2], initializer=broken)
    assert op_names(g)[: len(before)] == before
    assert not any("kernel" in name for name in op_names(g))
    assert tf.global_variables() == []
    with tf.variable_scope("dense2"):
        v = tf.get_variable("kernel", [2])
    assert v.name == "dense2/kernel:0"
    with tf.variable_scope("dense"):
        assert tf.get_variable("kernel", [2]).name == "dense/kernel:0", "the failed name was not taken"


def test_get_variable_in_one_graph_does_not_see_another():
    with tf.variable_scope("s"):
        v = tf.get_variable("v", [1])
    with tf.Graph().as_default():
        with tf.variable_scope("s"):
            w = tf.get_variable("v", [1])
    assert v is not w and v.name == w.name == "s/v:0"


def test_each_thread_starts_in_the_root_variable_scope():
    g = tf.get_default_graph()
    seen = []

    def other():
        with g.as_default():
            seen.append((tf.get_variable_scope().name, tf.get_variable("t", [1]).name))

    with tf.variable_scope("main"):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        assert tf.get_variable("t", [1]).name == "main/t:0"
    assert seen == [("", "t:0")]
