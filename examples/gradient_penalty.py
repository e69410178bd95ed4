"""A Wasserstein GAN with gradient penalty (WGAN-GP) on 2-D points.

The critic's loss includes lambda * (||dD/dx|| - 1)^2 at points between real and generated
samples, which keeps the critic close to 1-Lipschitz. That term is a function of a gradient,
so training the critic differentiates through ``autograd.grad(..., create_graph=True)``:
a derivative of a derivative. The generator learns to move its samples onto the data.
Run it with ``python examples/gradient_penalty.py``.
"""

from __future__ import annotations

import numpy as np

import rustgrad
from rustgrad import Tensor, nn
from rustgrad.optim import Adam

TARGET_MEAN = (2.0, -1.0)
TARGET_STD = 0.3
BATCH, NOISE, HIDDEN = 64, 2, 32
PENALTY_WEIGHT = 10.0


def real_batch(rng: np.random.Generator) -> Tensor:
    points = np.asarray(TARGET_MEAN) + TARGET_STD * rng.standard_normal((BATCH, 2))
    return rustgrad.tensor(points, dtype=rustgrad.float32)


def gradient_penalty(critic: nn.Module, real: Tensor, fake: Tensor) -> Tensor:
    """mean((||dD/dx at x̂|| - 1)^2) with x̂ on random segments between real and fake points."""
    alpha = rustgrad.rand(real.shape[0], 1)
    between = (alpha * real + (1 - alpha) * fake).detach().requires_grad_(True)
    scores = critic(between)
    (slopes,) = rustgrad.autograd.grad(scores.sum(), [between], create_graph=True)
    norms = (slopes.pow(2).sum(1) + 1e-12).sqrt()
    return ((norms - 1) ** 2).mean()


def main(steps: int = 300, critic_steps: int = 5, seed: int = 0) -> dict[str, float]:
    rustgrad.manual_seed(seed)
    rng = np.random.default_rng(seed)
    generator = nn.Sequential(nn.Linear(NOISE, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 2))
    critic = nn.Sequential(nn.Linear(2, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                           nn.Linear(HIDDEN, 1))
    g_opt = Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.9))
    c_opt = Adam(critic.parameters(), lr=2e-3, betas=(0.5, 0.9))
    penalty = rustgrad.zeros(())
    for step in range(steps):
        for _ in range(critic_steps):
            real = real_batch(rng)
            fake = generator(rustgrad.randn(BATCH, NOISE)).detach()
            penalty = gradient_penalty(critic, real, fake)
            c_loss = critic(fake).mean() - critic(real).mean() + PENALTY_WEIGHT * penalty
            c_opt.zero_grad()
            c_loss.backward()
            c_opt.step()
        g_loss = -critic(generator(rustgrad.randn(BATCH, NOISE))).mean()
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
        if step % 100 == 0 or step == steps - 1:
            print(f"step {step:4d}: critic loss {c_loss.item():8.4f}  penalty {penalty.item():.4f}")
    with rustgrad.no_grad():
        samples = np.asarray(generator(rustgrad.randn(1000, NOISE)), dtype=np.float64)
    mean_error = float(np.abs(samples.mean(0) - np.asarray(TARGET_MEAN)).max())
    print(f"generated mean {np.round(samples.mean(0), 3).tolist()} (target {list(TARGET_MEAN)}), "
          f"std {np.round(samples.std(0), 3).tolist()} (target {TARGET_STD})")
    return {"mean_error": mean_error, "penalty": penalty.item()}


if __name__ == "__main__":
    main()
