//! Typed, contiguous buffers shared between a tensor and its views.
//!
//! A `Storage` is the unit of sharing: views (transpose, reshape, slices) point
//! at the same storage with another layout, and in-place ops write through it.
//! Its version counter lets the autograd tape notice that a saved tensor was
//! modified after it was saved.

use crate::buffer_pool;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::fmt_shape;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

pub enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
    /// Memory owned by someone else (a numpy array), shared without copying.
    External(ExternalBuffer),
}

/// A numeric buffer that another owner keeps alive (e.g. a numpy array shared by
/// `from_numpy`). Reads and writes go straight to that memory.
pub struct ExternalBuffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    dtype: DType,
    _owner: Box<dyn std::any::Any + Send + Sync>,
}

// SAFETY: rustgrad reaches the memory only through the storage's lock, like a Vec, and
// the owner (which must itself be Send + Sync) keeps it alive as long as this lives.
// numpy may touch the same memory; see `Element::slice_mut` for that policy.
unsafe impl Send for ExternalBuffer {}
unsafe impl Sync for ExternalBuffer {}

impl ExternalBuffer {
    /// # Safety
    /// `ptr` must point to `len` properly aligned, initialised elements of `dtype`,
    /// valid for reads and writes for as long as `owner` lives, and not freed or
    /// moved by anyone while this buffer exists. Bool memory is never shared (another
    /// owner may store bytes other than 0 and 1 there, which a Rust `bool` must not
    /// hold), so a bool `dtype` gives None.
    pub unsafe fn new(
        ptr: *mut u8,
        len: usize,
        dtype: DType,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Option<Self> {
        let ptr = std::ptr::NonNull::new(ptr)?;
        (dtype != DType::Bool).then_some(ExternalBuffer { ptr, len, dtype, _owner: owner })
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({} x {})", self.dtype().name(), self.len())
    }
}

impl Buffer {
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::I64(_) => DType::I64,
            Buffer::I32(_) => DType::I32,
            Buffer::U8(_) => DType::U8,
            Buffer::Bool(_) => DType::Bool,
            Buffer::External(e) => e.dtype,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::U8(v) => v.len(),
            Buffer::Bool(v) => v.len(),
            Buffer::External(e) => e.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_external(&self) -> bool {
        matches!(self, Buffer::External(_))
    }

    /// The address of the first element (for sharing with numpy).
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            Buffer::F32(v) => v.as_ptr().cast(),
            Buffer::F64(v) => v.as_ptr().cast(),
            Buffer::I64(v) => v.as_ptr().cast(),
            Buffer::I32(v) => v.as_ptr().cast(),
            Buffer::U8(v) => v.as_ptr().cast(),
            Buffer::Bool(v) => v.as_ptr().cast(),
            Buffer::External(e) => e.ptr.as_ptr(),
        }
    }
}

/// The element types a buffer can hold, with typed access to it and the
/// conversions casts are made of.
pub trait Element: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn slice(buf: &Buffer) -> Option<&[Self]>;
    fn slice_mut(buf: &mut Buffer) -> Option<&mut [Self]>;
    fn wrap(v: Vec<Self>) -> Buffer;
    /// `v` as this type, as a C cast: floats round, integers truncate toward zero
    /// (saturating, NaN gives 0), bool is `v != 0` (NaN is true).
    fn from_f64(v: f64) -> Self;
    /// `v` as this type: integers wrap around (two's complement), floats round, bool is `v != 0`.
    fn from_i64(v: i64) -> Self;
    fn to_f64(self) -> f64;
    /// The value as an i64: exact for integers and bool, truncated for floats.
    fn to_i64(self) -> i64;
    /// This value as another element type (torch's and numpy's casts). An integer or
    /// bool goes through i64, so int64 to int32 wraps exactly instead of rounding.
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        if Self::DTYPE.is_float() {
            U::from_f64(self.to_f64())
        } else {
            U::from_i64(self.to_i64())
        }
    }
}

