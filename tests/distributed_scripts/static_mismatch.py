"""Run under mpiexec -n 2 by tests/test_distributed_static.py: ranks whose graphs disagree on a
gradient's shape or dtype get a clear error on every rank (no hang), and the group stays usable."""

import numpy as np

import rustgrad.distributed as dist
import rustgrad.static as tf
from rustgrad.errors import DTypeError, ShapeError

dist.init_process_group("mpi")
r = dist.get_rank()


def step(width, dtype):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, [None, 4])
        w = tf.Variable(np.ones((4, width), dtype), name="dense/kernel")
        b = tf.Variable(np.zeros(3, dtype), name="dense/bias")
        loss = tf.reduce_sum(tf.matmul(x, w)) + tf.reduce_sum(b)
        train = dist.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(train, {x: np.ones((2, 4), dtype)})
        return sess.run(w)


try:
    step(5 if r == 1 else 3, "float32")
    raise AssertionError("no error for different shapes")
except ShapeError as err:
    assert "HorovodAllreduce: the ranks disagree on 'gradient of dense/kernel' (rank 0: float32 [4, 3]; rank 1: " \
           "float32 [4, 5])" in str(err), str(err)
try:
    step(3, "float64" if r == 0 else "float32")
    raise AssertionError("no error for different dtypes")
except DTypeError as err:
    assert "the ranks disagree on 'gradient of dense/kernel' (rank 0: float64 [4, 3]; rank 1: float32 [4, 3])" \
           in str(err), str(err)

# The group still works: a graph the ranks agree on trains.
assert np.allclose(step(3, "float64"), 1 - 0.1 * 2)
print(f"rank {r}: mismatch ok", flush=True)
