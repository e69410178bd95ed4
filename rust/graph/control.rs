//! Ordering of side effects, as TF1's `control_dependencies`: control frames give
//! each new node the nodes it must run after, and a plan makes a read of a variable
//! that is ordered after an assign of it see the assigned value.

use super::{AssignMode, Graph, NodeId, NodeKind, VarId};
use crate::error::{Error, Result};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::thread::ThreadId;

/// One `control_dependencies` block of a thread: the nodes made inside it run after
/// `controls`. A block of `None` (TF's `control_dependencies(None)`) clears the blocks
/// around it until it ends.
struct ControlFrame {
    controls: Option<Vec<NodeId>>,
    /// The nodes made inside the block (TF's `_seen_nodes`).
    made_inside: HashSet<NodeId>,
}

/// Each thread's open `control_dependencies` blocks, outermost first.
#[derive(Default)]
pub(super) struct ControlFrames {
    by_thread: HashMap<ThreadId, Vec<ControlFrame>>,
}

impl ControlFrames {
    /// The calling thread's blocks that apply now: those inside its innermost `None` block.
    fn active(&self) -> &[ControlFrame] {
        let Some(frames) = self.by_thread.get(&std::thread::current().id()) else { return &[] };
        let cleared_at = frames.iter().rposition(|f| f.controls.is_none()).map_or(0, |i| i + 1);
        &frames[cleared_at..]
    }

    /// Opens a block (`None` clears the outer ones). Controls that an open block already
    /// gives are left out, as TF does. Returns the number of the calling thread's open blocks.
    pub(super) fn push(&mut self, controls: Option<Vec<NodeId>>) -> usize {
        let controls = controls.map(|controls| {
            let current: HashSet<NodeId> =
                self.active().iter().flat_map(|f| f.controls.iter().flatten()).copied().collect();
            let mut own: Vec<NodeId> = vec![];
            for c in controls {
                if !current.contains(&c) && !own.contains(&c) {
                    own.push(c);
                }
            }
            own
        });
        let frames = self.by_thread.entry(std::thread::current().id()).or_default();
        frames.push(ControlFrame { controls, made_inside: HashSet::new() });
        frames.len()
    }

    /// Closes the calling thread's innermost block; false when it has none open.
    pub(super) fn pop(&mut self) -> bool {
        let thread = std::thread::current().id();
        let Some(frames) = self.by_thread.get_mut(&thread) else { return false };
        frames.pop();
        if frames.is_empty() {
            self.by_thread.remove(&thread);
        }
        true
    }

    /// The control inputs of a new node whose data inputs are `inputs`, as TF's
    /// `_control_dependencies_for_inputs`: each open block's controls, except for a block
    /// one of the inputs was made in (the input already runs after them), and except the
    /// inputs themselves.
    pub(super) fn controls_for(&self, inputs: &[NodeId]) -> Vec<NodeId> {
        let mut controls: Vec<NodeId> = vec![];
        for frame in self.active() {
            if inputs.iter().any(|i| frame.made_inside.contains(i)) {
                continue;
            }
            for &c in frame.controls.iter().flatten() {
                if !inputs.contains(&c) && !controls.contains(&c) {
                    controls.push(c);
                }
            }
        }
        controls
    }

    /// Notes a new node in every block that applies now.
    pub(super) fn record(&mut self, node: NodeId) {
        let Some(frames) = self.by_thread.get_mut(&std::thread::current().id()) else { return };
        let cleared_at = frames.iter().rposition(|f| f.controls.is_none()).map_or(0, |i| i + 1);
        for frame in &mut frames[cleared_at..] {
            frame.made_inside.insert(node);
        }
    }

    /// Forgets the nodes from `first` on (an undone edit removed them; their ids are reused).
    pub(super) fn forget_from(&mut self, first: NodeId) {
        for frame in self.by_thread.values_mut().flatten() {
            frame.made_inside.retain(|&n| n < first);
        }
    }
}

/// How control edges change a plan's reads of variables.
#[derive(Default)]
pub(super) struct OrderedReads {
    /// For a node, which of its inputs (by position) read a variable that an assign
    /// ordered before the node changed, and that assign: the input reads its value.
    pub(super) replaced: HashMap<NodeId, Vec<(usize, NodeId)>>,
    /// For an assign that adds or subtracts, an earlier assign of the same variable
    /// that it is ordered after: that assign's value is its base, not the run's start value.
    pub(super) base: HashMap<NodeId, NodeId>,
}

impl OrderedReads {
    pub(super) fn is_empty(&self) -> bool {
        self.replaced.is_empty() && self.base.is_empty()
    }

