"""``Adam`` and ``AdamW``, as ``torch.optim.Adam`` and ``torch.optim.AdamW``."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from rustgrad._creation import full, zeros, zeros_like
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor, _adam_update, float32
from rustgrad.errors import InvalidArgumentError
from rustgrad.optim.optimizer import Optimizer

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


class Adam(Optimizer):
    """Adam (Kingma & Ba), exactly as ``torch.optim.Adam`` (with L2 ``weight_decay``):

    .. code-block:: text

        g = p.grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    With ``amsgrad``, ``v`` in the last line is the running maximum of every ``v`` so far. With
    ``capturable=True`` (as torch's), ``state["step"]`` is a 0-d float32 tensor that the update increments
    in place, so that :func:`rustgrad.compile` replays the step instead of re-tracing it every call.
    """

    _decoupled_weight_decay = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False, capturable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one update; ``closure`` (re-evaluating the loss) is optional."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        """One fused step (rust/kernels/optim.rs) for every parameter of ``group`` that has a gradient."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        capturable = bool(group.get("capturable", False))
        states = [self._adam_state(p, group["amsgrad"], capturable) for p in params]
        # capturable (as torch's): each step count is a 0-d float32 tensor the update increments in place,
        # so that rustgrad.compile replays the step without a count baked in.
        steps = [state["step"] if capturable else state["step"] + 1 for state in states]
        beta1, beta2 = group["betas"]
        # A tensor lr (torch's, for capturable optimizers) is read by the update, so a scheduler can
        # change it in place between compiled steps without a re-trace.
        lr = group["lr"] if capturable and isinstance(group["lr"], Tensor) else float(group["lr"])
        _adam_update(
            params, [p.grad for p in params],
            [state["exp_avg"] for state in states], [state["exp_avg_sq"] for state in states],
            [state["max_exp_avg_sq"] for state in states] if group["amsgrad"] else None,
            steps, lr=lr, beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
            weight_decay=float(group["weight_decay"]), decoupled=self._decoupled_weight_decay,
            maximize=bool(group["maximize"]),
        )
        if not capturable:
            for state, step in zip(states, steps):
                state["step"] = step

    def _adam_state(self, p: Tensor, amsgrad: bool, capturable: bool = False) -> dict[str, Any]:
        state = self._get_state(p)
        if capturable and state and not isinstance(state["step"], Tensor):
            state["step"] = full((), float(state["step"]), dtype=float32)
        if not state:
            state["step"] = zeros((), dtype=float32) if capturable else 0
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = zeros_like(p)
        return state


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
                 maximize: bool = False, capturable: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize, capturable=capturable)
