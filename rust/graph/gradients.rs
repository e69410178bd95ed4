//! Symbolic differentiation: `gradients(ys, xs)` adds gradient nodes to the
//! graph by running the same derivative rules the eager tape runs, with a
//! differentiator that builds nodes instead of computing values.

use super::{Graph, NodeId, NodeKind, PartialShape};
use crate::error::{Error, Result};
use crate::kernels::elementwise::BinaryOp;
use crate::op::Op;
use crate::rules::{self, Differentiator, RuleArgs};
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};

/// Builds each emitted op as a new node, holding the graph lock only while adding it
/// (a user Function's backward re-enters the graph from Python in between).
struct GraphDifferentiator<'a> {
    graph: &'a RwLock<Graph>,
    /// Nodes of a cond branch recomputed in the gradient branch (see `cond_gradients`).
    copies: HashMap<NodeId, NodeId>,
}

impl Differentiator for GraphDifferentiator<'_> {
    type Value = NodeId;

    fn apply(&mut self, op: Op, inputs: &[&NodeId]) -> Result<NodeId> {
        let name = format!("gradients/{}", op.backward_name().trim_end_matches("Backward0"));
        let mut graph = self.graph.write();
        let mut ids: Vec<NodeId> = inputs.iter().map(|&&i| i).collect();
        if graph.current_frame() != super::ROOT {
            for id in ids.iter_mut() {
                *id = super::cond_gradients::local_copy(&mut graph, &mut self.copies, *id)?;
            }
        }
        graph.op(op, ids, Some(&name))
    }

    fn rank(&self, value: &NodeId) -> Option<usize> {
        self.graph.read().node(*value).ok()?.shape.as_ref().map(Vec::len)
    }
}

/// Nodes on some path from an x to a y that does not pass through a stop node.
fn relevant_nodes(graph: &Graph, ys: &[NodeId], xs: &[NodeId], stops: &[NodeId]) -> Result<HashSet<NodeId>> {
    let mut ancestors = HashSet::new();
    let mut stack: Vec<NodeId> = ys.to_vec();
    while let Some(id) = stack.pop() {
        if ancestors.insert(id) {
            stack.extend(graph.node(id)?.inputs.iter().copied());
        }
    }
    // Gradients flow only through float values (as TF1's): an integer or bool x, or a
    // path through one (a cast to int and back), gets no gradient.
    let carries_gradient = |id: NodeId| {
        let node = &graph.nodes[id];
        node.dtype.is_float()
            || matches!(node.kind, NodeKind::FunctionCall { .. } | NodeKind::Cond { .. } | NodeKind::While { .. })
    };
    let lowest = xs.iter().copied().min().unwrap_or(0);
    let mut descendants: HashSet<NodeId> =
        xs.iter().copied().filter(|&x| graph.node(x).is_ok() && carries_gradient(x)).collect();
    for id in lowest..graph.nodes.len() {
        if !stops.contains(&id)
            && carries_gradient(id)
            && graph.nodes[id].inputs.iter().any(|i| descendants.contains(i))
        {
            descendants.insert(id);
        }
    }
    Ok(ancestors.intersection(&descendants).copied().collect())
}

/// Gradient slots: (node, output index). Ordinary nodes use slot 0; a
/// FunctionCall collects one slot per output of the user's forward.
type Slots = HashMap<(NodeId, usize), NodeId>;

fn accumulate(d: &mut GraphDifferentiator<'_>, slots: &mut Slots, key: (NodeId, usize), grad: NodeId) -> Result<()> {
    let merged = match slots.get(&key) {
        Some(&previous) => d.apply(Op::Binary(BinaryOp::Add), &[&previous, &grad])?,
        None => grad,
    };
    slots.insert(key, merged);
    Ok(())
}

/// For each x, the node holding d(sum of ys)/dx, or None when ys do not depend on x.
/// No gradient flows through the `stops` nodes (TF's `stop_gradients`).
pub fn gradients(
    graph: &RwLock<Graph>,
    ys: &[NodeId],
    xs: &[NodeId],
    grad_ys: &[Option<NodeId>],
    stops: &[NodeId],
) -> Result<Vec<Option<NodeId>>> {
    gradients_in(graph, ys, xs, grad_ys, stops, None)
}

