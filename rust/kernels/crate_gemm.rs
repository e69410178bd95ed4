//! Products on the `gemm` crate, and how they are threaded: on one thread below
//! `BANDS_MIN_FLOPS`, otherwise as one band of columns or rows per thread on our spin pool
//! (the crate's own rayon threading only for large products too short for bands). Short,
//! deep products run as two halves of their depth at every thread count.

use super::matmul::{product_len, MatRef};
use crate::dtype::Float;
use gemm::Parallelism;
use parking_lot::Mutex;

/// `out = beta·out + alpha·a·b` on the crate (`out` is not read when beta is 0): on all
/// threads where that pays and `may_thread`, else on the calling thread.
pub(super) fn product<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, may_thread: bool) {
    if always_in_depth_halves(a.rows, a.cols, b.cols) {
        return crate_product_in_depth_halves(a, b, out, alpha, beta, may_thread);
    }
    if !may_thread {
        return crate_product(a, b, out, alpha, beta, Parallelism::None);
    }
    // The bands' shapes are judged by the columns the crate computes, the edge left aside.
    let crate_cols = b.cols - edge_width(a, b);
    let column_bands = column_bands(a.rows, a.cols, crate_cols);
    if column_bands > 1 {
        return crate_product_in_column_bands(a, b, out, alpha, beta, column_bands);
    }
    let bands = row_bands(a.rows, a.cols, crate_cols, std::mem::size_of::<T>());
    if bands > 1 {
        return crate_product_in_row_bands(a, b, out, alpha, beta, bands);
    }
    match parallelism(a.rows, b.cols, a.cols) {
        Parallelism::None => crate_product(a, b, out, alpha, beta, Parallelism::None),
        par => super::threads::install(|| crate_product(a, b, out, alpha, beta, par)),
    }
}

/// Products smaller than this many multiply-adds that cannot be cut into bands run on
/// one thread: for them the cost of waking rayon's threads exceeds the work.
const THREADING_MIN_FLOPS: usize = 1 << 24;

fn parallelism(m: usize, n: usize, k: usize) -> Parallelism {
    if m.saturating_mul(n).saturating_mul(k) < THREADING_MIN_FLOPS || super::threads::num_threads() < 2 {
        Parallelism::None
    } else {
        Parallelism::Rayon(0)
    }
}

/// `out = beta·out + alpha·a·b` on the `gemm` crate (`out` is not read when beta is 0).
fn crate_product<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, par: Parallelism) {
    // invariant: the crate writes m×n elements through a raw pointer, so this check must hold in release builds.
    assert!(product_len(a, b) == Some(out.len()), "crate_product: operand sizes");
    // SAFETY: `out` holds the a.rows×b.cols elements of a dense row-major output (asserted
    // above), and this call borrows it mutably.
    unsafe { product_part(a, b, out.as_mut_ptr(), b.cols, alpha, beta, par) }
}

/// How many columns at the right of `a·b` our AVX2 kernel computes rather than the
/// crate (`edge_columns.rs`): 0 for most products, and off x86-64.
fn edge_width<T: 'static>(a: MatRef<T>, b: MatRef<T>) -> usize {
    #[cfg(target_arch = "x86_64")]
    return super::edge_columns::edge_width(a, b);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, b);
        0
    }
}

/// `crate_product_into`, but with the last `edge_width` columns on our AVX2 kernel.
///
/// # Safety
/// As `crate_product_into`.
unsafe fn product_part<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    out: *mut T,
    out_row_stride: usize,
    alpha: T,
    beta: T,
    par: Parallelism,
) {
    let edge = edge_width(a, b);
    let crate_cols = b.cols - edge;
    // SAFETY: the first crate_cols columns of the caller's outputs (this function's contract).
    unsafe { crate_product_into(a, b.column_band(0, crate_cols), out, out_row_stride, alpha, beta, par) };
    #[cfg(target_arch = "x86_64")]
    if edge > 0 {
        let edge_columns = b.column_band(crate_cols, edge);
        // SAFETY: the last `edge` columns of the caller's outputs (this function's contract);
        // edge_width said this kernel runs them.
        unsafe { super::edge_columns::edge_product(a, edge_columns, out.add(crate_cols), out_row_stride, alpha, beta) };
    }
}

