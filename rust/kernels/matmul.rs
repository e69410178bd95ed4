//! Matrix products on the `gemm` crate (crate_gemm.rs), which picks its SIMD kernel
//! (AVX2, AVX-512, NEON) at run time, and on our own AVX-512 kernel for mid-size
//! float32 products: which runs a product is decided here. Operands are read
//! through their strides, so a transposed view is multiplied without being copied
//! (except a column-major A in wide products, see `dense_copy_of_transposed`, and a small
//! B not stored by rows, see `b_is_copied_into_rows`). A large B stored by columns with a
//! small A runs as the transposed product (`sgemm_swapped`).

use super::elementwise::ScalarOp;
use super::leaf_sgd::LeafSgd;
use crate::dtype::Float;
use std::mem::MaybeUninit;

/// A read-only strided matrix inside a storage slice.
///
/// The fields are private to the kernels: outside them a `MatRef` is made only by
/// `MatRef::new`, which checks that every element it addresses lies inside `data`.
/// The kernels read through raw pointers relying on that check.
#[derive(Copy, Clone)]
pub struct MatRef<'a, T> {
    pub(super) data: &'a [T],
    pub(super) offset: usize,
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) row_stride: isize,
    pub(super) col_stride: isize,
}

impl<'a, T> MatRef<'a, T> {
    /// A rows×cols matrix whose element (i, j) is `data[offset + i·row_stride + j·col_stride]`;
    /// None when some element would fall outside `data` (or the arithmetic overflows).
    pub fn new(
        data: &'a [T],
        offset: usize,
        (rows, cols): (usize, usize),
        (row_stride, col_stride): (isize, isize),
    ) -> Option<MatRef<'a, T>> {
        let in_bounds = crate::shape::fits_in(&[rows, cols], &[row_stride, col_stride], offset, data.len());
        in_bounds.then_some(MatRef { data, offset, rows, cols, row_stride, col_stride })
    }

    /// Rows `first..first + count` of this matrix.
    pub(super) fn row_band(self, first: usize, count: usize) -> MatRef<'a, T> {
        // invariant: kernels ask only for bands inside the matrix; outside it the band could address memory outside `data`.
        assert!(first.checked_add(count).is_some_and(|end| end <= self.rows), "row_band: rows outside the matrix");
        // Inside `data`, because every element of the whole matrix is (checked by `MatRef::new`).
        let offset = (self.offset as isize + first as isize * self.row_stride) as usize;
        MatRef { offset, rows: count, ..self }
    }

    /// Columns `first..first + count` of this matrix.
    pub(super) fn column_band(self, first: usize, count: usize) -> MatRef<'a, T> {
        self.transposed().row_band(first, count).transposed()
    }

    pub fn transposed(self) -> MatRef<'a, T> {
        MatRef { rows: self.cols, cols: self.rows, row_stride: self.col_stride, col_stride: self.row_stride, ..self }
    }
}

/// What the second output of a two-output product holds, next to the product itself.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum SecondOutput {
    /// The product again.
    Copy,
    /// `maximum(product, c)`, NaN-propagating as numpy's `maximum` (`c` must not be NaN).
    AtLeast(f64),
    /// `relu(product)`: +0 where the product is ≤ 0, NaN kept.
    Relu,
}

/// How our own kernel stores a product `p` into its output, given the output's
/// initial values `init` (read only where the variant uses them).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Store<T> {
    /// `beta·init + alpha·p`.
    Scaled { alpha: T, beta: T },
    /// `init + alpha·((zero + p) op scale)`, op a multiply or (with `divide`) a division,
    /// each operation rounded on its own as in an eager SGD step whose `.grad` held
    /// `zero` (see `kernels::leaf_sgd`), so the bits are that step's.
    SgdStep { zero: T, scale: T, divide: bool, alpha: T },
}

/// `out = beta·out + alpha·a·b` for a row-major `out` of shape (a.rows, b.cols).
/// With `beta == 0` the previous contents of `out` are ignored (even NaN).
pub fn matmul_into<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T) {
    product_into(a, b, out, alpha, beta, Role::Whole);
}

/// `matmul_into` for one product of a batch that is split across threads by matrix
/// (see batched_matmul.rs): on the calling thread alone.
pub fn matmul_into_as_part_of_batch<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T) {
    product_into(a, b, out, alpha, beta, Role::PartOfBatch);
}

