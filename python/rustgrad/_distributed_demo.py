"""``mpiexec -n 2 python -m rustgrad distributed``: data-parallel training over MPI in both modes.

Each rank trains on its shard of every batch: the reference two-layer net (64x1000x100x10) in eager
mode (``all_reduce`` of the gradients) and in static mode (``DistributedOptimizer``), then, when
scikit-learn is installed, the digits CNN in both modes (``DistributedDataParallel``, and
``DistributedOptimizer`` with Adam). Every rank measures its throughput and the share of its step
spent in gradient collectives; rank 0 prints them all.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

import rustgrad
import rustgrad.distributed as dist
from rustgrad import _rustgrad
from rustgrad import static as tf
from rustgrad._demo import LEARNING_RATE, MyReLU, Problem
from rustgrad.distributed._group import _group


@dataclass
class Measured:
    """One rank's run of one model in one mode."""

    name: str
    samples: int
    seconds: float
    collective_seconds: float
    first_loss: float
    last_loss: float

    def line(self, rank: int) -> str:
        share = self.collective_seconds / self.seconds if self.seconds else 0.0
        return (f"  rank {rank}: {self.samples / self.seconds:10.0f} samples/s, {1e3 * self.seconds / STEPS[0]:7.2f} "
                f"ms/step, allreduce {share:5.1%} of the step")


STEPS = [0]  # the steps of the current run, for Measured.line


def _global_loss(local: float, reduce_sum: bool) -> float:
    """The loss over the whole batch: the sum (or mean) of the ranks' losses on their shards."""
    t = rustgrad.tensor([local], dtype=rustgrad.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM if reduce_sum else dist.ReduceOp.AVG)
    return float(t[0])


def reference_eager(problem: Problem, rows: slice, steps: int, ranks: int) -> Measured:
    """The reference loop on this rank's rows; the gradients are averaged with ``all_reduce``, and
    the learning rate scaled by the number of ranks (the loss is a sum over the batch)."""
    x, y = rustgrad.from_numpy(problem.x[rows]), rustgrad.from_numpy(problem.y[rows])
    w1 = rustgrad.tensor(problem.w1, requires_grad=True)
    w2 = rustgrad.tensor(problem.w2, requires_grad=True)
    losses, comm = [], 0.0
    start = time.perf_counter()
    for _ in range(steps):
        loss = (MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        t0 = time.perf_counter()
        for w in (w1, w2):
            dist.all_reduce(w.grad, op=dist.ReduceOp.AVG)
        comm += time.perf_counter() - t0
        with rustgrad.no_grad():
            for w in (w1, w2):
                w -= LEARNING_RATE * ranks * w.grad
                w.grad.zero_()
    seconds = time.perf_counter() - start
    return Measured("reference net, eager (all_reduce)", steps * len(problem.x[rows]), seconds, comm,
                    _global_loss(losses[0], True), _global_loss(losses[-1], True))


def reference_static(problem: Problem, rows: slice, steps: int, ranks: int) -> Measured:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(None, problem.x.shape[1]))
        y = tf.placeholder(tf.float32, shape=(None, problem.y.shape[1]))
        w1, w2 = tf.Variable(problem.w1), tf.Variable(problem.w2)
        loss = tf.reduce_sum((y - tf.matmul(tf.maximum(tf.matmul(x, w1), 0.0), w2)) ** 2.0)
        optimizer = dist.DistributedOptimizer(tf.train.GradientDescentOptimizer(LEARNING_RATE * ranks))
        train = optimizer.minimize(loss)
        init = tf.global_variables_initializer()
        bcast = dist.broadcast_global_variables(0)
    return _run_static("reference net, static (DistributedOptimizer)", graph, init, bcast, train, loss,
                       {x: problem.x[rows], y: problem.y[rows]}, steps, True)


def _run_static(name: str, graph: Any, init: Any, bcast: Any, train: Any, loss: Any, feed: Any, steps: int,
                reduce_sum: bool, next_feed: Optional[Callable[[int], dict]] = None) -> Measured:
    losses = []
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(bcast)
        _rustgrad._collective_seconds()
        start = time.perf_counter()
        for step in range(steps):
            _, value = sess.run([train, loss], next_feed(step) if next_feed else feed)
            losses.append(float(value))
        seconds = time.perf_counter() - start
        _, comm = _rustgrad._collective_seconds()
    samples = steps * len(next(iter((next_feed(0) if next_feed else feed).values())))
    return Measured(name, samples, seconds, comm, _global_loss(losses[0], reduce_sum),
                    _global_loss(losses[-1], reduce_sum))