macro_rules! impl_element {
    ($t:ty, $variant:ident, $dtype:expr, from_f64: |$f:ident| $from_f64:expr, from_i64: |$i:ident| $from_i64:expr,
     to_f64: |$g:ident| $to_f64:expr, to_i64: |$j:ident| $to_i64:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dtype;
            #[inline(always)]
            fn from_f64($f: f64) -> Self {
                $from_f64
            }
            #[inline(always)]
            fn from_i64($i: i64) -> Self {
                $from_i64
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                let $g = self;
                $to_f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                let $j = self;
                $to_i64
            }
            #[inline]
            fn slice(buf: &Buffer) -> Option<&[Self]> {
                match buf {
                    Buffer::$variant(v) => Some(v),
                    // SAFETY: ExternalBuffer::new's contract: `len` aligned, live elements of this dtype.
                    Buffer::External(e) if e.dtype == $dtype => {
                        Some(unsafe { std::slice::from_raw_parts(e.ptr.as_ptr().cast::<$t>(), e.len) })
                    }
                    _ => None,
                }
            }
            #[inline]
            fn slice_mut(buf: &mut Buffer) -> Option<&mut [Self]> {
                match buf {
                    Buffer::$variant(v) => Some(v),
                    // `&mut Buffer` excludes every other rustgrad access (the storage lock), but not
                    // numpy, which may hold the same memory (`from_numpy`, `np.asarray`). Policy, as
                    // in PyTorch: a numpy writer racing with us in another thread is the user's
                    // race; it can change values we read, never the buffer's address or length.
                    Buffer::External(e) if e.dtype == $dtype => {
                        // SAFETY: as above (ExternalBuffer::new's contract), under that policy.
                        Some(unsafe { std::slice::from_raw_parts_mut(e.ptr.as_ptr().cast::<$t>(), e.len) })
                    }
                    _ => None,
                }
            }
            #[inline]
            fn wrap(v: Vec<Self>) -> Buffer {
                Buffer::$variant(v)
            }
        }
    };
}

macro_rules! impl_number_element {
    ($t:ty, $variant:ident, $dtype:expr) => {
        impl_element!($t, $variant, $dtype, from_f64: |v| v as $t, from_i64: |v| v as $t,
                      to_f64: |v| v as f64, to_i64: |v| v as i64);
    };
}

impl_number_element!(f32, F32, DType::F32);
impl_number_element!(f64, F64, DType::F64);
impl_number_element!(i64, I64, DType::I64);
impl_number_element!(i32, I32, DType::I32);
impl_number_element!(u8, U8, DType::U8);
impl_element!(bool, Bool, DType::Bool, from_f64: |v| v != 0.0, from_i64: |v| v != 0,
              to_f64: |v| v as u8 as f64, to_i64: |v| v as i64);

#[derive(Debug)]
pub struct Storage {
    data: RwLock<Buffer>,
    version: AtomicU64,
    /// The buffer's length, address and kind, which change only with `refill` (which has
    /// `&mut self`): layout checks and overlap tests read them without the lock.
    len: usize,
    address: usize,
    external: bool,
    /// Whether another library was handed a view of the memory (numpy, DLPack): it can
    /// write without bumping the version.
    exported: AtomicBool,
}

impl Storage {
    pub fn new(buffer: Buffer) -> Storage {
        let (len, address, external) = (buffer.len(), buffer.as_ptr() as usize, buffer.is_external());
        let exported = AtomicBool::new(false);
        Storage { data: RwLock::new(buffer), version: AtomicU64::new(0), len, address, external, exported }
    }

    /// Notes that another library views the memory (see `versions_are_complete`).
    pub fn mark_exported(&self) {
        self.exported.store(true, Ordering::Relaxed);
    }

    /// Whether every write to the memory bumps the version: nothing outside rustgrad owns
    /// or views it.
    pub fn versions_are_complete(&self) -> bool {
        !self.external && !self.exported.load(Ordering::Relaxed)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first element.
    pub fn address(&self) -> usize {
        self.address
    }

    /// Whether the memory belongs to another owner (numpy), which may share it with other storages.
    pub fn is_external(&self) -> bool {
        self.external
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        self.data.read_recursive()
    }

    /// Write access; every write bumps the version counter.
    pub fn write(&self) -> RwLockWriteGuard<'_, Buffer> {
        self.version.fetch_add(1, Ordering::Relaxed);
        self.data.write()
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Puts `buffer` in place of the current one, which it returns, as for new
    /// storage (version 0). Needs `&mut`: nobody else can be reading it.
    pub fn refill(&mut self, buffer: Buffer) -> Buffer {
        *self.version.get_mut() = 0;
        (self.len, self.address, self.external) = (buffer.len(), buffer.as_ptr() as usize, buffer.is_external());
        std::mem::replace(self.data.get_mut(), buffer)
    }
}

impl Drop for Storage {
    /// Large buffers go back to the pool for the next tensor of their size.
    fn drop(&mut self) {
        match std::mem::replace(self.data.get_mut(), Buffer::Bool(Vec::new())) {
            Buffer::F32(v) => buffer_pool::give(v),
            Buffer::F64(v) => buffer_pool::give(v),
            Buffer::I64(v) => buffer_pool::give(v),
            Buffer::I32(v) => buffer_pool::give(v),
            Buffer::U8(v) => buffer_pool::give(v),
            Buffer::Bool(_) | Buffer::External(_) => {}
        }
    }
}

/// Total physical memory, read once; allocations beyond it fail cleanly
/// instead of letting the kernel's OOM killer end the process.
pub(crate) fn physical_memory_bytes() -> usize {
    static TOTAL: OnceLock<usize> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
                kib.checked_mul(1024)
            })
            .unwrap_or(usize::MAX)
    })
}

