//! Activations with parameters (`gelu`, `leaky_relu`, `elu`, `softplus`, `hardtanh`), one
//! `TableOp` each, and `activation_backward`, the fused gradient every activation's rule
//! emits (the parameter-less ones, `silu`, `selu`, `relu6` and `logsigmoid`, are `unary_ops!`
//! entries). Values and slopes are in `kernels::activation`.

use super::binary::same_float_dtype;
use super::{internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, TorchFront};
use crate::dtype::{float_dispatch, DType};
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::activation::{grad_times_slope, values, Act, GELU_C, GELU_K, SELU_ALPHA, SELU_SCALE};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::op::Op;
use crate::rules::{vjp_of_composite, Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// The gradient of an activation: `g · slope(x)`, in one pass.
pub fn backward<D: Differentiator>(d: &mut D, act: Act, x: &D::Value, g: &D::Value) -> Result<D::Value> {
    d.apply(Op::Table(TableOps::ActivationBackward(ActivationBackward { act })), &[g, x])
}

/// `act` over a float tensor (integer tensors are refused, as torch's activations do).
fn apply(act: Act, name: &str, x: &Tensor) -> Result<Tensor> {
    float_dispatch!(x.dtype(), name, |T| {
        let out = x.with_contiguous(|s: &[T]| values(act, s))?;
        Tensor::from_vec(out, x.shape())
    })
}

/// A float parameter with one default on both fronts.
const fn float_param(torch: &'static str, tf: &'static str, default: &'static str) -> Param {
    Param { torch, tf, tf_aliases: &[], kind: Kind::Float, torch_default: Some(default), tf_default: Some(default) }
}

/// `inplace=False` of torch's functional activations: accepted, and the result is a new tensor.
const INPLACE: Param = Param {
    torch: "inplace",
    tf: "",
    tf_aliases: &[],
    kind: Kind::Bool,
    torch_default: Some("False"),
    tf_default: None,
};

macro_rules! activations {
    ($(
        $ty:ident {
            name: $name:literal, tf: [$($tf:literal),*], input: $tf_input:literal, doc: $doc:literal,
            params: [$($param:expr),* $(,)?],
            act: |$args:ident| $act:expr $(,)?
        }
    )*) => {$(
        #[derive(Clone, Debug)]
        pub struct $ty {
            act: Act,
        }

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[$($tf),*],
                doc: $doc,
                differentiable: true,
                inputs: &[Input { torch: "input", tf: $tf_input, list: false }],
                params: &[$($param),*],
            };
            const TORCH_FRONT: TorchFront = TorchFront::FUNCTIONAL;

            fn build($args: &Args) -> Result<Self> {
                Ok($ty { act: $act })
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                apply(self.act, $name, nth(inputs, 0, $name)?)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                let dtype = same_float_dtype(&Self::SPEC, inputs)?;
                Ok((nth(inputs, 0, $name)?.0.clone(), dtype))
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: 1, output: false }
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![Some(backward(d, self.act, nth(a.inputs, 0, $name)?, a.grad)?)])
            }
        }
    )*};
}

fn gelu_act(args: &Args) -> Result<Act> {
    match args.text(0)? {
        "none" => Ok(Act::Gelu),
        "tanh" => Ok(Act::GeluTanh),
        other => Err(Error::InvalidArgument(format!("gelu: approximate must be 'none' or 'tanh', got '{other}'"))),
    }
}

fn hardtanh_act(args: &Args) -> Result<Act> {
    let (min, max) = (args.float(0)?, args.float(1)?);
    if min > max {
        return Err(Error::InvalidArgument(format!(
            "hardtanh: min_val ({min}) must not be greater than max_val ({max})"
        )));
    }
    Ok(Act::Hardtanh { min, max })
}

