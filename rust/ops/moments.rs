//! Variance and standard deviation over dims, with torch's `correction` (the sample
//! variance by default) and TF1's population variance (`math.reduce_variance`).

use super::reduce::{float_only, INPUT_TENSOR};
use super::{internal, nth, Args, Kind, Meta, Param, Spec, TableOp, TableOps};
use crate::dtype::float_dispatch;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp};
use crate::kernels::moments::squared_deviations;
use crate::op::Op;
use crate::rules::{vjp_of_composite, Differentiator, RuleArgs, Saves};
use crate::shape::reduced_shape;
use crate::storage::Element;
use crate::tensor::Tensor;

/// torch's `var(input, dim=None, unbiased=None, keepdim=False, correction=None)` (torch
/// takes `correction` by keyword); TF1's `reduce_variance(input_tensor, axis=None,
/// keepdims=False)`, which is the population variance: its call passes `correction=0`.
const MOMENT_PARAMS: &[Param] = &[
    Param {
        torch: "dim",
        tf: "axis",
        tf_aliases: &[],
        kind: Kind::OptDims,
        torch_default: Some("None"),
        tf_default: Some("None"),
    },
    Param {
        torch: "unbiased",
        tf: "",
        tf_aliases: &[],
        kind: Kind::OptBool,
        torch_default: Some("None"),
        tf_default: None,
    },
    Param {
        torch: "keepdim",
        tf: "keepdims",
        tf_aliases: &[],
        kind: Kind::Bool,
        torch_default: Some("False"),
        tf_default: Some("False"),
    },
    Param {
        torch: "correction",
        tf: "",
        tf_aliases: &[],
        kind: Kind::OptFloat,
        torch_default: Some("None"),
        tf_default: Some("0"),
    },
];

/// What `var` and `std` are built from: the dims, whether to keep them, and the
/// correction subtracted from the element count (1: the sample variance).
#[derive(Clone, Debug)]
pub struct Moments {
    dims: Option<Vec<isize>>,
    keepdim: bool,
    correction: f64,
}

impl Moments {
    fn build(op: &str, args: &Args) -> Result<Self> {
        let correction = match (args.opt_flag(1)?, args.opt_float(3)?) {
            (Some(_), Some(_)) => {
                return Err(Error::InvalidArgument(format!(
                    "{op}: cannot specify both 'unbiased' and 'correction'; unbiased=True is correction=1, \
                     unbiased=False is correction=0"
                )))
            }
            (Some(unbiased), None) => f64::from(u8::from(unbiased)),
            (None, Some(c)) => c,
            (None, None) => 1.0,
        };
        Ok(Moments { dims: args.dims(0)?, keepdim: args.flag(2)?, correction })
    }

    /// `Σ (x - mean)² / max(N - correction, 0)` over the dims.
    fn variance(&self, op: &str, x: &Tensor, root: bool) -> Result<Tensor> {
        let dims = forward::reduce_dims(op, x, self.dims.as_deref())?;
        let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
        let divisor = (count as f64 - self.correction).max(0.0);
        let out_shape = reduced_shape(x.shape(), &dims, self.keepdim);
        float_dispatch!(x.dtype(), op, |T| {
            let sums = x.with_contiguous(|s: &[T]| squared_deviations(s, x.shape(), &dims))?;
            let finish = |s: f64| {
                let v = s / divisor;
                T::from_f64(if root { v.sqrt() } else { v })
            };
            let out = crate::storage::collect_vec(sums.len(), sums.iter().map(|&s| finish(s)));
            Tensor::from_vec(out, out_shape)
        })
    }

    fn infer(&self, op: &str, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, op)?;
        let out = crate::graph::infer::reduce(op, shape, self.dims.as_deref(), self.keepdim)?;
        Ok((out, float_only(op, dtype)?))
    }

    /// `VarGrad(g, x)`: the variance's gradient for the output gradient `g`.
    fn var_grad<D: Differentiator>(&self, d: &mut D, g: &D::Value, x: &D::Value) -> Result<D::Value> {
        d.apply(Op::Table(TableOps::VarGrad(VarGrad { moments: self.clone() })), &[g, x])
    }
}

#[derive(Clone, Debug)]
pub struct Var(Moments);

impl TableOp for Var {
    const SPEC: Spec = Spec {
        name: "var",
        torch_aliases: &[],
        tf: &["math.reduce_variance"],
        doc: "The variance over `dim`: Σ(x - mean)² / (N - correction). torch's default is the sample \
              variance (correction=1; unbiased=False is correction=0); TF1's `reduce_variance` is the \
              population variance.",
        differentiable: true,
        inputs: INPUT_TENSOR,
        params: MOMENT_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Var(Moments::build("var", args)?))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.variance("var", nth(inputs, 0, "var")?, false)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        self.0.infer("var", inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(self.0.var_grad(d, a.grad, nth(a.inputs, 0, "var")?)?)])
    }
}

