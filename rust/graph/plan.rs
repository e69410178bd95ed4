//! Compiling a run: prune the graph to what the fetches need, order it, and
//! decide when each intermediate value can be dropped. A plan holds everything
//! it needs (ops, constants), so running it never touches the graph.

use super::apply_adam::AdamVars;
use super::commit_phase::{mark_fetched_updates, mark_in_place_updates, move_to_end};
use super::control::order_reads;
use super::fusion::{find_fusions, EnabledFusions};
use super::memory_plan::{plan_buffers, plan_releases};
use super::{fmt_partial, AssignMode, FrameId, Graph, NodeId, NodeKind, VarId, ROOT};
use crate::buffer_pool::Kept;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::elementwise::CmpOp;
use crate::kernels::matmul::SecondOutput;
use crate::op::Op;
use crate::random::Sampler;
use crate::tensor::Tensor;
use std::collections::HashSet;
use std::sync::Arc;

#[derive(Clone)]
pub enum StepKind {
    /// The value of feed number `usize` of the run.
    Fed(usize),
    Constant(Tensor),
    ReadVar(VarId),
    Random {
        sampler: Sampler,
        seed: Option<u64>,
        dtype: DType,
    },
    Op(Op),
    /// Fused `w - lr·op(a)·op(b)` (inputs w, a, b): an SGD update computed by one
    /// matrix product that accumulates into a copy of w, instead of three passes.
    MatMulUpdate {
        alpha: f64,
        transpose_a: bool,
        transpose_b: bool,
        /// The assign of this value is fetched: the same pass also stores a second
        /// copy, which the caller gets (the variable keeps the first).
        copy_for_fetch: bool,
        /// Set when w is this variable's value and the update's only use is to assign
        /// it back: the step runs in the commit phase, into the variable's own memory
        /// when nothing else holds that memory.
        in_place_of: Option<VarId>,
    },
    /// Fused `where(cmp(x, threshold), g, 0)` (inputs g, x), or with the branches
    /// swapped when `!keep_when`: the backward mask of maximum/minimum against a
    /// constant (relu written as `maximum(h, 0)`), in one pass and without the
    /// bool mask and the tensor of zeros.
    MaskedGrad {
        cmp: CmpOp,
        threshold: f64,
        keep_when: bool,
    },
    /// Fused `matmul(a, b)` followed by `maximum(·, c)` or `relu` (inputs a, b): the
    /// product's kernel also stores the activation, into the slot of the step
    /// `activation_slot` (a `StoredByProduct` step), so no pass reads the product again.
    MatMulActivation {
        transpose_a: bool,
        transpose_b: bool,
        activation: SecondOutput,
        activation_slot: usize,
    },
    /// Fused `max_pool2d(x)` and `max_pool2d_indices(x)` of the same arguments (input x):
    /// the pooling's pass also stores the indices its gradient reads, into the slot of
    /// the step `indices_slot` (a `StoredByProduct` step), so no pass searches x again.
    MaxPoolWithIndices {
        pool: crate::ops::pool::MaxPool2d,
        indices_slot: usize,
    },
    /// The second output of a `MatMulActivation` or `MaxPoolWithIndices` step, already
    /// stored by it.
    StoredByProduct,
    /// Fused `sum(d ** 2)` over all elements (input d), without storing the squares.
    SumOfSquares,
    /// Fused `expand_reduced(g, d ** 2) · (2·d)`, the gradient of `sum(d ** 2)` for a
    /// one-element `g` (inputs g, d), as `d · (factor·g)` in one pass; `factor` is 2,
    /// or -2 when the `neg` that follows (the rule of `y - d`) is fused too.
    ScaledByItem {
        factor: f64,
    },
    /// The value of the single input, unchanged (identity, function outputs).
    PassThrough,
    Assign {
        var: VarId,
        mode: AssignMode,
    },
    /// TF1's fused Adam step (inputs: var, m, v, the six scalars, grad): its value is var's
    /// new value, and it assigns var, m and v.
    ApplyAdam {
        vars: AdamVars,
    },
    /// Groups and function calls: run for their inputs, no value of their own.
    NoValue,
    /// `Print`, `Assert`, `CheckNumerics`: read their inputs (see `debug_ops`).
    Debug(super::debug_ops::DebugOp),
    /// Runs one branch's sub-plan (inputs: the predicate or index, then the captures).
    Cond(Arc<CondPlan>),
    /// Runs a loop's cond and body sub-plans (inputs: the initial values, the captures,
    /// and the maximum number of iterations).
    While(Arc<LoopPlan>),
}

