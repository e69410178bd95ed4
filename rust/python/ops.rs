//! The op table, published as `_rustgrad.ops`: one `OpSpec` per op, named as in
//! the core. A spec is called on eager tensors, and static graphs `apply` it, so
//! neither front names an op by a string the core has to parse.

use super::convert::tensor_arg;
use super::tensor::{run_op, PyTensor};
use crate::op::Op;
use crate::ops::unary::UnaryOp;
use crate::ops::Spec;
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(frozen, name = "OpSpec", module = "rustgrad._rustgrad")]
pub struct PyOpSpec {
    op: UnaryOp,
}

impl PyOpSpec {
    fn spec(&self) -> &'static Spec {
        self.op.spec()
    }

    /// The core op this spec stands for.
    pub fn op(&self) -> Op {
        Op::Unary(self.op)
    }
}

#[pymethods]
impl PyOpSpec {
    /// The core and torch name.
    #[getter]
    fn name(&self) -> &'static str {
        self.spec().name
    }

    /// The op's family; it decides the Python signature (`"unary"`: one tensor in, one out).
    #[getter]
    fn kind(&self) -> &'static str {
        "unary"
    }

    #[getter]
    fn torch_aliases(&self) -> Vec<&'static str> {
        self.spec().torch_aliases.to_vec()
    }

    /// TF1 names in `rustgrad.static`; empty when TF1 has none.
    #[getter]
    fn tf(&self) -> Vec<&'static str> {
        self.spec().tf.to_vec()
    }

    #[getter]
    fn doc(&self) -> &'static str {
        self.spec().doc
    }

    #[getter]
    fn differentiable(&self) -> bool {
        self.spec().differentiable
    }

    /// Applies the op to an eager tensor, recording it when gradients are needed.
    fn __call__(&self, py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let x = tensor_arg(input, self.spec().name, "input")?;
        run_op(py, self.op(), &[&x.get().inner])
    }

    fn __repr__(&self) -> String {
        format!("<op {}>", self.spec().name)
    }
}

/// `{name: OpSpec}` for every op in the table, in declaration order.
pub fn op_table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = PyDict::new(py);
    for &op in UnaryOp::ALL {
        table.set_item(op.name(), PyOpSpec { op })?;
    }
    Ok(table)
}
