//! Fusions: patterns in the graph that one step computes in fewer passes than
//! the ops it replaces (an SGD update as one product, relu's backward mask,
//! a product with its activation, the squared error and its gradient, max pooling
//! with the indices its gradient reads).

use super::plan::StepKind;
use super::{Graph, NodeId, NodeKind};
use crate::kernels::elementwise::{BinaryOp, ScalarOp, UnaryOp};
use crate::kernels::matmul::SecondOutput;
use crate::op::Op;
use crate::ops::TableOps;
use std::collections::{HashMap, HashSet};

/// A fused step found in the graph: the node it replaces, its inputs, and the
/// nodes it computes along the way (which then get no step of their own).
pub(super) struct Fusion {
    pub(super) kind: StepKind,
    pub(super) inputs: Vec<NodeId>,
    pub(super) absorbed: Vec<NodeId>,
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
/// `in_place`, `mask`, `activation`, `squared_error`, `pool_indices` and `memory_plan` turns those off; any other value
/// (`1`, `all`, or a word it does not know) turns all of them off.
pub(super) struct EnabledFusions {
    disabled: Option<Vec<String>>,
}

const FUSION_NAMES: [&str; 8] =
    ["update", "fetch_copy", "in_place", "mask", "activation", "squared_error", "pool_indices", "memory_plan"];

impl EnabledFusions {
    pub(super) fn from_env() -> EnabledFusions {
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

    /// No fusion (the plans of cond branches and loop frames).
    pub(super) fn none() -> EnabledFusions {
        EnabledFusions { disabled: Some(FUSION_NAMES.iter().map(|n| n.to_string()).collect()) }
    }

    pub(super) fn allows(&self, name: &str) -> bool {
        self.disabled.as_ref().is_none_or(|off| !off.iter().any(|n| n == name))
    }
}

pub(super) fn find_fusions(
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
    let position: HashMap<NodeId, usize> = order.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    for &id in order.iter().filter(|_| enabled("pool_indices")) {
        if let Some(group) = pool_indices_fusion(&view, &position, id) {
            insert_group(&mut fusions, group);
        }
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

/// `max_pool2d(x)` and, later in the plan, `max_pool2d_indices(x)` with the same
/// arguments (max pooling's rule emits it for its gradient): the pooling's pass
/// stores the indices too, so the backward pass does not search x for the maxima again.
fn pool_indices_fusion(
    view: &FusionView<'_>,
    position: &HashMap<NodeId, usize>,
    id: NodeId,
) -> Option<Vec<(NodeId, Fusion)>> {
    let Some(Op::Table(TableOps::MaxPool2d(pool))) = view.op_of(id) else { return None };
    let &[x] = view.inputs(id) else { return None };
    let after_pool = |other: &NodeId| position.get(other) > position.get(&id);
    let indices = view.readers(x).iter().copied().filter(after_pool).find(|&r| {
        matches!(view.op_of(r), Some(Op::Table(TableOps::MaxPool2dIndices(i))) if pool.has_indices(i))
            && view.inputs(r) == [x]
    })?;
    let kind = StepKind::MaxPoolWithIndices { pool: pool.clone(), indices_slot: indices };
    let fused_pool = Fusion { kind, inputs: vec![x], absorbed: vec![] };
    let stored = Fusion { kind: StepKind::StoredByProduct, inputs: vec![id], absorbed: vec![] };
    Some(vec![(id, fused_pool), (indices, stored)])
}
