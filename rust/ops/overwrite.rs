//! What eager in-place fills record on the tape: `zero_` and `fill_` overwrite a tensor
//! with one value, so their tape nodes (torch's `ZeroBackward0` and `FillBackward0`) give
//! what the tensor held a zero gradient, and a value that is a tensor the sum of the
//! incoming gradient. Internal: only the in-place methods record them
//! (`autograd::in_place::fill`).

use super::{internal, nth, Args, Input, Meta, Spec, TableOp};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// Inputs: the value (of the target's dtype, broadcast to its shape) and the target as it was.
const VALUE_AND_TARGET: &[Input] =
    &[Input { torch: "value", tf: "value", list: false }, Input { torch: "self", tf: "self", list: false }];

macro_rules! overwrite_ops {
    ($($ty:ident: $name:literal;)*) => {$(
        #[derive(Clone, Debug)]
        pub struct $ty;

        impl TableOp for $ty {
            const SPEC: Spec = internal($name, VALUE_AND_TARGET);

            fn build(_args: &Args) -> Result<Self> {
                Err(Error::Internal(concat!($name, " is recorded by in-place fills only").into()))
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let (value, target) = (*nth(inputs, 0, $name)?, *nth(inputs, 1, $name)?);
                let value = crate::forward::cast(value, target.dtype())?;
                crate::forward::broadcast_to(&value, target.shape())
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                let (shape, dtype) = *nth(inputs, 1, $name)?;
                Ok((shape.clone(), dtype))
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: 0, output: false }
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                let need = |i: usize| a.needs.get(i).copied().unwrap_or(true);
                let value = nth(a.inputs, 0, $name)?;
                let gv = if need(0) { Some(d.apply(Op::SumToLike, &[a.grad, value])?) } else { None };
                let gt = if need(1) { Some(d.zeros_like(a.grad)?) } else { None };
                Ok(vec![gv, gt])
            }
        }
    )*};
}

overwrite_ops! {
    Zero: "zero";
    FillWith: "fill";
}
