//! Products of many elements that never overflow or underflow on the way: the
//! result is the exact product, rounded (to within a few ulps), whatever the order
//! of the multiplications.
//!
//! Blocks of elements of moderate size are multiplied as plain f64s, whose range
//! cannot run out within a block, so the loops vectorise; the exponent is moved
//! aside between blocks. A block holding a zero, a very small or large element, an
//! infinity or a NaN is recomputed element by element as a `Scaled` product.

use super::fold::{fold_lanes, rows_by_four, Fold};
use crate::dtype::Float;

/// A product kept as `mantissa · 2^exponent`, so that multiplying many elements never
/// overflows or underflows on the way: the result is the exact product rounded
/// (to within a few ulps), whatever the order of the multiplications.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Scaled {
    mantissa: f64,
    exponent: i64,
}

/// `2^k` for `k` in the normal range of f64 (-1022..=1023).
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

impl Scaled {
    pub const ONE: Scaled = Scaled { mantissa: 1.0, exponent: 0 };

    /// `v` as a mantissa within 2^±500 and an exponent. Zero, inf and NaN stay as they are.
    #[inline]
    pub fn new(v: f64) -> Scaled {
        let biased = ((v.to_bits() >> 52) & 0x7ff) as i64;
        if (1023 - 500..=1023 + 500).contains(&biased) || v == 0.0 || !v.is_finite() {
            return Scaled { mantissa: v, exponent: 0 };
        }
        // Subnormals have no exponent bits: scale them into the normal range first.
        let (v, shift) = if biased == 0 { (v * pow2(64), -64) } else { (v, 0) };
        let biased = ((v.to_bits() >> 52) & 0x7ff) as i64;
        let unit = f64::from_bits((v.to_bits() & !(0x7ff << 52)) | (1023 << 52));
        Scaled { mantissa: unit, exponent: biased - 1023 + shift }
    }

    #[inline]
    fn renormalised(self) -> Scaled {
        let inner = Scaled::new(self.mantissa);
        Scaled { mantissa: inner.mantissa, exponent: inner.exponent + self.exponent }
    }

    #[inline]
    pub fn times(self, other: Scaled) -> Scaled {
        // Both mantissas are within 2^±500, so their product is a normal f64.
        Scaled { mantissa: self.mantissa * other.mantissa, exponent: self.exponent + other.exponent }.renormalised()
    }

    #[inline]
    pub fn divided_by(self, other: Scaled) -> Scaled {
        Scaled { mantissa: self.mantissa / other.mantissa, exponent: self.exponent - other.exponent }.renormalised()
    }

    /// The value, rounded to f64 (±inf or 0 when out of range).
    pub fn value(self) -> f64 {
        if self.mantissa == 0.0 || !self.mantissa.is_finite() {
            return self.mantissa;
        }
        // In four equal steps, each a representable power of two; the partial
        // results move monotonically to the result, so none overflows before it does.
        let e = self.exponent.clamp(-3000, 3000);
        let quarter = e / 4;
        self.mantissa * pow2(quarter) * pow2(quarter) * pow2(quarter) * pow2(e - 3 * quarter)
    }
}

/// Elements with 2^-24 ≤ |v| < 2^25 are tame: a block of up to `BLOCK` of them
/// multiplied into a mantissa in [1, 2) stays within 2^±801, a normal f64, so the
/// block needs no checks on the way. A block holding a wild element (zero, tiny,
/// huge, inf or NaN) is recomputed element by element as a `Scaled` product.
const TAME_LOW: f64 = 1.0 / (1u64 << 24) as f64;
const TAME_END: f64 = (1u64 << 25) as f64;
/// Steps per lane (or rows per column) between range checks.
const BLOCK: usize = 32;

