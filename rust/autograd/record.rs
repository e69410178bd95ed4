//! Eager ops: evaluate, then record a tape node when grad mode is on and an
//! input requires grad.

use super::grad_mode;
use super::in_place::Value;
use super::node::{Edge, Meta, Node, PerInput, Saved, SavedTensor};
use crate::dtype::DType;
use crate::error::{shape_err, Result};
use crate::forward::forward;
use crate::op::{CustomBackward, Op};
use crate::ops::{binary, TableOps};
use crate::rules;
use crate::shape::fmt_shape;
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
    (crate::shape::Shape::from_slice(t.shape()), t.dtype())
}

/// `f` of each input, pushed one by one: `collect` into a SmallVec took a
/// noticeable share of recording a one-element op.
fn per_input<T>(inputs: &[&Tensor], f: impl Fn(&Tensor) -> T) -> PerInput<T> {
    if let [a, b] = inputs {
        // Full inline storage at once, without a capacity check per push.
        return PerInput::from_buf([f(a), f(b)]);
    }
    let mut out = PerInput::new();
    for t in inputs {
        out.push(f(t));
    }
    out
}

/// The shape and dtype of each input without an edge, by index (see `Node::input_meta`).
fn unedged_meta(inputs: &[&Tensor], next: &PerInput<Option<Edge>>) -> PerInput<(usize, Meta)> {
    let mut out = PerInput::new();
    for (i, (t, edge)) in inputs.iter().zip(next).enumerate() {
        if edge.is_none() {
            out.push((i, meta(t)));
        }
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
    crate::compile::op(&op, inputs, &out);
    if grad_mode::is_enabled() && differentiable(&op) && out.dtype().is_float() {
        // One look at each input's metadata both decides and builds the record.
        let next = per_input(inputs, edge_for);
        if next.iter().any(Option::is_some) {
            // An op may hand back its input itself (a sum to the same shape, a cast to the
            // same dtype): the history goes on an alias, never on the input.
            if inputs.iter().any(|t| t.same_tensor(&out)) {
                out = out.alias();
            }
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
    let unedged = unedged_meta(inputs, &next);
    let node = Node::shared(op, next, unedged, [&*out], saved);
    out.set_history_of_new(Some(node), 0);
}

/// Records a user-defined Function: `outputs` were computed from `inputs` by its
/// forward; `differentiable[i]` is false for outputs marked non-differentiable.
pub fn record_custom(custom: Arc<dyn CustomBackward>, inputs: &[Tensor], outputs: &[Tensor], differentiable: &[bool]) {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    if !should_record(&refs) {
        return;
    }
    let next: PerInput<Option<Edge>> = inputs.iter().map(edge_for).collect();
    let unedged = unedged_meta(&refs, &next);
    let node = Node::shared(Op::Custom(custom), next, unedged, outputs, Saved { inputs: vec![], output: None });
    for (i, out) in outputs.iter().enumerate() {
        if differentiable.get(i).copied().unwrap_or(true) && out.dtype().is_float() {
            out.set_history(Some(node.clone()), i);
        }
    }
}

const PRODUCT: Op = Op::MatMul { transpose_a: false, transpose_b: false };

/// torch.matmul: two matrices, or batches of them whose leading dims broadcast. A
/// vector is promoted to a matrix (a row on the left, a column on the right) and the
/// added dimension is dropped from the product; each step is recorded.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    match (a.rank(), b.rank()) {
        (0, _) | (_, 0) => shape_err(format!(
            "matmul: both arguments to matmul need to be at least 1D, but they are {}D and {}D (shapes {} and {})",
            a.rank(),
            b.rank(),
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        )),
        (1, _) | (_, 1) => {
            let a2 = if a.rank() == 1 { apply(Op::Reshape(vec![1, -1]), &[a])? } else { a.clone() };
            let b2 = if b.rank() == 1 { apply(Op::Reshape(vec![-1, 1]), &[b])? } else { b.clone() };
            let product = apply(PRODUCT, &[&a2, &b2])?;
            let mut kept: Vec<isize> = product.shape().iter().map(|&d| d as isize).collect();
            let r = kept.len();
            // The promoted dims are the last two of the product: a's row, then b's column.
            if b.rank() == 1 {
                kept.remove(r - 1);
            }
            if a.rank() == 1 {
                kept.remove(r - 2);
            }
            apply(Op::Reshape(kept), &[&product])
        }
        _ => apply(PRODUCT, &[a, b]),
    }
}

/// torch's `sum`: an integer or bool tensor sums in int64 (its dtype would overflow sooner).
pub fn sum(x: &Tensor, dims: Option<Vec<isize>>, keepdim: bool) -> Result<Tensor> {
    let sum = Op::Sum { dims, keepdim };
    if x.dtype().is_float() || x.dtype() == DType::I64 {
        return apply(sum, &[x]);
    }
    apply(sum, &[&apply(Op::Cast(DType::I64), &[x])?])
}

/// torch's `mean`, which refuses integer and bool tensors (it has no float dtype to pick).
pub fn mean(x: &Tensor, dims: Option<Vec<isize>>, keepdim: bool) -> Result<Tensor> {
    crate::forward::check_mean_dtype(x)?;
    apply(Op::Mean { dims, keepdim }, &[x])
}

/// torch.clamp with each bound None, a number or a tensor: number bounds are one fused op;
/// a tensor bound is the table's `clamp_min` then `clamp_max` (so max wins where min > max, as
/// in torch), each step recorded.
pub fn clamp(x: &Tensor, min: Option<Value>, max: Option<Value>) -> Result<Tensor> {
    let number = |bound: &Option<Value>| match bound {
        Some(Value::Scalar(v)) => Some(Some(v.as_f64())),
        None => Some(None),
        Some(Value::Tensor(_)) => None,
    };
    if let (Some(lo), Some(hi)) = (number(&min), number(&max)) {
        return apply(Op::Clamp { min: lo, max: hi }, &[x]);
    }
    let mut out = x.clone();
    for (bound, lower) in [(min, true), (max, false)] {
        out = match bound {
            None => out,
            Some(Value::Tensor(t)) if lower => apply(Op::Table(TableOps::ClampMin(binary::ClampMin)), &[&out, &t])?,
            Some(Value::Tensor(t)) => apply(Op::Table(TableOps::ClampMax(binary::ClampMax)), &[&out, &t])?,
            Some(Value::Scalar(v)) if lower => apply(Op::Clamp { min: Some(v.as_f64()), max: None }, &[&out])?,
            Some(Value::Scalar(v)) => apply(Op::Clamp { min: None, max: Some(v.as_f64()) }, &[&out])?,
        };
    }
    Ok(out)
}

/// torch.mm: the product of two matrices, and nothing else.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.rank() != 2 || b.rank() != 2 {
        return shape_err(format!(
            "mm: expected 2-D matrices, got shapes {} and {}; use matmul for vectors and batches",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        ));
    }
    apply(PRODUCT, &[a, b])
}

/// torch.bmm: two batches of matrices, both 3-D with the same batch size (no broadcasting).
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::ops::bmm::check_shapes(&crate::graph::known(a.shape()), &crate::graph::known(b.shape()))?;
    apply(PRODUCT, &[a, b])
}
