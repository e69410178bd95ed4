//! Gradients through `While` (`tf.while_loop`), as TF1 builds them: the forward loop keeps
//! the body values the gradient reads, one per iteration, stacked along a new first dim (extra
//! outputs of the forward While, computed only by plans that read them), and a gradient
//! While runs the body's gradient once per forward iteration, from the last one to the first,
//! reading row `N - 1 - j` of each stack in its iteration `j`. Its trip count `N` is an output
//! of the forward While, read when the graph runs: data-dependent trip counts and
//! `maximum_iterations` need nothing more. The gradient loop is a While like any other, run
//! by the plan in Rust.

use super::cond_gradients::local_copy;
use super::gradients::gradients_in;
use super::{FrameId, FrameKind, Graph, GraphNode, NodeId, NodeKind, PartialShape};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp};
use crate::op::Op;
use crate::ops::gather::IndexSelect;
use crate::ops::TableOps;
use crate::tensor::Tensor;
use parking_lot::RwLock;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// A forward loop body whose gradient the calling thread is building: `iteration` (a node of
/// the gradient body) is the forward iteration the gradient iteration differentiates.
struct ActiveLoop {
    body: FrameId,
    owner: NodeId,
    iteration: NodeId,
}

thread_local! {
    static ACTIVE: RefCell<Vec<ActiveLoop>> = const { RefCell::new(Vec::new()) };
}

/// Ends the innermost active loop when dropped, also when building its gradient failed.
struct Activation;

impl Activation {
    fn begin(body: FrameId, owner: NodeId, iteration: NodeId) -> Activation {
        ACTIVE.with(|a| a.borrow_mut().push(ActiveLoop { body, owner, iteration }));
        Activation
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.borrow_mut().pop());
    }
}

/// When `id` is a node of a loop body whose gradient this thread is building: its value in
/// the iteration being differentiated, read (in the current frame) from the forward loop's
/// stack of it.
pub(super) fn stack_read(graph: &mut Graph, id: NodeId) -> Result<Option<NodeId>> {
    let frame = graph.node(id)?.frame;
    let found = ACTIVE.with(|a| a.borrow().iter().rev().find(|l| l.body == frame).map(|l| (l.owner, l.iteration)));
    let Some((owner, iteration)) = found else { return Ok(None) };
    let stack = stack_of(graph, owner, frame, id)?;
    let stack = visible(graph, stack)?;
    let row = Op::Table(TableOps::IndexSelect(IndexSelect::row()));
    graph.op(row, vec![stack, iteration], Some("gradients/StackPopV2")).map(Some)
}

/// `id` as a node the current frame may read (see `local_copy`).
fn visible(graph: &mut Graph, id: NodeId) -> Result<NodeId> {
    local_copy(graph, &mut HashMap::new(), id)
}

/// The output of the While `owner` stacking `id` (a node of its `body`), made on first use.
fn stack_of(graph: &mut Graph, owner: NodeId, body: FrameId, id: NodeId) -> Result<NodeId> {
    let NodeKind::While { vars, .. } = graph.node(owner)?.kind else {
        return Err(Error::Gradient(format!("internal: '{}' is not a While", graph.nodes[owner].name)));
    };
    let k = match graph.frame(body)?.stacked.iter().position(|&n| n == id) {
        Some(k) => k,
        None => {
            let stacked = &mut graph.frame_mut(body)?.stacked;
            stacked.push(id);
            stacked.len() - 1
        }
    };
    let node = &graph.nodes[id];
    let shape = node.shape.as_ref().map(|dims| std::iter::once(None).chain(dims.iter().copied()).collect());
    Ok(loop_output(graph, owner, vars + 1 + k, node.dtype, shape, "f_acc"))
}

/// The `Unpack` of output `index` of the While `owner`, made (in the owner's frame) if missing.
fn loop_output(
    graph: &mut Graph,
    owner: NodeId,
    index: usize,
    dtype: DType,
    shape: PartialShape,
    name: &str,
) -> NodeId {
    let existing = graph.nodes.iter().enumerate().skip(owner + 1).find(|(_, n)| {
        matches!(n.kind, NodeKind::Unpack { index: i, exit: true } if i == index) && n.inputs == [owner]
    });
    if let Some((id, _)) = existing {
        return id;
    }
    let frame = graph.nodes[owner].frame;
    let kind = NodeKind::Unpack { index, exit: true };
    let node =
        GraphNode { kind, inputs: vec![owner], control_inputs: vec![], name: String::new(), dtype, shape, frame };
    graph.push_node(node, Some(name))
}

