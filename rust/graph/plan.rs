//! Compiling a run: prune the graph to what the fetches need, order it, and
//! decide when each intermediate value can be dropped. A plan holds everything
//! it needs (ops, constants), so running it never touches the graph.

use super::{fmt_partial, AssignMode, Graph, NodeId, NodeKind, VarId};
use crate::buffer_pool::Kept;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::kernels::matmul::SecondOutput;
use crate::op::Op;
use crate::random::Sampler;
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

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
    /// The activation of a `MatMulActivation` step, already stored by it.
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
    /// Groups and function calls: run for their inputs, no value of their own.
    NoValue,
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
            StepKind::StoredByProduct => "StoredByProduct".into(),
            StepKind::SumOfSquares => "fused_sum_of_squares".into(),
            StepKind::ScaledByItem { .. } => "fused_squared_error_grad".into(),
            StepKind::PassThrough => "Identity".into(),
            StepKind::Assign { .. } => "Assign".into(),
            StepKind::NoValue => "NoOp".into(),
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

fn needed_nodes(graph: &Graph, fetches: &[NodeId], fed: &HashSet<NodeId>) -> Result<Vec<NodeId>> {
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeId> = fetches.to_vec();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if !fed.contains(&id) {
            stack.extend(graph.node(id)?.inputs.iter().copied());
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

/// A fused step found in the graph: the node it replaces, its inputs, and the
/// nodes it computes along the way (which then get no step of their own).
struct Fusion {
    kind: StepKind,
    inputs: Vec<NodeId>,
    absorbed: Vec<NodeId>,
}

/// What the fusion patterns look at: each node's op, its readers, and how many
/// uses it has (its readers, plus one when it is fetched).
struct FusionView<'a> {
    graph: &'a Graph,
    fed: &'a HashSet<NodeId>,
    consumers: HashMap<NodeId, usize>,
    readers: HashMap<NodeId, Vec<NodeId>>,
}

impl FusionView<'_> {
    fn op_of(&self, id: NodeId) -> Option<&Op> {
        match &self.graph.nodes[id].kind {
            NodeKind::Op(op) if !self.fed.contains(&id) => Some(op),
            _ => None,
        }
    }

    fn sole_use(&self, id: NodeId) -> bool {
        self.uses(id) == 1
    }

    fn uses(&self, id: NodeId) -> usize {
        self.consumers.get(&id).copied().unwrap_or(0)
    }

    fn readers(&self, id: NodeId) -> &[NodeId] {
        self.readers.get(&id).map_or(&[], Vec::as_slice)
    }

    fn inputs(&self, id: NodeId) -> &[NodeId] {
        &self.graph.nodes[id].inputs
    }

    /// The value of a one-element constant that no feed replaces.
    fn scalar_constant(&self, id: NodeId) -> Option<f64> {
        match &self.graph.nodes[id].kind {
            NodeKind::Constant(t) if !self.fed.contains(&id) && t.numel() == 1 => Some(t.to_f64_vec()[0]),
            _ => None,
        }
    }
}

/// The fusions a plan may use. `RUSTGRAD_DISABLE_FUSION` turns them off, to
/// measure what each brings: a comma-separated list of `update`, `fetch_copy`,
/// `in_place`, `mask`, `activation`, `squared_error` and `memory_plan` turns those off; any other value
/// (`1`, `all`, or a word it does not know) turns all of them off.
struct EnabledFusions {
    disabled: Option<Vec<String>>,
}

const FUSION_NAMES: [&str; 7] =
    ["update", "fetch_copy", "in_place", "mask", "activation", "squared_error", "memory_plan"];

impl EnabledFusions {
    fn from_env() -> EnabledFusions {
        let disabled = std::env::var_os("RUSTGRAD_DISABLE_FUSION").map(|value| {
            let value = value.to_string_lossy();
            let names: Vec<String> = value.split(',').map(|n| n.trim().to_string()).collect();
            if names.iter().all(|n| FUSION_NAMES.contains(&n.as_str())) {
                names
            } else {
                FUSION_NAMES.iter().map(|n| n.to_string()).collect()
            }
        });
        EnabledFusions { disabled }
    }

    fn allows(&self, name: &str) -> bool {
        self.disabled.as_ref().is_none_or(|off| !off.iter().any(|n| n == name))
    }
}

