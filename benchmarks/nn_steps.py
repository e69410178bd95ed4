"""The MLP step of the framework-layer issue, three ways on the same data and initial weights:
``Sequential(Linear(784, 256), ReLU, Linear(256, 10))`` with ``CrossEntropyLoss`` and ``Adam``,
batch 64, float32.

- ``module_step``: the modules and the optimizer, as a user writes it;
- ``bare_step``: the same ops called on plain tensors, and the fused Adam kernel ``optim.Adam`` runs
  called directly (what the module and optimizer layers cost is the difference);
- ``numpy_step``: the step written by hand in numpy (forward, backward and Adam in place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad._rustgrad import _adam_update

BATCH, D_IN, HIDDEN, CLASSES = 64, 784, 256, 10
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8


@dataclass
class MlpProblem:
    x: np.ndarray
    labels: np.ndarray
    weights: list[np.ndarray]  # w1, b1, w2, b2 in torch's layout

    @staticmethod
    def make(seed: int = 0) -> MlpProblem:
        rng = np.random.default_rng(seed)
        bound1, bound2 = 1 / np.sqrt(D_IN), 1 / np.sqrt(HIDDEN)
        weights = [rng.uniform(-bound1, bound1, (HIDDEN, D_IN)), rng.uniform(-bound1, bound1, HIDDEN),
                   rng.uniform(-bound2, bound2, (CLASSES, HIDDEN)), rng.uniform(-bound2, bound2, CLASSES)]
        return MlpProblem(rng.standard_normal((BATCH, D_IN)).astype(np.float32),
                          rng.integers(0, CLASSES, BATCH), [w.astype(np.float32) for w in weights])


def module_step(problem: MlpProblem) -> Callable[[], float]:
    model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    with torch.no_grad():
        for p, w in zip(model.parameters(), problem.weights):
            p.copy_(torch.tensor(w))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    x, labels = torch.tensor(problem.x), torch.tensor(problem.labels)

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def bare_step(problem: MlpProblem) -> Callable[[], float]:
    params = [torch.tensor(w, requires_grad=True) for w in problem.weights]
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    x, labels = torch.tensor(problem.x), torch.tensor(problem.labels)
    beta1, beta2 = BETAS
    t = [0]

    def step() -> float:
        w1, b1, w2, b2 = params
        for p in params:
            p.grad = None
        loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), labels)
        loss.backward()
        t[0] += 1
        with torch.no_grad():
            _adam_update(params, [p.grad for p in params], [m for m, _ in moments], [v for _, v in moments], None,
                         [t[0]] * len(params), lr=LR, beta1=beta1, beta2=beta2, eps=EPS, weight_decay=0.0,
                         decoupled=False, maximize=False)
        return loss.item()

    return step


def numpy_step(problem: MlpProblem) -> Callable[[], float]:
    w1, b1, w2, b2 = (w.copy() for w in problem.weights)
    params = [w1, b1, w2, b2]
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    x, labels = problem.x, problem.labels
    rows = np.arange(BATCH)
    beta1, beta2 = BETAS
    t = [0]

    def step() -> float:
        h = x @ w1.T
        h += b1
        np.maximum(h, 0, out=h)
        logits = h @ w2.T
        logits += b2
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        loss = -np.log(probs[rows, labels]).mean()
        probs[rows, labels] -= 1
        probs /= BATCH                      # d loss / d logits
        grads = [None, None, probs.T @ h, probs.sum(axis=0)]
        dh = probs @ w2
        dh *= h > 0
        grads[0], grads[1] = dh.T @ x, dh.sum(axis=0)
        t[0] += 1
        c1, c2 = 1 - beta1 ** t[0], (1 - beta2 ** t[0]) ** 0.5
        for p, g, (m, v) in zip(params, grads, moments):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            denom = np.sqrt(v)
            denom /= c2
            denom += EPS
            p -= (LR / c1) * m / denom
        return float(loss)

    return step
