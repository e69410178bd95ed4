//! Frames: the sub-graphs of `cond` branches and of `while_loop` conds and bodies
//! (functional control flow, as TF's cond_v2/while_v2). A thread opens a frame, builds
//! the branch or body in it, and closes it; the `Cond` or `While` node made afterwards
//! in the enclosing frame owns it. A plan compiles each frame into a sub-plan that the
//! owner's step runs (see `plan::SubPlan`). Nodes of a frame may read nodes of the
//! frames around it (captures, read once when the owner's step starts), never the
//! other way round: outer nodes reach a frame's values through the owner's `Unpack`s.

use super::{fmt_partial, Graph, GraphNode, NodeId, NodeKind, PartialShape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::thread::ThreadId;

pub type FrameId = usize;
/// The frame of every node built outside control flow.
pub const ROOT: FrameId = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A branch of a `Cond`.
    Branch,
    /// The condition of a `While`: its args are the loop variables, its one output a bool.
    LoopCond,
    /// The body of a `While`: its args are the loop variables, its outputs their next values.
    LoopBody,
}

#[derive(Clone)]
pub struct Frame {
    pub parent: FrameId,
    pub kind: FrameKind,
    /// The `FrameArg` nodes, by index.
    pub args: Vec<NodeId>,
    /// Value nodes of enclosing frames read inside, in order of first use.
    pub captures: Vec<NodeId>,
    /// Nodes of enclosing frames that nodes inside run after: the owner runs after them.
    pub control_captures: Vec<NodeId>,
    pub outputs: Vec<NodeId>,
    pub owner: Option<NodeId>,
    /// In a loop body: the nodes whose value in each iteration the owner keeps, stacked,
    /// for the gradient loop to read (see `while_gradients`).
    pub stacked: Vec<NodeId>,
}

/// Each thread's open frames, innermost last.
#[derive(Default)]
pub(super) struct OpenFrames {
    by_thread: HashMap<ThreadId, Vec<FrameId>>,
}

impl OpenFrames {
    fn current(&self) -> FrameId {
        self.by_thread.get(&std::thread::current().id()).and_then(|f| f.last().copied()).unwrap_or(ROOT)
    }

    /// Forgets the frames from `first` on (an undone edit removed them).
    pub(super) fn forget_from(&mut self, first: FrameId) {
        for frames in self.by_thread.values_mut() {
            frames.retain(|&f| f < first);
        }
        self.by_thread.retain(|_, frames| !frames.is_empty());
    }
}

/// What kind of control flow holds a frame, for errors.
fn frame_word(kind: FrameKind) -> &'static str {
    match kind {
        FrameKind::Branch => "a cond branch",
        FrameKind::LoopCond | FrameKind::LoopBody => "a while loop",
    }
}

/// The most specific shape every one of `shapes` has (TF's `most_specific_compatible_shape`).
fn common_shape<'a>(mut shapes: impl Iterator<Item = &'a PartialShape>) -> PartialShape {
    let first = shapes.next()?.clone()?;
    shapes.try_fold(first, |acc, s| {
        let dims = s.as_ref()?;
        (dims.len() == acc.len()).then(|| acc.iter().zip(dims).map(|(a, b)| if a == b { *a } else { None }).collect())
    })
}

/// Whether a value of shape `inner` always has the (less or as specific) shape `outer`.
pub fn shape_within(inner: &PartialShape, outer: &PartialShape) -> bool {
    match (inner, outer) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(i), Some(o)) => i.len() == o.len() && i.iter().zip(o).all(|(a, b)| b.is_none() || a == b),
    }
}

impl Graph {
    /// The calling thread's innermost open frame (`ROOT` outside control flow).
    pub fn current_frame(&self) -> FrameId {
        self.open_frames.current()
    }

    pub fn frame(&self, id: FrameId) -> Result<&Frame> {
        id.checked_sub(1)
            .and_then(|i| self.frames.get(i))
            .ok_or_else(|| Error::InvalidArgument(format!("frame {id} is not in this graph")))
    }

    pub(super) fn frame_mut(&mut self, id: FrameId) -> Result<&mut Frame> {
        id.checked_sub(1)
            .and_then(|i| self.frames.get_mut(i))
            .ok_or_else(|| Error::InvalidArgument(format!("frame {id} is not in this graph")))
    }

