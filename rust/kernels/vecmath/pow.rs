//! Float32 `pow`, computed in float64 as 2^(y·log2|x|) and rounded once, so that a loop over a
//! slice compiles to SIMD code. The C library's `powf` was one call per element: `x ** 1.5` took
//! 1.9 times numpy's time and `pow(x, y)` 2.8 times (`benchmarks/special_functions.py`).
//!
//! log2 and exp2 here are float64 series whose relative error is below 1e-13, so the float64 power
//! is within about 2e-13 of the true one, and its rounding to float32 is the correctly rounded
//! result unless the true value lies within that of a rounding boundary; it is never more than
//! 0.5 ulps plus that away. The edge cases follow C's `powf` (and so numpy's and torch's): see
//! `pow`. The polynomials' fused multiply-adds are rounded once on any CPU, so the bits are the
//! same on every instruction set (see `vecmath`'s module doc).

use super::{estrin_11, estrin_8, select};

/// 1.5·2^52: adding it rounds a float64 below 2^51 in magnitude to a whole number, held in the low
/// bits of the sum (as `whole_to_int` does for float32).
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// log2 of a positive, finite, normal float64: |x| = 2^e·m with m in [sqrt(1/2), sqrt(2)), and
/// log2 m = (2/ln 2)·atanh(s) for s = (m - 1)/(m + 1), |s| <= 0.172, by its series to s^17
/// (the next term is below 4e-14 of the sum).
#[inline(always)]
fn log2_positive(a: f64) -> f64 {
    const TWO_OVER_LN2: f64 = 2.0 / std::f64::consts::LN_2;
    const TWO_TO_52: u64 = 0x4330_0000_0000_0000;
    let bits = a.to_bits();
    // The biased exponent as a float, without an integer-to-float conversion (which AVX-512F lacks
    // for 64-bit lanes): 2^52 + E is exact, then 2^52 and the bias are subtracted.
    let biased = f64::from_bits(TWO_TO_52 | (bits >> 52)) - f64::from_bits(TWO_TO_52);
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let big = m > std::f64::consts::SQRT_2;
    let m = select(big, m * 0.5, m);
    let e = biased - select(big, 1022.0, 1023.0);
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let p =
        estrin_8(z, [1.0, 1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0, 1.0 / 11.0, 1.0 / 13.0, 1.0 / 15.0, 1.0 / 17.0]);
    e + s * p * TWO_OVER_LN2
}

/// 2^t for t in [-160, 130]: t = n + f with n whole and |f| <= 1/2 exact, and 2^f = e^(f·ln 2) by
/// its Taylor series to the 11th power (the next term is below 7e-15).
#[inline(always)]
pub(super) fn exp2_bounded(t: f64) -> f64 {
    use std::f64::consts::LN_2;
    let shifted = t + MAGIC;
    let n = shifted - MAGIC;
    let f = (t - n) * LN_2;
    let p = estrin_11(
        f,
        [
            1.0,
            1.0,
            0.5,
            1.0 / 6.0,
            1.0 / 24.0,
            1.0 / 120.0,
            1.0 / 720.0,
            1.0 / 5040.0,
            1.0 / 40_320.0,
            1.0 / 362_880.0,
            1.0 / 3_628_800.0,
            1.0 / 39_916_800.0,
        ],
    );
    // The low bits of `shifted` hold n; n + 1023 in the exponent field is 2^n (normal for these n).
    let scale = f64::from_bits(shifted.to_bits().wrapping_add(1023) << 52);
    p * scale
}

