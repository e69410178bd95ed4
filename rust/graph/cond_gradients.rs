//! Gradients through `Cond` (`tf.cond`, `tf.case`, `tf.switch_case`): a gradient Cond with
//! the same predicate, whose branch k differentiates forward branch k. Only the gradient
//! branch of the branch that ran runs, so the gradient flows only into that branch.
//!
//! A rule that needs a value computed inside the forward branch gets it recomputed inside
//! the gradient branch (pure ops, constants and variable reads only; see `local_copy`):
//! nodes of a frame cannot be read outside it.

use super::gradients::gradients_in;
use super::{FrameId, FrameKind, Graph, GraphNode, NodeId, NodeKind};
use crate::error::{Error, Result};
use crate::op::Op;
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};

/// `id` as a node the current frame may read: itself when its frame encloses the current
/// one, else a copy made in the current frame (once per node, remembered in `copies`).
pub(super) fn local_copy(graph: &mut Graph, copies: &mut HashMap<NodeId, NodeId>, id: NodeId) -> Result<NodeId> {
    let current = graph.current_frame();
    let node = graph.node(id)?;
    if graph.frame_encloses(node.frame, current) {
        return Ok(id);
    }
    if let Some(&copy) = copies.get(&id) {
        return Ok(copy);
    }
    let node = node.clone();
    if let NodeKind::Constant(value) = node.kind {
        let copy = graph.constant(value, None);
        copies.insert(id, copy);
        return Ok(copy);
    }
    // Inside the gradient of a loop body: the value the forward iteration had, kept for it.
    if let Some(read) = super::while_gradients::stack_read(graph, id)? {
        copies.insert(id, read);
        return Ok(read);
    }
    let copy = match node.kind {
        NodeKind::Op(op) => {
            let inputs = node.inputs.iter().map(|&i| local_copy(graph, copies, i)).collect::<Result<Vec<_>>>()?;
            graph.op(op, inputs, None)?
        }
        NodeKind::VariableRead(var) => {
            graph.push_leaf(NodeKind::VariableRead(var), Some("read"), node.dtype, node.shape)
        }
        _ if export_owner(graph, node.frame).is_some() => export(graph, copies, id)?,
        NodeKind::Unpack { exit: true, .. } => {
            return Err(Error::Gradient(format!(
                "gradients: differentiating a while_loop built inside a cond branch ('{}') is not supported; \
                 build the loop outside the branch (its gradient is then supported), or use tf.stop_gradient \
                 on the loop's outputs",
                graph.nodes[node.inputs[0]].name
            )))
        }
        other => {
            return Err(Error::Gradient(format!(
                "gradients through cond: the gradient needs the value of '{}' ({}) from inside a branch; rustgrad \
                 recomputes the branch's pure ops for its gradient, but not this one",
                node.name,
                other.type_name(&node.shape)
            )))
        }
    };
    copies.insert(id, copy);
    Ok(copy)
}

/// The Cond that owns `frame` when it is a cond branch.
fn export_owner(graph: &Graph, frame: FrameId) -> Option<NodeId> {
    let f = graph.frame(frame).ok()?;
    let owner = f.owner.filter(|_| f.kind == FrameKind::Branch)?;
    matches!(graph.nodes[owner].kind, NodeKind::Cond { .. }).then_some(owner)
}

/// A value of a branch that the gradient branch cannot recompute (a random draw, another
/// cond's output): made an extra output of the forward Cond, which the branch that computes
/// it fills when it runs (the gradient Cond runs the same branch's gradient, which reads it),
/// and read in the current frame.
fn export(graph: &mut Graph, copies: &mut HashMap<NodeId, NodeId>, id: NodeId) -> Result<NodeId> {
    let frame = graph.nodes[id].frame;
    let owner = export_owner(graph, frame).ok_or_else(|| Error::Gradient("internal: not in a branch".into()))?;
    let NodeKind::Cond { outputs, exports, .. } = &mut graph.nodes[owner].kind else {
        return Err(Error::Gradient("internal: not a Cond".into()));
    };
    let position = match exports.iter().position(|&n| n == id) {
        Some(p) => p,
        None => {
            exports.push(id);
            exports.len() - 1
        }
    };
    let index = *outputs + position;
    let existing = graph.nodes.iter().enumerate().skip(owner + 1).find(|(_, n)| {
        matches!(n.kind, NodeKind::Unpack { index: i, exit: false } if i == index) && n.inputs == [owner]
    });
    let unpack = match existing {
        Some((u, _)) => u,
        None => {
            let node = &graph.nodes[id];
            let kind = NodeKind::Unpack { index, exit: false };
            let (dtype, shape, frame) = (node.dtype, node.shape.clone(), graph.nodes[owner].frame);
            let unpack = GraphNode {
                kind,
                inputs: vec![owner],
                control_inputs: vec![],
                name: String::new(),
                dtype,
                shape,
                frame,
            };
            graph.push_node(unpack, Some("Export"))
        }
    };
    local_copy(graph, copies, unpack)
}

