//! Products on the `gemm` crate, and how they are threaded: on one thread below
//! `BANDS_MIN_FLOPS`, otherwise as one band of rows per thread on our spin pool
//! (the crate's own rayon threading only for large products too short for bands).

use super::matmul::{product_len, MatRef};
use crate::dtype::Float;
use gemm::Parallelism;
use parking_lot::Mutex;

/// `out = beta·out + alpha·a·b` on the crate (`out` is not read when beta is 0): on all
/// threads where that pays and `may_thread`, else on the calling thread.
pub(super) fn product<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, may_thread: bool) {
    if !may_thread {
        return crate_product(a, b, out, alpha, beta, Parallelism::None);
    }
    let bands = row_bands(a.rows, a.cols, b.cols, std::mem::size_of::<T>());
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
    let (m, k, n) = (a.rows, a.cols, b.cols);
    // invariant: the crate writes m×n elements through a raw pointer, so this check must hold in release builds.
    assert!(product_len(a, b) == Some(out.len()), "crate_product: operand sizes");
    // SAFETY: `out` holds m×n elements (asserted above); every element `a` and `b`
    // address lies inside their slices, checked by `MatRef::new` when they were made.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
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
    static CRATE_THREADS_ITSELF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let crate_threads_itself = *CRATE_THREADS_ITSELF
        .get_or_init(|| std::env::var("RUSTGRAD_GEMM_THREADING").is_ok_and(|v| v.trim() == "rayon"));
    let work = m.saturating_mul(k).saturating_mul(n);
    if crate_threads_itself || work < BANDS_MIN_FLOPS {
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

    /// Every split `row_bands` may choose for m×k×n gives the bits of one call.
    fn check_bands<T: Float + std::fmt::Debug>(m: usize, k: usize, n: usize, to: impl Fn(f64) -> T) {
        let a = values(m * k, 0.3, &to);
        let b = values(k * n, 0.8, &to);
        let init = values(m * n, 0.1, &to);
        let shortest = if n > SMALL_PATH_MAX { MIN_SHORT_BAND_ROWS } else { MIN_BAND_ROWS };
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
                let splits = (2..=4).filter(|&bands| m / bands >= shortest && bands_keep_the_bits(m / bands, n));
                for bands in splits {
                    let mut banded = init.clone();
                    crate_product_in_row_bands(a, b, &mut banded, to(0.5), beta, bands);
                    assert!(whole == banded, "{m}×{k}×{n} in {bands} bands, beta {beta:?}");
                }
            }
        }
    }

    #[test]
    fn bands_of_rows_give_the_bits_of_one_call() {
        // Tall bands of narrow products (down to the crate's matrix-vector paths), short
        // bands of wide ones (the seed step's two).
        let shapes = [(385, 520, 64), (1024, 256, 1), (1024, 300, 3), (64, 1000, 100), (1000, 64, 100), (33, 300, 65)];
        for (m, k, n) in shapes {
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
    }
}
