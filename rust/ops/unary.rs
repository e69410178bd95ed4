//! Unary elementwise ops: one declaration each, from which come the `UnaryOp`
//! enum, the float kernels, the derivative rule and the names on both fronts.
//!
//! An entry reads:
//! - `name`, `torch_aliases`, `tf`, `doc`: see [`Spec`];
//! - `front: FUNCTIONAL` (optional): where torch offers the op, a [`TorchFront`] constant;
//! - `kernel: |v| ...`: the value for one element `v`. It is compiled once per
//!   float type, so `v.sin()` is `f32::sin` or `f64::sin`;
//! - `large_f32: |v| ...` (optional): the exact value for the rare float32 elements
//!   past `vecmath::TRIG_REDUCTION_LIMIT`, where a vectorised `sin`/`cos` hands over;
//! - `split_f32: vecmath::Ln` (optional): a `vecmath` kernel type that computes `kernel`'s
//!   float32 value without its edge cases where none is at stake (see `vecmath::ElementFn`);
//! - `ints`: what an integer tensor gets, as in torch: `Promote` (the op computes
//!   in float32) or `Keep(|v| ...)` with the kernel for one integer element `v`,
//!   compiled once per integer type (wrapping on overflow, see `IntegerElement`);
//! - `keeps`: what `grad` reads besides the incoming gradient (`Input` for `x`,
//!   `Output` for `y`, `Nothing`), so the eager tape saves only that;
//! - `grad: |d, x, y, g| ...`: the input's gradient, given the output gradient `g`,
//!   built from ops emitted through the `Differentiator` `d` (see `rules.rs`).
//!
//! Static shape and dtype inference needs nothing per op: a unary op keeps its
//! input's shape and float dtype, and an integer one with `Keep` (TF1 refuses the others).
//!
//! The kernel traits and the `unary_ops!` macro the entries expand through are in
//! `unary_macro.rs`.

use super::unary_macro::{integer_arm, unary_ops};
pub use super::unary_macro::{IntegerElement, IntegerKernel, UnaryKernel};
use super::{activation, Ints, Keeps, Spec, TorchFront};
use crate::error::Result;
use crate::kernels::activation::Act;
use crate::kernels::elementwise::{map, ScalarOp};
use crate::kernels::vecmath;
use crate::rules::Differentiator;
// Masks in gradients are data-dependent coin flips: a branch per element would mispredict half the time.
use std::hint::select_unpredictable;

/// `Special::name(v)` for the kernels below: float32's vectorising version (`kernels::vecmath`),
/// float64's from the C library (and erf, which the standard library lacks, from `libm`).
macro_rules! special_functions {
    ($($name:ident: $f32:path, $f64:path;)*) => {
        trait Special {
            $(fn $name(self) -> Self;)*
        }

        impl Special for f32 {
            $(
                #[inline(always)]
                fn $name(self) -> f32 {
                    $f32(self)
                }
            )*
        }

        impl Special for f64 {
            $(
                #[inline(always)]
                fn $name(self) -> f64 {
                    $f64(self)
                }
            )*
        }
    };
}

