"""Run under mpiexec by tests/test_distributed_static.py: static-mode data parallelism
(DistributedOptimizer, broadcast_global_variables) against one process training on the whole
batch, ranks bitwise equal after every step. Works for any number of ranks dividing 12.

Arguments: [fallback]: hide mpi4py's MPI._handleof so that the collectives go through mpi4py.
Prints, on every rank, one line with a digest of the final weights (for rerun comparisons).
"""

import hashlib
import sys
import warnings

import numpy as np
from mpi4py import MPI

import rustgrad.distributed as dist
import rustgrad.static as tf
from rustgrad import _rustgrad

fallback = "fallback" in sys.argv[1:]
if fallback:
    del MPI._handleof  # as an mpi4py without the private helper

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
BATCH, STEPS = 12, 20
k = BATCH // n
rs = np.random.RandomState(0)
X, Y = rs.randn(STEPS, BATCH, 4), rs.randn(STEPS, BATCH, 3)


def initial(seed):
    g = np.random.RandomState(seed)
    return [g.randn(4, 16) * 0.5, g.randn(16) * 0.1, g.randn(16, 3) * 0.5, g.randn(3) * 0.1]


def build(dtype, optimizer, distributed, seed, **options):
    graph = tf.Graph()
    with graph.as_default():
        x, y = tf.placeholder(dtype, [None, 4]), tf.placeholder(dtype, [None, 3])
        w1, b1, w2, b2 = (tf.Variable(v.astype(dtype)) for v in initial(seed))
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2) + b2 - y))
        opt = {"sgd": lambda: tf.train.MomentumOptimizer(0.1, 0.9), "adam": lambda: tf.train.AdamOptimizer(0.01)}
        opt = opt[optimizer]()
        if distributed:
            opt = dist.DistributedOptimizer(opt, **options)
        train = opt.minimize(loss)
        init = tf.global_variables_initializer()
        bcast = dist.broadcast_global_variables(0) if distributed else None
    return graph, (x, y, [w1, b1, w2, b2], train, init, bcast)


def ranks_agree_bitwise(weights):
    digest = hashlib.sha256(b"".join(w.tobytes() for w in weights)).hexdigest()
    everyone = MPI.COMM_WORLD.allgather(digest)
    assert len(set(everyone)) == 1, everyone
    return digest


def train(dtype, optimizer, distributed, **options):
    graph, (x, y, weights, train_op, init, bcast) = build(dtype, optimizer, distributed, 1 + r * distributed,
                                                           **options)
    types = [op.type for op in graph.get_operations()]
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        if distributed:
            sess.run(bcast)
            ranks_agree_bitwise(sess.run(weights))
        _rustgrad._collective_seconds()
        mine = slice(r * k, (r + 1) * k) if distributed else slice(None)
        for step in range(STEPS):
            sess.run(train_op, {x: X[step, mine].astype(dtype), y: Y[step, mine].astype(dtype)})
            if distributed:
                ranks_agree_bitwise(sess.run(weights))
        calls, _ = _rustgrad._collective_seconds()
        return sess.run(weights), types, calls


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    digests = []
    for dtype, tolerance in (("float64", 1e-12), ("float32", 1e-6)):
        for optimizer in ("sgd", "adam"):
            reference, _, _ = train(dtype, optimizer, False)
            for threshold in (None, 0):
                weights, types, calls = train(dtype, optimizer, True, fusion_threshold_bytes=threshold)
                allreduces = types.count("HorovodAllreduce")
                # Tensor fusion: one allreduce for the four gradients, or one each without fusion.
                assert allreduces == (1 if threshold is None else 4), (threshold, allreduces)
                assert calls == STEPS * allreduces, (calls, allreduces)
                diff = max(float(np.abs(a - b).max()) for a, b in zip(weights, reference))
                scale = max(float(np.abs(b).max()) for b in reference)
                assert diff / scale <= tolerance, (dtype, optimizer, threshold, diff / scale)
                digests.append(ranks_agree_bitwise(weights))
    fallback_warnings = [w for w in caught if "static collectives go through mpi4py" in str(w.message)]
    assert len(fallback_warnings) == (1 if fallback else 0), [str(w.message) for w in caught]

transport = dist._static.communicator().transport
assert ("mpi4py" in transport) == fallback, transport
print(f"rank {r}: static ok via {transport}; digest {hashlib.sha256(''.join(digests).encode()).hexdigest()}",
      flush=True)
