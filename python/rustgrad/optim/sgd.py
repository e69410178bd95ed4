"""``SGD``, as ``torch.optim.SGD``."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from rustgrad._grad_mode import no_grad
from rustgrad.errors import InvalidArgumentError
from rustgrad.optim.optimizer import Optimizer, required

__all__ = ["SGD"]


class SGD(Optimizer):
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

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one update; ``closure`` (re-evaluating the loss) is optional."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, momentum = group["lr"], group["momentum"]
                dampening, weight_decay = group["dampening"], group["weight_decay"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    d_p = p.grad
                    if group["maximize"]:
                        d_p = -d_p
                    if weight_decay != 0:
                        d_p = d_p + p * weight_decay
                    if momentum != 0:
                        state = self._get_state(p)
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = d_p.clone()
                            state["momentum_buffer"] = buf
                        else:
                            buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
                        d_p = d_p + buf * momentum if group["nesterov"] else buf
                    p.add_(d_p, alpha=-lr)
        return loss
