//! `from_dlpack`: a tensor over any DLPack producer's memory.

use super::layout::{check, Layout};
use super::{
    release, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor, DLTENSOR, DLTENSOR_VERSIONED,
    FLAG_READ_ONLY, KNOWN_FLAGS, KNOWN_MINOR_VERSION, MAJOR_VERSION, USED_DLTENSOR, USED_DLTENSOR_VERSIONED,
};
use crate::dtype::{dispatch, DType};
use crate::error::Error;
use crate::python::errors::{argument_type_error, dlpack_error, guard};
use crate::python::tensor::PyTensor;
use crate::storage::{try_alloc, Buffer, Element, ExternalBuffer};
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

/// `rustgrad.from_dlpack(obj)`: a tensor sharing memory with any DLPack producer.
#[pyfunction]
pub fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(PyTensor::wrap(t.get().inner.clone()));
    }
    let capsule = if obj.hasattr("__dlpack__")? { request_capsule(obj)? } else { obj.clone() };
    let owner = consume(&capsule)?;
    guard(|| Ok(PyTensor::wrap(import(owner)?)))
}

/// Asks the producer for a DLPack 1.x capsule, falling back to a legacy one for
/// producers whose `__dlpack__` takes no `max_version` (as the array-API standard says).
fn request_capsule<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(obj.py());
    kwargs.set_item("max_version", (MAJOR_VERSION, 0))?;
    match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => obj.call_method0("__dlpack__"),
        result => result,
    }
}

/// A consumed capsule's managed tensor. It is ours until dropped; dropping it hands it
/// back to the producer through its deleter, exactly once.
enum Owner {
    Legacy(NonNull<DLManagedTensor>),
    Versioned(NonNull<DLManagedTensorVersioned>),
}

// SAFETY: DLPack deleters may be called from any thread (numpy's and PyTorch's take the
// GIL themselves), and we only read the descriptor, which the producer leaves unchanged.
unsafe impl Send for Owner {}
// SAFETY: as for Send: shared access only reads.
unsafe impl Sync for Owner {}

impl Drop for Owner {
    fn drop(&mut self) {
        match *self {
            // SAFETY: we own the managed tensor (its capsule was renamed "used_…") and drop it once.
            Owner::Legacy(managed) => unsafe { release(managed.as_ptr()) },
            // SAFETY: as above; `version`, `manager_ctx` and `deleter` keep their place in
            // every DLPack version, so this is sound even for a version we cannot read.
            Owner::Versioned(managed) => unsafe { release(managed.as_ptr()) },
        }
    }
}

impl Owner {
    /// The version and flags of a versioned tensor, checked. Returns whether the memory is
    /// read-only. Nothing past the version is read unless its major version is ours.
    fn check_version(&self) -> PyResult<bool> {
        let Owner::Versioned(managed) = self else { return Ok(false) };
        // SAFETY: we own the managed tensor until drop, and the version field exists in every version.
        let DLPackVersion { major, minor } = unsafe { managed.as_ref() }.version;
        if major != MAJOR_VERSION {
            return Err(dlpack_error(format!(
                "from_dlpack: the tensor uses DLPack {major}.{minor}; rustgrad reads DLPack {MAJOR_VERSION}.x, \
                 so ask the producer for a {MAJOR_VERSION}.x tensor (max_version=({MAJOR_VERSION}, 0))"
            )));
        }
        // SAFETY: we own it until drop, and a 1.x tensor has the 1.x layout.
        let flags = unsafe { managed.as_ref() }.flags;
        if minor <= KNOWN_MINOR_VERSION && flags & !KNOWN_FLAGS != 0 {
            return Err(Error::InvalidArgument(format!(
                "from_dlpack: the tensor sets flag bits {:#x}, which DLPack {major}.{minor} does not define; the \
                 DLPack producer sent an invalid tensor",
                flags & !KNOWN_FLAGS
            ))
            .into());
        }
        Ok(flags & FLAG_READ_ONLY != 0)
    }

    fn tensor(&self) -> &DLTensor {
        match self {
            // SAFETY: we own the managed tensor until drop, and its producer keeps it unchanged until then.
            Owner::Legacy(managed) => unsafe { &managed.as_ref().dl_tensor },
            // SAFETY: as above; `check_version` has confirmed the 1.x layout.
            Owner::Versioned(managed) => unsafe { &managed.as_ref().dl_tensor },
        }
    }
}

fn capsule_named(capsule: &Bound<'_, PyAny>, name: &CStr) -> bool {
    // SAFETY: PyCapsule_IsValid accepts any object, checks its type and name, and sets no error.
    unsafe { ffi::PyCapsule_IsValid(capsule.as_ptr(), name.as_ptr()) == 1 }
}

