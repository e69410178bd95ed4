//! Checks a foreign `DLTensor` before anything reads its data.
//!
//! DLPack cannot say how large the producer's buffer is, so the one promise we must
//! trust is that the elements the descriptor names exist. Everything else is checked:
//! the rank, the shape and strides pointers, every dimension, the element count and the
//! byte extent that the strides reach (with checked arithmetic, so a lie overflows into
//! an error instead of a wild pointer), the data pointer, `byte_offset`, the dtype and
//! the device.

use super::{device_name, type_code, DLDataType, DLTensor, CPU};
use crate::dtype::DType;
use crate::error::Error;
use crate::shape::{contiguous_strides, fmt_shape};
use pyo3::PyResult;

/// The largest rank we accept: far beyond any real tensor, small enough that reading
/// the shape of a lying descriptor stays cheap.
pub const MAX_NDIM: i32 = 1024;

/// Device types whose memory the CPU can read directly (as numpy accepts them).
const HOST_DEVICES: [i32; 4] = [CPU, 3, 11, 13];

/// A descriptor that passed every check: a reader that stays within `extent` bytes of
/// `origin` touches only memory the producer declared.
pub struct Layout {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// In elements.
    pub strides: Vec<isize>,
    pub numel: usize,
    /// The address of the element at index (0, …, 0): `data + byte_offset`. Null only
    /// when the tensor has no elements.
    pub origin: *mut u8,
    /// The lowest and one-past-the-highest byte offsets from `origin` that any element
    /// covers (`(0, 0)` when there are no elements).
    pub extent: (isize, isize),
}

impl Layout {
    /// Row-major and dense: the elements are exactly `numel` values from `origin`.
    pub fn is_contiguous(&self) -> bool {
        let dense = contiguous_strides(&self.shape);
        self.shape.iter().zip(&self.strides).zip(&dense).all(|((&d, &s), &c)| d <= 1 || s == c)
    }

    pub fn is_aligned(&self) -> bool {
        (self.origin as usize).is_multiple_of(self.dtype.size_in_bytes())
    }
}

fn invalid<T>(msg: String) -> PyResult<T> {
    Err(Error::InvalidArgument(format!("from_dlpack: {msg}; the DLPack producer sent an invalid tensor")).into())
}

/// Checks every field of `t`.
///
/// # Safety
/// When `t.shape` (`t.strides`) is non-null, it must point to `t.ndim` values that stay
/// readable while `t` is borrowed, as DLPack requires of every producer.
pub unsafe fn check(t: &DLTensor) -> PyResult<Layout> {
    let device = t.device.device_type;
    if !HOST_DEVICES.contains(&device) {
        return Err(crate::python::errors::dlpack_device_error(format!(
            "from_dlpack: the tensor lives on DLPack device ({device}, {}) ({}); rustgrad runs on the CPU \
             only, so copy it to the CPU first",
            t.device.device_id,
            device_name(device)
        )));
    }
    let dtype = dtype_of(&t.dtype)?;
    if !(0..=MAX_NDIM).contains(&t.ndim) {
        return invalid(format!("ndim is {}, outside 0..={MAX_NDIM}", t.ndim));
    }
    let ndim = t.ndim as usize;
    // SAFETY: `check`'s contract: a non-null shape points to `ndim` readable values.
    let dims = unsafe { read_array(t.shape, ndim, "shape") }?;
    let shape = dims_of(dims)?;
    // Zero dimensions count as 1: a tensor is only as large as rustgrad's strides can
    // describe, so [2**40, 2**40, 0] is refused although it has no elements.
    let extent = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d.max(1)));
    match extent.and_then(|n| n.checked_mul(dtype.size_in_bytes())) {
        Some(bytes) if bytes <= isize::MAX as usize => {}
        _ => return invalid(format!("shape {dims:?} of {} needs more bytes than any buffer can hold", dtype.name())),
    }
    let numel = shape.iter().product::<usize>();
    let strides = if t.strides.is_null() {
        contiguous_strides(&shape)
    } else {
        // SAFETY: `check`'s contract: a non-null strides pointer points to `ndim` readable values.
        let steps = unsafe { read_array(t.strides, ndim, "strides") }?;
        steps.iter().map(|&s| s as isize).collect()
    };
    if numel == 0 {
        return Ok(Layout { dtype, shape, strides, numel, origin: std::ptr::null_mut(), extent: (0, 0) });
    }
    let extent = extent_of(&shape, &strides, dtype.size_in_bytes())?;
    let origin = origin_of(t, extent, numel)?;
    Ok(Layout { dtype, shape, strides, numel, origin, extent })
}

