//! `rustgrad.device`: the CPU device object, and reading device arguments and strings.

use super::{opt_arg, type_name};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyTuple};

/// `rustgrad.device`: only the CPU exists; asking for another device fails here, clearly.
#[pyclass(frozen, name = "device", module = "rustgrad", eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone)]
pub struct PyDevice {
    kind: String,
    index: Option<i64>,
}

fn no_device(kind: &str) -> PyErr {
    crate::python::errors::device_error(format!(
        "rustgrad runs on the CPU only; device '{kind}' is not available. Use device='cpu' \
         (rustgrad.cuda.is_available() is always False)"
    ))
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (kind, index=None))]
    fn new(kind: &Bound<'_, PyAny>, index: Option<&Bound<'_, PyAny>>) -> PyResult<PyDevice> {
        let index = opt_arg::<i64>(index, "device", "index")?;
        if let Ok(d) = kind.cast::<PyDevice>() {
            return match index {
                None => Ok(d.get().clone()),
                Some(_) => Err(crate::python::errors::argument_type_error(
                    "device: an index cannot be given together with a device object".into(),
                )),
            };
        }
        let text = kind.cast::<PyString>().map_err(|_| {
            crate::python::errors::argument_type_error(format!(
                "device: expected a device string such as 'cpu' or 'cpu:0', got {}",
                type_name(kind)
            ))
        })?;
        let text = text.to_cow()?;
        let text: &str = &text;
        let (name, parsed_index) = parse_device_string(text)?;
        if name != "cpu" {
            return Err(no_device(text));
        }
        if parsed_index.is_some() && index.is_some() {
            return Err(crate::python::errors::device_error(format!(
                "device: the type string must not include an index because index was passed explicitly: {text}"
            )));
        }
        let index = index.or(parsed_index);
        if index.is_some_and(|i| i < 0) {
            return Err(crate::python::errors::device_error(format!(
                "device: the device index must not be negative, got {}",
                index.unwrap_or_default()
            )));
        }
        Ok(PyDevice { kind: name.to_string(), index })
    }

    /// Pickles as `device(type, index)`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let (py, d) = (slf.py(), slf.get());
        let args = (d.kind.clone(), d.index).into_pyobject(py)?.into_any();
        PyTuple::new(py, [slf.get_type().into_any(), args])
    }

    #[getter]
    fn r#type(&self) -> &str {
        &self.kind
    }

    #[getter]
    fn index(&self) -> Option<i64> {
        self.index
    }

    fn __repr__(&self) -> String {
        match self.index {
            Some(i) => format!("device(type='{}', index={i})", self.kind),
            None => format!("device(type='{}')", self.kind),
        }
    }

    fn __str__(&self) -> String {
        match self.index {
            Some(i) => format!("{}:{i}", self.kind),
            None => self.kind.clone(),
        }
    }
}

/// Device types PyTorch knows: a string naming one of them (with or without an
/// index) is a device, so `x.to(name)` treats it as one; any other string is a dtype.
const DEVICE_TYPES: [&str; 20] = [
    "cpu",
    "cuda",
    "mps",
    "xpu",
    "xla",
    "meta",
    "hip",
    "ipu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "ve",
    "fpga",
    "maia",
    "lazy",
    "vulkan",
    "hpu",
    "mtia",
    "privateuseone",
];

pub fn is_device_string(text: &str) -> bool {
    let kind = text.split_once(':').map_or(text, |(kind, _)| kind);
    DEVICE_TYPES.contains(&kind)
}

/// `"cpu"` or `"cpu:0"` into the type and the index; anything else after the colon is invalid.
fn parse_device_string(text: &str) -> PyResult<(&str, Option<i64>)> {
    let invalid = || {
        crate::python::errors::device_error(format!(
            "Invalid device string: '{text}'; expected a device type with an optional index, such as 'cpu' or 'cpu:0'"
        ))
    };
    match text.split_once(':') {
        None if !text.is_empty() => Ok((text, None)),
        None => Err(invalid()),
        Some((kind, index)) => {
            let digits = !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit());
            let index = if digits { index.parse::<i64>().ok() } else { None };
            match index {
                Some(i) if !kind.is_empty() => Ok((kind, Some(i))),
                _ => Err(invalid()),
            }
        }
    }
}

pub fn cpu_device(py: Python<'_>) -> PyResult<Py<PyDevice>> {
    static CPU: PyOnceLock<Py<PyDevice>> = PyOnceLock::new();
    Ok(CPU.get_or_try_init(py, || Py::new(py, PyDevice { kind: "cpu".into(), index: None }))?.clone_ref(py))
}

/// Checks a `device=` argument: None, "cpu" or a cpu device are fine.
pub fn check_device(obj: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match obj {
        None => Ok(()),
        Some(o) if o.is_none() => Ok(()),
        Some(o) => PyDevice::new(o, None).map(|_| ()),
    }
}
