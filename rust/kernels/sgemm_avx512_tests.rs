//! Tests of the AVX-512 float32 kernel (sgemm_avx512.rs).

use super::*;

/// `out = beta·out + alpha·a·b` (row-major `out`, row stride `b.cols`). Requires `b.col_stride == 1`
/// and `available()`.
fn sgemm(a: MatRef<'_, f32>, b: MatRef<'_, f32>, out: &mut [f32], alpha: f32, beta: f32, parallel: bool) {
    assert_eq!(out.len(), a.rows * b.cols, "sgemm: output size");
    let ptr = out.as_mut_ptr();
    let store = Store::Scaled { alpha, beta };
    // SAFETY: `out` holds the m×n outputs, and reading the initial values from it is allowed.
    unsafe { sgemm_from(a, b, ptr, [ptr, std::ptr::null_mut()], SecondOutput::Copy, store, parallel) }
}

fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64).sum::<f64>() as f32;
        }
    }
    out
}

#[test]
fn odd_shapes_and_transposed_a_match_a_naive_loop() {
    if !available() {
        return;
    }
    for &(m, k, n) in &[(1, 1, 1), (9, 7, 33), (64, 1000, 100), (65, 3, 31), (130, 64, 17)] {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.25).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.5).collect();
        let want = naive(&a, &b, m, k, n);
        let a_ref = MatRef { data: &a, offset: 0, rows: m, cols: k, row_stride: k as isize, col_stride: 1 };
        let b_ref = MatRef { data: &b, offset: 0, rows: k, cols: n, row_stride: n as isize, col_stride: 1 };
        let mut out = vec![f32::NAN; m * n];
        sgemm(a_ref, b_ref, &mut out, 1.0, 0.0, true);
        for (g, w) in out.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-3 * w.abs().max(1.0), "({m},{k},{n}): {g} vs {w}");
        }
        // The same product with A stored transposed (a column-major view).
        let mut a_t = vec![0.0f32; m * k];
        for i in 0..m {
            for p in 0..k {
                a_t[p * m + i] = a[i * k + p];
            }
        }
        let a_view = MatRef { data: &a_t, offset: 0, rows: m, cols: k, row_stride: 1, col_stride: m as isize };
        let mut out_t = vec![1.0f32; m * n];
        sgemm(a_view, b_ref, &mut out_t, 1.0, 1.0, false);
        for (g, w) in out_t.iter().zip(&want) {
            assert!((g - (w + 1.0)).abs() <= 1e-3 * w.abs().max(1.0), "({m},{k},{n}) transposed: {g} vs {w}");
        }
    }
}

/// `sgemm_from` of `a` and `b` stored as `store` onto `init`, with a relu'd second output, on
/// one thread or all: (out, relu), both a.rows×b.cols.
fn product_and_relu(
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    init: &[f32],
    store: Store<f32>,
    parallel: bool,
) -> (Vec<f32>, Vec<f32>) {
    let len = a.rows * b.cols;
    assert_eq!(init.len(), len, "product_and_relu: init size");
    let (mut out, mut relu) = (vec![f32::NAN; len], vec![f32::NAN; len]);
    let outs = [out.as_mut_ptr(), relu.as_mut_ptr()];
    // SAFETY: `init`, `out` and `relu` hold m×n values; `available()` was checked by the caller.
    unsafe { sgemm_from(a, b, init.as_ptr(), outs, SecondOutput::Relu, store, parallel) };
    (out, relu)
}

/// The product of A (m×k, row-major, or column-major when `a_transposed`) and the first `n`
/// columns of `b` (k×`b_cols`), stored as `store` onto `init` and relu'd into a second
/// output; both outputs m×n.
fn stored_product(
    (a, a_transposed): (&[f32], bool),
    b: &[f32],
    b_cols: usize,
    (m, k, n): (usize, usize, usize),
    init: &[f32],
    store: Store<f32>,
) -> (Vec<f32>, Vec<f32>) {
    let strides = if a_transposed { (1, m as isize) } else { (k as isize, 1) };
    let a_ref = MatRef { data: a, offset: 0, rows: m, cols: k, row_stride: strides.0, col_stride: strides.1 };
    let b_ref = MatRef { data: b, offset: 0, rows: k, cols: n, row_stride: b_cols as isize, col_stride: 1 };
    product_and_relu(a_ref, b_ref, init, store, true)
}