/// A frame compiled on its own: `Fed(k)` steps read entry k of the owner's step (the
/// frame's args, then the owner's captures), and `outputs` are the frame's outputs' steps.
pub struct SubPlan {
    pub plan: Plan,
    pub outputs: Vec<usize>,
}

pub struct CondPlan {
    pub branches: Vec<SubPlan>,
    /// For each output of the Cond, the step of its `Unpack` in the enclosing plan (None: pruned).
    pub out_slots: Vec<Option<usize>>,
    /// For each branch, its exports a gradient in this plan reads: (step in the branch's
    /// sub-plan, slot of the export's `Unpack`).
    pub exports: Vec<Vec<(usize, usize)>>,
    /// Every such export's slot and dtype: the branches that do not compute it give an empty value.
    pub export_slots: Vec<(usize, crate::dtype::DType)>,
}

pub struct LoopPlan {
    pub cond: SubPlan,
    pub body: SubPlan,
    pub vars: usize,
    /// How many captures follow the variables among the step's inputs.
    pub captures: usize,
    pub max_iterations: bool,
    /// For each loop variable, the step of its `Unpack` in the enclosing plan (None: pruned).
    pub out_slots: Vec<Option<usize>>,
    /// The step of the trip count's `Unpack` (None: pruned).
    pub trip_slot: Option<usize>,
    /// The stacks a gradient of this loop reads (see `while_gradients`).
    pub stacks: Vec<StackPlan>,
}

/// One value of the body kept per iteration and stacked along a new first dim.
pub struct StackPlan {
    /// The body sub-plan's step holding the value.
    pub step: usize,
    /// The step of the stack's `Unpack` in the enclosing plan.
    pub slot: usize,
    /// For a loop that ran no iteration: the empty stack's dtype and shape (unknown dims 0).
    pub dtype: crate::dtype::DType,
    pub empty_shape: Vec<usize>,
}

#[derive(Clone)]
pub struct Step {
    pub node: NodeId,
    pub name: String,
    pub kind: StepKind,
    /// Indices of the steps whose values this step reads.
    pub inputs: Vec<usize>,
    /// Values no later step reads (and nobody fetched): dropped after this step.
    pub release: Vec<usize>,
    /// The buffer of the plan's memory plan that this step's output uses.
    pub buffer: Option<usize>,
}

impl StepKind {
    /// The step whose value this fused step also stores (see `StoredByProduct`).
    pub fn second_output_slot(&self) -> Option<usize> {
        match self {
            StepKind::MatMulActivation { activation_slot: slot, .. }
            | StepKind::MaxPoolWithIndices { indices_slot: slot, .. } => Some(*slot),
            _ => None,
        }
    }

    fn second_output_slot_mut(&mut self) -> Option<&mut usize> {
        match self {
            StepKind::MatMulActivation { activation_slot: slot, .. }
            | StepKind::MaxPoolWithIndices { indices_slot: slot, .. } => Some(slot),
            _ => None,
        }
    }
}

impl StepKind {
    /// Renumbers every step of the enclosing plan this step stores a value into: a fused
    /// step's second output, and the `Unpack` slots of a Cond's outputs and exports and of a
    /// loop's outputs, trip count and stacks.
    pub(super) fn renumber_slots(&mut self, new_index: impl Fn(usize) -> usize) -> Result<()> {
        let shared = || Error::InvalidArgument("internal: a control-flow plan was shared while being compiled".into());
        match self {
            StepKind::Cond(cond) => {
                let cond = Arc::get_mut(cond).ok_or_else(shared)?;
                cond.out_slots.iter_mut().flatten().for_each(|slot| *slot = new_index(*slot));
                cond.exports.iter_mut().flatten().for_each(|(_, slot)| *slot = new_index(*slot));
                cond.export_slots.iter_mut().for_each(|(slot, _)| *slot = new_index(*slot));
            }
            StepKind::While(lp) => {
                let lp = Arc::get_mut(lp).ok_or_else(shared)?;
                lp.out_slots.iter_mut().flatten().for_each(|slot| *slot = new_index(*slot));
                lp.trip_slot.iter_mut().for_each(|slot| *slot = new_index(*slot));
                lp.stacks.iter_mut().for_each(|stack| stack.slot = new_index(stack.slot));
            }
            kind => {
                if let Some(slot) = kind.second_output_slot_mut() {
                    *slot = new_index(*slot);
                }
            }
        }
        Ok(())
    }
}

