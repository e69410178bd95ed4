"""The ``Optimizer`` base class: parameter groups, per-parameter state, ``zero_grad``,
``state_dict``/``load_state_dict``, as ``torch.optim.Optimizer``."""

from __future__ import annotations

import abc
import copy
from typing import Any, Callable, Optional

from rustgrad._grad_mode import enable_grad, no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, ShapeError

__all__ = ["Optimizer", "required"]


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
            raise ArgumentTypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                "but got a Tensor; wrap it in a list: [tensor]"
            )
        groups = list(params)
        if not groups:
            raise InvalidArgumentError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters, with hyperparameters defaulting to the optimizer's."""
        if not isinstance(param_group, dict):
            raise ArgumentTypeError(f"param group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise ArgumentTypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                        f"{type(p).__name__}")
            if not p.is_leaf:
                raise InvalidArgumentError("can't optimize a non-leaf Tensor; use a tensor created with "
                                           "requires_grad=True (or detach().requires_grad_())")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise InvalidArgumentError(f"parameter group didn't specify a value of required optimization "
                                           f"parameter {name}")
            group.setdefault(name, default)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise InvalidArgumentError("some parameters appear in more than one parameter group")
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
            raise InvalidArgumentError(f"loaded state dict has a different number of parameter groups "
                                       f"({len(groups)}, this optimizer has {len(self.param_groups)})")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise InvalidArgumentError(f"loaded state dict contains a parameter group that doesn't match the "
                                           f"size of optimizer's group ({len(saved['params'])} parameters, this "
                                           f"optimizer's group has {len(mine['params'])})")
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
                raise InvalidArgumentError(f"loaded state dict refers to parameter {i}, which this optimizer lacks")
            restored = {}
            for k, v in s.items():
                if isinstance(v, Tensor):
                    if tuple(v.shape) != tuple(p.shape):
                        raise ShapeError(f"state {k!r} of parameter {i} has shape {tuple(v.shape)}, but the "
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


class _PerParameterOptimizer(Optimizer):
    """An optimizer whose step updates each parameter on its own: ``step`` skips parameters
    without a gradient and calls ``_update`` with the gradient to descend (negated with
    ``maximize``) and the parameter's group."""

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one update; ``closure`` (re-evaluating the loss) is optional."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, -p.grad if group["maximize"] else p.grad, group)
        return loss

    @abc.abstractmethod
    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        """Updates ``p`` in place (under ``no_grad``) from ``grad`` and the group's hyperparameters."""
