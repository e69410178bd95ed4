//! Forward evaluation of every `Op` on concrete tensors. Both the eager API and
//! the static executor call `forward`; neither knows how a kernel works.

use crate::dtype::{DType, Float};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::kernels::elementwise::{self as ew, BinaryOp, CmpOp, Operand, ScalarOp, UnaryOp};
use crate::kernels::layout::{scatter_strided, walk};
use crate::kernels::matmul::{self, MatRef};
use crate::kernels::reduce;
use crate::op::{IndexItem, Op};
use crate::shape::{
    broadcast_shapes, broadcast_strides, contiguous_strides, fmt_shape, infer_reshape, normalize_dim, normalize_dims,
    numel, reduced_shape, Shape,
};
use crate::storage::{ensure_allocatable, Buffer, Element};
use crate::tensor::Tensor;

/// Runs `$body` with `$T` bound to the tensor's float type; bool is an error naming `$op`.
macro_rules! float_dispatch {
    ($dtype:expr, $op:expr, |$T:ident| $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::Bool => {
                return dtype_err(format!(
                    "{}: expected a float tensor but got bool; convert it with .float() first",
                    $op
                ))
            }
        }
    };
}
pub fn forward(op: &Op, inputs: &[&Tensor]) -> Result<Tensor> {
    let context = || {
        let operands: Vec<String> =
            inputs.iter().map(|t| format!("{} {}", t.dtype().name(), fmt_shape(t.shape()))).collect();
        format!("{} of {}", op.name(), operands.join(" and "))
    };
    crate::storage::catch_kernel_unwind(context, || evaluate(op, inputs))
}

fn evaluate(op: &Op, inputs: &[&Tensor]) -> Result<Tensor> {
    let arg = |i: usize| -> Result<&Tensor> {
        inputs.get(i).copied().ok_or_else(|| {
            Error::InvalidArgument(format!("{}: expected at least {} inputs, got {}", op.name(), i + 1, inputs.len()))
        })
    };
    match op {
        Op::Unary(u) => unary(*u, arg(0)?),
        Op::Scalar(s, v) => scalar(*s, arg(0)?, *v),
        Op::Clamp { min, max } => clamp(arg(0)?, *min, *max),
        Op::Binary(b) => binary(*b, arg(0)?, arg(1)?),
        Op::Compare(c) => compare(*c, arg(0)?, arg(1)?),
        Op::Where => where_select(arg(0)?, arg(1)?, arg(2)?),
        Op::MatMul { transpose_a, transpose_b } => matmul2d(arg(0)?, arg(1)?, *transpose_a, *transpose_b),
        Op::Sum { dims, keepdim } => sum(arg(0)?, dims.as_deref(), *keepdim, false),
        Op::Mean { dims, keepdim } => sum(arg(0)?, dims.as_deref(), *keepdim, true),
        Op::Extreme { largest, dims, keepdim } => extreme(arg(0)?, dims.as_deref(), *keepdim, *largest),
        Op::Reshape(shape) => reshape(arg(0)?, shape),
        Op::Transpose(d0, d1) => transpose(arg(0)?, *d0, *d1),
        Op::Index(items) => index(arg(0)?, items),
        Op::MaskedSelect => masked_select(arg(0)?, arg(1)?),
        Op::Cast(dtype) => cast(arg(0)?, *dtype),
        Op::Copy | Op::StopGradient => copy(arg(0)?),
        Op::SumToLike => sum_to(arg(0)?, arg(1)?.shape(), arg(1)?.dtype()),
        Op::BroadcastLike => broadcast_to(arg(0)?, arg(1)?.shape()),
        Op::ReshapeLike => {
            let like: Vec<isize> = arg(1)?.shape().iter().map(|&d| d as isize).collect();
            reshape(arg(0)?, &like)
        }
        Op::ExpandReduced { dims, keepdim, mean } => expand_reduced(arg(0)?, arg(1)?, dims.as_deref(), *keepdim, *mean),
        Op::FullLike(v) => Tensor::full(arg(0)?.shape(), *v, arg(0)?.dtype()),
        Op::ReluBackward => mask_grad(arg(0)?, arg(1)?, "threshold_backward", |x: f64| x > 0.0),
        Op::ClampBackward { min, max } => {
            let (lo, hi) = (min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY));
            mask_grad(arg(0)?, arg(1)?, "clamp_backward", move |x: f64| x >= lo && x <= hi)
        }
        Op::IndexBackward(items) => index_backward(arg(0)?, arg(1)?, items),
        Op::MaskedScatter => masked_scatter(arg(0)?, arg(1)?, arg(2)?),
        Op::CheckGradShape(index) => check_grad_shape(arg(0)?, arg(1)?, *index),
        Op::Custom(c) => Err(Error::InvalidArgument(format!(
            "custom Function {} has no native forward; call it through its apply()",
            c.name()
        ))),
    }
}