/// Who runs a product: a call of its own (on all threads where that pays), or one
/// thread, as one product of a batch whose products run side by side.
#[derive(Copy, Clone, PartialEq)]
enum Role {
    Whole,
    PartOfBatch,
}

/// The products of a batch above this many multiply-adds run on the `gemm` crate, not
/// on our own kernel: one thread per product, the crate was faster from 32³ up (87
/// against 76 GFLOP/s; 183 against 140 at 256³; on par at 16³, behind at 8³), measured
/// on an AVX-512 Xeon, release build. Our kernel is tuned for a training step's products,
/// which run one at a time on all threads.
const PART_OF_BATCH_OWN_KERNEL_MAX_MACS: usize = 1 << 12;

/// `matmul_into`, run as `role` says.
fn product_into<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, role: Role) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    // invariant: forward::matmul checks the inner dimensions and sizes `out` from the checked shapes;
    // the kernels below write m×n elements through a raw pointer, so this check must hold in release builds.
    assert!(product_len(a, b) == Some(out.len()), "matmul_into: operand sizes");
    if m == 0 || n == 0 {
        return;
    }
    let read_dst = beta != T::ZERO;
    if k == 0 {
        if !read_dst {
            out.iter_mut().for_each(|v| *v = T::ZERO);
        }
        return;
    }
    let own_kernel_may_run =
        role == Role::Whole || m.saturating_mul(k).saturating_mul(n) <= PART_OF_BATCH_OWN_KERNEL_MAX_MACS;
    let ptr = out.as_mut_ptr();
    // SAFETY: `out` holds the m×n outputs and may be read as the initial values. (A product
    // that small runs on one thread: try_own_sgemm threads from 2^20 multiply-adds.)
    if own_kernel_may_run
        && unsafe {
            try_own_sgemm(a, b, ptr, [ptr, std::ptr::null_mut()], SecondOutput::Copy, Store::Scaled { alpha, beta })
        }
        .is_some()
    {
        return;
    }
    if let Some(dense_a) = dense_copy_of_transposed(a, n) {
        let a_ref = MatRef { data: &dense_a, offset: 0, rows: m, cols: k, row_stride: k as isize, col_stride: 1 };
        product_into(a_ref, b, out, alpha, beta, role);
        crate::buffer_pool::give(dense_a);
        return;
    }
    if !read_dst && m > 1 && m.saturating_mul(n).saturating_mul(k) > INTERRUPTIBLE_BLOCK_MACS {
        return product_in_row_blocks(a, b, out, alpha, role);
    }
    super::crate_gemm::product(a, b, out, alpha, beta, role == Role::Whole);
}

/// Products of more multiply-adds than this are computed in blocks of rows of about this
/// size (50–100 ms on two cores), with a Ctrl-C check between blocks. Repacking B for
/// each block costs 1/rows of the work, below 1% for the products that get here.
const INTERRUPTIBLE_BLOCK_MACS: usize = 1 << 33;

/// `out = alpha·a·b` (a fresh output: nothing is read from it), block by block.
fn product_in_row_blocks<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, role: Role) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let block = (INTERRUPTIBLE_BLOCK_MACS / n.saturating_mul(k).max(1)).clamp(1, m);
    let poller = crate::interrupt::Poller::here();
    for (index, out_rows) in out.chunks_mut(block * n).enumerate() {
        poller.poll();
        let rows = a.row_band(index * block, out_rows.len() / n);
        product_into(rows, b, out_rows, alpha, T::ZERO, role);
    }
}

/// The number of elements of `a·b`, or None when the inner dimensions differ (or it overflows).
pub(super) fn product_len<T>(a: MatRef<T>, b: MatRef<T>) -> Option<usize> {
    (a.cols == b.rows).then(|| a.rows.checked_mul(b.cols)).flatten()
}