#[test]
fn a_narrow_tail_gives_the_bits_of_a_wide_tile() {
    if !available() {
        return;
    }
    // 37 and 40 columns end with a tail of 5 and 8 run with the panel before it, on 8-lane
    // vectors (`micro_with_edge`), as 33–36 do with A's rows contiguous; 48 end with a 16-lane
    // tile. With A transposed, tails of at most 4 columns run down the rows (`edge_by_rows`),
    // 19 rows in tiles of 8, 8 and 3.
    let (m, k, wide) = (19, 53, 48);
    let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.731).sin()).collect();
    let b: Vec<f32> = (0..k * wide).map(|i| (i as f32 * 0.377).cos() * 1.5).collect();
    let init: Vec<f32> = (0..m * wide).map(|i| (i as f32 * 0.113).sin() - 0.25).collect();
    let stores = [
        Store::Scaled { alpha: 1.0, beta: 0.0 },
        Store::Scaled { alpha: -0.7, beta: 0.3 },
        Store::SgdStep { zero: -0.0, scale: 3.0, divide: true, alpha: -0.01 },
        Store::SgdStep { zero: 0.5, scale: 0.9, divide: false, alpha: 1.0 },
    ];
    for (store, a_transposed) in stores.into_iter().flat_map(|store| [(store, false), (store, true)]) {
        for n in [37, 40, 33, 34, 35, 36] {
            let init_n: Vec<f32> = init.chunks(wide).flat_map(|row| row[..n].to_vec()).collect();
            let (narrow, narrow_relu) = stored_product((&a, a_transposed), &b, wide, (m, k, n), &init_n, store);
            let (full, full_relu) = stored_product((&a, a_transposed), &b, wide, (m, k, wide), &init, store);
            let prefix =
                |v: &[f32]| v.chunks(wide).flat_map(|row| row[..n].iter().map(|x| x.to_bits())).collect::<Vec<_>>();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let case = format!("{store:?}, {n} columns, A transposed {a_transposed}");
            assert_eq!(bits(&narrow), prefix(&full), "{case}");
            assert_eq!(bits(&narrow_relu), prefix(&full_relu), "{case}, relu");
        }
    }
}

#[test]
fn results_do_not_depend_on_threading() {
    if !available() {
        return;
    }
    let (m, k, n) = (300, 77, 45);
    let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
    let a_ref = MatRef { data: &a, offset: 0, rows: m, cols: k, row_stride: k as isize, col_stride: 1 };
    let b_ref = MatRef { data: &b, offset: 0, rows: k, cols: n, row_stride: n as isize, col_stride: 1 };
    let (mut serial, mut parallel) = (vec![0.0; m * n], vec![0.0; m * n]);
    sgemm(a_ref, b_ref, &mut serial, 1.0, 0.0, false);
    sgemm(a_ref, b_ref, &mut parallel, 1.0, 0.0, true);
    assert_eq!(serial, parallel);
}

/// The value a store gives from the exact product and the initial value.
type ExpectedStore = fn(f64, f64) -> f64;

