//! Products on the `gemm` crate, and how they are threaded: on one thread below
//! `THREADING_MIN_FLOPS`, otherwise as one band of rows per thread on our spin pool
//! (the crate's own rayon threading only for products too short for bands).

use super::matmul::{product_len, MatRef};
use crate::dtype::Float;
use gemm::Parallelism;
use parking_lot::Mutex;

/// `out = beta·out + alpha·a·b` on the crate (`out` is not read when beta is 0): on all
/// threads where that pays and `may_thread`, else on the calling thread.
pub(super) fn product<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], alpha: T, beta: T, may_thread: bool) {
    let par = if may_thread { parallelism(a.rows, b.cols, a.cols) } else { Parallelism::None };
    let bands = row_bands(a.rows, par);
    if bands > 1 {
        return crate_product_in_row_bands(a, b, out, alpha, beta, bands);
    }
    match par {
        Parallelism::None => crate_product(a, b, out, alpha, beta, par),
        _ => super::threads::install(|| crate_product(a, b, out, alpha, beta, par)),
    }
}

/// Products smaller than this many multiply-adds run on one thread: for them
/// the cost of waking the pool exceeds the work (64×1000×100, the seed
/// network's largest product, is measurably faster on one thread).
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

/// A band of a threaded product on the crate has at least this many rows. The crate gives
/// every row the same bits however the rows are split, except in its paths for products
/// of at most 64×64 outputs and for single rows, which a band of 128 rows never takes.
const MIN_BAND_ROWS: usize = 128;

/// Into how many bands of rows a product the crate runs on `par` is split: one per
/// thread, or 1 (not split) when bands would be smaller than `MIN_BAND_ROWS` or
/// `RUSTGRAD_GEMM_THREADING=rayon` leaves the threading to the crate (for comparison:
/// `benchmarks/row_bands.py`).
fn row_bands(m: usize, par: Parallelism) -> usize {
    static CRATE_THREADS_ITSELF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let crate_threads_itself = *CRATE_THREADS_ITSELF
        .get_or_init(|| std::env::var("RUSTGRAD_GEMM_THREADING").is_ok_and(|v| v.trim() == "rayon"));
    match par {
        Parallelism::None => 1,
        _ if crate_threads_itself => 1,
        _ => super::threads::num_threads().min(m / MIN_BAND_ROWS).max(1),
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

    #[test]
    fn bands_of_rows_give_the_bits_of_one_call() {
        fn check<T: Float + std::fmt::Debug>(to: impl Fn(f64) -> T) {
            let (m, k, n) = (385, 520, 72);
            let a = values(m * k, 0.3, &to);
            let b = values(k * n, 0.8, &to);
            let init = values(m * n, 0.1, &to);
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
                    for bands in [2, 3] {
                        let mut banded = init.clone();
                        crate_product_in_row_bands(a, b, &mut banded, to(0.5), beta, bands);
                        assert!(whole == banded, "{bands} bands, beta {beta:?}");
                    }
                }
            }
        }
        check(|v| v as f32);
        check(|v| v);
    }
}
