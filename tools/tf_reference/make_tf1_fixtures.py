"""Writes the TF1 reference fixtures for ``tf.layers`` into ``tests/fixtures/tf1/``.

TF 1.15 does not install on Python 3.11, so the reference is TF 2.x's ``tf.compat.v1`` with
``tf_keras`` behind ``tf.compat.v1.layers``, run OFFLINE in its own virtualenv (never a test
dependency; the tests only read the JSON files this writes)::

    python3.11 -m venv /work/venv-tfref
    /work/venv-tfref/bin/pip install tensorflow-cpu tf_keras numpy
    TF_USE_LEGACY_KERAS=1 /work/venv-tfref/bin/python tools/tf_reference/make_tf1_fixtures.py

The checked-in files were produced by tensorflow-cpu 2.21.0 and tf_keras 2.21.0 (numpy 2.4.6,
CPython 3.11); each file records the versions that made it.

``layer_names.json``: the names TF1 gives for a typical ``tf.layers`` network: global and
trainable variables, the ``UPDATE_OPS`` and ``REGULARIZATION_LOSSES`` collections, and the main
output tensors. ``layer_values.json``: outputs of each layer on fixed inputs and weights (the
weights set with ``assign``), the moving statistics after one batch-norm update, and the
gradients of a scalar loss with respect to a small network's weights.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_v2_behavior()

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tf1"
DECIMALS = 3  # inputs and weights are rounded so float32 holds them (almost) exactly


def versions() -> dict:
    import tf_keras

    return {"tensorflow": tf.__version__, "tf_keras": tf_keras.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0]}


def fixed(rng: np.random.RandomState, *shape: int) -> np.ndarray:
    return np.round(rng.uniform(-1.0, 1.0, size=shape), DECIMALS).astype(np.float32)


def as_list(a: np.ndarray) -> list:
    """float32 values to 6 significant digits (the tests compare to 1e-5 relative)."""
    return np.vectorize(lambda v: float(f"{v:.6g}"), otypes=[object])(np.asarray(a, np.float64)).tolist()


def l2_regularizer(weight: tf.Tensor) -> tf.Tensor:
    return 0.01 * tf1.nn.l2_loss(weight)


def layer_names() -> dict:
    """The names of a conv net with batch norm, two dense layers and a reused scope."""
    graph = tf1.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 8, 8, 3], name="x")
        conv = tf1.layers.conv2d(x, 16, 3, padding="same", activation=tf.nn.relu, kernel_regularizer=l2_regularizer)
        bn = tf1.layers.batch_normalization(conv, training=True)
        pool = tf1.layers.max_pooling2d(bn, 2, 2)
        flat = tf1.layers.flatten(pool)
        hidden = tf1.layers.dense(flat, 64, activation=tf.nn.relu)
        dropped = tf1.layers.dropout(hidden, rate=0.5, training=True)
        logits = tf1.layers.dense(dropped, 10)
        with tf1.variable_scope("shared"):
            first = tf1.layers.dense(logits, 4, name="proj")
        with tf1.variable_scope("shared", reuse=True):
            second = tf1.layers.dense(logits, 4, name="proj")
        outputs = {"conv2d": conv, "batch_normalization": bn, "max_pooling2d": pool, "flatten": flat,
                   "dense": hidden, "dropout": dropped, "dense_1": logits, "shared/proj": first,
                   "shared/proj (reused)": second}
        return {
            "program": "x[None,8,8,3] -> conv2d(16,3,same,relu,l2 0.01) -> batch_normalization(training=True) -> "
                       "max_pooling2d(2,2) -> flatten -> dense(64,relu) -> dropout(0.5,training=True) -> dense(10); "
                       "variable_scope('shared'): dense(4,name='proj') twice, the second with reuse=True",
            "global_variables": [v.name for v in tf1.global_variables()],
            "trainable_variables": [v.name for v in tf1.trainable_variables()],
            "update_ops": [op.name for op in tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)],
            "regularization_losses": [t.name for t in tf1.get_collection(tf1.GraphKeys.REGULARIZATION_LOSSES)],
            "outputs": {key: t.name for key, t in outputs.items()},
            "output_shapes": {key: t.shape.as_list() for key, t in outputs.items()},
        }


def run_layer(build, feeds_and_weights) -> dict:
    """Builds ``build(x)`` in a new graph, assigns the weights by variable name, runs it."""
    graph = tf1.Graph()
    with graph.as_default():
        x_value, weights = feeds_and_weights
        x = tf1.placeholder(tf.float32, x_value.shape, name="x")
        y = build(x)
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            by_name = {v.name: v for v in tf1.global_variables()}
            for name, value in weights.items():
                sess.run(by_name[name].assign(value))
            return {"output": as_list(sess.run(y, {x: x_value}))}


def layer_values() -> dict:
    rng = np.random.RandomState(15)
    cases = {}

    x = fixed(rng, 2, 3)
    w = {"dense/kernel:0": fixed(rng, 3, 4), "dense/bias:0": fixed(rng, 4)}
    cases["dense_relu"] = {"input": as_list(x), "weights": {k: as_list(v) for k, v in w.items()},
                           "units": 4, "activation": "relu",
                           **run_layer(lambda t: tf1.layers.dense(t, 4, activation=tf.nn.relu), (x, w))}

    x = fixed(rng, 1, 6, 6, 2)  # even size: 'same' with stride 2 pads one row/column, at the bottom/right
    for key, kwargs in {"conv2d_same": {"padding": "same"},
                        "conv2d_valid_stride2": {"padding": "valid", "strides": 2},
                        "conv2d_same_stride2": {"padding": "same", "strides": (2, 2)}}.items():
        w = {"conv2d/kernel:0": fixed(rng, 3, 3, 2, 3), "conv2d/bias:0": fixed(rng, 3)}
        cases[key] = {"input": as_list(x), "weights": {k: as_list(v) for k, v in w.items()},
                      "filters": 3, "kernel_size": 3, "kwargs": kwargs,
                      **run_layer(lambda t, kw=kwargs: tf1.layers.conv2d(t, 3, 3, **kw), (x, w))}

    x = fixed(rng, 1, 5, 5, 1)
    for key, fn, kwargs in (("max_pooling2d_valid", tf1.layers.max_pooling2d, {"padding": "valid"}),
                            ("max_pooling2d_same", tf1.layers.max_pooling2d, {"padding": "same"}),
                            ("average_pooling2d_valid", tf1.layers.average_pooling2d, {"padding": "valid"}),
                            ("average_pooling2d_same", tf1.layers.average_pooling2d, {"padding": "same"})):
        cases[key] = {"input": as_list(x), "pool_size": 2, "strides": 2, "kwargs": kwargs,
                      **run_layer(lambda t, f=fn, kw=kwargs: f(t, 2, 2, **kw), (x, {}))}

    x = fixed(rng, 2, 2, 3, 2)
    cases["flatten"] = {"input": as_list(x), **run_layer(tf1.layers.flatten, (x, {}))}
    cases["dropout_rate0_training"] = {"input": as_list(x), **run_layer(
        lambda t: tf1.layers.dropout(t, rate=0.0, training=True), (x, {}))}
    cases["dropout_inference"] = {"input": as_list(x), **run_layer(
        lambda t: tf1.layers.dropout(t, rate=0.5, training=False), (x, {}))}

    cases["batch_normalization_4d"] = batch_norm_case(fixed(rng, 4, 2, 2, 3), rng, {})
    cases["batch_normalization_2d_momentum"] = batch_norm_case(fixed(rng, 5, 3), rng, {"momentum": 0.9,
                                                                                         "epsilon": 0.01})
    cases["gradients"] = gradient_case(rng)
    return cases


def batch_norm_case(x: np.ndarray, rng: np.random.RandomState, kwargs: dict) -> dict:
    """Training output, inference output, and the moving statistics after one update step."""
    channels = x.shape[-1]
    w = {"batch_normalization/gamma:0": fixed(rng, channels) + 1.5,
         "batch_normalization/beta:0": fixed(rng, channels),
         "batch_normalization/moving_mean:0": fixed(rng, channels),
         "batch_normalization/moving_variance:0": fixed(rng, channels) + 1.5}
    graph = tf1.Graph()
    with graph.as_default():
        t = tf1.placeholder(tf.float32, x.shape, name="x")
        train_out = tf1.layers.batch_normalization(t, training=True, **kwargs)
        infer_out = tf1.layers.batch_normalization(t, training=False, reuse=True, name="batch_normalization", **kwargs)
        update_ops = tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)
        by_name = {v.name: v for v in tf1.global_variables()}
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            for name, value in w.items():
                sess.run(by_name[name].assign(value))
            infer_before = sess.run(infer_out, {t: x})
            train_value, _ = sess.run([train_out, update_ops], {t: x})
            moving = sess.run([by_name["batch_normalization/moving_mean:0"],
                               by_name["batch_normalization/moving_variance:0"]])
    return {"input": as_list(x), "kwargs": kwargs, "weights": {k: as_list(v) for k, v in w.items()},
            "training_output": as_list(train_value), "inference_output": as_list(infer_before),
            "moving_mean_after_update": as_list(moving[0]), "moving_variance_after_update": as_list(moving[1])}


def gradient_case(rng: np.random.RandomState) -> dict:
    """d loss / d weights for conv2d(same, relu) -> batch_normalization(training) -> max_pooling2d ->
    flatten -> dense(3), loss = sum(logits * target) + the kernel's l2 regularizer."""
    x = fixed(rng, 2, 4, 4, 2)
    target = fixed(rng, 2, 3)
    w = {"conv2d/kernel:0": fixed(rng, 3, 3, 2, 3), "conv2d/bias:0": fixed(rng, 3),
         "batch_normalization/gamma:0": fixed(rng, 3) + 1.5, "batch_normalization/beta:0": fixed(rng, 3),
         "dense/kernel:0": fixed(rng, 12, 3), "dense/bias:0": fixed(rng, 3)}
    graph = tf1.Graph()
    with graph.as_default():
        t = tf1.placeholder(tf.float32, x.shape, name="x")
        h = tf1.layers.conv2d(t, 3, 3, padding="same", activation=tf.nn.relu, kernel_regularizer=l2_regularizer)
        h = tf1.layers.batch_normalization(h, training=True)
        h = tf1.layers.max_pooling2d(h, 2, 2)
        logits = tf1.layers.dense(tf1.layers.flatten(h), 3)
        loss = tf1.reduce_sum(logits * target) + tf1.losses.get_regularization_loss()
        variables = tf1.trainable_variables()
        grads = tf1.gradients(loss, variables)
        by_name = {v.name: v for v in tf1.global_variables()}
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            for name, value in w.items():
                sess.run(by_name[name].assign(value))
            loss_value, grad_values = sess.run([loss, grads], {t: x})
    return {"input": as_list(x), "target": as_list(target), "weights": {k: as_list(v) for k, v in w.items()},
            "program": gradient_case.__doc__.split("\n")[0] + " flatten -> dense(3), loss = sum(logits * target) + "
                       "get_regularization_loss() with kernel_regularizer 0.01 * l2_loss on the conv kernel",
            "loss": float(loss_value),
            "gradients": {v.name: as_list(g) for v, g in zip(variables, grad_values)}}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {"made_by": "tools/tf_reference/make_tf1_fixtures.py", "versions": versions()}
    for name, data in (("layer_names.json", layer_names()), ("layer_values.json", layer_values())):
        lines = [f"{json.dumps(key)}: {json.dumps(value)}" for key, value in {**meta, **data}.items()]
        (OUT / name).write_text("{\n" + ",\n".join(lines) + "\n}\n")
        print(f"wrote {OUT / name} ({(OUT / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
