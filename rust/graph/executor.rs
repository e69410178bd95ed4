//! Runs a compiled plan with the eager kernels. Variable reads see the values
//! from the start of the run; assignments are returned, to be stored when the
//! run has succeeded.

use super::plan::{Plan, StepKind};
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

fn value(values: &[Option<Tensor>], slot: usize, name: &str) -> Result<Tensor> {
    values
        .get(slot)
        .and_then(Option::clone)
        .ok_or_else(|| Error::InvalidArgument(format!("internal: {name} read a value that was already released")))
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
    let mut values: Vec<Option<Tensor>> = vec![None; plan.steps.len()];
    let mut assigns = Vec::new();
    // Copies that fused updates stored for fetched assigns, by the update's step.
    let mut fetch_copies: Vec<(usize, Tensor)> = Vec::new();
    for (s, step) in plan.steps.iter().enumerate() {
        (ctx.between_steps)()?;
        let started = ctx.trace.is_some().then(std::time::Instant::now);
        let inputs = step.inputs.iter().map(|&i| value(&values, i, &step.name)).collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let out = match &step.kind {
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
            StepKind::Op(op) => Some(forward(op, &refs)?),
            StepKind::MatMulUpdate { alpha, transpose_a, transpose_b, copy_for_fetch } => {
                let (w, a, b) = (&inputs[0], &inputs[1], &inputs[2]);
                let (value, copy) =
                    crate::forward::matmul_update(w, a, b, *transpose_a, *transpose_b, *alpha, *copy_for_fetch)?;
                fetch_copies.extend(copy.map(|c| (s, c)));
                Some(value)
            }
            StepKind::MaskedGrad { cmp, threshold, keep_when } => {
                Some(crate::forward::mask_grad_threshold(&inputs[0], &inputs[1], *cmp, *threshold, *keep_when)?)
            }
            StepKind::PassThrough => Some(inputs[0].clone()),
            StepKind::Assign { var, mode } => {
                let new_value = match mode {
                    // A fed value may share the caller's numpy memory; a variable must own its value.
                    AssignMode::Set if inputs[0].is_external() => crate::forward::copy(&inputs[0])?,
                    AssignMode::Set => inputs[0].clone(),
                    AssignMode::Add => forward(&Op::Binary(BinaryOp::Add), &[&read_var(ctx, plan, *var)?, &inputs[0]])?,
                    AssignMode::Sub => forward(&Op::Binary(BinaryOp::Sub), &[&read_var(ctx, plan, *var)?, &inputs[0]])?,
                };
                assigns.push((*var, new_value.clone()));
                Some(new_value)
            }
            StepKind::NoValue => None,
        };
        values[s] = out;
        if let (Some(trace), Some(t0)) = (ctx.trace.as_deref_mut(), started) {
            trace.push((step.name.clone(), step.kind_name(), t0.elapsed().as_secs_f64()));
        }
        for &r in &step.release {
            values[r] = None;
        }
    }
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
