//! Products of many elements that never overflow or underflow on the way: the
//! result is the exact product, rounded (to within a few ulps), whatever the order
//! of the multiplications.
//!
//! Blocks of elements of moderate size are multiplied as plain f64s, whose range
//! cannot run out within a block, so the loops vectorise; the exponent is moved
//! aside between blocks. A block holding a zero, a very small or large element, an
//! infinity or a NaN is recomputed element by element as a `Scaled` product.

use super::fold::{fold_lanes, rows_by_four, Fold, LANES};
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

/// Elements with |v| in [2^-24, 2^24] are tame: a block of up to `BLOCK + LANES` of them
/// multiplied into a mantissa in [1, 2) stays within 2^±960, a normal f64, so the
/// block needs no checks on the way. A block holding a wild element (zero, tiny,
/// huge, inf or NaN) is recomputed element by element as a `Scaled` product.
const TAME_LOW: f64 = 1.0 / (1u64 << 24) as f64;
const TAME_HIGH: f64 = (1u64 << 24) as f64;
/// Steps per lane (or rows per column) between range checks.
const BLOCK: usize = 32;

/// 1 when `v` is not tame. Float comparisons, so that the loops vectorise with SSE2 alone.
#[inline(always)]
fn wild(v: f64) -> u64 {
    let magnitude = v.abs();
    u64::from(!(TAME_LOW..=TAME_HIGH).contains(&magnitude))
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
        let (mut mantissa, mut exponent) = ([1.0f64; LANES], [0i64; LANES]);
        let mut exact = Scaled::ONE;
        for block in x.chunks(LANES * BLOCK) {
            let (before, mut flags) = (mantissa, 0u64);
            let mut steps = block.chunks_exact(LANES);
            for step in &mut steps {
                for (m, &v) in mantissa.iter_mut().zip(step) {
                    let v = v.to_f64();
                    flags |= wild(v);
                    *m *= v;
                }
            }
            for &v in steps.remainder() {
                flags |= wild(v.to_f64());
                mantissa[0] *= v.to_f64();
            }
            if flags != 0 {
                mantissa = before;
                exact = exact.times(fold_lanes(self, block));
            } else {
                mantissa.iter_mut().zip(&mut exponent).for_each(|(m, e)| renormalise(m, e));
            }
        }
        (0..LANES).fold(exact, |acc, i| acc.times(Scaled { mantissa: mantissa[i], exponent: exponent[i] }))
    }

    fn columns(&self, acc: &mut [Scaled], x: &[T], width: usize, start: usize) {
        let len = acc.len();
        let (mut mantissa, mut exponent) = (vec![1.0f64; len], vec![0i64; len]);
        let (mut before, mut flags) = (vec![1.0f64; len], vec![0u64; len]);
        for block in x.chunks(width * BLOCK) {
            multiply_rows_in(&mut mantissa, &mut flags, block, width, start);
            for (j, a) in acc.iter_mut().enumerate().filter(|&(j, _)| flags[j] != 0) {
                *a = block.chunks(width).fold(*a, |p, row| p.times(Scaled::new(row[start + j].to_f64())));
            }
            settle_block_in(&mut mantissa, &mut exponent, &mut before, &mut flags);
        }
        for ((a, &m), &e) in acc.iter_mut().zip(&mantissa).zip(&exponent) {
            *a = a.times(Scaled { mantissa: m, exponent: e });
        }
    }
}

/// After a block: a tame column's mantissa moves its exponent aside, and a wild one
/// (already multiplied exactly into its `Scaled`) goes back to its value `before` the
/// block. `before` then holds the new mantissas and `flags` is cleared, for the next
/// block. Selects, not branches, so that the loop vectorises.
#[inline(always)]
fn settle_block(mantissa: &mut [f64], exponent: &mut [i64], before: &mut [f64], flags: &mut [u64]) {
    let columns = mantissa.iter_mut().zip(exponent.iter_mut()).zip(before.iter_mut().zip(flags.iter_mut()));
    for ((m, e), (b, f)) in columns {
        let (mut unit, mut shift) = (*m, 0);
        renormalise(&mut unit, &mut shift);
        let tame = *f == 0;
        *m = if tame { unit } else { *b };
        *e += if tame { shift } else { 0 };
        *b = *m;
        *f = 0;
    }
}

widest_vectors! {
    /// `settle_block` with the widest vectors the CPU has.
    fn settle_block_in[](mantissa: &mut [f64], exponent: &mut [i64], before: &mut [f64], flags: &mut [u64])
        => settle_block(mantissa, exponent, before, flags);
}

/// Multiplies `mantissa[j]` by column `start + j` of each row of `block` (rows of
/// length `width`), in order, flagging in `flags[j]` the columns that met a wild
/// element; four rows per pass (see `rows_by_four`). Compiled for the instruction set
/// of its caller. Unlike `step_columns`, four rows per pass at every size: a float64
/// multiply per element leaves the loop bound by arithmetic, not memory, and `prod(0)` of
/// 16384×1024 float32 went from 6.6 to 3.7 ms on two threads, 5.5 to 4.9 ms on one.
#[inline(always)]
fn multiply_rows<T: Float>(mantissa: &mut [f64], flags: &mut [u64], block: &[T], width: usize, start: usize) {
    let (groups, rest) = rows_by_four(block, width, start, mantissa.len());
    for [r0, r1, r2, r3] in groups {
        let rows = r0.iter().zip(r1).zip(r2).zip(r3);
        for ((m, f), (((&v0, &v1), &v2), &v3)) in mantissa.iter_mut().zip(flags.iter_mut()).zip(rows) {
            let [v0, v1, v2, v3] = [v0, v1, v2, v3].map(T::to_f64);
            *f |= wild(v0) | wild(v1) | wild(v2) | wild(v3);
            *m = *m * v0 * v1 * v2 * v3;
        }
    }
    for row in rest {
        for ((m, f), &v) in mantissa.iter_mut().zip(flags.iter_mut()).zip(row) {
            let v = v.to_f64();
            *f |= wild(v);
            *m *= v;
        }
    }
}

widest_vectors! {
    /// `multiply_rows` with the widest vectors the CPU has: the same operations, so the same bits.
    fn multiply_rows_in[T: Float](mantissa: &mut [f64], flags: &mut [u64], block: &[T], width: usize, start: usize)
        => multiply_rows(mantissa, flags, block, width, start);
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
        let (width, rows, start, len) = (37, 9, 5, 29);
        let block: Vec<f32> = (0..width * rows).map(|i| ((i as f32) * 0.37).sin() * 3.0 + 0.5).collect();
        let mut want = (vec![1.0f64; len], vec![0u64; len]);
        multiply_rows(&mut want.0, &mut want.1, &block, width, start);
        let mut got = (vec![1.0f64; len], vec![0u64; len]);
        multiply_rows_in(&mut got.0, &mut got.1, &block, width, start);
        let bits = |m: &[f64]| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!((bits(&got.0), got.1), (bits(&want.0), want.1));
        let column: f64 = (0..rows).map(|r| block[r * width + start + 3] as f64).product();
        assert_eq!(got.0[3], column);
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
