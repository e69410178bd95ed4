//! Static graphs (TF1 style): nodes are built once with their shapes and
//! dtypes inferred, differentiated symbolically with the same derivative rules
//! as the eager tape, compiled into plans and executed by the eager kernels.

pub mod apply_adam;
mod commit_phase;
mod cond_gradients;
pub mod control;
pub mod control_flow;
pub mod debug_ops;
pub mod executor;
pub mod frames;
pub mod fusion;
pub mod gradients;
pub mod infer;
pub mod memory_plan;
mod node;
pub mod plan;
pub mod session;
pub mod summarize;
mod while_gradients;

pub use frames::{FrameId, FrameKind, ROOT};
pub use infer::{fmt_partial, known, may_be};
pub(crate) use node::tf_op_name;
pub use node::{AssignMode, GraphFunction, GraphNode, NodeKind, VariableInfo};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::random::{Distribution, Sampler};
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::Arc;
use std::thread::ThreadId;

pub type NodeId = usize;
pub type VarId = usize;

/// A shape known up to some dims (`None` dims) or not at all (`None` rank).
pub type PartialShape = Option<Vec<Option<usize>>>;

#[derive(Default)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub variables: Vec<VariableInfo>,
    /// How often each name (lowercased, scope included) was given out, as TF's `_names_in_use`.
    name_counts: HashMap<String, usize>,
    /// Each thread's current name scope (`a/b`, or empty at the root), as TF's thread-local name stack.
    name_scopes: HashMap<ThreadId, String>,
    /// Each thread's open `control_dependencies` blocks.
    control: control::ControlFrames,
    /// The frames of cond branches and loops; frame `id` is `frames[id - 1]` (see `frames`).
    frames: Vec<frames::Frame>,
    /// Each thread's open frames.
    open_frames: frames::OpenFrames,
    edit: Option<OpenEdit>,
    /// How many edits were undone: node ids they used are given to new nodes, so
    /// plans compiled before an undo may name other nodes now.
    undone: u64,
}

/// Undoable edits of one thread (a `gradients` call, which may call back into user
/// code that adds nodes too). While they are open only that thread may add to the
/// graph, so undoing one removes exactly what it added.
struct OpenEdit {
    thread: ThreadId,
    /// One mark per edit begun and not yet ended, innermost last.
    marks: Vec<EditMark>,
}

/// What the graph held when an edit began.
struct EditMark {
    nodes: usize,
    variables: usize,
    frames: usize,
    name_counts: HashMap<String, usize>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Whether the calling thread may add to the graph now: not while another
    /// thread's undoable edit is open (the caller waits and asks again).
    pub fn may_edit(&self) -> bool {
        self.edit.as_ref().is_none_or(|e| e.thread == std::thread::current().id())
    }

    /// Begins an undoable edit by the calling thread (edits nest); false, changing
    /// nothing, while another thread's edit is open.
    pub fn begin_edit(&mut self) -> bool {
        if !self.may_edit() {
            return false;
        }
        let mark = EditMark {
            nodes: self.nodes.len(),
            variables: self.variables.len(),
            frames: self.frames.len(),
            name_counts: self.name_counts.clone(),
        };
        let thread = std::thread::current().id();
        self.edit.get_or_insert_with(|| OpenEdit { thread, marks: vec![] }).marks.push(mark);
        true
    }

    /// Ends the calling thread's innermost edit; with `undo`, removes the nodes,
    /// variables and names it added.
    pub fn end_edit(&mut self, undo: bool) -> Result<()> {
        let not_open = || Error::InvalidArgument("end_edit: this thread has no open edit of the graph".into());
        let edit = self.edit.as_mut().filter(|e| e.thread == std::thread::current().id()).ok_or_else(not_open)?;
        let mark = edit.marks.pop().ok_or_else(not_open)?;
        if edit.marks.is_empty() {
            self.edit = None;
        }
        if undo {
            self.undone += 1;
            self.nodes.truncate(mark.nodes);
            self.control.forget_from(mark.nodes);
            self.variables.truncate(mark.variables);
            self.frames.truncate(mark.frames);
            self.open_frames.forget_from(mark.frames + 1);
            self.name_counts = mark.name_counts;
        }
        Ok(())
    }

    /// How many edits were undone so far (see `end_edit`).
    pub fn undone_edits(&self) -> u64 {
        self.undone
    }

    pub fn node(&self, id: NodeId) -> Result<&GraphNode> {
        self.nodes.get(id).ok_or_else(|| Error::InvalidArgument(format!("node {id} is not in this graph")))
    }

    /// The calling thread's name scope: ops it adds are named `scope/Name`.
    pub fn name_scope(&self) -> &str {
        self.name_scopes.get(&std::thread::current().id()).map_or("", String::as_str)
    }

