//! Elementwise ops: unary, scalar, clamp, binary, compare and where, with the
//! float dtype promotion they share, and the fused backward masks.

use super::layout::cast;
use crate::dtype::{
    dispatch, float_dispatch, integer_dispatch, numeric_dispatch, result_type, DType, Number, Participant, Scalar,
};
use crate::error::{dtype_err, Error, Result};
use crate::kernels::elementwise::{self as ew, BinaryOp, CmpOp, Operand, ScalarOp, UnaryOp};
use crate::ops::Ints;
use crate::shape::{broadcast_shapes, broadcast_strides, Shape};
use crate::storage::{ensure_allocatable, Element};
use crate::tensor::Tensor;
use std::borrow::Cow;

/// The dtype `a op b` computes in: torch's promotion of the two (`dtype::result_type`).
pub fn promoted(a: &Tensor, b: &Tensor) -> DType {
    if a.dtype() == b.dtype() {
        return a.dtype();
    }
    result_type(&[Participant::tensor(a.dtype(), a.rank()), Participant::tensor(b.dtype(), b.rank())])
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

/// A float op on an integer or bool tensor computes in float32; `abs`, `neg`, `sign`,
/// `square` and `relu` keep an integer dtype (`Ints::Keep`), as in torch.
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_float() {
        return float_dispatch!(x.dtype(), op.name(), |T| {
            let out = x.with_contiguous(|s: &[T]| ew::unary(op, s))?;
            Tensor::from_vec(out, x.shape())
        });
    }
    match op.ints() {
        Ints::Promote => unary(op, &cast(x, x.dtype().true_division())?),
        Ints::Keep => integer_dispatch!(x.dtype(), op.name(), |T| {
            let out = x.with_contiguous(|s: &[T]| <T as crate::ops::unary::IntegerKernel>::unary(op, s))?;
            let out = out.ok_or_else(|| Error::Internal(format!("{}: no integer kernel", op.name())))?;
            Tensor::from_vec(out, x.shape())
        }),
    }
}

/// The dtype `x op s` computes in for a tensor of dtype `x` and a number `s`: torch's
/// promotion with a number, and true division in a float dtype.
pub fn scalar_dtype(op: ScalarOp, x: DType, s: Scalar) -> DType {
    let dtype = x.promote_with_scalar(s.kind());
    if matches!(op, ScalarOp::Div | ScalarOp::RDiv) {
        dtype.true_division()
    } else {
        dtype
    }
}

pub fn scalar(op: ScalarOp, x: &Tensor, s: Scalar) -> Result<Tensor> {
    let dtype = scalar_dtype(op, x.dtype(), s);
    let x = as_dtype_ref(x, dtype)?;
    if dtype == DType::Bool {
        return bool_arithmetic(op.name(), op_as_binary(op), &x, &Tensor::scalar(s, DType::Bool), x.shape().into());
    }
    numeric_dispatch!(dtype, op.name(), |T| {
        let s = checked_scalar::<T>(op, s, &x)?;
        let out = x.with_contiguous(|v: &[T]| ew::scalar(op, v, s))?;
        Tensor::from_vec(out, x.shape())
    })
}

/// `s` as an element of `T`, after the checks an integer `T` needs: the number must
/// fit, a power must not be negative, and nothing may be divided by zero.
pub(super) fn checked_scalar<T: Number>(op: ScalarOp, s: Scalar, x: &Tensor) -> Result<T> {
    let value = s.to_element::<T>();
    if T::DTYPE.is_float() {
        return Ok(value);
    }
    if let Scalar::Int(i) = s {
        if value.to_i64() != i {
            return Err(Error::InvalidArgument(format!(
                "{}: value cannot be converted to type {} without overflow: {i}",
                op.name(),
                T::DTYPE.name()
            )));
        }
        if op == ScalarOp::Pow && i < 0 {
            return Err(Error::InvalidArgument(format!(
                "pow: Integers to negative integer powers are not allowed ({} tensor to the power {i}); \
                 convert the tensor with .float() first",
                T::DTYPE.name()
            )));
        }
    }
    let zero_divisor = match op {
        ScalarOp::FloorDiv | ScalarOp::Remainder => s.is_zero(),
        ScalarOp::RFloorDiv | ScalarOp::RRemainder => x.with_contiguous(|v: &[T]| v.contains(&T::ZERO))?,
        _ => false,
    };
    if zero_divisor {
        return Err(division_by_zero(op.name(), T::DTYPE));
    }
    Ok(value)
}

