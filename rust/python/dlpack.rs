//! DLPack: sharing tensors with numpy, PyTorch, JAX and others without copying.
//!
//! `Tensor.__dlpack__` exports a "dltensor" capsule that keeps the tensor's
//! storage alive until the consumer calls its deleter; `from_dlpack` imports any
//! object with `__dlpack__`, sharing its memory when it is a C-contiguous float
//! CPU tensor (and copying otherwise).

use super::tensor::PyTensor;
use crate::dtype::DType;
use crate::error::Error;
use crate::storage::{Buffer, ExternalBuffer};
use crate::tensor::Tensor;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const CPU: i32 = 1;
const FLOAT: u8 = 2;
const BOOL: u8 = 6;

#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

/// DLPack 1.x: adds a version and flags (none set here, so consumers may write).
#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
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
    // SAFETY: the manager context is the boxed Export made by `export`; the protocol calls
    // the deleter exactly once.
    unsafe { drop(Box::from_raw((*managed).manager_ctx.cast::<Export>())) };
}

unsafe extern "C" fn delete_export_versioned(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: as for `delete_export`.
    unsafe { drop(Box::from_raw((*managed).manager_ctx.cast::<Export>())) };
}

/// Frees an exported tensor nobody consumed (the capsule still has its original name).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        } else if ffi::PyCapsule_IsValid(capsule, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let managed =
                ffi::PyCapsule_GetPointer(capsule, DLTENSOR_VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        }
        ffi::PyErr_Clear();
    }
}

/// A capsule viewing `t`'s memory: "dltensor_versioned" (DLPack 1.0) when the consumer
/// accepts it, else the legacy "dltensor".
pub fn export<'py>(py: Python<'py>, t: &Tensor, versioned: bool) -> PyResult<Bound<'py, PyAny>> {
    let (code, bits) = match t.dtype() {
        DType::F32 => (FLOAT, 32),
        DType::F64 => (FLOAT, 64),
        DType::Bool => (BOOL, 8),
    };
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
    let export = Box::new(Export {
        legacy: DLManagedTensor {
            dl_tensor: legacy_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export),
        },
        versioned: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export_versioned),
            flags: 0,
            dl_tensor: versioned_tensor,
        },
        _tensor: t.clone(),
        _shape: shape,
        _strides: strides,
    });
    let raw = Box::into_raw(export);
    // SAFETY: `raw` is a live Export (moving the Vecs into it kept their heap buffers in place);
    // the manager context points back at it for the deleter, which the capsule (or the
    // consumer) calls exactly once.
    unsafe {
        (*raw).legacy.manager_ctx = raw.cast();
        (*raw).versioned.manager_ctx = raw.cast();
        let (pointer, name): (*mut c_void, &CStr) = if versioned {
            (std::ptr::addr_of_mut!((*raw).versioned).cast(), DLTENSOR_VERSIONED)
        } else {
            (std::ptr::addr_of_mut!((*raw).legacy).cast(), DLTENSOR)
        };
        let capsule = ffi::PyCapsule_New(pointer, name.as_ptr(), Some(capsule_destructor));
        if capsule.is_null() {
            drop(Box::from_raw(raw));
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, capsule))
    }
}

/// Calls the producer's deleter when the last tensor sharing its memory is gone.
struct Imported(*mut DLManagedTensor);

// SAFETY: DLPack deleters may be called from any thread (numpy's and PyTorch's take the GIL).
unsafe impl Send for Imported {}
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: we own the managed tensor (the capsule was renamed "used_dltensor").
        unsafe {
            if let Some(deleter) = (*self.0).deleter {
                deleter(self.0);
            }
        }
    }
}

fn dtype_of(dt: &DLDataType) -> Option<DType> {
    match (dt.code, dt.bits, dt.lanes) {
        (FLOAT, 32, 1) => Some(DType::F32),
        (FLOAT, 64, 1) => Some(DType::F64),
        (BOOL, 8, 1) => Some(DType::Bool),
        _ => None,
    }
}

