"""The coefficients of `erfc_scaled` in rust/kernels/vecmath/special.rs: erfc(a) = e^(-a²)·t·q(t) for
a >= 0 and t = 2/(2 + a), q of degree 10 fitted to `math.erfc` on [0, 10.5] (past which float32's
erfc is 0) by least squares weighted towards the largest relative error (about 4e-9, a fifteenth of
a float32 ulp; the evaluation is in float64).

    python tools/fit_erfc.py
"""

import math

import numpy as np

DEGREE = 10
LARGEST = 10.5


def fit() -> tuple[np.ndarray, float]:
    a = np.linspace(0.0, LARGEST, 200_001)
    t = 2.0 / (2.0 + a)
    scaled = np.array([math.erfc(v) * math.exp(v * v) for v in a])
    target = scaled / t
    powers = np.vander(t, DEGREE + 1, increasing=True)
    weights = 1.0 / target
    for _ in range(60):
        coefficients, *_ = np.linalg.lstsq(powers * weights[:, None], target * weights, rcond=None)
        relative = (powers @ coefficients - target) / target
        weights *= 1.0 + 20.0 * np.abs(relative) / np.abs(relative).max()
    return coefficients, float(np.abs(relative).max())


if __name__ == "__main__":
    coefficients, worst = fit()
    print(f"largest relative error: {worst:.2e}")
    for c in coefficients:
        print(f"f64::from_bits(0x{np.float64(c).view(np.uint64):016x}), // {c:.17e}")
