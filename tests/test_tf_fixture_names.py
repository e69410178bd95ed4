"""The names of a typical tf.layers network match what TF1 (tf.compat.v1 + tf_keras) gives for the
same program: tests/fixtures/tf1/layer_names.json, written by tools/tf_reference/make_tf1_fixtures.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rustgrad.compat.v1 as tf

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "tf1" / "layer_names.json").read_text())


def l2_regularizer(weight):
    return 0.01 * tf.nn.l2_loss(weight)


@pytest.fixture(scope="module")
def network():
    """The fixture's program (see its "program" entry), built in a new graph."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 3], name="x")
        conv = tf.layers.conv2d(x, 16, 3, padding="same", activation=tf.nn.relu, kernel_regularizer=l2_regularizer)
        bn = tf.layers.batch_normalization(conv, training=True)
        pool = tf.layers.max_pooling2d(bn, 2, 2)
        flat = tf.layers.flatten(pool)
        hidden = tf.layers.dense(flat, 64, activation=tf.nn.relu)
        dropped = tf.layers.dropout(hidden, rate=0.5, training=True)
        logits = tf.layers.dense(dropped, 10)
        with tf.variable_scope("shared"):
            first = tf.layers.dense(logits, 4, name="proj")
        with tf.variable_scope("shared", reuse=True):
            second = tf.layers.dense(logits, 4, name="proj")
        outputs = {"conv2d": conv, "batch_normalization": bn, "max_pooling2d": pool, "flatten": flat,
                   "dense": hidden, "dropout": dropped, "dense_1": logits, "shared/proj": first,
                   "shared/proj (reused)": second}
        return graph, outputs


def test_the_fixture_was_made_by_tf_compat_v1_with_tf_keras():
    assert FIXTURE["made_by"] == "tools/tf_reference/make_tf1_fixtures.py"
    assert FIXTURE["versions"]["tensorflow"].startswith("2.") and "tf_keras" in FIXTURE["versions"]


def test_global_variable_names_match_tf1(network):
    graph, _ = network
    with graph.as_default():
        assert [v.name for v in tf.global_variables()] == FIXTURE["global_variables"]
        assert [v.name for v in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)] == FIXTURE["global_variables"]


def test_trainable_variable_names_match_tf1(network):
    graph, _ = network
    with graph.as_default():
        assert [v.name for v in tf.trainable_variables()] == FIXTURE["trainable_variables"]


def test_update_ops_names_match_tf1(network):
    graph, _ = network
    assert [op.name for op in graph.get_collection(tf.GraphKeys.UPDATE_OPS)] == FIXTURE["update_ops"]
    for name in FIXTURE["update_ops"]:
        assert graph.get_operation_by_name(name).name == name


def test_regularization_losses_lie_in_the_name_scope_tf1_gives_them(network):
    """The op inside is the regularizer's last one (TF's ``mul`` for ``0.01 * l2_loss(w)``)."""
    graph, _ = network
    losses = graph.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name.rsplit("/", 1)[0] for t in losses] == [n.rsplit("/", 1)[0] for n in FIXTURE["regularization_losses"]]
    for loss in losses:
        assert graph.get_tensor_by_name(loss.name) is loss or graph.get_tensor_by_name(loss.name).name == loss.name


def test_each_layer_output_lies_in_the_name_scope_tf1_gives_it(network):
    """Op types differ from TF's (FusedBatchNormV3, SelectV2, ...): the scopes are compared."""
    _, outputs = network
    for key, tf_name in FIXTURE["outputs"].items():
        assert outputs[key].name.rsplit("/", 1)[0] == tf_name.rsplit("/", 1)[0], key


def test_the_plain_layer_outputs_have_tf1s_full_names(network):
    _, outputs = network
    for key in ("conv2d", "batch_normalization", "max_pooling2d", "flatten", "dense", "dense_1", "shared/proj",
                "shared/proj (reused)"):
        assert outputs[key].name == FIXTURE["outputs"][key], key


def test_layer_output_shapes_match_tf1(network):
    _, outputs = network
    for key, shape in FIXTURE["output_shapes"].items():
        assert outputs[key].shape.as_list() == shape, key
