//! Runs a compiled plan with the eager kernels. Variable reads see the values
//! from the start of the run; assignments are returned, to be stored when the
//! run has succeeded.

use super::plan::{Plan, Step, StepKind};
use super::{AssignMode, NodeId, VarId};
use crate::error::{Error, Result};
use crate::forward::forward;
use crate::kernels::elementwise::BinaryOp;
use crate::op::Op;
use crate::random;
use crate::tensor::Tensor;
use std::collections::HashMap;

pub struct RunResult {
    pub fetched: Vec<Option<Tensor>>,
    /// New variable values, in the order the assignments ran.
    pub assigns: Vec<(VarId, Tensor)>,
}

/// What a run reads besides the plan: feeds, variable values, seeded random state.
pub struct RunContext<'a> {
    pub feeds: Vec<Tensor>,
    pub variables: &'a [Option<Tensor>],
    /// How many times each seeded random node has drawn in this session.
    pub random_draws: &'a mut HashMap<NodeId, u64>,
    pub between_steps: &'a mut dyn FnMut() -> Result<()>,
    /// When set, receives (step name, op type, seconds) for every step run.
    pub trace: Option<&'a mut Vec<(String, String, f64)>>,
}

fn value<'v>(values: &'v [Option<Tensor>], slot: usize, name: &str) -> Result<&'v Tensor> {
    values
        .get(slot)
        .and_then(Option::as_ref)
        .ok_or_else(|| Error::InvalidArgument(format!("internal: {name} read a value that was already released")))
}

/// Most ops have at most this many inputs; their references are gathered on the stack.
const INLINE_INPUTS: usize = 4;

/// Calls `f` with the step's input values, without allocating for steps of few inputs.
fn with_inputs<R>(values: &[Option<Tensor>], step: &Step, f: impl FnOnce(&[&Tensor]) -> Result<R>) -> Result<R> {
    let n = step.inputs.len();
    if n == 0 || n > INLINE_INPUTS {
        let refs = step.inputs.iter().map(|&i| value(values, i, &step.name)).collect::<Result<Vec<_>>>()?;
        return f(&refs);
    }
    let first = value(values, step.inputs[0], &step.name)?;
    let mut refs = [first; INLINE_INPUTS];
    for (slot, &i) in refs.iter_mut().zip(&step.inputs).skip(1) {
        *slot = value(values, i, &step.name)?;
    }
    f(&refs[..n])
}

fn read_var(ctx: &RunContext<'_>, plan: &Plan, var: VarId) -> Result<Tensor> {
    ctx.variables.get(var).and_then(Option::clone).ok_or_else(|| {
        let name = plan.variable_names.get(var).map_or("?", String::as_str);
        Error::FailedPrecondition(format!(
            "Attempting to use uninitialized value {name}; run its initializer first \
             (sess.run(global_variables_initializer()))"
        ))
    })
}

pub fn execute(plan: &Plan, ctx: &mut RunContext<'_>) -> Result<RunResult> {
    // The slots of an earlier run, if no other run holds them now.
    let mut values = std::mem::take(&mut *plan.value_slots.lock());
    values.clear();
    values.resize(plan.steps.len(), None);
    let result = run_steps(plan, ctx, &mut values);
    values.clear();
    *plan.value_slots.lock() = values;
    result
}

/// What steps hand on besides their own value.
#[derive(Default)]
struct SideOutputs {
    assigns: Vec<(VarId, Tensor)>,
    /// Copies that fused updates stored for fetched assigns, by the update's step.
    fetch_copies: Vec<(usize, Tensor)>,
    /// The activation a fused product stored, and the slot of the step it belongs to.
    activation: Option<(usize, Tensor)>,
}

fn run_steps(plan: &Plan, ctx: &mut RunContext<'_>, values: &mut [Option<Tensor>]) -> Result<RunResult> {
    let mut side = SideOutputs::default();
    for (s, step) in plan.steps.iter().enumerate() {
        (ctx.between_steps)()?;
        let started = ctx.trace.is_some().then(std::time::Instant::now);
        let out = match step.kind {
            StepKind::StoredByProduct => values[s].take(),
            _ => with_inputs(values, step, |inputs| run_step(plan, ctx, s, step, inputs, &mut side))?,
        };
        values[s] = out;
        if let Some((slot, activation)) = side.activation.take() {
            values[slot] = Some(activation);
        }
        if let (Some(trace), Some(t0)) = (ctx.trace.as_deref_mut(), started) {
            trace.push((step.name.clone(), step.kind_name(), t0.elapsed().as_secs_f64()));
        }
        for &r in &step.release {
            values[r] = None;
        }
    }
    let SideOutputs { assigns, mut fetch_copies, .. } = side;
    let mut copy_of = |s: usize| {
        let source = plan.steps[s].assigned_value()?;
        let position = fetch_copies.iter().position(|(step, _)| *step == source)?;
        Some(fetch_copies.swap_remove(position).1)
    };
    let fetched = plan
        .fetch_steps
        .iter()
        .map(|&(s, has_value)| if has_value { copy_of(s).or_else(|| values[s].clone()) } else { None })
        .collect();
    Ok(RunResult { fetched, assigns })
}

