"""Per-op overhead: one-element ops, a tiny backward, a tiny custom Function, a tiny Session.run."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import rustgrad
from rustgrad import static as tf


class Square(rustgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


# A one-element add takes a few hundred ns, less than the timer's resolution
# allows to time alone: each round times ADDS_PER_ROUND calls and
# pytest-benchmark divides by that count, so every figure (and the JSON) is the
# time of one call. That includes the harness's own call of ``operator.add``
# (some tens of ns); benchmarks/one_element_add.py times a bare `a + b`.
ADDS_PER_ROUND = 1000
ROUNDS = 1000


def many_adds(benchmark, a, b) -> None:
    benchmark.pedantic(operator.add, args=(a, b), iterations=ADDS_PER_ROUND, rounds=ROUNDS, warmup_rounds=50)


@pytest.mark.benchmark(group="overhead")
def test_numpy_one_element_add(benchmark):
    many_adds(benchmark, np.array([1.0]), np.array([2.0]))


@pytest.mark.benchmark(group="overhead")
def test_one_element_add_without_grad(benchmark):
    many_adds(benchmark, rustgrad.tensor([1.0]), rustgrad.tensor([2.0]))


@pytest.mark.benchmark(group="overhead")
def test_one_element_add_with_grad(benchmark):
    many_adds(benchmark, rustgrad.tensor([1.0], requires_grad=True), rustgrad.tensor([2.0], requires_grad=True))


@pytest.mark.benchmark(group="overhead")
def test_tiny_backward(benchmark):
    a, b = rustgrad.tensor([1.0], requires_grad=True), rustgrad.tensor([2.0], requires_grad=True)

    def run():
        (a * b).sum().backward()

    benchmark(run)


@pytest.mark.benchmark(group="overhead")
def test_tiny_custom_function(benchmark):
    a = rustgrad.tensor([1.0], requires_grad=True)

    def run():
        Square.apply(a).sum().backward()

    benchmark(run)


@pytest.mark.benchmark(group="overhead")
def test_tiny_session_run(benchmark):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(1,))
        y = x * 2.0 + 1.0
    sess = tf.Session(graph=graph)
    feed = {x: np.array([1.0], np.float32)}
    benchmark(sess.run, y, feed)
