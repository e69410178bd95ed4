"""A small CNN on scikit-learn's handwritten digits, written as a PyTorch user would write it.

``python -m rustgrad digits`` (and ``examples/digits.py``) run it: 1,797 8x8 images, a fixed
split (a permutation from ``numpy.random.default_rng(0)``, the first 1,400 images for training),
``Conv2d -> ReLU -> MaxPool2d -> Linear -> ReLU -> Linear`` trained with ``DataLoader``,
``AdamW`` and a one-cycle schedule, a checkpoint saved every epoch that ``--resume`` continues
from, and ``--plot`` for the loss and accuracy curves. Needs scikit-learn
(``pip install 'rustgrad[examples]'``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

import rustgrad as torch
from rustgrad import nn
from rustgrad.utils.data import DataLoader, TensorDataset

TRAIN_SIZE = 1400


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The images as float32 in [0, 1], shaped (1797, 1, 8, 8), and their int64 labels."""
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        sys.exit("the digits example needs scikit-learn: pip install 'rustgrad[examples]'")
    digits = sklearn_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    return images, digits.target.astype(np.int64)


def split_arrays(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed split as numpy arrays: training images and labels, then test images and labels."""
    order = np.random.default_rng(0).permutation(len(images))
    train, test = order[:TRAIN_SIZE], order[TRAIN_SIZE:]
    return images[train], labels[train], images[test], labels[test]


def split(images: np.ndarray, labels: np.ndarray) -> tuple[TensorDataset, TensorDataset]:
    train_images, train_labels, test_images, test_labels = split_arrays(images, labels)
    return (TensorDataset(torch.from_numpy(train_images), torch.from_numpy(train_labels)),
            TensorDataset(torch.from_numpy(test_images), torch.from_numpy(test_labels)))


class DigitsNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(16 * 4 * 4, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


@dataclass
class History:
    losses: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def accuracy(model: nn.Module, data: TensorDataset) -> float:
    model.eval()
    with torch.no_grad():
        images, labels = data.tensors
        predicted = model(images).argmax(dim=1)
    model.train()
    return float((predicted == labels).float().mean().item())


def setup(epochs: int, steps_per_epoch: int, lr: float = 1e-2) -> tuple[nn.Module, Any, Any, nn.Module]:
    """A fresh model (from the current seed), its optimizer, its one-cycle schedule and the loss."""
    model = DigitsNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, epochs=epochs,
                                                    steps_per_epoch=steps_per_epoch)
    return model, optimizer, scheduler, nn.CrossEntropyLoss()


def train_step(model: nn.Module, optimizer: Any, scheduler: Any, loss_fn: nn.Module,
               images: torch.Tensor, labels: torch.Tensor) -> float:
    """One training step on one batch; returns the batch's mean loss."""
    optimizer.zero_grad()
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    return loss.item()


def train(epochs: int, checkpoint: Optional[str] = None, resume: bool = False, seed: int = 0,
          batch_size: int = 64, lr: float = 1e-2, quiet: bool = False,
          stop_after: Optional[int] = None) -> tuple[nn.Module, History]:
    """Trains for ``epochs`` (a fresh model, or the checkpoint's with ``resume``); ``stop_after``
    ends early after that many epochs, as an interrupted run would."""
    torch.manual_seed(seed)
    train_data, test_data = split(*load_digits())
    loader = DataLoader(train_data, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    model, optimizer, scheduler, loss_fn = setup(epochs, len(loader), lr)
    history, start = History(), 0
    if resume and checkpoint and os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        loader.generator.set_state(state["generator"])
        history = History(**state["history"])
        start = state["epoch"]
    for epoch in range(start, epochs if stop_after is None else min(stop_after, epochs)):
        began, total, count = time.perf_counter(), 0.0, 0
        for images, labels in loader:
            total += train_step(model, optimizer, scheduler, loss_fn, images, labels) * len(labels)
            count += len(labels)
        history.seconds.append(time.perf_counter() - began)
        history.losses.append(total / count)
        history.accuracies.append(accuracy(model, test_data))
        if not quiet:
            print(f"epoch {epoch + 1:>3}  loss {history.losses[-1]:.4f}  "
                  f"test accuracy {history.accuracies[-1]:.2%}  ({history.seconds[-1]:.3f} s)")
        if checkpoint:
            torch.save({"epoch": epoch + 1, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "generator": loader.generator.get_state(),
                        "history": vars(history)}, checkpoint)
    return model, history


def plot(history: History, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib: pip install 'rustgrad[plot]'")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    epochs = range(1, len(history.losses) + 1)
    left.plot(epochs, history.losses)
    left.set(xlabel="epoch", ylabel="training loss", yscale="log", title="loss")
    right.plot(epochs, [100 * a for a in history.accuracies])
    right.set(xlabel="epoch", ylabel="test accuracy (%)", title="accuracy")
    fig.suptitle("rustgrad: digits CNN")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rustgrad digits", description=__doc__.split("\n\n")[0],
                                     epilog="`python -m rustgrad digits --mode static` trains the same network "
                                     "with the TF1-shaped static API (rustgrad/_digits_tf1.py; --mode static "
                                     "--help lists its options).")
    parser.add_argument("--epochs", type=int, default=20, help="epochs (default 20)")
    parser.add_argument("--checkpoint", metavar="FILE", default=None, help="save a checkpoint here every epoch")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint if it exists")
    parser.add_argument("--plot", metavar="PNG", default=None, help="write the loss and accuracy curves here")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the shuffling (default 0)")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint FILE")
    began = time.perf_counter()
    _, history = train(args.epochs, args.checkpoint, args.resume, args.seed)
    print(f"test accuracy {history.accuracies[-1]:.2%} after {len(history.losses)} epochs; "
          f"{time.perf_counter() - began:.2f} s in all, data loading included")
    if args.plot:
        plot(history, args.plot)
    return 0