/// The binary op that `x op s` is (with the number on either side); None for powers.
fn op_as_binary(op: ScalarOp) -> Option<BinaryOp> {
    Some(match op {
        ScalarOp::Add => BinaryOp::Add,
        ScalarOp::Sub | ScalarOp::RSub => BinaryOp::Sub,
        ScalarOp::Mul => BinaryOp::Mul,
        ScalarOp::Div | ScalarOp::RDiv => BinaryOp::Div,
        ScalarOp::Max => BinaryOp::Maximum,
        ScalarOp::Min => BinaryOp::Minimum,
        ScalarOp::FloorDiv | ScalarOp::RFloorDiv => BinaryOp::FloorDiv,
        ScalarOp::Remainder | ScalarOp::RRemainder => BinaryOp::Remainder,
        ScalarOp::Pow | ScalarOp::RPow => return None,
    })
}

pub(super) fn division_by_zero(op: &str, dtype: DType) -> Error {
    Error::DivisionByZero(format!(
        "{op}: ZeroDivisionError: integer division or remainder by zero ({} divisor); check \
         the divisor, or divide in floating point (x.float())",
        dtype.name()
    ))
}

/// Arithmetic on two bool tensors, as torch: `+` and `maximum` are "or", `*` and
/// `minimum` are "and"; subtraction and the rest (None: a power) are refused.
fn bool_arithmetic(name: &str, op: Option<BinaryOp>, a: &Tensor, b: &Tensor, shape: Shape) -> Result<Tensor> {
    let f = match op {
        Some(BinaryOp::Add | BinaryOp::Maximum) => |p: bool, q: bool| p | q,
        Some(BinaryOp::Mul | BinaryOp::Minimum) => |p: bool, q: bool| p & q,
        Some(BinaryOp::Sub) => {
            return dtype_err(format!(
                "{name}: Subtraction, the `-` operator, with two bool tensors is not supported. If you are \
                 trying to invert a mask, use the `~` or `logical_not()` operator instead."
            ))
        }
        _ => return dtype_err(format!("{name}: not supported for bool tensors; convert them with .int() first")),
    };
    zip_tensors::<bool, bool>(a, b, shape, |shape, p, q| ew::zip_broadcast(shape, p, q, f))
}

/// The dtype `clamp` computes in: an integer tensor keeps its dtype with whole bounds,
/// and a fractional bound makes it float32 (torch's promotion with a float number).
pub fn clamp_dtype(dtype: DType, min: Option<f64>, max: Option<f64>) -> DType {
    let whole = [min, max].iter().flatten().all(|b| b.fract() == 0.0);
    if dtype.is_integer() && !whole {
        dtype.true_division()
    } else {
        dtype
    }
}

pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::InvalidArgument("clamp: at least one of 'min' or 'max' must not be None".into()));
    }
    let dtype = clamp_dtype(x.dtype(), min, max);
    if dtype != x.dtype() {
        return clamp(&cast(x, dtype)?, min, max);
    }
    numeric_dispatch!(x.dtype(), "clamp", |T| {
        // A missing bound is an infinite one, which an integer type saturates to its MIN or MAX.
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

/// Operands at least this large that are strided views of the output's shape are copied
/// into order before a broadcasting kernel reads them (see `in_order`).
const REORDER_MIN_ELEMENTS: usize = 1 << 12;

/// `t` copied into row-major order when it has the output's `shape` but a strided layout (a
/// transpose, a permute): the kernels walk such an operand one element at a time on one thread,
/// and a transposed walk misses the cache at each step, while the copy is tiled and parallel.
/// Measured on 2 cores, float32 `a.t() + b`: 14.3 ms walking against 1.6 ms copying first at
/// 1024×1024, 406 against 124 ms at 4096×4096. A broadcast operand (a stride of 0, `expand`) is
/// read in place: its rows are contiguous, and materialising it costs as much as the op. So is
/// an operand whose rows are contiguous and long enough for `ew::zip_in_runs` (a `narrow` along
/// the last dim, as an LSTM's gates): copying it took most of the op's time.
#[inline(always)]
fn in_order<'a>(t: &'a Tensor, shape: &[usize]) -> Result<std::borrow::Cow<'a, Tensor>> {
    let strided = t.numel() >= REORDER_MIN_ELEMENTS && t.shape() == shape && !t.is_contiguous();
    let in_rows = t.strides().last() == Some(&1) && t.shape().last().is_some_and(|&n| n >= ew::ROW_MIN_ELEMENTS);
    if strided && !in_rows && !t.strides().contains(&0) {
        return Ok(std::borrow::Cow::Owned(t.contiguous()?));
    }
    Ok(std::borrow::Cow::Borrowed(t))
}