/// `out = beta·out + alpha·a·b` on the `gemm` crate, where row i of the output starts at
/// `out + i·out_row_stride` and holds b.cols contiguous elements.
///
/// # Safety
/// Those a.rows×b.cols elements must be valid for reads and writes and touched by nothing
/// else during the call.
unsafe fn crate_product_into<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    out: *mut T,
    out_row_stride: usize,
    alpha: T,
    beta: T,
    par: Parallelism,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    // SAFETY: the output's elements are the caller's to write (this function's contract);
    // every element `a` and `b` address lies inside their slices, checked by `MatRef::new`
    // when they were made.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out,
            1,
            out_row_stride as isize,
            beta != T::ZERO,
            a.data.as_ptr().add(a.offset),
            a.col_stride,
            a.row_stride,
            b.data.as_ptr().add(b.offset),
            b.col_stride,
            b.row_stride,
            beta,
            alpha,
            false,
            false,
            false,
            par,
        )
    }
}

/// Products of fewer multiply-adds than this run on one thread. From here up, bands of
/// rows on the spin pool pay. On the 2-core AVX2 EPYC (no AVX-512, so the crate runs the
/// seed step's products; slow machine state, `benchmarks/crate_bands.py`), float32 on two
/// threads against one (the time before): 64×1000×100 181 → 106 µs, xᵀ·g of 1000×64×100
/// 193 → 103 µs, 32×256×128 (2^20) 29 → 21 µs.
const BANDS_MIN_FLOPS: usize = 1 << 20;

/// The crate multiplies outputs of at most this many rows and columns on a path of its
/// own, with its own depth of blocks ...
const SMALL_PATH_MAX: usize = 64;

/// ... and outputs of at most this many elements (with A's rows or B's columns
/// contiguous) on another, so a band that small would not give the bits of the whole
/// product: 1024×256×1 in bands of 256 rows did not.
const SMALL_OUTPUTS_MAX: usize = 16 * 16;

/// Whether bands of at least `rows` rows of a product `n` wide take the crate's path for
/// the whole product, and so give its bits.
fn bands_keep_the_bits(rows: usize, n: usize) -> bool {
    (rows > SMALL_PATH_MAX || n > SMALL_PATH_MAX) && rows.saturating_mul(n) > SMALL_OUTPUTS_MAX
}

/// A band of a threaded product on the crate has at least this many rows, so that each
/// band packs B for a good share of the work ...
const MIN_BAND_ROWS: usize = 128;

/// ... or at least this many, when B fits in cache (`B_IN_CACHE_BYTES`) and the product
/// is wider than `SMALL_PATH_MAX`: the seed step's 64×1000×100 runs as two bands of 32.
const MIN_SHORT_BAND_ROWS: usize = 16;

/// B of at most this many bytes is read from cache by every band (the L2 of the cores we
/// measure on holds it); larger, each band of a short product would stream all of B.
const B_IN_CACHE_BYTES: usize = 1 << 20;

/// Into how many bands of rows a crate product of m×k×n (elements of `size` bytes) is
/// split: one per thread, or 1 (not split) when it is too small to pay, when bands would
/// be shorter than `MIN_BAND_ROWS` (`MIN_SHORT_BAND_ROWS`), or when
/// `RUSTGRAD_GEMM_THREADING=rayon` leaves the threading to the crate (for comparison:
/// `benchmarks/row_bands.py`), or when bands would not keep the bits of the whole
/// product (`bands_keep_the_bits`; tested in `bands_of_rows_give_the_bits_of_one_call`).
fn row_bands(m: usize, k: usize, n: usize, size: usize) -> usize {
    if threading() == Threading::Crate || m.saturating_mul(k).saturating_mul(n) < BANDS_MIN_FLOPS {
        return 1;
    }
    let b_in_cache = k.saturating_mul(n).saturating_mul(size) <= B_IN_CACHE_BYTES;
    let min_rows = if b_in_cache && n > SMALL_PATH_MAX { MIN_SHORT_BAND_ROWS } else { MIN_BAND_ROWS };
    let bands = super::threads::num_threads().min(m / min_rows).max(1);
    // Band i holds rows i·m/bands .. (i+1)·m/bands, so the shortest has m / bands rows.
    if bands_keep_the_bits(m / bands, n) {
        bands
    } else {
        1
    }
}

