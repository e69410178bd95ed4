"""``rustgrad.optim``: optimizers with ``torch.optim``'s names, defaults and update formulas.

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

import abc
import copy
from typing import Any, Callable, Iterable, Optional

from rustgrad._grad_mode import enable_grad, no_grad
from rustgrad._rustgrad import Tensor

__all__ = ["Adam", "Optimizer", "SGD"]


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer(abc.ABC):
    """Base class: holds ``param_groups`` (a list of dicts with ``"params"`` and the
    hyperparameters) and per-parameter ``state``."""

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                "but got a Tensor; wrap it in a list: [tensor]"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters, with hyperparameters defaulting to the optimizer's."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor; use a tensor created with "
                                 "requires_grad=True (or detach().requires_grad_())")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            group.setdefault(name, default)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def _params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [...]}`` with parameters as indices, as in
        PyTorch. State tensors are copies."""
        index = {id(p): i for i, p in enumerate(self._params())}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {
            index[id(p)]: {k: (v.clone() if isinstance(v, Tensor) else copy.deepcopy(v)) for k, v in s.items()}
            for p, s in self._state_items()
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores hyperparameters and state saved by ``state_dict`` (for the same parameters)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                                 "size of optimizer's group")
        params = self._params()
        by_index: dict[int, Tensor] = {}
        for mine, saved in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], saved["params"]):
                by_index[i] = p
            mine.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, s in state_dict["state"].items():
            p = by_index.get(int(i), params[int(i)] if int(i) < len(params) else None)
            if p is None:
                raise ValueError(f"loaded state dict refers to parameter {i}, which this optimizer lacks")
            restored = {}
            for k, v in s.items():
                if isinstance(v, Tensor):
                    if tuple(v.shape) != tuple(p.shape):
                        raise ValueError(f"state {k!r} of parameter {i} has shape {tuple(v.shape)}, but the "
                                         f"parameter has shape {tuple(p.shape)}")
                    v = v.detach().clone().to(p.dtype)
                restored[k] = v
            self._set_state(p, restored)

    def _state_items(self) -> list[tuple[Tensor, dict[str, Any]]]:
        return [(p, self.state[p]) for p in self._params() if p in self.state]

    def _get_state(self, p: Tensor) -> dict[str, Any]:
        return self.state.setdefault(p, {})

    def _set_state(self, p: Tensor, value: dict[str, Any]) -> None:
        self.state[p] = value

    @abc.abstractmethod
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Updates every parameter once (each optimizer defines its rule)."""

    def _closure_loss(self, closure: Optional[Callable[[], Any]]) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params")
        lines.append(")")
        return "\n".join(lines)


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
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
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
                            buf.mul_(momentum).add_(d_p * (1 - dampening))
                        d_p = d_p + buf * momentum if group["nesterov"] else buf
                    p.sub_(d_p * lr)
        return loss


class Adam(Optimizer):
    """Adam (Kingma & Ba), exactly as ``torch.optim.Adam`` (with L2 ``weight_decay``):

    .. code-block:: text

        g = p.grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one update; ``closure`` (re-evaluating the loss) is optional."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
                beta1, beta2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    if group["maximize"]:
                        grad = -grad
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
                        grad = grad + p * weight_decay
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    exp_avg.mul_(beta1).add_(grad * (1 - beta1))
                    exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                    if group["amsgrad"]:
                        max_sq = state["max_exp_avg_sq"]
                        max_sq.copy_(max_sq.maximum(exp_avg_sq))
                        second = max_sq
                    else:
                        second = exp_avg_sq
                    denom = second.sqrt() / bias_correction2_sqrt + eps
                    p.sub_(exp_avg / denom * (lr / bias_correction1))
        return loss
