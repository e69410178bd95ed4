//! The plan's memory: which values each step frees, and the buffers that values whose
//! lifetimes do not overlap share from run to run.

use super::plan::{Step, StepKind};
use super::{AssignMode, Graph};
use crate::dtype::DType;
use std::collections::{HashMap, HashSet};

/// Whether a step's output is memory a kernel allocates (and not a view, an
/// input, a variable's value or a constant).
pub fn allocates_output(kind: &StepKind) -> bool {
    match kind {
        StepKind::Op(op) => !op.is_view(),
        StepKind::MatMulUpdate { in_place_of, .. } => in_place_of.is_none(),
        StepKind::Assign { mode, .. } => *mode != AssignMode::Set,
        StepKind::Random { .. }
        | StepKind::MaskedGrad { .. }
        | StepKind::MatMulActivation { .. }
        | StepKind::MaxPoolWithIndices { .. }
        | StepKind::StoredByProduct
        | StepKind::SumOfSquares
        | StepKind::ScaledByItem { .. } => true,
        // Its three new tensors are made by copies, not from the step's buffer.
        StepKind::ApplyAdam { .. } => false,
        StepKind::Fed(_)
        | StepKind::Constant(_)
        | StepKind::ReadVar(_)
        | StepKind::PassThrough
        | StepKind::NoValue
        | StepKind::Debug(_)
        | StepKind::Cond(_)
        | StepKind::While(_) => false,
    }
}

/// The memory plan: gives each allocated output a buffer that no value alive at
/// the same time uses, shared by outputs of the same dtype and (partial) shape
/// whose lifetimes do not overlap. A value lives from the step that stores it to
/// the step that releases it. Returns the number of buffers.
///
/// The plan keeps these buffers from run to run and offers each step its own; a
/// dimension unknown at compile time may make a size differ at run time, and then
/// the kernel simply allocates (see `buffer_pool::offer`).
pub(super) fn plan_buffers(graph: &Graph, steps: &mut [Step]) -> usize {
    type Class = (DType, Vec<Option<usize>>);
    let mut free: HashMap<Class, Vec<usize>> = HashMap::new();
    let mut class_of: Vec<Class> = vec![];
    for s in 0..steps.len() {
        // A fused step stores its second output too, so that value's life starts here.
        let stored_here = match (&steps[s].kind, steps[s].kind.second_output_slot()) {
            (_, Some(second)) => vec![s, second],
            (StepKind::StoredByProduct, _) => vec![],
            (kind, _) if allocates_output(kind) => vec![s],
            _ => vec![],
        };
        for value in stored_here {
            let node = &graph.nodes[steps[value].node];
            let Some(shape) = node.shape.clone() else { continue };
            let class = (node.dtype, shape);
            let buffer = free.get_mut(&class).and_then(Vec::pop).unwrap_or_else(|| {
                class_of.push(class.clone());
                class_of.len() - 1
            });
            steps[value].buffer = Some(buffer);
        }
        for r in steps[s].release.clone() {
            if let Some(buffer) = steps[r].buffer {
                free.entry(class_of[buffer].clone()).or_default().push(buffer);
            }
        }
    }
    class_of.len()
}

/// Marks, at each step, the values whose last reader it is.
pub(super) fn plan_releases(steps: &mut [Step], fetch_steps: &[(usize, bool)]) {
    let mut last_use = vec![None; steps.len()];
    for (s, step) in steps.iter().enumerate() {
        for &i in &step.inputs {
            last_use[i] = Some(s);
        }
    }
    let fetched: HashSet<usize> = fetch_steps.iter().map(|&(s, _)| s).collect();
    for (value, last) in last_use.into_iter().enumerate() {
        if let (Some(s), false) = (last, fetched.contains(&value)) {
            steps[s].release.push(value);
        }
    }
}
