"""The "control flow + weight sharing" program of PyTorch's "Learning PyTorch with Examples"
tutorial, in its shape: a Module whose forward uses a random number (0 to 2) of extra terms,
each reusing the same Parameter e, fitted to sin(x) with SGD(lr=1e-8, momentum=0.9).

Written for torch; tests/test_tutorial_nn.py runs it with the import swapped for rustgrad.
TUTORIAL_STEPS sets the number of steps (30000 in the tutorial)."""

import math
import os
import random

import torch


class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))
        self.e = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        y = self.a + self.b * x + self.c * x**2 + self.d * x**3
        for exponent in range(4, random.randint(4, 6)):
            y = y + self.e * x**exponent
        return y

    def string(self):
        return (
            f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3"
            f" + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?"
        )


steps = int(os.environ.get("TUTORIAL_STEPS", "30000"))

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

model = DynamicNet()
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for step in range(steps):
    prediction = model(x)
    loss = criterion(prediction, y)
    if step == 0 or step % 2000 == 1999 or step == steps - 1:
        print("loss", step, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"Result: {model.string()}")
