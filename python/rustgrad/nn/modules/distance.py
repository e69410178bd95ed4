"""``CosineSimilarity`` over ``rustgrad.nn.functional``."""

from __future__ import annotations

from rustgrad._rustgrad import Tensor
from rustgrad.nn import functional as F
from rustgrad.nn.modules.module import Module

__all__ = ["CosineSimilarity"]


class CosineSimilarity(Module):
    """x1·x2 / max(‖x1‖‖x2‖, eps) along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
