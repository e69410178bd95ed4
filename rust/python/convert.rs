//! Conversions between Python values and core values: dtypes, devices,
//! numpy arrays, scalars, shapes and index keys.

use super::tensor::PyTensor;
use crate::dtype::DType;
use crate::error::Error;
use crate::storage::{Buffer, ExternalBuffer};
use crate::tensor::Tensor;
use numpy::{
    npyffi, Element as _, PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString, PyTuple};

/// `rustgrad.float32` and friends: three singletons, compared by identity.
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
    fn itemsize(&self) -> usize {
        self.inner.size_in_bytes()
    }

    #[getter]
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn __reduce__(&self) -> (String, (String,)) {
        ("rustgrad._dtype_from_name".into(), (self.inner.name().into(),))
    }
}

pub fn dtype_object(py: Python<'_>, dtype: DType) -> PyResult<Py<PyDType>> {
    static OBJECTS: PyOnceLock<[Py<PyDType>; 3]> = PyOnceLock::new();
    let objects = OBJECTS.get_or_try_init(py, || -> PyResult<[Py<PyDType>; 3]> {
        Ok([
            Py::new(py, PyDType { inner: DType::F32 })?,
            Py::new(py, PyDType { inner: DType::F64 })?,
            Py::new(py, PyDType { inner: DType::Bool })?,
        ])
    })?;
    let index = match dtype {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::Bool => 2,
    };
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
                "unknown dtype {}; use rustgrad.float32, rustgrad.float64 or rustgrad.bool",
                repr(obj)
            ))
        })?;
    match name.as_str() {
        "float32" | "float64" | "bool" => Ok(DType::from_name(&name)?),
        other => {
            Err(Error::DType(format!("dtype {other} is not supported; rustgrad supports float32, float64 and bool"))
                .into())
        }
    }
}

pub fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<object>".into())
}

/// `rustgrad.device`: only the CPU exists; asking for another device fails here, clearly.
#[pyclass(frozen, name = "device", module = "rustgrad", eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone)]
pub struct PyDevice {
    kind: String,
    index: Option<i64>,
}