/// How threaded crate products are split. Only benchmarks change it, through
/// `RUSTGRAD_GEMM_THREADING`, to compare the splits with what they replaced.
#[derive(Copy, Clone, PartialEq, Debug)]
enum Threading {
    /// Bands of columns or of rows, as `column_bands` and `row_bands` choose (the default).
    Bands,
    /// `rows`: no bands of columns (`benchmarks/column_bands.py`).
    RowsOnly,
    /// `rayon`: the crate's own threading for every threaded product (`benchmarks/row_bands.py`).
    Crate,
}

fn threading() -> Threading {
    static THREADING: std::sync::OnceLock<Threading> = std::sync::OnceLock::new();
    *THREADING.get_or_init(|| match std::env::var("RUSTGRAD_GEMM_THREADING").as_deref().map(str::trim) {
        Ok("rayon") => Threading::Crate,
        Ok("rows") => Threading::RowsOnly,
        _ => Threading::Bands,
    })
}

/// Into how many bands of columns a crate product of m×k×n is split: one per thread when A
/// (m×k) is smaller than B (k×n) and too short for tall bands of rows, so that each thread
/// packs its share of B and reads all of A, where bands of rows would each pack all of B
/// (`benchmarks/column_bands.py`). 1 (not split) when that does not apply, when the product
/// is too small to pay, or when bands would not keep the bits of the whole product
/// (`bands_keep_the_bits`; tested in `bands_of_columns_give_the_bits_of_one_call`).
fn column_bands(m: usize, k: usize, n: usize) -> usize {
    let threads = super::threads::num_threads();
    let too_small = m.saturating_mul(k).saturating_mul(n) < BANDS_MIN_FLOPS;
    if threading() != Threading::Bands || too_small || m >= n || m >= threads.saturating_mul(MIN_BAND_ROWS) {
        return 1;
    }
    let bands = threads.min(n / COLUMN_BAND_ALIGN).max(1);
    if bands_keep_the_bits(narrowest_column_band(bands, n), m) {
        bands
    } else {
        1
    }
}

/// Short products of at most this many rows ...
const DEPTH_HALVES_MAX_ROWS: usize = 64;

/// ... and at most this many columns, at least twice as deep as they are wide or tall, run
/// as two halves of their depth (`crate_product_in_depth_halves`).
const DEPTH_HALVES_MAX_COLS: usize = 128;

/// Whether a product of m×k×n runs as two halves of its depth, at every thread count (one
/// after the other on one thread), so that its bits do not depend on the threads: on the
/// crate here, and on our own AVX-512 kernel (`sgemm_avx512::sgemm_in_depth_halves`).
///
/// Each half reads half of A's columns and half of B's rows, where bands of rows would
/// each read all of B and bands of columns all of A. In a training step B is a weight
/// that the step before updated in place in bands of rows, half on each core (the weight
/// gradient xᵀ·g of 1000×64×100 runs as two bands of 500 rows); the halves of the depth
/// read the same halves of B on the same cores, from their own caches. On the crate alone
/// (`cargo run --release --example crate_splits`, AVX2 EPYC, 2026-12-05), 64×1000×96 on two
/// threads after such an update took 69–77 µs in halves of the depth, against 92–148 in
/// bands of rows and 71–101 in bands of columns (70–79, 84–88 and 71–81 without the update).
pub(super) fn always_in_depth_halves(m: usize, k: usize, n: usize) -> bool {
    let short_and_deep = m <= DEPTH_HALVES_MAX_ROWS && n <= DEPTH_HALVES_MAX_COLS && k >= 2 * m.max(n);
    threading() == Threading::Bands && short_and_deep && m.saturating_mul(k).saturating_mul(n) >= BANDS_MIN_FLOPS
}

