//! The last 1 to 4 columns of a float32 product, past its last whole panel of 16
//! columns, on AVX2 and FMA. The `gemm` crate multiplies such an edge with a kernel of
//! 8 lanes that it half fills, and slowly: on the AVX2 EPYC, 64×1000×100 took 164 µs on
//! one thread where 64×1000×96 took 139 (`benchmarks/edge_columns.py`). The crate runs
//! the whole panels; this runs the edge.
//!
//! Each output element is computed by the same operations whatever band of rows holds
//! it, so results stay bitwise the same at any thread count:
//! - A with contiguous rows: lane l of one vector sums the products of k ≡ l (mod 8) in
//!   order with FMAs, the 8 lanes are added in a fixed tree, then the last k % 8
//!   products in order;
//! - A with contiguous columns: one FMA chain over k in order per element.

use super::matmul::MatRef;

/// Columns of a panel of the crate's float32 kernel on AVX2 (two 8-lane vectors).
pub(super) const PANEL: usize = 16;

/// The widest edge computed here. The crate takes as long for an edge of 4 columns as for
/// a whole panel (one thread, 64×1000×20: 45 µs, 64×1000×16: 24); this kernel takes less
/// than half that, but a first version of it was slower than the crate on edges of 8
/// (64×1000×24: 55–57 µs against 46–50).
const EDGE_MAX: usize = 4;

/// Products shallower than this leave the edge to the crate: packing B's edge and
/// summing lanes cost more than they save (64×10×100: 4.6 against 4.1 µs).
const MIN_DEPTH: usize = 64;

/// How many columns at the right of `a·b` this kernel computes: n % 16 when that is 1
/// to 4, past at least one whole panel, for float32 products at least `MIN_DEPTH` deep
/// with A's rows or columns contiguous, on a CPU with AVX2 and FMA; else 0 (the crate
/// computes every column). It depends on the shape and layout alone, never on the
/// thread count, so the bits do not either.
pub(super) fn edge_width<T: 'static>(a: MatRef<T>, b: MatRef<T>) -> usize {
    let edge = b.cols % PANEL;
    let contiguous = a.col_stride == 1 || a.row_stride == 1;
    let f32_operands = std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>();
    if b.cols < PANEL
        || a.cols < MIN_DEPTH
        || edge == 0
        || edge > EDGE_MAX
        || !contiguous
        || !f32_operands
        || !runs_here()
    {
        return 0;
    }
    edge
}

/// Whether this CPU has AVX2 and FMA, and `RUSTGRAD_GEMM_EDGE=crate` does not leave the
/// edges to the crate (for comparison: `benchmarks/edge_columns.py`).
fn runs_here() -> bool {
    static RUNS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RUNS.get_or_init(|| {
        let left_to_the_crate = std::env::var("RUSTGRAD_GEMM_EDGE").is_ok_and(|v| v.trim() == "crate");
        super::vecmath::simd() != super::vecmath::Simd::Baseline && !left_to_the_crate
    })
}

/// A row-major copy of `m` (`layout::gather_strided`, which reads each source line once).
fn row_major_copy(m: MatRef<f32>) -> Vec<f32> {
    super::layout::gather_strided(m.data, &[m.rows, m.cols], &[m.row_stride, m.col_stride], m.offset)
}

/// `out[i·out_row_stride + j] = beta·out[..] + alpha·Σ_kk a[i, kk]·b[kk, j]` for every
/// i < a.rows and j < b.cols (`out` is read only when beta is not 0).
///
/// # Safety
/// `b` must be the last `edge_width(a, whole)` columns of a product's B `whole`, that
/// width not 0 (so: float32, AVX2 and FMA present, A's rows or columns contiguous, 1 to
/// 4 columns); the a.rows × b.cols elements of `out` must be valid for reads and writes
/// and touched by nothing else during the call.
pub(super) unsafe fn edge_product<T: Copy + 'static>(
    a: MatRef<T>,
    b: MatRef<T>,
    out: *mut T,
    out_row_stride: usize,
    alpha: T,
    beta: T,
) {
    let (Some(a), Some(b)) = (as_f32_matrix(a), as_f32_matrix(b)) else {
        unreachable!("edge_product: operands not float32") // invariant: edge_width admits float32 only
    };
    let [alpha, beta] = [alpha, beta].map(|v| super::float32::as_f32(&[v]).map_or(f32::NAN, |v| v[0]));
    let store = Store { out: out.cast::<f32>(), row_stride: out_row_stride, alpha, beta };
    // SAFETY: the caller's contract, passed on: AVX2, FMA, contiguous A, at most 4 columns,
    // `out` writable (and float32, since `T` is).
    unsafe {
        if a.col_stride == 1 {
            rows_by_dot_products(a, b, store)
        } else {
            columns_by_fma_chains(a, b, store)
        }
    }
}

