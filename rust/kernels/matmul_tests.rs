//! Tests of the matrix products: `MatRef`'s bounds check, which kernel runs a product,
//! products against a naive loop (odd shapes, transposed views, beta = 1), the update that
//! reads `init` and stores a copy, and the SGD step fused into the product.

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
#[cfg(target_arch = "x86_64")]
fn the_packed_kernel_takes_large_products_with_enough_rows() {
    if !crate::kernels::sgemm_avx512::available() || kernel_choice() != KernelChoice::ByShape {
        return;
    }
    let ones = vec![1.0f32; 1 << 20];
    // Broadcast views (stride 0 across rows, or across columns of a transposed A), so the
    // shapes cost no memory; B's columns stay contiguous.
    let kernel_of = |m: usize, k: usize, n: usize, transposed_a: bool| {
        let a = if transposed_a {
            MatRef::new(&ones[..m], 0, (m, k), (1, 0))
        } else {
            MatRef::new(&ones[..k], 0, (m, k), (0, 1))
        };
        let b = MatRef::new(&ones[..n], 0, (k, n), (0, 1)).unwrap();
        own_kernel_for(a.unwrap(), b)
    };
    let kernel = |m, k, n| kernel_of(m, k, n, false);
    assert_eq!(kernel(64, 1000, 100), Some(OwnKernel::Unpacked));
    // The large step's products with A's rows contiguous; with A transposed, the crate.
    for (m, k, n) in [(1024, 4096, 4096), (1024, 4096, 1000), (4096, 1024, 4096), (4096, 1024, 1000)] {
        assert_eq!(kernel(m, k, n), Some(OwnKernel::Packed), "{m}×{k}×{n}");
        assert_eq!(kernel_of(m, k, n, true), None, "{m}×{k}×{n}, A transposed");
    }
    // Below 2^31 multiply-adds, fewer than 256 rows or 32 columns: the crate.
    assert_eq!(kernel(1024, 1024, 1024), None);
    assert_eq!(kernel(4096, 1 << 20, 31), None);
    assert_eq!(kernel(255, 4096, 4096), None);
    assert_eq!(kernel(256, 4096, 4096), Some(OwnKernel::Packed));
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
fn a_small_transposed_b_is_copied_into_rows_for_our_kernel() {
    // The seed step's g·w2ᵀ: 64×10 by the transpose of a 100×10 weight.
    let (m, k, n) = (64, 10, 100);
    let a: Vec<f32> = values(m * k, 0.4).iter().map(|&v| v as f32).collect();
    let w: Vec<f32> = values(n * k, 0.6).iter().map(|&v| v as f32).collect();
    let w_t = dense(&w, n, k).transposed();
    let rows_of_w_t: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
    let got = matmul(dense(&a, m, k), w_t);
    let from_rows = matmul(dense(&a, m, k), dense(&rows_of_w_t, k, n));
    if own_kernel_available_for::<f32>() {
        assert!(b_is_copied_into_rows(w_t) && own_kernel_runs(dense(&a, m, k), w_t));
        assert!(row_major_copy_of(w_t).is_some_and(|copy| copy == rows_of_w_t));
        assert_eq!(got, from_rows, "the copy runs the product on the same kernel, in the same order");
    }
    let a64: Vec<f64> = a.iter().map(|&v| v.into()).collect();
    let want = naive(&a64, &rows_of_w_t.iter().map(|&v| v.into()).collect::<Vec<f64>>(), m, k, n);
    for (g, w) in got.iter().zip(&want) {
        assert!((f64::from(*g) - w).abs() < 1e-5, "{g} vs {w}");
    }
    let big = vec![0.5f32; 200 * 100];
    assert!(!b_is_copied_into_rows(dense(&big, 200, 100).transposed()), "above 2^14 elements");
    assert!(!b_is_copied_into_rows(dense(&w, n, k)), "already stored by rows");
}

#[test]
fn the_fused_products_run_a_transposed_b_with_the_bits_of_the_plain_product() {
    // A torch `Linear`'s x·Wᵀ: 64×10 by the transpose of a 100×10 weight (Wᵀ copied into
    // rows), and 16×128 by the transpose of a 512×128 one (the transposed product, as an
    // LSTM step's h·W_hhᵀ), and 5×100 by a 333×100 one (edges everywhere).
    for (m, k, n) in [(64, 10, 100), (16, 128, 512), (5, 100, 333)] {
        fused_products_match_the_plain_product(m, k, n);
    }
}

fn fused_products_match_the_plain_product(m: usize, k: usize, n: usize) {
    use crate::kernels::leaf_sgd::{leaf_sgd, GradUse};
    let a: Vec<f32> = values(m * k, 0.4).iter().map(|&v| v as f32).collect();
    let w: Vec<f32> = values(n * k, 0.6).iter().map(|&v| v as f32).collect();
    let init: Vec<f32> = values(m * n, 0.2).iter().map(|&v| v as f32).collect();
    let (a_ref, w_t) = (dense(&a, m, k), dense(&w, n, k).transposed());
    if !own_kernel_available_for::<f32>() {
        assert!(!own_kernel_runs(a_ref, w_t));
        return;
    }
    let plain = matmul(a_ref, w_t);
    let rows_of_w_t = row_major_copy_of(w_t).unwrap();
    // Our kernel on Wᵀ stored by rows sums in the same order, so it gives the same bits.
    assert_eq!(bits(&plain), bits(&matmul(a_ref, dense(&rows_of_w_t, k, n))), "{m}×{k}×{n}");
    let written = |v: Vec<MaybeUninit<f32>>| -> Vec<f32> {
        // SAFETY: the callers below pass only outputs the kernel wrote in full.
        v.into_iter().map(|x| unsafe { x.assume_init() }).collect()
    };

    let (mut out, mut second) = (vec![MaybeUninit::uninit(); m * n], vec![MaybeUninit::uninit(); m * n]);
    assert!(matmul_two_outputs_into(a_ref, w_t, &mut out, &mut second, SecondOutput::Relu), "in one pass");
    let relu: Vec<f32> = plain.iter().map(|&v| if v > 0.0 { v } else { 0.0 }).collect();
    assert_eq!((bits(&written(out)), bits(&written(second))), (bits(&plain), bits(&relu)));

    let (mut out, mut copy) = (vec![MaybeUninit::uninit(); m * n], vec![MaybeUninit::uninit(); m * n]);
    matmul_update_into(a_ref, w_t, &init, &mut out, Some(&mut copy), -0.5);
    let mut apart = init.clone();
    matmul_into(a_ref, dense(&rows_of_w_t, k, n), &mut apart, -0.5, 1.0);
    assert_eq!((bits(&written(out)), bits(&written(copy))), (bits(&apart), bits(&apart)));

    let step = LeafSgd { scale_op: ScalarOp::Mul, scale: 1e-3f32, alpha: -1.0 };
    let mut fused_step = init.clone();
    assert!(sgd_step_fuses(a_ref, w_t, &step) && matmul_sgd_step_in_place(a_ref, w_t, &mut fused_step, 0.0, &step));
    let mut apart = init.clone();
    leaf_sgd(GradUse::Filled { value: 0.0, incoming: &plain }, &mut apart, &step);
    assert_eq!(bits(&fused_step), bits(&apart));
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_large_transposed_b_with_a_small_a_runs_as_the_transposed_product() {
    use crate::kernels::sgemm_swapped::runs_swapped;
    let w = vec![0.5f32; 1000 * 512];
    let a = vec![0.25f32; 64 * 512];
    let w_t = |n: usize, k: usize| dense(&w[..n * k], n, k).transposed();
    let x = |m: usize, k: usize| dense(&a[..m * k], m, k);
    if !own_kernel_available_for::<f32>() {
        assert!(!runs_swapped(x(16, 128), w_t(512, 128)));
        return;
    }
    assert!(runs_swapped(x(16, 128), w_t(512, 128)) && runs_swapped(x(2, 512), w_t(1000, 512)));
    assert!(!runs_swapped(x(1, 512), w_t(1000, 512)), "one row stays on the crate");
    assert!(runs_swapped(x(32, 512), w_t(512, 512)) && runs_swapped(x(2, 8192 - 1), w_t(8, 8192 - 1)));
    assert!(!runs_swapped(x(33, 128), w_t(512, 128)), "from 33 rows on, the crate");
    assert!(!runs_swapped(x(4, 8192), w_t(8, 8192)), "nor an xᵀ of more than 2^14 elements");
    assert!(!runs_swapped(x(16, 32), w_t(1000, 32)), "too shallow to repay the extra passes");
    assert!(!runs_swapped(x(16, 128), dense(&w[..128 * 512], 128, 512)), "B stored by rows");
    assert!(!runs_swapped(x(16, 10), w_t(100, 10)), "a small Wᵀ is copied into rows instead");
    // x stored by columns: xᵀ is read in place, however large.
    assert!(runs_swapped(dense(&a[..32 * 1000], 1000, 32).transposed(), w_t(512, 1000)));
    // The values, against a naive loop, with the edges of the tiles on both sides.
    let (m, k, n) = (7, 70, 301);
    let a64 = values(m * k, 0.3);
    let w64 = values(n * k, 0.9);
    let (a32, w32): (Vec<f32>, Vec<f32>) =
        (a64.iter().map(|&v| v as f32).collect(), w64.iter().map(|&v| v as f32).collect());
    assert!(runs_swapped(dense(&a32, m, k), dense(&w32, n, k).transposed()));
    let got = matmul(dense(&a32, m, k), dense(&w32, n, k).transposed());
    let w_t64: Vec<f64> = (0..k * n).map(|i| w64[(i % n) * k + i / n]).collect();
    for (g, want) in got.iter().zip(naive(&a64, &w_t64, m, k, n)) {
        assert!((f64::from(*g) - want).abs() < 1e-4, "{g} vs {want}");
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