// ----- elementwise -----

fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<DType> {
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
fn as_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    as_dtype_ref(t, dtype).map(std::borrow::Cow::into_owned)
}

/// `t` itself when it already has `dtype` (no reference count is touched: tiny ops
/// feel every atomic), else a cast copy.
fn as_dtype_ref(t: &Tensor, dtype: DType) -> Result<std::borrow::Cow<'_, Tensor>> {
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

/// Runs a broadcasting kernel over `a` and `b`, both already of element type `T`,
/// at the broadcast `shape` (which becomes the output's shape, without a copy).
fn zip_tensors<T: Element, U: Element>(
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
fn mask_grad(g: &Tensor, x: &Tensor, op: &str, keep: impl Fn(f64) -> bool + Sync + Send) -> Result<Tensor> {
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

pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let shape: Shape = x.shape().into();
    let buffer = match (x.dtype(), dtype) {
        (DType::F32, DType::F32) => Buffer::F32(x.to_vec()?),
        (DType::F64, DType::F64) => Buffer::F64(x.to_vec()?),
        (DType::Bool, DType::Bool) => Buffer::Bool(x.to_vec()?),
        (DType::F32, DType::F64) => Buffer::F64(x.with_contiguous(|s: &[f32]| ew::map(s, |v| v as f64))?),
        (DType::F64, DType::F32) => Buffer::F32(x.with_contiguous(|s: &[f64]| ew::map(s, |v| v as f32))?),
        (DType::Bool, DType::F32) => Buffer::F32(x.with_contiguous(|s: &[bool]| ew::map(s, |v| v as u8 as f32))?),
        (DType::Bool, DType::F64) => Buffer::F64(x.with_contiguous(|s: &[bool]| ew::map(s, |v| v as u8 as f64))?),
        (DType::F32, DType::Bool) => Buffer::Bool(x.with_contiguous(|s: &[f32]| ew::map(s, |v| v != 0.0))?),
        (DType::F64, DType::Bool) => Buffer::Bool(x.with_contiguous(|s: &[f64]| ew::map(s, |v| v != 0.0))?),
    };
    Ok(Tensor::from_buffer(buffer, shape))
}

pub fn copy(x: &Tensor) -> Result<Tensor> {
    cast(x, x.dtype())
}

// ----- matmul -----

fn mat_ref<'a, T>(t: &Tensor, data: &'a [T], transpose: bool) -> Result<MatRef<'a, T>> {
    let m = MatRef::new(data, t.offset(), (t.shape()[0], t.shape()[1]), (t.strides()[0], t.strides()[1])).ok_or_else(
        || Error::Internal(format!("matmul: a {} layout reaches outside its storage", fmt_shape(t.shape()))),
    )?;
    Ok(if transpose { m.transposed() } else { m })
}

fn dims_2d(t: &Tensor, transpose: bool) -> (usize, usize) {
    let (r, c) = (t.shape()[0], t.shape()[1]);
    if transpose {
        (c, r)
    } else {
        (r, c)
    }
}

pub fn matmul2d(a: &Tensor, b: &Tensor, transpose_a: bool, transpose_b: bool) -> Result<Tensor> {
    if a.rank() != 2 || b.rank() != 2 {
        return shape_err(format!(
            "mm: expected 2-D matrices, got shapes {} and {}",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        ));
    }
    let ((m, k), (k2, n)) = (dims_2d(a, transpose_a), dims_2d(b, transpose_b));
    if k != k2 {
        return shape_err(format!(
            "mm: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}); the inner dimensions must agree"
        ));
    }
    let dtype = same_dtype("mm", a, b)?;
    ensure_allocatable(&[m, n], dtype)?;
    let (a, b) = (as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?);
    float_dispatch!(dtype, "mm", |T| {
        let mut out = crate::storage::overwritable_vec::<T>(m * n);
        with_mat_refs(&a, &b, transpose_a, transpose_b, |ma, mb| {
            matmul::matmul_into(ma, mb, &mut out, T::ONE, T::ZERO)
        })?;
        Tensor::from_vec(out, vec![m, n])
    })
}