fn find_fusions(
    graph: &Graph,
    order: &[NodeId],
    fetches: &[NodeId],
    fed: &HashSet<NodeId>,
    enabled: &EnabledFusions,
) -> HashMap<NodeId, Fusion> {
    let mut consumers: HashMap<NodeId, usize> = HashMap::new();
    let mut readers: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    for &id in order.iter().filter(|id| !fed.contains(id)) {
        for &input in &graph.nodes[id].inputs {
            *consumers.entry(input).or_insert(0) += 1;
            readers.entry(input).or_default().push(id);
        }
    }
    for &f in fetches {
        *consumers.entry(f).or_insert(0) += 1;
    }
    let view = FusionView { graph, fed, consumers, readers };
    let enabled = |name: &str| enabled.allows(name);
    let mut fusions: HashMap<NodeId, Fusion> = order
        .iter()
        .filter_map(|&id| {
            let update = enabled("update").then(|| update_fusion(&view, id)).flatten();
            Some((id, update.or_else(|| enabled("mask").then(|| masked_grad_fusion(&view, id)).flatten())?))
        })
        .collect();
    for &id in order.iter().filter(|_| enabled("activation")) {
        if let Some((product, fused_product, stored)) = activation_fusion(&view, id) {
            insert_group(&mut fusions, vec![(product, fused_product), (id, stored)]);
        }
    }
    for &id in order.iter().filter(|_| enabled("squared_error")) {
        insert_group(&mut fusions, squared_error_fusions(&view, id));
    }
    fusions
}

/// Adds fusions that only make sense together, unless one of their nodes (replaced
/// or absorbed) already belongs to an earlier fusion.
fn insert_group(fusions: &mut HashMap<NodeId, Fusion>, group: Vec<(NodeId, Fusion)>) {
    let taken = |id: &NodeId| fusions.contains_key(id);
    if group.iter().all(|(at, f)| !taken(at) && !f.absorbed.iter().any(taken)) {
        fusions.extend(group);
    }
}

/// `sum(d ** 2)` over all elements, and each gradient `tf.gradients` built for it,
/// `expand_reduced(g, d ** 2) · (2·d)` (with the `neg` after it, when that is its
/// only reader): the loss is summed straight from `d`, and each gradient is one
/// scaled pass over `d`. The squares, the expanded gradient and `2·d` are not stored.
fn squared_error_fusions(view: &FusionView<'_>, loss: NodeId) -> Vec<(NodeId, Fusion)> {
    let graph = view.graph;
    let (Some(Op::Sum { dims: None, keepdim: false }), &[squares]) = (view.op_of(loss), view.inputs(loss)) else {
        return vec![];
    };
    let (Some(&Op::Scalar(ScalarOp::Pow, power)), &[d]) = (view.op_of(squares), view.inputs(squares)) else {
        return vec![];
    };
    let dtype = graph.nodes[d].dtype;
    if power.as_f64() != 2.0
        || !dtype.is_float()
        || graph.nodes[loss].dtype != dtype
        || graph.nodes[squares].dtype != dtype
    {
        return vec![];
    }
    let mut expands = view.readers(squares).to_vec();
    expands.sort_unstable();
    expands.dedup();
    let mut fusions: Vec<(NodeId, Fusion)> =
        expands.into_iter().filter_map(|expand| squared_error_gradient(view, expand, squares, d)).collect();
    // The squares are not computed at all when every reader of them is fused.
    let absorbed = if view.uses(squares) == 1 + fusions.len() { vec![squares] } else { vec![] };
    fusions.push((loss, Fusion { kind: StepKind::SumOfSquares, inputs: vec![d], absorbed }));
    fusions
}