activations! {
    Gelu {
        name: "gelu", tf: [], input: "x",
        doc: "The Gaussian error linear unit x·Φ(x); `approximate='tanh'` uses the tanh approximation.",
        params: [Param {
            torch: "approximate", tf: "approximate", tf_aliases: &[], kind: Kind::Str,
            torch_default: Some("'none'"), tf_default: Some("'none'"),
        }],
        act: |args| gelu_act(args)?,
    }
    LeakyRelu {
        name: "leaky_relu", tf: ["nn.leaky_relu"], input: "features",
        doc: "x where x > 0, else negative_slope·x.",
        params: [
            Param {
                torch: "negative_slope", tf: "alpha", tf_aliases: &[], kind: Kind::Float,
                torch_default: Some("0.01"), tf_default: Some("0.2"),
            },
            INPLACE,
        ],
        act: |args| Act::LeakyRelu { slope: args.float(0)? },
    }
    Elu {
        name: "elu", tf: ["nn.elu"], input: "features",
        doc: "x where x > 0, else alpha·(e^x - 1).",
        params: [float_param("alpha", "", "1.0"), INPLACE],
        act: |args| Act::Elu { alpha: args.float(0)? },
    }
    Softplus {
        name: "softplus", tf: ["nn.softplus", "math.softplus"], input: "features",
        doc: "log(1 + e^(beta·x))/beta, and x itself where beta·x > threshold.",
        params: [float_param("beta", "", "1.0"), float_param("threshold", "", "20.0")],
        act: |args| Act::Softplus { beta: args.float(0)?, threshold: args.float(1)? },
    }
    Hardtanh {
        name: "hardtanh", tf: [], input: "x",
        doc: "x clamped to [min_val, max_val]; the gradient is 0 at and past the bounds.",
        params: [float_param("min_val", "min_val", "-1.0"), float_param("max_val", "max_val", "1.0"), INPLACE],
        act: |args| hardtanh_act(args)?,
    }
}

/// `g · slope(x)` of an activation: the one internal op every activation's rule emits.
#[derive(Clone, Debug)]
pub struct ActivationBackward {
    act: Act,
}

const GRAD_AND_INPUT: &[Input] =
    &[Input { torch: "grad", tf: "grad", list: false }, Input { torch: "input", tf: "x", list: false }];

impl TableOp for ActivationBackward {
    const SPEC: Spec = internal("activation_backward", GRAD_AND_INPUT);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("activation_backward is emitted by derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let name = "activation_backward";
        let (g, x, shape) = forward::promoted_pair(name, nth(inputs, 0, name)?, nth(inputs, 1, name)?)?;
        let act = self.act;
        float_dispatch!(g.dtype(), name, |T| forward::zip_tensors::<T, T>(&g, &x, shape, |shape, p, q| {
            grad_times_slope(act, shape, p, q)
        }))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "activation_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b11, output: false }
    }

    /// `g · s(x)` is linear in g, so d/dg is the op itself; d/dx is `gg · g · s'(x)`, from
    /// the slope written with differentiable ops (exact to any order). Piecewise-linear
    /// activations have s' = 0 almost everywhere.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 1, "activation_backward")?;
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let dg = if need(0) { Some(backward(d, self.act, x, a.grad)?) } else { None };
        let curved = !matches!(self.act, Act::LeakyRelu { .. } | Act::Hardtanh { .. });
        let dx = if need(1) && curved {
            let args = RuleArgs { inputs: a.inputs, output: a.output, grad: a.grad, needs: &[false, true] };
            let act = self.act;
            let mut grads = vjp_of_composite(d, args, |t, ins| {
                let s = slope(t, act, &ins[1])?;
                t.mul(&ins[0], &s)
            })?;
            grads.pop().flatten()
        } else {
            None
        };
        Ok(vec![dg, dx])
    }
}

/// `pos` where x > 0, else `neg`.
fn where_positive<D: Differentiator>(d: &mut D, x: &D::Value, pos: &D::Value, neg: &D::Value) -> Result<D::Value> {
    let zeros = d.zeros_like(x)?;
    let cond = d.apply(Op::Compare(CmpOp::Gt), &[x, &zeros])?;
    d.apply(Op::Where, &[&cond, pos, neg])
}

fn add<D: Differentiator>(d: &mut D, a: &D::Value, b: &D::Value) -> Result<D::Value> {
    d.apply(Op::Binary(BinaryOp::Add), &[a, b])
}