impl Step {
    /// For `var.assign(value)`, the step computing `value`.
    pub fn assigned_value(&self) -> Option<usize> {
        match (&self.kind, self.inputs.as_slice()) {
            (StepKind::Assign { mode: AssignMode::Set, .. }, &[value]) => Some(value),
            _ => None,
        }
    }

    /// The op type shown in traces.
    pub fn kind_name(&self) -> String {
        match &self.kind {
            StepKind::Fed(_) => "Feed".into(),
            StepKind::Constant(_) => "Const".into(),
            StepKind::ReadVar(_) => "ReadVariable".into(),
            StepKind::Random { .. } => "Random".into(),
            StepKind::Op(op) => op.name(),
            StepKind::MatMulUpdate { .. } => "fused_sgd_update".into(),
            StepKind::MaskedGrad { .. } => "fused_masked_grad".into(),
            StepKind::MatMulActivation { activation: SecondOutput::Relu, .. } => "fused_mm_relu".into(),
            StepKind::MatMulActivation { .. } => "fused_mm_maximum".into(),
            StepKind::MaxPoolWithIndices { .. } => "fused_max_pool_with_indices".into(),
            StepKind::StoredByProduct => "StoredByProduct".into(),
            StepKind::SumOfSquares => "fused_sum_of_squares".into(),
            StepKind::ScaledByItem { .. } => "fused_squared_error_grad".into(),
            StepKind::PassThrough => "Identity".into(),
            StepKind::Assign { .. } => "Assign".into(),
            StepKind::ApplyAdam { .. } => "ApplyAdam".into(),
            StepKind::NoValue => "NoOp".into(),
            StepKind::Debug(op) => op.type_name().into(),
            StepKind::Cond(_) => "If".into(),
            StepKind::While(_) => "While".into(),
        }
    }
}

/// What a plan keeps from one run to the next.
#[derive(Default)]
pub struct RunState {
    pub values: Vec<Option<Tensor>>,
    /// The memory plan's buffers that no value holds now, by buffer.
    pub buffers: Vec<Option<Kept>>,
    /// Emptied tensor headers of released values, for new outputs to reuse.
    pub shells: Vec<Tensor>,
}

pub struct Plan {
    pub steps: Vec<Step>,
    /// For each fetch, the step holding its value (None for ops without a value).
    pub fetch_steps: Vec<(usize, bool)>,
    pub variable_names: Vec<String>,
    /// Whether any step draws seeded random numbers (whose draw counts a run updates).
    pub draws_random: bool,
    /// The per-step value slots and the memory plan's buffers, kept between runs:
    /// a run of a cached plan takes them (another run at the same time makes its own).
    pub run_state: parking_lot::Mutex<RunState>,
    /// How many buffers the memory plan uses.
    pub buffer_count: usize,
    /// Steps from this index on form the commit phase: updates that may write into
    /// their variable's memory, and their assigns. They run after every other step,
    /// with the session's variables locked.
    pub commit_from: usize,
    /// The variables this plan assigns with `use_locking`, in increasing order: a
    /// run holds their locks from before it reads the variables until it has
    /// stored its assignments.
    pub locked_variables: Vec<VarId>,
}

/// The nodes a run of `fetches` runs (their inputs and control inputs, except those of fed nodes), in increasing order.
/// In a frame, control inputs from frames around it are left out: they ran before the owner.
fn needed_nodes(graph: &Graph, frame: FrameId, fetches: &[NodeId], fed: &HashSet<NodeId>) -> Result<Vec<NodeId>> {
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeId> = fetches.to_vec();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if !fed.contains(&id) {
            let node = graph.node(id)?;
            if node.frame != frame {
                return Err(outside_frame(graph, id, frame));
            }
            stack.extend(node.inputs.iter().copied());
            stack.extend(node.control_inputs.iter().copied().filter(|&c| graph.nodes[c].frame == frame));
        }
    }
    let mut order: Vec<NodeId> = seen.into_iter().collect();
    order.sort_unstable();
    Ok(order)
}

