"""``Adagrad``, as ``torch.optim.Adagrad``."""

from __future__ import annotations

from typing import Any, Iterable

from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError
from rustgrad.optim.optimizer import _PerParameterOptimizer

__all__ = ["Adagrad"]


class Adagrad(_PerParameterOptimizer):
    """Adagrad (Duchi et al.), exactly as ``torch.optim.Adagrad``:

    .. code-block:: text

        g = p.grad + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g**2                      (s starts at initial_accumulator_value)
        p = p - clr * g / (sqrt(s) + eps)

    As in torch, each parameter's state (``step`` and ``sum``) exists from construction.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, *, maximize: bool = False) -> None:
        if lr < 0.0:
            raise InvalidArgumentError(f"Invalid learning rate: {lr}")
        if lr_decay < 0.0:
            raise InvalidArgumentError(f"Invalid lr_decay value: {lr_decay}")
        if weight_decay < 0.0:
            raise InvalidArgumentError(f"Invalid weight_decay value: {weight_decay}")
        if initial_accumulator_value < 0.0:
            raise InvalidArgumentError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if eps < 0.0:
            raise InvalidArgumentError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize)
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> None:
        state = self._get_state(p)
        if not state:
            state["step"] = 0
            state["sum"] = p.detach().clone().fill_(group["initial_accumulator_value"])

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters; their state starts at ``initial_accumulator_value``."""
        super().add_param_group(param_group)
        for p in self.param_groups[-1]["params"]:
            self._init_state(p, self.param_groups[-1])

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self._get_state(p)
        self._init_state(p, group)
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad + p * group["weight_decay"]
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state_sum = state["sum"]
        state_sum.add_(grad * grad)
        std = state_sum.sqrt().add_(group["eps"])
        p.add_(grad / std, alpha=-clr)