/// The `Unpack` nodes of the Cond `id`, by output index.
fn outputs_of(graph: &Graph, id: NodeId, count: usize) -> Vec<Option<NodeId>> {
    let mut outs = vec![None; count];
    for (n, node) in graph.nodes.iter().enumerate().skip(id + 1) {
        match node.kind {
            NodeKind::Unpack { index, exit: false } if node.inputs == [id] && index < count => outs[index] = Some(n),
            _ if n > id + count => break,
            _ => {}
        }
    }
    outs
}

/// Builds the gradient of the Cond `id` given the gradients of its outputs (`upstream`, by
/// index); returns the gradient of each of its captures in `relevant` that carries one.
pub(super) fn cond_gradient(
    graph: &RwLock<Graph>,
    id: NodeId,
    upstream: &[Option<NodeId>],
    relevant: &HashSet<NodeId>,
) -> Result<Vec<(NodeId, NodeId)>> {
    let node = graph.read().node(id)?.clone();
    let NodeKind::Cond { branches, outputs, .. } = &node.kind else {
        return Err(Error::Gradient(format!("internal: '{}' is not a Cond", node.name)));
    };
    let captures: Vec<NodeId> = {
        let g = graph.read();
        node.inputs[1..].iter().copied().filter(|c| relevant.contains(c) && g.nodes[*c].dtype.is_float()).collect()
    };
    if captures.is_empty() {
        return Ok(vec![]);
    }
    let unpacks = outputs_of(&graph.read(), id, *outputs);
    let mut grad_ys = Vec::with_capacity(*outputs);
    for (k, unpack) in unpacks.iter().enumerate() {
        grad_ys.push(match (upstream.get(k).copied().flatten(), unpack) {
            (Some(g), _) => Some(g),
            (None, Some(u)) => Some(zeros_like(&mut graph.write(), *u)?),
            (None, None) => None,
        });
    }
    let pred = local_copy(&mut graph.write(), &mut HashMap::new(), node.inputs[0])?;
    let mut frames = Vec::with_capacity(branches.len());
    let mut outs = Vec::with_capacity(branches.len());
    for &branch in branches {
        let frame = graph.write().push_frame(FrameKind::Branch);
        let built = branch_gradient(graph, branch, &captures, &grad_ys);
        graph.write().pop_frame(frame)?;
        frames.push(frame);
        outs.push(built?);
    }
    let grads = graph.write().cond(pred, &frames, &outs, Some("gradients/If"))?.1;
    Ok(captures.into_iter().zip(grads).collect())
}

/// Inside the open gradient frame: the gradient of each capture through forward `branch`.
fn branch_gradient(
    graph: &RwLock<Graph>,
    branch: FrameId,
    captures: &[NodeId],
    grad_ys: &[Option<NodeId>],
) -> Result<Vec<NodeId>> {
    let ys = graph.read().frame(branch)?.outputs.clone();
    let (ys, grad_ys): (Vec<NodeId>, Vec<Option<NodeId>>) =
        ys.iter().zip(grad_ys).filter(|(_, g)| g.is_some()).map(|(&y, &g)| (y, g)).unzip();
    let grads = gradients_in(graph, &ys, captures, &grad_ys, &[], Some(branch))?;
    captures
        .iter()
        .zip(grads)
        .map(|(&c, g)| match g {
            Some(g) => Ok(g),
            None => zeros_like(&mut graph.write(), c),
        })
        .collect()
}

/// Zeros of the value of `id` (read in the current frame).
fn zeros_like(graph: &mut Graph, id: NodeId) -> Result<NodeId> {
    let id = local_copy(graph, &mut HashMap::new(), id)?;
    graph.op(Op::FullLike(0.0), vec![id], Some("gradients/zeros_like"))
}