fn missing_feed(graph: &Graph, id: NodeId) -> Error {
    let node = &graph.nodes[id];
    Error::InvalidArgument(format!(
        "You must feed a value for placeholder tensor '{}' with dtype {} and shape {}",
        node.name,
        node.dtype.name(),
        fmt_partial(&node.shape)
    ))
}

/// A node of another frame reached from `frame`'s fetches: a fetch inside a loop or branch.
fn outside_frame(graph: &Graph, id: NodeId, frame: FrameId) -> Error {
    let name = &graph.nodes[id].name;
    if frame == ROOT {
        Error::InvalidArgument(format!(
            "'{name}:0' is inside a cond branch or while loop and cannot be fetched; return it from the branch \
             or body and fetch the cond's or while_loop's output"
        ))
    } else {
        Error::InvalidArgument(format!("internal: '{name}' is in another frame than the sub-plan compiled"))
    }
}

pub fn compile(graph: &Graph, fetches: &[NodeId], feeds: &[NodeId]) -> Result<Plan> {
    compile_scope(graph, ROOT, fetches, feeds)
}

/// Compiles a frame: its outputs, with its args and then `captures` as entries.
fn compile_frame(graph: &Graph, frame: FrameId, captures: &[NodeId]) -> Result<SubPlan> {
    let f = graph.frame(frame)?;
    let entries: Vec<NodeId> = f.args.iter().chain(captures).copied().collect();
    let plan = compile_scope(graph, frame, &f.outputs, &entries)?;
    let outputs = plan.fetch_steps.iter().map(|&(s, _)| s).collect();
    Ok(SubPlan { plan, outputs })
}

/// Compiles a loop body or branch whose `kept` nodes (with their `Unpack`s' slots) are also
/// fetched; returns it and the steps of those nodes.
fn compile_body(
    graph: &Graph,
    frame: FrameId,
    captures: &[NodeId],
    kept: &[(NodeId, usize)],
) -> Result<(SubPlan, Vec<usize>)> {
    let f = graph.frame(frame)?;
    let entries: Vec<NodeId> = f.args.iter().chain(captures).copied().collect();
    let fetches: Vec<NodeId> = f.outputs.iter().copied().chain(kept.iter().map(|&(n, _)| n)).collect();
    let plan = compile_scope(graph, frame, &fetches, &entries)?;
    let mut outputs: Vec<usize> = plan.fetch_steps.iter().map(|&(s, _)| s).collect();
    let kept_steps = outputs.split_off(f.outputs.len());
    Ok((SubPlan { plan, outputs }, kept_steps))
}

fn stack_plan(graph: &Graph, node: NodeId, slot: usize, step: usize) -> StackPlan {
    let node = &graph.nodes[node];
    let empty_shape = node.shape.as_ref().map_or(vec![], |dims| dims.iter().map(|d| d.unwrap_or(0)).collect());
    StackPlan { step, slot, dtype: node.dtype, empty_shape }
}

/// The steps of the `Unpack`s of `owner` among `order` (positions), by output index.
fn unpack_slots(graph: &Graph, order: &[NodeId], owner: NodeId, outputs: usize) -> Vec<Option<usize>> {
    let mut slots = vec![None; outputs];
    for (position, &id) in order.iter().enumerate().skip_while(|&(_, &id)| id <= owner) {
        match graph.nodes[id].kind {
            NodeKind::Unpack { index, .. } if graph.nodes[id].inputs[0] == owner && index < outputs => {
                slots[index] = Some(position);
            }
            _ => {}
        }
    }
    slots
}

