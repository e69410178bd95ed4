//! Eager in-place ops (`add_`, `+=`, `clamp_`, `fill_`, `zero_`, `copy_`, item
//! assignment): which kernel runs, the autograd checks PyTorch makes before a
//! tensor is overwritten, and the tape record when the write must be
//! differentiated. Every write goes through storage, which bumps the version
//! counter that saved tensors are checked against.

use super::grad_mode;
use super::record::{apply, should_record};
use crate::dtype::{result_type, DType, Participant, Scalar};
use crate::error::{dtype_err, grad_err, shape_err, Result};
use crate::forward;
use crate::kernels::elementwise::{BinaryOp, ScalarOp};
use crate::op::{IndexItem, Op};
use crate::ops::indexing::{put_planned, Combine, Onto, Pick, PutRows};
use crate::ops::overwrite::{FillWith, Zero};
use crate::ops::TableOps;
use crate::tensor::Tensor;
use crate::{compile, compile::Write};

/// A tensor or a Python number: the right-hand side of an in-place op, and the other
/// operand of arithmetic as the bindings convert it.
pub enum Value {
    Tensor(Tensor),
    Scalar(Scalar),
}

impl Value {
    /// The value as a tensor; a number takes `dtype`.
    fn to_tensor(&self, dtype: DType) -> Tensor {
        match self {
            Value::Tensor(t) => t.clone(),
            Value::Scalar(s) => Tensor::scalar(*s, dtype),
        }
    }

    /// The dtype `dst op self` computes in.
    fn result_dtype(&self, dst: &Tensor, op: BinaryOp) -> DType {
        let other = match self {
            Value::Tensor(t) => Participant::tensor(t.dtype(), t.rank()),
            Value::Scalar(s) => Participant::Number(s.kind()),
        };
        let dtype = result_type(&[Participant::tensor(dst.dtype(), dst.rank()), other]);
        if op == BinaryOp::Div {
            dtype.true_division()
        } else {
            dtype
        }
    }
}

/// Refuses an in-place result `dst` cannot hold, as torch: `int_tensor += 0.5` or
/// `int_tensor /= 2` would have to drop the fraction.
fn check_result_fits(dst: &Tensor, result: DType, op_name: &str) -> Result<()> {
    if dst.dtype().can_hold(result) {
        return Ok(());
    }
    dtype_err(format!(
        "{op_name}: result type {} can't be cast to the desired output type {}; use the out-of-place {} \
         for a {} result, or convert the tensor first",
        result.name(),
        dst.dtype().name(),
        op_name.trim_end_matches('_'),
        result.name()
    ))
}

/// `dst op= value`: `add_`/`sub_`/`mul_`/`div_` and `+=`/`-=`/`*=`/`/=`.
pub fn binary(dst: &Tensor, op: BinaryOp, value: &Value) -> Result<()> {
    check_no_shared_elements(dst, &format!("{}_", op.name()))?;
    let recording = should_record(&[dst]) || matches!(value, Value::Tensor(o) if should_record(&[o]));
    let name = || format!("{}_", op.name());
    check_result_fits(dst, value.result_dtype(dst, op), &name())?;
    match value {
        // The optimiser's hot path: w -= lr * grad under no_grad.
        Value::Tensor(o) if !recording && op == BinaryOp::Add => add_in_place(dst, o, 1.0),
        Value::Tensor(o) if !recording && op == BinaryOp::Sub => add_in_place(dst, o, -1.0),
        Value::Tensor(o) => apply_in_place(dst, Op::Binary(op), &[o], &name()),
        Value::Scalar(s) if !recording => {
            compile::write(Write::Update(op.with_scalar(false), *s), dst, &[]);
            forward::update_in_place(dst, op.with_scalar(false), *s)
        }
        Value::Scalar(s) => apply_in_place(dst, Op::Binary(op), &[&Tensor::scalar(*s, dst.dtype())], &name()),
    }
}

