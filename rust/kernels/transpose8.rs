//! The transposed copy of a matrix of 4-byte elements in 8×8 blocks of AVX2 shuffles.
//!
//! Shuffles and unaligned loads and stores only move bits, so every element is copied
//! exactly (NaN payloads included), as the tiled copy in `layout.rs` copies it.

use std::mem::MaybeUninit;

/// Writes `band[i·cols + j] = src[first + i + j·s]` for every output row i and column j
/// (`band` holds whole rows of `cols`), and returns true; or returns false, having
/// written nothing, when the elements are not 4 bytes, the band has fewer than 8 rows or
/// columns, this CPU lacks AVX2, or some read would fall outside `src`.
pub(super) fn transposed_band<T: Copy>(
    src: &[T],
    first: usize,
    s: usize,
    cols: usize,
    band: &mut [MaybeUninit<T>],
) -> bool {
    if std::mem::size_of::<T>() != 4 || cols == 0 || band.is_empty() || !band.len().is_multiple_of(cols) {
        return false;
    }
    let rows = band.len() / cols;
    if rows < 8 || cols < 8 {
        // No whole block: the tiled copy is as fast (1000×3 from its transpose: 2.5 µs there, 3.0 here).
        return false;
    }
    let last_read = (cols - 1).checked_mul(s).and_then(|o| o.checked_add(rows - 1)?.checked_add(first));
    if last_read.is_none_or(|last| last >= src.len()) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        let from_first = &src[first..];
        // SAFETY: 4-byte elements (checked above), each moved as a T's bit pattern; reads reach at most
        // from_first[last_read - first] and writes band[rows·cols - 1], both in range (checked above); AVX2 present.
        unsafe { transpose_avx2(from_first.as_ptr().cast::<f32>(), s, band.as_mut_ptr().cast::<f32>(), rows, cols) };
        return true;
    }
    false
}

/// `out[i·cols + j] = src[i + j·s]` for i < rows, j < cols: full 8×8 blocks with shuffles,
/// the edges one element at a time. Source rows (fixed j) are walked across the whole
/// band, so each is read as one sequential run.
///
/// # Safety
/// The CPU must have AVX2; `src[i + j·s]` must be readable and `out[i·cols + j]` writable
/// (4-byte elements) for every i < rows and j < cols.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose_avx2(src: *const f32, s: usize, out: *mut f32, rows: usize, cols: usize) {
    let (rows8, cols8) = (rows - rows % 8, cols - cols % 8);
    for j0 in (0..cols8).step_by(8) {
        for i0 in (0..rows8).step_by(8) {
            // SAFETY: i0 + 8 ≤ rows and j0 + 8 ≤ cols, so the block's reads and writes are in range (caller).
            unsafe { block8(src.add(i0 + j0 * s), s, out.add(i0 * cols + j0), cols) };
        }
    }
    let element = |i: usize, j: usize| {
        // SAFETY: i < rows and j < cols at every call below, in range by the caller's guarantee.
        unsafe { out.add(i * cols + j).write(src.add(i + j * s).read()) }
    };
    (0..rows).for_each(|i| (cols8..cols).for_each(|j| element(i, j)));
    (rows8..rows).for_each(|i| (0..cols8).for_each(|j| element(i, j)));
}