/// The body frame of the forward loop.
struct Forward {
    body: FrameId,
    frame: super::frames::Frame,
}

/// What the gradient loop carries besides its counter: the gradients of the forward loop's
/// float variables (`carried`, by index) and the gradients summed so far of its `captures`.
struct Carried {
    vars: Vec<usize>,
    captures: Vec<NodeId>,
    /// Captures the body reads only one row at a time (`map_fn`'s elems), with those reads:
    /// their gradient rows are stacked and added into place once, after the gradient loop,
    /// rather than summed densely in each iteration.
    by_rows: Vec<(NodeId, Vec<NodeId>)>,
    /// The gradients of the loop's outputs, by variable.
    upstream: Vec<Option<NodeId>>,
}

/// Builds the gradient of the While `id` given the gradients of its outputs (`upstream`,
/// by index); returns the gradient of each of its inputs in `relevant` that gets one.
pub(super) fn while_gradient(
    graph: &RwLock<Graph>,
    id: NodeId,
    upstream: &[Option<NodeId>],
    relevant: &HashSet<NodeId>,
) -> Result<Vec<(NodeId, NodeId)>> {
    let node = graph.read().node(id)?.clone();
    let NodeKind::While { body, vars, max_iterations, back_prop, .. } = node.kind else {
        return Err(Error::Gradient(format!("internal: '{}' is not a While", node.name)));
    };
    // TF1: a loop built with back_prop=False passes no gradient.
    if !back_prop {
        return Ok(vec![]);
    }
    let forward = Forward { body, frame: graph.read().frame(body)?.clone() };
    let mut carried = {
        let g = graph.read();
        let is_float = |n: NodeId| g.nodes[n].dtype.is_float();
        let captures = &node.inputs[vars..node.inputs.len() - usize::from(max_iterations)];
        Carried {
            vars: (0..vars).filter(|&k| is_float(forward.frame.args[k])).collect(),
            captures: captures.iter().copied().filter(|&c| relevant.contains(&c) && is_float(c)).collect(),
            by_rows: vec![],
            upstream: (0..vars).map(|k| upstream.get(k).copied().flatten()).collect(),
        }
    };
    // The stacks read by nodes outside (`map_fn`'s and `scan`'s results) that have a gradient.
    let stacks: Vec<(NodeId, NodeId)> = forward
        .frame
        .stacked
        .iter()
        .zip(upstream.iter().skip(vars + 1))
        .filter_map(|(&x, g)| g.map(|g| (x, g)))
        .collect();
    if carried.vars.is_empty() && stacks.is_empty() {
        return Ok(vec![]);
    }
    {
        let g = graph.read();
        let (by_rows, dense): (Vec<_>, Vec<_>) =
            carried.captures.iter().map(|&c| (c, row_reads(&g, body, c))).partition(|(_, reads)| reads.is_some());
        carried.by_rows = by_rows.into_iter().map(|(c, reads)| (c, reads.unwrap_or_default())).collect();
        carried.captures = dense.into_iter().map(|(c, _)| c).collect();
    }
    let (grad_exits, has_gradient, rows) = build_gradient_loop(graph, id, &node.name, &forward, &carried, &stacks)?;
    let inputs = carried.vars.iter().map(|&k| node.inputs[k]).chain(carried.captures.iter().copied());
    let mut grads: Vec<(NodeId, NodeId)> = inputs
        .zip(grad_exits.iter().copied().skip(1))
        .zip(has_gradient)
        .filter(|&((input, _), has)| has && relevant.contains(&input))
        .map(|(pair, _)| pair)
        .collect();
    for (capture, row_grad, index) in rows {
        grads.push((capture, scatter_rows(graph, grad_exits[0], capture, row_grad, index)?));
    }
    Ok(grads)
}

/// The reads of the capture `c` in the loop `body` when every use of it there is a row
/// read (a gather of one 0-d index); None otherwise.
fn row_reads(graph: &Graph, body: FrameId, c: NodeId) -> Option<Vec<NodeId>> {
    let mut reads = vec![];
    for (n, node) in graph.nodes.iter().enumerate().skip(c + 1) {
        if !node.inputs.contains(&c) || !graph.frame_encloses(body, node.frame) {
            continue;
        }
        let is_row = matches!(&node.kind, NodeKind::Op(Op::Table(TableOps::IndexSelect(s))) if s.is_row())
            && node.frame == body
            && node.inputs.len() == 2
            && node.inputs[0] == c
            && node.inputs[1] != c
            && graph.nodes[node.inputs[1]].shape == Some(vec![]);
        if !is_row {
            return None;
        }
        reads.push(n);
    }
    (!reads.is_empty()).then_some(reads)
}