/// `m` as a float32 matrix when `T` is f32.
fn as_f32_matrix<T: 'static>(m: MatRef<'_, T>) -> Option<MatRef<'_, f32>> {
    let data = super::float32::as_f32(m.data)?;
    Some(MatRef {
        data,
        offset: m.offset,
        rows: m.rows,
        cols: m.cols,
        row_stride: m.row_stride,
        col_stride: m.col_stride,
    })
}

/// Where and how results are stored.
#[derive(Copy, Clone)]
struct Store {
    out: *mut f32,
    row_stride: usize,
    alpha: f32,
    beta: f32,
}

impl Store {
    /// Stores the sum of row i, column j.
    ///
    /// # Safety
    /// Element (i, j) must be one the caller of `edge_product` may read and write.
    unsafe fn put(self, i: usize, j: usize, sum: f32) {
        // SAFETY: in range by this function's contract.
        let place = unsafe { self.out.add(i * self.row_stride + j) };
        let scaled = self.alpha * sum;
        // SAFETY: as above; read only when beta is not 0, as the crate does.
        let value = if self.beta == 0.0 { scaled } else { self.beta * unsafe { place.read() } + scaled };
        // SAFETY: as above.
        unsafe { place.write(value) }
    }
}

/// Element (row, col) of `m`, read through its strides.
fn element(m: MatRef<f32>, row: usize, col: usize) -> f32 {
    let index = m.offset as isize + row as isize * m.row_stride + col as isize * m.col_stride;
    // In range: every element of `m` lies inside `m.data` (checked by `MatRef::new`).
    m.data[index as usize]
}

/// A with contiguous rows: Bᵀ's rows (the edge's columns) are packed contiguous, and each
/// output is a dot product of two contiguous runs of k.
///
/// # Safety
/// As `edge_product`, with `a.col_stride == 1`.
unsafe fn rows_by_dot_products(a: MatRef<f32>, b: MatRef<f32>, store: Store) {
    let packed = row_major_copy(b.transposed());
    let kernel = match b.cols {
        1 => dot_rows::<1, 2>,
        2 => dot_rows::<2, 2>,
        3 => dot_rows::<3, 2>,
        _ => dot_rows::<4, 2>,
    };
    // SAFETY: AVX2 and FMA present, contiguous rows of A, `packed` holds edge rows of k (the
    // caller's contract and the lines above).
    unsafe { kernel(a, &packed, store) };
    crate::buffer_pool::give(packed);
}

/// `dot_rows` for E columns, R rows at a time (R·E accumulators).
///
/// # Safety
/// AVX2 and FMA present; `a.col_stride == 1`; `packed` holds E rows of a.cols; the outputs
/// as in `edge_product`.
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_rows<const E: usize, const R: usize>(a: MatRef<f32>, packed: &[f32], store: Store) {
    use std::arch::x86_64::*;
    let (m, k) = (a.rows, a.cols);
    let k8 = k - k % 8;
    // invariant: `rows_by_dot_products` packs E rows of k; the loads below rely on it.
    assert!(packed.len() >= E * k, "dot_rows: packed edge too short");
    let row_start = |i: usize| (a.offset as isize + i as isize * a.row_stride) as usize;
    let mut i = 0;
    while i < m {
        let rows = R.min(m - i);
        let mut sums = [[_mm256_setzero_ps(); E]; R];
        for kk in (0..k8).step_by(8) {
            for (r, row_sums) in sums.iter_mut().enumerate().take(rows) {
                // SAFETY: row i + r < m, and kk + 8 ≤ k, so the 8 elements lie in A's row (in `a.data`).
                let av = unsafe { _mm256_loadu_ps(a.data.as_ptr().add(row_start(i + r) + kk)) };
                for (j, sum) in row_sums.iter_mut().enumerate() {
                    // SAFETY: j·k + kk + 8 ≤ E·k ≤ packed.len() (asserted).
                    let bv = unsafe { _mm256_loadu_ps(packed.as_ptr().add(j * k + kk)) };
                    *sum = _mm256_fmadd_ps(av, bv, *sum);
                }
            }
        }
        for (r, row_sums) in sums.iter().enumerate().take(rows) {
            let a_row = &a.data[row_start(i + r)..row_start(i + r) + k];
            for (j, &sum) in row_sums.iter().enumerate() {
                let tail = (k8..k).fold(lanes_sum(sum), |acc, kk| a_row[kk].mul_add(packed[j * k + kk], acc));
                // SAFETY: row i + r < m and column j < E = b.cols: the caller's outputs.
                unsafe { store.put(i + r, j, tail) };
            }
        }
        i += rows;
    }
}