    /// The node's inputs, with the reads this ordering replaced.
    pub(super) fn inputs_of(&self, graph: &Graph, id: NodeId) -> Vec<NodeId> {
        let mut inputs = graph.nodes[id].inputs.clone();
        for &(slot, assign) in self.replaced.get(&id).into_iter().flatten() {
            inputs[slot] = assign;
        }
        inputs.extend(self.base.get(&id));
        inputs
    }
}

/// How a node that runs changes a variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    /// The node's value is the variable's new value (an assign, or ApplyAdam's variable).
    Value,
    /// The node changes the variable but its value is another's (ApplyAdam's m and v).
    Slot,
}

fn write_of(graph: &Graph, id: NodeId, var: VarId) -> Option<Write> {
    match graph.nodes[id].kind {
        NodeKind::Assign { var: v, .. } if v == var => Some(Write::Value),
        NodeKind::ApplyAdam { vars, .. } if vars.var == var => Some(Write::Value),
        NodeKind::ApplyAdam { vars, .. } if vars.m == var || vars.v == var => Some(Write::Slot),
        _ => None,
    }
}

/// A read of `var` by `reader`, ordered after `writer`, which changes `var` without having its value.
fn slot_read_error(graph: &Graph, reader: NodeId, writer: NodeId, var: VarId) -> Error {
    let (writer, var_name) = (&graph.nodes[writer], graph.variables.get(var).map_or("?", |v| v.name.as_str()));
    Error::InvalidArgument(format!(
        "'{}' reads the variable '{var_name}' after the {} op '{}' (through control dependencies), which \
         updates it as a slot: the op's value is its variable's new value, not the slot's, so the read cannot see \
         the slot's new value. Read the slot in a later run, or outside the control_dependencies block",
        graph.nodes[reader].name,
        writer.kind.type_name(&writer.shape),
        writer.name
    ))
}

