//! Tests of the packed AVX-512 float32 kernel (sgemm_packed.rs): the bits of the unpacked one.

use super::*;

/// A product's operands and initial values, with A stored as given or transposed.
struct Case {
    m: usize,
    k: usize,
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    init: Vec<f32>,
    transposed_a: bool,
}

impl Case {
    fn new((m, k, n): (usize, usize, usize), transposed_a: bool) -> Case {
        let a = (0..m * k).map(|i| (i as f32 * 0.731).sin()).collect();
        let b = (0..k * n).map(|i| (i as f32 * 0.377).cos() * 1.5).collect();
        let init = (0..m * n).map(|i| (i as f32 * 0.113).sin() - 0.25).collect();
        Case { m, k, n, a, b, init, transposed_a }
    }

    fn a(&self) -> MatRef<'_, f32> {
        let (m, k) = (self.m, self.k);
        let (row_stride, col_stride) = if self.transposed_a { (1, m as isize) } else { (k as isize, 1) };
        MatRef { data: &self.a, offset: 0, rows: m, cols: k, row_stride, col_stride }
    }

    fn b(&self) -> MatRef<'_, f32> {
        MatRef { data: &self.b, offset: 0, rows: self.k, cols: self.n, row_stride: self.n as isize, col_stride: 1 }
    }

    /// The exact sum of row i of A times column j of B.
    fn exact(&self, i: usize, j: usize) -> f64 {
        let a_at = |p: usize| if self.transposed_a { self.a[p * self.m + i] } else { self.a[i * self.k + p] };
        (0..self.k).map(|p| a_at(p) as f64 * self.b[p * self.n + j] as f64).sum()
    }
}

type Kernel = fn(&Case, [*mut f32; 2], Store<f32>);

/// Runs `kernel` on `case` stored as `store` onto the case's initial values, in place (the
/// output starts as the initial values), with a relu'd second output: (out, relu).
fn run(case: &Case, store: Store<f32>, kernel: Kernel) -> (Vec<f32>, Vec<f32>) {
    let (mut out, mut relu) = (case.init.clone(), vec![f32::NAN; case.m * case.n]);
    kernel(case, [out.as_mut_ptr(), relu.as_mut_ptr()], store);
    (out, relu)
}

fn packed(parallel: bool) -> Kernel {
    fn serial(case: &Case, outs: [*mut f32; 2], store: Store<f32>) {
        // SAFETY: both outputs hold m×n values, the first also read as the initial values;
        // the caller checked `available()`.
        unsafe { sgemm_packed_from(case.a(), case.b(), outs[0], outs, SecondOutput::Relu, store, false) }
    }
    fn threaded(case: &Case, outs: [*mut f32; 2], store: Store<f32>) {
        // SAFETY: as in `serial`.
        unsafe { sgemm_packed_from(case.a(), case.b(), outs[0], outs, SecondOutput::Relu, store, true) }
    }
    if parallel {
        threaded
    } else {
        serial
    }
}

/// The unpacked kernel's tiles over the whole depth, one band of all rows.
fn unpacked(case: &Case, outs: [*mut f32; 2], store: Store<f32>) {
    let c = [outs[0], outs[0], outs[1]];
    // SAFETY: as in `packed`: both outputs hold m×n values.
    unsafe { super::super::sgemm_avx512::band_kernel(case.a(), case.b(), c, SecondOutput::Relu, 0, case.m, store) }
}

const STORES: [Store<f32>; 4] = [
    Store::Scaled { alpha: 1.0, beta: 0.0 },
    Store::Scaled { alpha: -0.7, beta: 1.0 },
    Store::SgdStep { zero: -0.0, scale: 3.0, divide: true, alpha: -0.01 },
    Store::SgdStep { zero: 0.5, scale: 0.9, divide: false, alpha: 1.0 },
];

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn packed_products_give_the_bits_of_the_unpacked_kernel_at_every_thread_count() {
    if !super::super::sgemm_avx512::available() {
        return;
    }
    // Depth in three blocks (the last one short), rows not a multiple of 8 and a 6-column
    // edge; the whole depth in one block, with an 8-column edge; more columns than one block of
    // columns; more rows than the sums of one block of rows hold, over two blocks of depth.
    let shapes = [(9, 1100, 70), (21, WHOLE_DEPTH_MAX, 8), (10, 600, 1100), (BLOCK_ROWS + 9, 1030, 19)];
    for (shape, transposed_a) in shapes.into_iter().flat_map(|s| [(s, false), (s, true)]) {
        let case = Case::new(shape, transposed_a);
        for store in STORES {
            let name = format!("{shape:?}, A transposed {transposed_a}, {store:?}");
            let (want, want_relu) = run(&case, store, unpacked);
            for parallel in [false, true] {
                let (got, got_relu) = run(&case, store, packed(parallel));
                assert!(bits(&got) == bits(&want), "{name}, parallel {parallel}: not the unpacked kernel's bits");
                assert!(bits(&got_relu) == bits(&want_relu), "{name}, parallel {parallel}: relu");
            }
        }
    }
}

#[test]
fn a_packed_product_is_the_product() {
    if !super::super::sgemm_avx512::available() {
        return;
    }
    // The unpacked kernel is checked against a naive loop elsewhere; this checks the packed
    // one directly, so that a fault both share cannot hide.
    let case = Case::new((33, 1300, 45), true);
    let (out, relu) = run(&case, Store::Scaled { alpha: 2.0, beta: 1.0 }, packed(true));
    for (index, (&got, &got_relu)) in out.iter().zip(&relu).enumerate() {
        let (i, j) = (index / case.n, index % case.n);
        let want = case.init[index] as f64 + 2.0 * case.exact(i, j);
        assert!((got as f64 - want).abs() <= 1e-4 * case.k as f64, "({i}, {j}): {got} against {want}");
        assert_eq!(got_relu.to_bits(), if got > 0.0 { got } else { 0.0 }.to_bits(), "({i}, {j}): relu");
    }
}