def _digits_training_set() -> Optional[tuple[np.ndarray, np.ndarray]]:
    """The digits' training images and labels; None without scikit-learn."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return None
    from rustgrad._digits import load_digits, split_arrays

    images, labels, _, _ = split_arrays(*load_digits())
    return images, labels


def _digits_batches(images: np.ndarray, labels: np.ndarray, batch: int, rank: int, ranks: int,
                    steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every step's shard of this rank: the same shuffled batches on every rank, split by rank."""
    order = np.random.default_rng(0).permutation(len(images))
    out = []
    for step in range(steps):
        start = (step * batch) % (len(images) - batch)
        mine = order[start:start + batch][rank::ranks]
        out.append((images[mine], labels[mine]))
    return out


def digits_eager(shards: list, steps: int) -> Measured:
    from rustgrad._digits import DigitsNet
    from rustgrad.nn.parallel import DistributedDataParallel

    rustgrad.manual_seed(0)
    model = DistributedDataParallel(DigitsNet())
    optimizer = rustgrad.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = rustgrad.nn.CrossEntropyLoss()
    losses = []
    start = time.perf_counter()
    for images, labels in shards[:steps]:
        optimizer.zero_grad()
        loss = loss_fn(model(rustgrad.from_numpy(images)), rustgrad.from_numpy(labels))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    # DDP's allreduce overlaps backward: its time is not a share of the step, so it is not shown.
    return Measured("digits CNN, eager (DistributedDataParallel)", sum(len(s[0]) for s in shards[:steps]), seconds,
                    float("nan"), _global_loss(losses[0], False), _global_loss(losses[-1], False))


def digits_static(shards: list, steps: int) -> Measured:
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        images = tf.placeholder(tf.float32, [None, 1, 8, 8])
        labels = tf.placeholder(tf.int64, [None])
        h = tf.layers.conv2d(images, 16, 3, padding="same", activation=tf.nn.relu, data_format="channels_first")
        h = tf.layers.flatten(tf.layers.max_pooling2d(h, 2, 2, data_format="channels_first"))
        logits = tf.layers.dense(tf.layers.dense(h, 64, activation=tf.nn.relu), 10)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train = dist.DistributedOptimizer(tf.train.AdamOptimizer(1e-2)).minimize(loss)
        init = tf.global_variables_initializer()
        bcast = dist.broadcast_global_variables(0)
    return _run_static("digits CNN, static (DistributedOptimizer)", graph, init, bcast, train, loss, None, steps,
                       False, lambda step: {images: shards[step][0], labels: shards[step][1]})


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mpiexec -n 2 python -m rustgrad distributed",
        description="Data-parallel training over MPI in eager and static modes (needs rustgrad[mpi]); rank 0 "
                    "prints every rank's throughput and the share of its step spent in gradient allreduces.")
    parser.add_argument("--steps", type=int, default=200, help="training steps of each run (default 200)")
    parser.add_argument("--mode", choices=["eager", "static", "both"], default="both")
    parser.add_argument("--no-digits", action="store_true", help="skip the digits CNN")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be at least 2")
    dist.init_process_group("mpi")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    STEPS[0] = args.steps
    problem = Problem.make(0)
    if len(problem.x) % ranks:
        parser.error(f"the reference batch of {len(problem.x)} rows does not split over {ranks} ranks")
    per_rank = len(problem.x) // ranks
    rows = slice(rank * per_rank, (rank + 1) * per_rank)
    runs: list[Callable[[], Measured]] = []
    if args.mode in ("eager", "both"):
        runs.append(lambda: reference_eager(problem, rows, args.steps, ranks))
    if args.mode in ("static", "both"):
        runs.append(lambda: reference_static(problem, rows, args.steps, ranks))
    digits = None if args.no_digits else _digits_training_set()
    if digits is not None:
        shards = _digits_batches(*digits, 64, rank, ranks, args.steps)
        if args.mode in ("eager", "both"):
            runs.append(lambda: digits_eager(shards, args.steps))
        if args.mode in ("static", "both"):
            runs.append(lambda: digits_static(shards, args.steps))
    if rank == 0:
        transport = dist._static.communicator().transport
        print(f"rustgrad {rustgrad.__version__}: {ranks} ranks, {rustgrad.get_num_threads()} thread(s) each, "
              f"{args.steps} steps per run; static collectives: {transport}", flush=True)
        if not args.no_digits and digits is None:
            print("(digits CNN skipped: scikit-learn is not installed; pip install 'rustgrad[examples]')")
    for run in runs:
        measured = run()
        every = _group("demo").comm.gather(measured, root=0)
        if rank == 0:
            print(f"\n{measured.name}: loss {measured.first_loss:.6g} -> {measured.last_loss:.6g} (whole batch)")
            for r, m in enumerate(every):
                line = m.line(r)
                if m.collective_seconds != m.collective_seconds:  # NaN: overlapped with backward
                    line = line.rsplit(", allreduce", 1)[0] + ", allreduce overlapped with backward"
                print(line)
            total = sum(m.samples / m.seconds for m in every)
            print(f"  all ranks: {total:10.0f} samples/s", flush=True)
    dist.destroy_process_group()
    return 0