/// `gradients`; with `frame`, only through the nodes of that frame (a cond branch whose
/// captures are the xs), built in the calling thread's current frame.
pub(super) fn gradients_in(
    graph: &RwLock<Graph>,
    ys: &[NodeId],
    xs: &[NodeId],
    grad_ys: &[Option<NodeId>],
    stops: &[NodeId],
    frame: Option<super::FrameId>,
) -> Result<Vec<Option<NodeId>>> {
    let mut relevant = relevant_nodes(&graph.read(), ys, xs, stops)?;
    if let Some(frame) = frame {
        let g = graph.read();
        relevant.retain(|&n| g.nodes[n].frame == frame || xs.contains(&n));
    }
    let checked_at_run_time = check_grad_ys(&graph.read(), ys, grad_ys)?;
    let mut d = GraphDifferentiator { graph, copies: HashMap::new() };
    let mut slots: Slots = HashMap::new();
    for (i, &y) in ys.iter().enumerate() {
        if !relevant.contains(&y) {
            continue;
        }
        let seed = match grad_ys.get(i).copied().flatten() {
            // A frame's grad_ys come from the gradient of its owner and have its outputs' shapes.
            Some(g) if checked_at_run_time[i] && frame.is_none() => d.apply(Op::CheckGradShape(i), &[&g, &y])?,
            Some(g) => g,
            None => d.apply(Op::FullLike(1.0), &[&y])?,
        };
        accumulate(&mut d, &mut slots, (y, 0), seed)?;
    }
    let mut order: Vec<NodeId> = relevant.iter().copied().collect();
    order.sort_unstable_by(|a, b| b.cmp(a));
    for id in order {
        let node = graph.read().node(id)?.clone();
        match &node.kind {
            NodeKind::Op(op) => {
                let Some(&grad) = slots.get(&(id, 0)) else { continue };
                let needs: Vec<bool> = node.inputs.iter().map(|i| relevant.contains(i)).collect();
                let args = RuleArgs { inputs: &node.inputs, output: &id, grad: &grad, needs: &needs };
                let input_grads = rules::vjp(&mut d, op, args)?;
                for (input, g) in node.inputs.iter().zip(input_grads) {
                    if let (Some(g), true) = (g, relevant.contains(input)) {
                        accumulate(&mut d, &mut slots, (*input, 0), g)?;
                    }
                }
            }
            NodeKind::Debug(op) if op.passes_gradient() => {
                if let (Some(&grad), true) = (slots.get(&(id, 0)), relevant.contains(&node.inputs[0])) {
                    let grad = match op.gradient_check() {
                        Some(check) => graph.write().debug_op(check, vec![grad], None)?,
                        None => grad,
                    };
                    accumulate(&mut d, &mut slots, (node.inputs[0], 0), grad)?;
                }
            }
            NodeKind::FunctionOutput { index } => {
                if let Some(&grad) = slots.get(&(id, 0)) {
                    accumulate(&mut d, &mut slots, (node.inputs[0], *index), grad)?;
                }
            }
            NodeKind::FunctionCall { function, num_outputs } => {
                if !(0..*num_outputs).any(|k| slots.contains_key(&(id, k))) {
                    continue;
                }
                let mut grads = Vec::with_capacity(*num_outputs);
                for k in 0..*num_outputs {
                    grads.push(match slots.get(&(id, k)) {
                        Some(&g) => g,
                        None => d.apply(Op::FullLike(0.0), &[&node.inputs[k]])?,
                    });
                }
                let inputs = &node.inputs[*num_outputs..];
                let input_grads = function.backward(grads)?;
                if input_grads.len() != inputs.len() {
                    return Err(Error::Gradient(format!(
                        "function {}Backward returned an incorrect number of gradients (expected {}, got {})",
                        function.name(),
                        inputs.len(),
                        input_grads.len()
                    )));
                }
                for (input, g) in inputs.iter().zip(input_grads) {
                    if let (Some(g), true) = (g, relevant.contains(input)) {
                        check_grad_shape(&graph.read(), function.name(), *input, g)?;
                        accumulate(&mut d, &mut slots, (*input, 0), g)?;
                    }
                }
            }
            NodeKind::Unpack { index, .. } => {
                if let Some(&grad) = slots.get(&(id, 0)) {
                    accumulate(&mut d, &mut slots, (node.inputs[0], *index), grad)?;
                }
            }
            NodeKind::Cond { outputs, exports, .. } => {
                if (0..exports.len()).any(|e| slots.contains_key(&(id, outputs + e))) {
                    return Err(Error::Gradient(format!(
                        "gradients: the gradient of '{}' reads a value its branch computed (a random draw or a \
                         nested cond's output), and differentiating that value again is not supported",
                        node.name
                    )));
                }
                let upstream: Vec<Option<NodeId>> = (0..*outputs).map(|k| slots.get(&(id, k)).copied()).collect();
                if upstream.iter().any(Option::is_some) {
                    for (capture, g) in super::cond_gradients::cond_gradient(graph, id, &upstream, &relevant)? {
                        accumulate(&mut d, &mut slots, (capture, 0), g)?;
                    }
                }
            }
            NodeKind::While { vars, body, .. } => {
                let outputs = vars + 1 + graph.read().frame(*body)?.stacked.len();
                let upstream: Vec<Option<NodeId>> = (0..outputs).map(|k| slots.get(&(id, k)).copied()).collect();
                if upstream.iter().any(Option::is_some) {
                    for (input, g) in super::while_gradients::while_gradient(graph, id, &upstream, &relevant)? {
                        accumulate(&mut d, &mut slots, (input, 0), g)?;
                    }
                }
            }
            // Sources end the walk; assignments and groups pass no gradient (as in TF).
            _ => {}
        }
    }
    Ok(xs.iter().map(|x| slots.get(&(*x, 0)).copied()).collect())
}