    /// How many frames the graph has (ids run from 1 to this).
    pub fn num_frames(&self) -> usize {
        self.frames.len()
    }

    /// Whether `outer` is `inner` or encloses it.
    pub fn frame_encloses(&self, outer: FrameId, inner: FrameId) -> bool {
        let mut f = inner;
        loop {
            if f == outer {
                return true;
            }
            match self.frame(f) {
                Ok(frame) => f = frame.parent,
                Err(_) => return false,
            }
        }
    }

    /// Opens a frame of the calling thread inside its current one: the nodes it adds
    /// until `pop_frame` belong to it. The `control_dependencies` blocks open outside
    /// do not reach inside (they apply to the owner, as TF's do to a cond's Switch).
    pub fn push_frame(&mut self, kind: FrameKind) -> FrameId {
        let parent = self.current_frame();
        let frame = Frame {
            parent,
            kind,
            args: vec![],
            captures: vec![],
            control_captures: vec![],
            outputs: vec![],
            owner: None,
            stacked: vec![],
        };
        self.frames.push(frame);
        let id = self.frames.len();
        self.open_frames.by_thread.entry(std::thread::current().id()).or_default().push(id);
        self.control.push(None);
        id
    }

    /// Closes the calling thread's innermost frame, which must be `id`.
    pub fn pop_frame(&mut self, id: FrameId) -> Result<()> {
        let thread = std::thread::current().id();
        let frames = self.open_frames.by_thread.get_mut(&thread);
        match frames {
            Some(frames) if frames.last() == Some(&id) => {
                frames.pop();
                if frames.is_empty() {
                    self.open_frames.by_thread.remove(&thread);
                }
                self.control.pop();
                Ok(())
            }
            _ => {
                Err(Error::InvalidArgument(format!("pop_frame: frame {id} is not this thread's innermost open frame")))
            }
        }
    }

    /// A loop variable inside the current frame (a while loop's cond or body): argument
    /// `index`, of the invariant `shape`.
    pub fn frame_arg(&mut self, dtype: DType, shape: PartialShape, name: Option<&str>) -> Result<NodeId> {
        let current = self.current_frame();
        let frame = self.frame(current)?;
        if frame.kind == FrameKind::Branch {
            return Err(Error::InvalidArgument("frame_arg: a cond branch takes no arguments".into()));
        }
        let index = frame.args.len();
        let id = self.push_leaf(NodeKind::FrameArg { index }, name.or(Some("Identity")), dtype, shape);
        self.frame_mut(current)?.args.push(id);
        Ok(id)
    }

    /// Checks that the inputs and control inputs of a new node of the current frame are
    /// in it or in a frame around it (TF: "Cannot use 'x' as input to 'y' because 'x' is
    /// in a while loop."). `base` is the new node's name before it is made unique.
    pub(super) fn check_frames(&mut self, inputs: &[NodeId], controls: &[NodeId], base: &str) -> Result<()> {
        let current = self.current_frame();
        for &i in inputs.iter().chain(controls) {
            let frame = self.node(i)?.frame;
            if self.frame_encloses(frame, current) {
                continue;
            }
            let name = self.nodes[i].name.clone();
            let op = match base.strip_suffix('/') {
                Some(exact) => exact.to_string(),
                None => self.unique_name(base, false),
            };
            // The frames holding `i` that are not around the current one say what holds it.
            let mut in_loop = false;
            let mut f = frame;
            while !self.frame_encloses(f, current) {
                let outer = self.frame(f)?;
                in_loop |= outer.kind != FrameKind::Branch;
                f = outer.parent;
            }
            let kind = if in_loop { FrameKind::LoopBody } else { FrameKind::Branch };
            return Err(Error::InvalidArgument(format!(
                "Cannot use '{name}' as input to '{op}' because '{name}' is in {}.",
                frame_word(kind)
            )));
        }
        Ok(())
    }

