"""``rustgrad.optim``: optimizers with ``torch.optim``'s names, defaults and update formulas, and
learning-rate schedules (``rustgrad.optim.lr_scheduler``).

Each optimizer updates its parameters in place under ``no_grad`` (the tensors
keep their identity), so a model's parameters and an optimizer built on them
stay connected, as in PyTorch::

    opt = rustgrad.optim.SGD([w1, w2], lr=1e-2, momentum=0.9)
    for x, y in data:
        opt.zero_grad()
        loss_fn(x, y).backward()
        opt.step()
"""

from __future__ import annotations

from rustgrad.optim import lr_scheduler
from rustgrad.optim.adagrad import Adagrad
from rustgrad.optim.adam import Adam, AdamW
from rustgrad.optim.optimizer import Optimizer
from rustgrad.optim.rmsprop import RMSprop
from rustgrad.optim.sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
