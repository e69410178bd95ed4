"""``Dropout``: zeroes elements with probability ``p`` in training mode, scaling the rest by 1/(1-p)."""

from __future__ import annotations

from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError
from rustgrad.nn import functional as F
from rustgrad.nn.modules.module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zeroes each element with probability ``p`` while training (drawn from rustgrad's global
    generator, so ``manual_seed`` repeats it); the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
