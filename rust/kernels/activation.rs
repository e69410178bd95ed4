//! The neural-network activations (`gelu`, `silu`, `elu`, `softplus`, ...): each one's value
//! and its slope at one element, written once for both float types. The forward maps
//! `value` over the input; the backward maps `g · slope(x)` over the gradient and the
//! input in one pass.
//!
//! The forms are the numerically stable ones: `gelu` goes through `erfc` (no `1 + erf`
//! cancellation for negative x), `1 + tanh(u)` is `2·sigmoid(2u)`, `elu` and `selu` use
//! `expm1`, and `logsigmoid` is `min(x, 0) - log1p(exp(-|x|))`.

use crate::kernels::elementwise::{map, zip_broadcast, zip_map, Operand};
use crate::kernels::vecmath;

/// The element operations the activations are written with: those of `f32` and `f64`, with
/// float32's `exp`, `expm1`, `log1p`, `tanh` and `erfc` the vectorising ones of `vecmath`; and
/// of `Checked`, which also tells whether a split function met a rare argument.
pub trait ActScalar:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    fn of(v: f64) -> Self;
    fn exp(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln_1p(self) -> Self;
    fn tanh(self) -> Self;
    fn erfc(self) -> Self;
    fn abs(self) -> Self;
    fn min(self, other: Self) -> Self;
}

/// A float type of tensors whose activations run over slices.
pub trait ActFloat: ActScalar + Send + Sync + 'static {
    fn to_f64(self) -> f64;
    /// `kernel(x[i])` over a slice (vectorised for this CPU for float32).
    fn map_dense(x: &[Self], kernel: impl ActKernel) -> Vec<Self>;
    /// `g[i] · slope(x[i])` over two slices of one length (vectorised for this CPU for float32).
    fn times_slope_dense(g: &[Self], x: &[Self], slope: impl ActKernel) -> Vec<Self>;
    /// `g · slope(x)` over the broadcast `shape`, for operands that are not both dense.
    fn times_slope_broadcast(shape: &[usize], g: &Operand<Self>, x: &Operand<Self>, slope: impl ActKernel)
        -> Vec<Self>;
}

impl ActScalar for f32 {
    #[inline(always)]
    fn of(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        vecmath::exp(self)
    }
    #[inline(always)]
    fn exp_m1(self) -> f32 {
        vecmath::expm1(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> f32 {
        vecmath::ln_1p(self)
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        vecmath::tanh(self)
    }
    #[inline(always)]
    fn erfc(self) -> f32 {
        vecmath::erfc(self)
    }
    #[inline(always)]
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline(always)]
    fn min(self, other: f32) -> f32 {
        f32::min(self, other)
    }
}

impl ActFloat for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn map_dense(x: &[f32], kernel: impl ActKernel) -> Vec<f32> {
        vecmath::map_f32(x, kernel)
    }
    fn times_slope_dense(g: &[f32], x: &[f32], slope: impl ActKernel) -> Vec<f32> {
        vecmath::times_slope_f32(g, x, slope)
    }
    /// Gathered first, so that the slopes' `vecmath` functions run only in the CPU's vectors; a
    /// single gradient (the backward of a sum) scales the slopes of a dense input in one map.
    fn times_slope_broadcast(shape: &[usize], g: &Operand<f32>, x: &Operand<f32>, slope: impl ActKernel) -> Vec<f32> {
        let n = shape.iter().product();
        if x.dense && g.is_single(shape) && n > 0 {
            return vecmath::map_f32(x.dense_slice(n), Scaled { factor: g.data[g.offset], slope });
        }
        vecmath::times_slope_f32(&g.dense_or_gathered(shape), &x.dense_or_gathered(shape), slope)
    }
}

impl ActScalar for f64 {
    #[inline(always)]
    fn of(v: f64) -> f64 {
        v
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
}

impl ActFloat for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    fn map_dense(x: &[f64], kernel: impl ActKernel) -> Vec<f64> {
        map(x, move |v| kernel.eval(v))
    }
    fn times_slope_dense(g: &[f64], x: &[f64], slope: impl ActKernel) -> Vec<f64> {
        zip_map(g, x, move |gv, xv| gv * slope.eval(xv))
    }
    fn times_slope_broadcast(shape: &[usize], g: &Operand<f64>, x: &Operand<f64>, slope: impl ActKernel) -> Vec<f64> {
        zip_broadcast(shape, g, x, move |gv: f64, xv: f64| gv * slope.eval(xv))
    }
}

/// A float32 value computed with the common forms of the split `vecmath` functions (`Exp`,
/// `Expm1`, `Ln1p`, `Tanh`), and whether one of them met an argument it is rare for: where
/// `rare` is false, `value` has the bits of the same activation computed in `f32`, operation
/// for operation. A branch not taken (`pick`) drops its flag with its value.
#[derive(Copy, Clone)]
struct Checked {
    value: f32,
    rare: bool,
}