/// Computes one step's value from its inputs.
fn run_step(
    plan: &Plan,
    ctx: &mut RunContext<'_>,
    s: usize,
    step: &Step,
    inputs: &[&Tensor],
    side: &mut SideOutputs,
) -> Result<Option<Tensor>> {
    Ok(match &step.kind {
        StepKind::Fed(k) => Some(ctx.feeds[*k].clone()),
        StepKind::Constant(t) => Some(t.clone()),
        StepKind::ReadVar(v) => Some(read_var(ctx, plan, *v)?),
        StepKind::Random { dist, shape, seed, dtype } => {
            let draw_seed = seed.map(|base| {
                let count = ctx.random_draws.entry(step.node).or_insert(0);
                *count += 1;
                base.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(*count)
            });
            Some(random::sample(shape, *dtype, *dist, draw_seed)?)
        }
        StepKind::Op(op) => Some(forward(op, inputs)?),
        StepKind::MatMulUpdate { alpha, transpose_a, transpose_b, copy_for_fetch } => {
            let (w, a, b) = (inputs[0], inputs[1], inputs[2]);
            let (value, copy) =
                crate::forward::matmul_update(w, a, b, *transpose_a, *transpose_b, *alpha, *copy_for_fetch)?;
            side.fetch_copies.extend(copy.map(|c| (s, c)));
            Some(value)
        }
        StepKind::MatMulActivation { transpose_a, transpose_b, activation, activation_slot } => {
            let (product, activated) =
                crate::forward::matmul_activation(inputs[0], inputs[1], *transpose_a, *transpose_b, *activation)?;
            side.activation = Some((*activation_slot, activated));
            Some(product)
        }
        StepKind::StoredByProduct => None,
        StepKind::SumOfSquares => Some(crate::forward::sum_of_squares(inputs[0])?),
        StepKind::ScaledByItem { factor } => Some(crate::forward::scale_by_item(inputs[0], inputs[1], *factor)?),
        StepKind::MaskedGrad { cmp, threshold, keep_when } => {
            Some(crate::forward::mask_grad_threshold(inputs[0], inputs[1], *cmp, *threshold, *keep_when)?)
        }
        StepKind::PassThrough => Some(inputs[0].clone()),
        StepKind::Assign { var, mode } => {
            let new_value = match mode {
                // A fed value may share the caller's numpy memory; a variable must own its value.
                AssignMode::Set if inputs[0].is_external() => crate::forward::copy(inputs[0])?,
                AssignMode::Set => inputs[0].clone(),
                AssignMode::Add => forward(&Op::Binary(BinaryOp::Add), &[&read_var(ctx, plan, *var)?, inputs[0]])?,
                AssignMode::Sub => forward(&Op::Binary(BinaryOp::Sub), &[&read_var(ctx, plan, *var)?, inputs[0]])?,
            };
            side.assigns.push((*var, new_value.clone()));
            Some(new_value)
        }
        StepKind::NoValue => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::plan::compile;
    use crate::graph::Graph;

    /// A chain x → x+1 → (x+1)+1 → ... of 50 adds, run twice on the same plan.
    #[test]
    fn a_cached_plan_reuses_its_value_slots_between_runs() {
        let mut graph = Graph::new();
        let x = graph.placeholder(DType::F64, Some(vec![Some(2)]), Some("x"));
        let one = graph.constant(Tensor::scalar(1.0, DType::F64), None);
        let mut last = x;
        for _ in 0..50 {
            last = graph.op(Op::Binary(BinaryOp::Add), vec![last, one], None).unwrap();
        }
        let plan = compile(&graph, &[last], &[x]).unwrap();
        let mut draws = HashMap::new();
        let mut run = || {
            let mut no_check = || Ok(());
            let feeds = vec![Tensor::from_vec(vec![0.5f64, -1.0], vec![2]).unwrap()];
            let mut ctx = RunContext {
                feeds,
                variables: &[],
                random_draws: &mut draws,
                between_steps: &mut no_check,
                trace: None,
            };
            let result = execute(&plan, &mut ctx).unwrap();
            result.fetched[0].as_ref().unwrap().to_f64_vec()
        };
        assert_eq!(run(), vec![50.5, 49.0]);
        let slots = plan.value_slots.lock().as_ptr();
        assert!(plan.value_slots.lock().capacity() >= plan.steps.len());
        assert_eq!(run(), vec![50.5, 49.0]);
        assert_eq!(plan.value_slots.lock().as_ptr(), slots, "the second run allocated new value slots");
        assert!(plan.value_slots.lock().is_empty(), "values must not outlive their run");
    }
}
