//! Bindings of the static graph's debugging ops (`Print`, `Assert`, `CheckNumerics`) and
//! of reading a constant node's value (for assertions decided when the graph is built).

use super::convert::tensor_to_numpy;
use super::static_graph::PyGraph;
use crate::graph::debug_ops::{AssertItem, DebugOp};
use crate::graph::{NodeId, NodeKind};
use pyo3::prelude::*;

#[pymethods]
impl PyGraph {
    /// TF's `Print`: `input`'s value, and a line on standard error each time it runs.
    #[pyo3(signature = (input, data, message, first_n=None, summarize=3, name=None))]
    fn print_op(
        &self,
        input: NodeId,
        data: Vec<NodeId>,
        message: String,
        first_n: Option<u64>,
        summarize: i64,
        name: Option<String>,
    ) -> PyResult<NodeId> {
        let op = DebugOp::Print { message, first_n, summarize };
        let inputs = std::iter::once(input).chain(data).collect();
        self.with_mut(|g| g.debug_op(op, inputs, name.as_deref()))
    }

    /// TF's `Assert`: `data` items are texts, or None for the next of `tensors`.
    #[pyo3(signature = (condition, data, tensors, summarize=3, name=None))]
    fn assert_op(
        &self,
        condition: NodeId,
        data: Vec<Option<String>>,
        tensors: Vec<NodeId>,
        summarize: i64,
        name: Option<String>,
    ) -> PyResult<NodeId> {
        let data = data.into_iter().map(|d| d.map_or(AssertItem::Tensor, AssertItem::Text)).collect();
        let op = DebugOp::Assert { summarize, data };
        let inputs = std::iter::once(condition).chain(tensors).collect();
        self.with_mut(|g| g.debug_op(op, inputs, name.as_deref()))
    }

    /// TF's `CheckNumerics`: `input`'s value; the run fails when it holds NaN or Inf.
    #[pyo3(signature = (input, message, name=None))]
    fn check_numerics(&self, input: NodeId, message: String, name: Option<String>) -> PyResult<NodeId> {
        let op = DebugOp::CheckNumerics { message };
        self.with_mut(|g| g.debug_op(op, vec![input], name.as_deref()))
    }

    /// The value of a constant node as a numpy array, or None for any other node.
    fn node_constant_value<'py>(&self, py: Python<'py>, id: NodeId) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = self.with(|g| {
            Ok(match &g.node(id)?.kind {
                NodeKind::Constant(t) => Some(t.clone()),
                _ => None,
            })
        })?;
        value.map(|t| tensor_to_numpy(py, &t)).transpose()
    }
}
