"""``rustgrad.nn.init``: fill tensors in place with torch's initialisation schemes.

Every function works under ``no_grad`` (it is not recorded on the tape), returns the tensor it
filled, and draws from ``generator=`` (a ``rustgrad.Generator``; None is the default generator
that ``rustgrad.manual_seed`` seeds).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional, Union

import numpy as np

from rustgrad import _rustgrad
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Generator, Tensor
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, ShapeError

__all__ = [
    "calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "orthogonal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def _check_tensor(name: str, tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise ArgumentTypeError(f"{name}(): argument 'tensor' must be a Tensor, not {type(tensor).__name__}")
    return tensor


def calculate_gain(nonlinearity: str, param: Optional[Union[int, float]] = None) -> float:
    """The recommended gain for ``nonlinearity``: 1 for linear layers and sigmoid, 5/3 for tanh,
    √2 for relu, √(2 / (1 + slope²)) for leaky_relu (slope ``param``, default 0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope: float = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise InvalidArgumentError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise InvalidArgumentError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel): in · prod(kernel), out · prod(kernel)."""
    if tensor.dim() < 2:
        raise ShapeError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field_size, tensor.shape[0] * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise InvalidArgumentError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` with samples from U(a, b)."""
    _check_tensor("uniform_", tensor)
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` with samples from N(mean, std²)."""
    _check_tensor("normal_", tensor)
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    _check_tensor("constant_", tensor)
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with 0."""
    _check_tensor("zeros_", tensor)
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fills the 2-D ``tensor`` with the identity matrix (ones on the diagonal, zeros elsewhere)."""
    _check_tensor("eye_", tensor)
    if tensor.dim() != 2:
        raise ShapeError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    with no_grad():
        return tensor.copy_(_rustgrad._from_numpy(np.eye(rows, cols, dtype=np.dtype(tensor.dtype.name)), False))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain · √(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(_check_tensor("xavier_uniform_", tensor))
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None) -> Tensor:
    """Glorot normal: N(0, std²) with std = gain · √(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(_check_tensor("xavier_normal_", tensor))
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(name: str, tensor: Tensor, a: float, mode: str, nonlinearity: str) -> Optional[float]:
    _check_tensor(name, tensor)
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Optional[Generator] = None) -> Tensor:
    """He uniform: U(-bound, bound) with bound = gain · √(3 / fan), the gain of ``nonlinearity``
    (with negative slope ``a`` for leaky_relu) and fan of ``mode`` (``"fan_in"`` or ``"fan_out"``)."""
    std = _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Optional[Generator] = None) -> Tensor:
    """He normal: N(0, std²) with std = gain / √fan."""
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` (2-D or more, seen as rows × the rest) with a (semi-)orthogonal matrix times
    ``gain``: the Q of a QR decomposition of a normal sample, signs fixed by R's diagonal."""
    _check_tensor("orthogonal_", tensor)
    if tensor.dim() < 2:
        raise ShapeError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    sample = _rustgrad._full([rows, cols], 0.0, tensor.dtype, False).normal_(0.0, 1.0, generator=generator)
    flattened = np.asarray(sample.numpy(), dtype=np.float64)
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = np.ascontiguousarray(q.reshape(tensor.shape) * gain, dtype=np.dtype(tensor.dtype.name))
    with no_grad():
        return tensor.copy_(_rustgrad._from_numpy(values, False))