    /// Sets the calling thread's name scope (`""` for the root).
    pub fn set_name_scope(&mut self, scope: &str) {
        let thread = std::thread::current().id();
        if scope.is_empty() {
            self.name_scopes.remove(&thread);
        } else {
            self.name_scopes.insert(thread, scope.to_string());
        }
    }

    /// `name` under the calling thread's name scope, made unique as TF's `Graph.unique_name`:
    /// `scope/name`, or `scope/name_1`, `scope/name_2`, ... when taken. Op names and scope
    /// names share this one namespace, compared without case. With `mark_as_used` false the
    /// name is only predicted, not taken.
    pub fn unique_name(&mut self, name: &str, mark_as_used: bool) -> String {
        let scope = self.name_scope();
        let full = if scope.is_empty() { name.to_string() } else { format!("{scope}/{name}") };
        let key = full.to_lowercase();
        let uses = self.name_counts.get(&key).copied().unwrap_or(0);
        if mark_as_used {
            self.name_counts.insert(key.clone(), uses + 1);
        }
        if uses == 0 {
            return full;
        }
        let mut suffix = uses;
        while self.name_counts.contains_key(&format!("{key}_{suffix}")) {
            suffix += 1;
        }
        if mark_as_used {
            self.name_counts.insert(format!("{key}_{suffix}"), 1);
        }
        format!("{full}_{suffix}")
    }

    /// Adds a node with `inputs`, run after the open `control_dependencies` blocks' controls.
    /// Its inputs must be in the current frame or frames around it (see `frames`).
    fn push(
        &mut self,
        kind: NodeKind,
        inputs: Vec<NodeId>,
        name: Option<&str>,
        dtype: DType,
        shape: PartialShape,
    ) -> Result<NodeId> {
        let inputs = self.read_variables_here(inputs);
        let control_inputs = self.control.controls_for(&inputs);
        let base = name.map(str::to_string).unwrap_or_else(|| kind.type_name(&shape));
        self.check_frames(&inputs, &control_inputs, &base)?;
        self.note_captures(&inputs, &control_inputs);
        let frame = self.current_frame();
        Ok(self.push_node(GraphNode { kind, inputs, control_inputs, name: String::new(), dtype, shape, frame }, name))
    }

    /// Adds a node without inputs (its controls were checked when their block opened).
    fn push_leaf(&mut self, kind: NodeKind, name: Option<&str>, dtype: DType, shape: PartialShape) -> NodeId {
        let control_inputs = self.control.controls_for(&[]);
        self.note_captures(&[], &control_inputs);
        let frame = self.current_frame();
        let node = GraphNode { kind, inputs: vec![], control_inputs, name: String::new(), dtype, shape, frame };
        self.push_node(node, name)
    }

    /// Adds `node`, named `name` (or its op type) made unique under the name scope.
    fn push_node(&mut self, mut node: GraphNode, name: Option<&str>) -> NodeId {
        let base = name.map(str::to_string).unwrap_or_else(|| node.kind.type_name(&node.shape));
        // A name ending in '/' is a name scope's own name (TF's `name_from_scope_name`): taken as it is.
        node.name = match base.strip_suffix('/') {
            Some(exact) => exact.to_string(),
            None => self.unique_name(&base, true),
        };
        self.nodes.push(node);
        let id = self.nodes.len() - 1;
        self.control.record(id);
        id
    }

    /// Opens a `control_dependencies` block of the calling thread: nodes it adds until the
    /// block closes run after `controls` (with `None`, after none of the outer blocks'
    /// controls). Returns how many blocks the thread has open.
    pub fn push_control_frame(&mut self, controls: Option<Vec<NodeId>>) -> Result<usize> {
        let current = self.current_frame();
        for &c in controls.iter().flatten() {
            let node = self.node(c)?;
            if !self.frame_encloses(node.frame, current) {
                return Err(Error::InvalidArgument(format!(
                    "control_dependencies: '{}' is inside a cond branch or while loop that this block is not in; \
                     it cannot be a control input here",
                    node.name
                )));
            }
        }
        Ok(self.control.push(controls))
    }

    /// Closes the calling thread's innermost `control_dependencies` block.
    pub fn pop_control_frame(&mut self) -> Result<()> {
        if self.control.pop() {
            Ok(())
        } else {
            Err(Error::InvalidArgument("pop_control_frame: this thread has no open control_dependencies block".into()))
        }
    }

    fn check_inputs(&self, inputs: &[NodeId]) -> Result<()> {
        for &i in inputs {
            let node = self.node(i)?;
            if !node.kind.has_value() {
                return Err(Error::InvalidArgument(format!(
                    "'{}' is an operation without a value and cannot be used as an input",
                    node.name
                )));
            }
        }
        Ok(())
    }