fn squared_error_gradient(
    view: &FusionView<'_>,
    expand: NodeId,
    squares: NodeId,
    d: NodeId,
) -> Option<(NodeId, Fusion)> {
    let graph = view.graph;
    let Some(Op::ExpandReduced { dims: None, keepdim: false, mean: false }) = view.op_of(expand) else { return None };
    let &[g, like] = view.inputs(expand) else { return None };
    let scalar_g =
        graph.nodes[g].shape.as_ref().is_some_and(Vec::is_empty) && graph.nodes[g].dtype == graph.nodes[d].dtype;
    if like != squares || g == squares || !scalar_g || !view.sole_use(expand) {
        return None;
    }
    let &[product] = view.readers(expand) else { return None };
    let (Some(Op::Binary(BinaryOp::Mul)), &[p, q]) = (view.op_of(product), view.inputs(product)) else { return None };
    let twice = if p == expand { q } else { p };
    let doubles_d = matches!(view.op_of(twice), Some(&Op::Scalar(ScalarOp::Mul, c)) if c.as_f64() == 2.0)
        && view.inputs(twice) == [d];
    if !doubles_d || (p != expand && q != expand) || graph.nodes[product].dtype != graph.nodes[d].dtype {
        return None;
    }
    let mut absorbed = vec![expand];
    absorbed.extend([twice].into_iter().filter(|&t| view.sole_use(t)));
    if let &[neg] = view.readers(product) {
        if view.sole_use(product) && matches!(view.op_of(neg), Some(Op::Unary(UnaryOp::Neg))) {
            absorbed.push(product);
            let fusion = Fusion { kind: StepKind::ScaledByItem { factor: -2.0 }, inputs: vec![g, d], absorbed };
            return Some((neg, fusion));
        }
    }
    Some((product, Fusion { kind: StepKind::ScaledByItem { factor: 2.0 }, inputs: vec![g, d], absorbed }))
}

/// `maximum(matmul(a, b), c)` for a one-element constant `c`, or `relu(matmul(a, b))`:
/// the product's step also stores the activation. Returns the product node and the
/// fusions that replace its step and the activation's.
fn activation_fusion(view: &FusionView<'_>, id: NodeId) -> Option<(NodeId, Fusion, Fusion)> {
    let graph = view.graph;
    let node = &graph.nodes[id];
    let (activation, product, absorbed) = match (view.op_of(id)?, node.inputs.as_slice()) {
        (Op::Unary(UnaryOp::Relu), &[p]) => (SecondOutput::Relu, p, vec![]),
        (Op::Binary(BinaryOp::Maximum), &[p, c]) => {
            let value = view.scalar_constant(c).filter(|v| !v.is_nan())?;
            let c_rank = graph.nodes[c].shape.as_ref().map(Vec::len)?;
            if c_rank > 2 || graph.nodes[c].dtype != node.dtype {
                return None;
            }
            (SecondOutput::AtLeast(value), p, [c].into_iter().filter(|&c| view.sole_use(c)).collect())
        }
        _ => return None,
    };
    let &Op::MatMul { transpose_a, transpose_b } = view.op_of(product)? else { return None };
    if graph.nodes[product].dtype != node.dtype || !node.dtype.is_float() {
        return None;
    }
    // The activation's slot is the node id until `compile` turns it into a step index.
    let kind = StepKind::MatMulActivation { transpose_a, transpose_b, activation, activation_slot: id };
    let fused_product = Fusion { kind, inputs: graph.nodes[product].inputs.clone(), absorbed: vec![] };
    let stored = Fusion { kind: StepKind::StoredByProduct, inputs: vec![product], absorbed };
    Some((product, fused_product, stored))
}

/// `where(cmp(x, c), g, zeros_like(g))` (or with g and the zeros swapped) for a
/// one-element constant `c`: the gradient rule of maximum/minimum against a constant.
fn masked_grad_fusion(view: &FusionView<'_>, id: NodeId) -> Option<Fusion> {
    let graph = view.graph;
    let (Some(Op::Where), [cond, on_true, on_false]) = (view.op_of(id), graph.nodes[id].inputs.as_slice()) else {
        return None;
    };
    let Some(&Op::Compare(cmp)) = view.op_of(*cond) else { return None };
    let [x, c] = graph.nodes[*cond].inputs[..] else { return None };
    let threshold = view.scalar_constant(c)?;
    let zeros_of = |z: NodeId, g: NodeId| {
        matches!(view.op_of(z), Some(&Op::FullLike(v)) if v == 0.0) && graph.nodes[z].inputs == [g]
    };
    let (g, zeros, keep_when) = if zeros_of(*on_false, *on_true) {
        (*on_true, *on_false, true)
    } else if zeros_of(*on_true, *on_false) {
        (*on_false, *on_true, false)
    } else {
        return None;
    };
    // Broadcasting x against a one-element constant of no higher rank leaves x's shape,
    // so the one-pass kernel (which broadcasts g with x) gives the same shape and values.
    let x_rank = graph.nodes[x].shape.as_ref().map(Vec::len)?;
    let c_rank = graph.nodes[c].shape.as_ref().map(Vec::len)?;
    let same_dtype = graph.nodes[x].dtype == graph.nodes[g].dtype && graph.nodes[g].dtype == graph.nodes[id].dtype;
    if c_rank > x_rank || !same_dtype || !graph.nodes[id].dtype.is_float() {
        return None;
    }
    let absorbed = [*cond, zeros].into_iter().filter(|&n| view.sole_use(n)).collect();
    Some(Fusion { kind: StepKind::MaskedGrad { cmp, threshold, keep_when }, inputs: vec![g, x], absorbed })
}

