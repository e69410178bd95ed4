//! Running the steps of `Cond` and `While` nodes: each runs the sub-plans of its frames
//! (see `frames` and `plan::SubPlan`) with the kernels, without going back to Python,
//! and stores its outputs into the slots of its `Unpack` steps.

use super::executor::{run_step, with_inputs, RunContext, SideOutputs};
use super::plan::{CondPlan, LoopPlan, StackPlan, StepKind, SubPlan};
use super::{AssignMode, VarId};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::layout::reshaped;
use crate::ops::shape::cat;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// A loop checks for Ctrl-C (and other stops) once per this many iterations.
const CHECK_EVERY: u64 = 1024;

fn internal(what: &str) -> Error {
    Error::InvalidArgument(format!("internal: {what} has no value"))
}

/// Runs a sub-plan on `entries` (its `Fed` values), leaving its values, outputs
/// included, in `values` (whose memory the next run reuses).
pub(super) fn run_sub(
    sub: &SubPlan,
    entries: &[Tensor],
    values: &mut Vec<Option<Tensor>>,
    ctx: &mut RunContext<'_>,
    side: &mut SideOutputs,
) -> Result<()> {
    let plan = &sub.plan;
    values.clear();
    values.resize(plan.steps.len(), None);
    for (s, step) in plan.steps.iter().enumerate() {
        let assigned = side.assigns.len();
        let out = match &step.kind {
            StepKind::Fed(k) => Some(entries.get(*k).ok_or_else(|| internal(&step.name))?.clone()),
            StepKind::StoredByProduct => values[s].take(),
            StepKind::NoValue => None,
            StepKind::ReadVar(var) => match latest_assign(side, *var) {
                Some(value) => Some(value),
                None => with_inputs(values, step, |inputs| run_step(plan, ctx, s, step, inputs, side))?,
            },
            // An assign that adds to the variable starts from what this run assigned last.
            &StepKind::Assign { var, mode: AssignMode::Add | AssignMode::Sub } if step.inputs.len() == 1 => {
                match latest_assign(side, var) {
                    Some(base) => {
                        with_inputs(values, step, |inputs| run_step(plan, ctx, s, step, &[inputs[0], &base], side))?
                    }
                    None => with_inputs(values, step, |inputs| run_step(plan, ctx, s, step, inputs, side))?,
                }
            }
            _ => with_inputs(values, step, |inputs| run_step(plan, ctx, s, step, inputs, side))?,
        };
        values[s] = out;
        if side.assigns.len() > assigned {
            keep_last_assigns(&mut side.assigns, assigned);
        }
        if !side.unpacked.is_empty() {
            for (slot, output) in side.unpacked.drain(..) {
                values[slot] = Some(output);
            }
        }
        for &r in &step.release {
            values[r] = None;
        }
    }
    Ok(())
}

/// What this run assigned to `var` last (the overlay that reads inside frames see).
fn latest_assign(side: &SideOutputs, var: VarId) -> Option<Tensor> {
    side.assigns.iter().rev().find(|(v, _)| *v == var).map(|(_, t)| t.clone())
}

/// Drops the assignments before `from` of the variables assigned from `from` on: a loop
/// that assigns in every iteration keeps one value per variable, not one per iteration.
fn keep_last_assigns(assigns: &mut Vec<(VarId, Tensor)>, from: usize) {
    let new: Vec<VarId> = assigns[from..].iter().map(|(v, _)| *v).collect();
    let mut index = 0;
    assigns.retain(|(v, _)| {
        index += 1;
        index > from || !new.contains(v)
    });
}

/// The value of a 0-d predicate or index, refusing other shapes as TF's Switch does.
fn scalar_of(t: &Tensor, what: &str) -> Result<Scalar> {
    if t.rank() != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what} must be a scalar, but it has shape {}",
            fmt_shape(t.shape())
        )));
    }
    t.item()
}

