"""``SGD``, as ``torch.optim.SGD``."""

from __future__ import annotations

from typing import Any, Iterable

from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError
from rustgrad.optim.optimizer import _PerParameterOptimizer, required

__all__ = ["SGD"]


class SGD(_PerParameterOptimizer):
    """Stochastic gradient descent, optionally with momentum, exactly as ``torch.optim.SGD``:

    .. code-block:: text

        g = p.grad + weight_decay * p
        buf = g                                   (first step)
        buf = momentum * buf + (1 - dampening) * g (later steps)
        g = g + momentum * buf   if nesterov else   g = buf      (when momentum != 0)
        p = p - lr * g
    """

    def __init__(self, params: Iterable[Any], lr: float = required,  # type: ignore[assignment]
                 momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, *, maximize: bool = False) -> None:
        if lr is not required and lr < 0.0:
            raise InvalidArgumentError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise InvalidArgumentError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise InvalidArgumentError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise InvalidArgumentError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        momentum, weight_decay = group["momentum"], group["weight_decay"]
        d_p = grad
        if weight_decay != 0:
            d_p = d_p + p * weight_decay
        if momentum != 0:
            state = self._get_state(p)
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = d_p.clone()
                state["momentum_buffer"] = buf
            else:
                buf.mul_(momentum).add_(d_p, alpha=1 - group["dampening"])
            d_p = d_p + buf * momentum if group["nesterov"] else buf
        lr = group["lr"]
        if isinstance(lr, Tensor):  # torch's tensor lr: read on every step, so a compiled step replays it
            p.add_(d_p * lr, alpha=-1)
        else:
            p.add_(d_p, alpha=-lr)