fn out_of_memory(bytes: Option<usize>, dtype: DType, shape: &[usize]) -> Error {
    let size = bytes.map_or_else(|| "more than usize::MAX".to_string(), |b| b.to_string());
    Error::OutOfMemory(format!(
        "cannot allocate {size} bytes for a {} tensor of shape {}; use a smaller shape",
        dtype.name(),
        fmt_shape(shape)
    ))
}

/// Fails with `Error::OutOfMemory` when a tensor of this shape and dtype cannot fit in
/// this machine's memory. Kernels call it before allocating their output, since a
/// failed allocation in Rust aborts the process.
pub fn ensure_allocatable(shape: &[usize], dtype: DType) -> Result<usize> {
    let len = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let bytes = len.and_then(|n| n.checked_mul(dtype.size_in_bytes()));
    match (len, bytes) {
        (Some(n), Some(b)) if b <= physical_memory_bytes() => Ok(n),
        _ => Err(out_of_memory(bytes, dtype, shape)),
    }
}

/// A vector of `len` copies of `value`, or `Error::OutOfMemory` naming the shape.
pub fn try_alloc<T: Element>(len: usize, value: T, shape: &[usize]) -> Result<Vec<T>> {
    ensure_allocatable(shape, T::DTYPE)?;
    let mut v = match buffer_pool::take(len) {
        Some(v) => v,
        None => {
            fresh_vec(len).ok_or_else(|| out_of_memory(len.checked_mul(std::mem::size_of::<T>()), T::DTYPE, shape))?
        }
    };
    v.resize(len, value);
    Ok(v)
}

/// Asks Linux to back a new, not yet touched allocation with transparent huge
/// pages, as numpy does for its large arrays. Where THP is in `madvise` mode (a
/// common default) a 64 MiB buffer then costs 32 page faults instead of 16,384:
/// measured, a fresh 64 MiB copy took 17 ms without this and 6 ms with it.
pub fn advise_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE: usize = 2 << 20;
        // Allocations from this size on ask for transparent huge pages.
        const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;
        let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
        if bytes < HUGE_PAGE_MIN_BYTES {
            return;
        }
        let start = v.as_ptr() as usize;
        let (first, end) = (start.next_multiple_of(HUGE_PAGE), (start + bytes) / HUGE_PAGE * HUGE_PAGE);
        if end > first {
            // SAFETY: the range lies inside this vector's allocation; MADV_HUGEPAGE only
            // changes how the kernel backs it, never its contents. Failure is harmless.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// What a failed allocation of tensor memory unwinds with (see `allocation_failed`).
#[derive(Debug)]
pub struct AllocationFailed {
    pub bytes: Option<usize>,
    pub elements: usize,
    pub element_type: &'static str,
}

impl AllocationFailed {
    pub fn message(&self) -> String {
        let size = self.bytes.map_or_else(|| "more than usize::MAX".to_string(), |b| b.to_string());
        format!(
            "out of memory: cannot allocate {size} bytes for {} elements of {}; free some tensors \
             (and rustgrad.empty_cache()) or use smaller shapes",
            self.elements, self.element_type
        )
    }
}

/// Leaves a kernel whose output cannot be allocated.
///
/// Kernels allocate deep inside loops and thread pools, where returning an error
/// would thread `Result` through every one of them. Instead the allocation is made
/// with `try_reserve` and its failure unwinds, without the panic hook (so nothing is
/// printed), to the nearest `catch_kernel_unwind` (`forward::forward`) or to the
/// binding's panic guard, which turn it into `Error::OutOfMemory`. Nothing is
/// half-written by then: kernels allocate their output before they write it.
#[cold]
#[inline(never)]
pub fn allocation_failed<T>(elements: usize) -> ! {
    let failure = AllocationFailed {
        bytes: elements.checked_mul(std::mem::size_of::<T>()),
        elements,
        element_type: match std::any::type_name::<T>() {
            "f32" => "float32",
            "f64" => "float64",
            "i64" => "int64",
            "i32" => "int32",
            "u8" => "uint8",
            other => other,
        },
    };
    std::panic::resume_unwind(Box::new(failure))
}

/// Runs `f`, turning the unwinds that kernels use to stop early into errors: an
/// `allocation_failed` into `Error::OutOfMemory` whose message starts with `context`,
/// and an `interrupt::Interrupted` into `Error::Interrupted`. Other panics unwind on.
pub fn catch_kernel_unwind<R>(context: impl FnOnce() -> String, f: impl FnOnce() -> Result<R>) -> Result<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => match payload.downcast::<AllocationFailed>() {
            Ok(failure) => Err(Error::OutOfMemory(format!("{}: {}", context(), failure.message()))),
            Err(other) if other.is::<crate::interrupt::Interrupted>() => Err(Error::Interrupted),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

/// `f()`, or None when it runs out of memory (an `allocation_failed` unwind): for
/// allocations that are an optimisation, with a way to do without them.
pub fn none_if_out_of_memory<R>(f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) if payload.is::<AllocationFailed>() => None,
        Err(other) => std::panic::resume_unwind(other),
    }
}