/// The `gemm` crate multiplies a column-major A (a transposed view, as in the
/// weight gradient xᵀ·g) about 15% slower than a row-major one: 93 ms against 80 ms
/// at 4096×1024×4096. A transposed copy of that A costs about 2.2 ms, so a large A
/// is copied first when the product is wide enough to repay it. The copy's cost
/// grows with m·k and the saving with m·k·n; on this machine they break even near
/// n = 750. At 4096×1024×1000 the copy took the product from 25.1 to 23.6 ms.
fn dense_copy_of_transposed<T: Float>(a: MatRef<T>, n: usize) -> Option<Vec<T>> {
    const MIN_WIDTH: usize = 1000;
    const MIN_WORK: usize = 1 << 30;
    let column_major = a.row_stride == 1 && a.col_stride >= a.rows as isize && a.cols > 1;
    if !column_major || n < MIN_WIDTH || a.rows.saturating_mul(a.cols).saturating_mul(n) < MIN_WORK {
        return None;
    }
    // The copy is an optimisation: when memory is short, multiply through the strides.
    let bytes = a.rows.saturating_mul(a.cols).saturating_mul(std::mem::size_of::<T>());
    if bytes > crate::storage::physical_memory_bytes() / 8 {
        return None;
    }
    let strides = [a.row_stride, a.col_stride];
    // Out of memory here is no failure: the product reads `a` through its strides instead.
    crate::storage::none_if_out_of_memory(|| {
        super::layout::gather_strided(a.data, &[a.rows, a.cols], &strides, a.offset)
    })
}

/// Our own kernel reads B by rows, so a B stored otherwise (a transposed view, as w2ᵀ in the
/// seed step's g·w2ᵀ, or Wᵀ in a torch `Linear`'s x·Wᵀ) would go to the `gemm` crate. A small
/// such B is copied into rows instead (by `try_own_sgemm`), so that our kernel runs the
/// product: at most this many elements (64 KiB of float32).
const SMALL_B_COPY_MAX_ELEMENTS: usize = 1 << 14;

/// Whether `b` is read by our own kernel from a row-major copy: it is small and not stored by rows.
fn b_is_copied_into_rows<T>(b: MatRef<T>) -> bool {
    b.col_stride != 1 && b.rows.saturating_mul(b.cols) <= SMALL_B_COPY_MAX_ELEMENTS
}

/// A row-major copy of `b`, or None when memory is short.
fn row_major_copy_of<T: Float>(b: MatRef<T>) -> Option<Vec<T>> {
    let strides = [b.row_stride, b.col_stride];
    crate::storage::none_if_out_of_memory(|| {
        super::layout::gather_strided(b.data, &[b.rows, b.cols], &strides, b.offset)
    })
}

