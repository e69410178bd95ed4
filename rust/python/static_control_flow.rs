//! Bindings of static control flow: frames, `cond` and `while_loop` nodes (see `graph::frames`).

use super::convert::parse_dtype;
use super::static_graph::PyGraph;
use crate::error::Error;
use crate::graph::{FrameId, FrameKind, NodeId, PartialShape};
use pyo3::prelude::*;

#[pymethods]
impl PyGraph {
    /// Opens a frame ("branch", "loop_cond" or "loop_body") of the calling thread; returns its id.
    fn push_frame(&self, kind: &str) -> PyResult<FrameId> {
        let kind = match kind {
            "branch" => FrameKind::Branch,
            "loop_cond" => FrameKind::LoopCond,
            "loop_body" => FrameKind::LoopBody,
            other => return Err(Error::InvalidArgument(format!("unknown frame kind '{other}'")).into()),
        };
        self.with_mut(|g| Ok(g.push_frame(kind)))
    }

    /// Closes the calling thread's innermost frame, `frame`.
    fn pop_frame(&self, frame: FrameId) -> PyResult<()> {
        guard_write(self, |g| g.pop_frame(frame))
    }

    /// The calling thread's innermost open frame (0 outside control flow).
    fn current_frame(&self) -> usize {
        self.inner.read().current_frame()
    }

    /// The frame a node belongs to (0 outside control flow).
    fn node_frame(&self, id: NodeId) -> PyResult<FrameId> {
        self.with(|g| Ok(g.node(id)?.frame))
    }

    /// The next loop variable of the current (loop) frame, with the invariant `shape`.
    #[pyo3(signature = (dtype, shape, name=None))]
    fn frame_arg(&self, dtype: &Bound<'_, PyAny>, shape: PartialShape, name: Option<String>) -> PyResult<NodeId> {
        let dtype = parse_dtype(dtype)?;
        self.with_mut(|g| g.frame_arg(dtype, shape, name.as_deref()))
    }

    /// A Cond node over closed branch frames; returns its output nodes.
    #[pyo3(signature = (pred, branches, outputs, name=None))]
    fn cond(
        &self,
        pred: NodeId,
        branches: Vec<FrameId>,
        outputs: Vec<Vec<NodeId>>,
        name: Option<String>,
    ) -> PyResult<Vec<NodeId>> {
        self.with_mut(|g| Ok(g.cond(pred, &branches, &outputs, name.as_deref())?.1))
    }

    /// The values a node of a loop's body had in each iteration, stacked (see `Graph::loop_stack`).
    fn loop_stack(&self, loop_output: NodeId, value: NodeId) -> PyResult<NodeId> {
        self.with_mut(|g| g.loop_stack(loop_output, value))
    }

    /// A While node over closed cond and body frames; returns its output nodes.
    #[pyo3(signature = (cond, body, inits, cond_output, body_outputs, max_iterations=None, back_prop=true, name=None))]
    #[allow(clippy::too_many_arguments)]
    fn while_loop(
        &self,
        cond: FrameId,
        body: FrameId,
        inits: Vec<NodeId>,
        cond_output: NodeId,
        body_outputs: Vec<NodeId>,
        max_iterations: Option<NodeId>,
        back_prop: bool,
        name: Option<String>,
    ) -> PyResult<Vec<NodeId>> {
        self.with_mut(|g| {
            let (_, outputs) = g.while_loop(
                cond,
                body,
                &inits,
                cond_output,
                &body_outputs,
                max_iterations,
                back_prop,
                name.as_deref(),
            )?;
            Ok(outputs)
        })
    }
}

/// Edits the graph without waiting for other threads' edits (closing a frame must not wait).
fn guard_write(graph: &PyGraph, f: impl FnOnce(&mut crate::graph::Graph) -> crate::error::Result<()>) -> PyResult<()> {
    super::errors::guard(|| Ok(f(&mut graph.inner.write())?))
}
