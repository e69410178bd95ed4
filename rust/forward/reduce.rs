//! Reductions (sum, mean, amax/amin, sum of squares) and the ops that undo them
//! in backward (expand_reduced, sum_to).

use super::elementwise::{as_dtype, scalar};
use super::layout::{broadcast_to, reshape};
use crate::dtype::{float_dispatch, numeric_dispatch, DType, Number, Scalar};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::kernels::elementwise::ScalarOp;
use crate::kernels::reduce;
use crate::shape::{fmt_shape, normalize_dims, reduced_shape};
use crate::storage::Element;
use crate::tensor::Tensor;

/// The sorted dims a reduction over `dims` (None: all) of `x` reduces.
pub fn reduce_dims(op: &str, x: &Tensor, dims: Option<&[isize]>) -> Result<Vec<usize>> {
    match dims {
        None => Ok((0..x.rank()).collect()),
        Some(d) if x.rank() == 0 => {
            normalize_dims(op, d, 0)?;
            Ok(vec![])
        }
        Some(d) => normalize_dims(op, d, x.rank()),
    }
}

/// The sum (or mean) over `dims`, in the input's dtype: an integer sum wraps around,
/// and an integer mean is the sum divided by the count, truncated (TF1's `reduce_mean`).
/// Eager mode (`autograd::record::sum`) first casts integers and bools to int64, as torch
/// does, and refuses their mean.
pub fn sum(x: &Tensor, dims: Option<&[isize]>, keepdim: bool, mean: bool) -> Result<Tensor> {
    let op = if mean { "mean" } else { "sum" };
    let dims = reduce_dims(op, x, dims)?;
    let out_shape = reduced_shape(x.shape(), &dims, keepdim);
    let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
    numeric_dispatch!(x.dtype(), op, |T| {
        let mut out = x.with_contiguous(|s: &[T]| reduce::sum_dims(s, x.shape(), &dims))?;
        if mean {
            let c = T::from_f64(count as f64);
            out.iter_mut().for_each(|v| *v = v.quotient(c));
        }
        Tensor::from_vec(out, out_shape)
    })
}

/// Refuses the mean of an integer or bool tensor, as torch does (it has no float dtype to give).
pub fn check_mean_dtype(x: &Tensor) -> Result<()> {
    if x.dtype().is_float() {
        return Ok(());
    }
    dtype_err(format!(
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. \
         Got: {}; convert it with .float() first",
        x.dtype().name()
    ))
}

/// `sum(x ** 2)` over all elements without storing the squares (the same value,
/// bit for bit, as the two ops).
pub fn sum_of_squares(x: &Tensor) -> Result<Tensor> {
    float_dispatch!(x.dtype(), "sum", |T| {
        let total = x.with_contiguous(|s: &[T]| reduce::sum_of_squares(s))?;
        Tensor::from_vec(vec![total], vec![])
    })
}

/// `x · (factor · g)` for a one-element `g` of x's dtype: the gradient
/// `expand(g) · (2·x)` of a sum of squares in one pass (factor 2, or -2 when negated).
pub fn scale_by_item(g: &Tensor, x: &Tensor, factor: f64) -> Result<Tensor> {
    if g.numel() != 1 || g.dtype() != x.dtype() {
        return shape_err(format!(
            "fused squared-error gradient: expected a one-element {} gradient, got {} of shape {}",
            x.dtype().name(),
            g.dtype().name(),
            fmt_shape(g.shape())
        ));
    }
    scalar(ScalarOp::Mul, x, Scalar::Float(factor * g.to_f64_vec()[0]))
}

pub fn extreme(x: &Tensor, dims: Option<&[isize]>, keepdim: bool, largest: bool) -> Result<Tensor> {
    let op = if largest { "amax" } else { "amin" };
    let dims = reduce_dims(op, x, dims)?;
    if let Some(&d) = dims.iter().find(|&&d| x.shape()[d] == 0) {
        return Err(Error::Index(format!(
            "{op}: cannot reduce over dimension {d} of size 0 (shape {}): the operation has no identity",
            fmt_shape(x.shape())
        )));
    }
    let out_shape = reduced_shape(x.shape(), &dims, keepdim);
    numeric_dispatch!(x.dtype(), op, |T| {
        let out = x.with_contiguous(|s: &[T]| reduce::extreme_dims(s, x.shape(), &dims, largest))?;
        Tensor::from_vec(out, out_shape)
    })
}

/// The gradient of `sum`/`mean` over `dims` of `like`: g laid back out over like's shape.
pub(super) fn expand_reduced(
    g: &Tensor,
    like: &Tensor,
    dims: Option<&[isize]>,
    keepdim: bool,
    mean: bool,
) -> Result<Tensor> {
    let dims = reduce_dims("sum", like, dims)?;
    let kept = reduced_shape(like.shape(), &dims, true);
    let g = if keepdim { g.clone() } else { reshape(g, &kept.iter().map(|&d| d as isize).collect::<Vec<_>>())? };
    let g = if mean {
        let count: usize = dims.iter().map(|&d| like.shape()[d]).product();
        scalar(ScalarOp::Div, &g, Scalar::Float(count as f64))?
    } else {
        g
    };
    broadcast_to(&g, like.shape())
}

/// Sums `g` down to `shape` (undoing broadcasting) and casts it to `dtype`.
pub fn sum_to(g: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if g.shape() == shape {
        return as_dtype(g, dtype);
    }
    // Extra leading dims of size 1 (a value assigned with them, as numpy allows) are added back.
    let extra = shape.len().saturating_sub(g.rank());
    if extra > 0 && shape[..extra].iter().all(|&d| d == 1) {
        let padded: Vec<isize> = shape[..extra].iter().chain(g.shape()).map(|&d| d as isize).collect();
        return sum_to(&reshape(g, &padded)?, shape, dtype);
    }
    let lead = g.rank().checked_sub(shape.len()).ok_or_else(|| {
        Error::Shape(format!("sum_to: cannot reduce shape {} to {}", fmt_shape(g.shape()), fmt_shape(shape)))
    })?;
    let mut dims: Vec<isize> = (0..lead as isize).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[lead + i] != 1 {
            dims.push((lead + i) as isize);
        } else if d != g.shape()[lead + i] {
            return shape_err(format!("sum_to: cannot reduce shape {} to {}", fmt_shape(g.shape()), fmt_shape(shape)));
        }
    }
    let summed = sum(g, Some(&dims), true, false)?;
    let reshaped = reshape(&summed, &shape.iter().map(|&d| d as isize).collect::<Vec<_>>())?;
    as_dtype(&reshaped, dtype)
}
