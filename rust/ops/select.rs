//! Ops that select by masks or make index data: `masked_fill`, `argwhere` (torch's
//! `nonzero`, TF1's one-argument `where`), `one_hot` and TF1's `boolean_mask`.

use super::indexing::{keep_indices_from, pick, pick_rule};
use super::picks::{infer_pick, Pick};
use super::TF_SEMANTICS;
use super::{nth, Args, Input, Kind, Meta, Param, Role, Spec, TableOp};
use crate::dtype::{dispatch, integer_dispatch, DType};
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::gather::nonzero;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::storage::Element;
use crate::tensor::Tensor;

/// torch's `masked_fill(input, mask, value)`: `value` where the bool mask is true.
#[derive(Clone, Debug)]
pub struct MaskedFill {
    value: f64,
}

fn check_mask(op: &str, dtype: DType) -> Result<()> {
    if dtype != DType::Bool {
        return dtype_err(format!("{op} only supports boolean masks, but got mask with dtype {}", dtype.name()));
    }
    Ok(())
}

impl TableOp for MaskedFill {
    const SPEC: Spec = Spec {
        name: "masked_fill",
        torch_aliases: &[],
        tf: &[],
        doc: "`value` where the bool `mask` (broadcast with the input) is true, the input elsewhere.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }, Input { torch: "mask", tf: "mask", list: false }],
        params: &[Param {
            torch: "value",
            tf: "value",
            tf_aliases: &[],
            kind: Kind::Float,
            torch_default: None,
            tf_default: None,
        }],
    };
    const ROLES: &'static [Role] = &[Role::Data, Role::Mask];