/// The gradient of `capture` from the gradient rows the loop (whose counter output is
/// `loop_output`) stacked, with the row indices: added into place by the gather rule, once.
fn scatter_rows(
    graph: &RwLock<Graph>,
    loop_output: NodeId,
    capture: NodeId,
    rows: NodeId,
    index: NodeId,
) -> Result<NodeId> {
    let (all, rows, capture) = {
        let mut g = graph.write();
        let rows = g.loop_stack(loop_output, rows)?;
        let index = g.loop_stack(loop_output, index)?;
        let capture = visible(&mut g, capture)?;
        let read = Op::Table(TableOps::IndexSelect(IndexSelect::row()));
        (g.op(read, vec![capture, index], Some("gradients/StackedRows"))?, rows, capture)
    };
    let current = graph.read().current_frame();
    let grads = gradients_in(graph, &[all], &[capture], &[Some(rows)], &[], Some(current))?;
    grads[0].ok_or_else(|| Error::Gradient("internal: no gradient through the stacked row reads".into()))
}

/// The gradient While of the forward While `owner`; returns its outputs for the carried
/// variables and captures, and whether each got a gradient from the body.
fn build_gradient_loop(
    graph: &RwLock<Graph>,
    owner: NodeId,
    owner_name: &str,
    forward: &Forward,
    carried: &Carried,
    stacks: &[(NodeId, NodeId)],
) -> Result<(Vec<NodeId>, Vec<bool>, RowGrads)> {
    let (inits, metas, trips) = {
        let mut g = graph.write();
        let trips = loop_output(&mut g, owner, forward.frame.args.len(), DType::I64, Some(vec![]), "loop_counter");
        let trips = visible(&mut g, trips)?;
        let mut inits = vec![g.constant(Tensor::scalar(0i64, DType::I64), Some("gradients/while/zero"))];
        let mut metas = vec![(DType::I64, Some(vec![]))];
        for &k in &carried.vars {
            let arg = &g.nodes[forward.frame.args[k]];
            let (dtype, shape) = (arg.dtype, arg.shape.clone());
            metas.push((dtype, shape.clone()));
            let init = match carried.upstream[k] {
                Some(grad) => grad,
                None => {
                    let exit = loop_output(&mut g, owner, k, dtype, shape, "Exit");
                    let exit = visible(&mut g, exit)?;
                    g.op(Op::FullLike(0.0), vec![exit], Some("gradients/zeros_like"))?
                }
            };
            inits.push(init);
        }
        for &c in &carried.captures {
            let node = &g.nodes[c];
            metas.push((node.dtype, node.shape.clone()));
            let c = visible(&mut g, c)?;
            inits.push(g.op(Op::FullLike(0.0), vec![c], Some("gradients/zeros_like"))?);
        }
        (inits, metas, trips)
    };
    let cond = {
        let mut g = graph.write();
        let frame = g.push_frame(FrameKind::LoopCond);
        let built = loop_args(&mut g, &metas).and_then(|args| g.op(Op::Compare(CmpOp::Lt), vec![args[0], trips], None));
        g.pop_frame(frame)?;
        (frame, built?)
    };
    let body = graph.write().push_frame(FrameKind::LoopBody);
    let built = gradient_body(graph, owner, forward, carried, stacks, &metas, trips);
    graph.write().pop_frame(body)?;
    let (outputs, has_gradient, rows) = built?;
    let mut g = graph.write();
    let name = format!("gradients/{owner_name}_grad/While");
    let (_, exits) = g.while_loop(cond.0, body, &inits, cond.1, &outputs, None, true, Some(&name))?;
    Ok((exits, has_gradient, rows))
}

/// For each row read of a capture: the capture, the read's gradient and its index, as nodes
/// of the gradient body.
type RowGrads = Vec<(NodeId, NodeId, NodeId)>;

fn loop_args(graph: &mut Graph, metas: &[(DType, PartialShape)]) -> Result<Vec<NodeId>> {
    metas.iter().map(|(dtype, shape)| graph.frame_arg(*dtype, shape.clone(), None)).collect()
}

