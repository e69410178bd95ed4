"""Normalisation layers: ``BatchNorm1d``/``BatchNorm2d`` (running statistics as torch keeps them),
``LayerNorm`` and ``GroupNorm``, over ``rustgrad.nn.functional``."""

from __future__ import annotations

from typing import Any, Optional, Union

from rustgrad._creation import empty, ones, tensor, zeros
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor, int64
from rustgrad.errors import InvalidArgumentError
from rustgrad.nn import functional as F
from rustgrad.nn import init
from rustgrad.nn.modules.module import Module
from rustgrad.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "LayerNorm"]


class _BatchNorm(Module):
    _expected_dims: tuple[int, ...] = ()
    running_mean: Optional[Tensor]
    running_var: Optional[Tensor]
    num_batches_tracked: Optional[Tensor]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()  # type: ignore[union-attr]
                self.running_var.fill_(1)  # type: ignore[union-attr]
                self.num_batches_tracked.zero_()  # type: ignore[union-attr]

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in self._expected_dims:
            wanted = " or ".join(f"{d}D" for d in self._expected_dims)
            raise InvalidArgumentError(f"expected {wanted} input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or self.running_mean is None
        tracked = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if tracked else None, self.running_var if tracked else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs."""

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs."""

    _expected_dims = (4,)


class LayerNorm(Module):
    """Normalises over the last ``len(normalized_shape)`` dims, with an elementwise affine map."""

    def __init__(self, normalized_shape: Union[int, Any], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(zeros(shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalises each of ``num_groups`` groups of channels of each sample, then scales per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise InvalidArgumentError("num_channels must be divisible by num_groups "
                                       f"(num_channels={num_channels}, num_groups={num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(ones(num_channels, device=device, dtype=dtype))
            self.bias = Parameter(zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
