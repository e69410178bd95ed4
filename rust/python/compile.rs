//! `rustgrad.compile`'s bindings: start and end a trace, run a traced program, and
//! the data-read hooks of `Tensor` methods. The policy (guards, cache, warnings)
//! lives in `python/rustgrad/_compile.py`.

use super::errors::guard;
use super::tensor::PyTensor;
use crate::compile::{self, Output, Program};
use crate::tensor::Tensor;
use pyo3::prelude::*;

/// A traced call, replayable.
#[pyclass(name = "_CompiledProgram", module = "rustgrad._rustgrad", frozen)]
pub struct PyProgram {
    program: Program,
}

fn tensors(list: &[Bound<'_, PyTensor>]) -> Vec<Tensor> {
    list.iter().map(|t| t.get().inner.clone()).collect()
}

#[pymethods]
impl PyProgram {
    /// Everything that decides what the program computes: equal for two traces that ran
    /// the same kernels on the same values.
    #[getter]
    fn signature(&self) -> &str {
        self.program.signature()
    }

    fn __len__(&self) -> usize {
        self.program.len()
    }

    /// How many leaves' SGD steps run fused (one pass per leaf; the same bits).
    #[getter]
    fn fused_leaf_steps(&self) -> usize {
        self.program.fused_leaf_steps()
    }

    /// How many of those steps also run the matrix product that makes their gradient,
    /// applying the step as the product stores each element (the same bits).
    #[getter]
    fn fused_products(&self) -> usize {
        self.program.fused_products()
    }

    /// Why the program does not apply to these arguments and the current state, or None.
    fn check(&self, feeds: Vec<Bound<'_, PyTensor>>) -> Option<String> {
        self.program.check(&tensors(&feeds))
    }

    /// Runs the program on the call's tensor arguments; the returned tensors are the
    /// traced call's outputs. None (and nothing changed) when a guard fails.
    fn run(&self, py: Python<'_>, feeds: Vec<Bound<'_, PyTensor>>) -> PyResult<Option<Vec<PyTensor>>> {
        let feeds = tensors(&feeds);
        if self.program.check(&feeds).is_some() {
            return Ok(None);
        }
        let outputs = guard(|| Ok(py.detach(|| self.program.run(&feeds))?))?;
        Ok(Some(outputs.into_iter().map(PyTensor::wrap).collect()))
    }
}

/// Starts tracing this thread's eager work; `feeds` are the call's tensor arguments.
#[pyfunction]
pub fn _compile_begin(feeds: Vec<Bound<'_, PyTensor>>) -> PyResult<()> {
    Ok(compile::begin(tensors(&feeds))?)
}

/// Ends the trace. `outputs` are the call's returned tensors and the slots `item()`
/// gave out (ints). Returns the program, or why the call cannot be replayed.
#[pyfunction]
pub fn _compile_end(outputs: Vec<Bound<'_, PyAny>>) -> PyResult<(Option<PyProgram>, Option<String>)> {
    let outputs = outputs
        .iter()
        .map(|o| match o.cast::<PyTensor>() {
            Ok(t) => Ok(Output::Tensor(t.get().inner.clone())),
            Err(_) => o.extract::<usize>().map(Output::Slot),
        })
        .collect::<PyResult<Vec<_>>>();
    let outputs = match outputs {
        Ok(outputs) => outputs,
        Err(e) => {
            compile::abort();
            return Err(e);
        }
    };
    Ok(match compile::end(&outputs) {
        Ok(program) => (Some(PyProgram { program }), None),
        Err(reason) => (None, Some(reason)),
    })
}

/// Drops this thread's trace (the traced call raised).
#[pyfunction]
pub fn _compile_abort() {
    compile::abort()
}

/// Stops this thread's trace with `reason`: the call goes on eagerly.
#[pyfunction]
pub fn _compile_stop(reason: String) {
    compile::stop(|| reason)
}

/// Whether this thread is tracing.
#[pyfunction]
pub fn _compile_tracing() -> bool {
    compile::tracing_here()
}

/// A Tensor method hands data to Python (`bool(t)`, `float(t)`, `tolist()`...): while
/// tracing, the Python side stops the trace, warns or raises (`fullgraph=True`).
pub fn data_read(py: Python<'_>, what: &str) -> PyResult<()> {
    if !compile::tracing_here() {
        return Ok(());
    }
    py.import("rustgrad._compile")?.call_method1("_data_read", (what,))?;
    Ok(())
}

/// `t.item()` while tracing: a float that knows its slot, so that returning it is
/// replayable and using it in Python control flow is noticed.
pub fn traced_item(py: Python<'_>, t: &Tensor, value: Py<PyAny>) -> PyResult<Py<PyAny>> {
    if !compile::tracing_here() {
        return Ok(value);
    }
    match compile::read(t) {
        Some(slot) if t.dtype().is_float() => {
            Ok(py.import("rustgrad._compile")?.call_method1("_traced_item", (value, slot))?.unbind())
        }
        _ => {
            data_read(py, "Tensor.item() of a non-float tensor")?;
            Ok(value)
        }
    }
}