/// How far `v`'s magnitude lies above the tame range's low end, in the units of
/// `magnitude_high_bits` (wrapping below it): `v` is tame when this is below
/// `tame_span`. So a block is tame when the largest of its keys is: one unsigned max
/// per element, on the element's own bits, which vectorises 16 float32 lanes wide.
#[inline(always)]
fn tame_key<T: Float>(v: T) -> u32 {
    v.magnitude_high_bits().wrapping_sub(T::from_f64(TAME_LOW).magnitude_high_bits())
}

#[inline(always)]
fn tame_span<T: Float>() -> u32 {
    // Both ends are powers of two: their low 32 bits are zero, so the ends are exact for float64 too.
    tame_key(T::from_f64(TAME_END))
}

/// Moves the exponent of `mantissa` into `exponent`, leaving |mantissa| in [1, 2).
#[inline(always)]
fn renormalise(mantissa: &mut f64, exponent: &mut i64) {
    let bits = mantissa.to_bits();
    *exponent += ((bits >> 52) & 0x7ff) as i64 - 1023;
    *mantissa = f64::from_bits((bits & !(0x7ff << 52)) | (1023 << 52));
}

/// The product of the elements, as a `Scaled`.
pub struct Product;

impl<T: Float> Fold<T> for Product {
    type Acc = Scaled;
    fn identity(&self) -> Scaled {
        Scaled::ONE
    }
    #[inline]
    fn step(&self, acc: Scaled, v: T) -> Scaled {
        acc.times(Scaled::new(v.to_f64()))
    }
    fn merge(&self, a: Scaled, b: Scaled) -> Scaled {
        a.times(b)
    }

    fn run(&self, x: &[T]) -> Scaled {
        multiply_run_in(x)
    }

    fn columns(&self, acc: &mut [Scaled], x: &[T], width: usize, start: usize) {
        let len = acc.len();
        let (mut mantissa, mut exponent) = (vec![1.0f64; len], vec![0i64; len]);
        let (mut before, mut widest) = (vec![1.0f64; len], vec![0u32; len]);
        let span = tame_span::<T>();
        for block in x.chunks(width * BLOCK) {
            multiply_rows_in(&mut mantissa, &mut widest, block, width, start);
            if widest.iter().fold(0, |a, &w| a.max(w)) >= span {
                for (j, a) in acc.iter_mut().enumerate().filter(|&(j, _)| widest[j] >= span) {
                    *a = block.chunks(width).fold(*a, |p, row| p.times(Scaled::new(row[start + j].to_f64())));
                }
            }
            settle_block_in(&mut mantissa, &mut exponent, &mut before, &mut widest, span);
        }
        for ((a, &m), &e) in acc.iter_mut().zip(&mantissa).zip(&exponent) {
            *a = a.times(Scaled { mantissa: m, exponent: e });
        }
    }
}

/// Lanes of `multiply_run`: four AVX-512 vectors of float64, so four chains of multiplies
/// hide each other's latency.
const RUN_LANES: usize = 32;

/// The product of a contiguous run, in `RUN_LANES` interleaved lanes, block by block:
/// a tame block's lanes move their exponents aside after it, and a block with a wild
/// element is recomputed exactly instead.
#[inline(always)]
fn multiply_run<T: Float>(x: &[T]) -> Scaled {
    let (mut mantissa, mut exponent) = ([1.0f64; RUN_LANES], [0i64; RUN_LANES]);
    let mut exact = Scaled::ONE;
    for block in x.chunks(RUN_LANES * BLOCK) {
        let (before, mut widest) = (mantissa, [0u32; RUN_LANES]);
        let mut steps = block.chunks_exact(RUN_LANES);
        for step in &mut steps {
            for ((m, w), &v) in mantissa.iter_mut().zip(&mut widest).zip(step) {
                *w = (*w).max(tame_key(v));
                *m *= v.to_f64();
            }
        }
        // One more step in the first lanes. A block with a remainder has fewer than `BLOCK`
        // whole steps, so no lane takes more than `BLOCK` elements a block.
        for ((m, w), &v) in mantissa.iter_mut().zip(&mut widest).zip(steps.remainder()) {
            *w = (*w).max(tame_key(v));
            *m *= v.to_f64();
        }
        if widest.into_iter().fold(0, u32::max) >= tame_span::<T>() {
            mantissa = before;
            exact = exact.times(fold_lanes(&Product, block));
        } else {
            mantissa.iter_mut().zip(&mut exponent).for_each(|(m, e)| renormalise(m, e));
        }
    }
    (0..RUN_LANES).fold(exact, |acc, i| acc.times(Scaled { mantissa: mantissa[i], exponent: exponent[i] }))
}

