//! The neural-network activations (`gelu`, `silu`, `elu`, `softplus`, ...): each one's value
//! and its slope at one element, written once for both float types. The forward maps
//! `value` over the input; the backward maps `g · slope(x)` over the gradient and the
//! input in one pass.
//!
//! The forms are the numerically stable ones: `gelu` goes through `erfc` (no `1 + erf`
//! cancellation for negative x), `1 + tanh(u)` is `2·sigmoid(2u)`, `elu` and `selu` use
//! `expm1`, and `logsigmoid` is `min(x, 0) - log1p(exp(-|x|))`.

use crate::kernels::elementwise::{zip_broadcast, zip_map, Operand};
use crate::kernels::vecmath;

/// What the activations are written with: the operations of `f32` and `f64`, with float32's
/// `exp` and `tanh` the vectorising ones of `vecmath`.
pub trait ActFloat:
    Copy
    + PartialOrd
    + Send
    + Sync
    + 'static
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    fn of(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn exp(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln_1p(self) -> Self;
    fn tanh(self) -> Self;
    fn erfc(self) -> Self;
    fn abs(self) -> Self;
    fn min(self, other: Self) -> Self;
    /// `f(a[i], b[i])` over two slices of one length (vectorised for this CPU for float32).
    fn zip_dense(a: &[Self], b: &[Self], f: impl Fn(Self, Self) -> Self + Sync + Send) -> Vec<Self>;
}

impl ActFloat for f32 {
    #[inline(always)]
    fn of(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        vecmath::exp(self)
    }
    #[inline(always)]
    fn exp_m1(self) -> f32 {
        f32::exp_m1(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> f32 {
        f32::ln_1p(self)
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        vecmath::tanh(self)
    }
    #[inline(always)]
    fn erfc(self) -> f32 {
        libm::erfcf(self)
    }
    #[inline(always)]
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline(always)]
    fn min(self, other: f32) -> f32 {
        f32::min(self, other)
    }
    fn zip_dense(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32 + Sync + Send) -> Vec<f32> {
        vecmath::zip_map_f32(a, b, f)
    }
}

impl ActFloat for f64 {
    #[inline(always)]
    fn of(v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    #[inline(always)]
    fn exp_m1(self) -> f64 {
        f64::exp_m1(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> f64 {
        f64::ln_1p(self)
    }
    #[inline(always)]
    fn tanh(self) -> f64 {
        f64::tanh(self)
    }
    #[inline(always)]
    fn erfc(self) -> f64 {
        libm::erfc(self)
    }
    #[inline(always)]
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    #[inline(always)]
    fn min(self, other: f64) -> f64 {
        f64::min(self, other)
    }
    fn zip_dense(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64 + Sync + Send) -> Vec<f64> {
        zip_map(a, b, f)
    }
}

/// SELU's constants (Klambauer et al.), as torch.
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
/// `sqrt(2/pi)` and the cubic coefficient of the tanh approximation of GELU.
pub const GELU_K: f64 = 0.797_884_560_802_865_4;
pub const GELU_C: f64 = 0.044_715;

/// One activation with its parameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Act {
    Silu,
    Selu,
    LogSigmoid,
    Gelu,
    GeluTanh,
    LeakyRelu {
        slope: f64,
    },
    Elu {
        alpha: f64,
    },
    Softplus {
        beta: f64,
        threshold: f64,
    },
    /// `hardtanh` (and `relu6`, with 0 and 6): the gradient is 0 at and past the bounds.
    Hardtanh {
        min: f64,
        max: f64,
    },
}

#[inline(always)]
fn sigmoid<T: ActFloat>(v: T) -> T {
    T::of(1.0) / (T::of(1.0) + (-v).exp())
}

/// `x` where `keep` holds, else `other`, without a branch (the condition is data-dependent).
#[inline(always)]
fn pick<T: ActFloat>(keep: bool, x: T, other: T) -> T {
    std::hint::select_unpredictable(keep, x, other)
}

impl Act {
    #[inline(always)]
    pub fn value<T: ActFloat>(self, v: T) -> T {
        let zero = T::of(0.0);
        match self {
            Act::Silu => v / (T::of(1.0) + (-v).exp()),
            Act::Selu => {
                let negative = T::of(SELU_ALPHA) * v.exp_m1();
                T::of(SELU_SCALE) * pick(v > zero, v, negative)
            }
            Act::LogSigmoid => v.min(zero) - (-v.abs()).exp().ln_1p(),
            Act::Gelu => T::of(0.5) * v * (-v * T::of(std::f64::consts::FRAC_1_SQRT_2)).erfc(),
            Act::GeluTanh => {
                let u = T::of(GELU_K) * (v + T::of(GELU_C) * v * v * v);
                v / (T::of(1.0) + (T::of(-2.0) * u).exp())
            }
            Act::LeakyRelu { slope } => pick(v > zero, v, v * T::of(slope)),
            Act::Elu { alpha } => pick(v > zero, v, T::of(alpha) * v.exp_m1()),
            Act::Softplus { beta, threshold } => {
                let scaled = v * T::of(beta);
                let soft = (scaled.exp()).ln_1p() / T::of(beta);
                pick(scaled > T::of(threshold), v, soft)
            }
            Act::Hardtanh { min, max } => {
                let (lo, hi) = (T::of(min), T::of(max));
                if v < lo {
                    lo
                } else if v > hi {
                    hi
                } else {
                    v
                }
            }
        }
    }

    /// The derivative at `v`.
    #[inline(always)]
    pub fn slope<T: ActFloat>(self, v: T) -> T {
        let (zero, one) = (T::of(0.0), T::of(1.0));
        match self {
            Act::Silu => {
                let s = sigmoid(v);
                s * (one + v * (one - s))
            }
            Act::Selu => T::of(SELU_SCALE) * pick(v > zero, one, T::of(SELU_ALPHA) * v.exp()),
            Act::LogSigmoid => sigmoid(-v),
            Act::Gelu => {
                let cdf = T::of(0.5) * (-v * T::of(std::f64::consts::FRAC_1_SQRT_2)).erfc();
                let pdf = (T::of(-0.5) * v * v).exp()
                    * T::of(0.5 * std::f64::consts::FRAC_2_SQRT_PI)
                    * T::of(std::f64::consts::FRAC_1_SQRT_2);
                cdf + v * pdf
            }
            Act::GeluTanh => {
                let u = T::of(GELU_K) * (v + T::of(GELU_C) * v * v * v);
                let t = u.tanh();
                let du = T::of(GELU_K) * (one + T::of(3.0 * GELU_C) * v * v);
                T::of(0.5) * (one + t) + T::of(0.5) * v * (one - t * t) * du
            }
            Act::LeakyRelu { slope } => pick(v > zero, one, T::of(slope)),
            Act::Elu { alpha } => pick(v > zero, one, T::of(alpha) * v.exp()),
            Act::Softplus { beta, threshold } => {
                let scaled = v * T::of(beta);
                pick(scaled > T::of(threshold), one, sigmoid(scaled))
            }
            Act::Hardtanh { min, max } => pick(v > T::of(min) && v < T::of(max), one, zero),
        }
    }
}

/// `g · act.slope(x)` over the broadcast `shape`: activations' backward. One loop per
/// activation, its variant written into the loop (with `act` read inside the loop, silu's
/// backward was not unswitched: 20 ns an element on one thread), and float32 loops over dense
/// operands compiled for the CPU's vectors (else `floor` in `exp` is a call per element).
pub fn grad_times_slope<T>(act: Act, shape: &[usize], g: &Operand<T>, x: &Operand<T>) -> Vec<T>
where
    T: ActFloat + Send + Sync + 'static,
{
    fn run<T: ActFloat + Send + Sync + 'static>(
        shape: &[usize],
        g: &Operand<T>,
        x: &Operand<T>,
        slope: impl Fn(T) -> T + Sync + Send,
    ) -> Vec<T> {
        let n = shape.iter().product();
        if g.dense && x.dense {
            return T::zip_dense(g.dense_slice(n), x.dense_slice(n), |gv, xv| gv * slope(xv));
        }
        zip_broadcast(shape, g, x, |gv: T, xv: T| gv * slope(xv))
    }
    match act {
        Act::Silu => run(shape, g, x, |v| Act::Silu.slope(v)),
        Act::Selu => run(shape, g, x, |v| Act::Selu.slope(v)),
        Act::LogSigmoid => run(shape, g, x, |v| Act::LogSigmoid.slope(v)),
        Act::Gelu => run(shape, g, x, |v| Act::Gelu.slope(v)),
        Act::GeluTanh => run(shape, g, x, |v| Act::GeluTanh.slope(v)),
        Act::LeakyRelu { slope } => run(shape, g, x, move |v| Act::LeakyRelu { slope }.slope(v)),
        Act::Elu { alpha } => run(shape, g, x, move |v| Act::Elu { alpha }.slope(v)),
        Act::Softplus { beta, threshold } => run(shape, g, x, move |v| Act::Softplus { beta, threshold }.slope(v)),
        Act::Hardtanh { min, max } => run(shape, g, x, move |v| Act::Hardtanh { min, max }.slope(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slopes_match_central_differences() {
        let acts = [
            Act::Silu,
            Act::Selu,
            Act::LogSigmoid,
            Act::Gelu,
            Act::GeluTanh,
            Act::LeakyRelu { slope: 0.1 },
            Act::Elu { alpha: 1.3 },
            Act::Softplus { beta: 2.0, threshold: 20.0 },
        ];
        for act in acts {
            for &x in &[-3.1, -0.7, 0.3, 1.9] {
                let h = 1e-6;
                let numeric = (act.value(x + h) - act.value(x - h)) / (2.0 * h);
                assert!((numeric - act.slope(x)).abs() < 1e-6, "{act:?} at {x}: {numeric} vs {}", act.slope(x));
            }
        }
    }
}