/// The 8 lanes added in a fixed tree: (l + l+4), then (l + l+2), then the two left.
#[target_feature(enable = "avx2")]
fn lanes_sum(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
    _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)))
}

/// A with contiguous columns: 8 rows of A are one vector, and each output is one FMA
/// chain over k, with B's elements (packed k × E) broadcast.
///
/// # Safety
/// As `edge_product`, with `a.row_stride == 1`.
unsafe fn columns_by_fma_chains(a: MatRef<f32>, b: MatRef<f32>, store: Store) {
    let packed = row_major_copy(b);
    let kernel = match b.cols {
        1 => fma_chains::<1, 2>,
        2 => fma_chains::<2, 2>,
        3 => fma_chains::<3, 2>,
        _ => fma_chains::<4, 2>,
    };
    // SAFETY: passed on from the caller; `packed` holds k rows of b.cols.
    unsafe { kernel(a, &packed, store) };
    crate::buffer_pool::give(packed);
}

/// `columns_by_fma_chains` for E columns, R blocks of 8 rows at a time.
///
/// # Safety
/// AVX2 and FMA present; `a.row_stride == 1`; `packed` holds a.cols rows of E (B's edge
/// by rows); the outputs as in `edge_product`.
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains<const E: usize, const R: usize>(a: MatRef<f32>, packed: &[f32], store: Store) {
    use std::arch::x86_64::*;
    let (m, k) = (a.rows, a.cols);
    let m8 = m - m % 8;
    let mut i = 0;
    while i < m8 {
        let blocks = R.min((m8 - i) / 8);
        let mut sums = [[_mm256_setzero_ps(); E]; R];
        for (kk, b_row) in packed.chunks_exact(E).take(k).enumerate() {
            let column = (a.offset as isize + kk as isize * a.col_stride) as usize + i;
            let broadcasts: [__m256; E] = std::array::from_fn(|j| _mm256_set1_ps(b_row[j]));
            for (block, block_sums) in sums.iter_mut().enumerate().take(blocks) {
                // SAFETY: rows i + 8·block .. + 8 are < m8 ≤ m, and column kk of A holds its
                // rows contiguously (row stride 1), every one inside `a.data` (`MatRef::new`).
                let av = unsafe { _mm256_loadu_ps(a.data.as_ptr().add(column + 8 * block)) };
                for (sum, &bv) in block_sums.iter_mut().zip(&broadcasts) {
                    *sum = _mm256_fmadd_ps(av, bv, *sum);
                }
            }
        }
        for (block, block_sums) in sums.iter().enumerate().take(blocks) {
            // SAFETY: rows i + 8·block .. + 8 are < m8 ≤ m, and columns < E = b.cols.
            unsafe { store_rows_of_eight(block_sums, i + 8 * block, store) };
        }
        i += 8 * blocks;
    }
    // The last m % 8 rows: the same chain, one element at a time (FMA is exact in both).
    for i in m8..m {
        for j in 0..E {
            let sum = (0..k).fold(0.0f32, |acc, kk| element(a, i, kk).mul_add(packed[kk * E + j], acc));
            // SAFETY: row i < m, column j < E = b.cols.
            unsafe { store.put(i, j, sum) };
        }
    }
}