/// Reads a consumed capsule's tensor: shares float C-contiguous memory, copies anything else.
///
/// # Safety
/// `managed` must be a valid DLManagedTensor that the caller now owns.
unsafe fn import_managed(managed: *mut DLManagedTensor) -> crate::error::Result<Tensor> {
    let owner = Imported(managed);
    let t = unsafe { &(*managed).dl_tensor };
    if t.device.device_type != CPU {
        return Err(Error::InvalidArgument(format!(
            "from_dlpack: the tensor lives on DLPack device type {}; rustgrad runs on the CPU only",
            t.device.device_type
        )));
    }
    let dtype = dtype_of(&t.dtype).ok_or_else(|| {
        Error::DType(format!(
            "from_dlpack: unsupported element type (code {}, {} bits); rustgrad supports float32, float64 and bool",
            t.dtype.code, t.dtype.bits
        ))
    })?;
    let ndim = t.ndim.max(0) as usize;
    let shape: Vec<usize> = (0..ndim).map(|i| unsafe { *t.shape.add(i) } as usize).collect();
    let strides: Vec<isize> = if t.strides.is_null() {
        crate::shape::contiguous_strides(&shape)
    } else {
        (0..ndim).map(|i| unsafe { *t.strides.add(i) } as isize).collect()
    };
    let numel: usize = shape.iter().product();
    let base = unsafe { t.data.cast::<u8>().add(t.byte_offset as usize) };
    let contiguous = crate::shape::contiguous_strides(&shape)
        .iter()
        .zip(&strides)
        .zip(&shape)
        .all(|((&c, &s), &d)| d <= 1 || c == s);
    let aligned = (base as usize).is_multiple_of(dtype.size_in_bytes());
    if dtype.is_float() && contiguous && aligned && numel > 0 {
        // SAFETY: the producer guarantees `numel` elements of `dtype` at `base` while the managed
        // tensor lives, and `owner` keeps it alive until the buffer is dropped.
        let buffer = unsafe { ExternalBuffer::new(base, numel, dtype, Box::new(owner)) };
        if let Some(buffer) = buffer {
            return Tensor::from_external(Buffer::External(buffer), shape);
        }
        return Tensor::zeros(&shape, dtype);
    }
    // Copy element by element through the strides (the owner is released on return).
    let offsets = {
        let mut out = Vec::with_capacity(numel);
        crate::kernels::layout::walk(&shape, [&strides], [0], |[i]| out.push(i as isize));
        out
    };
    let read = |i: isize| unsafe { base.offset(i * dtype.size_in_bytes() as isize) };
    match dtype {
        DType::F32 => Tensor::from_vec(
            offsets.iter().map(|&i| unsafe { read(i).cast::<f32>().read_unaligned() }).collect(),
            shape,
        ),
        DType::F64 => Tensor::from_vec(
            offsets.iter().map(|&i| unsafe { read(i).cast::<f64>().read_unaligned() }).collect(),
            shape,
        ),
        DType::Bool => Tensor::from_vec(offsets.iter().map(|&i| unsafe { *read(i) } != 0).collect(), shape),
    }
}

/// `rustgrad.from_dlpack(obj)`: a tensor sharing memory with any DLPack producer.
#[pyfunction]
pub fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(PyTensor::wrap(t.get().inner.clone()));
    }
    let capsule = if obj.hasattr("__dlpack__")? { obj.call_method0("__dlpack__")? } else { obj.clone() };
    let raw = capsule.as_ptr();
    // SAFETY: PyCapsule_IsValid accepts any object and checks type and name.
    let managed = unsafe {
        if ffi::PyCapsule_IsValid(raw, DLTENSOR.as_ptr()) != 1 {
            ffi::PyErr_Clear();
            return Err(Error::InvalidArgument(
                "from_dlpack: expected an object with __dlpack__ or an unconsumed 'dltensor' capsule".into(),
            )
            .into());
        }
        let managed = ffi::PyCapsule_GetPointer(raw, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
        // Mark it consumed so the capsule's destructor leaves it to us.
        if ffi::PyCapsule_SetName(raw, USED_DLTENSOR.as_ptr()) != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        managed
    };
    // SAFETY: we now own `managed` (renamed capsule), as the DLPack protocol specifies.
    let tensor = unsafe { import_managed(managed) }?;
    Ok(PyTensor::wrap(tensor))
}