    pub fn placeholder(&mut self, dtype: DType, shape: PartialShape, name: Option<&str>) -> NodeId {
        self.push_leaf(NodeKind::Placeholder, Some(name.unwrap_or("Placeholder")), dtype, shape)
    }

    pub fn constant(&mut self, value: Tensor, name: Option<&str>) -> NodeId {
        let (dtype, shape) = (value.dtype(), known(value.shape()));
        self.push_leaf(NodeKind::Constant(value), Some(name.unwrap_or("Const")), dtype, shape)
    }

    /// A random node drawing `dist` in `shape` and `dtype`.
    pub fn random(
        &mut self,
        dist: Distribution,
        shape: Vec<usize>,
        dtype: DType,
        seed: Option<u64>,
        name: Option<&str>,
    ) -> Result<NodeId> {
        let partial = known(&shape);
        let sampler = Sampler::Draw { dist, shape };
        dist.check(sampler.type_name(), dtype)?;
        Ok(self.push_leaf(NodeKind::Random { sampler, seed }, name, dtype, partial))
    }

    /// A random node drawing `dist` in `dtype` and in the shape the 1-D integer node `dims` holds.
    pub fn random_shaped(
        &mut self,
        dist: Distribution,
        dims: NodeId,
        dtype: DType,
        seed: Option<u64>,
        name: Option<&str>,
    ) -> Result<NodeId> {
        self.check_inputs(&[dims])?;
        let sampler = Sampler::DrawShaped { dist };
        dist.check(sampler.type_name(), dtype)?;
        let node = self.node(dims)?;
        let shape = crate::ops::creation::infer_dims((&node.shape, node.dtype), sampler.type_name())?;
        self.push(NodeKind::Random { sampler, seed }, vec![dims], name, dtype, shape)
    }

    /// A random node giving `input` with its first dim shuffled (TF's `random_shuffle`).
    pub fn shuffle(&mut self, input: NodeId, seed: Option<u64>, name: Option<&str>) -> Result<NodeId> {
        self.check_inputs(&[input])?;
        let node = self.node(input)?;
        let (dtype, shape) = (node.dtype, node.shape.clone());
        self.push(NodeKind::Random { sampler: Sampler::ShuffleRows, seed }, vec![input], name, dtype, shape)
    }

    /// A new variable and the node that reads it.
    pub fn variable(&mut self, dtype: DType, shape: Vec<usize>, name: Option<&str>) -> (VarId, NodeId) {
        let var = self.variables.len();
        let read = self.push_leaf(NodeKind::VariableRead(var), Some(name.unwrap_or("Variable")), dtype, known(&shape));
        let name = self.nodes[read].name.clone();
        self.variables.push(VariableInfo { name, read_node: read, dtype, shape });
        (var, read)
    }

    /// Adds an op node, inferring (and checking) its shape and dtype.
    pub fn op(&mut self, op: Op, inputs: Vec<NodeId>, name: Option<&str>) -> Result<NodeId> {
        self.check_inputs(&inputs)?;
        let metas: Vec<(&PartialShape, DType)> =
            inputs.iter().map(|&i| (&self.nodes[i].shape, self.nodes[i].dtype)).collect();
        let (shape, dtype) = infer::infer(&op, &metas)?;
        self.push(NodeKind::Op(op), inputs, name, dtype, shape)
    }

