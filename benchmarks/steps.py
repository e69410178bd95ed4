"""One training step of the two-layer net, in every way the suite compares."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import rustgrad
from rustgrad import static as tf
from rustgrad._demo import LEARNING_RATE, MyReLU, Problem


def eager_batch_step(problem: Problem, custom_relu: bool = True) -> Callable[[Any], float]:
    """The reference PyTorch loop body on the batch it is given (a rustgrad tensor of x's shape)."""
    y = rustgrad.from_numpy(problem.y)
    w1 = rustgrad.tensor(problem.w1, requires_grad=True)
    w2 = rustgrad.tensor(problem.w2, requires_grad=True)
    relu = MyReLU.apply if custom_relu else rustgrad.relu

    def step(x: Any) -> float:
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        value = loss.item()
        loss.backward()
        with rustgrad.no_grad():
            w1.sub_(LEARNING_RATE * w1.grad)
            w2.sub_(LEARNING_RATE * w2.grad)
            w1.grad.zero_()
            w2.grad.zero_()
        return value

    return step


def eager_step(problem: Problem, custom_relu: bool = True) -> Callable[[], float]:
    """The reference PyTorch loop body (custom Function ReLU, or the built-in relu) on the problem's x."""
    x = rustgrad.from_numpy(problem.x)
    train_on = eager_batch_step(problem, custom_relu)
    return lambda: train_on(x)


def compiled_batch_step(problem: Problem, custom_relu: bool = True, warmup: int = 10) -> Any:
    """``eager_batch_step`` under ``rustgrad.compile``, warmed up on the problem's x until it replays."""
    compiled = rustgrad.compile(eager_batch_step(problem, custom_relu))
    x = rustgrad.from_numpy(problem.x)
    for _ in range(warmup):
        compiled(x)
    if compiled.stats["replayed"] == 0:
        raise RuntimeError(f"the compiled step never replayed: {compiled.stats}")
    return compiled


def compiled_step(problem: Problem, custom_relu: bool = True) -> Callable[[], float]:
    """The reference PyTorch loop body under ``rustgrad.compile`` on the problem's x."""
    x = rustgrad.from_numpy(problem.x)
    compiled = compiled_batch_step(problem, custom_relu)
    return lambda: compiled(x)


def static_batch_step(problem: Problem) -> Callable[[np.ndarray], float]:
    """The reference TF1 loop body on the batch it is given: one Session.run of loss and both assigns
    (the step's ``session`` attribute is its session)."""
    from rustgrad._demo import build_static

    graph, t = build_static(problem)
    sess = tf.Session(graph=graph)
    sess.run(t["init"])
    fetches = [t["loss"], *t["train"]]

    def step(batch: np.ndarray) -> float:
        return float(sess.run(fetches, feed_dict={t["x"]: batch, t["y"]: problem.y})[0])

    step.session = sess  # type: ignore[attr-defined]
    return step


def static_step(problem: Problem) -> Callable[[], float]:
    """The reference TF1 loop body on the problem's x."""
    train_on = static_batch_step(problem)

    def step() -> float:
        return train_on(problem.x)

    step.session = train_on.session  # type: ignore[attr-defined]
    return step


def torch_step(problem: Problem) -> Callable[[], float]:
    """The same step in PyTorch (only when torch is importable)."""
    import torch

    x, y = torch.from_numpy(problem.x), torch.from_numpy(problem.y)
    w1 = torch.tensor(problem.w1, requires_grad=True)
    w2 = torch.tensor(problem.w2, requires_grad=True)

    def step() -> float:
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        value = loss.item()
        loss.backward()
        with torch.no_grad():
            w1.sub_(LEARNING_RATE * w1.grad)
            w2.sub_(LEARNING_RATE * w2.grad)
            w1.grad.zero_()
            w2.grad.zero_()
        return value

    return step


def numpy_step(problem: Problem, in_place: bool) -> Callable[[], Any]:
    from numpy_steps import InPlaceNumpyStep, SimpleNumpyStep

    cls = InPlaceNumpyStep if in_place else SimpleNumpyStep
    return cls(problem.x, problem.y, problem.w1, problem.w2)


def scaled_problem(sizes: tuple[int, int, int, int]) -> Problem:
    """A larger problem, with weights scaled by 1/sqrt(fan-in) so that the loss stays
    finite at this learning rate (unscaled, the largest size overflows to inf and NaN
    within a few steps, and the benchmark would time arithmetic on NaNs)."""
    problem = Problem.make(1, sizes)
    problem.w1 /= np.float32(np.sqrt(sizes[1]))
    problem.w2 /= np.float32(np.sqrt(sizes[2]))
    return problem


__all__ = ["eager_step", "static_step", "torch_step", "numpy_step", "scaled_problem", "np"]
