//! `Tensor.__dlpack__`: a capsule viewing a tensor's memory.

use super::{
    device_name, release, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
    CPU, DLTENSOR, DLTENSOR_VERSIONED, FLAG_IS_COPIED, MAJOR_VERSION,
};
use crate::error::Error;
use crate::python::errors::{argument_type_error, dlpack_device_error, guard};
use crate::python::tensor::PyTensor;
use crate::tensor::Tensor;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

/// What a consumer asked of `__dlpack__`, checked as the array-API standard says.
struct Request {
    /// A DLPack 1.x ("dltensor_versioned") capsule rather than a legacy one.
    versioned: bool,
    copy: bool,
}

impl Request {
    fn parse(
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Request> {
        if let Some(stream) = stream {
            return Err(Error::InvalidArgument(format!(
                "__dlpack__: stream must be None for a CPU tensor (got {stream:?}); CPU memory has no streams"
            ))
            .into());
        }
        let versioned = match max_version {
            None => false,
            Some(v) => version_pair(v)?.0 >= MAJOR_VERSION as i64,
        };
        if let Some(device) = dl_device {
            check_device(device)?;
        }
        let copy = match copy {
            None => false,
            Some(c) => c
                .extract::<bool>()
                .map_err(|_| argument_type_error(format!("__dlpack__: copy must be True, False or None, got {c:?}")))?,
        };
        Ok(Request { versioned, copy })
    }
}

fn version_pair(v: &Bound<'_, PyAny>) -> PyResult<(i64, i64)> {
    let pair = v.extract::<(i64, i64)>().map_err(|_| {
        argument_type_error(format!("__dlpack__: max_version must be a (major, minor) tuple of ints, got {v:?}"))
    })?;
    if pair.0 < 0 || pair.1 < 0 {
        return Err(Error::InvalidArgument(format!("__dlpack__: max_version {pair:?} has a negative number")).into());
    }
    Ok(pair)
}

fn check_device(device: &Bound<'_, PyAny>) -> PyResult<()> {
    let (kind, id) = device.extract::<(i64, i64)>().map_err(|_| {
        argument_type_error(format!("__dlpack__: dl_device must be a (device_type, device_id) tuple, got {device:?}"))
    })?;
    if (kind, id) != (CPU as i64, 0) {
        let name = i32::try_from(kind).map_or("unknown", device_name);
        return Err(dlpack_device_error(format!(
            "__dlpack__: cannot export to DLPack device ({kind}, {id}) ({name}); rustgrad tensors live on the \
             CPU, device ({CPU}, 0)"
        )));
    }
    Ok(())
}

/// `Tensor.__dlpack__(*, stream, max_version, dl_device, copy)`.
pub fn export_tensor<'py>(
    tensor: &Bound<'py, PyTensor>,
    stream: Option<&Bound<'py, PyAny>>,
    max_version: Option<&Bound<'py, PyAny>>,
    dl_device: Option<&Bound<'py, PyAny>>,
    copy: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let request = Request::parse(stream, max_version, dl_device, copy)?;
    let inner = &tensor.get().inner;
    if inner.requires_grad() {
        return Err(Error::Gradient(
            "Can't export a Tensor that requires grad through DLPack. Use tensor.detach() first.".into(),
        )
        .into());
    }
    if request.copy {
        let fresh = guard(|| Ok(crate::forward::copy(inner)?))?;
        return export(tensor.py(), &fresh, request.versioned, FLAG_IS_COPIED);
    }
    export(tensor.py(), inner, request.versioned, 0)
}

/// What an exported capsule owns: the tensor (so its storage lives) and the shape arrays.
struct Export {
    legacy: DLManagedTensor,
    versioned: DLManagedTensorVersioned,
    _tensor: Tensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

unsafe extern "C" fn delete_export(managed: *mut DLManagedTensor) {
    // SAFETY: the deleter gets the live DLManagedTensor that `export` made.
    let context = unsafe { (*managed).manager_ctx };
    // SAFETY: the manager context is the boxed Export made by `export`, and the protocol
    // calls the deleter exactly once.
    drop(unsafe { Box::from_raw(context.cast::<Export>()) });
}

unsafe extern "C" fn delete_export_versioned(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: as for `delete_export`.
    let context = unsafe { (*managed).manager_ctx };
    // SAFETY: as for `delete_export`.
    drop(unsafe { Box::from_raw(context.cast::<Export>()) });
}

/// Frees an exported tensor nobody consumed (the capsule still has its original name).
/// It may run while an exception is in flight (the capsule is often a temporary of a
/// failing call), so it keeps that exception as it found it.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    let (mut kind, mut value, mut traceback) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: Python calls capsule destructors holding the GIL; this moves the exception in
    // flight (if any) into the three locals. (PyErr_Fetch is the abi3-py39 API; it is
    // deprecated only from 3.12, for PyErr_GetRaisedException.)
    #[allow(deprecated)]
    // SAFETY: see above: called with the GIL held, into three valid out-pointers.
    unsafe {
        ffi::PyErr_Fetch(&mut kind, &mut value, &mut traceback)
    };
    // SAFETY: Python passes the capsule being destroyed, a live object.
    unsafe { release_unconsumed(capsule) };
    // SAFETY: the GIL is held; this hands back exactly the references PyErr_Fetch gave us.
    #[allow(deprecated)]
    unsafe {
        ffi::PyErr_Restore(kind, value, traceback)
    };
}

