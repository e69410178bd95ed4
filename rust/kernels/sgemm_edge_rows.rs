//! The last tile of a float32 product on AVX-512, at most 4 columns wide, when A's columns
//! are contiguous: `sgemm_avx512::run_tile` hands such tiles here.

use super::matmul::{SecondOutput, Store};
use super::sgemm_avx512::{run_tile, Partial, Tile, MR};
use std::arch::x86_64::*;

/// The widest last tile that `edge_by_rows` computes.
pub(super) const EDGE_BY_ROWS: usize = 4;

/// A last tile of at most `EDGE_BY_ROWS` columns, when A's columns are contiguous (A is a
/// transposed view, as in the weight gradient xᵀ·g): the 8-lane vectors run down the tile's
/// rows instead of along its columns, so each step of k is one load of A and one FMA per
/// column, where the row-wise tile spends one FMA per row on mostly masked-off lanes. On one
/// thread the 4-column edge of 1000×64×100 took 16–23 µs that way and takes 10 µs this way,
/// where a whole 32-column panel takes about 40 (see "A narrow edge down the rows" in
/// docs/performance.md). Each lane is the same chain of FMAs over k, with
/// the same operands in the same order, as in `micro_narrow`, so the bits are the same. The
/// sums then go through `run_tile`'s store as partial sums of a tile of depth 0.
///
/// # Safety
/// As `run_tile`, with `tile.a_strides[0] == 1` and `tile.cols <= EDGE_BY_ROWS`.
#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn edge_by_rows(
    tile: Tile,
    a_tile: *const f32,
    (b_tile, b_rs): (*const f32, isize),
    c_tile: [*const f32; 3],
    ldc: usize,
    second: SecondOutput,
    store: Store<f32>,
) {
    let mut sums = [0.0f32; MR * 8];
    // SAFETY: this function's contract (the columns fit the const width chosen).
    unsafe {
        match tile.cols {
            1 => sums_by_rows::<1>(tile, a_tile, (b_tile, b_rs), &mut sums),
            2 => sums_by_rows::<2>(tile, a_tile, (b_tile, b_rs), &mut sums),
            3 => sums_by_rows::<3>(tile, a_tile, (b_tile, b_rs), &mut sums),
            4 => sums_by_rows::<4>(tile, a_tile, (b_tile, b_rs), &mut sums),
            _ => return, // no columns: nothing to store
        }
    }
    let partial = Partial { sums: sums.as_mut_ptr(), ld: 8, resume: true, finish: true };
    // SAFETY: the outputs as this function's contract; at depth 0 A and B are not read, and
    // the partial sums are the tile's rows of `sums`, 8 apart.
    unsafe { run_tile(Tile { k: 0, ..tile }, a_tile, (b_tile, b_rs), c_tile, ldc, second, store, partial) };
}

/// The sums of `edge_by_rows`' tile of W columns, stored row by row, 8 apart, into `sums`.
///
/// # Safety
/// As `edge_by_rows`, with `tile.cols == W`.
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn sums_by_rows<const W: usize>(
    tile: Tile,
    a_tile: *const f32,
    (b_tile, b_rs): (*const f32, isize),
    sums: &mut [f32; MR * 8],
) {
    let rows = ((1u32 << tile.rows) - 1) as __mmask8;
    let mut acc = [_mm256_setzero_ps(); W];
    let (mut a_col, mut b_row) = (a_tile, b_tile);
    for _ in 0..tile.k {
        let av = if tile.rows == MR {
            // SAFETY: the tile's MR rows of this column of A lie next to each other inside A.
            unsafe { _mm256_loadu_ps(a_col) }
        } else {
            // SAFETY: the tile's rows (the masked lanes) of this column lie inside A.
            unsafe { _mm256_maskz_loadu_ps(rows, a_col) }
        };
        for (j, lane) in acc.iter_mut().enumerate() {
            // SAFETY: column j < W = tile.cols of this row of B lies inside B.
            let bv = _mm256_set1_ps(unsafe { *b_row.add(j) });
            *lane = _mm256_fmadd_ps(av, bv, *lane);
        }
        // The last step points one stride past the matrix, never read.
        a_col = a_col.wrapping_offset(tile.a_strides[1]);
        b_row = b_row.wrapping_offset(b_rs);
    }
    let mut columns = [[0.0f32; 8]; W];
    for (column, lane) in columns.iter_mut().zip(acc) {
        // SAFETY: `column` holds 8 floats.
        unsafe { _mm256_storeu_ps(column.as_mut_ptr(), lane) };
    }
    for r in 0..tile.rows {
        for (j, column) in columns.iter().enumerate() {
            sums[r * 8 + j] = column[r];
        }
    }
}
