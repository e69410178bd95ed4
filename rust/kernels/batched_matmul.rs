//! Batches of matrix products (numpy's `matmul` over leading dims). Every product
//! runs on the 2-D kernels of matmul.rs. A batch of small and mid-size products is
//! split across threads by matrix, each product on one thread: cutting each product
//! into bands instead costs a wake-up and a wait per matrix. Large products keep the
//! 2-D kernels' own threading.

use super::matmul::{matmul_into, matmul_into_as_part_of_batch, MatRef};
use crate::dtype::Float;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Products of at least this many multiply-adds run one after another, each on all
/// threads (the 2-D kernels then split them into bands); smaller ones run one per
/// thread. Measured on two cores (AVX-512 Xeon, release build), one per thread against
/// bands: 64×128³ in 0.8–0.9 against 1.3–1.4 ms, 16×512³ in 11–16 against 19 ms; but
/// 3×1024³ in 22–23 against 18–19 ms, where two threads share three products unevenly.
const SPLIT_BY_MATRIX_MAX_MACS: usize = 1 << 28;

/// `out[i] = a_i·b_i` for each pair, all of the same m×k by k×n shape, where `out`
/// is row-major batch×m×n.
pub fn batched_matmul_into<T: Float>(pairs: &[(MatRef<'_, T>, MatRef<'_, T>)], out: &mut [T]) {
    let Some(&(first_a, first_b)) = pairs.first() else { return };
    let (m, k, n) = (first_a.rows, first_a.cols, first_b.cols);
    let same_shapes = pairs.iter().all(|(a, b)| (a.rows, a.cols, b.rows, b.cols) == (m, k, k, n));
    // invariant: forward::batched_matmul builds every pair from the checked shapes and sizes `out` from them;
    // the 2-D kernels check each product's size against its slice of `out` again.
    assert!(same_shapes && m.checked_mul(n).and_then(|mn| mn.checked_mul(pairs.len())) == Some(out.len()));
    let mn = m * n;
    if mn == 0 {
        return;
    }
    let poller = crate::interrupt::Poller::here();
    if m.saturating_mul(k).saturating_mul(n) >= split_limit() {
        for (&(a, b), product) in pairs.iter().zip(out.chunks_mut(mn)) {
            poller.poll();
            matmul_into(a, b, product, T::ONE, T::ZERO);
        }
        return;
    }
    one_product_per_thread(pairs, out, mn, super::threads::num_threads());
}

/// The products on `workers` threads, each product on one of them. Workers claim
/// products as they come free, so a helper that starts late still takes what is left.
/// Each product runs on a kernel chosen by its shape alone, so the results do not
/// depend on the number of threads.
fn one_product_per_thread<T: Float>(
    pairs: &[(MatRef<'_, T>, MatRef<'_, T>)],
    out: &mut [T],
    mn: usize,
    workers: usize,
) {
    let poller = crate::interrupt::Poller::here();
    // Each slot is locked by the one worker that claims its matrix, so the locks never wait.
    let products: Vec<Mutex<&mut [T]>> = out.chunks_mut(mn).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    super::spin_pool::run(workers.min(pairs.len()), &|_| loop {
        let claimed = next.fetch_add(1, Ordering::Relaxed);
        let (Some(&(a, b)), Some(product)) = (pairs.get(claimed), products.get(claimed)) else { break };
        poller.poll();
        matmul_into_as_part_of_batch(a, b, &mut product.lock(), T::ONE, T::ZERO);
    });
}

/// `RUSTGRAD_BATCH_SPLIT=bands` runs every product of a batch on all threads in turn
/// (to measure what splitting by matrix brings).
fn split_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| match std::env::var("RUSTGRAD_BATCH_SPLIT").as_deref() {
        Ok("bands") => 0,
        Ok("matrix") => usize::MAX,
        _ => SPLIT_BY_MATRIX_MAX_MACS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: f64) -> Vec<f64> {
        (0..n).map(|i| ((i as f64) * 0.37 + seed).sin()).collect()
    }

    fn naive(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Vec<f64> {
        let at = |m: MatRef<'_, f64>, i: usize, j: usize| {
            m.data[(m.offset as isize + i as isize * m.row_stride + j as isize * m.col_stride) as usize]
        };
        let mut out = vec![0.0; a.rows * b.cols];
        for i in 0..a.rows {
            for j in 0..b.cols {
                out[i * b.cols + j] = (0..a.cols).map(|p| at(a, i, p) * at(b, p, j)).sum();
            }
        }
        out
    }

    #[test]
    fn each_product_of_a_batch_matches_a_naive_loop() {
        // 9 products of 5×7 by 7×3, b shared by all (a broadcast batch) and read transposed.
        let (batch, m, k, n) = (9, 5, 7, 3);
        let a = values(batch * m * k, 0.2);
        let b = values(n * k, 0.7);
        let b_ref = MatRef::new(&b, 0, (n, k), (k as isize, 1)).unwrap().transposed();
        let pairs: Vec<_> =
            (0..batch).map(|i| (MatRef::new(&a, i * m * k, (m, k), (k as isize, 1)).unwrap(), b_ref)).collect();
        let mut out = vec![f64::NAN; batch * m * n];
        batched_matmul_into(&pairs, &mut out);
        for (i, &(a_i, b_i)) in pairs.iter().enumerate() {
            let want = naive(a_i, b_i);
            let got = &out[i * m * n..(i + 1) * m * n];
            assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-12), "product {i}");
        }
    }

    #[test]
    fn results_do_not_depend_on_the_number_of_threads() {
        let (batch, m, k, n) = (5, 40, 70, 50);
        let a: Vec<f32> = values(batch * m * k, 0.1).iter().map(|&v| v as f32).collect();
        let b: Vec<f32> = values(batch * k * n, 0.5).iter().map(|&v| v as f32).collect();
        let pairs: Vec<_> = (0..batch)
            .map(|i| {
                let a_i = MatRef::new(&a, i * m * k, (m, k), (k as isize, 1)).unwrap();
                (a_i, MatRef::new(&b, i * k * n, (k, n), (n as isize, 1)).unwrap())
            })
            .collect();
        let run = |threads: usize| {
            let mut out = vec![0.0f32; batch * m * n];
            one_product_per_thread(&pairs, &mut out, m * n, threads);
            out
        };
        assert_eq!(run(1), run(2));
        assert_eq!(run(1), run(3));
    }

    #[test]
    fn empty_batches_and_empty_products_write_nothing() {
        let mut out: Vec<f32> = vec![];
        batched_matmul_into::<f32>(&[], &mut out);
        let data = [1.0f32; 4];
        let empty = MatRef::new(&data, 0, (0, 2), (2, 1)).unwrap();
        let b = MatRef::new(&data, 0, (2, 2), (2, 1)).unwrap();
        batched_matmul_into(&[(empty, b), (empty, b)], &mut out);
    }
}