/// Runs the branch the predicate (inputs[0]) picks: true picks branch 0; an index out
/// of range picks the last branch (the default of `case` and `switch_case`).
pub(super) fn run_cond(
    cond: &CondPlan,
    ctx: &mut RunContext<'_>,
    inputs: &[&Tensor],
    side: &mut SideOutputs,
) -> Result<()> {
    let n = cond.branches.len();
    let branch = match scalar_of(inputs[0], "The predicate of cond")? {
        Scalar::Bool(b) => usize::from(!b),
        Scalar::Int(i) => usize::try_from(i).ok().filter(|&i| i < n).unwrap_or(n - 1),
        Scalar::Float(_) => return Err(Error::DType("the predicate of cond must be a bool or an int".into())),
    };
    let entries: Vec<Tensor> = inputs[1..].iter().map(|&t| t.clone()).collect();
    let sub = &cond.branches[branch];
    let mut values = Vec::new();
    run_sub(sub, &entries, &mut values, ctx, side)?;
    for (&slot, &output) in cond.out_slots.iter().zip(&sub.outputs) {
        if let Some(slot) = slot {
            side.unpacked.push((slot, values[output].clone().ok_or_else(|| internal("a cond output"))?));
        }
    }
    // The values kept for the gradient: the gradient runs only the branch that ran, which
    // reads only its own; the other branches' exports get an empty value.
    let mine = &cond.exports[branch];
    for &(step, slot) in mine {
        side.unpacked.push((slot, values[step].clone().ok_or_else(|| internal("a value kept for the gradient"))?));
    }
    for &(slot, dtype) in &cond.export_slots {
        if !mine.iter().any(|&(_, s)| s == slot) {
            side.unpacked.push((slot, Tensor::zeros(&[0], dtype)?));
        }
    }
    Ok(())
}

/// Runs the loop: inputs are the initial values, the captures and (with
/// `max_iterations`) the iteration limit. The variables move from one iteration to the
/// next without copies; nothing is allocated per iteration but the kernels' outputs.
pub(super) fn run_while(
    lp: &LoopPlan,
    ctx: &mut RunContext<'_>,
    inputs: &[&Tensor],
    side: &mut SideOutputs,
) -> Result<()> {
    let n = lp.vars;
    let mut entries: Vec<Tensor> = inputs[..n + lp.captures].iter().map(|&t| t.clone()).collect();
    let limit = match lp.max_iterations {
        true => match scalar_of(inputs[n + lp.captures], "maximum_iterations")? {
            Scalar::Int(m) => Some(u64::try_from(m).unwrap_or(0)),
            _ => return Err(Error::DType("maximum_iterations must be an int32 or int64 scalar".into())),
        },
        false => None,
    };
    let (mut cond_values, mut body_values) = (Vec::new(), Vec::new());
    let mut stacks: Vec<Vec<Tensor>> = lp.stacks.iter().map(|_| Vec::new()).collect();
    let mut iterations: u64 = 0;
    while limit.is_none_or(|m| iterations < m) {
        run_sub(&lp.cond, &entries, &mut cond_values, ctx, side)?;
        let go = cond_values[lp.cond.outputs[0]].as_ref().ok_or_else(|| internal("the loop's condition"))?;
        if !matches!(scalar_of(go, "The condition of while_loop")?, Scalar::Bool(true)) {
            break;
        }
        run_sub(&lp.body, &entries, &mut body_values, ctx, side)?;
        for (stack, plan) in stacks.iter_mut().zip(&lp.stacks) {
            stack.push(body_values[plan.step].clone().ok_or_else(|| internal("a value kept for the gradient"))?);
        }
        // Cloned, not taken: a body may return one value for several variables.
        for (entry, &output) in entries.iter_mut().zip(&lp.body.outputs) {
            *entry = body_values[output].clone().ok_or_else(|| internal("a loop body output"))?;
        }
        iterations += 1;
        if iterations.is_multiple_of(CHECK_EVERY) {
            (ctx.between_steps)()?;
        }
    }
    for (k, slot) in lp.out_slots.iter().enumerate() {
        if let Some(slot) = *slot {
            side.unpacked.push((slot, entries[k].clone()));
        }
    }
    if let Some(slot) = lp.trip_slot {
        let trips = i64::try_from(iterations).unwrap_or(i64::MAX);
        side.unpacked.push((slot, Tensor::scalar(trips, DType::I64)));
    }
    for (stack, plan) in stacks.iter().zip(&lp.stacks) {
        side.unpacked.push((plan.slot, stacked(stack, plan, &lp.body)?));
    }
    Ok(())
}

