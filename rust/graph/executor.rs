//! Runs a compiled plan with the eager kernels. Variable reads see the values
//! from the start of the run; assignments are returned, to be stored when the
//! run has succeeded. A run has two phases: `start` runs every step but the
//! plan's commit phase (fused updates that may write into their variable's
//! memory, and their assigns), and `Run::commit` runs those, with the session's
//! variables locked, after checking that none of them can fail.

use super::apply_adam::AdamVars;
use super::memory_plan::allocates_output;
use super::plan::{Plan, RunState, Step, StepKind};
use super::{AssignMode, NodeId, VarId};
use crate::buffer_pool::{self, Kept};
use crate::error::{Error, Result};
use crate::forward::{self, forward};
use crate::kernels::elementwise::BinaryOp;
use crate::op::Op;
use crate::random;
use crate::tensor::{self, Tensor};
use std::collections::HashMap;
use std::sync::Arc;

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
    /// When set, receives a record of every step run.
    pub trace: Option<&'a mut Vec<StepRecord>>,
    /// How many times each `Print` with a `first_n` ran in this session (None: no limit).
    pub print_counts: Option<&'a super::debug_ops::PrintCounts>,
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
pub(super) fn with_inputs<R>(
    values: &[Option<Tensor>],
    step: &Step,
    f: impl FnOnce(&[&Tensor]) -> Result<R>,
) -> Result<R> {
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

/// Runs a whole plan without writing into any variable's memory (the updates of
/// the commit phase write new tensors). Sessions use `start` and `Run::commit`;
/// the tests use this.
#[cfg(test)]
pub fn execute(plan: &Plan, ctx: &mut RunContext<'_>) -> Result<RunResult> {
    let run = start(plan, ctx)?;
    run.commit(None, ctx.trace.as_deref_mut())
}

/// Runs a whole plan on `feeds` and `variables`, with no hooks (see `execute`): for the tests.
#[cfg(test)]
pub fn execute_with(plan: &Plan, feeds: Vec<Tensor>, variables: &[Option<Tensor>]) -> Result<RunResult> {
    let mut draws = HashMap::new();
    let mut no_check = || Ok(());
    let mut ctx = RunContext {
        feeds,
        variables,
        random_draws: &mut draws,
        between_steps: &mut no_check,
        trace: None,
        print_counts: None,
    };
    execute(plan, &mut ctx)
}

/// What a traced run records of one step: its time, and the memory its values hold.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The step's index in the plan.
    pub step: usize,
    pub name: String,
    /// The op type (or the fused step's name).
    pub kind: String,
    pub seconds: f64,
    /// The values this step stored in memory its kernels allocated: (step index of the value,
    /// bytes, the memory plan's buffer number). Views, reads and in-place updates store none.
    pub stored: Vec<(usize, usize, Option<usize>)>,
    /// The step indices of the values whose last reader this step was (they are freed after it).
    pub released: Vec<usize>,
}

/// How traces name a fused update that wrote into its variable's memory.
pub const IN_PLACE_UPDATE: &str = "fused_sgd_update_in_place";

/// A run whose steps before the commit phase have run.
pub struct Run<'p> {
    plan: &'p Plan,
    values: Vec<Option<Tensor>>,
    /// The memory plan's buffers that no value holds now.
    buffers: Vec<Option<Kept>>,
    /// Headers of released values, for the next outputs (see `tensor::offer_shells`).
    shells: Vec<Tensor>,
    side: SideOutputs,
}

/// Shells lent to each step: enough for its outputs, whose number is small.
const SHELLS_PER_STEP: usize = 2;
/// Shells kept at most: a step releases about as many values as it makes.
const MAX_SHELLS: usize = 8;

impl Drop for Run<'_> {
    /// Keeps the memory of values nothing else holds, and hands the value slots
    /// and buffers back to the plan, for its next run.
    fn drop(&mut self) {
        for slot in 0..self.values.len() {
            self.release(slot);
        }
        let values = std::mem::take(&mut self.values);
        let buffers = std::mem::take(&mut self.buffers);
        let shells = std::mem::take(&mut self.shells);
        *self.plan.run_state.lock() = RunState { values, buffers, shells };
    }
}

/// An update of the commit phase, checked, with its operands and where it writes.
struct PreparedUpdate {
    w: Tensor,
    a: Tensor,
    b: Tensor,
    in_place: bool,
    /// For an update in place whose value is also fetched: the tensor its copy goes
    /// into, allocated before any update writes.
    copy: Option<Tensor>,
}