/// Checks each given `grad_ys` against its y: its dtype, and its shape as far as
/// both are known. Returns, per y, whether the shape must also be checked at run time.
fn check_grad_ys(graph: &Graph, ys: &[NodeId], grad_ys: &[Option<NodeId>]) -> Result<Vec<bool>> {
    if grad_ys.len() > ys.len() {
        return Err(Error::InvalidArgument(format!("gradients: Passed {} grad_ys for {} ys", grad_ys.len(), ys.len())));
    }
    let mut at_run_time = vec![false; ys.len()];
    for (i, (&y, g)) in ys.iter().zip(grad_ys).enumerate() {
        let Some(g) = *g else { continue };
        let (y_node, g_node) = (graph.node(y)?, graph.node(g)?);
        if g_node.dtype != y_node.dtype {
            return Err(Error::DType(format!(
                "gradients: grad_ys[{i}] has dtype {} but ys[{i}] ('{}:0') is {}; each grad_ys must have its y's dtype",
                g_node.dtype.name(),
                y_node.name,
                y_node.dtype.name()
            )));
        }
        super::infer::same_shape(i, &g_node.shape, &y_node.shape).map_err(|_| {
            crate::forward::grad_ys_shape_error(i, &g_node.shape, &y_node.shape, Some(&format!("{}:0", y_node.name)))
        })?;
        let fully_known = |s: &PartialShape| s.as_ref().is_some_and(|d| d.iter().all(Option::is_some));
        at_run_time[i] = !(fully_known(&g_node.shape) && fully_known(&y_node.shape));
    }
    Ok(at_run_time)
}

fn check_grad_shape(graph: &Graph, function: &str, input: NodeId, grad: NodeId) -> Result<()> {
    let (want, got) = (&graph.node(input)?.shape, &graph.node(grad)?.shape);
    if let (Some(w), Some(g)) = (want, got) {
        let conflict =
            w.len() != g.len() || w.iter().zip(g).any(|(a, b)| matches!((a, b), (Some(p), Some(q)) if p != q));
        if conflict {
            return Err(Error::Gradient(format!(
                "Function {function}Backward returned an invalid gradient - got {} but expected shape compatible with {}",
                super::fmt_partial(got),
                super::fmt_partial(want)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::error::Error;
    use crate::forward::forward;
    use crate::kernels::elementwise::UnaryOp;
    use crate::tensor::Tensor;

    #[test]
    fn a_grad_ys_of_a_certainly_wrong_shape_is_refused_before_any_node_is_added() {
        let mut graph = Graph::new();
        let x = graph.placeholder(DType::F32, Some(vec![Some(3)]), Some("x"));
        let y = graph.op(Op::Unary(UnaryOp::Exp), vec![x], Some("y")).unwrap();
        let g = graph.placeholder(DType::F32, Some(vec![None, Some(3)]), Some("g"));
        let graph = RwLock::new(graph);
        let err = gradients(&graph, &[y], &[x], &[Some(g)], &[]).unwrap_err();
        assert!(matches!(&err, Error::Shape(m) if m.contains("(?, 3)") && m.contains("'y:0'") && m.contains("(3,)")));
        assert_eq!(graph.read().nodes.len(), 3);
    }

    #[test]
    fn a_grad_ys_of_a_partly_known_shape_is_checked_by_a_node_at_run_time() {
        let mut graph = Graph::new();
        let x = graph.placeholder(DType::F64, Some(vec![None]), Some("x"));
        let g = graph.placeholder(DType::F64, Some(vec![None]), Some("g"));
        let graph = RwLock::new(graph);
        let grads = gradients(&graph, &[x], &[x], &[Some(g)], &[]).unwrap();
        let graph = graph.read();
        let check = graph.nodes.iter().find(|n| matches!(n.kind, NodeKind::Op(Op::CheckGradShape(0)))).unwrap();
        assert_eq!(check.inputs, vec![g, x]);
        assert_eq!(grads[0], Some(graph.nodes.len() - 1));
        let (two, three) =
            (Tensor::from_vec(vec![1.0f64; 2], vec![2]).unwrap(), Tensor::zeros(&[3], DType::F64).unwrap());
        let err = forward(&Op::CheckGradShape(0), &[&two, &three]).unwrap_err();
        assert!(matches!(&err, Error::Shape(m) if m.contains("grad_ys[0] has shape (2,) but ys[0] has shape (3,)")));
        assert!(forward(&Op::CheckGradShape(0), &[&two, &two]).is_ok());
    }
}