/// `w - c·matmul(a, b)` where the scaled product feeds nothing else.
fn update_fusion(view: &FusionView<'_>, id: NodeId) -> Option<Fusion> {
    let graph = view.graph;
    let (Some(Op::Binary(BinaryOp::Sub)), [w, scaled]) = (view.op_of(id), graph.nodes[id].inputs.as_slice()) else {
        return None;
    };
    let Some(&Op::Scalar(ScalarOp::Mul, c)) = view.op_of(*scaled) else { return None };
    let product = graph.nodes[*scaled].inputs[0];
    let Some(&Op::MatMul { transpose_a, transpose_b }) = view.op_of(product) else { return None };
    // A product of two matrices only (a 2-D product shape means 2-D operands; see infer::matmul).
    let same_shape = graph.nodes[*w].shape.as_ref().is_some_and(|d| d.len() == 2)
        && graph.nodes[*w].shape == graph.nodes[product].shape;
    let same_dtype = graph.nodes[*w].dtype == graph.nodes[product].dtype;
    let fused = view.sole_use(*scaled)
        && view.sole_use(product)
        && same_shape
        && same_dtype
        && graph.nodes[*w].shape.as_ref().is_some_and(|d| d.iter().all(Option::is_some));
    fused.then(|| {
        let mut inputs = vec![*w];
        inputs.extend_from_slice(&graph.nodes[product].inputs);
        let kind = StepKind::MatMulUpdate {
            alpha: -c.as_f64(),
            transpose_a,
            transpose_b,
            copy_for_fetch: false,
            in_place_of: None,
        };
        Fusion { kind, inputs, absorbed: vec![*scaled, product] }
    })
}

pub fn compile(graph: &Graph, fetches: &[NodeId], feeds: &[NodeId]) -> Result<Plan> {
    let fed: HashSet<NodeId> = feeds.iter().copied().collect();
    let mut order = needed_nodes(graph, fetches, &fed)?;
    let locked_variables = locked_variables(graph, &order, &fed);
    let enabled = EnabledFusions::from_env();
    let mut fusions = find_fusions(graph, &order, fetches, &fed, &enabled);
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
                NodeKind::Group | NodeKind::FunctionCall { .. } => StepKind::NoValue,
                NodeKind::FunctionOutput { .. } => StepKind::PassThrough,
            }
        };
        let (mut kind, fused_inputs) = match fusions.get(&id) {
            Some(f) => (f.kind.clone(), Some(f.inputs.as_slice())),
            None => (kind, None),
        };
        if let StepKind::MatMulActivation { activation_slot, .. } = &mut kind {
            *activation_slot = position(*activation_slot).ok_or_else(|| {
                Error::InvalidArgument(format!("internal: the activation of {} was pruned", node.name))
            })?;
        }
        let input_nodes: &[NodeId] = match (&kind, &node.kind) {
            _ if fused_inputs.is_some() => fused_inputs.unwrap_or_default(),
            (StepKind::Fed(_), _) => &[],
            (_, NodeKind::FunctionOutput { .. }) => &node.inputs[1..],
            _ => &node.inputs,
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
    let mut steps = move_to_end(steps, &deferred, &mut fetch_steps);
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
        .filter_map(|&id| match graph.nodes[id].kind {
            NodeKind::Assign { var, locking: true, .. } => Some(var),
            _ => None,
        })
        .collect();
    vars.sort_unstable();
    vars.dedup();
    vars
}