fn internal_commit_error(step: &Step) -> Error {
    Error::InvalidArgument(format!("internal: {} cannot run in the commit phase", step.name))
}

/// What steps hand on besides their own value.
#[derive(Default)]
pub(super) struct SideOutputs {
    pub(super) assigns: Vec<(VarId, Tensor)>,
    /// Copies that fused updates stored for fetched assigns, by the update's step.
    fetch_copies: Vec<(usize, Tensor)>,
    /// The second output a fused step stored (a product's activation, a pooling's
    /// indices), and the slot of the step it belongs to.
    second_output: Option<(usize, Tensor)>,
    /// The outputs a Cond or While step stored, and the slots of their `Unpack` steps.
    pub(super) unpacked: Vec<(usize, Tensor)>,
}

/// Runs the plan's steps up to its commit phase.
pub fn start<'p>(plan: &'p Plan, ctx: &mut RunContext<'_>) -> Result<Run<'p>> {
    // The slots and buffers of an earlier run, if no other run holds them now.
    let RunState { mut values, mut buffers, shells } = std::mem::take(&mut *plan.run_state.lock());
    values.clear();
    values.resize(plan.steps.len(), None);
    buffers.resize_with(plan.buffer_count, || None);
    let mut run = Run { plan, values, buffers, shells, side: SideOutputs::default() };
    // A step that panicked (the bindings catch panics) may have left offers on this thread.
    buffer_pool::withdraw(|_, stale| drop(stale));
    tensor::withdraw_shells(&mut Vec::new());
    for (s, step) in plan.steps.iter().enumerate().take(plan.commit_from) {
        (ctx.between_steps)()?;
        let started = ctx.trace.is_some().then(std::time::Instant::now);
        let offered = run.offer_buffers(s);
        let out = match step.kind {
            StepKind::StoredByProduct => Ok(run.values[s].take()),
            // Groups read no values (their inputs may have none, or run later).
            StepKind::NoValue => Ok(None),
            _ => with_inputs(&run.values, step, |inputs| run_step(plan, ctx, s, step, inputs, &mut run.side)),
        };
        if offered {
            run.withdraw_buffers();
        }
        run.values[s] = out?;
        if let Some((slot, second)) = run.side.second_output.take() {
            run.values[slot] = Some(second);
        }
        for (slot, output) in run.side.unpacked.drain(..) {
            run.values[slot] = Some(output);
        }
        run.finish_step(s, started, ctx.trace.as_deref_mut(), None);
    }
    Ok(run)
}