fn dtype_of(dt: &DLDataType) -> PyResult<DType> {
    let found = DType::ALL.into_iter().find(|&d| dt.lanes == 1 && type_code(d) == (dt.code, dt.bits));
    found.ok_or_else(|| {
        let (code, bits, lanes) = (dt.code, dt.bits, dt.lanes);
        Error::DType(format!(
            "from_dlpack: unsupported element type (code {code}, {bits} bits, {lanes} lanes); rustgrad supports \
             {}, so convert the tensor to one of them first",
            crate::dtype::supported_names()
        ))
        .into()
    })
}

/// The `len` values at `pointer` (none when `len` is 0; a null pointer is an error otherwise).
///
/// # Safety
/// A non-null `pointer` must point to `len` values that stay readable for `'a`.
unsafe fn read_array<'a>(pointer: *const i64, len: usize, what: &str) -> PyResult<&'a [i64]> {
    if len == 0 {
        return Ok(&[]);
    }
    if pointer.is_null() {
        return invalid(format!("the {what} pointer is NULL for a tensor of rank {len}"));
    }
    if !pointer.is_aligned() {
        return invalid(format!("the {what} pointer {pointer:p} is not aligned for int64"));
    }
    // SAFETY: non-null and aligned (checked above), and `len` readable values by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(pointer, len) })
}

fn dims_of(dims: &[i64]) -> PyResult<Vec<usize>> {
    match dims.iter().position(|&d| d < 0) {
        Some(axis) => invalid(format!("dimension {axis} of shape {dims:?} is negative")),
        None => Ok(dims.iter().map(|&d| d as usize).collect()),
    }
}

/// The byte range that the elements reach around the origin, for a tensor with elements.
fn extent_of(shape: &[usize], strides: &[isize], item: usize) -> PyResult<(isize, isize)> {
    let (mut low, mut high) = (0i128, 0i128);
    for (&d, &s) in shape.iter().zip(strides) {
        let reach = (d as i128 - 1) * s as i128;
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    // i128 cannot overflow here: at most 1024 terms, each below 2^127 / 2^11.
    let (low, high) = (low * item as i128, (high + 1) * item as i128);
    match (isize::try_from(low), isize::try_from(high)) {
        (Ok(l), Ok(h)) if h as i128 - l as i128 <= isize::MAX as i128 => Ok((l, h)),
        _ => invalid(format!(
            "shape {} with strides {strides:?} reaches {} bytes, more than any buffer can hold",
            fmt_shape(shape),
            high - low
        )),
    }
}

/// `data + byte_offset`, checked to be non-null with the whole extent inside the address space.
fn origin_of(t: &DLTensor, (low, high): (isize, isize), numel: usize) -> PyResult<*mut u8> {
    if t.data.is_null() {
        return invalid(format!("the data pointer is NULL for a tensor of {numel} elements"));
    }
    let Ok(offset) = isize::try_from(t.byte_offset) else {
        return invalid(format!("byte_offset {} is larger than any buffer", t.byte_offset));
    };
    let address = t.data as usize as i128 + offset as i128;
    if address + (low as i128) < 1 || address + (high as i128) > usize::MAX as i128 {
        return invalid(format!(
            "data pointer {:p} + byte_offset {} with a byte extent of {low}..{high} leaves the address space",
            t.data, t.byte_offset
        ));
    }
    Ok(t.data.cast::<u8>().wrapping_add(offset as usize))
}
