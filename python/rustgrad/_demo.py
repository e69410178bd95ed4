"""The demo: the reference two-layer network trained in eager and static modes.

``python -m rustgrad`` runs it; the benchmarks and tests reuse these loops.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import rustgrad
from rustgrad import static as tf

N, D_IN, H, D_OUT = 64, 1000, 100, 10
LEARNING_RATE = 1e-6


class MyReLU(rustgrad.autograd.Function):
    """The reference program's custom ReLU."""

    @staticmethod
    def forward(ctx, input):  # type: ignore[no-untyped-def]
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):  # type: ignore[no-untyped-def]
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


@dataclass
class Problem:
    """Data and initial weights, shared by every mode so their curves can be compared."""

    x: np.ndarray
    y: np.ndarray
    w1: np.ndarray
    w2: np.ndarray

    @staticmethod
    def make(seed: int = 0, sizes: tuple[int, int, int, int] = (N, D_IN, H, D_OUT)) -> Problem:
        n, d_in, h, d_out = sizes
        rng = np.random.default_rng(seed)
        draw = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
        return Problem(draw(n, d_in), draw(n, d_out), draw(d_in, h), draw(h, d_out))


@dataclass
class Run:
    mode: str
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def us_per_step(self) -> float:
        return 1e6 * self.seconds / max(len(self.losses), 1)


Progress = Optional[Callable[[int, int], None]]


def train_eager(problem: Problem, steps: int, progress: Progress = None) -> Run:
    """The reference PyTorch loop, with rustgrad in place of torch."""
    x, y = rustgrad.from_numpy(problem.x), rustgrad.from_numpy(problem.y)
    w1 = rustgrad.tensor(problem.w1, requires_grad=True)
    w2 = rustgrad.tensor(problem.w2, requires_grad=True)
    run = Run("eager")
    start = time.perf_counter()
    for t in range(steps):
        y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        run.losses.append(loss.item())
        loss.backward()
        with rustgrad.no_grad():
            w1 -= LEARNING_RATE * w1.grad
            w2 -= LEARNING_RATE * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
        if progress:
            progress(t + 1, steps)
    run.seconds = time.perf_counter() - start
    return run


def build_static(problem: Problem) -> tuple[tf.Graph, dict]:
    """The reference TF1 graph, with variables initialised from the problem's weights."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(None, problem.x.shape[1]))
        y = tf.placeholder(tf.float32, shape=(None, problem.y.shape[1]))
        w1 = tf.Variable(problem.w1)
        w2 = tf.Variable(problem.w2)
        h = tf.matmul(x, w1)
        h_relu = tf.maximum(h, tf.zeros(1))
        y_pred = tf.matmul(h_relu, w2)
        loss = tf.reduce_sum((y - y_pred) ** 2.0)
        grad_w1, grad_w2 = tf.gradients(loss, [w1, w2])
        new_w1 = w1.assign(w1 - LEARNING_RATE * grad_w1)
        new_w2 = w2.assign(w2 - LEARNING_RATE * grad_w2)
        init = tf.global_variables_initializer()
    return graph, {"x": x, "y": y, "loss": loss, "train": [new_w1, new_w2], "init": init}


def train_static(problem: Problem, steps: int, progress: Progress = None) -> Run:
    graph, t = build_static(problem)
    run = Run("static")
    with tf.Session(graph=graph) as sess:
        sess.run(t["init"])
        feed = {t["x"]: problem.x, t["y"]: problem.y}
        start = time.perf_counter()
        for step in range(steps):
            loss_value, _, _ = sess.run([t["loss"], *t["train"]], feed_dict=feed)
            run.losses.append(float(loss_value))
            if progress:
                progress(step + 1, steps)
        run.seconds = time.perf_counter() - start
    return run


def progress_bar(label: str) -> Callable[[int, int], None]:
    """A one-line text progress bar on stderr (only when stderr is a terminal)."""
    interactive = sys.stderr.isatty()

    def show(done: int, total: int) -> None:
        if not interactive and done != total:
            return
        width = 30
        filled = width * done // total
        bar = "#" * filled + "." * (width - filled)
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r{label:>7} [{bar}] {done}/{total}{end}")
        sys.stderr.flush()

    return show
