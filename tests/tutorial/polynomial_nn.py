"""The "nn" program of PyTorch's "Learning PyTorch with Examples" tutorial, in its shape: a third
order polynomial fitted to sin(x) on [-pi, pi] by a Sequential(Linear(3, 1), Flatten(0, 1)),
MSELoss(reduction="sum") and a manual gradient step under no_grad.

Written for torch; tests/test_tutorial_nn.py runs it with the import swapped for rustgrad.
TUTORIAL_STEPS sets the number of steps (2000 in the tutorial)."""

import math
import os

import torch

steps = int(os.environ.get("TUTORIAL_STEPS", "2000"))

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

powers = torch.tensor([1, 2, 3])
features = x.unsqueeze(-1).pow(powers)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1),
)
loss_fn = torch.nn.MSELoss(reduction="sum")

learning_rate = 1e-6
for step in range(steps):
    prediction = model(features)
    loss = loss_fn(prediction, y)
    if step == 0 or step % 100 == 99 or step == steps - 1:
        print("loss", step, loss.item())

    model.zero_grad()
    loss.backward()

    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

layer = model[0]
print(
    f"Result: y = {layer.bias.item()} + {layer.weight[:, 0].item()} x + {layer.weight[:, 1].item()} x^2"
    f" + {layer.weight[:, 2].item()} x^3"
)
