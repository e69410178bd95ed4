"""A two-layer network trained by hand, PyTorch style, with a custom autograd Function.

The reference PyTorch program with ``import torch`` replaced by ``import rustgrad as torch``
(and a few steps instead of 500). Run it with ``python examples/two_layer_eager.py``.
"""

from __future__ import annotations

import rustgrad as torch
from rustgrad.autograd import FunctionCtx


class MyReLU(torch.autograd.Function):
    """ReLU written as a custom Function: forward clamps, backward masks the gradient."""

    @staticmethod
    def forward(ctx: FunctionCtx, input: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: torch.Tensor) -> torch.Tensor:
        (input,) = ctx.saved_tensors
        assert input is not None
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def relu(x: torch.Tensor) -> torch.Tensor:
    """``MyReLU.apply`` with a precise type (``Function.apply`` returns whatever forward returns)."""
    out: torch.Tensor = MyReLU.apply(x)
    return out


def main(steps: int = 20) -> float:
    torch.manual_seed(0)
    dtype = torch.float
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    n, d_in, h, d_out = 64, 1000, 100, 10
    x = torch.randn(n, d_in, device=device, dtype=dtype)
    y = torch.randn(n, d_out, device=device, dtype=dtype)
    w1 = torch.randn(d_in, h, device=device, dtype=dtype, requires_grad=True)
    w2 = torch.randn(h, d_out, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 1e-6

    loss_value = float("nan")
    for t in range(steps):
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        loss_value = loss.item()
        print(t, loss_value)
        loss.backward()

        with torch.no_grad():
            # .grad is Optional[Tensor]: None until the first backward.
            assert w1.grad is not None and w2.grad is not None
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return loss_value


if __name__ == "__main__":
    main()
