"""The cases of benchmarks/test_bench_coverage.py: one per op or module family that the other
benchmark files do not time (shape ops, indexing, sorting, selection, random numbers, softmax,
activations, normalisation, pooling, embeddings, data loading and the TF1 framework layer), each at
one mid size, as a factory of rustgrad's callable and a factory of numpy's doing the same work. Each
case's two callables return the same values (tests/test_benchmark_report.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import rustgrad
import rustgrad.nn.functional as F
from floor import TWO_LAYER_FORMULA, two_layer_step_flops

Factory = Callable[[], Callable[[], Any]]


@dataclass(frozen=True)
class Case:
    label: str
    ours: Factory
    theirs: Factory
    flops: int | None = None
    formula: str = ""


def _matrix(rows: int = 1024, cols: int = 1024, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, cols), dtype=np.float32)


def _cat() -> Case:
    a, b = _matrix(seed=0), _matrix(seed=1)
    ta, tb = rustgrad.from_numpy(a), rustgrad.from_numpy(b)
    return Case("`cat` of two 1024×1024 along dim 0", lambda: lambda: rustgrad.cat([ta, tb], 0),
                lambda: lambda: np.concatenate([a, b], 0))


def _indexing() -> Case:
    a = _matrix(8192, 256)
    rows = np.random.default_rng(1).integers(0, 8192, 4096)
    ta, trows = rustgrad.from_numpy(a), rustgrad.from_numpy(rows)
    return Case("advanced indexing `x[rows]`, 4096 of 8192×256 rows", lambda: lambda: ta[trows],
                lambda: lambda: a[rows])


def _gather() -> Case:
    a = _matrix()
    index = np.random.default_rng(1).integers(0, 1024, (1024, 256))
    ta, tindex = rustgrad.from_numpy(a), rustgrad.from_numpy(index)
    return Case("`gather(1, index)`, 1024×256 of 1024×1024", lambda: lambda: ta.gather(1, tindex),
                lambda: lambda: np.take_along_axis(a, index, 1))


def _sort() -> Case:
    a = _matrix()
    ta = rustgrad.from_numpy(a)
    return Case("`sort(dim=1)` of 1024×1024", lambda: lambda: rustgrad.sort(ta, 1)[0], lambda: lambda: np.sort(a, 1))


def _where() -> Case:
    a, b = _matrix(seed=0), _matrix(seed=1)
    ta, tb = rustgrad.from_numpy(a), rustgrad.from_numpy(b)
    return Case("`where(a < b, a, b)`, 1024×1024", lambda: lambda: rustgrad.where(ta < tb, ta, tb),
                lambda: lambda: np.where(a < b, a, b))


def _randn() -> Case:
    def ours() -> Callable[[], Any]:
        rustgrad.manual_seed(0)
        return lambda: rustgrad.randn(1024, 1024)

    def theirs() -> Callable[[], Any]:
        rng = np.random.default_rng(0)
        return lambda: rng.standard_normal((1024, 1024), dtype=np.float32)

    return Case("`randn(1024, 1024)`", ours, theirs)


def _numpy_softmax_grad(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    s = np.exp(a - a.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    return s * (g - (g * s).sum(1, keepdims=True))


def _softmax() -> Case:
    a, g = _matrix(512, 1000, 0), _matrix(512, 1000, 1)
    tg = rustgrad.from_numpy(g)

    def ours() -> Callable[[], Any]:
        x = rustgrad.tensor(a, requires_grad=True)

        def run() -> Any:
            x.grad = None
            F.softmax(x, dim=1).backward(tg)
            return x.grad

        return run

    return Case("`softmax(dim=1)` forward + backward, 512×1000", ours, lambda: lambda: _numpy_softmax_grad(a, g))


def _numpy_layer_norm_grad(a: np.ndarray, g: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = a.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(a.var(1, keepdims=True) + eps)
    xhat = (a - mean) * rstd
    return rstd * (g - g.mean(1, keepdims=True) - xhat * (g * xhat).mean(1, keepdims=True))


def _layer_norm() -> Case:
    a, g = _matrix(256, 1024, 0), _matrix(256, 1024, 1)
    tg = rustgrad.from_numpy(g)

    def ours() -> Callable[[], Any]:
        x = rustgrad.tensor(a, requires_grad=True)

        def run() -> Any:
            x.grad = None
            F.layer_norm(x, (1024,)).backward(tg)
            return x.grad

        return run

    return Case("`layer_norm` forward + backward, 256×1024", ours, lambda: lambda: _numpy_layer_norm_grad(a, g))


def _numpy_max_pool_grad(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    windows = a.reshape(n, c, h // 2, 2, w // 2, 2)
    winners = windows == windows.max(axis=(3, 5), keepdims=True)  # random normals: no ties
    return winners.astype(np.float32).reshape(n, c, h, w)


def _max_pool() -> Case:
    a = np.random.default_rng(0).standard_normal((32, 16, 32, 32), dtype=np.float32)

    def ours() -> Callable[[], Any]:
        x = rustgrad.tensor(a, requires_grad=True)

        def run() -> Any:
            x.grad = None
            F.max_pool2d(x, 2).sum().backward()
            return x.grad

        return run

    return Case("`max_pool2d(2)` forward + backward, 32×16×32×32", ours, lambda: lambda: _numpy_max_pool_grad(a))


def _numpy_batch_norm_grad(a: np.ndarray, g: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    axes = (0, 2, 3)
    mean = a.mean(axes, keepdims=True)
    rstd = 1 / np.sqrt(a.var(axes, keepdims=True) + eps)
    xhat = (a - mean) * rstd
    return rstd * (g - g.mean(axes, keepdims=True) - xhat * (g * xhat).mean(axes, keepdims=True))


def _batch_norm() -> Case:
    rng = np.random.default_rng(0)
    a, g = (rng.standard_normal((32, 16, 32, 32), dtype=np.float32) for _ in range(2))
    tg = rustgrad.from_numpy(g)

    def ours() -> Callable[[], Any]:
        x = rustgrad.tensor(a, requires_grad=True)

        def run() -> Any:
            x.grad = None
            F.batch_norm(x, None, None, training=True).backward(tg)
            return x.grad

        return run

    return Case("`batch_norm` (training) forward + backward, 32×16×32×32", ours,
                lambda: lambda: _numpy_batch_norm_grad(a, g))


def _silu() -> Case:
    a = _matrix()

    def ours() -> Callable[[], Any]:
        x = rustgrad.tensor(a, requires_grad=True)

        def run() -> Any:
            x.grad = None
            F.silu(x).sum().backward()
            return x.grad

        return run

    def theirs() -> Callable[[], Any]:
        def run() -> np.ndarray:
            s = 1 / (1 + np.exp(-a))
            return s * (1 + a * (1 - s))

        return run

    return Case("`silu` forward + backward, 1024×1024", ours, theirs)


def _embedding() -> Case:
    rng = np.random.default_rng(0)
    table, g = rng.standard_normal((10_000, 128), dtype=np.float32), rng.standard_normal((4096, 128), dtype=np.float32)
    index = rng.integers(0, 10_000, 4096)
    tindex, tg = rustgrad.from_numpy(index), rustgrad.from_numpy(g)

    def ours() -> Callable[[], Any]:
        w = rustgrad.tensor(table, requires_grad=True)

        def run() -> Any:
            w.grad = None
            F.embedding(tindex, w).backward(tg)
            return w.grad

        return run

    def theirs() -> Callable[[], Any]:
        def run() -> np.ndarray:
            _ = table[index]
            grad = np.zeros_like(table)
            np.add.at(grad, index, g)
            return grad

        return run

    return Case("`embedding` forward + backward, 4096 of 10000×128", ours, theirs)


def _small_batch_linear() -> Case:
    # x·Wᵀ with W stored (out, in) by rows: on the `gemm` crate until 2026-12-07, 7 times slower.
    x, w, b = _matrix(8, 512, seed=0), _matrix(512, 512, seed=1), _matrix(1, 512, seed=2)[0]
    layer = rustgrad.nn.Linear(512, 512)
    with rustgrad.no_grad():
        layer.weight.copy_(rustgrad.from_numpy(w))
        layer.bias.copy_(rustgrad.from_numpy(b))
    tx = rustgrad.from_numpy(x)

    def ours() -> Callable[[], Any]:
        def run() -> Any:
            with rustgrad.no_grad():
                return layer(tx)

        return run

    return Case("`nn.Linear(512, 512)` on a batch of 8, no_grad", ours, lambda: lambda: x @ w.T + b,
                flops=2 * 8 * 512 * 512, formula="2·N·in·out")


def _data_loader() -> Case:
    x = _matrix(1400, 64)
    labels = np.arange(1400) % 10

    def ours() -> Callable[[], Any]:
        from rustgrad.utils.data import DataLoader, TensorDataset

        loader = DataLoader(TensorDataset(rustgrad.from_numpy(x), rustgrad.from_numpy(labels)), batch_size=64)
        return lambda: [float(b.sum()) for b, _ in loader]

    def theirs() -> Callable[[], Any]:
        def epoch() -> list[float]:
            sums = []
            for start in range(0, len(x), 64):
                batch, _ = x[start:start + 64], labels[start:start + 64]
                sums.append(float(batch.sum()))
            return sums

        return epoch

    return Case("`DataLoader` epoch, 1400×64 in batches of 64", ours, theirs)


def _tf1_mlp_step() -> Case:
    from nn_steps import BATCH, CLASSES, D_IN, HIDDEN, LR, MlpProblem, numpy_step

    problem = MlpProblem.make(0)

    def ours() -> Callable[[], Any]:
        from rustgrad import static as tf

        w1, b1, w2, b2 = problem.weights
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, (BATCH, D_IN))
            labels = tf.placeholder(tf.int64, (BATCH,))
            h = tf.layers.dense(x, HIDDEN, activation=tf.nn.relu, kernel_initializer=tf.constant_initializer(w1.T),
                                bias_initializer=tf.constant_initializer(b1))
            logits = tf.layers.dense(h, CLASSES, kernel_initializer=tf.constant_initializer(w2.T),
                                     bias_initializer=tf.constant_initializer(b2))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            train = tf.train.AdamOptimizer(LR).minimize(loss)
            init = tf.global_variables_initializer()
        sess = tf.Session(graph=graph)
        sess.run(init)
        feed = {x: problem.x, labels: problem.labels}
        return lambda: float(sess.run([loss, train], feed_dict=feed)[0])

    return Case("TF1 MLP step: `tf.layers.dense` ×2, sparse softmax cross-entropy, `AdamOptimizer`, batch 64",
                ours, lambda: numpy_step(problem), two_layer_step_flops(BATCH, D_IN, HIDDEN, CLASSES),
                TWO_LAYER_FORMULA)


CASES: dict[str, Case] = {}
for _name, _make in [("cat", _cat), ("indexing", _indexing), ("gather", _gather), ("sort", _sort),
                     ("where", _where), ("randn", _randn), ("softmax", _softmax), ("layer_norm", _layer_norm),
                     ("max_pool2d", _max_pool), ("batch_norm", _batch_norm), ("silu", _silu),
                     ("embedding", _embedding), ("small_batch_linear", _small_batch_linear),
                     ("data_loader", _data_loader), ("tf1_mlp_step", _tf1_mlp_step)]:
    CASES[_name] = _make()

