"""A two-layer network as a TF1-style static graph, run by a Session.

The reference TensorFlow 1.x program with ``import tensorflow.compat.v1 as tf`` replaced by
``import rustgrad.compat.v1 as tf`` (and a few steps instead of 500). Building the graph
computes nothing; ``sess.run`` compiles the part the fetches need once and reuses the plan.
Run it with ``python examples/two_layer_static.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import rustgrad.compat.v1 as tf

tf.disable_v2_behavior()


def main(steps: int = 20) -> float:
    n, d_in, h, d_out = 64, 1000, 100, 10

    x = tf.placeholder(tf.float32, shape=(None, d_in))
    y = tf.placeholder(tf.float32, shape=(None, d_out))

    w1 = tf.Variable(tf.random_normal((d_in, h), seed=1))
    w2 = tf.Variable(tf.random_normal((h, d_out), seed=2))

    hidden = tf.matmul(x, w1)
    h_relu = tf.maximum(hidden, tf.zeros(1))
    y_pred = tf.matmul(h_relu, w2)
    loss = tf.reduce_sum((y - y_pred) ** 2.0)
    grad_w1, grad_w2 = tf.gradients(loss, [w1, w2])
    assert grad_w1 is not None and grad_w2 is not None  # None only for an unconnected variable

    learning_rate = 1e-6
    # The weight update is part of the graph: running new_w1 assigns the variable.
    new_w1 = w1.assign(w1 - learning_rate * grad_w1)
    new_w2 = w2.assign(w2 - learning_rate * grad_w2)

    rng = np.random.default_rng(0)
    x_value: npt.NDArray[np.float64] = rng.standard_normal((n, d_in))
    y_value: npt.NDArray[np.float64] = rng.standard_normal((n, d_out))

    loss_value = float("nan")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            # run() mirrors the structure of its fetches: a list of three values here.
            fetched: list[Any] = sess.run([loss, new_w1, new_w2], feed_dict={x: x_value, y: y_value})
            loss_value = float(fetched[0])
            print(step, loss_value)
    return loss_value


if __name__ == "__main__":
    main()
