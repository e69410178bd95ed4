//! Elementwise ops: unary, scalar, clamp, binary, compare and where, with the
//! float dtype promotion they share, and the fused backward masks.

use super::layout::cast;
use crate::dtype::{DType, Float};
use crate::error::{dtype_err, Error, Result};
use crate::kernels::elementwise::{self as ew, BinaryOp, CmpOp, Operand, ScalarOp, UnaryOp};
use crate::shape::{broadcast_shapes, broadcast_strides, Shape};
use crate::storage::{ensure_allocatable, Element};
use crate::tensor::Tensor;
use std::borrow::Cow;

pub fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<DType> {
    match (a.dtype(), b.dtype()) {
        (x, y) if x == y => Ok(x),
        // PyTorch's type promotion for the two float types.
        (DType::F32, DType::F64) | (DType::F64, DType::F32) => Ok(DType::F64),
        (x, y) => dtype_err(format!(
            "{op}: cannot combine {} and {} tensors; convert one with .float() or .double()",
            x.name(),
            y.name()
        )),
    }
}

/// `t` as `dtype`, without copying when it already is.
pub fn as_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    as_dtype_ref(t, dtype).map(std::borrow::Cow::into_owned)
}

/// `t` itself when it already has `dtype` (no reference count is touched: tiny ops
/// feel every atomic), else a cast copy.
pub fn as_dtype_ref(t: &Tensor, dtype: DType) -> Result<std::borrow::Cow<'_, Tensor>> {
    if t.dtype() == dtype {
        Ok(std::borrow::Cow::Borrowed(t))
    } else {
        cast(t, dtype).map(std::borrow::Cow::Owned)
    }
}

pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    float_dispatch!(x.dtype(), op.name(), |T| {
        let out = x.with_contiguous(|s: &[T]| ew::unary(op, s))?;
        Tensor::from_vec(out, x.shape())
    })
}

pub fn scalar(op: ScalarOp, x: &Tensor, s: f64) -> Result<Tensor> {
    float_dispatch!(x.dtype(), op.name(), |T| {
        let out = x.with_contiguous(|v: &[T]| ew::scalar(op, v, s))?;
        Tensor::from_vec(out, x.shape())
    })
}

pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::InvalidArgument("clamp: at least one of 'min' or 'max' must not be None".into()));
    }
    float_dispatch!(x.dtype(), "clamp", |T| {
        let (lo, hi) = (T::from_f64(min.unwrap_or(f64::NEG_INFINITY)), T::from_f64(max.unwrap_or(f64::INFINITY)));
        let out = x.with_contiguous(|v: &[T]| {
            // Branch-free: clamping data of either sign must not mispredict per element. NaN stays NaN.
            ew::map(v, move |e| {
                let raised = std::hint::select_unpredictable(e < lo, lo, e);
                std::hint::select_unpredictable(raised > hi, hi, raised)
            })
        })?;
        Tensor::from_vec(out, x.shape())
    })
}

/// `a` and `b` at their common dtype (float32 with float64 is float64), and the
/// shape they broadcast to, once an output of that shape and dtype fits in memory.
pub fn promoted_pair<'a>(op: &str, a: &'a Tensor, b: &'a Tensor) -> Result<(Cow<'a, Tensor>, Cow<'a, Tensor>, Shape)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = same_dtype(op, a, b)?;
    ensure_allocatable(&shape, dtype)?;
    Ok((as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?, shape))
}

/// Runs a broadcasting kernel over `a` and `b`, both already of element type `T`,
/// at the broadcast `shape` (which becomes the output's shape, without a copy).
pub fn zip_tensors<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    shape: Shape,
    kernel: impl FnOnce(&[usize], &Operand<T>, &Operand<T>) -> Vec<U>,
) -> Result<Tensor> {
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let mismatch = || Error::DType("internal dtype mismatch in a broadcasting kernel".into());
    let (da, db) = (T::slice(&ga).ok_or_else(mismatch)?, T::slice(&gb).ok_or_else(mismatch)?);
    let (dense_a, dense_b) =
        (a.shape() == &shape[..] && a.is_contiguous(), b.shape() == &shape[..] && b.is_contiguous());
    // A dense operand is read through its own strides; only broadcast operands need new ones.
    let strides_for =
        |t: &Tensor, dense: bool| if dense { None } else { Some(broadcast_strides(t.shape(), t.strides(), &shape)) };
    let (sa, sb) = (strides_for(a, dense_a), strides_for(b, dense_b));
    let oa = Operand { data: da, strides: sa.as_deref().unwrap_or(a.strides()), offset: a.offset(), dense: dense_a };
    let ob = Operand { data: db, strides: sb.as_deref().unwrap_or(b.strides()), offset: b.offset(), dense: dense_b };
    let out = kernel(&shape, &oa, &ob);
    drop((ga, gb));
    Tensor::from_vec(out, shape)
}

