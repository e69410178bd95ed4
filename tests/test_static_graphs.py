"""Graphs, tensors and sessions of the static (TF1-shaped) API as objects: the default
graph and reset_default_graph, tensor and variable metadata (names, shapes, dtypes, op
types), and a Session's lifetime and its part as the default session."""

from __future__ import annotations

import numpy as np
import pytest
from test_static_semantics import _fresh_default_graph  # noqa: F401 - a fresh default graph for every test

import rustgrad.compat.v1 as tf
from rustgrad.static.errors import FailedPreconditionError

# ---------------------------------------------------------------- default graph


def test_graph_as_default_and_get_default_graph():
    outer = tf.get_default_graph()
    g = tf.Graph()
    with g.as_default() as entered:
        assert entered is g
        assert tf.get_default_graph() is g
        c = tf.constant(1.0)
        inner = tf.Graph()
        with inner.as_default():
            assert tf.get_default_graph() is inner
        assert tf.get_default_graph() is g
    assert tf.get_default_graph() is outer
    assert c.graph is g
    assert tf.constant(2.0).graph is outer
    assert len(g.get_operations()) == 1


def test_reset_default_graph():
    old = tf.get_default_graph()
    t = tf.constant(1.0)
    tf.reset_default_graph()
    new = tf.get_default_graph()
    assert new is not old
    assert t.graph is old
    assert new.get_operations() == []
    assert tf.constant(1.0).name == "Const:0"  # names restart in the new graph
    with tf.Graph().as_default():
        with pytest.raises(AssertionError):
            tf.reset_default_graph()


def test_session_uses_default_graph_or_given_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant([1.0, 2.0])
        sess_default = tf.Session()
    assert sess_default.graph is g
    sess_explicit = tf.Session(graph=g)
    try:
        np.testing.assert_array_equal(sess_default.run(c), [1.0, 2.0])
        np.testing.assert_array_equal(sess_explicit.run(c), [1.0, 2.0])
    finally:
        sess_default.close()
        sess_explicit.close()


# ---------------------------------------------------------------- tensor metadata


def test_tensor_shape_dtype_name_and_op():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    assert isinstance(x.shape, tf.TensorShape)
    assert x.shape.as_list() == [None, 3]
    assert x.get_shape().as_list() == [None, 3]
    assert x.shape.rank == 2 and x.shape.ndims == 2
    assert not x.shape.is_fully_defined()
    assert x.shape[0] is None and x.shape[1] == 3
    assert x.dtype == tf.float32
    assert x.name == "Placeholder:0"
    assert x.op.type == "Placeholder" and x.op.name == "Placeholder"
    x2 = tf.placeholder(tf.float64, shape=(2, 3))
    assert x2.name == "Placeholder_1:0" and x2.dtype == tf.float64
    assert x2.shape.is_fully_defined()
    w = tf.ones((3, 4))
    m1 = tf.matmul(x, w)
    m2 = tf.matmul(x, w)
    m3 = tf.matmul(x, w, name="mine")
    assert m1.name == "MatMul:0" and m2.name == "MatMul_1:0" and m3.name == "mine:0"
    assert m1.op.type == "MatMul" and m2.op.name == "MatMul_1"
    assert m1.shape.as_list() == [None, 4]
    assert m1.op.inputs[0] is not None and [t.name for t in m1.op.inputs] == ["Placeholder:0", w.name]
    assert m1.op.outputs[0].name == "MatMul:0"
    assert tf.constant(1.0).name == "Const:0"
    assert tf.constant(1.0).name == "Const_1:0"


def test_unknown_rank_shape():
    x = tf.placeholder(tf.float32)
    assert x.shape.rank is None
    with pytest.raises(ValueError):
        x.shape.as_list()
    with tf.Session() as sess:
        out = sess.run(x * 2.0, {x: np.ones((2, 1, 3))})
    assert out.shape == (2, 1, 3)


def test_op_types():
    x = tf.placeholder(tf.float32, shape=(2,))
    v = tf.Variable(np.zeros(2, np.float32))
    assert (x + x).op.type == "AddV2"
    assert (x - x).op.type == "Sub"
    assert (x * x).op.type == "Mul"
    assert (x / x).op.type == "RealDiv"
    assert tf.maximum(x, x).op.type == "Maximum"
    assert tf.reduce_sum(x).op.type == "Sum"
    assert tf.reduce_mean(x).op.type == "Mean"
    assert tf.constant(1.0).op.type == "Const"
    assert v.assign(x).op.type == "Assign"
    assert tf.global_variables_initializer().type == "NoOp"
    assert tf.random_normal((2,)).op.type == "RandomStandardNormal"


def test_variable_metadata():
    v = tf.Variable(np.zeros((3, 2)), name="weights", dtype=tf.float64)
    assert v.name == "weights:0"
    assert v.dtype == tf.float64
    assert v.shape.as_list() == [3, 2]
    assert isinstance(v, tf.Tensor)
    assert v.initializer.name == "weights/Assign"


def test_numpy_float64_values_keep_their_dtype_as_in_tf1():
    """TF1: tf.constant / tf.Variable of a float64 ndarray are float64 (Python floats: float32)."""
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant([1.0, 2.0]).dtype == tf.float32
    assert tf.constant(np.zeros(2, np.float32)).dtype == tf.float32
    assert tf.constant(np.zeros(2)).dtype == tf.float64
    assert tf.Variable(np.zeros((3, 2))).dtype == tf.float64


# ---------------------------------------------------------------- sessions


def test_session_context_manager_and_close():
    c = tf.constant(1.0)
    with tf.Session() as sess:
        assert not sess.closed
        assert tf.get_default_session() is sess
        assert c.eval() == 1.0
    assert sess.closed
    with pytest.raises(FailedPreconditionError):
        tf.get_default_session()
    other = tf.Session()
    assert other.run(c) == 1.0
    other.close()
    assert other.closed
    with pytest.raises(FailedPreconditionError, match="closed Session"):
        other.run(c)


def test_operation_run_uses_default_session():
    v = tf.Variable(np.float32(3.0))
    with tf.Session() as sess:
        v.initializer.run()
        assert v.eval() == 3.0
        assert sess.run(v) == 3.0