/// `dst.add_(value, alpha=alpha)`: `dst += alpha·value`, the product recorded like `value * alpha`.
pub fn add(dst: &Tensor, value: &Value, alpha: Option<Scalar>) -> Result<()> {
    match alpha {
        None => binary(dst, BinaryOp::Add, value),
        Some(alpha) => {
            let scaled = apply(Op::Scalar(ScalarOp::Mul, alpha), &[&value.to_tensor(dst.dtype())])?;
            binary(dst, BinaryOp::Add, &Value::Tensor(scaled))
        }
    }
}

/// `dst.clamp_(min, max)`.
pub fn clamp(dst: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<()> {
    check_result_fits(dst, forward::clamp_dtype(dst.dtype(), min, max), "clamp_")?;
    apply_in_place(dst, Op::Clamp { min, max }, &[], "clamp_")
}

/// `dst.fill_(value)` and `dst.zero_()` (`op_name` says which), for a number. On the
/// tape the new values are constants: no gradient flows to what `dst` held before.
/// (`fill_` with a tensor that requires grad is `fill_with_tensor`.)
pub fn fill(dst: &Tensor, value: Scalar, op_name: &str) -> Result<()> {
    check_in_place(dst, op_name)?;
    if should_record(&[dst]) {
        return fill_recorded(dst, &Tensor::scalar(value, dst.dtype()), op_name);
    }
    compile::write(Write::Fill(value), dst, &[]);
    forward::fill(dst, value)
}

/// `dst` overwritten with `value` (one element) on the tape, as torch's `ZeroBackward0`
/// (`zero_`) or `FillBackward0` (`fill_`) node.
fn fill_recorded(dst: &Tensor, value: &Tensor, op_name: &str) -> Result<()> {
    let old = snapshot_with_history(dst)?;
    let op = if op_name == "zero_" { TableOps::Zero(Zero) } else { TableOps::FillWith(FillWith) };
    let out = apply(Op::Table(op), &[value, &old])?;
    write_into(dst, &out)?;
    dst.set_history(out.grad_fn(), 0);
    Ok(())
}

/// `dst.copy_(src)`: src broadcast to dst's shape and cast to its dtype. On the
/// tape the gradient goes to `src` (summed back to its shape), none to what `dst` held.
pub fn copy(dst: &Tensor, src: &Tensor) -> Result<()> {
    copy_as(dst, src, "copy_")
}

/// `dst.fill_(value)` for a one-element tensor `value`: a copy of it everywhere, so a
/// value that requires grad gets the sum of the incoming gradient.
pub fn fill_with_tensor(dst: &Tensor, value: &Tensor) -> Result<()> {
    check_in_place(dst, "fill_")?;
    if should_record(&[dst, value]) {
        check_recordable_target(dst, "fill_")?;
        forward::check_writable(dst, value.shape())?;
        return fill_recorded(dst, value, "fill_");
    }
    write_into(dst, value)
}

/// `dst` overwritten with the values of `src` by the op `op_name` (`uniform_`,
/// `normal_`, ...), with the checks and the tape record of `copy_`.
pub fn overwrite(dst: &Tensor, src: &Tensor, op_name: &str) -> Result<()> {
    copy_as(dst, src, op_name)
}

fn copy_as(dst: &Tensor, src: &Tensor, op_name: &str) -> Result<()> {
    check_in_place(dst, op_name)?;
    if should_record(&[dst, src]) {
        check_recordable_target(dst, op_name)?;
        forward::check_writable(dst, src.shape())?;
        let src = if src.dtype() == dst.dtype() { src.clone() } else { apply(Op::Cast(dst.dtype()), &[src])? };
        return overwrite_recorded(dst, &src);
    }
    write_into(dst, src)
}

/// `dst[mask] = value`, recorded as `where(mask, value, dst)` when needed.
pub fn masked_put(dst: &Tensor, mask: &Tensor, value: &Tensor) -> Result<()> {
    check_in_place(dst, "index_put_")?;
    if should_record(&[dst, value]) {
        check_recordable_target(dst, "index_put_")?;
        let old = snapshot_with_history(dst)?;
        let full_mask = forward::expand_mask(mask, dst)?;
        let out = apply(Op::Where, &[&full_mask, value, &old])?;
        write_into(dst, &out)?;
        dst.set_history(out.grad_fn(), 0);
        return Ok(());
    }
    compile::write(Write::MaskedFill, dst, &[mask, value]);
    forward::masked_fill(dst, mask, value)
}

/// `dst[items] = value`, for any key but a whole-key mask: ints, slices, `None`, `...`,
/// bools and index tensors (`indices`, in key order). Recorded, when needed, as
/// `put_rows(dst, value, indices...)`: the gradient of what `dst` held is zero where
/// the key writes, and `value` gets the gradient of where it landed (of each
/// duplicate index, as torch does, though the last write is the one kept).
/// With `Combine::Add` (`index_put_(..., accumulate=True)`) the values add up, repeated
/// indices too, in order.
pub fn index_put(
    dst: &Tensor,
    items: &[IndexItem],
    indices: &[Tensor],
    value: &Tensor,
    combine: Combine,
) -> Result<()> {
    let refs: Vec<&Tensor> = indices.iter().collect();
    let pick = Pick::Key(items.to_vec());
    // A bad index is reported first, as PyTorch does. A basic key writes through a view.
    let target = match indices.is_empty() && combine == Combine::Set {
        true => Target::View(index_view(dst, items)?),
        false => Target::Rows(crate::ops::indexing::plan("index_put_", &pick, dst, &refs)?),
    };
    check_in_place(dst, "index_put_")?;
    if should_record(&[dst, value]) {
        check_recordable_target(dst, "index_put_")?;
        let old = snapshot_with_history(dst)?;
        let op = Op::Table(TableOps::PutRows(PutRows { pick, combine, onto: Onto::Copy }));
        let mut inputs: Vec<&Tensor> = vec![&old, value];
        inputs.extend(refs);
        let out = apply(op, &inputs)?;
        write_into(dst, &out)?;
        dst.set_history(out.grad_fn(), 0);
        return Ok(());
    }
    match target {
        Target::View(view) => write_into(&view, value),
        Target::Rows(plan) => {
            compile::stop(|| "index_put_ with index tensors".into());
            put_planned("index_put_", &plan, dst, value, combine)
        }
    }
}

/// Where item assignment writes: a view of the tensor, or rows of its storage.
enum Target {
    View(Tensor),
    Rows(crate::indexing::advanced::Plan),
}

/// `dst = op(dst, others...)` in place, for an op of the table whose result has
/// dst's shape (`masked_fill_`, `scatter_`, `index_add_`); recorded when needed.
pub fn table_op(dst: &Tensor, op: Op, others: &[&Tensor], op_name: &str) -> Result<()> {
    apply_in_place(dst, op, others, op_name)
}

/// Refuses an in-place result of another shape (`x.pow_(y)` where `y` broadcasts `x` to
/// more elements) or of a dtype `dst` cannot hold, with torch's wording.
fn check_result_writable(dst: &Tensor, out: &Tensor, op_name: &str) -> Result<()> {
    if out.shape() != dst.shape() {
        return shape_err(format!(
            "{op_name}: output with shape {:?} doesn't match the broadcast shape {:?}; use the out-of-place {} \
             for a result of the broadcast shape",
            dst.shape(),
            out.shape(),
            op_name.trim_end_matches('_')
        ));
    }
    check_result_fits(dst, out.dtype(), op_name)
}

/// Refuses a write into a tensor whose elements share memory (an `expand`ed view, which
/// reads one element along a dim of stride 0): which write would win is undefined.
fn check_no_shared_elements(dst: &Tensor, op_name: &str) -> Result<()> {
    if dst.shape().iter().zip(dst.strides()).any(|(&n, &s)| n > 1 && s == 0) {
        return shape_err(format!(
            "{op_name}: unsupported operation: more than one element of the written-to tensor refers to a single \
             memory location (it is an expanded view); clone() it before writing into it"
        ));
    }
    Ok(())
}

/// Refuses in-place writes that would break the tape, with PyTorch's wording.
fn check_in_place(dst: &Tensor, op_name: &str) -> Result<()> {
    check_no_shared_elements(dst, op_name)?;
    if !grad_mode::is_enabled() {
        return Ok(());
    }
    if dst.requires_grad() && dst.is_leaf() {
        return grad_err(format!(
            "{op_name}: a leaf Variable that requires grad is being used in an in-place operation. \
             Wrap the update in `with rustgrad.no_grad():` or operate on a clone()"
        ));
    }
    if dst.requires_grad() && dst.is_view() {
        return grad_err(format!(
            "{op_name}: in-place modification of a view of a tensor that requires grad is not supported; \
             use an out-of-place op (x = x + y) or clone() first"
        ));
    }
    Ok(())
}

/// Refuses to record a write into a view: the view would take the new history but the
/// tensor it views would not, so gradients through the base would silently miss the
/// write. (PyTorch rebases the base's history; rustgrad raises instead.)
fn check_recordable_target(dst: &Tensor, op_name: &str) -> Result<()> {
    if dst.is_view() {
        return grad_err(format!(
            "{op_name}: writing a value that requires grad into a view is not supported while recording; \
             write into the tensor itself (x[mask] = v on the base), or build the result out of place"
        ));
    }
    Ok(())
}

/// A copy of `t`'s values that carries `t`'s history: the input of an op that
/// is about to overwrite `t` in place.
fn snapshot_with_history(t: &Tensor) -> Result<Tensor> {
    let copy = forward::copy(t)?;
    compile::cast(t, t.dtype(), &copy);
    copy.set_history(t.grad_fn(), t.output_nr());
    copy.set_requires_grad(t.requires_grad());
    Ok(copy)
}

/// Runs `op(dst, others...)` and stores the result in `dst`'s storage, refusing a
/// result `dst` cannot hold (`int_tensor.exp_()`) before anything is written.
/// When the tape is recording, `dst` takes the new node as its history.
fn apply_in_place(dst: &Tensor, op: Op, others: &[&Tensor], op_name: &str) -> Result<()> {
    check_in_place(dst, op_name)?;
    let mut all: Vec<&Tensor> = vec![dst];
    all.extend_from_slice(others);
    if should_record(&all) {
        check_recordable_target(dst, op_name)?;
        let old = snapshot_with_history(dst)?;
        let mut inputs: Vec<&Tensor> = vec![&old];
        inputs.extend_from_slice(others);
        let out = apply(op, &inputs)?;
        check_result_writable(dst, &out, op_name)?;
        write_into(dst, &out)?;
        dst.set_history(out.grad_fn(), 0);
        return Ok(());
    }
    let out = forward::forward(&op, &all)?;
    check_result_writable(dst, &out, op_name)?;
    compile::op(&op, &all, &out);
    write_into(dst, &out)
}

/// Overwrites all of `dst` with `value` (which broadcasts to it and has its dtype)
/// and records it as `where(true, value, dst)`: the gradient passes to `value`,
/// and what `dst` held before gets zero.
fn overwrite_recorded(dst: &Tensor, value: &Tensor) -> Result<()> {
    let old = snapshot_with_history(dst)?;
    let everywhere = Tensor::scalar(true, DType::Bool);
    let out = apply(Op::Where, &[&everywhere, value, &old])?;
    write_into(dst, &out)?;
    dst.set_history(out.grad_fn(), 0);
    Ok(())
}

/// `forward::write_into`, traced.
fn write_into(dst: &Tensor, value: &Tensor) -> Result<()> {
    compile::write(Write::Into, dst, &[value]);
    forward::write_into(dst, value)
}

/// `forward::add_in_place`, traced.
fn add_in_place(dst: &Tensor, src: &Tensor, alpha: f64) -> Result<()> {
    compile::write(Write::AddScaled(alpha), dst, &[src]);
    forward::add_in_place(dst, src, alpha)
}

/// The view `dst[items]` that a basic-key item assignment writes through, traced as `Index`.
fn index_view(dst: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    let view = forward::index(dst, items)?;
    if compile::tracing() {
        compile::op(&Op::Index(items.to_vec()), &[dst], &view);
    }
    Ok(view)
}
