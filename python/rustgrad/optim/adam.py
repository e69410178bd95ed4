"""``Adam`` and ``AdamW``, as ``torch.optim.Adam`` and ``torch.optim.AdamW``."""

from __future__ import annotations

from typing import Any, Iterable

from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError
from rustgrad.optim.optimizer import _PerParameterOptimizer

__all__ = ["Adam", "AdamW"]


def _check_adam_args(lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
    if lr < 0.0:
        raise InvalidArgumentError(f"Invalid learning rate: {lr}")
    if eps < 0.0:
        raise InvalidArgumentError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise InvalidArgumentError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise InvalidArgumentError(f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay < 0.0:
        raise InvalidArgumentError(f"Invalid weight_decay value: {weight_decay}")


class Adam(_PerParameterOptimizer):
    """Adam (Kingma & Ba), exactly as ``torch.optim.Adam`` (with L2 ``weight_decay``):

    .. code-block:: text

        g = p.grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    With ``amsgrad``, ``v`` in the last line is the running maximum of every ``v`` so far.
    """

    _decoupled_weight_decay = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        state = self._get_state(p)
        if not state:
            state["step"] = 0
            state["exp_avg"] = p.detach().clone().zero_()
            state["exp_avg_sq"] = p.detach().clone().zero_()
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = p.detach().clone().zero_()
        state["step"] += 1
        step = state["step"]
        if weight_decay != 0:
            if self._decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad + p * weight_decay
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            max_sq = state["max_exp_avg_sq"]
            max_sq.copy_(max_sq.maximum(exp_avg_sq))
            second = max_sq
        else:
            second = exp_avg_sq
        denom = second.sqrt().div_(bias_correction2_sqrt).add_(eps)
        p.add_(exp_avg / denom, alpha=-lr / bias_correction1)


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter), exactly as ``torch.optim.AdamW``: Adam whose weight decay
    shrinks the parameter directly instead of adding to the gradient:

    .. code-block:: text

        p = p * (1 - lr * weight_decay)
        m, v and the update as Adam's, with g = p.grad
    """

    _decoupled_weight_decay = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize)
