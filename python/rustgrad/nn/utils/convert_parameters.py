"""One flat vector from many parameters, and back, as ``torch.nn.utils.convert_parameters``."""

from __future__ import annotations

from typing import Iterable

from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, ShapeError

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _typename(value: object) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    from rustgrad._generated_ops import cat

    params = list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise ArgumentTypeError(f"expected torch.Tensor, but got: {_typename(p)}")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copies consecutive slices of the 1-D ``vec`` into ``parameters``, in place (not recorded on the tape).

    torch makes each parameter share ``vec``'s memory; rustgrad copies the values (a parameter's
    storage cannot be swapped), so later changes to ``vec`` do not show in the parameters."""
    if not isinstance(vec, Tensor):
        raise ArgumentTypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    params = list(parameters)
    needed = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != needed:
        raise ShapeError(
            f"vector_to_parameters: vec must be 1-D with {needed} elements (the parameters' total), "
            f"got shape {list(vec.shape)}"
        )
    pointer = 0
    with no_grad():
        for param in params:
            n = param.numel()
            param.copy_(vec[pointer:pointer + n].reshape(param.shape))
            pointer += n