fn no_device(kind: &str) -> PyErr {
    super::errors::device_error(format!(
        "rustgrad runs on the CPU only; device '{kind}' is not available. Use device='cpu' \
         (rustgrad.cuda.is_available() is always False)"
    ))
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (kind, index=None))]
    fn new(kind: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<PyDevice> {
        if let Ok(d) = kind.cast::<PyDevice>() {
            return Ok(d.get().clone());
        }
        let text: String = kind.extract()?;
        let (name, parsed_index) = match text.split_once(':') {
            Some((n, i)) => (n.to_string(), i.parse::<i64>().ok()),
            None => (text.clone(), None),
        };
        if name != "cpu" {
            return Err(no_device(&text));
        }
        Ok(PyDevice { kind: name, index: index.or(parsed_index) })
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

/// Copies a C-contiguous float32/float64/bool numpy array into a new tensor.
pub fn tensor_from_numpy(array: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    super::errors::guard(|| copy_from_numpy(array))
}

fn copy_from_numpy(array: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    fn take<T: numpy::Element + crate::storage::Element>(array: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
        let Ok(view) = array.extract::<PyReadonlyArrayDyn<'_, T>>() else { return Ok(None) };
        let shape = view.shape().to_vec();
        // `as_slice` also accepts Fortran order; only a C-ordered slice is in row-major order.
        let data = match view.as_slice() {
            Ok(s) if view.is_c_contiguous() => crate::kernels::layout::copy_slice(s),
            _ => crate::storage::collect_vec(view.len(), view.as_array().iter().copied()),
        };
        Ok(Some(Tensor::from_vec(data, shape)?))
    }
    if let Some(t) = take::<f32>(array)? {
        return Ok(t);
    }
    if let Some(t) = take::<f64>(array)? {
        return Ok(t);
    }
    if let Some(t) = take::<bool>(array)? {
        return Ok(t);
    }
    Err(Error::DType(format!(
        "cannot make a tensor from a numpy array of dtype {}; convert it to float32, float64 or bool",
        array.getattr("dtype").map(|d| repr(&d)).unwrap_or_default()
    ))
    .into())
}

/// Keeps a numpy array alive while a tensor shares its memory.
struct NumpyOwner(#[allow(dead_code)] Py<PyAny>);

/// A tensor sharing the memory of a C-contiguous, aligned, writeable float32 or
/// float64 numpy array; None when the array is not like that (the caller copies).
pub fn share_from_numpy(array: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    fn share<T: numpy::Element>(array: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Option<Tensor>> {
        let Ok(typed) = array.cast::<PyArrayDyn<T>>() else { return Ok(None) };
        let needed = npyffi::NPY_ARRAY_C_CONTIGUOUS | npyffi::NPY_ARRAY_ALIGNED | npyffi::NPY_ARRAY_WRITEABLE;
        // SAFETY: `typed` is a live numpy array; reading its flags field is what numpy's own macros do.
        let flags = unsafe { (*typed.as_array_ptr()).fields.flags };
        if flags & needed != needed || typed.len() == 0 {
            return Ok(None);
        }
        let shape = typed.shape().to_vec();
        let owner = Box::new(NumpyOwner(array.clone().unbind()));
        // SAFETY: the array is C-contiguous, aligned and writeable with `len` elements of `dtype`,
        // and `owner` holds a reference to it, so its memory lives as long as the buffer.
        let buffer = unsafe { ExternalBuffer::new(typed.data().cast(), typed.len(), dtype, owner) };
        match buffer {
            Some(b) => Ok(Some(Tensor::from_external(Buffer::External(b), shape)?)),
            None => Ok(None),
        }
    }
    if let Some(t) = share::<f32>(array, DType::F32)? {
        return Ok(Some(t));
    }
    share::<f64>(array, DType::F64)
}

/// A numpy array that views the tensor's memory (no copy). `base` must keep the
/// tensor's storage alive (the Python tensor object does). Bool tensors are copied.
pub fn share_to_numpy<'py>(py: Python<'py>, t: &Tensor, base: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let descr = match t.dtype() {
        DType::F32 => f32::get_dtype(py),
        DType::F64 => f64::get_dtype(py),
        DType::Bool => return tensor_to_numpy(py, t),
    };
    let item = t.dtype().size_in_bytes() as isize;
    let mut dims: Vec<npyffi::npy_intp> = t.shape().iter().map(|&d| d as npyffi::npy_intp).collect();
    let mut strides: Vec<npyffi::npy_intp> = t.strides().iter().map(|&s| (s * item) as npyffi::npy_intp).collect();
    let data = {
        let guard = t.storage().read();
        // The storage never moves its elements, so the address stays valid after the lock is released.
        guard.as_ptr().wrapping_add(t.offset() * item as usize) as *mut std::ffi::c_void
    };
    // SAFETY: `data` addresses the tensor's elements with these dims and strides inside its
    // storage; `base` becomes the array's owner and keeps that storage alive.
    unsafe {
        let array = npyffi::PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            descr.into_dtype_ptr(),
            dims.len() as std::ffi::c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data,
            npyffi::NPY_ARRAY_WRITEABLE,
            std::ptr::null_mut(),
        );
        if array.is_null() {
            return Err(PyErr::fetch(py));
        }
        if npyffi::PY_ARRAY_API.PyArray_SetBaseObject(py, array.cast(), base.into_ptr()) != 0 {
            pyo3::ffi::Py_DecRef(array);
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, array))
    }
}

/// A new numpy array holding a copy of the tensor's values.
pub fn tensor_to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    super::errors::guard(|| copy_to_numpy(py, t))
}

fn copy_to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape().to_vec();
    let flat = match t.dtype() {
        DType::F32 => PyArray1::from_vec(py, t.to_vec::<f32>()?).into_any(),
        DType::F64 => PyArray1::from_vec(py, t.to_vec::<f64>()?).into_any(),
        DType::Bool => PyArray1::from_vec(py, t.to_vec::<bool>()?).into_any(),
    };
    flat.call_method1("reshape", (PyTuple::new(py, shape)?,))
}

/// A Python number, or a tensor, as an operand of an arithmetic op.
pub enum Operand {
    Tensor(Tensor),
    Scalar(f64),
}

/// Converts the other side of an operator. Returns None for types the operator
/// does not handle, so Python can try the reflected method.
pub fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Some(Operand::Tensor(t.get().inner.clone())));
    }
    if let Ok(v) = obj.extract::<f64>() {
        return Ok(Some(Operand::Scalar(v)));
    }
    let py = obj.py();
    let is_array_like = obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || py.import("numpy")?.getattr("ndarray").is_ok_and(|nd| obj.is_instance(&nd).unwrap_or(false));
    if is_array_like {
        let t = py.import("rustgrad")?.getattr("as_tensor")?.call1((obj,))?;
        return Ok(Some(Operand::Tensor(t.cast::<PyTensor>()?.get().inner.clone())));
    }
    Ok(None)
}

/// A shape given as `*sizes` or as one sequence, possibly with -1.
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if let Ok(v) = first.extract::<Vec<isize>>() {
            return Ok(v);
        }
    }
    args.extract::<Vec<isize>>().map_err(|_| {
        Error::InvalidArgument(format!(
            "expected a shape as integers or one sequence of integers, got {}",
            repr(args.as_any())
        ))
        .into()
    })
}
