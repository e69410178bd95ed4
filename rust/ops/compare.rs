//! Comparisons as functions and methods (`eq`, `lt`, ..., TF's `equal`, `less`, ...)
//! and `isclose`: bool results, no gradients. The operators (`x < y`) run the same
//! kernels through `Op::Compare`.

use super::binary::{broadcast_all, OPERANDS};
use super::{nth, Args, Kind, Meta, Param, Spec, TableOp};
use crate::dtype::float_dispatch;
use crate::dtype::DType;
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::binary::BinaryMath;
use crate::kernels::elementwise::{zip_broadcast, CmpOp};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// Static inference of a comparison: TF1 compares tensors of one dtype only.
fn compared(spec: &Spec, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let (_, first) = *nth(inputs, 0, spec.name)?;
    let (_, second) = *nth(inputs, 1, spec.name)?;
    if first != second {
        return dtype_err(format!(
            "{}: Input 'y' has type {} that does not match type {} of argument 'x'; cast one with tf.cast",
            spec.name,
            second.name(),
            first.name()
        ));
    }
    Ok((broadcast_all(spec.name, inputs)?, DType::Bool))
}

macro_rules! comparisons {
    ($(
        $op:ident {
            name: $name:literal, torch_aliases: [$($alias:literal),*], tf: [$($tf:literal),*], cmp: $cmp:ident,
            doc: $doc:literal, tf_type: $tf_type:literal
        }
    )*) => {$(
        #[derive(Clone, Debug)]
        pub struct $op;

        impl TableOp for $op {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[$($alias),*],
                tf: &[$($tf),*],
                doc: $doc,
                differentiable: false,
                inputs: OPERANDS,
                params: &[],
            };

            fn tf_type(&self) -> &'static str {
                $tf_type
            }

            fn build(_args: &Args) -> Result<Self> {
                Ok($op)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                forward::compare(CmpOp::$cmp, nth(inputs, 0, $name)?, nth(inputs, 1, $name)?)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                compared(&Self::SPEC, inputs)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: 0, output: false }
            }

            fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![None, None])
            }
        }
    )*};
}

comparisons! {
    Eq {
        name: "eq", torch_aliases: [], tf: ["equal", "math.equal"], cmp: Eq,
        doc: "Whether input equals other, elementwise (NaN equals nothing).", tf_type: "Equal"
    }
    Ne {
        name: "ne", torch_aliases: ["not_equal"], tf: ["not_equal", "math.not_equal"], cmp: Ne,
        doc: "Whether input differs from other, elementwise (NaN differs from everything).", tf_type: "NotEqual"
    }
    Lt {
        name: "lt", torch_aliases: ["less"], tf: ["less", "math.less"], cmp: Lt,
        doc: "Whether input < other, elementwise.", tf_type: "Less"
    }
    Le {
        name: "le", torch_aliases: ["less_equal"], tf: ["less_equal", "math.less_equal"], cmp: Le,
        doc: "Whether input <= other, elementwise.", tf_type: "LessEqual"
    }
    Gt {
        name: "gt", torch_aliases: ["greater"], tf: ["greater", "math.greater"], cmp: Gt,
        doc: "Whether input > other, elementwise.", tf_type: "Greater"
    }
    Ge {
        name: "ge", torch_aliases: ["greater_equal"], tf: ["greater_equal", "math.greater_equal"], cmp: Ge,
        doc: "Whether input >= other, elementwise.", tf_type: "GreaterEqual"
    }
}

/// Whether two tensors are elementwise equal within a tolerance.
#[derive(Clone, Debug)]
pub struct IsClose {
    rtol: f64,
    atol: f64,
    equal_nan: bool,
}

/// An argument of `isclose`: TF1 has no such op, so both fronts name it as torch.
const fn tolerance(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param { torch: name, tf: name, tf_aliases: &[], kind, torch_default: Some(default), tf_default: Some(default) }
}

impl TableOp for IsClose {
    const SPEC: Spec = Spec {
        name: "isclose",
        torch_aliases: &[],
        tf: &[],
        doc: "Whether |input - other| <= atol + rtol·|other|; NaNs are close only with equal_nan.",
        differentiable: false,
        inputs: OPERANDS,
        params: &[
            tolerance("rtol", Kind::Float, "1e-05"),
            tolerance("atol", Kind::Float, "1e-08"),
            tolerance("equal_nan", Kind::Bool, "False"),
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        let (rtol, atol) = (args.float(0)?, args.float(1)?);
        for (name, value) in [("rtol", rtol), ("atol", atol)] {
            if value.is_nan() || value < 0.0 {
                return Err(Error::InvalidArgument(format!(
                    "isclose: {name} must be greater than or equal to zero, but got {value}"
                )));
            }
        }
        Ok(IsClose { rtol, atol, equal_nan: args.flag(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (nth(inputs, 0, "isclose")?, nth(inputs, 1, "isclose")?);
        if !a.dtype().is_float() && !b.dtype().is_float() {
            return forward::compare(CmpOp::Eq, a, b);
        }
        let (a, b, shape) = forward::promoted_pair("isclose", a, b)?;
        let IsClose { rtol, atol, equal_nan } = *self;
        float_dispatch!(a.dtype(), "isclose", |T| forward::zip_tensors::<T, bool>(&a, &b, shape, |shape, p, q| {
            zip_broadcast(shape, p, q, |x: T, y: T| x.is_close(y, rtol, atol, equal_nan))
        }))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        compared(&Self::SPEC, inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None, None])
    }
}
