//! `rustgrad.float32` and the other dtype objects, and reading a dtype argument.

use super::repr;
use crate::dtype::{supported_names, DType};
use crate::error::Error;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

/// `rustgrad.float32` and friends: one singleton per dtype, compared by identity.
/// Both fronts use them: torch's attributes (`is_floating_point`, `is_signed`,
/// `itemsize`) and TF's (`is_floating`, `is_integer`, `is_bool`, `base_dtype`,
/// `as_numpy_dtype`, `size`).
#[pyclass(frozen, name = "dtype", module = "rustgrad", eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct PyDType {
    pub inner: DType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("rustgrad.{}", self.inner.name())
    }

    #[getter]
    fn is_floating_point(&self) -> bool {
        self.inner.is_float()
    }

    #[getter]
    fn is_floating(&self) -> bool {
        self.inner.is_float()
    }

    #[getter]
    fn is_integer(&self) -> bool {
        self.inner.is_integer()
    }

    #[getter]
    fn is_bool(&self) -> bool {
        self.inner == DType::Bool
    }

    #[getter]
    fn is_signed(&self) -> bool {
        self.inner.is_signed()
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.size_in_bytes()
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size_in_bytes()
    }

    /// TF's non-reference dtype: rustgrad has no reference dtypes, so the dtype itself.
    #[getter]
    fn base_dtype(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The numpy scalar type of this dtype (`np.int32` for int32), as TF's `as_numpy_dtype`.
    #[getter]
    fn as_numpy_dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let name = if self.inner == DType::Bool { "bool_" } else { self.inner.name() };
        py.import("numpy")?.getattr(name)
    }

    #[getter]
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// Pickles as the global `rustgrad.<name>`, so unpickling gives back the same singleton.
    fn __reduce__(&self) -> &'static str {
        self.inner.name()
    }
}

pub fn dtype_object(py: Python<'_>, dtype: DType) -> PyResult<Py<PyDType>> {
    static OBJECTS: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();
    let objects = OBJECTS.get_or_try_init(py, || -> PyResult<Vec<Py<PyDType>>> {
        DType::ALL.iter().map(|&inner| Py::new(py, PyDType { inner })).collect()
    })?;
    let index = DType::ALL.iter().position(|&d| d == dtype).unwrap_or_default();
    Ok(objects[index].clone_ref(py))
}

/// Accepts a rustgrad dtype, its name, or anything numpy understands as a dtype.
pub fn parse_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().inner);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(DType::from_name(&s.to_string())?);
    }
    let py = obj.py();
    let name = py
        .import("numpy")
        .and_then(|np| np.getattr("dtype")?.call1((obj,)))
        .and_then(|d| d.getattr("name")?.extract::<String>())
        .map_err(|_| {
            Error::DType(format!(
                "unknown dtype {}; use a rustgrad dtype such as rustgrad.float32 or rustgrad.int64",
                repr(obj)
            ))
        })?;
    match DType::ALL.into_iter().find(|d| d.name() == name) {
        Some(dtype) => Ok(dtype),
        None => {
            Err(Error::DType(format!("dtype {name} is not supported; rustgrad supports {}", supported_names())).into())
        }
    }
}