#[test]
fn short_deep_products_in_halves_of_the_depth_give_the_same_bits_at_every_thread_count() {
    if !available() {
        return;
    }
    let stores: [(Store<f32>, ExpectedStore); 3] = [
        (Store::Scaled { alpha: 1.0, beta: 0.0 }, |sum: f64, _init: f64| sum),
        (Store::Scaled { alpha: -0.5, beta: 2.0 }, |sum: f64, init: f64| 2.0 * init - 0.5 * sum),
        (Store::SgdStep { zero: 0.0, scale: 4.0, divide: true, alpha: -0.1 }, |sum: f64, init: f64| init - sum / 40.0),
    ];
    // The seed step's forward product, an odd depth, one row tall, one narrow edge, one 16 wide.
    for &(m, k, n) in &[(64, 1000, 100), (64, 1001, 96), (1, 8192, 128), (17, 1999, 37), (40, 4096, 16)] {
        assert!(super::super::crate_gemm::always_in_depth_halves(m, k, n), "{m}×{k}×{n} is not split");
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.731).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.377).cos()).collect();
        let init: Vec<f32> = (0..m * n).map(|i| (i as f32 * 0.113).sin()).collect();
        let b_ref = MatRef { data: &b, offset: 0, rows: k, cols: n, row_stride: n as isize, col_stride: 1 };
        for (transposed_a, (store, want_of)) in [false, true].into_iter().flat_map(|t| stores.map(|s| (t, s))) {
            let a_ref = if transposed_a {
                MatRef { data: &a, offset: 0, rows: m, cols: k, row_stride: 1, col_stride: m as isize }
            } else {
                MatRef { data: &a, offset: 0, rows: m, cols: k, row_stride: k as isize, col_stride: 1 }
            };
            let (out, relu) = product_and_relu(a_ref, b_ref, &init, store, false);
            let threaded = product_and_relu(a_ref, b_ref, &init, store, true);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let case = format!("{m}×{k}×{n}, A transposed {transposed_a}, {store:?}");
            assert_eq!(bits(&out), bits(&threaded.0), "{case}: one thread and all threads differ");
            assert_eq!(bits(&relu), bits(&threaded.1), "{case}: relu, one thread and all threads differ");
            for (index, (&got, &got_relu)) in out.iter().zip(&relu).enumerate() {
                let (i, j) = (index / n, index % n);
                // A stored transposed holds the same values at (i, p): element p·m + i of its data.
                let a_at = |p: usize| if transposed_a { a[p * m + i] } else { a[i * k + p] };
                let sum: f64 = (0..k).map(|p| a_at(p) as f64 * b[p * n + j] as f64).sum();
                let want = want_of(sum, init[index] as f64);
                assert!((got as f64 - want).abs() <= 1e-5 * k as f64, "{case} at ({i}, {j}): {got} against {want}");
                assert_eq!(got_relu.to_bits(), if got > 0.0 { got } else { 0.0 }.to_bits(), "{case}: relu");
            }
        }
    }
}

#[test]
fn one_worker_alone_runs_its_own_bands_first_then_all_the_others() {
    for (m, workers, height) in [(1, 1, 8), (7, 2, 8), (64, 2, 16), (100, 3, 8), (1000, 2, 64), (1000, 3, 64)] {
        let shares = Shares::new(m, workers, height);
        // Worker 1 alone, as when the caller's own part is not yet started and no other helper came.
        let worker = 1 % workers;
        let ran = std::sync::Mutex::new(Vec::new());
        shares.work_through(worker, &|start, rows| ran.lock().unwrap().push((start, rows)));
        let ran = ran.into_inner().unwrap();
        let (own_first, own_end) = shares.rows_of(worker);
        let own_bands = (own_end - own_first).div_ceil(height);
        let own_rows_first = ran[..own_bands].iter().all(|&(start, _)| (own_first..own_end).contains(&start));
        assert!(own_rows_first, "m {m}, {workers} workers: {ran:?} does not start with rows {own_first}..{own_end}");
        let mut sorted = ran.clone();
        sorted.sort();
        let mut covered = 0;
        for (start, rows) in sorted {
            assert_eq!(start, covered, "m {m}, {workers} workers: a gap or an overlap at row {start}");
            let owner_end = (0..workers).map(|w| shares.rows_of(w).1).find(|&end| end > start).unwrap();
            assert!(start + rows <= owner_end && rows <= height, "m {m}: band {start}+{rows} crosses its owner's rows");
            covered += rows;
        }
        assert_eq!(covered, m, "m {m}, {workers} workers: rows left out");
    }
}
