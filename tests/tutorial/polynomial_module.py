"""The "custom nn Module" program of PyTorch's "Learning PyTorch with Examples" tutorial, in its
shape: a Module subclass holding four scalar Parameters, fitted to sin(x) with
MSELoss(reduction="sum") and SGD(lr=1e-6).

Written for torch; tests/test_tutorial_nn.py runs it with the import swapped for rustgrad.
TUTORIAL_STEPS sets the number of steps (2000 in the tutorial)."""

import math
import os

import torch


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x**2 + self.d * x**3

    def string(self):
        return f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3"


steps = int(os.environ.get("TUTORIAL_STEPS", "2000"))

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

model = Polynomial3()
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
for step in range(steps):
    prediction = model(x)
    loss = criterion(prediction, y)
    if step == 0 or step % 100 == 99 or step == steps - 1:
        print("loss", step, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"Result: {model.string()}")
