"""``RMSprop``, as ``torch.optim.RMSprop``."""

from __future__ import annotations

from typing import Any, Iterable

from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError
from rustgrad.optim.optimizer import _PerParameterOptimizer

__all__ = ["RMSprop"]


class RMSprop(_PerParameterOptimizer):
    """RMSprop (Hinton), exactly as ``torch.optim.RMSprop``:

    .. code-block:: text

        g = p.grad + weight_decay * p
        v = alpha * v + (1 - alpha) * g**2
        centered: a = alpha * a + (1 - alpha) * g;  d = sqrt(v - a**2) + eps
        otherwise:                                   d = sqrt(v) + eps
        momentum > 0: buf = momentum * buf + g / d;  p = p - lr * buf
        otherwise:                                   p = p - lr * g / d
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise InvalidArgumentError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise InvalidArgumentError(f"Invalid epsilon value: {eps}")
        if momentum < 0.0:
            raise InvalidArgumentError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise InvalidArgumentError(f"Invalid weight_decay value: {weight_decay}")
        if alpha < 0.0:
            raise InvalidArgumentError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        alpha, momentum, weight_decay = group["alpha"], group["momentum"], group["weight_decay"]
        state = self._get_state(p)
        if not state:
            state["step"] = 0
            state["square_avg"] = p.detach().clone().zero_()
            if momentum > 0:
                state["momentum_buffer"] = p.detach().clone().zero_()
            if group["centered"]:
                state["grad_avg"] = p.detach().clone().zero_()
        state["step"] += 1
        if weight_decay != 0:
            grad = grad + p * weight_decay
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
            avg = square_avg.sub(grad_avg * grad_avg).sqrt().add_(group["eps"])
        else:
            avg = square_avg.sqrt().add_(group["eps"])
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).add_(grad / avg)
            p.add_(buf, alpha=-group["lr"])
        else:
            p.add_(grad / avg, alpha=-group["lr"])
