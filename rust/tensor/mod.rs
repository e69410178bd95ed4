//! The tensor: a layout (shape, strides, offset) over a shared `Storage`, plus
//! the autograd bookkeeping (requires_grad, grad, grad_fn).
//!
//! Cloning a `Tensor` clones a handle; all clones are the same tensor. Views
//! are new tensors over the same storage.
//!
//! The autograd bookkeeping (`AutogradMeta`, the `History` mirror and the methods
//! that read and write them) is in `autograd_meta.rs`.

mod autograd_meta;

pub use autograd_meta::{AutogradMeta, History};

use crate::buffer_pool::Kept;
use crate::dtype::{DType, Kind, Scalar};
use crate::error::{shape_err, Error, Result};
use crate::kernels::layout::gather_strided;
use crate::shape::{checked_numel, fill_contiguous_strides, fmt_shape, numel, Shape};
use crate::storage::{try_alloc, Buffer, Element, Storage};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

pub struct TensorInner {
    storage: Arc<Storage>,
    shape: Shape,
    /// The product of `shape`, asked for by nearly every op.
    numel: usize,
    /// Inline for up to four dimensions: a new tensor then needs no allocation for them.
    strides: SmallVec<[isize; 4]>,
    offset: usize,
    dtype: DType,
    /// Set for tensors that share storage with another tensor through a view op.
    is_view: bool,
    meta: Mutex<AutogradMeta>,
    /// `requires_grad` and whether `grad_fn` is set, mirrored from `meta` by every
    /// write to it: recording an op reads them without taking the lock.
    history: AtomicU8,
}