/// `op(a)·op(b)` and an activation of it, as two tensors: the product `h` and
/// `maximum(h, c)` or `relu(h)`. Where our own float32 kernel runs the product, it
/// stores both in the same pass; elsewhere the activation is a second pass.
pub fn matmul_activation(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    activation: matmul::SecondOutput,
) -> Result<(Tensor, Tensor)> {
    let fused = a.rank() == 2 && b.rank() == 2 && a.dtype() == b.dtype() && a.dtype().is_float() && {
        let ((m, k), (k2, n)) = (dims_2d(a, transpose_a), dims_2d(b, transpose_b));
        k == k2 && ensure_allocatable(&[m, 2 * n], a.dtype()).is_ok()
    };
    if fused {
        let both = match a.dtype() {
            DType::F32 => both_outputs::<f32>(a, b, transpose_a, transpose_b, activation)?,
            _ => both_outputs::<f64>(a, b, transpose_a, transpose_b, activation)?,
        };
        if let Some(both) = both {
            return Ok(both);
        }
    }
    let h = matmul2d(a, b, transpose_a, transpose_b)?;
    let activated = match activation {
        matmul::SecondOutput::Copy => copy(&h)?,
        matmul::SecondOutput::AtLeast(c) => scalar(ScalarOp::Max, &h, c)?,
        matmul::SecondOutput::Relu => unary(UnaryOp::Relu, &h)?,
    };
    Ok((h, activated))
}

/// The product and its activation from one pass of our own kernel, or None where it
/// does not apply (operands checked by `matmul_activation`).
fn both_outputs<T: Float + Element>(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    activation: matmul::SecondOutput,
) -> Result<Option<(Tensor, Tensor)>> {
    let ((m, _), (_, n)) = (dims_2d(a, transpose_a), dims_2d(b, transpose_b));
    with_mat_refs(a, b, transpose_a, transpose_b, |ma: MatRef<'_, T>, mb| {
        // Checked first, so that pooled buffers are not taken (and then lost) for nothing.
        if !matmul::own_kernel_runs(ma, mb) {
            return Ok(None);
        }
        let mut out: Vec<T> = crate::storage::vec_with_capacity(m * n);
        let mut second: Vec<T> = crate::storage::vec_with_capacity(m * n);
        let (o, s) = (&mut out.spare_capacity_mut()[..m * n], &mut second.spare_capacity_mut()[..m * n]);
        if !matmul::matmul_two_outputs_into(ma, mb, o, s, activation) {
            return Ok(None);
        }
        // SAFETY: matmul_two_outputs_into returned true, so it wrote all m×n elements of both.
        unsafe {
            out.set_len(m * n);
            second.set_len(m * n);
        }
        Ok(Some((Tensor::from_vec(out, vec![m, n])?, Tensor::from_vec(second, vec![m, n])?)))
    })?
}

/// Calls `f` with the matrix views op(a) and op(b) of checked 2-D operands of
/// element type `T`, while their storages are read-locked.
fn with_mat_refs<T: Float + Element, R>(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    f: impl FnOnce(MatRef<'_, T>, MatRef<'_, T>) -> R,
) -> Result<R> {
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let mismatch = || Error::DType("internal dtype mismatch in a matrix product".into());
    let (da, db) = (T::slice(&ga).ok_or_else(mismatch)?, T::slice(&gb).ok_or_else(mismatch)?);
    Ok(f(mat_ref(a, da, transpose_a)?, mat_ref(b, db, transpose_b)?))
}

/// Checks the operands of a fused update `w + alpha·op(a)·op(b)` and that its
/// outputs (one m×n tensor, two `with_copy`) can be allocated.
pub fn check_matmul_update(
    w: &Tensor,
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    outputs: usize,
) -> Result<(usize, usize)> {
    if a.rank() != 2 || b.rank() != 2 || w.rank() != 2 {
        return shape_err("fused update: expected 2-D operands");
    }
    let ((m, k), (k2, n)) = (dims_2d(a, transpose_a), dims_2d(b, transpose_b));
    if k != k2 || w.shape() != [m, n] || a.dtype() != w.dtype() || b.dtype() != w.dtype() {
        return shape_err(format!(
            "fused update: cannot add a {m}x{k} by {k2}x{n} product to a tensor of shape {}",
            fmt_shape(w.shape())
        ));
    }
    ensure_allocatable(&[m, n * outputs], w.dtype())?;
    Ok((m, n))
}