impl Run<'_> {
    /// Offers the step's buffers (its own, and its second output's when fused)
    /// to the allocations of its kernel, and tensor headers to its new tensors.
    /// Returns whether it offered anything (and so whether to withdraw after).
    fn offer_buffers(&mut self, s: usize) -> bool {
        let mut offered = !self.shells.is_empty();
        tensor::offer_shells(&mut self.shells, SHELLS_PER_STEP);
        let steps = &self.plan.steps;
        for slot in std::iter::once(s).chain(steps[s].kind.second_output_slot()) {
            if let Some(buffer) = steps[slot].buffer {
                if let Some(kept) = self.buffers[buffer].take() {
                    buffer_pool::offer(buffer, kept);
                    offered = true;
                }
            }
        }
        offered
    }

    /// Takes back the offered buffers and headers that nothing took.
    fn withdraw_buffers(&mut self) {
        let buffers = &mut self.buffers;
        buffer_pool::withdraw(|buffer, kept| {
            if let Some(slot) = buffers.get_mut(buffer) {
                *slot = Some(kept);
            }
        });
        tensor::withdraw_shells(&mut self.shells);
    }

    /// Drops a value; when nothing else holds it, its memory goes back to its
    /// buffer of the memory plan, and its header to the spare shells.
    fn release(&mut self, slot: usize) {
        let Some(value) = self.values[slot].take() else { return };
        if let Some(buffer) = self.plan.steps[slot].buffer {
            // The newest memory replaces older one: after a change of shape it has the new size.
            if let Some((kept, shell)) = value.into_kept_parts() {
                self.buffers[buffer] = Some(kept);
                if self.shells.len() < MAX_SHELLS {
                    self.shells.push(shell);
                }
            }
        }
    }

    /// Records the step in the trace (under `kind`, or its own kind name) and
    /// releases the values whose last reader it was.
    fn finish_step(
        &mut self,
        s: usize,
        started: Option<std::time::Instant>,
        trace: Option<&mut Vec<StepRecord>>,
        kind: Option<&str>,
    ) {
        let step = &self.plan.steps[s];
        if let (Some(trace), Some(t0)) = (trace, started) {
            let seconds = t0.elapsed().as_secs_f64();
            let kind = kind.map_or_else(|| step.kind_name(), str::to_string);
            let stored = self.stored_by(s, kind == IN_PLACE_UPDATE);
            trace.push(StepRecord {
                step: s,
                name: step.name.clone(),
                kind,
                seconds,
                stored,
                released: step.release.clone(),
            });
        }
        for &r in &step.release {
            self.release(r);
        }
    }

    /// The values step `s` stored in memory its kernels allocated, with their bytes and buffers.
    fn stored_by(&self, s: usize, in_place: bool) -> Vec<(usize, usize, Option<usize>)> {
        let steps = &self.plan.steps;
        let allocates = match &steps[s].kind {
            // The fused step before it stored this value (as its second output).
            StepKind::StoredByProduct => false,
            // An update meant to write in place allocates when it could not.
            StepKind::MatMulUpdate { .. } => !in_place,
            kind => allocates_output(kind),
        };
        // A kernel may hand back an input unchanged (`sum_to` to the same shape does).
        let is_an_input = |value: &Tensor| {
            steps[s]
                .inputs
                .iter()
                .any(|&i| self.values[i].as_ref().is_some_and(|input| Arc::ptr_eq(input.storage(), value.storage())))
        };
        let own = allocates.then_some(s);
        own.into_iter()
            .chain(steps[s].kind.second_output_slot())
            .filter_map(|slot| {
                let value = self.values[slot].as_ref().filter(|v| !is_an_input(v))?;
                Some((slot, value.numel() * value.dtype().size_in_bytes(), steps[slot].buffer))
            })
            .collect()
    }

    /// Runs the commit phase and returns the fetched values and the assignments.
    /// With `variables` (the session's, locked by the caller for the whole call), an
    /// update writes into its variable's memory when nothing but the session holds
    /// it. Every update is checked, and where it writes decided, before any runs;
    /// then the updates that make new tensors run (they may fail, out of memory, or
    /// stop on Ctrl-C), and only then those that write in place, whose memory is
    /// already allocated and which Ctrl-C does not stop: after the first write into
    /// a variable nothing can fail, so a failed commit changes nothing.
    pub fn commit(
        mut self,
        variables: Option<&mut Arc<Vec<Option<Tensor>>>>,
        mut trace: Option<&mut Vec<StepRecord>>,
    ) -> Result<RunResult> {
        let plan = self.plan;
        // Copies the list of values first if another run still reads it: that run's
        // references then count as holders, and its values are left alone.
        let store = match variables {
            Some(vars) if plan.commit_from < plan.steps.len() => Some(&*Arc::make_mut(vars)),
            _ => None,
        };
        // One entry per step of the commit phase (None for the assigns).
        let mut updates = Vec::with_capacity(plan.steps.len() - plan.commit_from);
        for step in &plan.steps[plan.commit_from..] {
            updates.push(self.prepare_update(step, store)?);
        }
        let mut pending: Vec<(usize, Option<Option<PreparedUpdate>>)> =
            (plan.commit_from..).zip(updates.into_iter().map(Some)).collect();
        // First the updates that make new tensors, then, in plan order, the writes in place
        // and the assigns (which read the values of the updates before them).
        for (s, slot) in &mut pending {
            if matches!(slot, Some(Some(update)) if !update.in_place) {
                let update = slot.take().flatten();
                self.run_commit_step(*s, update, trace.as_deref_mut())?;
            }
        }
        for (s, slot) in pending {
            if let Some(update) = slot {
                let _writes_whole = update.as_ref().is_some_and(|u| u.in_place).then(crate::interrupt::HoldOff::new);
                self.run_commit_step(s, update, trace.as_deref_mut())?;
            }
        }
        Ok(self.results())
    }

    /// Runs one step of the commit phase: a prepared update, or an assign.
    fn run_commit_step(
        &mut self,
        s: usize,
        prepared: Option<PreparedUpdate>,
        trace: Option<&mut Vec<StepRecord>>,
    ) -> Result<()> {
        let step = &self.plan.steps[s];
        let started = trace.is_some().then(std::time::Instant::now);
        let (value, in_place) = match (&step.kind, step.inputs.as_slice(), prepared) {
            (StepKind::MatMulUpdate { .. }, _, Some(update)) => self.run_update(s, step, update)?,
            (&StepKind::Assign { var, mode: AssignMode::Set }, &[update], None) => {
                let value = self.values[update].clone().ok_or_else(|| internal_commit_error(step))?;
                self.side.assigns.push((var, value.clone()));
                (value, false)
            }
            _ => return Err(internal_commit_error(step)),
        };
        self.values[s] = Some(value);
        self.finish_step(s, started, trace, in_place.then_some(IN_PLACE_UPDATE));
        Ok(())
    }

    /// Checks an update of the commit phase and decides whether it writes into its
    /// variable's memory; writes nothing. None for the other steps.
    fn prepare_update(&mut self, step: &Step, store: Option<&Vec<Option<Tensor>>>) -> Result<Option<PreparedUpdate>> {
        let StepKind::MatMulUpdate { transpose_a, transpose_b, copy_for_fetch, in_place_of, .. } = step.kind else {
            return Ok(None);
        };
        let (w, a, b) = with_inputs(&self.values, step, |i| Ok((i[0].clone(), i[1].clone(), i[2].clone())))?;
        forward::check_matmul_update(&w, &a, &b, transpose_a, transpose_b, 1 + copy_for_fetch as usize)?;
        // This run's own references to w count as holders: drop those no later step reads.
        for &r in &step.release {
            self.release(r);
        }
        let is_the_variables_value =
            |var: VarId| store.and_then(|vars| vars.get(var)?.as_ref()).is_some_and(|current| current.same_tensor(&w));
        // Held by the session's list and by `w` here, and by nothing else.
        let in_place = in_place_of.is_some_and(is_the_variables_value) && forward::updatable_in_place(&w, &a, &b, 2);
        let copy = if in_place && copy_for_fetch { Some(forward::overwritable_like(&w)?) } else { None };
        Ok(Some(PreparedUpdate { w, a, b, in_place, copy }))
    }

    /// Runs a prepared update; returns its value and whether it wrote in place.
    fn run_update(&mut self, s: usize, step: &Step, update: PreparedUpdate) -> Result<(Tensor, bool)> {
        let StepKind::MatMulUpdate { alpha, transpose_a, transpose_b, copy_for_fetch, .. } = step.kind else {
            return Err(internal_commit_error(step));
        };
        let PreparedUpdate { w, a, b, in_place, copy } = update;
        let (value, copy) = if in_place {
            forward::matmul_update_in_place(&w, &a, &b, transpose_a, transpose_b, alpha, copy.as_ref())?;
            (w, copy)
        } else {
            forward::matmul_update(&w, &a, &b, transpose_a, transpose_b, alpha, copy_for_fetch)?
        };
        self.side.fetch_copies.extend(copy.map(|c| (s, c)));
        Ok((value, in_place))
    }

    fn results(&mut self) -> RunResult {
        let plan = self.plan;
        let SideOutputs { assigns, mut fetch_copies, .. } = std::mem::take(&mut self.side);
        let mut copy_of = |s: usize| {
            let source = plan.steps[s].assigned_value()?;
            let position = fetch_copies.iter().position(|(step, _)| *step == source)?;
            Some(fetch_copies.swap_remove(position).1)
        };
        let values = &self.values;
        let fetched = plan
            .fetch_steps
            .iter()
            .map(|&(s, has_value)| if has_value { copy_of(s).or_else(|| values[s].clone()) } else { None })
            .collect();
        RunResult { fetched, assigns }
    }
}

