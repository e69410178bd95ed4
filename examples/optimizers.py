"""Training with ``rustgrad.optim`` and ``rustgrad.nn.functional``.

A small two-layer classifier on three Gaussian blobs, trained twice: with SGD (momentum)
and with Adam. The optimizers update the parameter tensors in place, so the list handed to
the optimizer stays connected to the model. Run it with ``python examples/optimizers.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

import rustgrad
import rustgrad.nn.functional as F
from rustgrad import Tensor
from rustgrad.optim import SGD, Adam, Optimizer

N_PER_CLASS, N_CLASSES, D_IN, HIDDEN = 50, 3, 2, 16


def make_data(seed: int = 0) -> tuple[Tensor, npt.NDArray[np.int64]]:
    """Points around three centres; the labels are class indices (a numpy int array)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 2.0], [-2.0, -1.0], [2.0, -1.0]])
    points = np.concatenate([c + 0.9 * rng.standard_normal((N_PER_CLASS, D_IN)) for c in centres])
    labels = np.repeat(np.arange(N_CLASSES), N_PER_CLASS)
    return rustgrad.tensor(points, dtype=rustgrad.float32), labels


def init_params(seed: int) -> list[Tensor]:
    rustgrad.manual_seed(seed)
    w1 = (rustgrad.randn(D_IN, HIDDEN) * 0.5).requires_grad_()
    b1 = rustgrad.zeros(HIDDEN, requires_grad=True)
    w2 = (rustgrad.randn(HIDDEN, N_CLASSES) * 0.5).requires_grad_()
    b2 = rustgrad.zeros(N_CLASSES, requires_grad=True)
    return [w1, b1, w2, b2]


def forward(params: Sequence[Tensor], x: Tensor) -> Tensor:
    w1, b1, w2, b2 = params
    hidden = F.relu(x.mm(w1) + b1)
    return hidden.mm(w2) + b2  # logits, shape (N, N_CLASSES)


def accuracy(logits: Tensor, labels: npt.NDArray[np.int64]) -> float:
    predicted = logits.detach().numpy().argmax(axis=1)
    return float((predicted == labels).mean())


def train(opt: Optimizer, params: Sequence[Tensor], x: Tensor, labels: npt.NDArray[np.int64],
          steps: int) -> float:
    loss = rustgrad.zeros(())
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(forward(params, x), labels)
        loss.backward()
        opt.step()
    return loss.item()


def main(steps: int = 100) -> dict[str, float]:
    x, labels = make_data()
    results: dict[str, float] = {}

    sgd_params = init_params(seed=1)
    sgd = SGD(sgd_params, lr=0.1, momentum=0.9)
    results["sgd"] = train(sgd, sgd_params, x, labels, steps)

    adam_params = init_params(seed=1)
    adam = Adam(adam_params, lr=0.05)
    results["adam"] = train(adam, adam_params, x, labels, steps)

    for name, params in (("sgd", sgd_params), ("adam", adam_params)):
        logits = forward(params, x)
        probs = F.softmax(logits, dim=1)
        print(f"{name:>4}: loss {results[name]:.4f}  accuracy {accuracy(logits, labels):.2f}  "
              f"mean max prob {probs.amax(1).mean().item():.3f}")

    # A regression loss from the same module: fit y = 3x - 1 with Adam.
    xs = rustgrad.linspace(-1.0, 1.0, 32).reshape(-1, 1)
    ys = xs * 3.0 - 1.0
    w = rustgrad.zeros(1, 1, requires_grad=True)
    b = rustgrad.zeros(1, requires_grad=True)
    opt = Adam([w, b], lr=0.1)
    mse = rustgrad.zeros(())
    for _ in range(steps):
        opt.zero_grad()
        mse = F.mse_loss(xs.mm(w) + b, ys)
        mse.backward()
        opt.step()
    results["mse"] = mse.item()
    print(f" mse: {results['mse']:.5f}  w {w.item():.3f}  b {b.item():.3f}")
    return results


if __name__ == "__main__":
    main()
