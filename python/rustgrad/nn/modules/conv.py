"""``Conv1d``, ``Conv2d`` and ``ConvTranspose2d`` over ``rustgrad.nn.functional``, initialised as torch
initialises them (kaiming-uniform with a=√5 for the weight, U(-1/√fan_in, 1/√fan_in) for the bias)."""

from __future__ import annotations

import math
from typing import Any, Optional, Union

from rustgrad._creation import empty
from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError
from rustgrad.nn import functional as F
from rustgrad.nn import init
from rustgrad.nn.modules.module import Module
from rustgrad.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value: Any, n: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    in_channels: int
    out_channels: int
    weight: Parameter
    bias: Optional[Parameter]

    def __init__(self, dims: int, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Union[str, Any], dilation: Any, transposed: bool, output_padding: Any, groups: int,
                 bias: bool, padding_mode: str, device: Any, dtype: Any) -> None:
        super().__init__()
        name = type(self).__name__
        if groups <= 0:
            raise InvalidArgumentError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise InvalidArgumentError(f"{name}: in_channels must be divisible by groups "
                                     f"(in_channels={in_channels}, groups={groups})")
        if out_channels % groups:
            raise InvalidArgumentError(f"{name}: out_channels must be divisible by groups "
                                     f"(out_channels={out_channels}, groups={groups})")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise InvalidArgumentError(f"{name}: invalid padding string {padding!r}, should be one of "
                                         "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, dims)):
                raise InvalidArgumentError(f"{name}: padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise InvalidArgumentError(f"{name}: padding_mode must be one of {_PADDING_MODES}, but got "
                                     f"padding_mode={padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, dims)
        self.stride = _tuple(stride, dims)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, dims)
        self.dilation = _tuple(dilation, dims)
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, dims)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups))
        self.weight = Parameter(empty(shape + self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draws new weights and bias from the default distributions."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _padded(self, input: Tensor) -> tuple[Tensor, Any]:
        """The input padded by ``padding_mode`` (other than zeros), and the padding left for the op."""
        if self.padding_mode == "zeros" or isinstance(self.padding, str) and self.padding == "valid":
            return input, self.padding
        if isinstance(self.padding, str):  # 'same' with a non-zero mode: pad explicitly
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) for t in total]
        else:
            pairs = [(p, p) for p in self.padding]
        flat = [side for pair in reversed(pairs) for side in pair]
        return F.pad(input, flat, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        zeros = (0,) * len(self.kernel_size)
        if self.padding != zeros:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """A 1-D convolution over (N, C_in, L) or (C_in, L) inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Union[str, Any] = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        input, padding = self._padded(input)
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """A 2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Union[str, Any] = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        input, padding = self._padded(input)
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """The gradient of a 2-D convolution with respect to its input, as a layer (upsampling)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise InvalidArgumentError(f'Only "zeros" padding mode is supported for ConvTranspose2d, '
                                     f"got {padding_mode!r}")
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)
