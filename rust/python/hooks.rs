//! Tensor hooks from Python: `register_hook` and `register_post_accumulate_grad_hook`,
//! the handle that removes them, and callbacks queued to run at the end of a pass.

use super::convert::repr;
use super::errors::{argument_type_error, external};
use super::tensor::PyTensor;
use crate::autograd::hooks::{self, GradHook, HookHandle, PassCallback, PostAccumulateHook};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use std::sync::Arc;

/// A Python callable run with a gradient; it returns a replacement or None.
struct PythonGradHook(Py<PyAny>);

impl GradHook for PythonGradHook {
    fn call(&self, grad: &Tensor) -> Result<Option<Tensor>> {
        Python::attach(|py| {
            let out = self.0.bind(py).call1((PyTensor::wrap(grad.clone()),)).map_err(external)?;
            if out.is_none() {
                return Ok(None);
            }
            match out.cast::<PyTensor>() {
                Ok(t) => Ok(Some(t.get().inner.clone())),
                Err(_) => Err(Error::Gradient(format!(
                    "a tensor hook returned {}; it must return a Tensor or None",
                    repr(&out)
                ))),
            }
        })
    }
}

/// A Python callable run with a leaf once its `.grad` is updated; its result is ignored.
struct PythonPostAccumulateHook(Py<PyAny>);

impl PostAccumulateHook for PythonPostAccumulateHook {
    fn call(&self, leaf: &Tensor) -> Result<()> {
        Python::attach(|py| {
            self.0.bind(py).call1((PyTensor::wrap(leaf.clone()),)).map_err(external)?;
            Ok(())
        })
    }
}

/// `torch.utils.hooks.RemovableHandle` for tensor hooks: `remove()`, or use it in a `with` block.
#[pyclass(frozen, name = "RemovableHandle", module = "rustgrad.autograd")]
pub struct PyRemovableHandle {
    handle: HookHandle,
}

#[pymethods]
impl PyRemovableHandle {
    /// Unregisters the hook; a second call does nothing.
    fn remove(&self) {
        self.handle.remove();
    }

    #[getter]
    fn id(&self) -> u64 {
        self.handle.id()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.handle.remove();
    }
}

fn callable(hook: &Bound<'_, PyAny>, op: &str) -> PyResult<Py<PyAny>> {
    if !hook.is_callable() {
        let what = if op == "queue_callback" { "callback" } else { "hook" };
        return Err(argument_type_error(format!("{op}: the {what} must be callable, got {}", repr(hook))));
    }
    Ok(hook.clone().unbind())
}

pub fn register_hook(tensor: &Tensor, hook: &Bound<'_, PyAny>) -> PyResult<PyRemovableHandle> {
    let hook = Arc::new(PythonGradHook(callable(hook, "register_hook")?));
    Ok(PyRemovableHandle { handle: hooks::register_grad_hook(tensor, hook)? })
}

pub fn register_post_accumulate_grad_hook(tensor: &Tensor, hook: &Bound<'_, PyAny>) -> PyResult<PyRemovableHandle> {
    let hook = Arc::new(PythonPostAccumulateHook(callable(hook, "register_post_accumulate_grad_hook")?));
    Ok(PyRemovableHandle { handle: hooks::register_post_accumulate_hook(tensor, hook)? })
}

/// A Python callable run with no arguments once the pass that queued it is over.
struct PythonPassCallback(Py<PyAny>);

impl PassCallback for PythonPassCallback {
    fn call(&self) -> Result<()> {
        Python::attach(|py| {
            self.0.bind(py).call0().map_err(external)?;
            Ok(())
        })
    }
}

/// `Variable._execution_engine.queue_callback(callback)`: runs `callback()` once the
/// backward pass running now is over (from a hook or a custom Function's backward).
#[pyfunction]
pub fn _queue_callback(callback: &Bound<'_, PyAny>) -> PyResult<()> {
    let callback = Box::new(PythonPassCallback(callable(callback, "queue_callback")?));
    Ok(hooks::queue_callback(callback)?)
}
