//! DLPack: sharing tensors with numpy, PyTorch, JAX and others without copying.
//!
//! `Tensor.__dlpack__` ([`export`]) hands out a capsule that keeps the tensor's storage
//! alive until the consumer calls its deleter. `from_dlpack` ([`import`]) takes any
//! object with `__dlpack__`, or a capsule itself, legacy ("dltensor") or DLPack 1.x
//! ("dltensor_versioned"). A capsule is foreign input: [`layout`] checks every field
//! before a byte of its data is read, so a hostile one raises instead of crashing.
//!
//! We keep this hand-written code rather than a crate: `pyo3-dlpack` 0.3 is built on
//! PyO3 0.28 (two PyO3 versions cannot link into one extension), and `dlpark` 0.10, which
//! does use PyO3 0.30, leaves the strided extent unchecked, so the checks in [`layout`]
//! would stay ours either way.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks, clippy::multiple_unsafe_ops_per_block)]

mod export;
mod import;
mod layout;

pub use export::export_tensor;
pub use import::from_dlpack;

use std::ffi::{c_void, CStr};

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

/// `kDLCPU`, the one device rustgrad tensors live on.
const CPU: i32 = 1;
/// Type codes of `DLDataType` (`kDLInt`, `kDLUInt`, `kDLFloat`, `kDLBool`).
const INT: u8 = 0;
const UINT: u8 = 1;
const FLOAT: u8 = 2;
const BOOL: u8 = 6;

/// A dtype's DLPack type code and bit width, from its category.
fn type_code(dtype: crate::dtype::DType) -> (u8, u8) {
    use crate::dtype::Kind;
    let code = match dtype.kind() {
        Kind::Float => FLOAT,
        Kind::Integer if dtype.is_signed() => INT,
        Kind::Integer => UINT,
        Kind::Bool => BOOL,
    };
    (code, (dtype.size_in_bytes() * 8) as u8)
}

/// The DLPack major version we read and write, and the newest minor version whose flags we know.
const MAJOR_VERSION: u32 = 1;
const KNOWN_MINOR_VERSION: u32 = 3;
/// `DLPACK_FLAG_BITMASK_*` of DLPack 1.x.
const FLAG_READ_ONLY: u64 = 1 << 0;
const FLAG_IS_COPIED: u64 = 1 << 1;
const FLAG_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;
const KNOWN_FLAGS: u64 = FLAG_READ_ONLY | FLAG_IS_COPIED | FLAG_IS_SUBBYTE_TYPE_PADDED;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
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
#[derive(Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

/// DLPack 1.x: adds a version and flags. The fields up to `deleter` keep their place in
/// every version, so a consumer can always release a tensor whose version it cannot read.
#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// The two managed-tensor structs, for code that only needs the deleter.
trait ManagedTensor: Sized {
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
}

impl ManagedTensor for DLManagedTensor {
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
}

impl ManagedTensor for DLManagedTensorVersioned {
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
}

/// Hands a managed tensor back to its producer by calling its deleter (if it has one).
///
/// # Safety
/// `managed` must point to a live managed tensor that the caller owns; it must not be
/// used again afterwards.
unsafe fn release<M: ManagedTensor>(managed: *mut M) {
    // SAFETY: the caller guarantees `managed` points to a live managed tensor.
    let deleter = unsafe { &*managed }.deleter();
    if let Some(deleter) = deleter {
        // SAFETY: the owner calls the deleter exactly once (the caller gives `managed` up).
        unsafe { deleter(managed) };
    }
}

/// A readable name for a `DLDeviceType`, for error messages.
fn device_name(device_type: i32) -> &'static str {
    match device_type {
        1 => "CPU",
        2 => "CUDA",
        3 => "CUDA host",
        4 => "OpenCL",
        7 => "Vulkan",
        8 => "Metal",
        9 => "VPI",
        10 => "ROCm",
        11 => "ROCm host",
        12 => "ext_dev",
        13 => "CUDA managed",
        14 => "oneAPI",
        15 => "WebGPU",
        16 => "Hexagon",
        17 => "MAIA",
        _ => "unknown",
    }
}