/// An empty vector with room for `len` elements: a recycled buffer, or new memory
/// (on huge pages when large). Unwinds with `AllocationFailed` when memory is short.
pub fn vec_with_capacity<T: Copy + 'static>(len: usize) -> Vec<T> {
    buffer_pool::take(len).or_else(|| fresh_vec(len)).unwrap_or_else(|| allocation_failed::<T>(len))
}

/// `attempt()`, tried again after emptying the buffer pool when it fails: memory
/// kept for reuse may be what is missing.
fn emptying_the_pool_if_needed<R>(attempt: impl Fn() -> Option<R>) -> Option<R> {
    attempt().or_else(|| {
        buffer_pool::empty();
        attempt()
    })
}

/// An empty vector of new memory with room for `len` elements (on huge pages when
/// large), or None when the allocator refuses it.
fn fresh_vec<T>(len: usize) -> Option<Vec<T>> {
    let v = emptying_the_pool_if_needed(|| {
        let mut v = Vec::new();
        v.try_reserve_exact(len).ok().map(|()| v)
    })?;
    advise_huge_pages(&v);
    Some(v)
}

/// The `len` items of `items` collected into a vector allocated as `vec_with_capacity` does.
pub fn collect_vec<T: Copy + 'static>(len: usize, items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = vec_with_capacity(len);
    v.extend(items.take(len));
    v
}

/// `len` elements for an output that the caller overwrites entirely: a recycled
/// buffer still holding old values, or zeros from new memory.
pub fn overwritable_vec<T: crate::dtype::Number>(len: usize) -> Vec<T> {
    match buffer_pool::take::<T>(len) {
        Some(mut v) => {
            // SAFETY: the pool only keeps buffers whose every element was initialised
            // (`give` requires len == capacity), and T is a plain number.
            unsafe { v.set_len(len) };
            v
        }
        None => fresh_zeroed_vec(len),
    }
}

/// `len` zeros, or an `AllocationFailed` unwind: a recycled buffer of that size set to zero,
/// or new memory (`fresh_zeroed_vec`). Recycled, because a large output made here and freed
/// goes to the buffer pool: if this took new memory every time, a loop that makes the same
/// output each step would pay the page faults of new memory each step, and fill the pool with
/// buffers nothing takes (the gradient of a 512×1000 cross-entropy did both: 500 page faults a
/// step, `benchmarks/steady_faults.py`).
pub fn zeroed_vec<T: crate::dtype::Number>(len: usize) -> Vec<T> {
    match buffer_pool::take::<T>(len) {
        Some(mut v) => {
            v.resize(len, T::ZERO);
            v
        }
        None => fresh_zeroed_vec(len),
    }
}

/// `len` zeros in new memory (huge pages when large), or an `AllocationFailed` unwind. Zeroed
/// memory comes straight from the kernel (calloc), so the advice lands before any page is touched.
fn fresh_zeroed_vec<T: crate::dtype::Number>(len: usize) -> Vec<T> {
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<T>(len) else { allocation_failed::<T>(len) };
    let ptr = emptying_the_pool_if_needed(|| {
        // SAFETY: the layout has a non-zero size (len > 0 and T is not zero-sized).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(ptr)
    })
    .unwrap_or_else(|| allocation_failed::<T>(len));
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `len` T's, and
    // all-zero bytes are a valid value (0) of each of them (T is a primitive number, see `Number`).
    let v = unsafe { Vec::from_raw_parts(ptr.cast::<T>(), len, len) };
    advise_huge_pages(&v);
    v
}