/// `w + alpha·op(a)·op(b)` as a new tensor: the product accumulates onto `w` as it
/// is stored (one pass over `w` instead of three for a separate scale and subtract).
/// With `with_copy`, also returns a second tensor holding the same values (stored
/// by the same pass), for a caller that must own the result separately.
pub fn matmul_update(
    w: &Tensor,
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    alpha: f64,
    with_copy: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let (m, n) = check_matmul_update(w, a, b, transpose_a, transpose_b, 1 + with_copy as usize)?;
    float_dispatch!(w.dtype(), "fused update", |T| {
        let mut out: Vec<T> = crate::storage::vec_with_capacity(m * n);
        let mut copy: Vec<T> = crate::storage::vec_with_capacity(if with_copy { m * n } else { 0 });
        let copy_slots = with_copy.then(|| &mut copy.spare_capacity_mut()[..m * n]);
        let alpha = T::from_f64(alpha);
        with_mat_refs(a, b, transpose_a, transpose_b, |ma, mb| {
            w.with_contiguous(|init: &[T]| {
                matmul::matmul_update_into(ma, mb, init, &mut out.spare_capacity_mut()[..m * n], copy_slots, alpha)
            })
        })??;
        // SAFETY: matmul_update_into wrote all m×n elements of `out`, and of `copy` when asked.
        unsafe {
            out.set_len(m * n);
            copy.set_len(if with_copy { m * n } else { 0 });
        }
        let copy = if with_copy { Some(Tensor::from_vec(copy, vec![m, n])?) } else { None };
        Ok((Tensor::from_vec(out, vec![m, n])?, copy))
    })
}

/// Whether `w` can take `w += alpha·op(a)·op(b)` in its own memory: exactly
/// `holders` handles reach it, no other tensor or foreign owner shares its memory
/// (`a` and `b` included), and it covers its storage from the start, contiguously.
pub fn updatable_in_place(w: &Tensor, a: &Tensor, b: &Tensor, holders: usize) -> bool {
    w.is_held_only_by(holders) && laid_out_for_update_in_place(w, a, b)
}

/// `w` starts its own storage (not numpy's), contiguously, and shares it with neither operand.
fn laid_out_for_update_in_place(w: &Tensor, a: &Tensor, b: &Tensor) -> bool {
    !w.is_external() && w.is_contiguous() && w.offset() == 0 && !w.shares_storage(a) && !w.shares_storage(b)
}

/// `w += alpha·op(a)·op(b)`, written into `w`'s own memory. The caller makes sure
/// nothing else reads that memory (`updatable_in_place`). With `with_copy`, also
/// returns a new tensor holding the result, stored by the same pass.
pub fn matmul_update_in_place(
    w: &Tensor,
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    alpha: f64,
    copy: Option<&Tensor>,
) -> Result<()> {
    let (m, n) = check_matmul_update(w, a, b, transpose_a, transpose_b, 0)?;
    if !laid_out_for_update_in_place(w, a, b) {
        // The commit phase checks `updatable_in_place` first, so this is not reached.
        return Err(Error::InvalidArgument(
            "internal: a fused update in place needs a contiguous w that shares no memory with its operands".into(),
        ));
    }
    let fits = |t: &Tensor| t.dtype() == w.dtype() && t.shape() == w.shape() && t.is_contiguous() && t.offset() == 0;
    if copy.is_some_and(|c| !fits(c) || c.shares_storage(w)) {
        return Err(Error::InvalidArgument(
            "internal: the copy of a fused update in place has the wrong layout".into(),
        ));
    }
    float_dispatch!(w.dtype(), "fused update", |T| {
        let alpha = T::from_f64(alpha);
        let mismatch = || Error::DType("internal dtype mismatch in a fused update".into());
        let mut copy_guard = copy.map(|c| c.storage().write());
        let copy_slots = match copy_guard.as_deref_mut() {
            Some(buffer) => {
                let values = T::slice_mut(buffer).and_then(|all| all.get_mut(..m * n)).ok_or_else(mismatch)?;
                // SAFETY: `[T]` and `[MaybeUninit<T>]` have the same layout, and the kernel only
                // stores initialised values into the slots, so `values` stays initialised.
                Some(unsafe { &mut *(values as *mut [T] as *mut [std::mem::MaybeUninit<T>]) })
            }
            None => None,
        };
        with_mat_refs(a, b, transpose_a, transpose_b, |ma, mb| {
            let mut guard = w.storage().write();
            let target = T::slice_mut(&mut guard).and_then(|all| all.get_mut(..m * n)).ok_or_else(mismatch)?;
            matmul::matmul_accumulate_into(ma, mb, target, copy_slots, alpha);
            Ok::<(), Error>(())
        })?
    })
}

