//! TF's `Shape`, `Size` and `Rank` (a tensor's shape, element count and rank as graph
//! values, computed from the tensor a run gives, so they work when a placeholder's
//! shape is known only then) and `Reshape` to the shape a 1-D integer tensor holds
//! (`tf.reshape(x, tf.shape(y))`). All are internal: torch reads `x.shape`, `numel()`
//! and `dim()` as Python values, so only `rustgrad.static` builds them.

use super::{internal, nth, Args, Input, Meta, Spec, TableOp};
use crate::dtype::DType;
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::{fmt_partial, PartialShape};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

/// `values` as a 1-D (or, with `scalar`, 0-d) tensor of `dtype`, int32 or int64, or an
/// error when a value does not fit int32 (TF's kernels refuse those too).
fn int_values(op: &str, values: &[usize], dtype: DType, scalar: bool) -> Result<Tensor> {
    let shape = if scalar { vec![] } else { vec![values.len()] };
    match dtype {
        DType::I64 => Tensor::from_vec(values.iter().map(|&v| v as i64).collect::<Vec<i64>>(), shape),
        DType::I32 => {
            let narrowed = values.iter().map(|&v| i32::try_from(v)).collect::<std::result::Result<Vec<i32>, _>>();
            let narrowed = narrowed.map_err(|_| {
                Error::InvalidArgument(format!(
                    "{op}: a value of {values:?} does not fit int32; pass out_type=tf.int64"
                ))
            })?;
            Tensor::from_vec(narrowed, shape)
        }
        other => dtype_err(format!("{op}: out_type must be int32 or int64, got {}", other.name())),
    }
}

fn check_out_type(op: &str, dtype: DType) -> Result<DType> {
    match dtype {
        DType::I32 | DType::I64 => Ok(dtype),
        other => dtype_err(format!("{op}: out_type must be int32 or int64, got {}", other.name())),
    }
}

/// TF's `Shape`: the input's shape as a 1-D int32 or int64 tensor. No gradient.
#[derive(Clone, Debug)]
pub struct ShapeOf {
    out: DType,
}

impl ShapeOf {
    pub fn new(out: DType) -> Result<ShapeOf> {
        Ok(ShapeOf { out: check_out_type("shape", out)? })
    }
}

impl TableOp for ShapeOf {
    const SPEC: Spec = internal("shape", &[Input { torch: "input", tf: "input", list: false }]);

    fn tf_type(&self) -> &'static str {
        "Shape"
    }

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("shape is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        int_values("shape", nth(inputs, 0, "shape")?.shape(), self.out, false)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, _) = *nth(inputs, 0, "shape")?;
        Ok((Some(vec![shape.as_ref().map(Vec::len)]), self.out))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}

/// TF's `Size`: the input's number of elements as a 0-d int32 or int64 tensor. No gradient.
#[derive(Clone, Debug)]
pub struct SizeOf {
    out: DType,
}

impl SizeOf {
    pub fn new(out: DType) -> Result<SizeOf> {
        Ok(SizeOf { out: check_out_type("size", out)? })
    }
}

impl TableOp for SizeOf {
    const SPEC: Spec = internal("size", &[Input { torch: "input", tf: "input", list: false }]);

    fn tf_type(&self) -> &'static str {
        "Size"
    }

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("size is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        int_values("size", &[nth(inputs, 0, "size")?.numel()], self.out, true)
    }

    fn infer(&self, _inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        Ok((Some(vec![]), self.out))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}

/// TF's `Rank`: the input's number of dims as a 0-d int32 tensor. No gradient.
#[derive(Clone, Debug)]
pub struct RankOf;

impl TableOp for RankOf {
    const SPEC: Spec = internal("rank", &[Input { torch: "input", tf: "input", list: false }]);

    fn tf_type(&self) -> &'static str {
        "Rank"
    }

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("rank is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        int_values("rank", &[nth(inputs, 0, "rank")?.rank()], DType::I32, true)
    }

    fn infer(&self, _inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        Ok((Some(vec![]), DType::I32))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}

/// The sizes a 1-D int32 or int64 `dims` tensor holds, -1 kept (a reshape infers that dim).
fn target_sizes(dims: &Tensor) -> Result<Vec<isize>> {
    if dims.rank() != 1 || !matches!(dims.dtype(), DType::I32 | DType::I64) {
        return Err(Error::InvalidArgument(format!(
            "reshape: the shape must be a 1-D int32 or int64 tensor, got a {} tensor of shape {}",
            dims.dtype().name(),
            fmt_shape(dims.shape())
        )));
    }
    let sizes = crate::forward::cast(dims, DType::I64)?.to_vec::<i64>()?;
    sizes
        .into_iter()
        .map(|d| match isize::try_from(d) {
            Ok(d) if d >= -1 => Ok(d),
            _ => Err(Error::InvalidArgument(format!("reshape: size {d} is not valid; sizes are >= 0, or -1 for one"))),
        })
        .collect()
}

/// TF's `Reshape` to the shape a 1-D integer tensor holds at run time (inputs: tensor, shape),
/// one dim of which may be -1. The gradient is reshaped back to the input's shape.
#[derive(Clone, Debug)]
pub struct ReshapeTo;

impl TableOp for ReshapeTo {
    const SPEC: Spec = internal(
        "reshape_to",
        &[Input { torch: "input", tf: "tensor", list: false }, Input { torch: "shape", tf: "shape", list: false }],
    );

    fn tf_type(&self) -> &'static str {
        "Reshape"
    }

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("reshape_to is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "reshape")?;
        let target = target_sizes(nth(inputs, 1, "reshape")?)?;
        let shape = crate::shape::infer_reshape(x.shape(), &target).map_err(|_| {
            Error::InvalidArgument(format!(
                "reshape: Input to reshape is a tensor with {} values (shape {}), but the requested shape {target:?} \
                 does not fit it",
                x.numel(),
                fmt_shape(x.shape())
            ))
        })?;
        super::layout::reshaped(x, &shape)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((shape, dtype), (dims, dims_dtype)) = (*nth(inputs, 0, "reshape")?, *nth(inputs, 1, "reshape")?);
        if !matches!(dims_dtype, DType::I32 | DType::I64) {
            return dtype_err(format!("reshape: the shape must be int32 or int64, got {}", dims_dtype.name()));
        }
        let rank = match dims.as_deref() {
            Some([rank]) => *rank,
            None => None,
            Some(other) => {
                return shape_err(format!(
                    "reshape: the shape must be a vector, not shape {}",
                    fmt_partial(&Some(other.to_vec()))
                ))
            }
        };
        let total = shape.as_ref().and_then(|s| s.iter().try_fold(1usize, |acc, d| d.map(|d| acc * d)));
        Ok(match (rank, total) {
            (Some(1), Some(total)) => (Some(vec![Some(total)]), dtype),
            (Some(rank), _) => (Some(vec![None; rank]), dtype),
            (None, _) => (None, dtype),
        })
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn is_view(&self) -> bool {
        true
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "reshape")?;
        let grad = if a.needs.first().copied().unwrap_or(false) {
            Some(d.apply(Op::ReshapeLike, &[a.grad, x])?)
        } else {
            None
        };
        Ok(vec![grad, None])
    }
}
