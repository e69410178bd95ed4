"""``Embedding``: a lookup table of ``num_embeddings`` rows, initialised from N(0, 1) as torch."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad._creation import empty
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import InvalidArgumentError, ShapeError
from rustgrad.nn import functional as F
from rustgrad.nn import init
from rustgrad.nn.modules.module import Module
from rustgrad.nn.parameter import Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by integer indices; the
    ``padding_idx`` row starts at zero and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None,
                 max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Optional[Tensor] = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise InvalidArgumentError("Padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        if sparse:
            raise InvalidArgumentError("Embedding(sparse=True): sparse gradients are not supported; "
                                       "use sparse=False (dense gradients)")
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, \
            scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise ShapeError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        return text

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: Optional[int] = None,
                        max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        if embeddings.dim() != 2:
            raise ShapeError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)
