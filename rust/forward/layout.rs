//! Layout ops: casts and copies, broadcasting, reshape/transpose/index views,
//! and bool-mask selection and scattering.

use super::elementwise::as_dtype;
use super::in_place::write_into;
use super::reduce::sum_to;
use crate::dtype::{dispatch, float_dispatch, DType};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::kernels::elementwise as ew;
use crate::op::IndexItem;
use crate::shape::{
    broadcast_shapes, broadcast_strides, contiguous_strides, fmt_shape, infer_reshape, normalize_dim, numel, Shape,
    Strides,
};
use crate::storage::{ensure_allocatable, Element};
use crate::tensor::Tensor;

/// `x` as `dtype`, as torch and numpy cast (see `Element::cast`): a copy, even to its own dtype.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let shape: Shape = x.shape().into();
    let buffer = dispatch!(x.dtype(), |S| {
        if S::DTYPE == dtype {
            S::wrap(x.to_vec::<S>()?)
        } else {
            dispatch!(dtype, |D| D::wrap(x.with_contiguous(|s: &[S]| ew::map(s, |v| v.cast::<D>()))?))
        }
    });
    Ok(Tensor::from_buffer(buffer, shape))
}

pub fn copy(x: &Tensor) -> Result<Tensor> {
    cast(x, x.dtype())
}

/// A contiguous copy of `x` broadcast to `shape`.
pub fn broadcast_to(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let target = broadcast_shapes("expand", x.shape(), shape)?;
    if target[..] != *shape {
        return shape_err(format!("expand: cannot broadcast shape {} to {}", fmt_shape(x.shape()), fmt_shape(shape)));
    }
    ensure_allocatable(shape, x.dtype())?;
    let strides = broadcast_strides(x.shape(), x.strides(), shape);
    copy(&x.view_as_layout(shape, strides, x.offset())?)
}

pub fn reshape(x: &Tensor, shape: &[isize]) -> Result<Tensor> {
    let new_shape = infer_reshape(x.shape(), shape)?;
    if x.is_contiguous() {
        let strides = contiguous_strides(&new_shape);
        x.view_as_layout(new_shape, strides, x.offset())
    } else {
        let dense = copy(x)?;
        dense.view_as_layout(new_shape.clone(), contiguous_strides(&new_shape), 0)
    }
}

pub fn transpose(x: &Tensor, d0: isize, d1: isize) -> Result<Tensor> {
    if x.rank() == 0 {
        return x.view_as_layout(Shape::new(), Strides::new(), x.offset());
    }
    let (a, b) = (normalize_dim("transpose", d0, x.rank())?, normalize_dim("transpose", d1, x.rank())?);
    let mut shape = Shape::from_slice(x.shape());
    let mut strides = Strides::from_slice(x.strides());
    shape.swap(a, b);
    strides.swap(a, b);
    x.view_as_layout(shape, strides, x.offset())
}

/// The layout of `x[items]`: (shape, strides, offset).
pub fn index_layout(x: &Tensor, items: &[IndexItem]) -> Result<(Shape, Strides, usize)> {
    crate::indexing::layout(x.shape(), x.strides(), x.offset(), items)
}

pub fn index(x: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    let (shape, strides, offset) = index_layout(x, items)?;
    x.view_as_layout(shape, strides, offset)
}

pub(super) fn index_backward(g: &Tensor, like: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    let out = Tensor::zeros(like.shape(), like.dtype())?;
    let region = index(&out, items)?;
    write_into(&region, &sum_to(g, region.shape(), like.dtype())?)?;
    Ok(out)
}

// ----- masks -----

/// Checks a bool mask against `x`: it must cover x's leading dims exactly.
/// Returns the number of elements each mask entry selects (the trailing block size).
fn check_mask(op: &str, x: &Tensor, mask: &Tensor) -> Result<usize> {
    if mask.dtype() != DType::Bool {
        return dtype_err(format!("{op}: the mask must be a bool tensor, got {}", mask.dtype().name()));
    }
    if mask.rank() > x.rank() || mask.shape() != &x.shape()[..mask.rank()] {
        return Err(Error::Index(format!(
            "{op}: the shape of the mask {} does not match the shape of the indexed tensor {}; a mask must \
             have the tensor's shape or the shape of its leading dimensions",
            fmt_shape(mask.shape()),
            fmt_shape(x.shape())
        )));
    }
    Ok(numel(&x.shape()[mask.rank()..]))
}

pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let block = check_mask("index", x, mask)?;
    let keep = mask.to_vec::<bool>()?;
    let count = keep.iter().filter(|&&k| k).count();
    let mut shape = vec![count];
    shape.extend_from_slice(&x.shape()[mask.rank()..]);
    fn pick<T: Element>(x: &Tensor, keep: &[bool], block: usize, shape: Shape) -> Result<Tensor> {
        let kept = keep.iter().filter(|&&k| k).count() * block;
        let values: Vec<T> = x.with_contiguous(|s: &[T]| {
            let picked = keep.iter().enumerate().filter(|(_, &k)| k);
            crate::storage::collect_vec(kept, picked.flat_map(|(i, _)| s[i * block..(i + 1) * block].iter().copied()))
        })?;
        Tensor::from_vec(values, shape)
    }
    dispatch!(x.dtype(), |T| pick::<T>(x, &keep, block, shape.into()))
}

pub(super) fn masked_scatter(g: &Tensor, mask: &Tensor, like: &Tensor) -> Result<Tensor> {
    let block = check_mask("index_backward", like, mask)?;
    let keep = mask.to_vec::<bool>()?;
    let count = keep.iter().filter(|&&k| k).count();
    if g.numel() != count * block {
        return shape_err(format!(
            "index_put_: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result with {} elements",
            fmt_shape(g.shape()),
            count * block
        ));
    }
    float_dispatch!(like.dtype(), "index_backward", |T| {
        let values = as_dtype(g, like.dtype())?.to_vec::<T>()?;
        let mut out = crate::storage::zeroed_vec::<T>(like.numel());
        let mut next = values.chunks(block.max(1));
        for (i, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
            if let Some(chunk) = next.next() {
                out[i * block..i * block + chunk.len()].copy_from_slice(chunk);
            }
        }
        Tensor::from_vec(out, like.shape())
    })
}

/// A mask over x's leading dims, laid out over all of x's dims (for where-style use).
pub fn expand_mask(mask: &Tensor, x: &Tensor) -> Result<Tensor> {
    check_mask("index_put_", x, mask)?;
    if mask.rank() == x.rank() {
        return Ok(mask.clone());
    }
    let mut padded: Vec<isize> = mask.shape().iter().map(|&d| d as isize).collect();
    padded.resize(x.rank(), 1);
    broadcast_to(&reshape(mask, &padded)?, x.shape())
}