/// Transposes the 8×8 block whose row r starts at `src + r·src_stride` into the block whose
/// row r starts at `dst + r·dst_stride`.
///
/// # Safety
/// The CPU must have AVX2, and the 8 runs of 8 elements at both places must be in range.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block8(src: *const f32, src_stride: usize, dst: *mut f32, dst_stride: usize) {
    use std::arch::x86_64::*;
    // SAFETY: row r < 8 of the source block is in range (caller); an unaligned load.
    let row = |r: usize| unsafe { _mm256_loadu_ps(src.add(r * src_stride)) };
    let (r0, r1, r2, r3, r4, r5, r6, r7) = (row(0), row(1), row(2), row(3), row(4), row(5), row(6), row(7));
    // Each half of rows 0–3 and of rows 4–7 transposed as 4×4 blocks, then the 128-bit halves swapped.
    let [u0, u1, u2, u3] = transposed_quads([r0, r1, r2, r3]);
    let [u4, u5, u6, u7] = transposed_quads([r4, r5, r6, r7]);
    let columns = [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ];
    for (r, column) in columns.into_iter().enumerate() {
        // SAFETY: row r < 8 of the destination block is in range (caller); an unaligned store.
        unsafe { _mm256_storeu_ps(dst.add(r * dst_stride), column) };
    }
}

/// Four rows of 8 as two 4×4 blocks (lanes 0–3 and 4–7), each transposed in place: lanes
/// 0–3 of result c hold column c of the left block, lanes 4–7 column c of the right one.
/// Pairs of rows are interleaved, then pairs of pairs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn transposed_quads(rows: [std::arch::x86_64::__m256; 4]) -> [std::arch::x86_64::__m256; 4] {
    use std::arch::x86_64::*;
    let [r0, r1, r2, r3] = rows;
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    [
        _mm256_shuffle_ps::<0x44>(t0, t2),
        _mm256_shuffle_ps::<0xEE>(t0, t2),
        _mm256_shuffle_ps::<0x44>(t1, t3),
        _mm256_shuffle_ps::<0xEE>(t1, t3),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_elements(src: &[u32], first: usize, s: usize, rows: usize, cols: usize) -> Vec<u32> {
        (0..rows * cols).map(|k| src[first + k / cols + (k % cols) * s]).collect()
    }

    #[test]
    fn blocks_and_edges_match_an_element_by_element_copy() {
        // Odd and whole multiples of 8 on both sides, an offset, a stride wider than the rows,
        // and NaN bit patterns (each value is its own index, so 0x7fc0_0001-like payloads appear too).
        for (rows, cols, first, extra) in
            [(8, 8, 0, 0), (17, 9, 3, 5), (256, 64, 0, 0), (5, 3, 1, 0), (8, 9, 0, 1), (24, 40, 7, 11)]
        {
            let s = rows + extra;
            let len = first + rows + (cols - 1) * s;
            let src: Vec<u32> = (0..len as u32).map(|v| v | 0x7fc0_0000).collect();
            let mut out = vec![MaybeUninit::<u32>::uninit(); rows * cols];
            if !transposed_band(&src, first, s, cols, &mut out) {
                #[cfg(target_arch = "x86_64")]
                let avx2 = std::arch::is_x86_feature_detected!("avx2");
                #[cfg(not(target_arch = "x86_64"))]
                let avx2 = false;
                assert!(rows < 8 || cols < 8 || !avx2, "refused {rows}×{cols} with AVX2 present");
                continue;
            }
            // SAFETY: transposed_band returned true, so it wrote every element.
            let got: Vec<u32> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
            assert_eq!(got, by_elements(&src, first, s, rows, cols), "{rows}×{cols}, first {first}, stride {s}");
        }
    }

    #[test]
    fn reads_outside_the_source_are_refused_before_anything_is_written() {
        let src = vec![1u32; 63];
        let mut out = vec![MaybeUninit::<u32>::new(7); 64];
        assert!(!transposed_band(&src, 0, 8, 8, &mut out), "8×8 from 63 elements");
        // SAFETY: every element was initialised with 7, and a refusal writes nothing.
        assert!(out.iter().all(|v| unsafe { v.assume_init() } == 7));
        let mut wide = vec![MaybeUninit::<u64>::new(0); 64];
        assert!(!transposed_band(&[0u64; 64], 0, 8, 8, &mut wide), "8-byte elements");
        assert!(!transposed_band(&src, usize::MAX, 8, 8, &mut out), "an offset that overflows");
    }
}