/// Inside the open gradient body: one iteration of the gradient loop. Returns its outputs
/// (counter, then the carried gradients) and whether each carried value got a gradient.
fn gradient_body(
    graph: &RwLock<Graph>,
    owner: NodeId,
    forward: &Forward,
    carried: &Carried,
    stacks: &[(NodeId, NodeId)],
    metas: &[(DType, PartialShape)],
    trips: NodeId,
) -> Result<(Vec<NodeId>, Vec<bool>, RowGrads)> {
    let (args, next, iteration) = {
        let mut g = graph.write();
        let args = loop_args(&mut g, metas)?;
        let next = g.op(Op::Scalar(ScalarOp::Add, Scalar::Int(1)), vec![args[0]], None)?;
        let iteration = g.op(Op::Binary(BinaryOp::Sub), vec![trips, next], Some("gradients/iteration"))?;
        (args, next, iteration)
    };
    let _active = Activation::begin(forward.body, owner, iteration);
    let mut ys: Vec<NodeId> = carried.vars.iter().map(|&k| forward.frame.outputs[k]).collect();
    let reads: Vec<(NodeId, NodeId)> =
        carried.by_rows.iter().flat_map(|(c, reads)| reads.iter().map(move |&r| (*c, r))).collect();
    let xs: Vec<NodeId> = carried
        .vars
        .iter()
        .map(|&k| forward.frame.args[k])
        .chain(carried.captures.iter().copied())
        .chain(reads.iter().map(|&(_, r)| r))
        .collect();
    let mut grad_ys: Vec<Option<NodeId>> = args[1..=carried.vars.len()].iter().map(|&a| Some(a)).collect();
    for &(x, g) in stacks {
        let row = Op::Table(TableOps::IndexSelect(IndexSelect::row()));
        ys.push(x);
        grad_ys.push(Some(graph.write().op(row, vec![g, iteration], Some("gradients/StackRow"))?));
    }
    let mut grads = gradients_in(graph, &ys, &xs, &grad_ys, &[], Some(forward.body))?;
    let row_grads = grads.split_off(xs.len() - reads.len());
    let mut g = graph.write();
    let current = g.current_frame();
    let mut rows = Vec::new();
    for ((capture, read), grad) in reads.into_iter().zip(row_grads) {
        let Some(grad) = grad else { continue };
        let index = g.nodes[read].inputs[1];
        let index = local_copy(&mut g, &mut HashMap::new(), index)?;
        let [grad, index] = [grad, index].map(|n| match g.nodes[n].frame == current {
            true => Ok(n),
            false => g.op(Op::Copy, vec![n], None),
        });
        rows.push((capture, grad?, index?));
    }
    let mut outputs = vec![next];
    let mut has_gradient = Vec::with_capacity(grads.len());
    for (i, grad) in grads.into_iter().enumerate() {
        let arg = args[1 + i];
        let accumulates = i >= carried.vars.len();
        // A variable's gradient is its upstream gradient when the loop runs no iteration.
        has_gradient.push(grad.is_some() || !accumulates);
        let out = match grad {
            Some(grad) if accumulates => g.op(Op::Binary(BinaryOp::Add), vec![arg, grad], None)?,
            Some(grad) => grad,
            None if accumulates => arg,
            None => g.op(Op::FullLike(0.0), vec![arg], Some("gradients/zeros_like"))?,
        };
        outputs.push(keep_invariant(&mut g, out, arg)?);
    }
    Ok((outputs, has_gradient, rows))
}

/// `out`, reshaped at run time to `arg`'s shape when inference could not tell that it has
/// it (the gradient loop's variables keep the shape invariants of the forward loop's).
fn keep_invariant(graph: &mut Graph, out: NodeId, arg: NodeId) -> Result<NodeId> {
    if super::frames::shape_within(&graph.nodes[out].shape, &graph.nodes[arg].shape) {
        return Ok(out);
    }
    graph.op(Op::ReshapeLike, vec![out, arg], None)
}

impl Graph {
    /// The values `value` (a node of the body of the While that `loop_output` is an output
    /// of) had in the iterations, stacked along a new first dim: `map_fn`'s and `scan`'s
    /// results, kept without a copy per iteration.
    pub fn loop_stack(&mut self, loop_output: NodeId, value: NodeId) -> Result<NodeId> {
        let owner = match self.node(loop_output)? {
            node if matches!(node.kind, NodeKind::Unpack { exit: true, .. }) => node.inputs[0],
            node => {
                return Err(Error::InvalidArgument(format!(
                    "loop_stack: '{}' is not an output of a while_loop",
                    node.name
                )))
            }
        };
        let NodeKind::While { body, .. } = self.node(owner)?.kind else {
            return Err(Error::InvalidArgument(format!("internal: '{}' is not a While", self.nodes[owner].name)));
        };
        let node = self.node(value)?;
        if node.frame != body || !node.kind.has_value() {
            return Err(Error::InvalidArgument(format!(
                "loop_stack: '{}' is not a value computed in the body of '{}'",
                node.name, self.nodes[owner].name
            )));
        }
        stack_of(self, owner, body, value)
    }
}