/// Computes one step's value from its inputs.
pub(super) fn run_step(
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
        StepKind::Random { sampler, seed, dtype } => {
            // A seeded node's n-th draw in a session comes from its own generator, so every
            // session repeats the node's sequence; an unseeded one draws from the global generator.
            let seeded = seed.map(|base| {
                let count = ctx.random_draws.entry(step.node).or_insert(0);
                *count += 1;
                random::Generator::new(random::combine_seeds(base, *count))
            });
            let generator = seeded.as_ref().unwrap_or_else(|| random::default_generator());
            Some(sampler.run(*dtype, inputs, generator)?)
        }
        StepKind::Op(op) => Some(forward(op, inputs)?),
        StepKind::MatMulUpdate { alpha, transpose_a, transpose_b, copy_for_fetch, .. } => {
            let (w, a, b) = (inputs[0], inputs[1], inputs[2]);
            let (value, copy) = forward::matmul_update(w, a, b, *transpose_a, *transpose_b, *alpha, *copy_for_fetch)?;
            side.fetch_copies.extend(copy.map(|c| (s, c)));
            Some(value)
        }
        StepKind::MatMulActivation { transpose_a, transpose_b, activation, activation_slot } => {
            let (product, activated) =
                forward::matmul_activation(inputs[0], inputs[1], *transpose_a, *transpose_b, *activation)?;
            side.second_output = Some((*activation_slot, activated));
            Some(product)
        }
        StepKind::MaxPoolWithIndices { pool, indices_slot } => {
            let (pooled, indices) = pool.with_indices(inputs[0])?;
            side.second_output = Some((*indices_slot, indices));
            Some(pooled)
        }
        StepKind::StoredByProduct => None,
        StepKind::SumOfSquares => Some(forward::sum_of_squares(inputs[0])?),
        StepKind::ScaledByItem { factor } => Some(forward::scale_by_item(inputs[0], inputs[1], *factor)?),
        StepKind::MaskedGrad { cmp, threshold, keep_when } => {
            Some(forward::mask_grad_threshold(inputs[0], inputs[1], *cmp, *threshold, *keep_when)?)
        }
        StepKind::PassThrough => Some(inputs[0].clone()),
        StepKind::Assign { var, mode } => {
            let new_value = match mode {
                // A fed value may share the caller's numpy memory; a variable must own its value.
                AssignMode::Set if inputs[0].is_external() => forward::copy(inputs[0])?,
                AssignMode::Set => inputs[0].clone(),
                AssignMode::Add | AssignMode::Sub => {
                    // The base is an earlier assign's value when the plan orders this one after it.
                    let start_value;
                    let base = match inputs.get(1) {
                        Some(earlier) => *earlier,
                        None => {
                            start_value = read_var(ctx, plan, *var)?;
                            &start_value
                        }
                    };
                    let op = if *mode == AssignMode::Add { BinaryOp::Add } else { BinaryOp::Sub };
                    forward(&Op::Binary(op), &[base, inputs[0]])?
                }
            };
            side.assigns.push((*var, new_value.clone()));
            Some(new_value)
        }
        StepKind::ApplyAdam { vars } => Some(apply_adam(*vars, inputs, &step.name, side)?),
        StepKind::NoValue => None,
        StepKind::Debug(op) => op.run(step.node, inputs, ctx.print_counts)?,
        StepKind::Cond(cond) => {
            super::control_flow::run_cond(cond, ctx, inputs, side)?;
            None
        }
        StepKind::While(lp) => {
            super::control_flow::run_while(lp, ctx, inputs, side)?;
            None
        }
    })
}