/// A contiguous tensor of `like`'s shape and dtype whose values are to be overwritten
/// (recycled memory, or zeros): the output of a kernel that writes every element.
pub fn overwritable_like(like: &Tensor) -> Result<Tensor> {
    let n = like.numel();
    match like.dtype() {
        DType::F32 => Tensor::from_vec(crate::storage::overwritable_vec::<f32>(n), like.shape()),
        DType::F64 => Tensor::from_vec(crate::storage::overwritable_vec::<f64>(n), like.shape()),
        DType::Bool => Tensor::zeros(like.shape(), DType::Bool),
    }
}

// ----- reductions -----

fn reduce_dims(op: &str, x: &Tensor, dims: Option<&[isize]>) -> Result<Vec<usize>> {
    match dims {
        None => Ok((0..x.rank()).collect()),
        Some(d) if x.rank() == 0 => {
            normalize_dims(op, d, 0)?;
            Ok(vec![])
        }
        Some(d) => normalize_dims(op, d, x.rank()),
    }
}

pub fn sum(x: &Tensor, dims: Option<&[isize]>, keepdim: bool, mean: bool) -> Result<Tensor> {
    let op = if mean { "mean" } else { "sum" };
    let dims = reduce_dims(op, x, dims)?;
    let out_shape = reduced_shape(x.shape(), &dims, keepdim);
    let count: usize = dims.iter().map(|&d| x.shape()[d]).product();
    float_dispatch!(x.dtype(), op, |T| {
        let mut out = x.with_contiguous(|s: &[T]| reduce::sum_dims(s, x.shape(), &dims))?;
        if mean {
            let c = T::from_f64(count as f64);
            out.iter_mut().for_each(|v| *v /= c);
        }
        Tensor::from_vec(out, out_shape)
    })
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
    scalar(ScalarOp::Mul, x, factor * g.to_f64_vec()[0])
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
    float_dispatch!(x.dtype(), op, |T| {
        let out = x.with_contiguous(|s: &[T]| reduce::extreme_dims(s, x.shape(), &dims, largest))?;
        Tensor::from_vec(out, out_shape)
    })
}

/// The gradient of `sum`/`mean` over `dims` of `like`: g laid back out over like's shape.
fn expand_reduced(g: &Tensor, like: &Tensor, dims: Option<&[isize]>, keepdim: bool, mean: bool) -> Result<Tensor> {
    let dims = reduce_dims("sum", like, dims)?;
    let kept = reduced_shape(like.shape(), &dims, true);
    let g = if keepdim { g.clone() } else { reshape(g, &kept.iter().map(|&d| d as isize).collect::<Vec<_>>())? };
    let g = if mean {
        let count: usize = dims.iter().map(|&d| like.shape()[d]).product();
        scalar(ScalarOp::Div, &g, count as f64)?
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

// ----- views -----

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
        return x.view_as_layout(vec![], vec![], x.offset());
    }
    let (a, b) = (normalize_dim("transpose", d0, x.rank())?, normalize_dim("transpose", d1, x.rank())?);
    let mut shape = x.shape().to_vec();
    let mut strides = x.strides().to_vec();
    shape.swap(a, b);
    strides.swap(a, b);
    x.view_as_layout(shape, strides, x.offset())
}

/// The layout of `x[items]`: (shape, strides, offset).
pub fn index_layout(x: &Tensor, items: &[IndexItem]) -> Result<(Shape, Vec<isize>, usize)> {
    crate::indexing::layout(x.shape(), x.strides(), x.offset(), items)
}

pub fn index(x: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    let (shape, strides, offset) = index_layout(x, items)?;
    x.view_as_layout(shape, strides, offset)
}

fn index_backward(g: &Tensor, like: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
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
    match x.dtype() {
        DType::F32 => pick::<f32>(x, &keep, block, shape.into()),
        DType::F64 => pick::<f64>(x, &keep, block, shape.into()),
        DType::Bool => pick::<bool>(x, &keep, block, shape.into()),
    }
}