/// The step of a Cond or While node, with its frames compiled.
fn control_flow_step(graph: &Graph, order: &[NodeId], id: NodeId) -> Result<StepKind> {
    let node = &graph.nodes[id];
    Ok(match &node.kind {
        NodeKind::Cond { branches, outputs, exports } => {
            let captures = &node.inputs[1..];
            let mut out_slots = unpack_slots(graph, order, id, *outputs + exports.len());
            let read: Vec<(NodeId, usize)> = exports
                .iter()
                .zip(out_slots.split_off(*outputs))
                .filter_map(|(&n, slot)| slot.map(|s| (n, s)))
                .collect();
            let (mut plans, mut kept) = (Vec::with_capacity(branches.len()), Vec::with_capacity(branches.len()));
            for &b in branches {
                let mine: Vec<(NodeId, usize)> =
                    read.iter().copied().filter(|&(n, _)| graph.nodes[n].frame == b).collect();
                let (plan, steps) = compile_body(graph, b, captures, &mine)?;
                plans.push(plan);
                kept.push(steps.into_iter().zip(mine.iter().map(|&(_, slot)| slot)).collect());
            }
            let export_slots = read.iter().map(|&(n, slot)| (slot, graph.nodes[n].dtype)).collect();
            StepKind::Cond(Arc::new(CondPlan { branches: plans, out_slots, exports: kept, export_slots }))
        }
        NodeKind::While { cond, body, vars, max_iterations, .. } => {
            let captures = &node.inputs[*vars..node.inputs.len() - *max_iterations as usize];
            let stacked = &graph.frame(*body)?.stacked;
            let mut slots = unpack_slots(graph, order, id, *vars + 1 + stacked.len());
            let stack_slots = slots.split_off(*vars + 1);
            let trip_slot = slots.pop().flatten();
            // Only the values a gradient in this plan reads are kept.
            let kept: Vec<(NodeId, usize)> =
                stacked.iter().zip(stack_slots).filter_map(|(&n, slot)| slot.map(|s| (n, s))).collect();
            let (body, steps) = compile_body(graph, *body, captures, &kept)?;
            let stacks = kept.iter().zip(steps).map(|(&(n, slot), step)| stack_plan(graph, n, slot, step)).collect();
            StepKind::While(Arc::new(LoopPlan {
                cond: compile_frame(graph, *cond, captures)?,
                body,
                vars: *vars,
                captures: captures.len(),
                max_iterations: *max_iterations,
                out_slots: slots,
                trip_slot,
                stacks,
            }))
        }
        _ => return Err(Error::InvalidArgument(format!("internal: {} is no Cond or While", node.name))),
    })
}