/// Marks the fused updates `v.assign(v - lr·a·b)` that may write into v's memory,
/// and returns their steps with their assigns'. That needs the update's only reader
/// to be the assign, nothing but groups to read the assign, and no other assign of
/// v in the plan (whose order against this one would then change).
fn mark_in_place_updates(steps: &mut [Step]) -> Vec<usize> {
    let mut readers: Vec<Vec<usize>> = vec![vec![]; steps.len()];
    let mut assigns_of: HashMap<VarId, usize> = HashMap::new();
    for (s, step) in steps.iter().enumerate() {
        for &i in &step.inputs {
            readers[i].push(s);
        }
        if let StepKind::Assign { var, .. } = step.kind {
            *assigns_of.entry(var).or_insert(0) += 1;
        }
    }
    let mut deferred = vec![];
    for assign in 0..steps.len() {
        let (StepKind::Assign { var, mode: AssignMode::Set }, &[update]) =
            (&steps[assign].kind, &steps[assign].inputs[..])
        else {
            continue;
        };
        let var = *var;
        let reads_var = |s: usize| matches!(steps[s].kind, StepKind::ReadVar(v) if v == var);
        let is_update_of_var =
            matches!(steps[update].kind, StepKind::MatMulUpdate { .. }) && reads_var(steps[update].inputs[0]);
        let only_groups_read_assign = readers[assign].iter().all(|&r| matches!(steps[r].kind, StepKind::NoValue));
        if is_update_of_var && readers[update] == [assign] && only_groups_read_assign && assigns_of[&var] == 1 {
            if let StepKind::MatMulUpdate { in_place_of, .. } = &mut steps[update].kind {
                *in_place_of = Some(var);
            }
            deferred.extend([update, assign]);
        }
    }
    deferred.sort_unstable();
    deferred
}

/// Reorders the steps so that `deferred` (sorted) come last, in their order, and
/// renumbers every reference to a step.
fn move_to_end(steps: Vec<Step>, deferred: &[usize], fetch_steps: &mut [(usize, bool)]) -> Vec<Step> {
    if deferred.is_empty() {
        return steps;
    }
    let is_deferred = |s: usize| deferred.binary_search(&s).is_ok();
    let order: Vec<usize> = (0..steps.len()).filter(|&s| !is_deferred(s)).chain(deferred.iter().copied()).collect();
    let mut new_index = vec![0; steps.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    for (s, _) in fetch_steps.iter_mut() {
        *s = new_index[*s];
    }
    let mut slots: Vec<Option<Step>> = steps.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&old| slots[old].take())
        .map(|mut step| {
            step.inputs.iter_mut().for_each(|i| *i = new_index[*i]);
            if let StepKind::MatMulActivation { activation_slot, .. } = &mut step.kind {
                *activation_slot = new_index[*activation_slot];
            }
            step
        })
        .collect()
}

/// A fetched assign of a fused update's value would copy that value for the
/// caller after the run; instead the update stores the copy as it computes.
fn mark_fetched_updates(steps: &mut [Step], fetch_steps: &[(usize, bool)], enabled: &EnabledFusions) {
    if !enabled.allows("fetch_copy") {
        return;
    }
    for &(fetched, _) in fetch_steps {
        let Some(update) = steps[fetched].assigned_value() else { continue };
        if let StepKind::MatMulUpdate { copy_for_fetch, .. } = &mut steps[update].kind {
            *copy_for_fetch = true;
        }
    }
}

/// Whether a step's output is memory a kernel allocates (and not a view, an
/// input, a variable's value or a constant).
fn allocates_output(kind: &StepKind) -> bool {
    match kind {
        StepKind::Op(op) => !op.is_view(),
        StepKind::MatMulUpdate { in_place_of, .. } => in_place_of.is_none(),
        StepKind::Assign { mode, .. } => *mode != AssignMode::Set,
        StepKind::Random { .. }
        | StepKind::MaskedGrad { .. }
        | StepKind::MatMulActivation { .. }
        | StepKind::StoredByProduct
        | StepKind::SumOfSquares
        | StepKind::ScaledByItem { .. } => true,
        StepKind::Fed(_) | StepKind::Constant(_) | StepKind::ReadVar(_) | StepKind::PassThrough | StepKind::NoValue => {
            false
        }
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
fn plan_buffers(graph: &Graph, steps: &mut [Step]) -> usize {
    type Class = (DType, Vec<Option<usize>>);
    let mut free: HashMap<Class, Vec<usize>> = HashMap::new();
    let mut class_of: Vec<Class> = vec![];
    for s in 0..steps.len() {
        // A fused product stores its activation too, so that value's life starts here.
        let stored_here = match steps[s].kind {
            StepKind::MatMulActivation { activation_slot, .. } => vec![s, activation_slot],
            StepKind::StoredByProduct => vec![],
            ref kind if allocates_output(kind) => vec![s],
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
fn plan_releases(steps: &mut [Step], fetch_steps: &[(usize, bool)]) {
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