/// The slope `s(x)` of an activation written with differentiable ops (the kernels'
/// `Act::slope`, whose own derivative is then exact). Only for activations with curvature.
fn slope<D: Differentiator>(d: &mut D, act: Act, x: &D::Value) -> Result<D::Value> {
    match act {
        // σ(x)(1 + x(1 − σ(x)))
        Act::Silu => {
            let s = d.unary(UnaryOp::Sigmoid, x)?;
            let rest = d.scalar(&s, ScalarOp::RSub, 1.0)?;
            let xr = d.mul(x, &rest)?;
            let inner = d.scalar(&xr, ScalarOp::Add, 1.0)?;
            d.mul(&s, &inner)
        }
        Act::Selu => {
            let e = d.unary(UnaryOp::Exp, x)?;
            let neg = d.scalar(&e, ScalarOp::Mul, SELU_SCALE * SELU_ALPHA)?;
            let pos = d.apply(Op::FullLike(SELU_SCALE), &[x])?;
            where_positive(d, x, &pos, &neg)
        }
        Act::LogSigmoid => {
            let n = d.unary(UnaryOp::Neg, x)?;
            d.unary(UnaryOp::Sigmoid, &n)
        }
        // Φ(x) + x·φ(x), Φ(x) = (1 + erf(x/√2))/2, φ(x) = e^(−x²/2)/√(2π)
        Act::Gelu => {
            let scaled = d.scalar(x, ScalarOp::Mul, std::f64::consts::FRAC_1_SQRT_2)?;
            let erf = d.unary(UnaryOp::Erf, &scaled)?;
            let shifted = d.scalar(&erf, ScalarOp::Add, 1.0)?;
            let cdf = d.scalar(&shifted, ScalarOp::Mul, 0.5)?;
            let square = d.mul(x, x)?;
            let exponent = d.scalar(&square, ScalarOp::Mul, -0.5)?;
            let e = d.unary(UnaryOp::Exp, &exponent)?;
            let pdf =
                d.scalar(&e, ScalarOp::Mul, 0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2)?;
            let xp = d.mul(x, &pdf)?;
            add(d, &cdf, &xp)
        }
        // (1 + t)/2 + x(1 − t²)u′/2, t = tanh(u), u = k(x + c x³), u′ = k(1 + 3c x²)
        Act::GeluTanh => {
            let square = d.mul(x, x)?;
            let cube = d.mul(&square, x)?;
            let c_cube = d.scalar(&cube, ScalarOp::Mul, GELU_C)?;
            let inner = add(d, x, &c_cube)?;
            let u = d.scalar(&inner, ScalarOp::Mul, GELU_K)?;
            let t = d.unary(UnaryOp::Tanh, &u)?;
            let half_one_plus_t = {
                let one_plus_t = d.scalar(&t, ScalarOp::Add, 1.0)?;
                d.scalar(&one_plus_t, ScalarOp::Mul, 0.5)?
            };
            let t2 = d.mul(&t, &t)?;
            let one_minus_t2 = d.scalar(&t2, ScalarOp::RSub, 1.0)?;
            let du = {
                let c_square = d.scalar(&square, ScalarOp::Mul, 3.0 * GELU_C)?;
                let one_plus = d.scalar(&c_square, ScalarOp::Add, 1.0)?;
                d.scalar(&one_plus, ScalarOp::Mul, GELU_K)?
            };
            let xr = d.mul(x, &one_minus_t2)?;
            let xrd = d.mul(&xr, &du)?;
            let half = d.scalar(&xrd, ScalarOp::Mul, 0.5)?;
            add(d, &half_one_plus_t, &half)
        }
        Act::Elu { alpha } => {
            let e = d.unary(UnaryOp::Exp, x)?;
            let neg = d.scalar(&e, ScalarOp::Mul, alpha)?;
            let pos = d.apply(Op::FullLike(1.0), &[x])?;
            where_positive(d, x, &pos, &neg)
        }
        // 1 where βx > threshold (there softplus is x itself), else σ(βx)
        Act::Softplus { beta, threshold } => {
            let bx = d.scalar(x, ScalarOp::Mul, beta)?;
            let s = d.unary(UnaryOp::Sigmoid, &bx)?;
            let limit = d.apply(Op::FullLike(threshold), &[x])?;
            let linear = d.apply(Op::Compare(CmpOp::Gt), &[&bx, &limit])?;
            let ones = d.apply(Op::FullLike(1.0), &[x])?;
            d.apply(Op::Where, &[&linear, &ones, &s])
        }
        Act::LeakyRelu { .. } | Act::Hardtanh { .. } => {
            Err(Error::Internal("activation_backward: a piecewise-linear activation has no curvature".into()))
        }
    }
}
