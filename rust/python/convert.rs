//! Conversions between Python values and core values: dtypes, devices,
//! numpy arrays, scalars, shapes and index keys.

use super::tensor::PyTensor;
use crate::dtype::{dispatch, supported_names, DType, Scalar};
use crate::error::Error;
use crate::storage::{Buffer, ExternalBuffer};
use crate::tensor::Tensor;
use numpy::{
    npyffi, Element as _, PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString, PyTuple};

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
    fn new(kind: &Bound<'_, PyAny>, index: Option<&Bound<'_, PyAny>>) -> PyResult<PyDevice> {
        let index = opt_arg::<i64>(index, "device", "index")?;
        if let Ok(d) = kind.cast::<PyDevice>() {
            return match index {
                None => Ok(d.get().clone()),
                Some(_) => Err(super::errors::argument_type_error(
                    "device: an index cannot be given together with a device object".into(),
                )),
            };
        }
        let text = kind.cast::<PyString>().map_err(|_| {
            super::errors::argument_type_error(format!(
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
            return Err(super::errors::device_error(format!(
                "device: the type string must not include an index because index was passed explicitly: {text}"
            )));
        }
        let index = index.or(parsed_index);
        if index.is_some_and(|i| i < 0) {
            return Err(super::errors::device_error(format!(
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
        super::errors::device_error(format!(
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

/// Copies a numpy array of a rustgrad dtype into a new tensor.
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
    let taken = match array_dtype(array) {
        Some(DType::Bool) => take_bool(array)?,
        Some(dtype) => dispatch!(dtype, |T| take::<T>(array)?),
        None => None,
    };
    taken.ok_or_else(|| unsupported_array_dtype(array))
}

/// The rustgrad dtype of a numpy array of native byte order, if it has one.
fn array_dtype(array: &Bound<'_, PyAny>) -> Option<DType> {
    fn is<T: numpy::Element>(array: &Bound<'_, PyAny>) -> bool {
        array.cast::<PyArrayDyn<T>>().is_ok()
    }
    DType::ALL.into_iter().find(|&d| dispatch!(d, |T| is::<T>(array)))
}

/// numpy lets a bool array hold any byte (`np.frombuffer(b"\x02", bool)`), but a Rust
/// `bool` must be 0 or 1: the bytes are read as u8 and compared with zero. For the
/// same reason bool memory is never shared with numpy, in either direction.
fn take_bool(array: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if array.cast::<PyArrayDyn<bool>>().is_err() {
        return Ok(None);
    }
    let bytes = array.call_method1("view", ("u1",))?;
    let view = bytes.extract::<PyReadonlyArrayDyn<'_, u8>>()?;
    let shape = view.shape().to_vec();
    let data: Vec<bool> = crate::storage::collect_vec(view.len(), view.as_array().iter().map(|&b| b != 0));
    Ok(Some(Tensor::from_vec(data, shape)?))
}

/// Says why an array's dtype is refused: a float of non-native byte order is told
/// so (it already is float32 or float64), any other dtype is told what to convert to.
fn unsupported_array_dtype(array: &Bound<'_, PyAny>) -> PyErr {
    let dtype = array.getattr("dtype").ok();
    let text = |name: &str| -> Option<String> { dtype.as_ref()?.getattr(name).ok()?.str().ok().map(|s| s.to_string()) };
    let (kind, byte_order, name) = (text("kind"), text("byteorder"), text("name"));
    let supported_kind = kind.as_deref().is_some_and(|k| k == "f" || k == "i" || k == "u");
    if supported_kind && byte_order.as_deref().is_some_and(|b| b == ">" || b == "<") {
        let order = if byte_order.as_deref() == Some(">") { "big-endian" } else { "little-endian" };
        let name = name.unwrap_or_default();
        return Error::DType(format!(
            "cannot make a tensor from a {order} numpy array of dtype {name}; rustgrad needs the native byte order: \
             convert it with arr.astype(arr.dtype.newbyteorder('=')) (a copy), or \
             arr.byteswap().view(arr.dtype.newbyteorder()) to swap the bytes in a new array"
        ))
        .into();
    }
    Error::DType(format!(
        "cannot make a tensor from a numpy array of dtype {}; convert it to one of {}",
        dtype.map(|d| repr(&d)).unwrap_or_default(),
        supported_names()
    ))
    .into()
}

/// Keeps a numpy array alive while a tensor shares its memory.
struct NumpyOwner(#[allow(dead_code)] Py<PyAny>);

/// A tensor sharing the memory of a C-contiguous, aligned, writeable numpy array of a
/// numeric rustgrad dtype; None when the array is not like that (the caller copies).
/// Bool arrays are never shared (see `take_bool`).
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
    match array_dtype(array) {
        Some(DType::Bool) | None => Ok(None),
        Some(dtype) => dispatch!(dtype, |T| share::<T>(array, dtype)),
    }
}

/// A numpy array that views the tensor's memory (no copy). `base` must keep the
/// tensor's storage alive (the Python tensor object does). Bool tensors are copied.
pub fn share_to_numpy<'py>(py: Python<'py>, t: &Tensor, base: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if t.dtype() == DType::Bool {
        return tensor_to_numpy(py, t);
    }
    let descr = dispatch!(t.dtype(), |T| T::get_dtype(py));
    let item = t.dtype().size_in_bytes() as isize;
    let mut dims: Vec<npyffi::npy_intp> = t.shape().iter().map(|&d| d as npyffi::npy_intp).collect();
    let mut strides: Vec<npyffi::npy_intp> = t.strides().iter().map(|&s| (s * item) as npyffi::npy_intp).collect();
    t.storage().mark_exported();
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
    let flat = dispatch!(t.dtype(), |T| PyArray1::from_vec(py, t.to_vec::<T>()?).into_any());
    flat.call_method1("reshape", (PyTuple::new(py, shape)?,))
}

/// A Python number, or a tensor, as an operand of an arithmetic op: the core's own
/// enum, so an in-place op's value goes to the core as it was converted.
pub use crate::autograd::in_place::Value as Operand;

/// Converts the other side of an operator. Returns None for types the operator
/// does not handle, so Python can try the reflected method (and then raise its
/// own TypeError). A complex number raises: there is no complex dtype.
pub fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Some(Operand::Tensor(t.get().inner.clone())));
    }
    // Python numbers first (the common case), then the complex check: numpy's complex
    // scalars convert to float, silently dropping the imaginary part.
    let is_python_number = obj.is_instance_of::<pyo3::types::PyFloat>() || obj.is_instance_of::<pyo3::types::PyInt>();
    if !is_python_number && is_complex(obj) {
        return Err(super::errors::argument_type_error(format!(
            "complex numbers are not supported: rustgrad has no complex dtype (got {})",
            repr(obj)
        )));
    }
    if let Some(s) = scalar_value(obj)? {
        return Ok(Some(Operand::Scalar(s)));
    }
    if is_array_like(obj)? {
        let t = obj.py().import("rustgrad")?.getattr("as_tensor")?.call1((obj,))?;
        return Ok(Some(Operand::Tensor(t.cast::<PyTensor>()?.get().inner.clone())));
    }
    Ok(None)
}

/// A Python number, or a numpy scalar, as a core `Scalar` of its category: a bool,
/// an int (which must fit in 64 bits) or a float. None for anything else.
pub fn scalar_value(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<pyo3::types::PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Some(Scalar::Bool(obj.is_truthy()?)));
    }
    let numpy_kind = if obj.is_instance_of::<pyo3::types::PyInt>() {
        Some('i')
    } else if obj.py().import("numpy")?.getattr("generic").is_ok_and(|g| obj.is_instance(&g).unwrap_or(false)) {
        obj.getattr("dtype").and_then(|d| d.getattr("kind")).and_then(|k| k.extract::<char>()).ok()
    } else {
        None
    };
    match numpy_kind {
        Some('b') => Ok(Some(Scalar::Bool(obj.is_truthy()?))),
        Some('i' | 'u') => match obj.extract::<i64>() {
            Ok(i) => Ok(Some(Scalar::Int(i))),
            Err(_) => Err(super::errors::overflow_error(format!(
                "value cannot be converted to type int64 without overflow: {}; use a float ({}.0) or a smaller \
                 number",
                repr(obj),
                repr(obj)
            ))),
        },
        _ => Ok(obj.extract::<f64>().ok().map(Scalar::Float)),
    }
}

fn is_array_like(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.py().import("numpy")?.getattr("ndarray").is_ok_and(|nd| obj.is_instance(&nd).unwrap_or(false)))
}

/// A Python complex, or a numpy complex scalar or array (numpy's complex64 is not a Python complex).
fn is_complex(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<pyo3::types::PyComplex>()
        || obj.getattr("dtype").and_then(|d| d.getattr("kind")).is_ok_and(|k| k.eq("c").unwrap_or(false))
}

/// The right side of an in-place operator (`x += other`) that the operator
/// understands. Anything else fails to convert, which makes PyO3 return
/// `NotImplemented`: Python then tries `x + other`, and that raises the
/// TypeError (or defers to a graph tensor's reflected operator).
pub struct InPlaceOperand<'py>(pub Bound<'py, PyAny>);

impl<'a, 'py> FromPyObject<'a, 'py> for InPlaceOperand<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let obj = obj.to_owned();
        let understood = obj.cast::<PyTensor>().is_ok() || obj.extract::<f64>().is_ok() || is_array_like(&obj)?;
        if understood {
            Ok(InPlaceOperand(obj))
        } else {
            Err(super::errors::argument_type_error("not an operand of an in-place operator".into()))
        }
    }
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "<unknown type>".into())
}

