//! The largest (or smallest) float32 of a row, and the index of the first one, in
//! explicit AVX-512 (two 16-lane chains of compare-and-select, so that each hides the
//! other's latency) or AVX2 (four 8-lane chains): 32 lanes either way.
//!
//! The generic loops in `reduce` and `ordering` compile differently from build to build:
//! in one, a lane update became a masked store to the stack and a reload in the next
//! block (a store-forwarding stall: argmax of 1024×1024 took 700 µs on one thread); in
//! another, `std::array::from_fn` was not inlined and ran scalar (amax took 860 µs
//! against 108). Intrinsics fix the code, so these rows no longer depend on the optimiser.
//!
//! Per lane, each element goes through the generic loops' step (`reduce::better`, the
//! selects of `ordering::line_arg`), and the lanes are merged by the same code.

#![cfg(target_arch = "x86_64")]

use super::reduce::better;
use super::vecmath::Simd;
use std::arch::x86_64::*;

/// Two vectors of float32 per block.
const BLOCK: usize = 32;

/// Whether these kernels can run here: on AVX-512 or on AVX2.
pub fn available() -> bool {
    super::vecmath::simd() != Simd::Baseline
}

/// The lane bests of `row` and their positions (see `lanes`), in the widest vectors here.
fn lanes_here<const LARGEST: bool, const NAN_WINS: bool>(row: &[f32]) -> ([f32; BLOCK], [u32; BLOCK], bool) {
    match super::vecmath::simd() {
        // SAFETY: `simd()` says Avx512 only after seeing avx512f and avx512vl.
        Simd::Avx512 => unsafe { lanes::<LARGEST, NAN_WINS>(row) },
        // SAFETY: `simd()` says Avx2 only after seeing avx2 and fma.
        Simd::Avx2 => unsafe { lanes_avx2::<LARGEST, NAN_WINS>(row) },
        Simd::Baseline => panic!("extreme_f32 without AVX2"), // invariant: both callers assert available()
    }
}

/// The 32 lane bests of `row` (a whole number of blocks) and, with `INDEX`, their positions:
/// lane `l` holds the best of the elements at `l`, `l + 32`, ..., a NaN beating everything
/// when `NAN_WINS`. Also whether any element was NaN.
#[target_feature(enable = "avx512f")]
fn lanes<const LARGEST: bool, const NAN_WINS: bool>(row: &[f32]) -> ([f32; BLOCK], [u32; BLOCK], bool) {
    let mut best = [row.first().copied().unwrap_or(0.0); BLOCK];
    let mut index = [0u32; BLOCK];
    let blocks = row.len() / BLOCK;
    if blocks == 0 {
        return (best, index, false);
    }
    let (mut best0, mut best1) = (_mm512_set1_ps(best[0]), _mm512_set1_ps(best[0]));
    let (mut index0, mut index1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    let mut at0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut at1 = _mm512_add_epi32(at0, _mm512_set1_epi32(16));
    let step = _mm512_set1_epi32(BLOCK as i32);
    let mut nan: __mmask16 = 0;
    for b in 0..blocks {
        // SAFETY: block `b < row.len() / BLOCK` holds BLOCK floats from `b * BLOCK`; loadu needs no alignment.
        let (v0, v1) = unsafe {
            let p = row.as_ptr().add(b * BLOCK);
            (_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16)))
        };
        let unordered = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v0, v1); // either one NaN
        nan |= unordered;
        let (wins0, wins1) = if LARGEST {
            (_mm512_cmp_ps_mask::<_CMP_GT_OQ>(v0, best0), _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v1, best1))
        } else {
            (_mm512_cmp_ps_mask::<_CMP_LT_OQ>(v0, best0), _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v1, best1))
        };
        let (wins0, wins1) = if NAN_WINS {
            (wins0 | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v0, v0), wins1 | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v1, v1))
        } else {
            (wins0, wins1)
        };
        best0 = _mm512_mask_mov_ps(best0, wins0, v0);
        best1 = _mm512_mask_mov_ps(best1, wins1, v1);
        index0 = _mm512_mask_mov_epi32(index0, wins0, at0);
        index1 = _mm512_mask_mov_epi32(index1, wins1, at1);
        at0 = _mm512_add_epi32(at0, step);
        at1 = _mm512_add_epi32(at1, step);
    }
    // SAFETY: each array holds BLOCK = 32 values, two vectors' worth; storeu needs no alignment.
    unsafe {
        _mm512_storeu_ps(best.as_mut_ptr(), best0);
        _mm512_storeu_ps(best.as_mut_ptr().add(16), best1);
        _mm512_storeu_si512(index.as_mut_ptr().cast(), index0);
        _mm512_storeu_si512(index.as_mut_ptr().add(16).cast(), index1);
    }
    (best, index, nan != 0)
}