    /// `inputs` with each read of a variable made outside the current frame replaced by a new
    /// read inside it: a branch or loop body reads the variable's value as it is when it runs,
    /// including what the body assigned in earlier iterations (TF1's ref variables).
    pub(super) fn read_variables_here(&mut self, mut inputs: Vec<NodeId>) -> Vec<NodeId> {
        let current = self.current_frame();
        if current == ROOT {
            return inputs;
        }
        for input in inputs.iter_mut() {
            let Some(node) = self.nodes.get(*input) else { continue };
            if let (NodeKind::VariableRead(var), true) = (&node.kind, node.frame != current) {
                let (var, dtype, shape) = (*var, node.dtype, node.shape.clone());
                *input = self.push_leaf(NodeKind::VariableRead(var), Some("read"), dtype, shape);
            }
        }
        inputs
    }

    /// Notes the inputs of a new node of the current frame that come from frames around it.
    pub(super) fn note_captures(&mut self, inputs: &[NodeId], controls: &[NodeId]) {
        let current = self.current_frame();
        if current == ROOT {
            return;
        }
        let outer = |g: &Graph, i: NodeId| g.nodes.get(i).is_some_and(|n| n.frame != current);
        let values: Vec<NodeId> = inputs.iter().copied().filter(|&i| outer(self, i)).collect();
        let orders: Vec<NodeId> = controls.iter().copied().filter(|&i| outer(self, i)).collect();
        let Ok(frame) = self.frame_mut(current) else { return };
        for i in values {
            if !frame.captures.contains(&i) {
                frame.captures.push(i);
            }
        }
        for c in orders {
            if !frame.control_captures.contains(&c) {
                frame.control_captures.push(c);
            }
        }
    }

    /// Checks that `frames` are closed frames of `kind` made in the current frame that no
    /// node owns yet, and makes the outputs of each that come from outside it captures.
    fn adopt_frames(&mut self, frames: &[(FrameId, FrameKind)], outputs: &[&[NodeId]]) -> Result<()> {
        let current = self.current_frame();
        for (&(id, kind), outs) in frames.iter().zip(outputs) {
            let frame = self.frame(id)?;
            let open = self.open_frames.by_thread.values().any(|f| f.contains(&id));
            if frame.kind != kind || frame.parent != current || frame.owner.is_some() || open {
                return Err(Error::InvalidArgument(format!(
                    "frame {id} is not a closed {kind:?} frame of the current frame that no cond or while_loop owns"
                )));
            }
            for &o in outs.iter() {
                let node = self.node(o)?;
                if !node.kind.has_value() {
                    return Err(Error::InvalidArgument(format!(
                        "'{}' is an operation without a value and cannot be returned from a cond branch or loop body",
                        node.name
                    )));
                }
                if !self.frame_encloses(node.frame, id) {
                    return Err(Error::InvalidArgument(format!(
                        "'{}' is in another cond branch or while loop and cannot be returned here",
                        node.name
                    )));
                }
                if node.frame != id {
                    let frame = self.frame_mut(id)?;
                    if !frame.captures.contains(&o) {
                        frame.captures.push(o);
                    }
                }
            }
            self.frame_mut(id)?.outputs = outs.to_vec();
        }
        Ok(())
    }

    /// The captures of `frames`, in order, without repeats; and their control captures.
    fn union_captures(&self, frames: &[FrameId]) -> Result<(Vec<NodeId>, Vec<NodeId>)> {
        let (mut values, mut controls) = (vec![], vec![]);
        for &f in frames {
            let frame = self.frame(f)?;
            for &c in &frame.captures {
                if !values.contains(&c) {
                    values.push(c);
                }
            }
            for &c in &frame.control_captures {
                if !controls.contains(&c) {
                    controls.push(c);
                }
            }
        }
        Ok((values, controls))
    }