/// `a` and `b` at their common dtype (float32 with float64 is float64), and the
/// shape they broadcast to, once an output of that shape and dtype fits in memory.
pub fn promoted_pair<'a>(op: &str, a: &'a Tensor, b: &'a Tensor) -> Result<(Cow<'a, Tensor>, Cow<'a, Tensor>, Shape)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = promoted(a, b);
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
    let (a, b) = (in_order(a, &shape)?, in_order(b, &shape)?);
    let (a, b) = (a.as_ref(), b.as_ref());
    let dense = |t: &Tensor| t.is_contiguous() && t.shape() == &shape[..];
    let (dense_a, dense_b) = (dense(a), dense(b));
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let mismatch = || Error::DType("internal dtype mismatch in a broadcasting kernel".into());
    let (da, db) = (T::slice(&ga).ok_or_else(mismatch)?, T::slice(&gb).ok_or_else(mismatch)?);
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
    let promoted = promoted(a, b);
    let dtype = if op == BinaryOp::Div { promoted.true_division() } else { promoted };
    ensure_allocatable(&shape, dtype)?;
    let (a, b) = (as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?);
    if dtype == DType::Bool {
        return bool_arithmetic(op.name(), Some(op), &a, &b, shape);
    }
    numeric_dispatch!(dtype, op.name(), |T| {
        if op.divides_integers() && !dtype.is_float() && b.with_contiguous(|v: &[T]| v.contains(&T::ZERO))? {
            return Err(division_by_zero(op.name(), dtype));
        }
        zip_tensors::<T, T>(&a, &b, shape, |shape, p, q| ew::binary(op, shape, p, q))
    })
}

pub fn compare(op: CmpOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    ensure_allocatable(&shape, DType::Bool)?;
    let dtype = promoted(a, b);
    let (a, b) = (as_dtype_ref(a, dtype)?, as_dtype_ref(b, dtype)?);
    if dtype == DType::Bool {
        let f = move |x: bool, y: bool| match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => !x & y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x & !y,
            CmpOp::Ge => x >= y,
        };
        return zip_tensors::<bool, bool>(&a, &b, shape, |shape, p, q| ew::zip_broadcast(shape, p, q, f));
    }
    numeric_dispatch!(dtype, op.name(), |T| zip_tensors::<T, bool>(&a, &b, shape, |shape, p, q| ew::compare(
        op, shape, p, q
    )))
}

pub fn where_select(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return dtype_err(format!("where: the condition must be a bool tensor, got {}", cond.dtype().name()));
    }
    let shape = broadcast_shapes("where", &broadcast_shapes("where", cond.shape(), x.shape())?, y.shape())?;
    let dtype = promoted(x, y);
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
    dispatch!(dtype, |T| run::<T>(&shape, cond, &x, &y))
}

/// (g, x) -> g where keep(x), else 0. One pass (broadcasting `g` and `x`); used by
/// relu and clamp backward and the fused masks of static plans.
pub(super) fn mask_grad(g: &Tensor, x: &Tensor, op: &str, keep: impl Fn(f64) -> bool + Sync + Send) -> Result<Tensor> {
    let shape = broadcast_shapes(op, g.shape(), x.shape())?;
    let dtype = promoted(g, x);
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
