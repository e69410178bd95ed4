//! One node's step of the reverse pass: its derivative rule (or custom backward)
//! run on its output gradients, with the values it reads checked against in-place
//! changes since they were saved, and the input gradients it returns checked.

use crate::autograd::node::{Edge, Node, PerInput, SavedTensor};
use crate::autograd::record;
use crate::error::{grad_err, Error, Result};
use crate::forward::{self, forward};
use crate::op::Op;
use crate::rules::{self, Differentiator, RuleArgs};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;
use std::sync::Arc;

/// A value inside the reverse pass: a tensor, and for saved tensors the version
/// it must still have when a rule reads it.
#[derive(Clone)]
pub struct EagerValue {
    tensor: Tensor,
    expected_version: Option<u64>,
}

impl EagerValue {
    fn fresh(tensor: Tensor) -> EagerValue {
        EagerValue { tensor, expected_version: None }
    }

    fn saved(saved: &SavedTensor) -> EagerValue {
        EagerValue { tensor: saved.tensor.clone(), expected_version: Some(saved.version) }
    }

    /// A saved value as `create_graph` needs it: with its history back (torch's
    /// `SavedVariable` unpack), so that what a rule computes from it is differentiable
    /// in it. `edge` is where the saved tensor's gradient went in the forward graph.
    /// The saved alias itself has no history: saving an output made no cycle.
    fn saved_with_history(saved: &SavedTensor, edge: Option<&Edge>) -> EagerValue {
        let tensor = match edge {
            // Leaf gradients are matched by the leaf's identity, so the leaf itself.
            Some(Edge::Leaf(leaf)) => leaf.clone(),
            Some(Edge::Node(node, output_nr)) => {
                let t = saved.tensor.alias();
                t.set_history(Some(node.clone()), *output_nr);
                t
            }
            None => saved.tensor.clone(),
        };
        EagerValue { tensor, expected_version: Some(saved.version) }
    }
}

/// Evaluates the ops a rule emits immediately, refusing saved tensors that were
/// modified in place after being saved. With `create_graph` it records them too.
struct EagerDifferentiator<'a> {
    node: &'a Node,
    create_graph: bool,
}

impl Differentiator for EagerDifferentiator<'_> {
    type Value = EagerValue;

    fn apply(&mut self, op: Op, inputs: &[&EagerValue]) -> Result<EagerValue> {
        // Shape-only reference operands do not read values, so their version does not matter.
        let reads_values = |i: usize| match op {
            Op::SumToLike | Op::BroadcastLike | Op::ReshapeLike | Op::FullLike(_) | Op::IndexBackward(_) => i == 0,
            Op::CheckGradShape(_) => i == 0,
            Op::ExpandReduced { .. } => i == 0,
            Op::MaskedScatter => i < 2,
            _ => true,
        };
        for (i, v) in inputs.iter().enumerate() {
            if let Some(expected) = v.expected_version {
                let now = v.tensor.version();
                if now != expected && reads_values(i) {
                    return grad_err(format!(
                        "one of the variables needed for gradient computation has been modified by an inplace \
                         operation: a {} tensor of shape {} saved by {} is at version {now}; expected version \
                         {expected} instead. Clone it before modifying it in place, or modify it after backward()",
                        v.tensor.dtype().name(),
                        fmt_shape(v.tensor.shape()),
                        self.node.name()
                    ));
                }
            }
        }
        let tensors: Vec<&Tensor> = inputs.iter().map(|v| &v.tensor).collect();
        if self.create_graph {
            return Ok(EagerValue::fresh(record::apply(op, &tensors)?));
        }
        let out = forward(&op, &tensors)?;
        crate::compile::op(&op, &tensors, &out);
        Ok(EagerValue::fresh(out))
    }

    fn rank(&self, value: &EagerValue) -> Option<usize> {
        Some(value.tensor.rank())
    }
}

/// Checks a gradient returned for input `i` of `node` and casts it to the input's dtype.
fn check_input_grad(node: &Node, i: usize, grad: Tensor, create_graph: bool) -> Result<Tensor> {
    let (shape, dtype) = node.input_meta(i)?;
    if grad.shape() != shape {
        return grad_err(format!(
            "Function {} returned an invalid gradient at index {i} - got {} but expected shape compatible with {}",
            node.name(),
            fmt_shape(grad.shape()),
            fmt_shape(shape)
        ));
    }
    if grad.dtype() != dtype {
        if create_graph {
            return record::apply(Op::Cast(dtype), &[&grad]);
        }
        let cast = forward::cast(&grad, dtype)?;
        crate::compile::cast(&grad, dtype, &cast);
        return Ok(cast);
    }
    Ok(grad)
}

/// Runs the rule (or the custom backward) of one node on its output gradients.
/// With `create_graph`, what the rule emits is recorded and reads the saved values with
/// their history (the saved output's is this node itself).
pub(super) fn run_node(
    node: &Arc<Node>,
    grads: Vec<Option<Tensor>>,
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    // The node's name is only needed for errors; making it costs allocations.
    let name = || node.name();
    let input_grads = match &node.op {
        Op::Custom(custom) => {
            let filled = grads
                .into_iter()
                .zip(&node.output_meta)
                .map(|(g, (shape, dtype))| g.map_or_else(|| Tensor::zeros(shape, *dtype), Ok))
                .collect::<Result<Vec<_>>>()?;
            let returned =
                if create_graph { custom.backward_recorded(filled, node)? } else { custom.backward(filled)? };
            if returned.len() != node.next.len() {
                return grad_err(format!(
                    "function {} returned an incorrect number of gradients (expected {}, got {})",
                    name(),
                    node.next.len(),
                    returned.len()
                ));
            }
            returned
        }
        op => {
            let saved_guard = node.saved.lock();
            let saved =
                saved_guard.as_ref().ok_or_else(|| Error::Gradient(format!("{}: saved values were freed", name())))?;
            let grad = match grads.into_iter().next().flatten() {
                Some(g) => EagerValue::fresh(g),
                None => return Ok(vec![None; node.next.len()]),
            };
            // An op that keeps no input values records an empty list.
            let inputs: PerInput<EagerValue> = (0..node.next.len())
                .map(|i| match saved.inputs.get(i).and_then(Option::as_ref) {
                    Some(s) if create_graph => Ok(EagerValue::saved_with_history(s, node.next[i].as_ref())),
                    Some(s) => Ok(EagerValue::saved(s)),
                    // The rule reads only this input's shape and dtype.
                    None => {
                        let (shape, dtype) = node.input_meta(i)?;
                        Ok(EagerValue::fresh(Tensor::placeholder(shape, dtype)?))
                    }
                })
                .collect::<Result<_>>()?;
            let output = match &saved.output {
                Some(s) if create_graph => EagerValue::saved_with_history(s, Some(&Edge::Node(node.clone(), 0))),
                Some(s) => EagerValue::saved(s),
                None => grad.clone(),
            };
            let needs: PerInput<bool> = node.next.iter().map(Option::is_some).collect();
            let mut d = EagerDifferentiator { node, create_graph };
            let args = RuleArgs { inputs: &inputs, output: &output, grad: &grad, needs: &needs };
            rules::vjp(&mut d, op, args)?.into_iter().map(|v| v.map(|v| v.tensor)).collect()
        }
    };
    input_grads
        .into_iter()
        .enumerate()
        .map(|(i, g)| match (g, node.next.get(i)) {
            (Some(g), Some(Some(_))) => check_input_grad(node, i, g, create_graph).map(Some),
            _ => Ok(None),
        })
        .collect()
}