widest_vectors! {
    /// `multiply_run` with the widest vectors the CPU has.
    fn multiply_run_in[T: Float](x: &[T]) -> Scaled => multiply_run(x);
}

/// After a block: a tame column (its `widest` key below `span`) moves its mantissa's
/// exponent aside, and a wild one (already multiplied exactly into its `Scaled`) goes back
/// to its value `before` the block. `before` then holds the new mantissas and `widest` is
/// cleared, for the next block. Selects, not branches, so that the loop vectorises.
#[inline(always)]
fn settle_block(mantissa: &mut [f64], exponent: &mut [i64], before: &mut [f64], widest: &mut [u32], span: u32) {
    let columns = mantissa.iter_mut().zip(exponent.iter_mut()).zip(before.iter_mut().zip(widest.iter_mut()));
    for ((m, e), (b, w)) in columns {
        let (mut unit, mut shift) = (*m, 0);
        renormalise(&mut unit, &mut shift);
        let tame = *w < span;
        *m = if tame { unit } else { *b };
        *e += if tame { shift } else { 0 };
        *b = *m;
        *w = 0;
    }
}

widest_vectors! {
    /// `settle_block` with the widest vectors the CPU has.
    fn settle_block_in[](mantissa: &mut [f64], exponent: &mut [i64], before: &mut [f64], widest: &mut [u32], span: u32)
        => settle_block(mantissa, exponent, before, widest, span);
}

/// Multiplies `mantissa[j]` by column `start + j` of each row of `block` (rows of
/// length `width`), in order, keeping in `widest[j]` the largest `tame_key` the column
/// met; four rows per pass (see `rows_by_four`). Compiled for the instruction set of its
/// caller. Unlike `step_columns`, four rows per pass at every size: a float64 multiply per
/// element leaves the loop bound by arithmetic, not memory, and `prod(0)` of 16384×1024
/// float32 went from 6.6 to 3.7 ms on two threads, 5.5 to 4.9 ms on one. (Tiles of 64
/// columns kept in registers through a block's 32 rows were no faster at 1024×1024 and
/// took twice as long at 16384×1024, reading 32 rows a page apart at a time.)
#[inline(always)]
fn multiply_rows<T: Float>(mantissa: &mut [f64], widest: &mut [u32], block: &[T], width: usize, start: usize) {
    let (groups, rest) = rows_by_four(block, width, start, mantissa.len());
    for [r0, r1, r2, r3] in groups {
        let rows = r0.iter().zip(r1).zip(r2).zip(r3);
        for ((m, w), (((&v0, &v1), &v2), &v3)) in mantissa.iter_mut().zip(widest.iter_mut()).zip(rows) {
            let keys = tame_key(v0).max(tame_key(v1)).max(tame_key(v2).max(tame_key(v3)));
            *w = (*w).max(keys);
            let [v0, v1, v2, v3] = [v0, v1, v2, v3].map(T::to_f64);
            *m = *m * v0 * v1 * v2 * v3;
        }
    }
    for row in rest {
        for ((m, w), &v) in mantissa.iter_mut().zip(widest.iter_mut()).zip(row) {
            *w = (*w).max(tame_key(v));
            *m *= v.to_f64();
        }
    }
}

