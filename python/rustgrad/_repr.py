"""PyTorch-style ``repr`` for tensors."""

from __future__ import annotations

from typing import Any

import numpy as np


def tensor_repr(t: Any) -> str:
    values = np.asarray(t.detach())
    if values.dtype == np.bool_:
        body = np.array2string(values, separator=", ", prefix="tensor(")
    else:
        body = np.array2string(
            values, separator=", ", prefix="tensor(", precision=4, suppress_small=False,
            floatmode="maxprec",
        )
    extras = []
    if values.size == 0:
        extras.append(f"size={tuple(values.shape)}")
    if t.dtype.name == "float64":
        extras.append("dtype=rustgrad.float64")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *extras]) + ")"
