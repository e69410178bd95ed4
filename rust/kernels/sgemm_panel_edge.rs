//! The last whole panel of a float32 product on AVX-512 together with the narrow edge after
//! it, when A's rows are contiguous: `sgemm_avx512::band_kernel` hands such panels here.

#![allow(clippy::too_many_arguments)]

use super::matmul::{MatRef, SecondOutput, Store};
use super::sgemm_avx512::{
    column_masks, offset_unless_null, second_of, second_of_narrow, stored, stored_narrow, MR, NR,
};
use std::arch::x86_64::*;

/// The last whole panel of a band's rows (columns j..j + NR) and the `edge` columns after it
/// (1..=8, the last of the product), in tiles of 8 rows by NR + edge columns: the edge's 8-lane
/// FMAs reuse the panel's broadcasts of A, where a tile of its own would broadcast A again for
/// a few lanes. Each lane is the same chain of FMAs as in `micro` and `micro_narrow`, so the
/// bits are the same.
///
/// # Safety
/// As `band_kernel`, with `b_panel` at column j of b's first row, j + NR + edge == n.
#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn panel_with_edge(
    a: MatRef<'_, f32>,
    a_base: *const f32,
    (b_panel, b_rs): (*const f32, isize),
    [c_in, c, c_copy]: [*mut f32; 3],
    (j, edge): (usize, usize),
    n: usize,
    rows: usize,
    second: SecondOutput,
    store: Store<f32>,
) {
    let edge_mask = column_masks(edge)[0] as __mmask8;
    let mut i = 0;
    while i < rows {
        let height = MR.min(rows - i);
        let offset = i * n + j;
        // SAFETY: row i of the band lies inside a (i < rows), and the tile's first output inside the band's outputs.
        let (a_tile, c_tile) = unsafe {
            let copy = offset_unless_null(c_copy, offset);
            (
                a_base.offset(i as isize * a.row_stride),
                [c_in.add(offset).cast_const(), c.add(offset).cast_const(), copy.cast_const()],
            )
        };
        let args = ((a.cols, [a.row_stride, a.col_stride]), b_panel, b_rs, c_tile, n, edge_mask, second, store);
        // SAFETY: the tile's rows, its NR + edge columns and its depth lie inside a, b and the
        // outputs (this function's contract); avx512f and avx512vl are enabled here.
        unsafe {
            match height {
                8 => micro_with_edge::<8>(a_tile, args),
                7 => micro_with_edge::<7>(a_tile, args),
                6 => micro_with_edge::<6>(a_tile, args),
                5 => micro_with_edge::<5>(a_tile, args),
                4 => micro_with_edge::<4>(a_tile, args),
                3 => micro_with_edge::<3>(a_tile, args),
                2 => micro_with_edge::<2>(a_tile, args),
                _ => micro_with_edge::<1>(a_tile, args),
            }
        }
        i += MR;
    }
}

type EdgeArgs = ((usize, [isize; 2]), *const f32, isize, [*const f32; 3], usize, __mmask8, SecondOutput, Store<f32>);

/// H rows by NR + edge columns over the whole depth: two full 16-lane vectors and one 8-lane
/// vector whose `edge_mask` lanes are the tile's, stored as `micro` and `micro_narrow` store.
///
/// # Safety
/// As `panel_with_edge`, for this tile.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline]
unsafe fn micro_with_edge<const H: usize>(
    a: *const f32,
    ((k, [a_rs, a_cs]), b, b_rs, [c_in, c, c_copy], ldc, edge_mask, second, store): EdgeArgs,
) {
    let mut acc = [[_mm512_setzero_ps(); 2]; H];
    let mut edge_acc = [_mm256_setzero_ps(); H];
    let (mut a_col, mut b_row) = (a, b);
    for _ in 0..k {
        // SAFETY: NR + edge columns of this row of B lie inside B (the caller's contract); the
        // edge's masked-off lanes are not read.
        let (b0, b1, b_edge) = unsafe {
            (_mm512_loadu_ps(b_row), _mm512_loadu_ps(b_row.add(16)), _mm256_maskz_loadu_ps(edge_mask, b_row.add(NR)))
        };
        for r in 0..H {
            // SAFETY: r < H rows of A, inside A by the caller's contract.
            let av = _mm512_set1_ps(unsafe { *a_col.offset(r as isize * a_rs) });
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
            edge_acc[r] = _mm256_fmadd_ps(_mm512_castps512_ps256(av), b_edge, edge_acc[r]);
        }
        b_row = b_row.wrapping_offset(b_rs);
        a_col = a_col.wrapping_offset(a_cs);
    }
    for r in 0..H {
        let (src, dst) = (c_in.wrapping_add(r * ldc), c.wrapping_add(r * ldc).cast_mut());
        for (half, &sum) in acc[r].iter().enumerate() {
            let (q, p) = (src.wrapping_add(16 * half), dst.wrapping_add(16 * half));
            // SAFETY: 16 values of row r from `q` lie inside `init` (caller's contract).
            let result = stored(sum, || unsafe { _mm512_loadu_ps(q) }, store);
            // SAFETY: 16 values of row r from `p` lie inside the output (caller's contract).
            unsafe { _mm512_storeu_ps(p, result) };
            if !c_copy.is_null() {
                // SAFETY: as for the output, in the second output.
                unsafe {
                    _mm512_storeu_ps(c_copy.wrapping_add(r * ldc + 16 * half).cast_mut(), second_of(result, second))
                };
            }
        }
        let (q, p) = (src.wrapping_add(NR), dst.wrapping_add(NR));
        // SAFETY: the edge's masked lanes of row r lie inside `init` and the output (caller's contract).
        let result = stored_narrow(edge_acc[r], || unsafe { _mm256_maskz_loadu_ps(edge_mask, q) }, store);
        // SAFETY: as above.
        unsafe { _mm256_mask_storeu_ps(p, edge_mask, result) };
        if !c_copy.is_null() {
            // SAFETY: as above, in the second output.
            unsafe {
                _mm256_mask_storeu_ps(
                    c_copy.wrapping_add(r * ldc + NR).cast_mut(),
                    edge_mask,
                    second_of_narrow(result, second),
                )
            };
        }
    }
}