special_functions! {
    erf: vecmath::erf, libm::erf;
    fast_exp: vecmath::exp, f64::exp;
    fast_expm1: vecmath::expm1, f64::exp_m1;
    fast_exp2: vecmath::exp2, f64::exp2;
    fast_ln: vecmath::ln, f64::ln;
    fast_ln_1p: vecmath::ln_1p, f64::ln_1p;
    fast_log2: vecmath::log2, f64::log2;
    fast_log10: vecmath::log10, f64::log10;
    fast_sin: vecmath::sin, f64::sin;
    fast_cos: vecmath::cos, f64::cos;
    fast_tan: vecmath::tan, f64::tan;
    fast_asin: vecmath::asin, f64::asin;
    fast_acos: vecmath::acos, f64::acos;
    fast_atan: vecmath::atan, f64::atan;
    fast_sinh: vecmath::sinh, f64::sinh;
    fast_cosh: vecmath::cosh, f64::cosh;
    fast_tanh: vecmath::tanh, f64::tanh;
    fast_asinh: vecmath::asinh, f64::asinh;
    fast_acosh: vecmath::acosh, f64::acosh;
    fast_atanh: vecmath::atanh, f64::atanh;
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

/// `g / sqrt(k + s·x²)`: the shape of the inverse trigonometric and hyperbolic derivatives.
fn over_root_of_quadratic<D: Differentiator>(
    d: &mut D,
    g: &D::Value,
    x: &D::Value,
    k: f64,
    s: f64,
) -> Result<D::Value> {
    let square = d.unary(UnaryOp::Square, x)?;
    let scaled = d.scalar(&square, ScalarOp::Mul, s)?;
    let shifted = d.scalar(&scaled, ScalarOp::Add, k)?;
    let root = d.unary(UnaryOp::Sqrt, &shifted)?;
    d.div(g, &root)
}

unary_ops! {
    Neg {
        name: "neg", torch_aliases: ["negative"], tf: ["negative", "math.negative"],
        doc: "The negation -x.",
        kernel: |v| -v,
        ints: Keep(|v| v.wrapping_neg()),
        keeps: Nothing,
        grad: |d, x, y, g| d.unary(UnaryOp::Neg, g),
    }
    Abs {
        name: "abs", torch_aliases: ["absolute"], tf: ["abs", "math.abs"],
        doc: "The absolute value |x|; its gradient at 0 is 0.",
        kernel: |v| v.abs(),
        ints: Keep(|v| v.wrapping_abs()),
        keeps: Input,
        grad: |d, x, y, g| {
            let sign = d.unary(UnaryOp::Sign, x)?;
            d.mul(g, &sign)
        },
    }
    Exp {
        name: "exp", torch_aliases: [], tf: ["exp", "math.exp"],
        doc: "The exponential e^x.",
        kernel: |v| Special::fast_exp(v),
        split_f32: vecmath::Exp,
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| d.mul(g, y),
    }
    Exp2 {
        name: "exp2", torch_aliases: [], tf: [],
        doc: "The power of two 2^x.",
        kernel: |v| Special::fast_exp2(v),
        split_f32: vecmath::Exp2,
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let slope = d.scalar(y, ScalarOp::Mul, std::f64::consts::LN_2)?;
            d.mul(g, &slope)
        },
    }
    Expm1 {
        name: "expm1", torch_aliases: [], tf: ["math.expm1", "expm1"],
        doc: "e^x - 1, exact for small x.",
        kernel: |v| Special::fast_expm1(v),
        split_f32: vecmath::Expm1,
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let ex = d.scalar(y, ScalarOp::Add, 1.0)?;
            d.mul(g, &ex)
        },
    }
    Log {
        name: "log", torch_aliases: [], tf: ["log", "math.log"],
        doc: "The natural logarithm.",
        kernel: |v| Special::fast_ln(v),
        split_f32: vecmath::Ln,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| d.div(g, x),
    }
    Log1p {
        name: "log1p", torch_aliases: [], tf: ["math.log1p", "log1p"],
        doc: "log(1 + x), exact for small x.",
        kernel: |v| Special::fast_ln_1p(v),
        split_f32: vecmath::Ln1p,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let shifted = d.scalar(x, ScalarOp::Add, 1.0)?;
            d.div(g, &shifted)
        },
    }
    Log2 {
        name: "log2", torch_aliases: [], tf: [],
        doc: "The base-2 logarithm.",
        kernel: |v| Special::fast_log2(v),
        split_f32: vecmath::Log2,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let scaled = d.scalar(x, ScalarOp::Mul, std::f64::consts::LN_2)?;
            d.div(g, &scaled)
        },
    }
    Log10 {
        name: "log10", torch_aliases: [], tf: [],
        doc: "The base-10 logarithm.",
        kernel: |v| Special::fast_log10(v),
        split_f32: vecmath::Log10,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let scaled = d.scalar(x, ScalarOp::Mul, std::f64::consts::LN_10)?;
            d.div(g, &scaled)
        },
    }
    Sqrt {
        name: "sqrt", torch_aliases: [], tf: ["sqrt", "math.sqrt"],
        doc: "The square root.",
        kernel: |v| v.sqrt(),
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let half = d.scalar(g, ScalarOp::Mul, 0.5)?;
            d.div(&half, y)
        },
    }
    Rsqrt {
        name: "rsqrt", torch_aliases: [], tf: ["math.rsqrt", "rsqrt"],
        doc: "The reciprocal square root 1/sqrt(x).",
        kernel: |v| 1.0 / v.sqrt(),
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            // d(x^-1/2)/dx = -x^-3/2 / 2 = -y³/2
            let cube = d.scalar(y, ScalarOp::Pow, 3.0)?;
            let slope = d.scalar(&cube, ScalarOp::Mul, -0.5)?;
            d.mul(g, &slope)
        },
    }
    Reciprocal {
        name: "reciprocal", torch_aliases: [], tf: ["math.reciprocal", "reciprocal"],
        doc: "The reciprocal 1/x.",
        kernel: |v| 1.0 / v,
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let square = d.unary(UnaryOp::Square, y)?;
            let slope = d.unary(UnaryOp::Neg, &square)?;
            d.mul(g, &slope)
        },
    }
    Square {
        name: "square", torch_aliases: [], tf: ["square", "math.square"],
        doc: "The square x².",
        kernel: |v| v * v,
        ints: Keep(|v| v.wrapping_mul(v)),
        keeps: Input,
        grad: |d, x, y, g| {
            let twice = d.scalar(x, ScalarOp::Mul, 2.0)?;
            d.mul(g, &twice)
        },
    }
    Sin {
        name: "sin", torch_aliases: [], tf: ["sin", "math.sin"],
        doc: "The sine, in radians.",
        kernel: |v| Special::fast_sin(v),
        large_f32: |v| v.sin(),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let cos = d.unary(UnaryOp::Cos, x)?;
            d.mul(g, &cos)
        },
    }
    Cos {
        name: "cos", torch_aliases: [], tf: ["cos", "math.cos"],
        doc: "The cosine, in radians.",
        kernel: |v| Special::fast_cos(v),
        large_f32: |v| v.cos(),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let sin = d.unary(UnaryOp::Sin, x)?;
            let slope = d.unary(UnaryOp::Neg, &sin)?;
            d.mul(g, &slope)
        },
    }
    Tan {
        name: "tan", torch_aliases: [], tf: ["tan", "math.tan"],
        doc: "The tangent, in radians.",
        kernel: |v| Special::fast_tan(v),
        large_f32: |v| v.tan(),
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let square = d.unary(UnaryOp::Square, y)?;
            let slope = d.scalar(&square, ScalarOp::Add, 1.0)?;
            d.mul(g, &slope)
        },
    }
    Asin {
        name: "asin", torch_aliases: ["arcsin"], tf: ["asin", "math.asin"],
        doc: "The inverse sine, in radians; NaN outside [-1, 1].",
        kernel: |v| Special::fast_asin(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| over_root_of_quadratic(d, g, x, 1.0, -1.0),
    }
    Acos {
        name: "acos", torch_aliases: ["arccos"], tf: ["acos", "math.acos"],
        doc: "The inverse cosine, in radians; NaN outside [-1, 1].",
        kernel: |v| Special::fast_acos(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let slope = over_root_of_quadratic(d, g, x, 1.0, -1.0)?;
            d.unary(UnaryOp::Neg, &slope)
        },
    }
    Atan {
        name: "atan", torch_aliases: ["arctan"], tf: ["atan", "math.atan"],
        doc: "The inverse tangent, in radians.",
        kernel: |v| Special::fast_atan(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let square = d.unary(UnaryOp::Square, x)?;
            let denominator = d.scalar(&square, ScalarOp::Add, 1.0)?;
            d.div(g, &denominator)
        },
    }
    Sinh {
        name: "sinh", torch_aliases: [], tf: ["sinh", "math.sinh"],
        doc: "The hyperbolic sine.",
        kernel: |v| Special::fast_sinh(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let cosh = d.unary(UnaryOp::Cosh, x)?;
            d.mul(g, &cosh)
        },
    }
    Cosh {
        name: "cosh", torch_aliases: [], tf: ["cosh", "math.cosh"],
        doc: "The hyperbolic cosine.",
        kernel: |v| Special::fast_cosh(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let sinh = d.unary(UnaryOp::Sinh, x)?;
            d.mul(g, &sinh)
        },
    }
    Tanh {
        name: "tanh", torch_aliases: [], tf: ["tanh", "math.tanh", "nn.tanh"],
        doc: "The hyperbolic tangent.",
        front: EVERYWHERE,
        kernel: |v| Special::fast_tanh(v),
        split_f32: vecmath::Tanh,
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let square = d.unary(UnaryOp::Square, y)?;
            let slope = d.scalar(&square, ScalarOp::RSub, 1.0)?;
            d.mul(g, &slope)
        },
    }
    Asinh {
        name: "asinh", torch_aliases: ["arcsinh"], tf: ["asinh", "math.asinh"],
        doc: "The inverse hyperbolic sine.",
        kernel: |v| Special::fast_asinh(v),
        split_f32: vecmath::Asinh,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| over_root_of_quadratic(d, g, x, 1.0, 1.0),
    }
    Acosh {
        name: "acosh", torch_aliases: ["arccosh"], tf: ["acosh", "math.acosh"],
        doc: "The inverse hyperbolic cosine; NaN below 1.",
        kernel: |v| Special::fast_acosh(v),
        split_f32: vecmath::Acosh,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| over_root_of_quadratic(d, g, x, -1.0, 1.0),
    }
    Atanh {
        name: "atanh", torch_aliases: ["arctanh"], tf: ["atanh", "math.atanh"],
        doc: "The inverse hyperbolic tangent; NaN outside [-1, 1].",
        kernel: |v| Special::fast_atanh(v),
        split_f32: vecmath::Atanh,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            let square = d.unary(UnaryOp::Square, x)?;
            let denominator = d.scalar(&square, ScalarOp::RSub, 1.0)?;
            d.div(g, &denominator)
        },
    }
    Sigmoid {
        name: "sigmoid", torch_aliases: [], tf: ["sigmoid", "math.sigmoid", "nn.sigmoid"],
        doc: "The logistic function 1/(1 + e^-x).",
        front: EVERYWHERE,
        kernel: |v| 1.0 / (1.0 + Special::fast_exp(-v)),
        split_f32: vecmath::Sigmoid,
        ints: Promote,
        keeps: Output,
        grad: |d, x, y, g| {
            let one_minus = d.scalar(y, ScalarOp::RSub, 1.0)?;
            let slope = d.mul(y, &one_minus)?;
            d.mul(g, &slope)
        },
    }
    Relu {
        name: "relu", torch_aliases: [], tf: ["nn.relu(features)"],
        doc: "max(x, 0); NaN stays NaN, and the gradient at 0 is 0.",
        front: EVERYWHERE,
        kernel: |v| select_unpredictable(v > 0.0 || v.is_nan(), v, 0.0),
        ints: Keep(|v| v.max(IntegerElement::zero())),
        keeps: Input,
        grad: |d, x, y, g| d.apply(crate::op::Op::ReluBackward, &[g, x]),
    }
    Silu {
        name: "silu", torch_aliases: [], tf: ["nn.swish(features)"],
        doc: "The sigmoid linear unit x·sigmoid(x) (swish).",
        front: FUNCTIONAL,
        kernel: |v| Act::Silu.value(v),
        split_f32: crate::kernels::activation::SILU_VALUE,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| activation::backward(d, Act::Silu, x, g),
    }
    Selu {
        name: "selu", torch_aliases: [], tf: ["nn.selu(features)"],
        doc: "scale·(x where x > 0, else alpha·(e^x - 1)), with SELU's fixed scale and alpha.",
        front: FUNCTION_AND_FUNCTIONAL,
        kernel: |v| Act::Selu.value(v),
        split_f32: crate::kernels::activation::SELU_VALUE,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| activation::backward(d, Act::Selu, x, g),
    }
    Relu6 {
        name: "relu6", torch_aliases: [], tf: ["nn.relu6(features)"],
        doc: "min(max(x, 0), 6); the gradient is 0 at 0 and 6, as hardtanh's.",
        front: FUNCTIONAL,
        kernel: |v| Act::Hardtanh { min: 0.0, max: 6.0 }.value(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| activation::backward(d, Act::Hardtanh { min: 0.0, max: 6.0 }, x, g),
    }
    Logsigmoid {
        name: "logsigmoid", torch_aliases: [], tf: ["math.log_sigmoid"],
        doc: "log(sigmoid(x)), computed stably.",
        front: FUNCTIONAL,
        kernel: |v| Act::LogSigmoid.value(v),
        split_f32: crate::kernels::activation::LOG_SIGMOID_VALUE,
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| activation::backward(d, Act::LogSigmoid, x, g),
    }
    Erf {
        name: "erf", torch_aliases: [], tf: ["math.erf", "erf"],
        doc: "The error function.",
        kernel: |v| Special::erf(v),
        ints: Promote,
        keeps: Input,
        grad: |d, x, y, g| {
            // d erf(x)/dx = 2/sqrt(pi) · e^(-x²)
            let square = d.unary(UnaryOp::Square, x)?;
            let exponent = d.unary(UnaryOp::Neg, &square)?;
            let bell = d.unary(UnaryOp::Exp, &exponent)?;
            let slope = d.scalar(&bell, ScalarOp::Mul, std::f64::consts::FRAC_2_SQRT_PI)?;
            d.mul(g, &slope)
        },
    }
    Sign {
        name: "sign", torch_aliases: [], tf: ["sign", "math.sign"],
        doc: "-1, 0 or 1 by the sign of x (NaN stays NaN); its gradient is 0.",
        kernel: |v| crate::dtype::Float::signum_or_zero(v),
        ints: Keep(|v| v.sign()),
        keeps: Nothing,
        grad: |d, x, y, g| d.zeros_like(g),
    }
    Floor {
        name: "floor", torch_aliases: [], tf: ["floor", "math.floor"],
        doc: "The largest integer not above x; its gradient is 0.",
        kernel: |v| v.floor(),
        ints: Promote,
        keeps: Nothing,
        grad: |d, x, y, g| d.zeros_like(g),
    }
    Ceil {
        name: "ceil", torch_aliases: [], tf: ["ceil", "math.ceil"],
        doc: "The smallest integer not below x; its gradient is 0.",
        kernel: |v| v.ceil(),
        ints: Promote,
        keeps: Nothing,
        grad: |d, x, y, g| d.zeros_like(g),
    }
    Round {
        name: "round", torch_aliases: [], tf: ["round", "math.round"],
        doc: "The nearest integer, halves to even (as numpy, torch and TF); its gradient is 0.",
        kernel: |v| v.round_ties_even(),
        ints: Promote,
        keeps: Nothing,
        grad: |d, x, y, g| d.zeros_like(g),
    }
    Trunc {
        name: "trunc", torch_aliases: ["fix"], tf: [],
        doc: "x rounded toward zero; its gradient is 0.",
        kernel: |v| v.trunc(),
        ints: Promote,
        keeps: Nothing,
        grad: |d, x, y, g| d.zeros_like(g),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::vecmath::TRIG_REDUCTION_LIMIT;

    #[test]
    fn every_float32_path_gives_the_bits_of_the_declared_kernel() {
        // A `split_f32` kernel type is named beside `kernel`: it must compute the same function.
        // Smooth values of both signs, zeros, subnormals, NaN and values past the exponentials'
        // ranges, within the trig ops' limit; the edges first, in vectors with smooth values.
        let mut x = vec![0.0, -0.0, 1e-40, -1e-40, f32::NAN, 1.0, -1.0, 0.5, TRIG_REDUCTION_LIMIT];
        x.extend([44.5, -44.5, 89.0, -89.0, 104.0, -104.0, 300.0, -300.0]);
        x.extend((0..40_000).map(|i| ((i as f32) * 0.013).sin() * (i % 97) as f32 * 0.2));
        for &op in UnaryOp::ALL {
            let got = <f32 as UnaryKernel>::unary(op, &x);
            for (&v, &g) in x.iter().zip(&got) {
                let want = declared_f32(op, v);
                assert!(g.to_bits() == want.to_bits(), "{}({v}): {g} against the declared {want}", op.name());
            }
        }
    }
}
