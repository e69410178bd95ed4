"""Everyday TF1 and PyTorch programs with control flow and second derivatives, written as
their users write them: only the import line differs from the original program."""

from __future__ import annotations

import numpy as np

TF1_PROGRAM = """
import numpy as np
import rustgrad.compat.v1 as tf   # was: import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
x = tf.placeholder(tf.float64, shape=[3])
n = tf.placeholder(tf.int32, shape=[])

# x ** (n + 1) by repeated multiplication, with a trip count fed at run time
_, power = tf.while_loop(lambda i, p: i < n, lambda i, p: (i + 1, p * x), [tf.constant(0), x])
loss = tf.reduce_sum(tf.cond(tf.reduce_sum(x) > 0, lambda: power, lambda: -power))
grad = tf.gradients(loss, x)[0]
hess = tf.hessians(tf.reduce_sum(x ** 3.0), x)[0]
squares = tf.map_fn(lambda row: row * row, tf.reshape(x, [3, 1]))

with tf.Session() as sess:
    values = sess.run([loss, grad, hess, squares], feed_dict={x: [1.0, 2.0, 3.0], n: 2})
"""

TORCH_PROGRAM = """
import rustgrad as torch   # was: import torch

x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
y = (x ** 3).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
penalty = (g ** 2).sum()
penalty.backward()
hessian = torch.autograd.functional.hessian(lambda t: (t ** 3).sum(), x.detach())
values = [g.detach().numpy(), x.grad.numpy(), hessian.numpy()]
"""


def run(program: str) -> list:
    scope: dict = {}
    exec(compile(program, "<program>", "exec"), scope)  # noqa: S102 - the program under test
    return scope["values"]


def test_tf1_program_with_while_loop_cond_gradients_hessians_and_map_fn():
    loss, grad, hess, squares = run(TF1_PROGRAM)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(loss, (x ** 3).sum(), rtol=1e-12)
    np.testing.assert_allclose(grad, 3 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(hess, np.diag(6 * x), rtol=1e-12)
    np.testing.assert_allclose(squares, (x ** 2).reshape(3, 1), rtol=1e-12)


def test_torch_program_with_create_graph_and_autograd_functional():
    g, x_grad, hessian = run(TORCH_PROGRAM)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-12)
    # d/dx sum((3x^2)^2) = 36 x^3
    np.testing.assert_allclose(x_grad, 36 * x ** 3, rtol=1e-12)
    np.testing.assert_allclose(hessian, np.diag(6 * x), rtol=1e-12)