/// Compiles the fetches of `frame` (the root, or a branch or loop frame, whose plans
/// use no fusions, no commit phase and no memory plan), with `feeds` as entries.
fn compile_scope(graph: &Graph, frame: FrameId, fetches: &[NodeId], feeds: &[NodeId]) -> Result<Plan> {
    let fed: HashSet<NodeId> = feeds.iter().copied().collect();
    let mut order = needed_nodes(graph, frame, fetches, &fed)?;
    let locked_variables = locked_variables(graph, &order, &fed);
    let enabled = if frame == ROOT { EnabledFusions::from_env() } else { EnabledFusions::none() };
    let reads = order_reads(graph, &order, &fed)?;
    let mut fusions = find_fusions(graph, &order, fetches, &fed, &enabled);
    // The patterns match the graph's own inputs: none applies once control edges change reads.
    if !reads.is_empty() {
        fusions.clear();
    }
    let mut absorbed: HashSet<NodeId> = fusions.values().flat_map(|f| f.absorbed.iter().copied()).collect();
    // A safety net over the patterns: a fused step must not read (or be) a node
    // another fusion absorbed. Should patterns ever overlap so, nothing is fused.
    let overlap = fusions.iter().any(|(id, f)| absorbed.contains(id) || f.inputs.iter().any(|i| absorbed.contains(i)));
    if overlap {
        fusions.clear();
        absorbed.clear();
    }
    order.retain(|id| !absorbed.contains(id));
    let position = |id: NodeId| order.binary_search(&id).ok();
    let mut steps = Vec::with_capacity(order.len());
    for &id in &order {
        let node = graph.node(id)?;
        let kind = if let Some(k) = feeds.iter().position(|&f| f == id) {
            StepKind::Fed(k)
        } else {
            match &node.kind {
                NodeKind::Placeholder => return Err(missing_feed(graph, id)),
                NodeKind::Constant(t) => StepKind::Constant(t.clone()),
                NodeKind::VariableRead(v) => StepKind::ReadVar(*v),
                NodeKind::Random { sampler, seed } => {
                    StepKind::Random { sampler: sampler.clone(), seed: *seed, dtype: node.dtype }
                }
                NodeKind::Op(Op::Copy | Op::StopGradient) => StepKind::PassThrough,
                NodeKind::Op(op) => StepKind::Op(op.clone()),
                NodeKind::Assign { var, mode, .. } => StepKind::Assign { var: *var, mode: *mode },
                NodeKind::ApplyAdam { vars, .. } => StepKind::ApplyAdam { vars: *vars },
                NodeKind::Group | NodeKind::FunctionCall { .. } => StepKind::NoValue,
                NodeKind::FunctionOutput { .. } => StepKind::PassThrough,
                NodeKind::Debug(op) => StepKind::Debug(op.clone()),
                NodeKind::Cond { .. } | NodeKind::While { .. } => control_flow_step(graph, &order, id)?,
                NodeKind::Unpack { .. } => StepKind::StoredByProduct,
                NodeKind::FrameArg { .. } => {
                    return Err(Error::InvalidArgument(format!("internal: the loop variable {} is not fed", node.name)))
                }
            }
        };
        let (mut kind, fused_inputs) = match fusions.get(&id) {
            Some(f) => (f.kind.clone(), Some(f.inputs.as_slice())),
            None => (kind, None),
        };
        if let Some(slot) = kind.second_output_slot_mut() {
            *slot = position(*slot).ok_or_else(|| {
                Error::InvalidArgument(format!("internal: the second output of {} was pruned", node.name))
            })?;
        }
        let ordered_inputs;
        let node_inputs = if reads.is_empty() {
            &node.inputs
        } else {
            ordered_inputs = reads.inputs_of(graph, id);
            &ordered_inputs
        };
        let input_nodes: &[NodeId] = match (&kind, &node.kind) {
            _ if fused_inputs.is_some() => fused_inputs.unwrap_or_default(),
            (StepKind::Fed(_), _) | (_, NodeKind::Unpack { .. }) => &[],
            (_, NodeKind::FunctionOutput { .. }) => &node_inputs[1..],
            _ => node_inputs,
        };
        let inputs = input_nodes
            .iter()
            .map(|&i| {
                position(i)
                    .ok_or_else(|| Error::InvalidArgument(format!("internal: input {i} of {} was pruned", node.name)))
            })
            .collect::<Result<Vec<_>>>()?;
        steps.push(Step { node: id, name: node.name.clone(), kind, inputs, release: vec![], buffer: None });
    }
    let mut fetch_steps: Vec<(usize, bool)> = fetches
        .iter()
        .map(|&f| {
            let step = position(f).ok_or_else(|| Error::InvalidArgument(format!("internal: fetch {f} was pruned")))?;
            Ok((step, graph.nodes[f].kind.has_value()))
        })
        .collect::<Result<_>>()?;
    mark_fetched_updates(&mut steps, &fetch_steps, &enabled);
    let deferred = if enabled.allows("in_place") { mark_in_place_updates(&mut steps) } else { vec![] };
    let commit_from = steps.len() - deferred.len();
    let mut steps = move_to_end(steps, &deferred, &mut fetch_steps)?;
    plan_releases(&mut steps, &fetch_steps);
    let buffer_count = if enabled.allows("memory_plan") { plan_buffers(graph, &mut steps) } else { 0 };
    let draws_random = steps.iter().any(|s| matches!(s.kind, StepKind::Random { seed: Some(_), .. }));
    Ok(Plan {
        steps,
        fetch_steps,
        variable_names: graph.variables.iter().map(|v| v.name.clone()).collect(),
        draws_random,
        run_state: parking_lot::Mutex::new(RunState::default()),
        buffer_count,
        commit_from,
        locked_variables,
    })
}

/// The variables that the (not fed) assigns with `use_locking` among `nodes` update, sorted.
fn locked_variables(graph: &Graph, nodes: &[NodeId], fed: &HashSet<NodeId>) -> Vec<VarId> {
    let mut vars: Vec<VarId> = nodes
        .iter()
        .filter(|id| !fed.contains(id))
        .flat_map(|&id| match graph.nodes[id].kind {
            NodeKind::Assign { var, locking: true, .. } => vec![var],
            NodeKind::ApplyAdam { vars, locking: true } => vars.all().to_vec(),
            _ => vec![],
        })
        .collect();
    vars.sort_unstable();
    vars.dedup();
    vars
}
