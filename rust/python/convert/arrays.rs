//! numpy arrays in and out: copies either way, and tensors and arrays that share memory.

use super::repr;
use crate::dtype::{dispatch, supported_names, DType};
use crate::error::Error;
use crate::storage::{Buffer, ExternalBuffer};
use crate::tensor::Tensor;
use numpy::{
    npyffi, Element as _, PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Copies a numpy array of a rustgrad dtype into a new tensor.
pub fn tensor_from_numpy(array: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    crate::python::errors::guard(|| copy_from_numpy(array))
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
    crate::python::errors::guard(|| copy_to_numpy(py, t))
}

fn copy_to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape().to_vec();
    let flat = dispatch!(t.dtype(), |T| PyArray1::from_vec(py, t.to_vec::<T>()?).into_any());
    flat.call_method1("reshape", (PyTuple::new(py, shape)?,))
}
