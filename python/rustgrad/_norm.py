"""Running statistics of batch normalisation, shared by both fronts.

The batch-norm op (``batch_norm`` in the op table) normalises; keeping the running mean and
variance is this module's. The two fronts weight the new statistic differently:
torch's ``momentum=0.1`` weights the NEW batch statistic (``running = (1 - m)·running + m·batch``),
TF's ``momentum=0.99`` weights the OLD value (``moving = m·moving + (1 - m)·batch``).
"""

from __future__ import annotations

from typing import Any

from rustgrad.errors import InvalidArgumentError

CONVENTIONS = ("torch", "tf")


def new_weight(momentum: float, convention: str) -> float:
    """The weight of the new batch statistic under ``convention`` ('torch' or 'tf')."""
    if convention not in CONVENTIONS:
        raise InvalidArgumentError(f"batch_norm: momentum convention must be 'torch' or 'tf', got {convention!r}")
    momentum = float(momentum)
    return momentum if convention == "torch" else 1.0 - momentum


def update_running_stats(running_mean: Any, running_var: Any, mean: Any, unbiased_var: Any, momentum: float,
                         convention: str = "torch") -> None:
    """Moves eager ``running_mean``/``running_var`` (in place, unrecorded) toward a batch's mean and
    unbiased variance, with ``momentum`` read by ``convention``."""
    from rustgrad._grad_mode import no_grad

    w = new_weight(momentum, convention)
    with no_grad():
        for running, stat in ((running_mean, mean), (running_var, unbiased_var)):
            if running is not None:
                running.mul_(1.0 - w).add_(stat.to(running.dtype) * w)
