//! Compiling a run: prune the graph to what the fetches need, order it, and
//! decide when each intermediate value can be dropped. A plan holds everything
//! it needs (ops, constants), so running it never touches the graph.

use super::{fmt_partial, AssignMode, Graph, NodeId, NodeKind, VarId};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::elementwise::{BinaryOp, ScalarOp};
use crate::op::Op;
use crate::random::Distribution;
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

#[derive(Clone)]
pub enum StepKind {
    /// The value of feed number `usize` of the run.
    Fed(usize),
    Constant(Tensor),
    ReadVar(VarId),
    Random {
        dist: Distribution,
        shape: Vec<usize>,
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
}

impl Step {
    /// The op type shown in traces.
    pub fn kind_name(&self) -> String {
        match &self.kind {
            StepKind::Fed(_) => "Feed".into(),
            StepKind::Constant(_) => "Const".into(),
            StepKind::ReadVar(_) => "ReadVariable".into(),
            StepKind::Random { .. } => "Random".into(),
            StepKind::Op(op) => op.name(),
            StepKind::MatMulUpdate { .. } => "fused_sgd_update".into(),
            StepKind::PassThrough => "Identity".into(),
            StepKind::Assign { .. } => "Assign".into(),
            StepKind::NoValue => "NoOp".into(),
        }
    }
}

pub struct Plan {
    pub steps: Vec<Step>,
    /// For each fetch, the step holding its value (None for ops without a value).
    pub fetch_steps: Vec<(usize, bool)>,
    pub variable_names: Vec<String>,
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

/// A fused update found in the graph: the Sub node, and what replaces it.
struct Fusion {
    kind: StepKind,
    inputs: Vec<NodeId>,
    absorbed: [NodeId; 2],
}

/// Finds `w - c·matmul(a, b)` where the scaled product feeds nothing else.
fn find_update_fusions(
    graph: &Graph,
    order: &[NodeId],
    fetches: &[NodeId],
    fed: &HashSet<NodeId>,
) -> HashMap<NodeId, Fusion> {
    let mut consumers: HashMap<NodeId, usize> = HashMap::new();
    for &id in order.iter().filter(|id| !fed.contains(id)) {
        for &input in &graph.nodes[id].inputs {
            *consumers.entry(input).or_insert(0) += 1;
        }
    }
    for &f in fetches {
        *consumers.entry(f).or_insert(0) += 1;
    }
    let op_of = |id: NodeId| match &graph.nodes[id].kind {
        NodeKind::Op(op) if !fed.contains(&id) => Some(op),
        _ => None,
    };
    let mut fusions = HashMap::new();
    for &id in order {
        let (Some(Op::Binary(BinaryOp::Sub)), [w, scaled]) = (op_of(id), graph.nodes[id].inputs.as_slice()) else {
            continue;
        };
        let Some(&Op::Scalar(ScalarOp::Mul, c)) = op_of(*scaled) else { continue };
        let product = graph.nodes[*scaled].inputs[0];
        let Some(&Op::MatMul { transpose_a, transpose_b }) = op_of(product) else { continue };
        let sole_use = |n: NodeId| consumers.get(&n).copied() == Some(1);
        let same_shape = graph.nodes[*w].shape.is_some() && graph.nodes[*w].shape == graph.nodes[product].shape;
        let same_dtype = graph.nodes[*w].dtype == graph.nodes[product].dtype;
        if sole_use(*scaled)
            && sole_use(product)
            && same_shape
            && same_dtype
            && graph.nodes[*w].shape.as_ref().is_some_and(|d| d.iter().all(Option::is_some))
        {
            let mut inputs = vec![*w];
            inputs.extend_from_slice(&graph.nodes[product].inputs);
            let kind = StepKind::MatMulUpdate { alpha: -c, transpose_a, transpose_b };
            fusions.insert(id, Fusion { kind, inputs, absorbed: [*scaled, product] });
        }
    }
    fusions
}

pub fn compile(graph: &Graph, fetches: &[NodeId], feeds: &[NodeId]) -> Result<Plan> {
    let fed: HashSet<NodeId> = feeds.iter().copied().collect();
    let mut order = needed_nodes(graph, fetches, &fed)?;
    // RUSTGRAD_DISABLE_FUSION=1 compiles plans without fused steps (to measure what fusion brings).
    let fusions = if std::env::var_os("RUSTGRAD_DISABLE_FUSION").is_some() {
        HashMap::new()
    } else {
        find_update_fusions(graph, &order, fetches, &fed)
    };
    let absorbed: HashSet<NodeId> = fusions.values().flat_map(|f| f.absorbed).collect();
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
                NodeKind::Random { dist, shape, seed } => {
                    StepKind::Random { dist: *dist, shape: shape.clone(), seed: *seed, dtype: node.dtype }
                }
                NodeKind::Op(Op::Copy | Op::StopGradient) => StepKind::PassThrough,
                NodeKind::Op(op) => StepKind::Op(op.clone()),
                NodeKind::Assign { var, mode } => StepKind::Assign { var: *var, mode: *mode },
                NodeKind::Group | NodeKind::FunctionCall { .. } => StepKind::NoValue,
                NodeKind::FunctionOutput { .. } => StepKind::PassThrough,
            }
        };
        let (kind, fused_inputs) = match fusions.get(&id) {
            Some(f) => (f.kind.clone(), Some(f.inputs.as_slice())),
            None => (kind, None),
        };
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
        steps.push(Step { node: id, name: node.name.clone(), kind, inputs, release: vec![] });
    }
    let fetch_steps: Vec<(usize, bool)> = fetches
        .iter()
        .map(|&f| {
            let step = position(f).ok_or_else(|| Error::InvalidArgument(format!("internal: fetch {f} was pruned")))?;
            Ok((step, graph.nodes[f].kind.has_value()))
        })
        .collect::<Result<_>>()?;
    plan_releases(&mut steps, &fetch_steps);
    Ok(Plan { steps, fetch_steps, variable_names: graph.variables.iter().map(|v| v.name.clone()).collect() })
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
