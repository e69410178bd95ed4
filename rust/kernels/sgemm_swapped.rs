//! Products x·Wᵀ of a small x and a large W stored by rows (a torch `Linear` on a small
//! batch, an RNN step's h·W_hhᵀ), computed as their transpose Cᵀ = W·xᵀ on our own kernel.
//!
//! Our kernel reads B by rows, and Wᵀ's rows are W's columns. Copying a large Wᵀ into rows
//! costs about as much as the product, so such products went to the `gemm` crate, which
//! runs them 2–30 times slower than our kernel runs the same product with B stored by rows
//! (8×512×512 on two threads: 290 µs against 23). In the transposed product W is the left
//! operand, which our kernel reads in place through any strides, and xᵀ the right one,
//! small enough to be copied into rows (`b_is_copied_into_rows`). Cᵀ is then transposed into
//! a row-major buffer and stored as the caller asked, by the kernel's own store functions.
//! Each output is a chain of multiply-adds over k in order, as the plain product's (a·b and
//! b·a round alike), and the route depends only on the shapes and layouts, so the bits do
//! not depend on the number of threads.

use super::matmul::{MatRef, SecondOutput, Store};
use crate::dtype::Float;
use std::arch::x86_64::_mm512_maskz_loadu_ps;

/// The transposed product pays for its two extra passes over the m×n output (the transpose
/// and the store) when each output sums at least this many products.
const MIN_DEPTH: usize = 64;

/// A single row of A stays on the crate, whose product of one row is a fast one (1×512×512:
/// 15 µs, against 67 as a transposed product of one column, whose every FMA has one useful
/// lane); from two rows on the crate was 8–30 times slower (2×512×512: 530 µs against 67).
const MIN_ROWS: usize = 2;

/// From 64 rows of A on, the crate was as fast or faster (64×128×512: 64 µs against 70 on two
/// threads): the transposes of xᵀ and of the output, each a few µs alone, took 3–4 times
/// as long after a product on two threads, with the data in the other core's cache.
const MAX_ROWS: usize = 32;

/// Whether `a·b` runs as `(bᵀ·aᵀ)ᵀ` on our own kernel: B is stored by columns (W's rows) and
/// our kernel runs the transposed product (with aᵀ stored by rows, or small enough to copy).
pub(super) fn runs_swapped<T: Float>(a: MatRef<T>, b: MatRef<T>) -> bool {
    let b_by_columns = b.row_stride == 1 && b.col_stride != 1;
    b_by_columns
        && (MIN_ROWS..=MAX_ROWS).contains(&a.rows)
        && a.cols >= MIN_DEPTH
        && super::matmul::own_kernel_for(b.transposed(), a.transposed()).is_some()
}

/// `out = a·b` stored as `store` says from `init` (see `try_own_sgemm`), through the
/// transposed product; None, with nothing written, where `runs_swapped` is false or memory
/// for the transposed product is short.
///
/// # Safety
/// `init` must be valid for m×n reads and `outs[0]` (and a non-null `outs[1]`) for m×n
/// writes (`outs[0]` may equal `init`).
pub(super) unsafe fn try_swapped<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    init: *const T,
    outs: [*mut T; 2],
    second: SecondOutput,
    store: Store<T>,
) -> Option<()> {
    if !runs_swapped(a, b) {
        return None;
    }
    let (m, n) = (a.rows, b.cols);
    let len = m * n;
    let mut transposed: Vec<T> = crate::storage::none_if_out_of_memory(|| crate::storage::vec_with_capacity(len))?;
    let ptr = transposed.spare_capacity_mut().as_mut_ptr().cast::<T>();
    let plain = Store::Scaled { alpha: T::ONE, beta: T::ZERO };
    // SAFETY: `transposed` has room for the n×m outputs; with beta = 0 nothing is read from it.
    unsafe {
        super::matmul::try_own_sgemm(
            b.transposed(),
            a.transposed(),
            ptr,
            [ptr, std::ptr::null_mut()],
            SecondOutput::Copy,
            plain,
        )
    }?;
    // SAFETY: try_own_sgemm returned Some, so it wrote all n×m elements.
    unsafe { transposed.set_len(len) };
    let rows = crate::storage::none_if_out_of_memory(|| {
        super::layout::gather_strided(&transposed, &[m, n], &[1, m as isize], 0)
    });
    crate::buffer_pool::give(transposed);
    let rows = rows?;
    // SAFETY: T is f32 here (own_kernel_for runs only for f32), so these are the same types.
    let (products, init, outs, store): (*const f32, *const f32, [*mut f32; 2], Store<f32>) =
        (rows.as_ptr().cast(), init.cast(), outs.map(|p| p.cast()), unsafe { std::mem::transmute_copy(&store) });
    // SAFETY: `rows` holds the m×n products; the caller's contract on `init` and `outs`; avx512f
    // is present (own_kernel_for ran the product on our kernel).
    unsafe { store_products(products, len, init, outs, second, store) };
    crate::buffer_pool::give(rows);
    Some(())
}

/// Stores the `len` finished products at `products` as `store` says from `init` into
/// `outs[0]`, and as `second` says into a non-null `outs[1]`: as the kernel's tiles store
/// their sums, so with their bits.
///
/// # Safety
/// `products` and `init` (when the store reads it) must be readable for `len` values,
/// `outs[0]` and a non-null `outs[1]` writable; the CPU must have avx512f.
#[target_feature(enable = "avx512f")]
unsafe fn store_products(
    products: *const f32,
    len: usize,
    init: *const f32,
    outs: [*mut f32; 2],
    second: SecondOutput,
    store: Store<f32>,
) {
    // SAFETY: the masked lanes, start.. at most len, lie inside `products` (caller's contract).
    let sum_at = |mask, start: usize| unsafe { _mm512_maskz_loadu_ps(mask, products.add(start)) };
    // SAFETY: the caller's contract, passed on.
    unsafe { super::sgemm_avx512::store_sums(len, sum_at, init, outs, second, store) }
}