/// Whether `own_kernel_for` may pick our own kernel for elements of type `T` at all.
fn own_kernel_available_for<T: 'static>() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
            && super::sgemm_avx512::available()
            && kernel_choice() != KernelChoice::OnlyCrate
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out = init + alpha·a·b`, writing every element of the (possibly uninitialised)
/// `out`, and of `copy` when given. Our own kernel reads `init` while it stores the
/// result (and its copy), which saves the separate passes that copying `init` into
/// `out` first, and `out` into `copy` after, would cost.
pub fn matmul_update_into<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    init: &[T],
    out: &mut [MaybeUninit<T>],
    mut copy: Option<&mut [MaybeUninit<T>]>,
    alpha: T,
) {
    let len = product_len(a, b);
    let sizes_ok =
        len == Some(init.len()) && len == Some(out.len()) && copy.as_ref().is_none_or(|c| len == Some(c.len()));
    // invariant: forward::matmul_update sizes all three from the checked shapes.
    assert!(sizes_ok, "matmul_update_into: operand sizes");
    // SAFETY: `init` holds m×n readable values; `out` and `copy` m×n writable slots each.
    if unsafe { own_kernel_update(a, b, init.as_ptr(), out.as_mut_ptr().cast::<T>(), copy.as_deref_mut(), alpha) } {
        return;
    }
    let out = write_all(out, init);
    accumulate_without_own_kernel(a, b, out, copy, alpha);
}

/// `target += alpha·a·b` in place, and `copy = target` afterwards when given (the
/// copy stored by the same pass where our own kernel runs the product).
pub fn matmul_accumulate_into<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    target: &mut [T],
    mut copy: Option<&mut [MaybeUninit<T>]>,
    alpha: T,
) {
    let len = product_len(a, b);
    let sizes_ok = len == Some(target.len()) && copy.as_ref().is_none_or(|c| len == Some(c.len()));
    // invariant: forward::matmul_update_in_place sizes both from the checked shapes.
    assert!(sizes_ok, "matmul_accumulate_into: operand sizes");
    let target_ptr = target.as_mut_ptr();
    // SAFETY: `target` holds m×n values, read and written in place (the kernel reads
    // each element before it stores it); `copy` has m×n writable slots.
    if unsafe { own_kernel_update(a, b, target_ptr, target_ptr, copy.as_deref_mut(), alpha) } {
        return;
    }
    accumulate_without_own_kernel(a, b, target, copy, alpha);
}

/// `out = init + alpha·a·b`, also stored into `copy` when given, by one pass of
/// our own kernel; false, with nothing written, where that kernel does not apply.
///
/// # Safety
/// `init` must be valid for m×n reads and `out` for m×n writes (it may equal `init`).
unsafe fn own_kernel_update<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    init: *const T,
    out: *mut T,
    copy: Option<&mut [MaybeUninit<T>]>,
    alpha: T,
) -> bool {
    if a.rows == 0 || b.cols == 0 || a.cols == 0 {
        return false;
    }
    let copy_ptr = copy.map_or(std::ptr::null_mut(), |c| c.as_mut_ptr().cast::<T>());
    // SAFETY: the caller's contract on `init` and `out`; `copy` is a slice of m×n slots.
    unsafe { try_own_sgemm(a, b, init, [out, copy_ptr], SecondOutput::Copy, Store::Scaled { alpha, beta: T::ONE }) }
        .is_some()
}

/// `target += alpha·a·b` through `matmul_into`, then `copy = target` when given.
fn accumulate_without_own_kernel<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    target: &mut [T],
    copy: Option<&mut [MaybeUninit<T>]>,
    alpha: T,
) {
    matmul_into(a, b, target, alpha, T::ONE);
    if let Some(copy) = copy {
        write_all(copy, target);
    }
}

/// `out = a·b` and `second = f(a·b)` (see `SecondOutput`), both stored by one pass
/// of our own kernel. Returns false, with nothing written, where that kernel does
/// not apply (then the caller computes the two separately).
pub fn matmul_two_outputs_into<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    out: &mut [MaybeUninit<T>],
    second: &mut [MaybeUninit<T>],
    what: SecondOutput,
) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let len = product_len(a, b);
    // invariant: forward::matmul_activation sizes both outputs from the checked shapes.
    assert!(len == Some(out.len()) && len == Some(second.len()), "matmul_two_outputs_into: output sizes");
    if m == 0 || n == 0 || k == 0 {
        return false;
    }
    let outs = [out.as_mut_ptr().cast::<T>(), second.as_mut_ptr().cast::<T>()];
    // SAFETY: both outputs hold m×n writable slots; with beta = 0 nothing is read from `init`.
    unsafe { try_own_sgemm(a, b, outs[0], outs, what, Store::Scaled { alpha: T::ONE, beta: T::ZERO }) }.is_some()
}

/// One eager SGD step on `w` whose gradient is `a·b` and whose `.grad` held `zero`:
/// `w = w + alpha·((zero + a·b) op scale)` with op `Mul` or `Div`, in place, by one
/// pass of our own kernel, with the bits of `kernels::leaf_sgd` on the product's
/// bits. False, with nothing written, where that kernel does not run this product
/// (nor `matmul_into` on it) or op is another one.
pub fn matmul_sgd_step_in_place<T: Float>(a: MatRef<T>, b: MatRef<T>, w: &mut [T], zero: T, step: &LeafSgd<T>) -> bool {
    // invariant: the caller sizes `w` from the product's checked shape; the kernel writes m×n through a pointer.
    assert!(product_len(a, b) == Some(w.len()), "matmul_sgd_step_in_place: operand sizes");
    if !sgd_step_fuses(a, b, step) {
        return false;
    }
    let divide = step.scale_op == ScalarOp::Div;
    let store = Store::SgdStep { zero, scale: step.scale, divide, alpha: step.alpha };
    let ptr = w.as_mut_ptr();
    // SAFETY: `w` holds m×n values, read and written in place (the kernel reads each before it stores it).
    unsafe { try_own_sgemm(a, b, ptr, [ptr, std::ptr::null_mut()], SecondOutput::Copy, store) }.is_some()
}

/// Whether `matmul_sgd_step_in_place` runs this step, so a caller can ask before it
/// takes the weight for writing.
pub fn sgd_step_fuses<T: Float>(a: MatRef<T>, b: MatRef<T>, step: &LeafSgd<T>) -> bool {
    let nonempty = a.rows > 0 && b.cols > 0 && a.cols > 0;
    matches!(step.scale_op, ScalarOp::Mul | ScalarOp::Div) && nonempty && own_kernel_runs(a, b)
}

/// Copies `values` into `slots` (of the same length) and returns them as initialised.
fn write_all<'a, T: Copy + Send + Sync>(slots: &'a mut [MaybeUninit<T>], values: &[T]) -> &'a mut [T] {
    super::layout::copy_into(slots, values);
    // SAFETY: copy_into checked the lengths are equal and wrote every slot.
    unsafe { &mut *(slots as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// Which products our own kernel may run, as `RUSTGRAD_GEMM` says (to measure what
/// each kernel brings): `crate` none, `own` also those whose B is 1 MiB or more.
#[cfg(target_arch = "x86_64")]
#[derive(Copy, Clone, PartialEq)]
enum KernelChoice {
    ByShape,
    OnlyCrate,
    OwnForAnyB,
}

#[cfg(target_arch = "x86_64")]
fn kernel_choice() -> KernelChoice {
    static CHOICE: std::sync::OnceLock<KernelChoice> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| match std::env::var("RUSTGRAD_GEMM").as_deref() {
        Ok("crate") => KernelChoice::OnlyCrate,
        Ok("own") => KernelChoice::OwnForAnyB,
        _ => KernelChoice::ByShape,
    })
}

/// Products up to this many multiply-adds use our own AVX-512 kernel (see sgemm_avx512.rs).
#[cfg(target_arch = "x86_64")]
const OWN_SGEMM_MAX_FLOPS: usize = 1 << 28;

/// ... and only while B (k×n) holds fewer elements than this: 1 MiB of float32.
/// The kernel does not pack or block B, so every 8-row tile streams a k×32 strip of
/// it whose rows lie n·4 bytes apart; with a larger B that strip leaves the cache.
/// On the 2-core AVX-512 Xeon (GFLOP/s, own kernel against the crate, medians of three
/// processes, `python benchmarks/kernel_choice.py`): 1 thread 512³ 72 against 122,
/// 64×4096×1024 34 against 93; 2 threads 512³ 136 against 180, 128×1024×1024 65
/// against 183. Below the limit our kernel is ahead on 2 threads, where it does not
/// wake the crate's rayon threads (256³ 162 against 102, 64×1000×100 140 against 91).
/// The choice depends on the shape alone, so results stay bitwise the same at any
/// thread count.
#[cfg(target_arch = "x86_64")]
const OWN_SGEMM_MAX_B_ELEMENTS: usize = (1 << 18) - 1;

/// Which of our own AVX-512 float32 kernels runs a product.
#[derive(Copy, Clone, PartialEq, Debug)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) enum OwnKernel {
    /// `sgemm_avx512.rs`: B read in place.
    Unpacked,
    /// `sgemm_packed.rs`: B copied into panels, block by block (the same bits).
    Packed,
}

/// Products too large for the unpacked kernel run on the packed one when A's rows are
/// contiguous and they have at least this many rows and multiply-adds (and a tile's width
/// of columns); the others on the `gemm` crate (a column-major A copied first, see
/// `dense_copy_of_transposed`). Each block of B is copied once for all the rows.
/// `cargo run --release --example large_products` (2-core AVX-512 EPYC, % of the FMA peak,
/// packed against the crate, see docs/performance.md): 1024×4096×4096 88–91 against 80–85;
/// with A transposed the crate was ahead (4096×1024×4096 82–84 against 86–87); below the
/// limits too (512³ 66–71 against 92, 256×1024×1024 54–59 against 80–91).
#[cfg(target_arch = "x86_64")]
const PACKED_MIN_ROWS: usize = 256;
#[cfg(target_arch = "x86_64")]
const PACKED_MIN_MACS: usize = 1 << 31;

/// Whether one of our own AVX-512 float32 kernels runs `a·b` (rather than the `gemm` crate),
/// directly or as the transposed product (`sgemm_swapped`). (When memory is too short for
/// the copy of a small B or for the transposed product, the crate runs it after all.)
pub fn own_kernel_runs<T: Float>(a: MatRef<T>, b: MatRef<T>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::sgemm_swapped::runs_swapped(a, b) {
        return true;
    }
    own_kernel_for(a, b).is_some()
}

/// Our kernel for `a·b`: by its shape and A's layout, where B is stored by rows or
/// copied into rows (`b_is_copied_into_rows`).
pub(super) fn own_kernel_for<T: Float>(a: MatRef<T>, b: MatRef<T>) -> Option<OwnKernel> {
    let kernel = own_kernel_for_shape(a, b)?;
    (b.col_stride == 1 || b_is_copied_into_rows(b)).then_some(kernel)
}

/// Our kernel for `a·b` if B were stored by rows.
fn own_kernel_for_shape<T: Float>(a: MatRef<T>, b: MatRef<T>) -> Option<OwnKernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if !own_kernel_available_for::<T>() {
            return None;
        }
        let choice = kernel_choice();
        let (m, k, n) = (a.rows, a.cols, b.cols);
        // Without cache blocking the unpacked kernel falls behind on large products.
        let unpacked_fits = m.saturating_mul(n).saturating_mul(k) <= OWN_SGEMM_MAX_FLOPS
            && (choice == KernelChoice::OwnForAnyB || k.saturating_mul(n) <= OWN_SGEMM_MAX_B_ELEMENTS);
        if unpacked_fits {
            Some(OwnKernel::Unpacked)
        } else if a.col_stride == 1
            && m >= PACKED_MIN_ROWS
            && n >= super::sgemm_avx512::NR
            && m.saturating_mul(n).saturating_mul(k) >= PACKED_MIN_MACS
            && !super::crate_gemm::always_in_depth_halves(m, k, n)
        {
            Some(OwnKernel::Packed)
        } else {
            None
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, b);
        None
    }
}

/// `out = a·b` stored as `store` says from `init`, on the AVX-512 float32 kernel, for
/// the products it is faster at; None (and nothing written) when it does not apply.
///
/// # Safety
/// `init` must be valid for m×n reads and `outs[0]` (and a non-null `outs[1]`) for
/// m×n writes (`outs[0]` may equal `init`).
pub(super) unsafe fn try_own_sgemm<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    init: *const T,
    outs: [*mut T; 2],
    second: SecondOutput,
    store: Store<T>,
) -> Option<()> {
    #[cfg(target_arch = "x86_64")]
    {
        let Some(kernel) = own_kernel_for(a, b) else {
            // SAFETY: the caller's contract, passed on.
            return unsafe { super::sgemm_swapped::try_swapped(a, b, init, outs, second, store) };
        };
        // A B that is not in rows (`b_is_copied_into_rows`) is copied into rows first.
        let rows_of_b = if b.col_stride != 1 { Some(row_major_copy_of(b)?) } else { None };
        let b = match &rows_of_b {
            Some(rows) => {
                MatRef { data: rows, offset: 0, rows: b.rows, cols: b.cols, row_stride: b.cols as isize, col_stride: 1 }
            }
            None => b,
        };
        let work = a.rows.saturating_mul(b.cols).saturating_mul(a.cols);
        // SAFETY: T is f32 (checked above), so these are the same types.
        let (a32, b32, store32): (MatRef<f32>, MatRef<f32>, Store<f32>) =
            unsafe { (std::mem::transmute_copy(&a), std::mem::transmute_copy(&b), std::mem::transmute_copy(&store)) };
        let outs32 = [outs[0].cast::<f32>(), outs[1].cast::<f32>()];
        // SAFETY: the caller's contract on `init` and `out`; the kernel's requirements were checked above.
        let product = |parallel| unsafe {
            match kernel {
                OwnKernel::Unpacked => {
                    super::sgemm_avx512::sgemm_from(a32, b32, init.cast(), outs32, second, store32, parallel)
                }
                OwnKernel::Packed => {
                    super::sgemm_packed::sgemm_packed_from(a32, b32, init.cast(), outs32, second, store32, parallel)
                }
            }
        };
        if work >= (1 << 20) && super::threads::num_threads() > 1 {
            super::thread_choice::run_timed((a.rows, a.cols, b.cols), product);
        } else {
            product(false);
        }
        if let Some(rows) = rows_of_b {
            crate::buffer_pool::give(rows);
        }
        Some(())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, b, init, outs, second, store);
        None
    }
}

#[cfg(test)]
#[path = "matmul_tests.rs"]
mod tests;
