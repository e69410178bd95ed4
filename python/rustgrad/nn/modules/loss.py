"""Loss modules over ``rustgrad.nn.functional``. New losses subclass ``_Loss`` (a ``reduction``) or
``_WeightedLoss`` (a ``weight`` buffer too) and call their functional form in ``forward``."""

from __future__ import annotations

import warnings
from typing import Any, Optional

from rustgrad._rustgrad import Tensor
from rustgrad.nn import functional as F
from rustgrad.nn.modules.module import Module

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss",
    "SmoothL1Loss",
]


def _legacy_reduction(size_average: Optional[bool], reduce: Optional[bool]) -> str:
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                  + ("none" if reduce is False else "mean" if size_average is not False else "sum")
                  + "' instead.", stacklevel=4)
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    weight: Optional[Tensor]

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error: (input - target)² reduced by ``reduction`` ('mean', 'sum' or 'none')."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class indices under log-probabilities (N, C, ...)."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits (N, C, ...) and class indices, with class ``weight``,
    ``ignore_index`` and ``label_smoothing`` as torch."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class L1Loss(_Loss):
    """Mean absolute error |input − target|."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above it (divided by ``beta``)."""

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above it (not divided by ``delta``)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of ``target`` from log-probabilities ``input``."""

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities ``input`` against ``target`` in [0, 1]."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid then binary cross entropy in one stable step, with ``pos_weight`` for positives."""

    weight: Optional[Tensor]
    pos_weight: Optional[Tensor]

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