/// What an argument of this Rust type must be, for error messages.
pub trait ArgType: for<'a, 'py> FromPyObject<'a, 'py> {
    const EXPECTED: &'static str;
}

impl ArgType for bool {
    const EXPECTED: &'static str = "a bool";
}

impl ArgType for isize {
    const EXPECTED: &'static str = "an int";
}

impl ArgType for i64 {
    const EXPECTED: &'static str = "an int";
}

impl ArgType for f64 {
    const EXPECTED: &'static str = "a number";
}

impl ArgType for usize {
    const EXPECTED: &'static str = "a non-negative int";
}

impl ArgType for String {
    const EXPECTED: &'static str = "a str";
}

impl ArgType for Vec<isize> {
    const EXPECTED: &'static str = "an int or a sequence of ints";
}

impl ArgType for Vec<Vec<isize>> {
    const EXPECTED: &'static str = "a sequence of (before, after) pairs of ints";
}

/// Converts an argument of a public function or method with PyO3's rules, but a
/// value of the wrong type raises `ArgumentTypeError` and an integer too large
/// raises `NumericOverflowError`, each naming the op, the argument and what it
/// takes. (Typed PyO3 parameters would raise a bare TypeError or OverflowError,
/// outside the RustgradError hierarchy; public entry points take `&Bound<PyAny>`
/// and convert through here instead.)
pub fn arg<T: ArgType>(obj: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<T> {
    obj.extract::<T>().map_err(|err| argument_error(obj, err.into(), op, name, T::EXPECTED))
}

/// `arg` for an optional argument: a missing argument and None both give None.
pub fn opt_arg<T: ArgType>(obj: Option<&Bound<'_, PyAny>>, op: &str, name: &str) -> PyResult<Option<T>> {
    match obj {
        Some(o) if !o.is_none() => arg(o, op, name).map(Some),
        _ => Ok(None),
    }
}

/// `arg` for an optional flag with a default.
pub fn flag(obj: Option<&Bound<'_, PyAny>>, default: bool, op: &str, name: &str) -> PyResult<bool> {
    Ok(opt_arg(obj, op, name)?.unwrap_or(default))
}

/// A Tensor argument, or `ArgumentTypeError` naming the op and the argument.
pub fn tensor_arg<'a, 'py>(obj: &'a Bound<'py, PyAny>, op: &str, name: &str) -> PyResult<&'a Bound<'py, PyTensor>> {
    obj.cast::<PyTensor>().map_err(|_| {
        super::errors::argument_type_error(format!("{op}: argument '{name}' must be a Tensor, got {}", type_name(obj)))
    })
}

fn argument_error(obj: &Bound<'_, PyAny>, err: PyErr, op: &str, name: &str, expected: &str) -> PyErr {
    let py = obj.py();
    if err.is_instance_of::<PyOverflowError>(py) {
        return super::errors::overflow_error(format!(
            "{op}: argument '{name}' is out of range: {} does not fit in a 64-bit integer",
            repr(obj)
        ));
    }
    if err.is_instance_of::<PyTypeError>(py) {
        return super::errors::argument_type_error(format!(
            "{op}: argument '{name}' must be {expected}, got {}",
            type_name(obj)
        ));
    }
    err
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