/// `grad_ys[index]` of a static `gradients` call, checked against its y at run time.
fn check_grad_shape(g: &Tensor, y: &Tensor, index: usize) -> Result<Tensor> {
    if g.shape() != y.shape() {
        let shape = |t: &Tensor| crate::graph::known(t.shape());
        return Err(grad_ys_shape_error(index, &shape(g), &shape(y), None));
    }
    Ok(g.clone())
}

/// The error for a `grad_ys` whose shape is not its y's (TF's "Incompatible shapes").
pub fn grad_ys_shape_error(
    index: usize,
    grad: &crate::graph::PartialShape,
    y: &crate::graph::PartialShape,
    y_name: Option<&str>,
) -> Error {
    let named = y_name.map_or(String::new(), |name| format!(" ('{name}')"));
    Error::Shape(format!(
        "gradients: Incompatible shapes: grad_ys[{index}] has shape {} but ys[{index}]{named} has shape {}; \
         each grad_ys must have the shape of its y",
        crate::graph::fmt_partial(grad),
        crate::graph::fmt_partial(y)
    ))
}

fn masked_scatter(g: &Tensor, mask: &Tensor, like: &Tensor) -> Result<Tensor> {
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

// ----- in-place writes (no autograd; the eager API decides when they are allowed) -----

/// Copies `value` (broadcast to `dst`'s shape, cast to its dtype) into `dst`'s elements.
pub fn write_into(dst: &Tensor, value: &Tensor) -> Result<()> {
    let target = broadcast_shapes("copy_", value.shape(), dst.shape())?;
    if target[..] != *dst.shape() {
        return shape_err(format!(
            "copy_: cannot write a value of shape {} into a tensor of shape {}",
            fmt_shape(value.shape()),
            fmt_shape(dst.shape())
        ));
    }
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
    match dst.dtype() {
        DType::F32 => put::<f32>(dst, &dense),
        DType::F64 => put::<f64>(dst, &dense),
        DType::Bool => put::<bool>(dst, &dense),
    }
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
    let direct = dst.is_contiguous()
        && src.is_contiguous()
        && dst.shape() == src.shape()
        && dst.dtype() == src.dtype()
        && !dst.shares_storage(src);
    if !direct {
        let scaled = if alpha == 1.0 { src.clone() } else { scalar(ScalarOp::Mul, src, alpha)? };
        return write_into(dst, &binary(BinaryOp::Add, dst, &scaled)?);
    }
    float_dispatch!(dst.dtype(), "add_", |T| {
        let n = dst.numel();
        let src_guard = src.storage().read();
        let s = T::slice(&src_guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
        let s = &s[src.offset()..src.offset() + n];
        let mut guard = dst.storage().write();
        let d = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
        let alpha = T::from_f64(alpha);
        let d = &mut d[dst.offset()..dst.offset() + n];
        if alpha == T::ONE {
            d.iter_mut().zip(s).for_each(|(o, &v)| *o += v);
        } else {
            d.iter_mut().zip(s).for_each(|(o, &v)| *o += alpha * v);
        }
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

/// Applies `f` to every element of `dst` in place (used by fill_, zero_ and scalar in-place ops).
pub fn update_in_place(dst: &Tensor, op: ScalarOp, s: f64) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    float_dispatch!(dst.dtype(), op.name(), |T| {
        if dst.is_contiguous() {
            let mut guard = dst.storage().write();
            let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
            let n = dst.numel();
            ew::map_in_place(&mut slice[dst.offset()..dst.offset() + n], ew::scalar_fn(op, T::from_f64(s)));
            Ok(())
        } else {
            write_into(dst, &scalar(op, dst, s)?)
        }
    })
}

pub fn fill(dst: &Tensor, value: f64) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    match dst.dtype() {
        DType::Bool => write_into(dst, &Tensor::scalar(value, DType::Bool)),
        _ => {
            float_dispatch!(dst.dtype(), "fill_", |T| {
                let v = T::from_f64(value);
                let mut guard = dst.storage().write();
                let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::DType("internal dtype mismatch".into()))?;
                if dst.is_contiguous() {
                    slice[dst.offset()..dst.offset() + dst.numel()].fill(v);
                } else {
                    walk(dst.shape(), [dst.strides()], [dst.offset()], |[i]| slice[i] = v);
                }
                Ok(())
            })
        }
    }
}