/// Takes ownership of the managed tensor in an unconsumed DLPack capsule, renaming the
/// capsule as the protocol says so that its destructor leaves the tensor to us.
fn consume(capsule: &Bound<'_, PyAny>) -> PyResult<Owner> {
    if capsule_named(capsule, DLTENSOR) {
        return Ok(Owner::Legacy(take(capsule, DLTENSOR, USED_DLTENSOR)?.cast()));
    }
    if capsule_named(capsule, DLTENSOR_VERSIONED) {
        return Ok(Owner::Versioned(take(capsule, DLTENSOR_VERSIONED, USED_DLTENSOR_VERSIONED)?.cast()));
    }
    if capsule_named(capsule, USED_DLTENSOR) || capsule_named(capsule, USED_DLTENSOR_VERSIONED) {
        return Err(Error::InvalidArgument(
            "from_dlpack: this DLPack capsule was already consumed; call the producer's __dlpack__() again for a \
             new one"
                .into(),
        )
        .into());
    }
    Err(argument_type_error(format!(
        "from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {}",
        capsule.get_type().name()?
    )))
}

fn take(capsule: &Bound<'_, PyAny>, name: &CStr, used: &CStr) -> PyResult<NonNull<c_void>> {
    // SAFETY: the caller checked that `capsule` is a valid capsule under `name`.
    let pointer = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), name.as_ptr()) };
    let Some(pointer) = NonNull::new(pointer) else { return Err(PyErr::fetch(capsule.py())) };
    // SAFETY: `capsule` is a live capsule and `used` a 'static C string, as PyCapsule_SetName requires.
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    Ok(pointer)
}

/// Reads a consumed tensor: shares aligned, writable, C-contiguous numeric memory and
/// copies anything else (the owner then goes back to the producer on return).
fn import(owner: Owner) -> PyResult<Tensor> {
    let read_only = owner.check_version()?;
    // SAFETY: DLPack's contract: shape and strides hold `ndim` values while we own the tensor.
    let layout = unsafe { check(owner.tensor()) }?;
    if layout.numel == 0 {
        return Ok(Tensor::zeros(&layout.shape, layout.dtype)?);
    }
    if layout.dtype != DType::Bool && !read_only && layout.is_contiguous() && layout.is_aligned() {
        // SAFETY: `check` found `numel` elements of `dtype` from the non-null, aligned origin
        // (contiguous, so the extent is exactly those elements), which the producer keeps
        // valid until `owner` runs its deleter, when the buffer drops.
        let buffer = unsafe { ExternalBuffer::new(layout.origin, layout.numel, layout.dtype, Box::new(owner)) };
        if let Some(buffer) = buffer {
            return Ok(Tensor::from_external(Buffer::External(buffer), layout.shape)?);
        }
        return Err(Error::InvalidArgument("from_dlpack: could not share the tensor's memory".into()).into());
    }
    Ok(dispatch!(layout.dtype, |T| gather::<T>(&layout)?))
}

/// An element type that can be read from foreign memory of any alignment.
trait Readable: Element {
    /// # Safety
    /// `p` must be readable for `size_of::<Self>()` bytes holding a value of this dtype
    /// (for bool, any byte: nonzero reads as true).
    unsafe fn read_at(p: *const u8) -> Self;
}

macro_rules! readable_number {
    ($($t:ty),*) => {$(
        impl Readable for $t {
            unsafe fn read_at(p: *const u8) -> Self {
                // SAFETY: the caller's contract; read_unaligned needs no alignment, and every bit
                // pattern is a valid value of a primitive number.
                unsafe { p.cast::<$t>().read_unaligned() }
            }
        }
    )*};
}

readable_number!(f32, f64, i64, i32, u8);

impl Readable for bool {
    unsafe fn read_at(p: *const u8) -> Self {
        // SAFETY: the caller's contract; a byte has no alignment.
        unsafe { p.read() != 0 }
    }
}

/// A contiguous copy of the elements `layout` describes.
fn gather<T: Readable>(layout: &Layout) -> crate::error::Result<Tensor> {
    let mut out = try_alloc(layout.numel, T::default(), &layout.shape)?;
    let item = layout.dtype.size_in_bytes();
    // Walk from the lowest element, so that every offset is non-negative.
    let lowest = layout.origin.wrapping_offset(layout.extent.0);
    let start = layout.extent.0.unsigned_abs() / item;
    let mut slots = out.iter_mut();
    crate::kernels::layout::walk(&layout.shape, [&layout.strides], [start], |[i]| {
        if let Some(slot) = slots.next() {
            // SAFETY: `check` bounded every element to the byte extent from `lowest`, which the
            // producer declared readable; `i * item` is one element's offset within it.
            *slot = unsafe { T::read_at(lowest.wrapping_add(i * item)) };
        }
    });
    Tensor::from_vec(out, layout.shape.clone())
}
