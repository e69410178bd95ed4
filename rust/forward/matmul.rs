//! 2-D matrix products, and the fused product+activation and update kernels
//! (with the checks that decide when an update may write in place).

use super::elementwise::{as_dtype_ref, promoted, scalar, unary};
use super::layout::copy;
use crate::dtype::{float_dispatch, numeric_dispatch, DType, Float, Number, Scalar};
use crate::error::{shape_err, Error, Result};
use crate::kernels::elementwise::{ScalarOp, UnaryOp};
use crate::kernels::leaf_sgd::LeafSgd;
use crate::kernels::matmul::{self, MatRef};
use crate::shape::fmt_shape;
use crate::storage::{ensure_allocatable, Element};
use crate::tensor::Tensor;

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
    let dtype = promoted(a, b);
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
        let both = float_dispatch!(a.dtype(), "mm", |T| both_outputs::<T>(a, b, transpose_a, transpose_b, activation)?);
        if let Some(both) = both {
            return Ok(both);
        }
    }
    let h = super::batched_matmul::matmul(a, b, transpose_a, transpose_b)?;
    let activated = match activation {
        matmul::SecondOutput::Copy => copy(&h)?,
        matmul::SecondOutput::AtLeast(c) => scalar(ScalarOp::Max, &h, Scalar::Float(c))?,
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
/// nothing else reads that memory (`updatable_in_place`). With `copy` (a contiguous
/// tensor of w's shape and dtype, allocated by the caller before any update writes,
/// see `overwritable_like`), the result is also stored there by the same pass.
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

/// One eager SGD step on `w` whose gradient is the product `op(a)·op(b)`, fused into
/// that product (`kernels::matmul::matmul_sgd_step_in_place`): the bits of
/// `kernels::leaf_sgd` with a `.grad` holding `zero`. Ok(false), with nothing written,
/// where the fused kernel does not apply; the caller then runs the product and the
/// step apart. The caller makes sure nothing else reads or writes `w`'s memory.
pub fn matmul_sgd_step_in_place<T: Float + Element>(
    w: &Tensor,
    (a, transpose_a): (&Tensor, bool),
    (b, transpose_b): (&Tensor, bool),
    zero: T,
    step: &LeafSgd<T>,
) -> Result<bool> {
    // check_matmul_update also checks that a and b have w's dtype.
    if w.dtype() != T::DTYPE || check_matmul_update(w, a, b, transpose_a, transpose_b, 0).is_err() {
        return Ok(false);
    }
    if !w.is_contiguous() || w.shares_storage(a) || w.shares_storage(b) {
        return Ok(false);
    }
    let (offset, n) = (w.offset(), w.numel());
    with_mat_refs(a, b, transpose_a, transpose_b, |ma, mb| {
        if !matmul::sgd_step_fuses(ma, mb, step) {
            return Ok(false); // before the write lock, which would count as a write of `w`
        }
        let mut guard = w.storage().write();
        let mismatch = || Error::DType("internal dtype mismatch in a fused SGD step".into());
        let target = T::slice_mut(&mut guard).and_then(|all| all.get_mut(offset..offset + n)).ok_or_else(mismatch)?;
        Ok(matmul::matmul_sgd_step_in_place(ma, mb, target, zero, step))
    })?
}

/// A contiguous tensor of `like`'s shape and dtype whose values are to be overwritten
/// (recycled memory, or zeros): the output of a kernel that writes every element.
pub fn overwritable_like(like: &Tensor) -> Result<Tensor> {
    let n = like.numel();
    if like.dtype() == DType::Bool {
        return Tensor::zeros(like.shape(), DType::Bool);
    }
    numeric_dispatch!(like.dtype(), "overwritable_like", |T| Tensor::from_vec(
        crate::storage::overwritable_vec::<T>(n),
        like.shape()
    ))
}
