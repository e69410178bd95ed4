//! Eager ops: evaluate, then record a tape node when grad mode is on and an
//! input requires grad.

use super::grad_mode;
use super::node::{Edge, Meta, Node, PerInput, Saved, SavedTensor};
use crate::error::{grad_err, Result};
use crate::forward::{self, forward};
use crate::op::{CustomBackward, Op};
use crate::rules;
use crate::tensor::{History, Tensor};
use std::sync::Arc;

fn differentiable(op: &Op) -> bool {
    !matches!(op, Op::Compare(_) | Op::FullLike(_) | Op::StopGradient)
}

fn edge_for(t: &Tensor) -> Option<Edge> {
    match t.history() {
        History::None => None,
        // Leaves (weights, inputs) are the common case, and need no lock.
        History::Leaf => Some(Edge::Leaf(t.clone())),
        History::Node => t.with_meta(|meta| {
            Some(match &meta.grad_fn {
                Some(node) => Edge::Node(node.clone(), meta.output_nr),
                None if meta.requires_grad => Edge::Leaf(t.clone()),
                None => return None,
            })
        }),
    }
}

fn meta(t: &Tensor) -> Meta {
    (t.shape().into(), t.dtype())
}

/// `f` of each input, pushed one by one: `collect` into a SmallVec took a
/// noticeable share of recording a one-element op.
fn per_input<T>(inputs: &[&Tensor], f: impl Fn(&Tensor) -> T) -> PerInput<T> {
    let mut out = PerInput::new();
    for t in inputs {
        out.push(f(t));
    }
    out
}

/// Whether an op on these inputs would be recorded.
pub fn should_record(inputs: &[&Tensor]) -> bool {
    grad_mode::is_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// Evaluates `op` and, when needed, records it on the tape.
pub fn apply(op: Op, inputs: &[&Tensor]) -> Result<Tensor> {
    let mut out = forward(&op, inputs)?;
    if grad_mode::is_enabled() && differentiable(&op) && out.dtype().is_float() {
        // One look at each input's metadata both decides and builds the record.
        let next = per_input(inputs, edge_for);
        if next.iter().any(Option::is_some) {
            attach(op, inputs, next, &mut out);
        }
    }
    Ok(out)
}

fn attach(op: Op, inputs: &[&Tensor], next: PerInput<Option<Edge>>, out: &mut Tensor) {
    let mut needs = [false; 4];
    for (slot, edge) in needs.iter_mut().zip(&next) {
        *slot = edge.is_some();
    }
    let saves = rules::saves(&op, &needs[..next.len().min(4)]);
    let saved = Saved {
        inputs: if saves.inputs != 0 {
            inputs.iter().enumerate().map(|(i, t)| saves.keeps_input(i).then(|| SavedTensor::new(t))).collect()
        } else {
            Vec::new()
        },
        output: saves.output.then(|| SavedTensor::new(out)),
    };
    let node = Node::new(op, next, per_input(inputs, meta), smallvec::smallvec![meta(out)], saved);
    out.set_history_of_new(Some(Arc::new(node)), 0);
}

/// Records a user-defined Function: `outputs` were computed from `inputs` by its
/// forward; `differentiable[i]` is false for outputs marked non-differentiable.
pub fn record_custom(custom: Arc<dyn CustomBackward>, inputs: &[Tensor], outputs: &[Tensor], differentiable: &[bool]) {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    if !should_record(&refs) {
        return;
    }
    let node = Arc::new(Node::new(
        Op::Custom(custom),
        inputs.iter().map(edge_for).collect(),
        inputs.iter().map(meta).collect(),
        outputs.iter().map(meta).collect(),
        Saved { inputs: vec![], output: None },
    ));
    for (i, out) in outputs.iter().enumerate() {
        if differentiable.get(i).copied().unwrap_or(true) && out.dtype().is_float() {
            out.set_history(Some(node.clone()), i);
        }
    }
}

/// A copy of `t`'s values that carries `t`'s history: the input of an op that
/// is about to overwrite `t` in place.
fn snapshot_with_history(t: &Tensor) -> Result<Tensor> {
    let copy = forward::copy(t)?;
    copy.set_history(t.grad_fn(), t.output_nr());
    copy.set_requires_grad(t.requires_grad());
    Ok(copy)
}

/// Refuses in-place writes that would break the tape, with PyTorch's wording.
fn check_in_place(dst: &Tensor, op_name: &str) -> Result<()> {
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

/// Runs `op(dst, others...)` and stores the result in `dst`'s storage. When the
/// tape is recording, `dst` takes the new node as its history.
pub fn apply_in_place(dst: &Tensor, op: Op, others: &[&Tensor], op_name: &str) -> Result<()> {
    check_in_place(dst, op_name)?;
    let mut all: Vec<&Tensor> = vec![dst];
    all.extend_from_slice(others);
    if should_record(&all) {
        let old = snapshot_with_history(dst)?;
        let mut inputs: Vec<&Tensor> = vec![&old];
        inputs.extend_from_slice(others);
        let out = apply(op, &inputs)?;
        forward::write_into(dst, &out)?;
        dst.set_history(out.grad_fn(), 0);
        return Ok(());
    }
    let out = forward(&op, &all)?;
    forward::write_into(dst, &out)
}

/// `dst[mask] = value`, recorded as `where(mask, value, dst)` when needed.
pub fn masked_fill_in_place(dst: &Tensor, mask: &Tensor, value: &Tensor) -> Result<()> {
    check_in_place(dst, "index_put_")?;
    if should_record(&[dst, value]) {
        let old = snapshot_with_history(dst)?;
        let full_mask = forward::expand_mask(mask, dst)?;
        let out = apply(Op::Where, &[&full_mask, value, &old])?;
        forward::write_into(dst, &out)?;
        dst.set_history(out.grad_fn(), 0);
        return Ok(());
    }
    forward::masked_fill(dst, mask, value)
}

/// `dst[index] = value` (slices and ints). Not recordable: refused when the tape would need it.
pub fn index_fill_in_place(dst: &Tensor, region: &Tensor, value: &Tensor) -> Result<()> {
    check_in_place(dst, "index_put_")?;
    if should_record(&[dst, value]) {
        return grad_err(
            "index_put_: assigning into a slice of a tensor that requires grad is not supported while \
             recording; use a bool mask (x[mask] = v), or do it under rustgrad.no_grad()",
        );
    }
    forward::write_into(region, value)
}
