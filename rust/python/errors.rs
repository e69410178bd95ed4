//! The one place where core errors become Python exceptions, and the guard
//! that turns a Rust panic into `InternalError` instead of aborting.

use crate::error::Error;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Looks up an exception class defined in Python (`rustgrad.errors` or `rustgrad.static.errors`).
fn class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    module: &str,
    name: &str,
) -> Option<Bound<'py, PyType>> {
    cell.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        Ok(py.import(module)?.getattr(name)?.cast_into::<PyType>()?.unbind())
    })
    .ok()
    .map(|c| c.bind(py).clone())
}

macro_rules! error_class {
    ($fn_name:ident, $module:literal, $name:literal) => {
        fn $fn_name(py: Python<'_>) -> Option<Bound<'_, PyType>> {
            static CELL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
            class(py, &CELL, $module, $name)
        }
    };
}

error_class!(shape_error, "rustgrad.errors", "ShapeError");
error_class!(dtype_error, "rustgrad.errors", "DTypeError");
error_class!(index_error, "rustgrad.errors", "IndexOutOfRangeError");
error_class!(overflow_error_class, "rustgrad.errors", "NumericOverflowError");
error_class!(memory_error, "rustgrad.errors", "OutOfMemoryError");
error_class!(gradient_error, "rustgrad.errors", "GradientError");
error_class!(argument_error, "rustgrad.errors", "InvalidArgumentError");
error_class!(division_by_zero_error, "rustgrad.errors", "DivisionByZeroError");
error_class!(precondition_error, "rustgrad.errors", "FailedPreconditionError");
error_class!(internal_error, "rustgrad.errors", "InternalError");
error_class!(device_error_class, "rustgrad.errors", "DeviceError");
error_class!(argument_type_error_class, "rustgrad.errors", "ArgumentTypeError");
error_class!(dlpack_error_class, "rustgrad.errors", "DLPackError");
error_class!(dlpack_device_error_class, "rustgrad.errors", "DLPackDeviceError");

/// A `TypeError` that is also a `RustgradError`.
pub fn argument_type_error(msg: String) -> PyErr {
    Python::attach(|py| raise(py, argument_type_error_class(py), msg))
}

/// An `OverflowError` that is also a `RustgradError`.
pub fn overflow_error(msg: String) -> PyErr {
    Python::attach(|py| raise(py, overflow_error_class(py), msg))
}

pub fn device_error(msg: String) -> PyErr {
    Python::attach(|py| raise(py, device_error_class(py), msg))
}

/// A DLPack exchange refused (a `BufferError`, as the array-API standard says, that is
/// also a `RustgradError`).
pub fn dlpack_error(msg: String) -> PyErr {
    Python::attach(|py| raise(py, dlpack_error_class(py), msg))
}

/// A DLPack exchange refused because of the device: a `DLPackError` that is also a `DeviceError`.
pub fn dlpack_device_error(msg: String) -> PyErr {
    Python::attach(|py| raise(py, dlpack_device_error_class(py), msg))
}

fn raise(py: Python<'_>, cls: Option<Bound<'_, PyType>>, msg: String) -> PyErr {
    match cls {
        Some(cls) => PyErr::from_type(cls, msg),
        // Only if the Python package itself is broken.
        None => {
            let _ = py;
            PyRuntimeError::new_err(msg)
        }
    }
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        Python::attach(|py| match err {
            Error::Shape(m) => raise(py, shape_error(py), m),
            Error::DType(m) => raise(py, dtype_error(py), m),
            Error::Index(m) => raise(py, index_error(py), m),
            Error::OutOfMemory(m) => raise(py, memory_error(py), m),
            Error::Gradient(m) => raise(py, gradient_error(py), m),
            Error::InvalidArgument(m) => raise(py, argument_error(py), m),
            Error::DivisionByZero(m) => raise(py, division_by_zero_error(py), m),
            Error::FailedPrecondition(m) => raise(py, precondition_error(py), m),
            // Python's own handler runs now (KeyboardInterrupt, or the user's handler).
            Error::Interrupted => match py.check_signals() {
                Err(raised) => raised,
                Ok(()) => PyKeyboardInterrupt::new_err(()),
            },
            Error::Internal(m) => raise(py, internal_error(py), m),
            Error::External(payload) => match payload.downcast::<PyErr>() {
                Ok(user_error) => *user_error,
                Err(_) => raise(py, internal_error(py), "an external error of unknown type reached rustgrad".into()),
            },
        })
    }
}

/// Wraps a Python exception raised by user code so it can cross the core unchanged.
pub fn external(err: PyErr) -> Error {
    Error::External(Box::new(err))
}

/// Runs `f`, turning a panic into `InternalError` so that no panic reaches Python as
/// a `PanicException` (which `except Exception` would not catch).
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            if let Some(failure) = payload.downcast_ref::<crate::storage::AllocationFailed>() {
                return Python::attach(|py| Err(raise(py, memory_error(py), failure.message())));
            }
            if payload.is::<crate::interrupt::Interrupted>() {
                return Err(Error::Interrupted.into());
            }
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Python::attach(|py| {
                Err(raise(
                    py,
                    internal_error(py),
                    format!("internal error (this is a bug in rustgrad, please report it): {detail}"),
                ))
            })
        }
    }
}

/// Test hook: panics inside the guard, to prove panics become `InternalError`.
#[pyfunction]
pub fn _panic_for_test(message: &str) -> PyResult<()> {
    guard(|| panic!("{message}")) // invariant: panics on purpose, inside the guard, for the test of the guard.
}