    fn build(args: &Args) -> Result<Self> {
        Ok(MaskedFill { value: args.float(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, mask) = (*nth(inputs, 0, "masked_fill")?, *nth(inputs, 1, "masked_fill")?);
        check_mask("masked_fill", mask.dtype())?;
        forward::where_select(mask, &Tensor::scalar(self.value, x.dtype()), x)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((x, dtype), (mask, mask_dtype)) = (*nth(inputs, 0, "masked_fill")?, *nth(inputs, 1, "masked_fill")?);
        check_mask("masked_fill", mask_dtype)?;
        Ok((crate::graph::infer::broadcast("masked_fill", x, mask)?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    /// The input's gradient is `g` where the mask is false.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (x, mask) = (nth(a.inputs, 0, "masked_fill")?, nth(a.inputs, 1, "masked_fill")?);
        let zeros = d.zeros_like(a.grad)?;
        let kept = d.apply(Op::Where, &[mask, &zeros, a.grad])?;
        Ok(vec![Some(d.apply(Op::SumToLike, &[&kept, x])?), None])
    }
}

/// The coordinates of the non-zero elements: torch's `argwhere` and `nonzero`, TF1's `where(condition)`.
#[derive(Clone, Debug)]
pub struct Argwhere;

impl TableOp for Argwhere {
    const SPEC: Spec = Spec {
        name: "argwhere",
        torch_aliases: &[],
        tf: &[],
        doc: "The coordinates of the non-zero elements, an int64 (count, input.dim()) tensor (TF1: where(cond)).",
        differentiable: false,
        inputs: &[Input { torch: "input", tf: "condition", list: false }],
        params: &[],
    };

    fn tf_type(&self) -> &'static str {
        "Where"
    }

    fn build(_args: &Args) -> Result<Self> {
        Ok(Argwhere)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "argwhere")?;
        let rank = x.rank();
        let (count, coordinates) = dispatch!(x.dtype(), |T| x.with_contiguous(|s: &[T]| nonzero(s, x.shape()))?);
        Tensor::from_vec(coordinates, &[count, rank][..])
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, _) = *nth(inputs, 0, "argwhere")?;
        Ok((Some(vec![None, x.as_ref().map(Vec::len)]), DType::I64))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}

/// torch's `one_hot(tensor, num_classes=-1)` (int64, out-of-range classes refused) and
/// TF1's `one_hot(indices, depth, on_value, off_value, axis, dtype)` (float32 by
/// default, out-of-range classes give rows of `off_value`).
#[derive(Clone, Debug)]
pub struct OneHot {
    classes: isize,
    on: Option<f64>,
    off: Option<f64>,
    axis: Option<isize>,
    dtype: Option<DType>,
    tf: bool,
}

/// An argument only TF1 takes, None by default.
const fn tf_only_none(tf: &'static str, kind: Kind) -> Param {
    Param { torch: "", tf, tf_aliases: &[], kind, torch_default: None, tf_default: Some("None") }
}

impl OneHot {
    fn out_dtype(&self) -> DType {
        match (self.tf, self.dtype) {
            (_, Some(dtype)) => dtype,
            (true, None) => DType::F32,
            (false, None) => DType::I64,
        }
    }

    /// Where the classes' dim goes in a result of `rank` dims.
    fn class_dim(&self, rank: usize) -> Result<usize> {
        match self.axis {
            None | Some(-1) => Ok(rank - 1),
            Some(a) if a >= 0 && (a as usize) < rank => Ok(a as usize),
            Some(a) => Err(Error::InvalidArgument(format!(
                "one_hot: Expected axis to be -1 or between [0, {}).  But received: {a}",
                rank
            ))),
        }
    }

    /// The number of classes: given, or (torch, -1) one more than the largest index.
    fn classes(&self, values: &[i64]) -> Result<usize> {
        if self.classes >= 0 {
            return Ok(self.classes as usize);
        }
        if self.tf {
            return Err(Error::InvalidArgument(format!("one_hot: depth must be non-negative, got {}", self.classes)));
        }
        if self.classes != -1 {
            return Err(Error::InvalidArgument(format!(
                "one_hot: num_classes should be -1 or non-negative, got {}",
                self.classes
            )));
        }
        match values.iter().max() {
            Some(&max) => Ok(usize::try_from(max).map_or(0, |m| m + 1)),
            None => {
                Err(Error::InvalidArgument("one_hot: Can not infer total number of classes from empty tensor.".into()))
            }
        }
    }
}

impl TableOp for OneHot {
    const SPEC: Spec = Spec {
        name: "one_hot",
        torch_aliases: &[],
        tf: &["one_hot"],
        doc: "One-hot rows along a new dim of `num_classes` (torch: int64; TF1: float32, off rows out of range).",
        differentiable: false,
        inputs: &[Input { torch: "tensor", tf: "indices", list: false }],
        params: &[
            Param {
                torch: "num_classes",
                tf: "depth",
                tf_aliases: &[],
                kind: Kind::Int,
                torch_default: Some("-1"),
                tf_default: None,
            },
            tf_only_none("on_value", Kind::OptFloat),
            tf_only_none("off_value", Kind::OptFloat),
            tf_only_none("axis", Kind::OptInt),
            tf_only_none("dtype", Kind::OptDType),
            TF_SEMANTICS,
        ],
    };
    const ROLES: &'static [Role] = &[Role::Index];

    fn build(args: &Args) -> Result<Self> {
        Ok(OneHot {
            classes: args.int(0)?,
            on: args.opt_float(1)?,
            off: args.opt_float(2)?,
            axis: args.opt_int(3)?,
            dtype: args.opt_dtype(4)?,
            tf: args.flag(5)?,
        })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "one_hot")?;
        if !self.tf && x.dtype() != DType::I64 {
            return dtype_err(format!(
                "one_hot is only applicable to index tensor of type int64, got {}; convert it with .long()",
                x.dtype().name()
            ));
        }
        let values: Vec<i64> = integer_dispatch!(x.dtype(), "one_hot", |T| x
            .with_contiguous(|s: &[T]| s.iter().map(|v| v.to_i64()).collect())?);
        let classes = self.classes(&values)?;
        if !self.tf {
            if values.iter().any(|&v| v < 0) {
                return Err(Error::Index("one_hot: Class values must be non-negative.".into()));
            }
            if values.iter().any(|&v| v as u64 >= classes as u64) {
                return Err(Error::Index(format!(
                    "one_hot: Class values must be smaller than num_classes ({classes})."
                )));
            }
        }
        let rank = x.rank() + 1;
        let dim = self.class_dim(rank)?;
        let mut shape = x.shape().to_vec();
        shape.insert(dim, classes);
        let inner: usize = x.shape()[dim..].iter().product();
        let (on, off) = (self.on.unwrap_or(1.0), self.off.unwrap_or(0.0));
        dispatch!(self.out_dtype(), |T| {
            let mut out = vec![T::from_f64(off); shape.iter().product()];
            for (k, &v) in values.iter().enumerate() {
                if v >= 0 && (v as u64) < classes as u64 {
                    let (o, i) = (k / inner.max(1), k % inner.max(1));
                    out[(o * classes + v as usize) * inner + i] = T::from_f64(on);
                }
            }
            Tensor::from_vec(out, shape)
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, "one_hot")?;
        if !dtype.is_integer() {
            return dtype_err(format!("one_hot: indices must be an integer tensor, got {}", dtype.name()));
        }
        let Some(dims) = x else { return Ok((None, self.out_dtype())) };
        let mut shape = dims.clone();
        shape.insert(self.class_dim(dims.len() + 1)?, usize::try_from(self.classes).ok());
        Ok((Some(shape), self.out_dtype()))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}

/// TF1's `boolean_mask(tensor, mask, axis=None)`: the slices where the k-D bool mask
/// (over the dims from `axis` on) is true, those k dims becoming one.
#[derive(Clone, Debug)]
pub struct BooleanMask {
    axis: isize,
}

impl BooleanMask {
    fn pick(&self) -> Pick {
        Pick::Mask { axis: self.axis }
    }
}

impl TableOp for BooleanMask {
    const SPEC: Spec = Spec {
        name: "boolean_mask",
        torch_aliases: &[],
        tf: &["boolean_mask"],
        doc: "The slices where the bool `mask` over the dims from `axis` on is true (tensor[mask] for axis 0).",
        differentiable: true,
        inputs: &[
            Input { torch: "tensor", tf: "tensor", list: false },
            Input { torch: "mask", tf: "mask", list: false },
        ],
        params: &[Param {
            torch: "axis",
            tf: "axis",
            tf_aliases: &[],
            kind: Kind::OptInt,
            torch_default: Some("None"),
            tf_default: Some("None"),
        }],
    };
    const ROLES: &'static [Role] = &[Role::Data, Role::Mask];

    fn build(args: &Args) -> Result<Self> {
        Ok(BooleanMask { axis: args.opt_int(0)?.unwrap_or(0) })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, mask) = (*nth(inputs, 0, "boolean_mask")?, *nth(inputs, 1, "boolean_mask")?);
        check_mask("boolean_mask", mask.dtype())?;
        if mask.rank() == 0 {
            return Err(Error::Shape("boolean_mask: mask cannot be scalar.".into()));
        }
        pick("boolean_mask", &self.pick(), x, &[mask])
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, "boolean_mask")?;
        Ok((infer_pick("boolean_mask", &self.pick(), x, &inputs[1..])?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(pick_rule(d, &self.pick(), &a)?), None])
    }
}
