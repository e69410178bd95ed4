//! Activations with parameters (`gelu`, `leaky_relu`, `elu`, `softplus`, `hardtanh`), one
//! `TableOp` each, and `activation_backward`, the fused gradient every activation's rule
//! emits (the parameter-less ones, `silu`, `selu`, `relu6` and `logsigmoid`, are `unary_ops!`
//! entries). Values and slopes are in `kernels::activation`.

use super::binary::same_float_dtype;
use super::{internal, no_double_backward, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, TorchFront};
use crate::dtype::{float_dispatch, DType};
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::activation::Act;
use crate::kernels::elementwise::{map, zip_broadcast};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// The gradient of an activation: `g · slope(x)`, in one pass.
pub fn backward<D: Differentiator>(d: &mut D, act: Act, x: &D::Value, g: &D::Value) -> Result<D::Value> {
    d.apply(Op::Table(TableOps::ActivationBackward(ActivationBackward { act })), &[g, x])
}

/// `act` over a float tensor (integer tensors are refused, as torch's activations do).
fn apply(act: Act, name: &str, x: &Tensor) -> Result<Tensor> {
    float_dispatch!(x.dtype(), name, |T| {
        let out = x.with_contiguous(|s: &[T]| map(s, |v: T| act.value(v)))?;
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
            zip_broadcast(shape, p, q, |gv: T, xv: T| gv * act.slope(xv))
        }))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "activation_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b11, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Err(no_double_backward("activation_backward"))
    }
}
