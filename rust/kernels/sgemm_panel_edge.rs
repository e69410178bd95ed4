//! The merged last panel of a float32 product on AVX-512: a whole panel of NR columns and the
//! narrow edge of at most 8 columns after it, in one tile (`sgemm_avx512::panel_width` says
//! when); `run_tile` hands such tiles here.

#![allow(clippy::too_many_arguments)]

use super::matmul::{SecondOutput, Store};
use super::sgemm_avx512::{offset_unless_null, second_of, second_of_narrow, store_tile, stored, stored_narrow, NR};
use std::arch::x86_64::*;

/// H rows by NR + edge columns over the whole depth: two full 16-lane vectors and one 8-lane
/// vector whose `edge_mask` lanes are the tile's. The edge's 8-lane FMAs reuse the panel's
/// broadcasts of A, where a tile of its own would broadcast A again for a few lanes. Each lane
/// is the same chain of FMAs as in `micro` and `micro_narrow`, stored by the same
/// `store_tile!`, so the bits are the same.
///
/// # Safety
/// The tile's H rows of A (`a_strides` apart) over depth k, NR + edge columns of k rows of B
/// (`b_rs` apart) and of H rows of the outputs (`ldc` apart) must lie inside them; the CPU
/// must have avx512f and avx512vl.
#[target_feature(enable = "avx512f,avx512vl")]
#[inline]
pub(super) unsafe fn micro_with_edge<const H: usize>(
    k: usize,
    a: *const f32,
    [a_rs, a_cs]: [isize; 2],
    b: *const f32,
    b_rs: isize,
    c_tile: [*const f32; 3],
    ldc: usize,
    edge_mask: __mmask8,
    second: SecondOutput,
    store: Store<f32>,
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
        // The last step points one stride past the matrix, never read: wrapping arithmetic
        // keeps computing that address defined.
        b_row = b_row.wrapping_offset(b_rs);
        a_col = a_col.wrapping_offset(a_cs);
    }
    // The tile's H rows of NR columns, then the edge's masked lanes after them, lie inside the
    // outputs (caller's contract).
    store_tile!(
        acc, [0xFFFF; 2], c_tile, ldc, second, store,
        lanes: 16, load: _mm512_maskz_loadu_ps, put: _mm512_mask_storeu_ps, stored: stored, second_of: second_of
    );
    let [c_in, c, c_copy] = c_tile;
    // SAFETY: a non-null second output holds the tile's NR + edge columns (caller's contract).
    let copy_edge = unsafe { offset_unless_null(c_copy.cast_mut(), NR) }.cast_const();
    store_tile!(
        edge_acc.map(|sums| [sums]), [edge_mask, 0], [c_in.wrapping_add(NR), c.wrapping_add(NR), copy_edge], ldc, second, store,
        lanes: 8, load: _mm256_maskz_loadu_ps, put: _mm256_mask_storeu_ps, stored: stored_narrow, second_of: second_of_narrow
    );
}