/// `out = beta·out + alpha·a·b` as two products over halves of the depth k, each on the
/// crate on one thread (on the spin pool's threads when `parallel`): the first into `out`
/// with `beta`, the second into a buffer of its own, added to `out` after.
fn crate_product_in_depth_halves<T: Float>(
    a: MatRef<T>,
    b: MatRef<T>,
    out: &mut [T],
    alpha: T,
    beta: T,
    parallel: bool,
) {
    let (k, half) = (a.cols, a.cols / 2);
    // Every element is written below (the second half's product has beta 0).
    let mut second = crate::storage::overwritable_vec(out.len());
    let targets = [Mutex::new(&mut *out), Mutex::new(&mut second[..])];
    let half_product = |part: usize| {
        let (first, depth, beta) = if part == 0 { (0, half, beta) } else { (half, k - half, T::ZERO) };
        // Each half belongs to one part only, so this lock never waits.
        let mut target = targets[part].lock();
        crate_product(
            a.column_band(first, depth),
            b.row_band(first, depth),
            &mut target,
            alpha,
            beta,
            Parallelism::None,
        );
    };
    if parallel {
        super::spin_pool::run(2, &half_product);
    } else {
        (0..2).for_each(half_product);
    }
    super::split_writes::add_scaled(out, &second, T::ONE);
    crate::buffer_pool::give(second);
}

/// The fewest columns of any of `bands` bands over `n` columns.
fn narrowest_column_band(bands: usize, n: usize) -> usize {
    (0..bands).map(|band| column_band_start(band + 1, bands, n) - column_band_start(band, bands, n)).min().unwrap_or(n)
}

/// Bands of columns start at multiples of this many columns: whole panels of the crate's
/// float32 kernel on AVX2 (two 8-lane vectors), so that no band adds a partial panel.
const COLUMN_BAND_ALIGN: usize = 16;

/// The first column of band `band` of `bands` over `n` columns (`n` for `band == bands`).
fn column_band_start(band: usize, bands: usize, n: usize) -> usize {
    if band >= bands {
        n
    } else {
        band * n / bands / COLUMN_BAND_ALIGN * COLUMN_BAND_ALIGN
    }
}

/// The output of a product as a raw pointer, so that parts running at once can each write
/// their own band of columns (bands of columns are not contiguous, so not slices).
#[derive(Copy, Clone)]
struct OutputPointer<T>(*mut T);
// SAFETY: the parts that share it write disjoint columns of an output that the caller
// borrows mutably until every part is done (`spin_pool::run` returns only then).
unsafe impl<T: Send> Send for OutputPointer<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for OutputPointer<T> {}

impl<T> OutputPointer<T> {
    /// The output's element `offset` (a method, so that closures capture the whole
    /// `OutputPointer`, which is `Sync`, and not its raw pointer field).
    fn element(self, offset: usize) -> *mut T {
        self.0.wrapping_add(offset)
    }
}

/// A threaded product on the crate as `bands` bands of columns, each multiplied on one
/// thread of our spin pool by the crate on one thread. The bands split the columns the
/// crate computes; the last band also takes the edge that `edge_width` leaves to ours.
fn crate_product_in_column_bands<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, bands: usize) {
    let n = b.cols;
    // invariant: the parts write a.rows×n elements through a raw pointer, so this check must hold in release builds.
    assert!(product_len(a, b) == Some(out.len()), "crate_product_in_column_bands: operand sizes");
    let crate_cols = n - edge_width(a, b);
    let output = OutputPointer(out.as_mut_ptr());
    super::spin_pool::run(bands, &|band| {
        let first = column_band_start(band, bands, crate_cols);
        let end = if band + 1 == bands { n } else { column_band_start(band + 1, bands, crate_cols) };
        let columns = b.column_band(first, end - first);
        // SAFETY: columns first..end of every row lie inside the a.rows×n output (first ≤ end
        // ≤ n, asserted size); no other part writes them, and `out` stays borrowed until
        // `run` has waited for every part.
        unsafe { product_part(a, columns, output.element(first), n, alpha, beta, Parallelism::None) }
    });
}