thread_local! {
    /// Emptied tensor headers that `from_buffer` reuses on this thread (see `offer_shells`).
    static SPARE_SHELLS: RefCell<Vec<Tensor>> = const { RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    static SHELLS_REUSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many shells new tensors on this thread have reused.
#[cfg(test)]
pub fn shells_reused() -> usize {
    SHELLS_REUSED.get()
}

/// How many shells are lent, on all threads: new tensors look at the
/// thread-local only while it is not zero (see `buffer_pool::offer` for why).
static LENT_ANYWHERE: AtomicUsize = AtomicUsize::new(0);

/// Lends up to `count` shells (from `into_kept_parts`) to the new tensors this
/// thread makes, so they need no allocation for their header and storage,
/// until `withdraw_shells` takes back the unused ones.
pub fn offer_shells(shells: &mut Vec<Tensor>, count: usize) {
    let lent = shells.len().saturating_sub(count);
    if lent == shells.len() {
        return;
    }
    LENT_ANYWHERE.fetch_add(shells.len() - lent, Ordering::Relaxed);
    SPARE_SHELLS.with_borrow_mut(|spare| spare.extend(shells.drain(lent..)));
}

pub fn withdraw_shells(shells: &mut Vec<Tensor>) {
    SPARE_SHELLS.with_borrow_mut(|spare| {
        LENT_ANYWHERE.fetch_sub(spare.len(), Ordering::Relaxed);
        shells.append(spare)
    });
}

fn take_spare_shell() -> Option<Tensor> {
    let shell = SPARE_SHELLS.with_borrow_mut(Vec::pop)?;
    LENT_ANYWHERE.fetch_sub(1, Ordering::Relaxed);
    Some(shell)
}

#[derive(Clone)]
pub struct Tensor(Arc<TensorInner>);

/// A handle that does not keep the tensor alive (a node's reference to an output
/// whose gradient it should keep: holding it strongly would make a cycle).
#[derive(Clone)]
pub struct WeakTensor(std::sync::Weak<TensorInner>);

impl WeakTensor {
    pub fn upgrade(&self) -> Option<Tensor> {
        self.0.upgrade().map(Tensor)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor({} {})", self.dtype().name(), fmt_shape(self.shape()))
    }
}

impl Tensor {
    fn from_parts(
        storage: Arc<Storage>,
        dtype: DType,
        shape: Shape,
        strides: SmallVec<[isize; 4]>,
        offset: usize,
        is_view: bool,
    ) -> Tensor {
        Tensor(Arc::new(TensorInner {
            storage,
            numel: numel(&shape),
            shape,
            strides,
            offset,
            dtype,
            is_view,
            meta: Mutex::new(AutogradMeta::default()),
            history: AtomicU8::new(0),
        }))
    }

    /// A contiguous tensor owning `data`, which must hold exactly `numel(shape)` elements.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if data.len() != numel(&shape) {
            return shape_err(format!(
                "cannot make a tensor of shape {} from {} elements",
                fmt_shape(&shape),
                data.len()
            ));
        }
        Ok(Self::from_buffer(T::wrap(data), shape))
    }

    /// A contiguous tensor over `buffer`, which must hold exactly `numel(shape)` elements.
    pub fn from_external(buffer: Buffer, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if buffer.len() != numel(&shape) {
            return shape_err(format!("cannot view {} elements as shape {}", buffer.len(), fmt_shape(&shape)));
        }
        Ok(Self::from_buffer(buffer, shape))
    }

    /// True when the data lives in memory shared with another owner (e.g. numpy).
    pub fn is_external(&self) -> bool {
        self.0.storage.is_external()
    }

    pub(crate) fn from_buffer(buffer: Buffer, shape: impl Into<Shape>) -> Tensor {
        let t = Self::from_buffer_untraced(buffer, shape);
        if crate::compile::tracing() {
            crate::compile::created(&t, false);
        }
        t
    }

    fn from_buffer_untraced(buffer: Buffer, shape: impl Into<Shape>) -> Tensor {
        let shape = shape.into();
        if LENT_ANYWHERE.load(Ordering::Relaxed) != 0 {
            return Self::from_buffer_in_shell(buffer, shape);
        }
        let mut strides = SmallVec::from_elem(0, shape.len());
        fill_contiguous_strides(&shape, &mut strides);
        let dtype = buffer.dtype();
        Self::from_parts(Arc::new(Storage::new(buffer)), dtype, shape, strides, 0, false)
    }

    /// `from_buffer` in a lent shell, if this thread has one. Kept out of line so
    /// that the common path stays as small as it was.
    #[inline(never)]
    fn from_buffer_in_shell(buffer: Buffer, shape: Shape) -> Tensor {
        let mut strides = SmallVec::from_elem(0, shape.len());
        fill_contiguous_strides(&shape, &mut strides);
        let dtype = buffer.dtype();
        if let Some(mut shell) = take_spare_shell() {
            if let Some(inner) = Arc::get_mut(&mut shell.0) {
                if let Some(storage) = Arc::get_mut(&mut inner.storage) {
                    storage.refill(buffer);
                    (inner.numel, inner.shape, inner.strides, inner.offset, inner.dtype, inner.is_view) =
                        (numel(&shape), shape, strides, 0, dtype, false);
                    *inner.meta.get_mut() = AutogradMeta::default();
                    *inner.history.get_mut() = 0;
                    #[cfg(test)]
                    SHELLS_REUSED.set(SHELLS_REUSED.get() + 1);
                    return shell;
                }
            }
        }
        Self::from_parts(Arc::new(Storage::new(buffer)), dtype, shape, strides, 0, false)
    }

    /// A 0-d tensor holding `value` as `dtype`.
    pub fn scalar(value: impl Into<Scalar>, dtype: DType) -> Tensor {
        let value = value.into();
        let t = crate::dtype::dispatch!(dtype, |T| Self::from_buffer(T::wrap(vec![value.to_element::<T>()]), vec![]));
        if crate::compile::tracing() {
            crate::compile::created(&t, true);
        }
        t
    }

    /// A tensor filled with `value`; fails cleanly when the allocation is too large.
    pub fn full(shape: &[usize], value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        let (n, value) = (checked_numel(shape)?, value.into());
        let buffer = crate::dtype::dispatch!(dtype, |T| T::wrap(try_alloc(n, value.to_element::<T>(), shape)?));
        let t = Self::from_buffer(buffer, shape);
        if crate::compile::tracing() {
            crate::compile::created(&t, true);
        }
        Ok(t)
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::full(shape, 0.0, dtype)
    }

    /// A tensor of `shape` whose every element is one shared zero: it has a shape
    /// and a dtype but costs one element (what derivative rules see for inputs
    /// whose values they do not read).
    pub fn placeholder(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let zero = Self::zeros(&[], dtype)?;
        zero.view_as_layout(shape, vec![0; shape.len()], 0)
    }

    pub fn zeros_like(&self) -> Result<Tensor> {
        Self::zeros(self.shape(), self.dtype())
    }

    // ----- layout -----

    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    pub fn strides(&self) -> &[isize] {
        &self.0.strides
    }

    pub fn offset(&self) -> usize {
        self.0.offset
    }

    pub fn rank(&self) -> usize {
        self.0.shape.len()
    }

    pub fn numel(&self) -> usize {
        self.0.numel
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }

    pub fn is_view(&self) -> bool {
        self.0.is_view
    }

    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for (&d, &s) in self.0.shape.iter().zip(&self.0.strides).rev() {
            if d > 1 && s != expected {
                return false;
            }
            expected *= d.max(1) as isize;
        }
        true
    }

    /// A new tensor over the same storage with another layout (no autograd history).
    /// Fails when the layout would address an element outside the storage: kernels
    /// read tensors through their layouts without checking each index.
    pub fn view_as_layout(
        &self,
        shape: impl Into<Shape>,
        strides: impl Into<crate::shape::Strides>,
        offset: usize,
    ) -> Result<Tensor> {
        let (shape, strides) = (shape.into(), strides.into());
        let len = self.0.storage.len();
        // A zero-size view addresses nothing; its offset (which slicing may put past the
        // end) is dropped so that every tensor's offset lies within its storage.
        let offset = if shape.contains(&0) { 0 } else { offset };
        if !crate::shape::fits_in(&shape, &strides, offset, len) {
            return Err(Error::Internal(format!(
                "a view of shape {} with strides {strides:?} at offset {offset} reaches outside its storage of {len} elements",
                fmt_shape(&shape)
            )));
        }
        Ok(Self::from_parts(self.0.storage.clone(), self.0.dtype, shape, strides, offset, true))
    }

    /// The same data and layout without autograd history; shares the version counter.
    pub fn alias(&self) -> Tensor {
        Self::from_parts(
            self.0.storage.clone(),
            self.0.dtype,
            self.0.shape.clone(),
            self.0.strides.clone(),
            self.0.offset,
            self.0.is_view,
        )
    }

    pub fn same_tensor(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    /// A stable identity for hashing while the tensor lives.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// True when no other handle or view shares this tensor's data, so it may be reused in place.
    pub fn is_uniquely_owned(&self) -> bool {
        self.is_held_only_by(1)
    }

    /// Whether exactly `holders` handles reach this tensor, no weak one (which could
    /// become another), and no other tensor (a view) shares its storage.
    pub fn is_held_only_by(&self, holders: usize) -> bool {
        Arc::strong_count(&self.0) == holders
            && Arc::weak_count(&self.0) == 0
            && Arc::strong_count(&self.0.storage) == 1
    }

    /// Splits a tensor nothing else holds into its memory, to be kept for reuse,
    /// and its emptied header (a shell for `offer_shells`).
    pub fn into_kept_parts(mut self) -> Option<(Kept, Tensor)> {
        let inner = Arc::get_mut(&mut self.0)?;
        let storage = Arc::get_mut(&mut inner.storage)?;
        let kept = match storage.refill(Buffer::Bool(Vec::new())) {
            Buffer::F32(v) => Kept::new(v),
            Buffer::F64(v) => Kept::new(v),
            Buffer::I64(v) => Kept::new(v),
            Buffer::I32(v) => Kept::new(v),
            Buffer::U8(v) => Kept::new(v),
            Buffer::Bool(_) | Buffer::External(_) => None,
        }?;
        Some((kept, self))
    }

    /// The address of the first element (where the tensor's memory is, for identity checks).
    pub fn data_ptr(&self) -> usize {
        self.0.storage.address() + self.0.offset * self.0.dtype.size_in_bytes()
    }

    /// The bytes `[first, end)` that hold this tensor's elements (and any gaps
    /// between them); None when it has no elements.
    fn byte_span(&self) -> Option<(usize, usize)> {
        // The layout was checked against the storage when the tensor was made, so the
        // element indices lie inside it and the byte addresses cannot overflow.
        let (low, high) = crate::shape::extent(&self.0.shape, &self.0.strides, self.0.offset)?;
        let item = self.0.dtype.size_in_bytes();
        let base = self.0.storage.address();
        Some((base + low as usize * item, base + (high as usize + 1) * item))
    }

    /// Whether the two tensors' elements may share memory: views of one storage, or of
    /// two storages over the same numpy memory, whose byte spans intersect. Storages
    /// that rustgrad owns never share memory with another storage. No lock is taken,
    /// so in-place kernels can afford it.
    pub fn may_overlap(&self, other: &Tensor) -> bool {
        let (mine, theirs) = (&self.0.storage, &other.0.storage);
        let may_share = Arc::ptr_eq(mine, theirs) || (mine.is_external() && theirs.is_external());
        if !may_share {
            return false;
        }
        match (self.byte_span(), other.byte_span()) {
            (Some((a0, a1)), Some((b0, b1))) => a0 < b1 && b0 < a1,
            _ => false,
        }
    }

    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }

    // ----- data access -----

    fn dtype_mismatch<T: Element>(&self) -> Error {
        Error::DType(format!(
            "internal dtype mismatch: tensor is {} but {} was requested",
            self.dtype().name(),
            T::DTYPE.name()
        ))
    }

    /// Calls `f` with the elements in row-major order, borrowing when the layout is contiguous.
    pub fn with_contiguous<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        let guard = self.0.storage.read();
        let all = T::slice(&guard).ok_or_else(|| self.dtype_mismatch::<T>())?;
        if self.numel() == 0 {
            // A view of a zero-size tensor may carry an offset past the end of its storage.
            return Ok(f(&[]));
        }
        if self.is_contiguous() {
            let start = self.0.offset;
            Ok(f(&all[start..start + self.numel()]))
        } else {
            let copy = gather_strided(all, &self.0.shape, &self.0.strides, self.0.offset);
            drop(guard);
            Ok(f(&copy))
        }
    }

    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.is_contiguous() || self.numel() == 0 {
            return self.with_contiguous(|s: &[T]| crate::kernels::layout::copy_slice(s));
        }
        // The gathered copy is the result (with_contiguous would copy it once more).
        let guard = self.0.storage.read();
        let all = T::slice(&guard).ok_or_else(|| self.dtype_mismatch::<T>())?;
        Ok(gather_strided(all, &self.0.shape, &self.0.strides, self.0.offset))
    }

    /// Every element as f64, row-major (bools as 0/1; integers past 2^53 round).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        let out = crate::dtype::dispatch!(self.dtype(), |T| {
            self.with_contiguous(|s: &[T]| crate::kernels::elementwise::map(s, |v| v.to_f64()))
        });
        // invariant: the requested element type always matches self.dtype() above.
        out.unwrap_or_default()
    }

    /// The value of a one-element tensor as a number of its dtype's category (exact for int64).
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return shape_err(format!(
                "a Tensor with {} elements cannot be converted to Scalar; use .tolist() or index one element first",
                self.numel()
            ));
        }
        crate::dtype::dispatch!(self.dtype(), |T| {
            let v: T = self.with_contiguous(|s: &[T]| s[0])?;
            Ok(match T::DTYPE.kind() {
                Kind::Float => Scalar::Float(v.to_f64()),
                Kind::Integer => Scalar::Int(v.to_i64()),
                Kind::Bool => Scalar::Bool(v.to_i64() != 0),
            })
        })
    }

    /// A contiguous tensor with the same values; `self` when it already is one.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() && self.0.offset == 0 && self.storage_len() == self.numel() {
            return Ok(self.clone());
        }
        self.copy_with_shape(&self.0.shape)
    }

    /// The elements in row-major order, copied into a new contiguous tensor of `shape`
    /// (which holds as many): a reshape that needs a copy, and is no view of anything.
    pub fn copy_with_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if numel(shape) != self.numel() {
            return shape_err(format!("cannot copy {} elements into shape {}", self.numel(), fmt_shape(shape)));
        }
        let buffer = crate::dtype::dispatch!(self.dtype(), |T| T::wrap(self.to_vec::<T>()?));
        Ok(Self::from_buffer(buffer, shape))
    }

    fn storage_len(&self) -> usize {
        self.0.storage.read().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reaching_outside_its_storage_is_refused() {
        let t = Tensor::zeros(&[2, 3], DType::F32).unwrap();
        assert!(t.view_as_layout(vec![3, 2], vec![1, 3], 0).is_ok());
        assert!(t.view_as_layout(vec![3, 2], vec![1, 4], 0).is_err());
        assert!(t.view_as_layout(vec![6], vec![1], 1).is_err());
        assert!(t.view_as_layout(vec![2], vec![-1], 0).is_err());
        assert!(t.view_as_layout(vec![2], vec![-1], 1).is_ok());
        assert!(t.view_as_layout(vec![3, 2], vec![2, 1], 0).is_ok());
        assert!(t.view_as_layout(vec![1usize << 62], vec![1 << 2], 0).is_err());
        assert!(t.view_as_layout(vec![0, 5], vec![5, 1], 6).is_ok());
        assert_eq!(t.view_as_layout(vec![0, 5], vec![5, 1], 7).unwrap().offset(), 0);
        assert!(t.view_as_layout(vec![2, 3], vec![3], 0).is_err());
    }
}
