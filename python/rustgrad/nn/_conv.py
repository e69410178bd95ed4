"""Convolution and pooling functions with torch's signatures, over the op table's ``conv1d``,
``conv2d``, ``conv_transpose2d``, ``max_pool2d``, ``max_pool2d_indices`` and
``adaptive_avg_pool2d``: the optional ``bias``, ``return_indices`` and ``None`` entries of
``output_size`` are handled here; the kernels and their gradients are the table's.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from rustgrad._rustgrad import Tensor
from rustgrad._rustgrad import ops as _ops
from rustgrad.errors import ArgumentTypeError, ShapeError

__all__ = [
    "adaptive_avg_pool2d", "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "max_pool2d_with_indices",
]

_Size = Union[int, Sequence[int]]


def _with_bias(out: Tensor, bias: Optional[Tensor], spatial: int, op: str) -> Tensor:
    if bias is None:
        return out
    if not isinstance(bias, Tensor):
        raise ArgumentTypeError(f"{op}(): argument 'bias' must be a Tensor or None, not {type(bias).__name__}")
    channels = out.shape[1] if out.dim() == spatial + 2 else out.shape[0]
    if tuple(bias.shape) != (channels,):
        raise ShapeError(
            f"{op}: expected bias of shape ({channels},) for an output with {channels} channels, "
            f"got bias of shape {tuple(bias.shape)}"
        )
    return out + bias.reshape((channels,) + (1,) * spatial)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: _Size = 1,
           padding: Union[str, _Size] = 0, dilation: _Size = 1, groups: int = 1) -> Tensor:
    """2-D convolution of an (N, C, H, W) or (C, H, W) input with an (out, C/groups, kh, kw) weight, plus
    ``bias`` per output channel. ``padding`` is an int, a pair, ``'same'`` (stride 1) or ``'valid'``."""
    out = _ops["conv2d"](input, weight, stride, padding, True, "NCHW", dilation, groups, False)
    return _with_bias(out, bias, 2, "conv2d")


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: _Size = 1,
           padding: Union[str, _Size] = 0, dilation: _Size = 1, groups: int = 1) -> Tensor:
    """1-D convolution of an (N, C, L) or (C, L) input with an (out, C/groups, k) weight, plus ``bias``."""
    out = _ops["conv1d"](input, weight, stride, padding, None, "NCW", dilation, groups, False)
    return _with_bias(out, bias, 1, "conv1d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: _Size = 1,
                     padding: _Size = 0, output_padding: _Size = 0, groups: int = 1, dilation: _Size = 1) -> Tensor:
    """2-D transposed convolution of an (N, C, H, W) input with a (C, out/groups, kh, kw) weight, plus
    ``bias``: the gradient of ``conv2d`` with respect to its input."""
    out = _ops["conv_transpose2d"](input, weight, stride, padding, output_padding, groups, dilation)
    return _with_bias(out, bias, 2, "conv_transpose2d")


def max_pool2d_with_indices(input: Tensor, kernel_size: _Size, stride: Optional[_Size] = None,
                            padding: _Size = 0, dilation: _Size = 1, ceil_mode: bool = False,
                            return_indices: bool = True) -> tuple[Tensor, Tensor]:
    """``max_pool2d``'s values and the int64 flat index (over H·W of each plane) of each maximum."""
    args = (kernel_size, stride, padding, "NCHW", dilation, ceil_mode, False)
    return _ops["max_pool2d"](input, *args), _ops["max_pool2d_indices"](input, *args)


def max_pool2d(input: Tensor, kernel_size: _Size, stride: Optional[_Size] = None, padding: _Size = 0,
               dilation: _Size = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling of an (N, C, H, W) or (C, H, W) input; with ``return_indices`` also the int64 flat
    index (over H·W of each plane) of each maximum, as torch."""
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _ops["max_pool2d"](input, kernel_size, stride, padding, "NCHW", dilation, ceil_mode, False)


def adaptive_avg_pool2d(input: Tensor, output_size: Union[int, Sequence[Optional[int]]]) -> Tensor:
    """2-D adaptive average pooling to ``output_size`` (an int, or a pair whose ``None`` entries keep the
    input's size)."""
    if isinstance(output_size, (list, tuple)) and len(output_size) == 2 and None in output_size:
        if not isinstance(input, Tensor):
            raise ArgumentTypeError(
                f"adaptive_avg_pool2d(): argument 'input' must be a Tensor, not {type(input).__name__}"
            )
        spatial = tuple(input.shape[-2:])
        output_size = [spatial[i] if size is None else size for i, size in enumerate(output_size)]
    return _ops["adaptive_avg_pool2d"](input, output_size)