impl Checked {
    #[inline(always)]
    fn split(self, kernel: impl vecmath::ElementFn) -> Checked {
        Checked { value: kernel.common(self.value), rare: self.rare || kernel.is_rare(self.value) }
    }

    #[inline(always)]
    fn with(self, other: Checked, op: impl Fn(f32, f32) -> f32) -> Checked {
        Checked { value: op(self.value, other.value), rare: self.rare || other.rare }
    }
}

impl PartialEq for Checked {
    #[inline(always)]
    fn eq(&self, other: &Checked) -> bool {
        self.value == other.value
    }
}

impl PartialOrd for Checked {
    #[inline(always)]
    fn partial_cmp(&self, other: &Checked) -> Option<std::cmp::Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

macro_rules! checked_operators {
    ($($trait:ident $method:ident $op:tt),*) => {$(
        impl std::ops::$trait for Checked {
            type Output = Checked;
            #[inline(always)]
            fn $method(self, other: Checked) -> Checked {
                self.with(other, |a, b| a $op b)
            }
        }
    )*};
}
checked_operators!(Add add +, Sub sub -, Mul mul *, Div div /);

impl std::ops::Neg for Checked {
    type Output = Checked;
    #[inline(always)]
    fn neg(self) -> Checked {
        Checked { value: -self.value, ..self }
    }
}

impl ActScalar for Checked {
    #[inline(always)]
    fn of(v: f64) -> Checked {
        Checked { value: v as f32, rare: false }
    }
    #[inline(always)]
    fn exp(self) -> Checked {
        self.split(vecmath::Exp)
    }
    #[inline(always)]
    fn exp_m1(self) -> Checked {
        self.split(vecmath::Expm1)
    }
    #[inline(always)]
    fn ln_1p(self) -> Checked {
        self.split(vecmath::Ln1p)
    }
    #[inline(always)]
    fn tanh(self) -> Checked {
        self.split(vecmath::Tanh)
    }
    /// Not split: the whole function.
    #[inline(always)]
    fn erfc(self) -> Checked {
        Checked { value: vecmath::erfc(self.value), ..self }
    }
    #[inline(always)]
    fn abs(self) -> Checked {
        Checked { value: self.value.abs(), ..self }
    }
    #[inline(always)]
    fn min(self, other: Checked) -> Checked {
        self.with(other, f32::min)
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
fn sigmoid<T: ActScalar>(v: T) -> T {
    T::of(1.0) / (T::of(1.0) + (-v).exp())
}

/// `x` where `keep` holds, else `other`, without a branch (the condition is data-dependent).
#[inline(always)]
fn pick<T: ActScalar>(keep: bool, x: T, other: T) -> T {
    std::hint::select_unpredictable(keep, x, other)
}

impl Act {
    #[inline(always)]
    pub fn value<T: ActScalar>(self, v: T) -> T {
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
    pub fn slope<T: ActScalar>(self, v: T) -> T {
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

// Each activation by number, its parameters as two floats: `Value::<GELU>` and `Slope::<GELU>`
// are then types of their own, whose `at` the vectorised loops always inline (see
// `vecmath::ElementFn`: gelu's value through erfc, as a closure, stayed a scalar call per element).
const SILU: u8 = 0;
const SELU: u8 = 1;
const LOG_SIGMOID: u8 = 2;
const GELU: u8 = 3;
const GELU_TANH: u8 = 4;
const LEAKY_RELU: u8 = 5;
const ELU: u8 = 6;
const SOFTPLUS: u8 = 7;
const HARDTANH: u8 = 8;

impl Act {
    /// Its number and its parameters, which `numbered` turns back into it.
    fn number(self) -> (u8, f64, f64) {
        match self {
            Act::Silu => (SILU, 0.0, 0.0),
            Act::Selu => (SELU, 0.0, 0.0),
            Act::LogSigmoid => (LOG_SIGMOID, 0.0, 0.0),
            Act::Gelu => (GELU, 0.0, 0.0),
            Act::GeluTanh => (GELU_TANH, 0.0, 0.0),
            Act::LeakyRelu { slope } => (LEAKY_RELU, slope, 0.0),
            Act::Elu { alpha } => (ELU, alpha, 0.0),
            Act::Softplus { beta, threshold } => (SOFTPLUS, beta, threshold),
            Act::Hardtanh { min, max } => (HARDTANH, min, max),
        }
    }
}

/// The activation of `number` with parameters `a` and `b`; with a constant `number` the match
/// folds away.
#[inline(always)]
fn numbered(number: u8, a: f64, b: f64) -> Act {
    match number {
        SILU => Act::Silu,
        SELU => Act::Selu,
        LOG_SIGMOID => Act::LogSigmoid,
        GELU => Act::Gelu,
        GELU_TANH => Act::GeluTanh,
        LEAKY_RELU => Act::LeakyRelu { slope: a },
        ELU => Act::Elu { alpha: a },
        SOFTPLUS => Act::Softplus { beta: a, threshold: b },
        _ => Act::Hardtanh { min: a, max: b },
    }
}

/// The activations without parameters as float32 kernel types of the unary op table
/// (`split_f32`).
pub const SILU_VALUE: Value<SILU> = Value { a: 0.0, b: 0.0 };
pub const SELU_VALUE: Value<SELU> = Value { a: 0.0, b: 0.0 };
pub const LOG_SIGMOID_VALUE: Value<LOG_SIGMOID> = Value { a: 0.0, b: 0.0 };

/// `factor · slope(v)`: `times_slope_f32`'s element with a single gradient.
struct Scaled<K> {
    factor: f32,
    slope: K,
}

impl<K: ActKernel> vecmath::ElementFn for Scaled<K> {
    const SPLIT: bool = K::SPLIT;

    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        self.factor * self.slope.at(v)
    }

    #[inline(always)]
    fn common_checked(&self, v: f32) -> (f32, bool) {
        let (slope, rare) = self.slope.common_checked(v);
        (self.factor * slope, rare)
    }
}

/// One activation's value or slope at one element, for either float type.
pub trait ActKernel: vecmath::ElementFn + Copy {
    fn eval<T: ActScalar>(&self, v: T) -> T;
}

/// The value of activation number `ACT`.
#[derive(Copy, Clone)]
pub struct Value<const ACT: u8> {
    a: f64,
    b: f64,
}

/// The slope of activation number `ACT`.
#[derive(Copy, Clone)]
pub struct Slope<const ACT: u8> {
    a: f64,
    b: f64,
}

impl<const ACT: u8> ActKernel for Value<ACT> {
    #[inline(always)]
    fn eval<T: ActScalar>(&self, v: T) -> T {
        numbered(ACT, self.a, self.b).value(v)
    }
}

impl<const ACT: u8> ActKernel for Slope<ACT> {
    #[inline(always)]
    fn eval<T: ActScalar>(&self, v: T) -> T {
        numbered(ACT, self.a, self.b).slope(v)
    }
}

/// Whether activation number `act` calls a split `vecmath` function, so that its loops run the
/// functions' common forms (`Checked`) and redo only the vectors where one met a rare argument.
/// Not gelu: its `erfc` has no common form, and the check cost its backward more than its one
/// `exp` saved (6.2 → 6.4 ms per million elements, `benchmarks/special_functions.py`).
const fn calls_split_functions(act: u8) -> bool {
    !matches!(act, LEAKY_RELU | HARDTANH | GELU)
}

/// `kernel` evaluated with the split functions' common forms: its value and whether it is rare.
#[inline(always)]
fn checked(kernel: &impl ActKernel, v: f32) -> (f32, bool) {
    let result = kernel.eval(Checked { value: v, rare: false });
    (result.value, result.rare)
}

impl<const ACT: u8> vecmath::ElementFn for Value<ACT> {
    const SPLIT: bool = calls_split_functions(ACT);

    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        self.eval(v)
    }

    #[inline(always)]
    fn common_checked(&self, v: f32) -> (f32, bool) {
        checked(self, v)
    }
}

impl<const ACT: u8> vecmath::ElementFn for Slope<ACT> {
    const SPLIT: bool = calls_split_functions(ACT);

    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        self.eval(v)
    }

    #[inline(always)]
    fn common_checked(&self, v: f32) -> (f32, bool) {
        checked(self, v)
    }
}

/// `$body` with `$kernel` the `$kind` (`Value` or `Slope`) of `$act`, one monomorphic copy of
/// `$body` per activation.
macro_rules! by_number {
    ($act:expr, $kind:ident, |$kernel:ident| $body:expr) => {
        by_number!(@arms $act, $kind, $kernel, $body,
            [SILU, SELU, LOG_SIGMOID, GELU, GELU_TANH, LEAKY_RELU, ELU, SOFTPLUS], HARDTANH)
    };
    (@arms $act:expr, $kind:ident, $kernel:ident, $body:expr, [$($number:ident),*], $last:ident) => {{
        let (number, a, b) = $act.number();
        match number {
            $($number => {
                let $kernel = $kind::<$number> { a, b };
                $body
            })*
            _ => {
                let $kernel = $kind::<$last> { a, b };
                $body
            }
        }
    }};
}

/// `act` over a dense slice: the forward of the activations with parameters and of gelu.
pub fn values<T: ActFloat>(act: Act, x: &[T]) -> Vec<T> {
    by_number!(act, Value, |kernel| T::map_dense(x, kernel))
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
        slope: impl ActKernel,
    ) -> Vec<T> {
        let n = shape.iter().product();
        if g.dense && x.dense {
            return T::times_slope_dense(g.dense_slice(n), x.dense_slice(n), slope);
        }
        T::times_slope_broadcast(shape, g, x, slope)
    }
    by_number!(act, Slope, |kernel| run(shape, g, x, kernel))
}

#[cfg(test)]
#[path = "activation_tests.rs"]
mod tests;
