"""The coefficients of `atan_of_unit` in rust/kernels/vecmath/trig.rs: atan(t) = t + t·z·p(z) for t
in [0, 1] and z = t², p of degree 7 fitted to float64 `numpy.arctan` by least squares weighted
towards the largest relative error (about 2e-8, a third of a float32 ulp, before the coefficients are
rounded to float32).

    python tools/fit_atan.py
"""

import numpy as np

DEGREE = 7


def fit() -> np.ndarray:
    t = np.linspace(1e-4, 1.0, 400_001)
    z = t * t
    exact = np.arctan(t)
    target = (exact / t - 1.0) / z
    sensitivity = z / (exact / t)  # a change of p moves atan's relative error by this much
    powers = np.vander(z, DEGREE + 1, increasing=True)
    weights = sensitivity.copy()
    for _ in range(60):
        coefficients, *_ = np.linalg.lstsq(powers * weights[:, None], target * weights, rcond=None)
        relative = (powers @ coefficients - target) * sensitivity
        weights *= 1.0 + 20.0 * np.abs(relative) / np.abs(relative).max()
    rounded = coefficients.astype(np.float32)
    worst = np.abs((powers @ rounded.astype(np.float64) - target) * sensitivity).max()
    print(f"largest relative error with float32 coefficients: {worst:.2e}")
    return rounded


if __name__ == "__main__":
    for c in fit():
        print(f"{float(c):.9e}  0x{c.view(np.uint32):08x}")