    /// Adds an owner node (Cond or While) with `inputs` and the control captures of its
    /// frames, and one `Unpack` per output, of `metas`.
    fn push_owner(
        &mut self,
        kind: NodeKind,
        inputs: Vec<NodeId>,
        control_captures: Vec<NodeId>,
        name: &str,
        metas: Vec<(DType, PartialShape)>,
        exit: bool,
    ) -> Result<(NodeId, Vec<NodeId>)> {
        let mut control_inputs = self.control.controls_for(&inputs);
        for c in control_captures {
            if !control_inputs.contains(&c) && !inputs.contains(&c) {
                control_inputs.push(c);
            }
        }
        self.check_frames(&inputs, &control_inputs, name)?;
        self.note_captures(&inputs, &control_inputs);
        let frame = self.current_frame();
        let node =
            GraphNode { kind, inputs, control_inputs, name: String::new(), dtype: DType::Bool, shape: None, frame };
        let owner = self.push_node(node, Some(name));
        let unpack_name = if exit { "Exit" } else { "Merge" };
        let unpacks = metas
            .into_iter()
            .enumerate()
            .map(|(index, (dtype, shape))| {
                let node = GraphNode {
                    kind: NodeKind::Unpack { index, exit },
                    inputs: vec![owner],
                    control_inputs: vec![],
                    name: String::new(),
                    dtype,
                    shape,
                    frame,
                };
                self.push_node(node, Some(unpack_name))
            })
            .collect();
        Ok((owner, unpacks))
    }

    /// A `Cond` choosing one of `branches` (closed `Branch` frames with their `outputs`) by
    /// `pred`: a 0-d bool (true runs branch 0) or a 0-d int32/int64 index (out of range
    /// runs the last branch). Returns the owner node and one output node per branch output.
    pub fn cond(
        &mut self,
        pred: NodeId,
        branches: &[FrameId],
        outputs: &[Vec<NodeId>],
        name: Option<&str>,
    ) -> Result<(NodeId, Vec<NodeId>)> {
        self.check_inputs(&[pred])?;
        if branches.is_empty() || branches.len() != outputs.len() {
            return Err(Error::InvalidArgument(format!(
                "cond: {} branches with {} output lists; give at least one branch and one list per branch",
                branches.len(),
                outputs.len()
            )));
        }
        let p = self.node(pred)?;
        let fits = match p.dtype {
            DType::Bool => branches.len() == 2,
            DType::I32 | DType::I64 => true,
            _ => false,
        };
        if !fits {
            return Err(Error::DType(format!(
                "cond: the predicate '{}:0' must be a bool (or, to pick one of several branches, int32) scalar, not {}",
                p.name,
                p.dtype.name()
            )));
        }
        if p.shape.as_ref().is_some_and(|d| !d.is_empty()) {
            return Err(Error::Shape(format!(
                "Shape must be rank 0 but is rank {} for the predicate '{}:0' of cond (shape {})",
                p.shape.as_ref().map_or(0, Vec::len),
                p.name,
                fmt_partial(&p.shape)
            )));
        }
        let n = outputs[0].len();
        if outputs.iter().any(|o| o.len() != n) {
            let counts: Vec<String> = outputs.iter().map(|o| o.len().to_string()).collect();
            return Err(Error::InvalidArgument(format!(
                "cond: the branches return different numbers of tensors ({}); each must return the same structure",
                counts.join(", ")
            )));
        }
        let mut metas = Vec::with_capacity(n);
        for k in 0..n {
            let dtypes: Vec<DType> =
                outputs.iter().map(|o| self.nodes.get(o[k]).map_or(DType::Bool, |n| n.dtype)).collect();
            if let Some(other) = dtypes.iter().find(|&&d| d != dtypes[0]) {
                return Err(Error::DType(format!(
                    "Outputs of true_fn and false_fn must have the same type: {}, {}",
                    dtypes[0].name(),
                    other.name()
                )));
            }
            let shapes: Vec<&PartialShape> = outputs.iter().map(|o| &self.nodes[o[k]].shape).collect();
            metas.push((dtypes[0], common_shape(shapes.into_iter())));
        }
        let frames: Vec<(FrameId, FrameKind)> = branches.iter().map(|&b| (b, FrameKind::Branch)).collect();
        let outs: Vec<&[NodeId]> = outputs.iter().map(Vec::as_slice).collect();
        self.adopt_frames(&frames, &outs)?;
        let (captures, controls) = self.union_captures(branches)?;
        let inputs = std::iter::once(pred).chain(captures).collect();
        let kind = NodeKind::Cond { branches: branches.to_vec(), outputs: n, exports: vec![] };
        let (owner, unpacks) = self.push_owner(kind, inputs, controls, name.unwrap_or("If"), metas, false)?;
        for &b in branches {
            self.frame_mut(b)?.owner = Some(owner);
        }
        Ok((owner, unpacks))
    }

