//! In-place writes into existing storage. No autograd here: the callers decide
//! when a write is allowed and record it.

use super::elementwise::{as_dtype, binary, checked_scalar, scalar, where_select};
use super::layout::{broadcast_to, copy, expand_mask, masked_scatter};
use crate::dtype::{dispatch, float_dispatch, numeric_dispatch, Scalar};
use crate::error::{shape_err, Error, Result};
use crate::kernels::elementwise::{self as ew, BinaryOp, ScalarOp};
use crate::kernels::layout::{scatter_strided, walk};
use crate::shape::{broadcast_shapes, fmt_shape};
use crate::storage::Element;
use crate::tensor::Tensor;

/// Checks that a value of shape `value` broadcasts to `dst`'s shape, so it can be written into `dst`.
pub fn check_writable(dst: &Tensor, value: &[usize]) -> Result<()> {
    let target = broadcast_shapes("copy_", value, dst.shape())?;
    if target[..] != *dst.shape() {
        return shape_err(format!(
            "copy_: cannot write a value of shape {} into a tensor of shape {}",
            fmt_shape(value),
            fmt_shape(dst.shape())
        ));
    }
    Ok(())
}

/// Copies `value` (broadcast to `dst`'s shape, cast to its dtype) into `dst`'s elements.
pub fn write_into(dst: &Tensor, value: &Tensor) -> Result<()> {
    check_writable(dst, value.shape())?;
    if dst.numel() == 0 {
        return Ok(());
    }
    // Read the values out first: `value` may share the very storage being written.
    let value = as_dtype(value, dst.dtype())?;
    let dense = if value.shape() == dst.shape() { value } else { broadcast_to(&value, dst.shape())? };
    fn put<T: Element>(dst: &Tensor, dense: &Tensor) -> Result<()> {
        let values = dense.to_vec::<T>()?;
        let mut guard = dst.storage().write();
        let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch in copy_".into()))?;
        if dst.is_contiguous() {
            slice[dst.offset()..dst.offset() + values.len()].copy_from_slice(&values);
        } else {
            scatter_strided(slice, dst.shape(), dst.strides(), dst.offset(), &values);
        }
        Ok(())
    }
    dispatch!(dst.dtype(), |T| put::<T>(dst, &dense))
}

/// `dst += alpha·src` (src broadcast to dst), in one pass when the layouts allow.
pub fn add_in_place(dst: &Tensor, src: &Tensor, alpha: f64) -> Result<()> {
    if dst.numel() == 0 {
        return broadcast_shapes("add_", src.shape(), dst.shape()).map(|_| ());
    }
    // As numpy does, an input whose memory overlaps the output is read from a copy
    // (a[1:] += a[:-1] adds the old values). Views of one numpy array have separate
    // storages, so the check compares addresses.
    let src_copy;
    let src = if src.may_overlap(dst) {
        src_copy = copy(src)?;
        &src_copy
    } else {
        src
    };
    let direct = dst.dtype().is_float()
        && dst.is_contiguous()
        && src.is_contiguous()
        && dst.shape() == src.shape()
        && dst.dtype() == src.dtype()
        && !dst.shares_storage(src);
    if !direct {
        let scaled = if alpha == 1.0 { src.clone() } else { scalar(ScalarOp::Mul, src, Scalar::Float(alpha))? };
        return write_into(dst, &binary(BinaryOp::Add, dst, &scaled)?);
    }
    float_dispatch!(dst.dtype(), "add_", |T| {
        let n = dst.numel();
        let src_guard = src.storage().read();
        let s = T::slice(&src_guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
        let s = &s[src.offset()..src.offset() + n];
        let mut guard = dst.storage().write();
        let d = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
        let d = &mut d[dst.offset()..dst.offset() + n];
        crate::kernels::split_writes::add_scaled(d, s, T::from_f64(alpha));
        Ok(())
    })
}

/// `dst[mask] = value` for a value that broadcasts to dst (scalars included) or
/// one that has the shape of `dst[mask]`.
pub fn masked_fill(dst: &Tensor, mask: &Tensor, value: &Tensor) -> Result<()> {
    let full_mask = expand_mask(mask, dst)?;
    if value.numel() == 1 && dst.is_contiguous() && dst.dtype().is_float() {
        // The common `grad[x < 0] = 0`: one pass over the mask, writing in place.
        let keep = full_mask.to_vec::<bool>()?;
        let v = value.to_f64_vec()[0];
        return float_dispatch!(dst.dtype(), "index_put_", |T| {
            let fill = T::from_f64(v);
            let mut guard = dst.storage().write();
            let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
            let region = &mut slice[dst.offset()..dst.offset() + keep.len()];
            region.iter_mut().zip(&keep).for_each(|(slot, &k)| *slot = std::hint::select_unpredictable(k, fill, *slot));
            Ok(())
        });
    }
    let broadcasts = broadcast_shapes("index_put_", value.shape(), dst.shape()).is_ok_and(|s| s[..] == *dst.shape());
    let merged = if value.numel() == 1 || broadcasts {
        where_select(&full_mask, &as_dtype(value, dst.dtype())?, dst)?
    } else {
        let scattered = masked_scatter(value, mask, dst)?;
        where_select(&full_mask, &scattered, dst)?
    };
    write_into(dst, &merged)
}

/// `dst = dst op s` in place, for a `dst` whose dtype is the result's (the caller checks:
/// `scalar_dtype(op, dst.dtype(), s) == dst.dtype()`).
pub fn update_in_place(dst: &Tensor, op: ScalarOp, s: Scalar) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    if !dst.is_contiguous() {
        return write_into(dst, &scalar(op, dst, s)?);
    }
    numeric_dispatch!(dst.dtype(), op.name(), |T| {
        let s: T = checked_scalar(op, s, dst)?;
        let mut guard = dst.storage().write();
        let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
        let n = dst.numel();
        ew::scalar_in_place(op, &mut slice[dst.offset()..dst.offset() + n], s);
        Ok(())
    })
}

/// Writes `value` (cast to `dst`'s dtype) into every element of `dst`.
pub fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    dispatch!(dst.dtype(), |T| {
        let v = value.to_element::<T>();
        let mut guard = dst.storage().write();
        let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
        if dst.is_contiguous() {
            crate::kernels::split_writes::fill(&mut slice[dst.offset()..dst.offset() + dst.numel()], v);
        } else {
            walk(dst.shape(), [dst.strides()], [dst.offset()], |[i]| slice[i] = v);
        }
        Ok(())
    })
}