/// Runs an `ApplyAdam` step (inputs var, m, v, the six scalars, grad): hands on the
/// new var, m and v as assignments and returns the new var.
fn apply_adam(vars: AdamVars, inputs: &[&Tensor], name: &str, side: &mut SideOutputs) -> Result<Tensor> {
    let &[var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad] = inputs else {
        return Err(Error::InvalidArgument(format!("internal: {name} has {} inputs, not 10", inputs.len())));
    };
    let scalar = |t: &Tensor, what: &str| match t.to_f64_vec()[..] {
        [x] => Ok(x),
        _ => Err(Error::InvalidArgument(format!(
            "{what} is not a scalar: {} in ApplyAdam '{name}'",
            crate::shape::fmt_shape(t.shape())
        ))),
    };
    let scalars = forward::optim::TfAdamScalars {
        beta1_power: scalar(beta1_power, "beta1_power")?,
        beta2_power: scalar(beta2_power, "beta2_power")?,
        lr: scalar(lr, "lr")?,
        beta1: scalar(beta1, "beta1")?,
        beta2: scalar(beta2, "beta2")?,
        epsilon: scalar(epsilon, "epsilon")?,
    };
    let (new_var, new_m, new_v) = forward::optim::tf_apply_adam(var, m, v, grad, &scalars)?;
    side.assigns.extend([(vars.var, new_var.clone()), (vars.m, new_m), (vars.v, new_v)]);
    Ok(new_var)
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
