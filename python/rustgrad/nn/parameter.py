"""``nn.Parameter``: a tensor that a ``Module`` registers as one of its parameters."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a ``Module`` attribute registers it,
    so it appears in ``parameters()`` and ``state_dict()``.

    ``Parameter(data)`` shares ``data``'s memory (without its autograd history) and requires grad
    unless ``requires_grad=False``; ``Parameter()`` is an empty float32 parameter. Operations on a
    parameter give plain tensors, as in torch.
    """

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = Tensor()
        elif not isinstance(data, Tensor):
            raise ArgumentTypeError(
                f"Parameter(): argument 'data' must be a Tensor, not {type(data).__name__}; "
                "wrap it first: rustgrad.tensor(data)"
            )
        param = super().__new__(cls, data)
        if requires_grad:
            param.requires_grad_(True)
        return param

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]  # type: ignore[no-any-return]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (Parameter, (self.detach().clone(), self.requires_grad))
