"""Gradient clipping, as ``torch.nn.utils.clip_grad``."""

from __future__ import annotations

import math
from typing import Iterable, Optional, Union

from rustgrad import _rustgrad
from rustgrad._generated_ops import stack
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import GradientError

__all__ = ["clip_grad_norm_", "clip_grad_value_"]

_TensorOrTensors = Union[Tensor, Iterable[Tensor]]


def _grads(parameters: _TensorOrTensors) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Scales the gradients of ``parameters`` in place so their combined ``norm_type``-norm (as if
    concatenated into one vector) is at most ``max_norm``; returns that total norm (before clipping)
    as a tensor. ``foreach`` is accepted for compatibility."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return _rustgrad._full([], 0.0, _rustgrad.float32, False)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.detach().abs().amax() for g in grads]
            total_norm = _stack(norms).amax()
        else:
            norms = [g.detach().norm(norm_type) for g in grads]
            total_norm = _stack(norms).norm(norm_type)
        if error_if_nonfinite and not bool(total_norm.isfinite()):
            raise GradientError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
                "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`"
            )
        clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(g.dtype))
    return total_norm


def _stack(tensors: list[Tensor]) -> Tensor:
    dtype = tensors[0].dtype
    return stack([t.to(dtype) for t in tensors])


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float, foreach: Optional[bool] = None) -> None:
    """Clamps the gradients of ``parameters`` in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