    /// A `While` over the loop variables `inits`: the closed frames `cond` (output
    /// `cond_output`, a 0-d bool) and `body` (outputs `body_outputs`, one per variable, of
    /// its dtype and within the shape its `FrameArg` has: the shape invariant). With
    /// `max_iterations` (a 0-d int node), it stops after that many iterations. Without
    /// `back_prop`, `gradients` passes no gradient through it.
    #[allow(clippy::too_many_arguments)]
    pub fn while_loop(
        &mut self,
        cond: FrameId,
        body: FrameId,
        inits: &[NodeId],
        cond_output: NodeId,
        body_outputs: &[NodeId],
        max_iterations: Option<NodeId>,
        back_prop: bool,
        name: Option<&str>,
    ) -> Result<(NodeId, Vec<NodeId>)> {
        self.check_inputs(inits)?;
        self.check_inputs(max_iterations.as_slice())?;
        let (cond_args, body_args) = (self.frame(cond)?.args.clone(), self.frame(body)?.args.clone());
        if cond_args.len() != inits.len() || body_args.len() != inits.len() || body_outputs.len() != inits.len() {
            return Err(Error::InvalidArgument(format!(
                "while_loop: {} loop variables, but the cond takes {}, the body takes {} and returns {}",
                inits.len(),
                cond_args.len(),
                body_args.len(),
                body_outputs.len()
            )));
        }
        let c = self.node(cond_output)?;
        if c.dtype != DType::Bool || c.shape.as_ref().is_some_and(|d| !d.is_empty()) {
            return Err(Error::InvalidArgument(format!(
                "while_loop: cond must return a scalar bool tensor, but it returned '{}:0' of dtype {} and shape {}",
                c.name,
                c.dtype.name(),
                fmt_partial(&c.shape)
            )));
        }
        if let Some(m) = max_iterations {
            let m = self.node(m)?;
            if !matches!(m.dtype, DType::I32 | DType::I64) || m.shape.as_ref().is_some_and(|d| !d.is_empty()) {
                return Err(Error::InvalidArgument(format!(
                    "while_loop: maximum_iterations must be a scalar int32 or int64 tensor, not {} of shape {}",
                    m.dtype.name(),
                    fmt_partial(&m.shape)
                )));
            }
        }
        let mut metas = Vec::with_capacity(inits.len());
        for ((&init, &arg), &out) in inits.iter().zip(&body_args).zip(body_outputs) {
            let (init, arg, out) = (self.node(init)?, self.node(arg)?, self.node(out)?);
            if out.dtype != arg.dtype || init.dtype != arg.dtype {
                return Err(Error::DType(format!(
                    "while_loop: the loop variable '{}:0' enters the loop as {} but the body returns {}",
                    init.name,
                    init.dtype.name(),
                    out.dtype.name()
                )));
            }
            if !shape_within(&out.shape, &arg.shape) {
                return Err(Error::InvalidArgument(format!(
                    "Input tensor '{}:0' enters the loop with shape {}, but has shape {} after one iteration. To \
                     allow the shape to vary across iterations, use the `shape_invariants` argument of tf.while_loop \
                     to specify a less-specific shape.",
                    init.name,
                    fmt_partial(&arg.shape),
                    fmt_partial(&out.shape)
                )));
            }
            metas.push((arg.dtype, arg.shape.clone()));
        }
        self.adopt_frames(
            &[(cond, FrameKind::LoopCond), (body, FrameKind::LoopBody)],
            &[&[cond_output], body_outputs],
        )?;
        let (captures, controls) = self.union_captures(&[cond, body])?;
        let inputs = inits.iter().copied().chain(captures).chain(max_iterations).collect();
        let kind =
            NodeKind::While { cond, body, vars: inits.len(), max_iterations: max_iterations.is_some(), back_prop };
        let (owner, unpacks) = self.push_owner(kind, inputs, controls, name.unwrap_or("While"), metas, true)?;
        self.frame_mut(cond)?.owner = Some(owner);
        self.frame_mut(body)?.owner = Some(owner);
        Ok((owner, unpacks))
    }
}
