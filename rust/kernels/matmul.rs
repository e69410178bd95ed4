//! Matrix products on the `gemm` crate (crate_gemm.rs), which picks its SIMD kernel
//! (AVX2, AVX-512, NEON) at run time, and on our own AVX-512 kernel for mid-size
//! float32 products: which runs a product is decided here. Operands are read
//! through their strides, so a transposed view is multiplied without being copied
//! (except a column-major A in wide products, see `dense_copy_of_transposed`).

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

/// Whether our own AVX-512 float32 kernel runs `a·b` (rather than the `gemm` crate).
pub fn own_kernel_runs<T: Float>(a: MatRef<T>, b: MatRef<T>) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let work = a.rows.saturating_mul(b.cols).saturating_mul(a.cols);
        std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
            && b.col_stride == 1
            && super::sgemm_avx512::available()
            // Without cache blocking the kernel falls behind `gemm` on large products.
            && work <= OWN_SGEMM_MAX_FLOPS
            && match kernel_choice() {
                KernelChoice::ByShape => a.cols.saturating_mul(b.cols) <= OWN_SGEMM_MAX_B_ELEMENTS,
                KernelChoice::OnlyCrate => false,
                KernelChoice::OwnForAnyB => true,
            }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, b);
        false
    }
}

/// `out = a·b` stored as `store` says from `init`, on the AVX-512 float32 kernel, for
/// the products it is faster at; None (and nothing written) when it does not apply.
///
/// # Safety
/// `init` must be valid for m×n reads and `outs[0]` (and a non-null `outs[1]`) for
/// m×n writes (`outs[0]` may equal `init`).
unsafe fn try_own_sgemm<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    init: *const T,
    outs: [*mut T; 2],
    second: SecondOutput,
    store: Store<T>,
) -> Option<()> {
    #[cfg(target_arch = "x86_64")]
    {
        if !own_kernel_runs(a, b) {
            return None;
        }
        let work = a.rows.saturating_mul(b.cols).saturating_mul(a.cols);
        // SAFETY: T is f32 (checked above), so these are the same types.
        let (a32, b32, store32): (MatRef<f32>, MatRef<f32>, Store<f32>) =
            unsafe { (std::mem::transmute_copy(&a), std::mem::transmute_copy(&b), std::mem::transmute_copy(&store)) };
        let outs32 = [outs[0].cast::<f32>(), outs[1].cast::<f32>()];
        // SAFETY: the caller's contract on `init` and `out`; the kernel's requirements were checked above.
        let product = |parallel| unsafe {
            super::sgemm_avx512::sgemm_from(a32, b32, init.cast(), outs32, second, store32, parallel)
        };
        if work >= (1 << 20) && super::threads::num_threads() > 1 {
            super::thread_choice::run_timed((a.rows, a.cols, b.cols), product);
        } else {
            product(false);
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
mod tests {
    use super::*;

    fn matmul<T: Float>(a: MatRef<T>, b: MatRef<T>) -> Vec<T> {
        let mut out = vec![T::ZERO; a.rows * b.cols];
        matmul_into(a, b, &mut out, T::ONE, T::ZERO);
        out
    }

    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        out
    }

    fn dense<T>(data: &[T], rows: usize, cols: usize) -> MatRef<'_, T> {
        MatRef { data, offset: 0, rows, cols, row_stride: cols as isize, col_stride: 1 }
    }

    fn values(n: usize, seed: f64) -> Vec<f64> {
        (0..n).map(|i| ((i as f64) * 0.7 + seed).sin()).collect()
    }

    #[test]
    fn a_matrix_reaching_outside_its_slice_is_refused() {
        let data = [0.0f32; 6];
        assert!(MatRef::new(&data, 0, (2, 3), (3, 1)).is_some());
        assert!(MatRef::new(&data, 1, (2, 3), (3, 1)).is_none());
        assert!(MatRef::new(&data, 0, (3, 3), (3, 1)).is_none());
        assert!(MatRef::new(&data, 5, (2, 3), (-3, 1)).is_none());
        assert!(MatRef::new(&data, 3, (2, 3), (-3, 1)).is_some());
        assert!(MatRef::new(&data, 0, (usize::MAX, 2), (isize::MAX, 1)).is_none());
        assert!(MatRef::new(&data, 7, (0, 3), (3, 1)).is_none());
        assert!(MatRef::new(&data, 6, (0, 3), (3, 1)).is_some());
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn our_kernel_takes_products_whose_b_stays_in_cache() {
        let chosen = |m: usize, k: usize, n: usize| {
            let (a, b) = (vec![0.0f32; m * k], vec![0.0f32; k * n]);
            own_kernel_runs(dense(&a, m, k), dense(&b, k, n))
        };
        if !crate::kernels::sgemm_avx512::available() || kernel_choice() == KernelChoice::OnlyCrate {
            assert!(!chosen(64, 1000, 100));
            return;
        }
        if kernel_choice() == KernelChoice::OwnForAnyB {
            assert!(chosen(512, 512, 512) && !chosen(1024, 1024, 1024));
            return;
        }
        assert!(chosen(64, 1000, 100) && chosen(1000, 64, 100) && chosen(384, 384, 384));
        // B of 1 MiB or more, or more than 2^28 multiply-adds: the crate.
        assert!(!chosen(512, 512, 512) && !chosen(48, 1024, 1024) && !chosen(64, 512, 512));
        assert!(!chosen(8192, 64, 1024) && !chosen(1024, 1024, 1024));
    }

    #[test]
    #[should_panic(expected = "operand sizes")]
    fn a_wrongly_sized_output_is_refused_in_release_builds_too() {
        let data = [1.0f64; 4];
        let a = MatRef::new(&data, 0, (2, 2), (2, 1)).unwrap();
        let mut out = [0.0f64; 3];
        matmul_into(a, a, &mut out, 1.0, 0.0);
    }

    #[test]
    fn odd_shapes_match_a_naive_loop() {
        for &(m, k, n) in &[(1, 1, 1), (3, 5, 7), (17, 1, 9), (64, 33, 65), (129, 70, 3), (0, 4, 3), (4, 0, 3)] {
            let a = values(m * k, 0.1);
            let b = values(k * n, 0.9);
            let got = matmul(dense(&a, m, k), dense(&b, k, n));
            let want = naive(&a, &b, m, k, n);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-10, "({m},{k},{n}): {g} vs {w}");
            }
            assert_eq!(got.len(), m * n);
        }
    }

    #[test]
    fn transposed_views_are_read_in_place() {
        let (m, k, n) = (6, 4, 5);
        let a = values(m * k, 0.3);
        let b_t = values(n * k, 0.2); // b stored transposed: (n, k)
        let b_t_ref = dense(&b_t, n, k).transposed();
        let mut b = vec![0.0; k * n];
        for p in 0..k {
            for j in 0..n {
                b[p * n + j] = b_t[j * k + p];
            }
        }
        let got = matmul(dense(&a, m, k), b_t_ref);
        let want = naive(&a, &b, m, k, n);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-12);
        }
    }

    #[test]
    fn update_reads_init_and_stores_the_result_twice() {
        fn check<T: Float + std::fmt::Debug>(to: impl Fn(f64) -> T, tol: f64) {
            // 70×90×40 f32 runs on the AVX-512 kernel where available; f64 on the gemm crate.
            let (m, k, n) = (70, 90, 40);
            let a64 = values(m * k, 0.4);
            let b64 = values(k * n, 0.8);
            let init64 = values(m * n, 0.2);
            let (a, b, init): (Vec<T>, Vec<T>, Vec<T>) = (
                a64.iter().map(|&v| to(v)).collect(),
                b64.iter().map(|&v| to(v)).collect(),
                init64.iter().map(|&v| to(v)).collect(),
            );
            let a_ref = MatRef { data: &a, offset: 0, rows: m, cols: k, row_stride: k as isize, col_stride: 1 };
            let b_ref = MatRef { data: &b, offset: 0, rows: k, cols: n, row_stride: n as isize, col_stride: 1 };
            let mut out = vec![MaybeUninit::<T>::uninit(); m * n];
            let mut copy = vec![MaybeUninit::<T>::uninit(); m * n];
            matmul_update_into(a_ref, b_ref, &init, &mut out, Some(&mut copy), to(-0.5));
            let want = naive(&a64, &b64, m, k, n);
            for i in 0..m * n {
                // SAFETY: matmul_update_into writes every element of both outputs.
                let (got, dup) = unsafe { (out[i].assume_init(), copy[i].assume_init()) };
                let expected = init64[i] - 0.5 * want[i];
                assert!((got.to_f64() - expected).abs() <= tol * expected.abs().max(1.0), "{i}: {got:?}");
                assert_eq!(got.to_f64().to_bits(), dup.to_f64().to_bits());
            }
        }
        check::<f32>(|v| v as f32, 1e-4);
        check::<f64>(|v| v, 1e-12);
    }

    #[test]
    fn an_sgd_step_in_the_product_gives_the_bits_of_the_product_then_leaf_sgd() {
        use crate::kernels::leaf_sgd::{leaf_sgd, GradUse};
        let (m, k, n) = (70, 90, 40);
        let a: Vec<f32> = values(m * k, 0.4).iter().map(|&v| v as f32).collect();
        let b: Vec<f32> = values(k * n, 0.8).iter().map(|&v| (v * 3.0) as f32).collect();
        let init: Vec<f32> =
            values(m * n, 0.2).iter().enumerate().map(|(i, &v)| if i % 9 == 0 { -0.0 } else { v as f32 }).collect();
        // A as stored by the weight gradient xᵀ·g: a transposed (column-major) view.
        let a_t: Vec<f32> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
        let a_view = MatRef { data: &a_t, offset: 0, rows: m, cols: k, row_stride: 1, col_stride: m as isize };
        let steps = [
            (0.0, LeafSgd { scale_op: ScalarOp::Mul, scale: 1e-3f32, alpha: -1.0 }),
            (0.5, LeafSgd { scale_op: ScalarOp::Div, scale: 3.0, alpha: 1.0 }),
            (-0.0, LeafSgd { scale_op: ScalarOp::Mul, scale: 0.37, alpha: -0.7 }),
        ];
        for (zero, step) in steps {
            for a_ref in [dense(&a, m, k), a_view] {
                let mut fused = init.clone();
                if !matmul_sgd_step_in_place(a_ref, dense(&b, k, n), &mut fused, zero, &step) {
                    assert!(!crate::kernels::sgemm_avx512::available(), "the AVX-512 kernel runs {m}×{k}×{n}");
                    return;
                }
                let mut apart = init.clone();
                leaf_sgd(GradUse::Filled { value: zero, incoming: &matmul(a_ref, dense(&b, k, n)) }, &mut apart, &step);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fused), bits(&apart), "zero {zero}, {step:?}");
            }
        }
    }

    #[test]
    fn an_sgd_step_the_kernel_cannot_fuse_writes_nothing() {
        let (a, b) = (values(6, 0.1), values(6, 0.2));
        let mut w = vec![1.0f64; 4];
        let step = LeafSgd { scale_op: ScalarOp::Mul, scale: 0.1, alpha: -1.0 };
        assert!(!matmul_sgd_step_in_place(dense(&a, 2, 3), dense(&b, 3, 2), &mut w, 0.0, &step));
        let (a32, b32) = (vec![1.0f32; 6], vec![1.0f32; 6]);
        let mut w32 = vec![1.0f32; 4];
        let add = LeafSgd { scale_op: ScalarOp::Add, scale: 0.1, alpha: -1.0 };
        assert!(!matmul_sgd_step_in_place(dense(&a32, 2, 3), dense(&b32, 3, 2), &mut w32, 0.0, &add));
        assert_eq!((w, w32), (vec![1.0; 4], vec![1.0; 4]));
    }

    #[test]
    fn beta_one_accumulates_into_the_output() {
        let a = values(4, 0.0);
        let b = values(4, 1.0);
        let mut out = vec![1.0; 4];
        matmul_into(dense(&a, 2, 2), dense(&b, 2, 2), &mut out, 1.0, 1.0);
        let want = naive(&a, &b, 2, 2, 2);
        for (g, w) in out.iter().zip(&want) {
            assert!((g - (w + 1.0)).abs() < 1e-12);
        }
    }
}