/// A shape as TF prints it: `(2,)`.
fn tf_shape(dims: &[usize]) -> String {
    super::fmt_partial(&Some(dims.iter().map(|&d| Some(d)).collect()))
}

/// The values one body node had in each iteration, stacked along a new first dim.
fn stacked(values: &[Tensor], plan: &StackPlan, body: &SubPlan) -> Result<Tensor> {
    let Some(first) = values.first() else {
        let mut shape = vec![0];
        shape.extend(&plan.empty_shape);
        return Tensor::zeros(&shape, plan.dtype);
    };
    if let Some(other) = values.iter().find(|v| v.shape() != first.shape()) {
        let name = &body.plan.steps[plan.step].name;
        return Err(Error::Shape(format!(
            "gradients through while_loop: '{name}:0' has shape {} in one iteration and {} in another; the \
             gradient keeps each iteration's value in one stack, so values it reads must keep their shape \
             across iterations",
            tf_shape(first.shape()),
            tf_shape(other.shape())
        )));
    }
    let mut shape = vec![1];
    shape.extend(first.shape());
    let rows = values.iter().map(|v| reshaped(v, &shape)).collect::<Result<Vec<_>>>()?;
    cat(&rows.iter().collect::<Vec<_>>(), 0)
}

#[cfg(test)]
mod tests {
    use crate::dtype::{DType, Scalar};
    use crate::graph::executor::execute_with;
    use crate::graph::plan::compile;
    use crate::graph::{FrameKind, Graph};
    use crate::kernels::elementwise::{CmpOp, ScalarOp};
    use crate::op::Op;
    use crate::tensor::Tensor;

    /// `while i < n: i += 2` with `n` fed, compiled and run without Python.
    #[test]
    fn a_while_node_runs_its_body_until_its_cond_is_false() {
        let mut graph = Graph::new();
        let n = graph.placeholder(DType::I64, Some(vec![]), Some("n"));
        let zero = graph.constant(Tensor::scalar(0i64, DType::I64), None);
        let cond = graph.push_frame(FrameKind::LoopCond);
        let i = graph.frame_arg(DType::I64, Some(vec![]), None).unwrap();
        let go = graph.op(Op::Compare(CmpOp::Lt), vec![i, n], None).unwrap();
        graph.pop_frame(cond).unwrap();
        let body = graph.push_frame(FrameKind::LoopBody);
        let j = graph.frame_arg(DType::I64, Some(vec![]), None).unwrap();
        let next = graph.op(Op::Scalar(ScalarOp::Add, Scalar::Int(2)), vec![j], None).unwrap();
        graph.pop_frame(body).unwrap();
        let (_, outs) = graph.while_loop(cond, body, &[zero], go, &[next], None, true, None).unwrap();
        assert_eq!(graph.frame(cond).unwrap().captures, vec![n], "the cond reads n from outside");
        assert!(graph.op(Op::Scalar(ScalarOp::Add, Scalar::Int(1)), vec![next], None).is_err());
        let plan = compile(&graph, &outs, &[n]).unwrap();
        let run = |limit: i64| {
            let result = execute_with(&plan, vec![Tensor::scalar(limit, DType::I64)], &[]).unwrap();
            result.fetched[0].as_ref().unwrap().to_f64_vec()
        };
        assert_eq!((run(0), run(7), run(8)), (vec![0.0], vec![8.0], vec![8.0]));
    }

    #[test]
    fn an_undone_edit_removes_the_frames_it_opened() {
        let mut graph = Graph::new();
        assert!(graph.begin_edit());
        let frame = graph.push_frame(FrameKind::Branch);
        graph.constant(Tensor::scalar(1.0, DType::F32), None);
        graph.pop_frame(frame).unwrap();
        graph.end_edit(true).unwrap();
        assert_eq!((graph.num_frames(), graph.nodes.len(), graph.current_frame()), (0, 0, crate::graph::ROOT));
    }
}