/// `lanes` in AVX2: four 8-lane chains per block of 32, lane `l` in chain `l / 8`, with
/// blends for the masked moves. The same lanes, so the same positions and values.
#[target_feature(enable = "avx2")]
fn lanes_avx2<const LARGEST: bool, const NAN_WINS: bool>(row: &[f32]) -> ([f32; BLOCK], [u32; BLOCK], bool) {
    let mut best = [row.first().copied().unwrap_or(0.0); BLOCK];
    let mut index = [0u32; BLOCK];
    let blocks = row.len() / BLOCK;
    if blocks == 0 {
        return (best, index, false);
    }
    let mut bests = [_mm256_set1_ps(best[0]); 4];
    let mut indices = [_mm256_setzero_ps(); 4]; // u32 positions, carried as float bits for the blends
    let offsets = [0, 8, 16, 24].map(|o| _mm256_setr_epi32(o, o + 1, o + 2, o + 3, o + 4, o + 5, o + 6, o + 7));
    let mut nan = _mm256_setzero_ps();
    for b in 0..blocks {
        let start = _mm256_set1_epi32((b * BLOCK) as i32);
        for chain in 0..4 {
            // SAFETY: block `b < row.len() / BLOCK` holds BLOCK floats from `b * BLOCK`, and
            // `chain * 8 + 8 <= BLOCK`; loadu needs no alignment.
            let v = unsafe { _mm256_loadu_ps(row.as_ptr().add(b * BLOCK + chain * 8)) };
            let unordered = _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v);
            nan = _mm256_or_ps(nan, unordered);
            let wins = if LARGEST {
                _mm256_cmp_ps::<_CMP_GT_OQ>(v, bests[chain])
            } else {
                _mm256_cmp_ps::<_CMP_LT_OQ>(v, bests[chain])
            };
            let wins = if NAN_WINS { _mm256_or_ps(wins, unordered) } else { wins };
            bests[chain] = _mm256_blendv_ps(bests[chain], v, wins);
            let at = _mm256_castsi256_ps(_mm256_add_epi32(start, offsets[chain]));
            indices[chain] = _mm256_blendv_ps(indices[chain], at, wins);
        }
    }
    for chain in 0..4 {
        // SAFETY: each array holds BLOCK = 32 values and `chain * 8 + 8 <= 32`; storeu needs no alignment.
        unsafe {
            _mm256_storeu_ps(best.as_mut_ptr().add(chain * 8), bests[chain]);
            _mm256_storeu_ps(index.as_mut_ptr().add(chain * 8).cast(), indices[chain]);
        }
    }
    (best, index, _mm256_movemask_ps(nan) != 0)
}

/// The largest (or smallest) element of a non-empty row, NaN if it holds one.
pub fn best_in_row(row: &[f32], largest: bool) -> f32 {
    assert!(available() && !row.is_empty(), "best_in_row: needs AVX2 or AVX-512 and a non-empty row");
    let (lanes, _, _) = if largest { lanes_here::<true, true>(row) } else { lanes_here::<false, true>(row) };
    let tail = &row[row.len() / BLOCK * BLOCK..];
    let best = tail.iter().fold(row[0], |b, &v| better(b, v, largest));
    lanes.iter().fold(best, |b, &v| better(b, v, largest))
}

/// The index of the first largest (or smallest) element of a non-empty row shorter than
/// 2^32, or of its first NaN.
pub fn arg_extreme(line: &[f32], largest: bool) -> usize {
    assert!(available() && !line.is_empty() && u32::try_from(line.len()).is_ok(), "arg_extreme: bad call");
    let (best, index, any_nan) =
        if largest { lanes_here::<true, false>(line) } else { lanes_here::<false, false>(line) };
    super::ordering::pick_from_lanes(line, &best, &index, line.len() / BLOCK * BLOCK, any_nan, largest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_arg(line: &[f32], largest: bool) -> usize {
        if let Some(first_nan) = line.iter().position(|v| v.is_nan()) {
            return first_nan;
        }
        let mut at = 0;
        for (i, &v) in line.iter().enumerate() {
            if (largest && v > line[at]) || (!largest && v < line[at]) {
                at = i;
            }
        }
        at
    }

    /// The AVX2 lanes equal the ones `lanes_here` picks (AVX-512 on a machine that has it).
    fn assert_same_lanes_in_avx2(line: &[f32]) {
        fn bits(lanes: ([f32; BLOCK], [u32; BLOCK], bool)) -> ([u32; BLOCK], [u32; BLOCK], bool) {
            (lanes.0.map(f32::to_bits), lanes.1, lanes.2)
        }
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        // SAFETY: the CPU has avx2 (checked above).
        let avx2 = unsafe { [lanes_avx2::<true, true>(line), lanes_avx2::<false, false>(line)] };
        let here = [lanes_here::<true, true>(line), lanes_here::<false, false>(line)];
        assert_eq!(avx2.map(bits), here.map(bits), "length {}", line.len());
    }

    #[test]
    fn the_kernels_agree_with_a_plain_scan_at_every_length_with_ties_and_nan() {
        if !available() {
            return;
        }
        for n in [1, 2, 16, 31, 32, 33, 64, 65, 100, 1000, 1029] {
            let mut line: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            for largest in [true, false] {
                assert_eq!(arg_extreme(&line, largest), plain_arg(&line, largest), "{n} {largest}");
                assert_eq!(best_in_row(&line, largest), line[plain_arg(&line, largest)], "{n} {largest}");
            }
            assert_same_lanes_in_avx2(&line);
            line[n * 2 / 3] = f32::NAN;
            line[n - 1] = f32::NAN;
            assert_same_lanes_in_avx2(&line);
            for largest in [true, false] {
                assert_eq!(arg_extreme(&line, largest), n * 2 / 3, "{n} {largest} with NaN");
                assert!(best_in_row(&line, largest).is_nan(), "{n} {largest} with NaN");
            }
        }
    }
}