#[derive(Clone, Debug)]
pub struct Std(Moments);

impl TableOp for Std {
    const SPEC: Spec = Spec {
        name: "std",
        torch_aliases: &[],
        tf: &["math.reduce_std"],
        doc: "The standard deviation over `dim`: the square root of `var` with the same arguments.",
        differentiable: true,
        inputs: INPUT_TENSOR,
        params: MOMENT_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Std(Moments::build("std", args)?))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.variance("std", nth(inputs, 0, "std")?, true)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        self.0.infer("std", inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: true }
    }

    /// As torch: the variance's gradient scaled by 1 / (2 std), and 0 where std is 0
    /// (all elements equal) instead of 0/0.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "std")?;
        let twice = d.scalar(a.output, ScalarOp::Mul, 2.0)?;
        let scaled = d.div(a.grad, &twice)?;
        let zeros = d.zeros_like(a.output)?;
        let flat = d.apply(Op::Compare(CmpOp::Eq), &[a.output, &zeros])?;
        let g = d.apply(Op::Where, &[&flat, &zeros, &scaled])?;
        Ok(vec![Some(self.0.var_grad(d, &g, x)?)])
    }
}

/// `(g, x)`: the gradient of the variance of `x`, `2 (x - mean) g / (N - correction)`,
/// with N read from `x` at run time.
#[derive(Clone, Debug)]
pub struct VarGrad {
    moments: Moments,
}

impl TableOp for VarGrad {
    const SPEC: Spec = internal("var_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("var_backward is built by var's and std's rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (*nth(inputs, 0, "var_backward")?, *nth(inputs, 1, "var_backward")?);
        let m = &self.moments;
        let dims = forward::reduce_dims("var", x, m.dims.as_deref())?;
        let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
        let axes: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
        let mean = forward::sum(x, Some(&axes), true, true)?;
        let centred = forward::binary(BinaryOp::Sub, x, &mean)?;
        let spread = Op::ExpandReduced { dims: m.dims.clone(), keepdim: m.keepdim, mean: false };
        let g = forward::forward(&spread, &[&forward::as_dtype(g, x.dtype())?, x])?;
        let scale = 2.0 / (count as f64 - m.correction);
        forward::binary(
            BinaryOp::Mul,
            &forward::scalar(ScalarOp::Mul, &g, crate::dtype::Scalar::Float(scale))?,
            &centred,
        )
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "var_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads both.
        Saves { inputs: 0b11, output: false }
    }

    /// Through the composite `2 (x − mean) g / (N − correction)`, with N counted by ops
    /// (it is known only at run time in a static graph).
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let m = self.moments.clone();
        vjp_of_composite(d, a, |t, ins| {
            let (g, x) = (&ins[0], &ins[1]);
            let mean = t.apply(Op::Mean { dims: m.dims.clone(), keepdim: true }, &[x])?;
            let centred = t.apply(Op::Binary(BinaryOp::Sub), &[x, &mean])?;
            let ones = t.apply(Op::FullLike(1.0), &[x])?;
            let count = t.apply(Op::Sum { dims: m.dims.clone(), keepdim: true }, &[&ones])?;
            let denominator = t.scalar(&count, ScalarOp::Sub, m.correction)?;
            let spread =
                t.apply(Op::ExpandReduced { dims: m.dims.clone(), keepdim: m.keepdim, mean: false }, &[g, x])?;
            let scaled = t.scalar(&spread, ScalarOp::Mul, 2.0)?;
            let weighted = t.mul(&scaled, &centred)?;
            t.div(&weighted, &denominator)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::args::Value;

    fn args(unbiased: Option<bool>, correction: Option<f64>) -> Args {
        Args {
            op: "var",
            values: vec![Value::Dims(None), Value::OptBool(unbiased), Value::Bool(false), Value::OptFloat(correction)],
        }
    }

    #[test]
    fn unbiased_and_correction_choose_the_divisor() {
        assert_eq!(Moments::build("var", &args(None, None)).unwrap().correction, 1.0);
        assert_eq!(Moments::build("var", &args(Some(false), None)).unwrap().correction, 0.0);
        assert_eq!(Moments::build("var", &args(None, Some(2.5))).unwrap().correction, 2.5);
        let err = Moments::build("var", &args(Some(true), Some(1.0))).unwrap_err().to_string();
        assert!(err.contains("cannot specify both"), "{err}");
    }

    #[test]
    fn variance_divides_by_the_corrected_count() {
        let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], vec![4]).unwrap();
        let sample = Moments { dims: None, keepdim: false, correction: 1.0 }.variance("var", &x, false).unwrap();
        assert_eq!(sample.to_f64_vec(), vec![5.0 / 3.0]);
        let population = Moments { dims: None, keepdim: false, correction: 0.0 }.variance("std", &x, true).unwrap();
        assert_eq!(population.to_f64_vec(), vec![1.25f64.sqrt()]);
    }
}