/// # Safety
/// `capsule` must be a live capsule made by `export` (it carries `capsule_destructor`),
/// and the GIL must be held.
unsafe fn release_unconsumed(capsule: *mut ffi::PyObject) {
    // SAFETY: the caller's contract: a live object, the GIL held.
    let legacy = unsafe { unconsumed::<DLManagedTensor>(capsule, DLTENSOR) };
    // SAFETY: as above.
    let versioned = || unsafe { unconsumed::<DLManagedTensorVersioned>(capsule, DLTENSOR_VERSIONED) };
    if let Some(managed) = legacy {
        // SAFETY: an unconsumed capsule of ours owns the DLManagedTensor that `export` made.
        unsafe { release(managed) };
    } else if let Some(managed) = versioned() {
        // SAFETY: as above, for the versioned struct.
        unsafe { release(managed) };
    }
}

/// The pointer held by `capsule` if it is still named `name` (that is, nobody consumed it).
///
/// # Safety
/// `capsule` must point to a live Python object, and the GIL must be held.
unsafe fn unconsumed<M>(capsule: *mut ffi::PyObject, name: &CStr) -> Option<*mut M> {
    // SAFETY: the caller's contract; PyCapsule_IsValid accepts any live object and sets no error.
    if unsafe { ffi::PyCapsule_IsValid(capsule, name.as_ptr()) } != 1 {
        return None;
    }
    // SAFETY: the capsule is valid under `name` (checked above), so this cannot fail.
    Some(unsafe { ffi::PyCapsule_GetPointer(capsule, name.as_ptr()) }.cast::<M>())
}

/// A capsule viewing `t`'s memory: "dltensor_versioned" (DLPack 1.0, with `flags`) when
/// the consumer accepts it, else the legacy "dltensor".
fn export<'py>(py: Python<'py>, t: &Tensor, versioned: bool, flags: u64) -> PyResult<Bound<'py, PyAny>> {
    let (code, bits) = super::type_code(t.dtype());
    t.storage().mark_exported();
    let data = {
        let guard = t.storage().read();
        guard.as_ptr().wrapping_add(t.offset() * t.dtype().size_in_bytes()) as *mut c_void
    };
    let mut shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    let mut strides: Vec<i64> = t.strides().iter().map(|&s| s as i64).collect();
    let mut dl_tensor = || DLTensor {
        data,
        device: DLDevice { device_type: CPU, device_id: 0 },
        ndim: t.rank() as i32,
        dtype: DLDataType { code, bits, lanes: 1 },
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let (legacy_tensor, versioned_tensor) = (dl_tensor(), dl_tensor());
    // Moving the Vecs into the Export keeps their heap buffers (which the DLTensors point at) in place.
    let raw = Box::into_raw(Box::new(Export {
        legacy: DLManagedTensor {
            dl_tensor: legacy_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export),
        },
        versioned: DLManagedTensorVersioned {
            version: DLPackVersion { major: MAJOR_VERSION, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export_versioned),
            flags,
            dl_tensor: versioned_tensor,
        },
        _tensor: t.clone(),
        _shape: shape,
        _strides: strides,
    }));
    // SAFETY: `raw` comes from Box::into_raw just above: valid, and nobody else has it yet.
    let export = unsafe { &mut *raw };
    // The deleter finds the Export through the manager context.
    export.legacy.manager_ctx = raw.cast();
    export.versioned.manager_ctx = raw.cast();
    let (pointer, name): (*mut c_void, &CStr) = if versioned {
        (std::ptr::addr_of_mut!(export.versioned).cast(), DLTENSOR_VERSIONED)
    } else {
        (std::ptr::addr_of_mut!(export.legacy).cast(), DLTENSOR)
    };
    // SAFETY: `pointer` is non-null and lives until its deleter runs, `name` is 'static, and
    // `capsule_destructor` matches what it holds.
    let capsule = unsafe { ffi::PyCapsule_New(pointer, name.as_ptr(), Some(capsule_destructor)) };
    if capsule.is_null() {
        // SAFETY: no capsule was made, so `raw` is still ours alone and freed once here.
        drop(unsafe { Box::from_raw(raw) });
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new reference, which the Bound now owns.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) })
}