/// Within a run every read of a variable sees its value from the start of the run,
/// unless the reader is ordered after an assign of the variable through a path with
/// at least one control edge: then it sees the value of the latest such assign (of
/// several that are not ordered among themselves, the last made, which also runs
/// last). An `ApplyAdam` counts as an assign of its variable; a read of its m or v
/// ordered after it is an error (its new slot values are no node's value).
/// `order` is the plan's nodes in increasing order; fed nodes do not run.
pub(super) fn order_reads(graph: &Graph, order: &[NodeId], fed: &HashSet<NodeId>) -> Result<OrderedReads> {
    let runs = |id: NodeId| !fed.contains(&id);
    let mut reads = OrderedReads::default();
    if !order.iter().any(|&id| runs(id) && !graph.nodes[id].control_inputs.is_empty()) {
        return Ok(reads);
    }
    let writes =
        |id: NodeId| runs(id) && matches!(graph.nodes[id].kind, NodeKind::Assign { .. } | NodeKind::ApplyAdam { .. });
    let assigned = |id: NodeId| writes(id).then_some(id);
    // For each node, the assigns that run before it through data edges only, and
    // through paths with a control edge.
    let mut by_data: HashMap<NodeId, BTreeSet<NodeId>> = HashMap::new();
    let mut by_control: HashMap<NodeId, BTreeSet<NodeId>> = HashMap::new();
    let empty = BTreeSet::new();
    for &id in order.iter().filter(|&&id| runs(id)) {
        let node = &graph.nodes[id];
        let (mut data, mut control) = (BTreeSet::new(), BTreeSet::new());
        for &i in &node.inputs {
            data.extend(by_data.get(&i).unwrap_or(&empty));
            data.extend(assigned(i));
            control.extend(by_control.get(&i).unwrap_or(&empty));
        }
        for &c in &node.control_inputs {
            control.extend(by_data.get(&c).unwrap_or(&empty));
            control.extend(by_control.get(&c).unwrap_or(&empty));
            control.extend(assigned(c));
        }
        // The latest node ordered before this one through a control edge that changes var.
        let latest_assign_of = |var: VarId| -> Result<Option<NodeId>> {
            match control.iter().rev().find_map(|&a| write_of(graph, a, var).map(|w| (a, w))) {
                Some((writer, Write::Slot)) => Err(slot_read_error(graph, id, writer, var)),
                found => Ok(found.map(|(writer, _)| writer)),
            }
        };
        for (slot, &i) in node.inputs.iter().enumerate() {
            if let (NodeKind::VariableRead(var), true) = (&graph.nodes[i].kind, runs(i)) {
                if let Some(assign) = latest_assign_of(*var)? {
                    reads.replaced.entry(id).or_default().push((slot, assign));
                }
            }
        }
        if let NodeKind::Assign { var, mode: AssignMode::Add | AssignMode::Sub, .. } = node.kind {
            if let Some(assign) = latest_assign_of(var)? {
                reads.base.insert(id, assign);
            }
        }
        by_data.insert(id, data);
        by_control.insert(id, control);
    }
    Ok(reads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::executor::execute_with;
    use crate::graph::plan::compile;
    use crate::op::Op;
    use crate::tensor::Tensor;

    fn scalar(graph: &mut Graph, value: f64) -> NodeId {
        graph.constant(Tensor::scalar(value, DType::F64), None)
    }

    /// Runs `fetches` with the variable 0 at `start`; returns the fetched values and the assigns.
    fn run(graph: &Graph, fetches: &[NodeId], start: f64) -> (Vec<Option<f64>>, Vec<f64>) {
        let plan = compile(graph, fetches, &[]).unwrap();
        let variables = vec![Some(Tensor::scalar(start, DType::F64))];
        let result = execute_with(&plan, vec![], &variables).unwrap();
        let item = |t: &Tensor| t.to_f64_vec()[0];
        (
            result.fetched.iter().map(|v| v.as_ref().map(item)).collect(),
            result.assigns.iter().map(|(_, t)| item(t)).collect(),
        )
    }

    #[test]
    fn blocks_give_new_nodes_their_controls_as_tf_does() {
        let mut graph = Graph::new();
        let (a, b) = (scalar(&mut graph, 1.0), scalar(&mut graph, 2.0));
        graph.push_control_frame(Some(vec![a])).unwrap();
        let inside = scalar(&mut graph, 3.0);
        graph.push_control_frame(Some(vec![a, b])).unwrap();
        let nested = graph.op(Op::Copy, vec![b], None).unwrap();
        let dominated = graph.op(Op::Copy, vec![inside], None).unwrap();
        graph.push_control_frame(None).unwrap();
        let cleared = scalar(&mut graph, 4.0);
        graph.pop_control_frame().unwrap();
        graph.pop_control_frame().unwrap();
        let group = graph.group(vec![b], None).unwrap();
        graph.pop_control_frame().unwrap();
        let controls = |id: NodeId| graph.nodes[id].control_inputs.clone();
        assert_eq!(controls(inside), vec![a]);
        assert_eq!(controls(nested), vec![a], "b is a data input, and the inner block's a repeats the outer's");
        assert_eq!(controls(dominated), vec![b], "its input was made in the outer block, whose control it then has");
        assert_eq!(controls(cleared), Vec::<NodeId>::new());
        assert_eq!((graph.nodes[group].inputs.len(), controls(group)), (0, vec![a, b]));
        assert!(graph.pop_control_frame().is_err(), "no block is open any more");
    }

    #[test]
    fn a_read_ordered_after_an_assign_sees_its_value_and_others_the_start_value() {
        let mut graph = Graph::new();
        let (var, read) = graph.variable(DType::F64, vec![], Some("v"));
        let five = scalar(&mut graph, 5.0);
        let assign = graph.assign(var, AssignMode::Set, false, five, None).unwrap();
        let before = graph.op(Op::Copy, vec![read], None).unwrap();
        graph.push_control_frame(Some(vec![assign])).unwrap();
        let after = graph.op(Op::Copy, vec![read], None).unwrap();
        graph.pop_control_frame().unwrap();
        let two = scalar(&mut graph, 2.0);
        let after_through_data =
            graph.op(Op::Binary(crate::kernels::elementwise::BinaryOp::Mul), vec![after, two], None).unwrap();
        let (fetched, assigns) = run(&graph, &[before, after, after_through_data], 1.0);
        assert_eq!(fetched, vec![Some(1.0), Some(5.0), Some(10.0)]);
        assert_eq!(assigns, vec![5.0], "the assign ran although only its dependents were fetched");
    }

    #[test]
    fn an_assign_add_ordered_after_another_adds_to_its_value() {
        let mut graph = Graph::new();
        let (var, _) = graph.variable(DType::F64, vec![], Some("v"));
        let (one, ten) = (scalar(&mut graph, 1.0), scalar(&mut graph, 10.0));
        let first = graph.assign(var, AssignMode::Add, false, one, None).unwrap();
        graph.push_control_frame(Some(vec![first])).unwrap();
        let second = graph.assign(var, AssignMode::Sub, false, ten, None).unwrap();
        graph.pop_control_frame().unwrap();
        let unordered = graph.assign(var, AssignMode::Add, false, ten, None).unwrap();
        assert_eq!(run(&graph, &[second], 1.0), (vec![Some(-8.0)], vec![2.0, -8.0]));
        assert_eq!(run(&graph, &[unordered], 1.0), (vec![Some(11.0)], vec![11.0]), "no control edge: the start value");
        let group = graph.group(vec![first], None).unwrap();
        assert_eq!(run(&graph, &[group], 1.0), (vec![None], vec![2.0]), "a group runs its members");
    }
}