    pub fn assign(
        &mut self,
        var: VarId,
        mode: AssignMode,
        locking: bool,
        value: NodeId,
        name: Option<&str>,
    ) -> Result<NodeId> {
        self.check_inputs(&[value])?;
        let info = self
            .variables
            .get(var)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("variable {var} is not in this graph")))?;
        let v = &self.nodes[value];
        if v.dtype != info.dtype {
            return Err(Error::DType(format!(
                "assign to '{}': the value has dtype {} but the variable is {}",
                info.name,
                v.dtype.name(),
                info.dtype.name()
            )));
        }
        if !may_be(&v.shape, &info.shape) {
            return Err(Error::Shape(format!(
                "assign to '{}': shapes must be equal, but the variable is {} and the value is {}",
                info.name,
                fmt_partial(&known(&info.shape)),
                fmt_partial(&v.shape)
            )));
        }
        let kind = NodeKind::Assign { var, mode, locking };
        let shape = known(&info.shape);
        let base = kind.type_name(&shape);
        self.push(kind, vec![value], Some(name.unwrap_or(&base)), info.dtype, shape)
    }

    /// A node without a value that runs after `members` (TF's `group`, a `NoOp` with
    /// control inputs), and after the open `control_dependencies` blocks' controls.
    pub fn group(&mut self, members: Vec<NodeId>, name: Option<&str>) -> Result<NodeId> {
        for &m in &members {
            self.node(m)?;
        }
        let mut control_inputs = self.control.controls_for(&[]);
        for m in members {
            if !control_inputs.contains(&m) {
                control_inputs.push(m);
            }
        }
        self.check_frames(&[], &control_inputs, name.unwrap_or("NoOp"))?;
        self.note_captures(&[], &control_inputs);
        let node = GraphNode {
            kind: NodeKind::Group,
            inputs: vec![],
            control_inputs,
            name: String::new(),
            dtype: DType::Bool,
            shape: Some(vec![]),
            frame: self.current_frame(),
        };
        Ok(self.push_node(node, name))
    }

    /// Wraps a user Function's call: returns the call node and one output node per forward output.
    pub fn function_call(
        &mut self,
        function: Arc<dyn GraphFunction>,
        outputs: &[NodeId],
        inputs: &[NodeId],
    ) -> Result<(NodeId, Vec<NodeId>)> {
        self.check_inputs(outputs)?;
        self.check_inputs(inputs)?;
        let mut all = outputs.to_vec();
        all.extend_from_slice(inputs);
        let name = function.name().to_string();
        let kind = NodeKind::FunctionCall { function, num_outputs: outputs.len() };
        let call = self.push(kind, all, Some(&name), DType::Bool, Some(vec![]))?;
        let outs = outputs
            .iter()
            .enumerate()
            .map(|(index, &o)| {
                let (dtype, shape) = (self.nodes[o].dtype, self.nodes[o].shape.clone());
                self.push(NodeKind::FunctionOutput { index }, vec![call, o], Some(&name), dtype, shape)
            })
            .collect::<Result<_>>()?;
        Ok((call, outs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::elementwise::UnaryOp;

    #[test]
    fn an_undone_edit_removes_its_nodes_variables_and_names() {
        let mut graph = Graph::new();
        let x = graph.placeholder(DType::F32, Some(vec![Some(2)]), Some("x"));
        assert!(graph.begin_edit());
        graph.op(Op::Unary(UnaryOp::Exp), vec![x], None).unwrap();
        assert!(graph.begin_edit(), "edits of one thread nest");
        graph.variable(DType::F32, vec![2], Some("v"));
        graph.end_edit(false).unwrap();
        graph.end_edit(true).unwrap();
        assert_eq!(graph.nodes.len(), 1);
        assert!(graph.variables.is_empty());
        let exp = graph.op(Op::Unary(UnaryOp::Exp), vec![x], None).unwrap();
        assert_eq!(graph.nodes[exp].name, "Exp", "the undone edit's names are free again");
        assert!(graph.end_edit(false).is_err(), "no edit is open any more");
    }

    #[test]
    fn names_follow_tf_uniquifying_under_name_scopes() {
        let mut graph = Graph::new();
        let x = graph.placeholder(DType::F32, Some(vec![Some(2)]), Some("x"));
        assert_eq!(graph.unique_name("a", true), "a");
        graph.set_name_scope("a");
        let exp = graph.op(Op::Unary(UnaryOp::Exp), vec![x], None).unwrap();
        let exp_1 = graph.op(Op::Unary(UnaryOp::Exp), vec![x], None).unwrap();
        assert_eq!((graph.nodes[exp].name.as_str(), graph.nodes[exp_1].name.as_str()), ("a/Exp", "a/Exp_1"));
        graph.set_name_scope("");
        assert_eq!(graph.unique_name("A", false), "A_1", "names compare without case");
        assert_eq!(graph.unique_name("a", true), "a_1", "a scope name and an op name share one namespace");
        graph.placeholder(DType::F32, None, Some("b_1"));
        graph.placeholder(DType::F32, None, Some("b"));
        let b = graph.placeholder(DType::F32, None, Some("b"));
        assert_eq!(graph.nodes[b].name, "b_2", "b_1 was taken by name");
        let exact = graph.placeholder(DType::F32, None, Some("a/"));
        assert_eq!(graph.nodes[exact].name, "a", "a name ending in '/' is taken as it is");
        std::thread::scope(|scope| {
            scope.spawn(|| assert_eq!(Graph::new().name_scope(), ""));
        });
    }

    #[test]
    fn another_threads_edit_keeps_this_thread_out_until_it_ends() {
        let graph = parking_lot::RwLock::new(Graph::new());
        assert!(graph.write().begin_edit());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                assert!(!graph.read().may_edit());
                assert!(!graph.write().begin_edit());
            });
        });
        graph.write().end_edit(false).unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| assert!(graph.read().may_edit()));
        });
    }
}