/// Stores rows `first..first + 8` of the edge, held as one vector per column: with 4
/// columns, transposed in registers and stored a row of 4 at a time (as `Store::put`
/// computes them); with fewer, one element at a time.
///
/// # Safety
/// AVX2 present; those rows of the edge are outputs the caller may read and write.
#[target_feature(enable = "avx2")]
unsafe fn store_rows_of_eight<const E: usize>(columns: &[std::arch::x86_64::__m256; E], first: usize, store: Store) {
    use std::arch::x86_64::*;
    if let [c0, c1, c2, c3] = columns[..] {
        // Row r in the low 128 bits, row r + 4 in the high.
        let pairs = super::transpose8::transposed_quads([c0, c1, c2, c3]);
        let (alpha, beta) = (_mm_set1_ps(store.alpha), _mm_set1_ps(store.beta));
        for (r, pair) in pairs.into_iter().enumerate() {
            for (row, values) in
                [(first + r, _mm256_castps256_ps128(pair)), (first + r + 4, _mm256_extractf128_ps::<1>(pair))]
            {
                // SAFETY: the row's 4 edge columns are the caller's outputs.
                let place = unsafe { store.out.add(row * store.row_stride) };
                let scaled = _mm_mul_ps(alpha, values);
                let value = if store.beta == 0.0 {
                    scaled
                } else {
                    // SAFETY: as above; read only when beta is not 0, as `Store::put` does.
                    let old = unsafe { _mm_loadu_ps(place) };
                    _mm_add_ps(_mm_mul_ps(beta, old), scaled)
                };
                // SAFETY: as above.
                unsafe { _mm_storeu_ps(place, value) };
            }
        }
        return;
    }
    for (j, &column) in columns.iter().enumerate() {
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), column) };
        for (lane, &value) in lanes.iter().enumerate() {
            // SAFETY: row first + lane and column j < E are the caller's outputs.
            unsafe { store.put(first + lane, j, value) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: f64) -> Vec<f32> {
        (0..n).map(|i| ((i as f64) * 0.7 + seed).sin() as f32).collect()
    }

    fn matrix(data: &[f32], rows: usize, cols: usize, transposed: bool) -> MatRef<'_, f32> {
        let m = if transposed {
            MatRef::new(data, 0, (cols, rows), (rows as isize, 1)).map(MatRef::transposed)
        } else {
            MatRef::new(data, 0, (rows, cols), (cols as isize, 1))
        };
        m.expect("the matrix fits its data")
    }

    /// Both kernels (A by rows, A by columns), every edge width, rows and depths with and
    /// without tails, B dense and transposed: each edge output against its sum in float64,
    /// and the columns left to the crate untouched.
    #[test]
    fn edge_outputs_match_float64_sums() {
        if !runs_here() {
            return;
        }
        let (alpha, init_value) = (1.5f32, 0.25f32);
        for edge in 1..=EDGE_MAX {
            let n = PANEL + edge;
            for (m, k) in [(1, 64), (7, 65), (8, 72), (17, 100), (33, 1003)] {
                let (a_data, b_data) = (values(m * k, 0.3), values(k * n, 0.8));
                for (a_transposed, b_transposed, beta) in
                    [(false, false, 0.0), (true, false, 0.5), (false, true, 0.5), (true, true, 0.0)]
                {
                    let (a, b) = (matrix(&a_data, m, k, a_transposed), matrix(&b_data, k, n, b_transposed));
                    assert_eq!(edge_width(a, b), edge);
                    let mut out = vec![init_value; m * n];
                    // SAFETY: the last `edge` columns of B, as edge_width said; `out` holds m×n.
                    unsafe { edge_product(a, b.column_band(PANEL, edge), out.as_mut_ptr().add(PANEL), n, alpha, beta) };
                    for i in 0..m {
                        assert!(
                            out[i * n..i * n + PANEL].iter().all(|&v| v == init_value),
                            "{m}×{k}×{n}: crate's columns written"
                        );
                        for j in PANEL..n {
                            let terms = (0..k).map(|kk| f64::from(element(a, i, kk)) * f64::from(element(b, kk, j)));
                            let (sum, magnitude) = terms.fold((0.0, 0.0), |(s, mag), t| (s + t, mag + t.abs()));
                            let expected = f64::from(beta) * f64::from(init_value) + f64::from(alpha) * sum;
                            let bound = 4.0 * f64::from(f32::EPSILON) * (k as f64 * magnitude + 1.0);
                            let got = f64::from(out[i * n + j]);
                            assert!(
                                (got - expected).abs() <= bound,
                                "{m}×{k}×{n} ({a_transposed}, {b_transposed}) at ({i}, {j}): {got} against {expected}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn other_products_keep_every_column_on_the_crate() {
        let data = values(64 * 64, 0.1);
        let doubles: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
        let a = matrix(&data, 4, 64, false);
        assert_eq!(edge_width(a, matrix(&data, 64, 32, false)), 0, "whole panels only");
        assert_eq!(edge_width(a, matrix(&data, 64, 28, false)), 0, "an edge of 12 columns: the crate's two vectors");
        assert_eq!(edge_width(a, matrix(&data, 64, 24, false)), 0, "an edge of 8 columns: the crate is faster");
        assert_eq!(edge_width(a, matrix(&data, 64, 7, false)), 0, "no whole panel");
        assert_eq!(edge_width(matrix(&data, 4, 63, false), matrix(&data, 63, 20, false)), 0, "too shallow");
        let strided = MatRef::new(&data, 0, (4, 64), (128, 2)).expect("fits");
        assert_eq!(edge_width(strided, matrix(&data, 64, 20, false)), 0, "A's rows and columns both strided");
        let (a64, b64) = (MatRef::new(&doubles, 0, (4, 64), (64, 1)), MatRef::new(&doubles, 0, (64, 20), (20, 1)));
        assert_eq!(edge_width(a64.expect("fits"), b64.expect("fits")), 0, "float64");
        if runs_here() {
            assert_eq!(edge_width(a, matrix(&data, 64, 20, false)), 4);
        }
    }
}