/// The broadcasting walk over three tensors of one element type `T` (`lerp`), as `zip_tensors`.
pub fn zip3_tensors<T: Element, U: Element>(
    [a, b, c]: [&Tensor; 3],
    shape: Shape,
    kernel: impl FnOnce(&[usize], [&Operand<T>; 3]) -> Vec<U>,
) -> Result<Tensor> {
    let guards = [a.storage().read(), b.storage().read(), c.storage().read()];
    let mismatch = || Error::DType("internal dtype mismatch in a broadcasting kernel".into());
    let strides = [a, b, c].map(|t| broadcast_strides(t.shape(), t.strides(), &shape));
    let mut operands = Vec::with_capacity(3);
    for ((t, guard), strides) in [a, b, c].into_iter().zip(&guards).zip(&strides) {
        let dense = t.shape() == &shape[..] && t.is_contiguous();
        operands.push(Operand { data: T::slice(guard).ok_or_else(mismatch)?, strides, offset: t.offset(), dense });
    }
    let out = kernel(&shape, [&operands[0], &operands[1], &operands[2]]);
    drop(operands);
    drop(guards);
    Tensor::from_vec(out, shape)
}

pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let dtype = same_dtype(op.name(), a, b)?;
    ensure_allocatable(&shape, dtype)?;
    let (a, b) = (as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?);
    float_dispatch!(dtype, op.name(), |T| zip_tensors::<T, T>(&a, &b, shape, |shape, p, q| ew::binary(op, shape, p, q)))
}

pub fn compare(op: CmpOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    ensure_allocatable(&shape, DType::Bool)?;
    if a.dtype() == DType::Bool && b.dtype() == DType::Bool {
        let f = move |x: bool, y: bool| match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => !x & y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x & !y,
            CmpOp::Ge => x >= y,
        };
        return zip_tensors::<bool, bool>(a, b, shape, |shape, p, q| ew::zip_broadcast(shape, p, q, f));
    }
    let dtype = same_dtype(op.name(), a, b)?;
    let (a, b) = (as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?);
    float_dispatch!(dtype, op.name(), |T| zip_tensors::<T, bool>(&a, &b, shape, |shape, p, q| ew::compare(
        op, shape, p, q
    )))
}

pub fn where_select(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return dtype_err(format!("where: the condition must be a bool tensor, got {}", cond.dtype().name()));
    }
    let shape = broadcast_shapes("where", &broadcast_shapes("where", cond.shape(), x.shape())?, y.shape())?;
    let dtype = same_dtype("where", x, y)?;
    ensure_allocatable(&shape, dtype)?;
    let (x, y) = (as_dtype_ref(x, dtype)?, as_dtype_ref(y, dtype)?);
    fn run<T: Element>(shape: &[usize], c: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let (gc, gx, gy) = (c.storage().read(), x.storage().read(), y.storage().read());
        let mismatch = || Error::DType("internal dtype mismatch in where".into());
        let sc = broadcast_strides(c.shape(), c.strides(), shape);
        let sx = broadcast_strides(x.shape(), x.strides(), shape);
        let sy = broadcast_strides(y.shape(), y.strides(), shape);
        let dense = |t: &Tensor| t.shape() == shape && t.is_contiguous();
        let oc =
            Operand { data: bool::slice(&gc).ok_or_else(mismatch)?, strides: &sc, offset: c.offset(), dense: dense(c) };
        let ox =
            Operand { data: T::slice(&gx).ok_or_else(mismatch)?, strides: &sx, offset: x.offset(), dense: dense(x) };
        let oy =
            Operand { data: T::slice(&gy).ok_or_else(mismatch)?, strides: &sy, offset: y.offset(), dense: dense(y) };
        let out = ew::where_select(shape, &oc, &ox, &oy);
        drop((gc, gx, gy));
        Tensor::from_vec(out, shape)
    }
    match dtype {
        DType::F32 => run::<f32>(&shape, cond, &x, &y),
        DType::F64 => run::<f64>(&shape, cond, &x, &y),
        DType::Bool => run::<bool>(&shape, cond, &x, &y),
    }
}

/// (g, x) -> g where keep(x), else 0. One pass (broadcasting `g` and `x`); used by
/// relu and clamp backward and the fused masks of static plans.
pub(super) fn mask_grad(g: &Tensor, x: &Tensor, op: &str, keep: impl Fn(f64) -> bool + Sync + Send) -> Result<Tensor> {
    let shape = broadcast_shapes(op, g.shape(), x.shape())?;
    let dtype = same_dtype(op, g, x)?;
    let (g, x) = (as_dtype_ref(g, dtype)?, as_dtype_ref(x, dtype)?);
    float_dispatch!(dtype, op, |T| zip_tensors::<T, T>(&g, &x, shape, |shape, p, q| {
        ew::zip_broadcast(shape, p, q, |gv: T, xv: T| std::hint::select_unpredictable(keep(xv.to_f64()), gv, T::ZERO))
    }))
}

/// `g` where `cmp(x, threshold) == keep_when`, else 0: the fused backward mask of
/// maximum/minimum against a constant. Each comparison gets its own instance of
/// the loop, so no match on `cmp` runs per element.
pub fn mask_grad_threshold(g: &Tensor, x: &Tensor, cmp: CmpOp, threshold: f64, keep_when: bool) -> Result<Tensor> {
    let t = threshold;
    match cmp {
        CmpOp::Lt => mask_grad(g, x, "where", move |v| (v < t) == keep_when),
        CmpOp::Le => mask_grad(g, x, "where", move |v| (v <= t) == keep_when),
        CmpOp::Gt => mask_grad(g, x, "where", move |v| (v > t) == keep_when),
        CmpOp::Ge => mask_grad(g, x, "where", move |v| (v >= t) == keep_when),
        CmpOp::Eq => mask_grad(g, x, "where", move |v| (v == t) == keep_when),
        CmpOp::Ne => mask_grad(g, x, "where", move |v| (v != t) == keep_when),
    }
}