/// x^y as C's `powf`: NaN for a finite negative x and a y that is not whole; the sign of x for an
/// odd whole y; 1 for y = ±0 or x = 1 (even NaN); 1 for x = -1 and y = ±∞; ∞ or 0 from zeros and
/// infinities as their limits; NaN from any other NaN.
#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    let abs = x.abs();
    let t = (y as f64 * log2_positive(abs as f64)).clamp(-160.0, 130.0);
    let value = exp2_bounded(t) as f32;
    let whole = y == y.trunc();
    let half = y * 0.5;
    let odd = whole && half != half.trunc();
    let value = select(abs == 0.0, select(y < 0.0, f32::INFINITY, 0.0), value);
    let value = select(abs == f32::INFINITY, select(y < 0.0, 0.0, f32::INFINITY), value);
    let value = select(x.is_sign_negative() && odd, -value, value);
    let value = select(x < 0.0 && abs != f32::INFINITY && !whole, f32::NAN, value);
    let value = select(abs == 1.0 && y.is_infinite(), 1.0, value);
    let value = select(x.is_nan() || y.is_nan(), f32::NAN, value);
    select(y == 0.0 || x == 1.0, 1.0, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distance in float32 ulps (at the float64 reference's magnitude) between `got` and `exact`.
    fn ulps(got: f32, exact: f64) -> f64 {
        let reference = exact as f32;
        let ulp = if reference == 0.0 {
            f32::from_bits(1) as f64
        } else {
            (f32::from_bits(reference.abs().to_bits() + 1) - reference.abs()) as f64
        };
        (got as f64 - exact).abs() / ulp
    }

    #[test]
    fn pow_is_within_one_ulp_over_bases_and_exponents() {
        let bases = (0..4000).map(|i| f32::from_bits(0x0000_1000 + i * 532_000));
        let exponents =
            [-150.5f32, -37.0, -3.0, -1.5, -1.0, -0.5, -1e-3, 1e-7, 0.3, 1.0 / 3.0, 0.5, 1.5, 3.0, 7.25, 40.0, 151.0];
        let mut worst = (0.0, 0.0, 0.0);
        for x in bases.filter(|x| x.is_finite()) {
            for &y in &exponents {
                let exact = (x as f64).powf(y as f64);
                let distance = ulps(pow(x, y), exact);
                if exact.is_finite() && exact < f32::MAX as f64 && distance > worst.0 {
                    worst = (distance, x, y);
                }
            }
        }
        assert!(worst.0 < 0.5 + 1e-5, "pow is {} ulps off at {}^{}", worst.0, worst.1, worst.2);
    }

    #[test]
    fn pow_of_negative_bases_takes_the_sign_of_odd_exponents() {
        for x in [-0.75f32, -2.5, -1e-30, -3e20] {
            for y in [-3.0f32, -2.0, 2.0, 3.0, 5.0, 16_777_217.0] {
                let exact = (x as f64).powf(y as f64);
                assert!(ulps(pow(x, y), exact) <= 0.5 + 1e-5 || (pow(x, y) == exact as f32), "{x}^{y}");
                assert_eq!(pow(x, y).is_sign_negative(), exact.is_sign_negative(), "{x}^{y}");
            }
            assert!(pow(x, 0.5).is_nan() && pow(x, -1.5).is_nan());
        }
    }

    #[test]
    fn pow_handles_every_edge_case_as_the_c_library() {
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
            3.0,
            -3.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::MAX,
        ];
        for &x in &specials {
            for &y in &specials {
                let (got, want) = (pow(x, y), x.powf(y));
                let same = (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits();
                assert!(same, "pow({x:?}, {y:?}) = {got:?}, the C library gives {want:?}");
            }
        }
    }

    #[test]
    fn pow_underflows_and_overflows_as_the_rounded_power() {
        // Into the subnormal range, rounded once; past the range, 0 or ∞.
        for (x, y) in
            [(2.0f32, -140.5), (0.5, 149.0), (2.0, -149.0), (2.0, -150.0), (2.0, -151.0), (2.0, 128.0), (1.5, 219.0)]
        {
            let exact = (x as f64).powf(y as f64);
            assert_eq!(pow(x, y), exact as f32, "{x}^{y}");
        }
    }
}
