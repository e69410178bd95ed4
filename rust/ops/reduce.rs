//! Reductions declared in the table: `logsumexp`.

use super::{nth, Args, Input, Kind, Meta, Param, Spec, TableOp};
use crate::dtype::float_dispatch;
use crate::dtype::{DType, Number};
use crate::error::{dtype_err, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::elementwise::{BinaryOp, UnaryOp};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// The dims to reduce and whether to keep them, as torch and TF1 name them
/// (`reduction_indices` and `keep_dims` are TF1's deprecated spellings).
const fn reduce_params(torch_dims_default: Option<&'static str>) -> [Param; 2] {
    [
        Param {
            torch: "dim",
            tf: "axis",
            tf_aliases: &["reduction_indices"],
            kind: Kind::OptDims,
            torch_default: torch_dims_default,
            tf_default: Some("None"),
        },
        Param {
            torch: "keepdim",
            tf: "keepdims",
            tf_aliases: &["keep_dims"],
            kind: Kind::Bool,
            torch_default: Some("False"),
            tf_default: Some("False"),
        },
    ]
}

fn float_only(op: &str, dtype: DType) -> Result<DType> {
    if !dtype.is_float() {
        return dtype_err(format!("{op}: expected a float tensor, got {}", dtype.name()));
    }
    Ok(dtype)
}

/// `log(sum(exp(x)))` over `dims`, computed stably.
#[derive(Clone, Debug)]
pub struct Logsumexp {
    dims: Option<Vec<isize>>,
    keepdim: bool,
}

const LOGSUMEXP_PARAMS: [Param; 2] = reduce_params(None);

impl TableOp for Logsumexp {
    const SPEC: Spec = Spec {
        name: "logsumexp",
        torch_aliases: &[],
        tf: &["reduce_logsumexp", "math.reduce_logsumexp"],
        doc: "log(sum(exp(x))) over `dim`, without overflow: the largest element is factored out first.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input_tensor", list: false }],
        params: &LOGSUMEXP_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Logsumexp { dims: args.dims(0)?, keepdim: args.flag(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "logsumexp")?;
        let dims = self.dims.as_deref();
        if x.numel() == 0 {
            // An empty sum is 0, so its log is -inf (the reduced dims may be the empty ones).
            let empty = forward::sum(x, dims, self.keepdim, false)?;
            return Tensor::full(empty.shape(), f64::NEG_INFINITY, x.dtype());
        }
        // Shifting by the max keeps exp() in range; an infinite max (all -inf, or a +inf) shifts by 0.
        let peak = finite_or_zero(&forward::extreme(x, dims, true, true)?)?;
        let shifted = forward::binary(BinaryOp::Sub, x, &peak)?;
        let total = forward::sum(&forward::unary(UnaryOp::Exp, &shifted)?, dims, self.keepdim, false)?;
        let log_total = forward::unary(UnaryOp::Log, &total)?;
        let peak_out: Vec<isize> = log_total.shape().iter().map(|&d| d as isize).collect();
        forward::binary(BinaryOp::Add, &log_total, &forward::reshape(&peak, &peak_out)?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, "logsumexp")?;
        let out = crate::graph::infer::reduce("logsumexp", shape, self.dims.as_deref(), self.keepdim)?;
        Ok((out, float_only("logsumexp", dtype)?))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: true }
    }

    /// d lse / dx = exp(x - lse): the softmax over the reduced dims.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "logsumexp")?;
        let spread = Op::ExpandReduced { dims: self.dims.clone(), keepdim: self.keepdim, mean: false };
        let g = d.apply(spread.clone(), &[a.grad, x])?;
        let out = d.apply(spread, &[a.output, x])?;
        let centred = d.apply(Op::Binary(BinaryOp::Sub), &[x, &out])?;
        let softmax = d.unary(UnaryOp::Exp, &centred)?;
        Ok(vec![Some(d.mul(&g, &softmax)?)])
    }
}

/// `t` with its infinite and NaN elements replaced by 0 (`t` is a reduced tensor: small).
fn finite_or_zero(t: &Tensor) -> Result<Tensor> {
    float_dispatch!(t.dtype(), "logsumexp", |T| {
        let values: Vec<T> = t.to_vec()?;
        let cleaned: Vec<T> = values.into_iter().map(|v| if v.is_finite() { v } else { T::ZERO }).collect();
        Tensor::from_vec(cleaned, t.shape())
    })
}