widest_vectors! {
    /// `multiply_rows` with the widest vectors the CPU has: the same operations, so the same bits.
    fn multiply_rows_in[T: Float](mantissa: &mut [f64], widest: &mut [u32], block: &[T], width: usize, start: usize)
        => multiply_rows(mantissa, widest, block, width, start);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::fold::fold_dims;

    #[test]
    fn scaled_products_neither_overflow_nor_underflow_on_the_way() {
        let x = [1e300f64, 1e300, 1e-300, 1e-300, 5e-324, 3.0];
        let product = fold_dims(&Product, &x, &[6], &[0])[0].value();
        assert!((product - 1.5e-323).abs() <= 5e-324, "{product}");
        let big = fold_dims(&Product, &[1e200f64, 1e200, 1e-100], &[3], &[0])[0].value();
        assert!((big / 1e300 - 1.0).abs() < 1e-14, "{big}");
        assert_eq!(fold_dims(&Product, &[1e300f64, 1e300], &[2], &[0])[0].value(), f64::INFINITY);
        assert_eq!(fold_dims(&Product, &[-1e-300f64, 1e-300], &[2], &[0])[0].value(), 0.0);
        assert!(fold_dims(&Product, &[f64::INFINITY, 0.0], &[2], &[0])[0].value().is_nan());
        assert_eq!(fold_dims(&Product, &[f64::INFINITY, -2.0], &[2], &[0])[0].value(), f64::NEG_INFINITY);
    }

    #[test]
    fn the_fast_blocks_agree_with_the_exact_steps() {
        let x: Vec<f64> = (0..1000).map(|i| ((i as f64) * 0.37).sin() * 3.0 + 0.01).collect();
        let fast = Fold::<f64>::run(&Product, &x).value();
        let exact = fold_lanes(&Product, &x).value();
        assert!((fast / exact - 1.0).abs() < 1e-12, "{fast} vs {exact}");
        let columns = fold_dims(&Product, &x, &[100, 10], &[0]);
        for (j, c) in columns.iter().enumerate() {
            let column: Vec<f64> = (0..100).map(|i| x[i * 10 + j]).collect();
            let exact = fold_lanes(&Product, &column).value();
            assert!((c.value() / exact - 1.0).abs() < 1e-12, "column {j}");
        }
    }

    #[test]
    fn runs_of_the_largest_tame_elements_stay_in_range_in_every_lane() {
        for len in [RUN_LANES * BLOCK - 1, RUN_LANES * BLOCK + RUN_LANES - 1, 3 * RUN_LANES * BLOCK + 5] {
            let x = vec![-3.3e7f32; len];
            let (fast, exact) = (Fold::<f32>::run(&Product, &x), fold_lanes(&Product, &x));
            let ratio = fast.mantissa / exact.mantissa * pow2(fast.exponent - exact.exponent);
            assert!((ratio - 1.0).abs() < 1e-9, "{len}: {fast:?} vs {exact:?}");
        }
    }

    #[test]
    fn blocks_with_wild_elements_are_recomputed_exactly() {
        let mut x: Vec<f64> = (0..700).map(|i| 1.0 + ((i % 13) as f64 - 6.0) * 0.01).collect();
        x[300] = 1e300;
        x[301] = 1e-300;
        x[650] = 1e-40;
        x[651] = 1e40;
        let plain: f64 = x.iter().product();
        let got = Fold::<f64>::run(&Product, &x).value();
        assert!((got / plain - 1.0).abs() < 1e-12, "{got} vs {plain}");
        let columns = fold_dims(&Product, &x, &[70, 10], &[0]);
        for (j, c) in columns.iter().enumerate() {
            let column: f64 = (0..70).map(|i| x[i * 10 + j]).product();
            assert!((c.value() / column - 1.0).abs() < 1e-12, "column {j}");
        }
    }

    #[test]
    fn rows_multiply_to_the_bits_of_the_plain_loop_on_every_instruction_set() {
        let (width, rows, start, len) = (150, 9, 5, 137);
        let mut block: Vec<f32> = (0..width * rows).map(|i| ((i as f32) * 0.37).sin() * 3.0 + 0.5).collect();
        block[4 * width + start + 70] = 1e30;
        let mut want = (vec![1.0f64; len], vec![0u32; len]);
        multiply_rows(&mut want.0, &mut want.1, &block, width, start);
        let mut got = (vec![1.0f64; len], vec![0u32; len]);
        multiply_rows_in(&mut got.0, &mut got.1, &block, width, start);
        let bits = |m: &[f64]| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!((bits(&got.0), &got.1), (bits(&want.0), &want.1));
        for j in 0..len {
            let column = (0..rows).map(|r| block[r * width + start + j]);
            let product = column.clone().fold(1.0f64, |p, v| p * v as f64);
            assert_eq!(got.0[j].to_bits(), product.to_bits(), "column {j}");
            assert_eq!(got.1[j], column.map(tame_key).max().unwrap_or(0), "column {j}");
            assert_eq!(got.1[j] >= tame_span::<f32>(), j == 70, "column {j}");
        }
    }

    fn is_tame<T: Float>(v: T) -> bool {
        tame_key(v) < tame_span::<T>()
    }

    #[test]
    fn the_tame_range_is_from_two_to_the_minus_24_up_to_two_to_the_25_in_both_widths() {
        let low = TAME_LOW;
        let end = TAME_END;
        for (v, tame) in [
            (low, true),
            (-low, true),
            (1.0, true),
            (end * (1.0 - f64::EPSILON), true),
            (low * (1.0 - f64::EPSILON), false),
            (end, false),
            (-end, false),
            (0.0, false),
            (-0.0, false),
            (f64::MIN_POSITIVE, false),
            (f64::INFINITY, false),
            (f64::NEG_INFINITY, false),
            (f64::NAN, false),
            (-f64::NAN, false),
        ] {
            assert_eq!(is_tame(v), tame, "float64 {v:e}");
        }
        for (v, tame) in [
            (low as f32, true),
            (f32::from_bits((low as f32).to_bits() - 1), false),
            (f32::from_bits((end as f32).to_bits() - 1), true),
            (-(end as f32), false),
            (f32::MIN_POSITIVE, false),
            (1e-45f32, false),
            (0.0f32, false),
            (f32::INFINITY, false),
            (f32::NAN, false),
        ] {
            assert_eq!(is_tame(v), tame, "float32 {v:e}");
        }
    }

    #[test]
    fn elements_at_the_ends_of_the_tame_range_multiply_exactly() {
        let near_ends = [3.0e7f32, -2.9e7, 6.0e-8, -5.97e-8, 1.5, 5.95e-8, 3.3e7];
        let x: Vec<f32> = (0..64 * 5).map(|i| near_ends[i % near_ends.len()] * (1.0 + (i % 5) as f32 * 0.01)).collect();
        let columns = fold_dims(&Product, &x, &[64, 5], &[0]);
        for (j, c) in columns.iter().enumerate() {
            let exact = fold_lanes(&Product, &(0..64).map(|i| x[i * 5 + j]).collect::<Vec<_>>()).value();
            assert!((c.value() / exact - 1.0).abs() < 1e-12, "column {j}: {} vs {exact}", c.value());
        }
        let all = Fold::<f32>::run(&Product, &x).value();
        let exact = fold_lanes(&Product, &x).value();
        assert!((all / exact - 1.0).abs() < 1e-12, "{all} vs {exact}");
    }

    #[test]
    fn columns_with_zeros_or_nan_are_recomputed_exactly() {
        let x = [2.0f64, 3.0, 0.0, f64::NAN, 4.0, -1.0];
        let columns: Vec<f64> = fold_dims(&Product, &x, &[3, 2], &[0]).iter().map(|s| s.value()).collect();
        assert_eq!(columns[0], 0.0);
        assert!(columns[1].is_nan());
        assert_eq!(Fold::<f64>::run(&Product, &[1.5, -2.0, 4.0]).value(), -12.0);
    }
}
