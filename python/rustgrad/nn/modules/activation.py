"""Activation modules over ``rustgrad.nn.functional``."""

from __future__ import annotations

from typing import Optional

from rustgrad._rustgrad import Tensor
from rustgrad.nn import functional as F
from rustgrad.nn.modules.module import Module

__all__ = [
    "ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid",
    "Softmax", "Softplus", "Tanh",
]


class ReLU(Module):
    """max(0, x) elementwise. ``inplace`` is accepted as in torch (a new tensor is returned)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x) elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Softmax(Module):
    """softmax along ``dim`` (torch's implicit choice, with its warning, when None)."""

    def __init__(self, dim: Optional[int] = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax) along ``dim``, computed stably."""

    def __init__(self, dim: Optional[int] = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Inplace(Module):
    """An activation with torch's ``inplace`` flag (accepted; a new tensor is returned)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x·Φ(x); ``approximate='tanh'`` uses the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_Inplace):
    """x·sigmoid(x)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input)


class SELU(_Inplace):
    """scale·(max(0, x) + min(0, α(exp(x) − 1))) with torch's constants."""

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input)


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class LeakyReLU(_Inplace):
    """x where x ≥ 0, else ``negative_slope``·x."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(_Inplace):
    """x where x > 0, else α(exp(x) − 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(βx))/β, linear where βx > ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(_Inplace):
    """x clamped to [``min_val``, ``max_val``]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(_Inplace):
    """min(max(0, x), 6)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input)