/// A threaded product on the crate as `bands` bands of rows, each multiplied on one
/// thread of our spin pool by the crate on one thread. Against the crate's own threading
/// on two cores (GFLOP/s, `benchmarks/row_bands.py`, slow machine state): 384×1024×1024
/// 215 against 123, 512³ 222 against 191, on par from 1024 rows up.
fn crate_product_in_row_bands<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, bands: usize) {
    let (m, n) = (a.rows, b.cols);
    // Band i holds rows i·m/bands .. (i+1)·m/bands: every band at least m / bands rows.
    let mut band_outputs: Vec<Mutex<(usize, &mut [T])>> = Vec::with_capacity(bands);
    let mut rest = out;
    for band in 0..bands {
        let (first, end) = (band * m / bands, (band + 1) * m / bands);
        let (band_out, tail) = rest.split_at_mut((end - first) * n);
        band_outputs.push(Mutex::new((first, band_out)));
        rest = tail;
    }
    super::spin_pool::run(bands, &|band| {
        // Each band belongs to one part only, so this lock never waits.
        let mut guard = band_outputs[band].lock();
        let (first, ref mut band_out) = *guard;
        let rows = a.row_band(first, band_out.len() / n);
        crate_product(rows, b, band_out, alpha, beta, Parallelism::None);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values<T: Float>(n: usize, seed: f64, to: impl Fn(f64) -> T) -> Vec<T> {
        (0..n).map(|i| to(((i as f64) * 0.7 + seed).sin())).collect()
    }

    fn dense<T>(data: &[T], rows: usize, cols: usize) -> MatRef<'_, T> {
        MatRef::new(data, 0, (rows, cols), (cols as isize, 1)).expect("a dense matrix fits its data")
    }

    /// Every split `row_bands` and `column_bands` may choose for m×k×n gives the bits of one call.
    fn check_bands<T: Float + std::fmt::Debug>(m: usize, k: usize, n: usize, to: impl Fn(f64) -> T) {
        let a = values(m * k, 0.3, &to);
        let b = values(k * n, 0.8, &to);
        let init = values(m * n, 0.1, &to);
        let shortest = if n > SMALL_PATH_MAX { MIN_SHORT_BAND_ROWS } else { MIN_BAND_ROWS };
        let row_splits: Vec<usize> =
            (2..=4).filter(|&bands| m / bands >= shortest && bands_keep_the_bits(m / bands, n)).collect();
        let column_splits: Vec<usize> = (2..=4)
            .filter(|&bands| n / COLUMN_BAND_ALIGN >= bands && bands_keep_the_bits(narrowest_column_band(bands, n), m))
            .collect();
        assert!(!(row_splits.is_empty() && column_splits.is_empty()), "{m}×{k}×{n} tests no split");
        // A and B dense, A read through a transposed view, B read through one.
        let layouts = [
            (dense(&a, m, k), dense(&b, k, n)),
            (dense(&a, k, m).transposed(), dense(&b, k, n)),
            (dense(&a, m, k), dense(&b, n, k).transposed()),
        ];
        for (a, b) in layouts {
            for beta in [T::ZERO, T::ONE] {
                let mut whole = init.clone();
                crate_product(a, b, &mut whole, to(0.5), beta, Parallelism::None);
                for &bands in &row_splits {
                    let mut banded = init.clone();
                    crate_product_in_row_bands(a, b, &mut banded, to(0.5), beta, bands);
                    assert!(whole == banded, "{m}×{k}×{n} in {bands} bands of rows, beta {beta:?}");
                }
                for &bands in &column_splits {
                    let mut banded = init.clone();
                    crate_product_in_column_bands(a, b, &mut banded, to(0.5), beta, bands);
                    assert!(whole == banded, "{m}×{k}×{n} in {bands} bands of columns, beta {beta:?}");
                }
            }
        }
    }

    #[test]
    fn bands_of_rows_give_the_bits_of_one_call() {
        // Tall bands of narrow products (down to the crate's matrix-vector paths), short
        // bands of wide ones (the seed step's two).
        check_in_both_types(&[
            (385, 520, 64),
            (1024, 256, 1),
            (1024, 300, 3),
            (64, 1000, 100),
            (1000, 64, 100),
            (33, 300, 65),
        ]);
    }

    #[test]
    fn bands_of_columns_give_the_bits_of_one_call() {
        // Short wide products, down to one row (the crate's matrix-vector paths), and bands
        // of 64 and 66 columns of 65 rows, beside the crate's path for outputs of 64×64.
        check_in_both_types(&[
            (64, 300, 256),
            (32, 256, 520),
            (1, 300, 1000),
            (3, 200, 900),
            (16, 64, 300),
            (65, 1000, 130),
        ]);
    }

    /// `product` of a short, deep product, which always runs in two halves of its depth, on one
    /// thread and on all: the same bits, within rounding of float64 sums.
    fn check_halves_at_every_thread_count<T: Float + std::fmt::Debug>(
        (m, k, n): (usize, usize, usize),
        transposed_a: bool,
        to: impl Fn(f64) -> T,
    ) {
        let (a_data, b_data) = (values(m * k, 0.3, &to), values(k * n, 0.8, &to));
        let init = values(m * n, 0.1, &to);
        let a = if transposed_a { dense(&a_data, k, m).transposed() } else { dense(&a_data, m, k) };
        let b = dense(&b_data, k, n);
        assert!(always_in_depth_halves(m, k, n), "{m}×{k}×{n} is not split");
        let (alpha, beta) = (to(0.5), to(-2.0));
        let (mut serial, mut threaded) = (init.clone(), init.clone());
        product(a, b, &mut serial, alpha, beta, false);
        product(a, b, &mut threaded, alpha, beta, true);
        assert!(serial == threaded, "{m}×{k}×{n}: one thread and all threads differ");
        let a_at = |i: usize, p: usize| if transposed_a { a_data[p * m + i] } else { a_data[i * k + p] };
        for (index, (&got, &before)) in serial.iter().zip(&init).enumerate() {
            let (i, j) = (index / n, index % n);
            let sum: f64 = (0..k).map(|p| a_at(i, p).to_f64() * b_data[p * n + j].to_f64()).sum();
            let want = 0.5 * sum - 2.0 * before.to_f64();
            let bound = 1e-5 * k as f64 * (1.0 + want.abs());
            assert!((got.to_f64() - want).abs() <= bound, "{m}×{k}×{n} at ({i}, {j}): {got:?} against {want}");
        }
    }

    #[test]
    fn short_deep_products_in_halves_of_the_depth_give_the_same_bits_at_every_thread_count() {
        // The seed step's forward product, an odd depth, a product one row tall, one 16 wide.
        for &shape in &[(64, 1000, 100), (64, 1001, 96), (17, 999, 128), (1, 8192, 128), (40, 4096, 16)] {
            for transposed_a in [false, true] {
                check_halves_at_every_thread_count(shape, transposed_a, |v| v as f32);
                check_halves_at_every_thread_count(shape, transposed_a, |v| v);
            }
        }
    }

    fn check_in_both_types(shapes: &[(usize, usize, usize)]) {
        for &(m, k, n) in shapes {
            check_bands(m, k, n, |v| v as f32);
            check_bands(m, k, n, |v| v);
        }
    }

    #[test]
    fn products_too_small_or_too_short_are_not_split() {
        let threads = crate::kernels::threads::num_threads();
        assert_eq!(row_bands(64, 1000, 16, 4), 1, "below BANDS_MIN_FLOPS");
        assert_eq!(row_bands(1000, 64, 64, 4), threads.min(1000 / MIN_BAND_ROWS), "narrow: tall bands only");
        assert_eq!(row_bands(64, 1000, 100, 4), threads.min(4), "wide with B in cache: short bands");
        assert_eq!(row_bands(64, 4096, 1024, 4), 1, "B out of cache: no short bands");
        assert_eq!(row_bands(512, 2048, 1, 4), 1, "bands of 256 outputs would take the crate's small path");
        // Bands of 1024 / 8 = 128 columns keep the bits, so up to 8 threads each get one.
        let wanted = if threads <= 8 { threads } else { column_bands(64, 4096, 1024) };
        assert_eq!(column_bands(64, 4096, 1024), wanted, "short and wide: one band of columns per thread");
        assert_eq!(column_bands(64, 1000, 100), 1, "bands of 48 and 52 columns would take the crate's small path");
        let tall = threads * MIN_BAND_ROWS;
        assert_eq!(column_bands(tall, 1000, 4 * tall), 1, "tall enough for bands of rows");
        assert_eq!(column_bands(200, 1000, 100), 1, "A larger than B: bands of rows");
        assert!(always_in_depth_halves(64, 1000, 100), "the seed step's forward product");
        assert!(!always_in_depth_halves(65, 1000, 100), "too tall");
        assert!(!always_in_depth_halves(64, 1000, 129), "too wide");
        assert!(!always_in_depth_halves(64, 255, 128), "not twice as deep as it is wide");
        assert!(!always_in_depth_halves(64, 128, 100), "below BANDS_MIN_FLOPS");
    }
}
