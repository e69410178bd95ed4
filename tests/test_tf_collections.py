"""tf.GraphKeys and graph collections, variables in them, tf.assign*, and DType's TF1 properties."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_graph_keys_are_tf1s_strings():
    keys = tf.GraphKeys
    assert (keys.GLOBAL_VARIABLES, keys.TRAINABLE_VARIABLES, keys.LOCAL_VARIABLES, keys.MODEL_VARIABLES) == (
        "variables", "trainable_variables", "local_variables", "model_variables")
    assert (keys.UPDATE_OPS, keys.LOSSES, keys.REGULARIZATION_LOSSES, keys.SUMMARIES) == (
        "update_ops", "losses", "regularization_losses", "summaries")
    assert (keys.GLOBAL_STEP, keys.TRAIN_OP, keys.SAVERS, keys.INIT_OP) == (
        "global_step", "train_op", "savers", "init_op")


def test_variables_land_in_global_and_trainable_collections():
    v = tf.Variable(1.0, name="v")
    frozen = tf.Variable(1.0, name="frozen", trainable=False)
    local = tf.Variable(1.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [v, frozen]
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == [v]
    assert tf.global_variables() == [v, frozen] and tf.trainable_variables() == [v]
    assert tf.local_variables() == [local]
    with pytest.raises(ArgumentTypeError, match="collections argument to Variable constructor must be a list"):
        tf.Variable(1.0, collections="variables")


def test_scope_filtering_is_a_regex_match_on_the_name():
    with tf.variable_scope("dense"):
        k = tf.get_variable("kernel", [2, 2])
    with tf.variable_scope("dense_1"):
        k1 = tf.get_variable("kernel", [2, 2])
    with tf.variable_scope("other"):
        o = tf.get_variable("dense", [1])
    assert tf.global_variables("dense") == [k, k1], "TF1 matches from the start: dense_1 is in scope 'dense'"
    assert tf.global_variables(scope="dense/") == [k]
    assert tf.trainable_variables(scope=".*dense") == [k, k1, o]
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "other") == [o]
    with tf.variable_scope("dense", reuse=True) as scope:
        assert scope.global_variables() == [k] and scope.trainable_variables() == [k]


def test_older_graph_argument_still_selects_the_graph():
    g = tf.get_default_graph()
    with tf.Graph().as_default():
        v = None
        with g.as_default():
            v = tf.Variable(1.0)
        assert tf.global_variables() == []
        assert tf.global_variables(g) == [v] and tf.trainable_variables(g) == [v]


def test_add_get_and_ref():
    g = tf.get_default_graph()
    c = tf.constant(1.0, name="c")
    tf.add_to_collection("mine", c)
    tf.add_to_collection("mine", 3)
    got = tf.get_collection("mine")
    got.append("ignored")
    assert tf.get_collection("mine") == [c, 3], "get_collection returns a copy"
    ref = tf.get_collection_ref("mine")
    ref.append("kept")
    assert g.get_collection("mine") == [c, 3, "kept"]
    assert tf.get_collection("mine", scope="c") == [c], "items without a name are left out when filtering"
    assert tf.get_collection("missing") == []
    assert "missing" not in g.get_all_collection_keys()


def test_add_to_collections_takes_a_name_or_names_once_each():
    c = tf.constant(1.0)
    tf.add_to_collections("one", c)
    tf.add_to_collections(["a", "b", "a"], c)
    g = tf.get_default_graph()
    assert g.get_collection("one") == [c] and g.get_collection("a") == [c] and g.get_collection("b") == [c]
    g.add_to_collection(("tuple", "key"), c)
    assert set(g.get_all_collection_keys()) == {"one", "a", "b"}, "only string keys are listed, as TF1"


def test_collections_belong_to_their_graph():
    tf.add_to_collection(tf.GraphKeys.LOSSES, 1)
    with tf.Graph().as_default():
        assert tf.get_collection(tf.GraphKeys.LOSSES) == []


def test_an_optimizer_trains_the_trainable_collection():
    with tf.variable_scope("model"):
        w = tf.get_variable("w", initializer=[2.0])
        tf.get_variable("frozen", initializer=[5.0], trainable=False)
    loss = tf.reduce_sum(w * w)
    step = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        np.testing.assert_allclose(sess.run(w), [1.0])
        assert [v.op.name for v in tf.global_variables()] == ["model/w", "model/frozen"]


def test_assign_functions_update_variables():
    v = tf.Variable(1.0, name="v")
    a = tf.assign(v, 5.0)
    add = tf.assign_add(v, 2.0, name="plus")
    sub = tf.assign_sub(v, 1.5)
    assert add.op.name == "plus"
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(a) == 5.0
        assert sess.run(add) == 7.0
        assert sess.run(sub) == 5.5
        assert sess.run(v) == 5.5
    with pytest.raises(ArgumentTypeError, match="assign: ref must be a Variable, got Tensor") as info:
        tf.assign(tf.constant(1.0), 2.0)
    assert isinstance(info.value, TypeError)


def test_dtype_tf1_properties():
    assert tf.float32.base_dtype == tf.float32
    assert tf.float64.as_numpy_dtype is np.float64 and tf.int32.as_numpy_dtype is np.int32
    assert tf.float32.is_floating and not tf.int64.is_floating
    assert tf.int64.is_integer and not tf.bool.is_integer and tf.bool.is_bool
    v = tf.Variable(np.zeros(2, np.float32))
    assert v.dtype.base_dtype == tf.float32


def test_the_global_step_is_in_its_collections_and_found_there():
    graph = tf.Graph()
    with graph.as_default():
        step = tf.train.get_or_create_global_step()
        assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
        assert step in tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        assert step not in tf.trainable_variables()
        assert (step.name, step.dtype) == ("global_step:0", tf.int64)
        assert tf.train.get_global_step() is step
        tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, tf.Variable(0, name="another_step"))
        assert tf.train.get_global_step() is None  # TF1: ambiguous, so none
