//! Float32 `expm1`, `log1p`, `erf`, `erfc` and the hyperbolic functions, written as branch-free
//! arithmetic on top of `exp` and `ln` (`sinh`, `cosh`, `erf` and `erfc` on the float64 2^x of
//! `pow`, rounded once) so that a loop over a slice compiles to SIMD code. The C library's versions
//! were one call per element: 2 to 28 times numpy's time, and `gelu` (through `erfc`) 6 ms per
//! million elements (`benchmarks/special_functions.py`).
//!
//! Every piece is computed for every lane and the lane's piece is selected, so there is no branch
//! to keep the loop scalar. Fused multiply-adds are written as such, and round once on every
//! instruction set (see `vecmath`), so the bits are the same vectorised or not. The tests below
//! bound each function's error in ulps against the float64 functions.

use super::pow::exp2_bounded;
use super::{estrin_11, estrin_8, ln, minus_multiple_of_ln2, nearest_multiple_of_ln2, pow2, select, whole_to_int};

/// e^x - 1, accurate for small x (where e^x rounds to 1).
///
/// x = n·ln 2 + r with |r| <= ln2/2; then e^x - 1 = 2^n·(expm1(r) + 1 - 2^-n), where 1 - 2^-n is
/// exact for the n used here and expm1(r) is a Taylor polynomial. n is kept at or above -24: below,
/// the result rounds to -1 anyway, and r grows only where it no longer matters.
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    let value = expm1_within_range(x.clamp(-18.0, 89.0));
    let value = select(x > 88.722_84, f32::INFINITY, value);
    // e^x < 2^-25 rounds away against -1.
    let value = select(x < -17.4, -1.0, value);
    // ±0 keep their sign (the reduction's subtractions made -0 into +0), and NaN stays NaN.
    select(x == 0.0 || x.is_nan(), x, value)
}

/// `expm1` for x in [-18, 89], where none of its edges applies but at the ends and at 0.
#[inline(always)]
fn expm1_within_range(x: f32) -> f32 {
    let n = nearest_multiple_of_ln2(x).max(-24.0);
    let r = minus_multiple_of_ln2(x, n);
    let p = 1.0 / 40320.0_f32;
    let p = p.mul_add(r, 1.0 / 5040.0);
    let p = p.mul_add(r, 1.0 / 720.0);
    let p = p.mul_add(r, 1.0 / 120.0);
    let p = p.mul_add(r, 1.0 / 24.0);
    let p = p.mul_add(r, 1.0 / 6.0);
    let p = p.mul_add(r, 0.5);
    let small = p * r * r + r;
    let k = whole_to_int(n);
    // 1 - 2^-n; past n = 30 it rounds to 1, as 1 - 2^-n does.
    let inverse = f32::from_bits(((127 - k.min(30)) as u32) << 23);
    let (a, b) = pow2(k);
    (small + (1.0 - inverse)) * a * b
}

split_kernel! {
    /// `expm1`: within [-17, 88] but 0 it needs none of its edges.
    Expm1: expm1, rare: |v| !(-17.0..=88.0).contains(&v) || v == 0.0, common: |v| expm1_within_range(v)
}

/// ln(1 + x), accurate for small x: ln(u) for u = 1 + x rounded, plus the rounding's share.
///
/// With c = x - (u - 1) the part of x that the rounding of 1 + x dropped (exact for |x| <= 1),
/// ln(1 + x) = ln(u) + ln(1 + c/u) ≈ ln(u) + c/u.
#[inline(always)]
pub fn ln_1p(x: f32) -> f32 {
    ln_1p_with(x, ln)
}

#[inline(always)]
fn ln_1p_with(x: f32, log: impl Fn(f32) -> f32) -> f32 {
    let (u, dropped) = one_plus_and_dropped(x);
    let log_u = log(u);
    let value = log_u + dropped / u;
    // u = 0 (x = -1) and u = ∞ make 0/0 and ∞ - ∞ of the correction; ln(u) alone is right there.
    let value = select(u == 0.0 || u == f32::INFINITY, log_u, value);
    select(x == 0.0 || x.is_nan(), x, value)
}

split_kernel! {
    /// `ln_1p`: for x in (-1, ∞) but 0, 1 + x is a positive normal float32 whose logarithm needs
    /// none of its edges, and neither does the correction.
    Ln1p: ln_1p,
    rare: |v| !(v > -1.0 && v <= f32::MAX) || v == 0.0,
    common: |v| {
        let (u, dropped) = one_plus_and_dropped(v);
        super::ln_of_positive_normal(u) + dropped / u
    }
}

/// 1 + x rounded, and the part of x that the rounding dropped (exact for |x| <= 1).
#[inline(always)]
fn one_plus_and_dropped(x: f32) -> (f32, f32) {
    let one_plus = 1.0 + x;
    (one_plus, x - (one_plus - 1.0))
}

/// The hyperbolic sine, in float64 and rounded once: (e^|x| - e^-|x|)/2, and below 1/16, where
/// that difference would cancel, its Taylor series.
#[inline(always)]
pub fn sinh(x: f32) -> f32 {
    let a = x.abs() as f64;
    let e = exp_of_abs(a);
    let far = 0.5 * (e - 1.0 / e);
    let z = a * a;
    let near = a + a * z * (1.0 / 6.0 + z * (1.0 / 120.0 + z * (1.0 / 5040.0)));
    let value = select(a < 0.0625, near, far) as f32;
    let value = select(x.is_sign_negative(), -value, value);
    select(x.is_nan(), x, value)
}

/// The hyperbolic cosine, in float64 and rounded once: (e^|x| + e^-|x|)/2.
#[inline(always)]
pub fn cosh(x: f32) -> f32 {
    let e = exp_of_abs(x.abs() as f64);
    let value = (0.5 * (e + 1.0 / e)) as f32;
    select(x.is_nan(), x.abs(), value)
}

/// e^a for a >= 0 in float64, up to 2^130 (whose half still overflows float32).
#[inline(always)]
fn exp_of_abs(a: f64) -> f64 {
    exp2_bounded((a * std::f64::consts::LOG2_E).min(130.0))
}

/// ln(1 + u) where `near` (as `ln_1p`), else ln(w) + add: one `ln` (`log`) for the lanes of
/// both, as the inverse hyperbolic functions' pieces need.
#[inline(always)]
fn ln_1p_or_ln(near: bool, u: f32, w: f32, add: f32, log: impl Fn(f32) -> f32) -> f32 {
    let (one_plus, dropped) = one_plus_and_dropped(u);
    let log = log(select(near, one_plus, w));
    select(near, log + dropped / one_plus, log + add)
}

// The inverse hyperbolic functions take a logarithm of a positive normal float32 where they are
// not rare, so it runs without its edges.
split_kernel! {
    /// `asinh`: 1 + near and the far pieces are at least 1 for finite x.
    Asinh: asinh, rare: |v| !v.is_finite(), common: |v| asinh_with(v, super::ln_of_positive_normal)
}
split_kernel! {
    /// `acosh`: its pieces are at least 1 for x in [1, ∞).
    Acosh: acosh,
    rare: |v| !(1.0..=f32::MAX).contains(&v),
    common: |v| acosh_with(v, super::ln_of_positive_normal)
}
split_kernel! {
    /// `atanh`: its `ln_1p` is of a positive finite number for 0 < |x| < 1.
    Atanh: atanh,
    rare: |v| v.is_nan() || v.abs() >= 1.0 || v == 0.0,
    common: |v| atanh_with(v, super::ln_of_positive_normal)
}

/// The inverse hyperbolic sine: log1p(|x| + x²/(1 + sqrt(1 + x²))) near 0, ln(2|x| + 1/(...))
/// above 2, ln|x| + ln 2 from 4096 (where x² would overflow or 1 would vanish).
#[inline(always)]
pub fn asinh(x: f32) -> f32 {
    asinh_with(x, ln)
}

#[inline(always)]
fn asinh_with(x: f32, log: impl Fn(f32) -> f32) -> f32 {
    let abs = x.abs();
    let bounded = abs.min(4096.0);
    let square = bounded * bounded;
    let root = (square + 1.0).sqrt();
    let near = bounded + square / (1.0 + root);
    let mid = bounded + bounded + 1.0 / (root + bounded);
    let far = abs >= 4096.0;
    let value = ln_1p_or_ln(abs <= 2.0, near, select(far, abs, mid), select(far, std::f32::consts::LN_2, 0.0), log);
    let value = select(x < 0.0, -value, value);
    select(abs == 0.0 || x.is_nan(), x, value)
}

/// The inverse hyperbolic cosine; NaN below 1.
#[inline(always)]
pub fn acosh(x: f32) -> f32 {
    acosh_with(x, ln)
}

#[inline(always)]
fn acosh_with(x: f32, log: impl Fn(f32) -> f32) -> f32 {
    let bounded = x.clamp(1.0, 4096.0);
    let t = bounded - 1.0;
    let near = t + (t + t + t * t).sqrt();
    let mid = bounded + bounded - 1.0 / (bounded + (bounded * bounded - 1.0).sqrt());
    let far = x >= 4096.0;
    let value = ln_1p_or_ln(x <= 2.0, near, select(far, x, mid), select(far, std::f32::consts::LN_2, 0.0), log);
    select(x < 1.0 || x.is_nan(), f32::NAN, value)
}

/// The inverse hyperbolic tangent: ±∞ at ±1, NaN past them.
#[inline(always)]
pub fn atanh(x: f32) -> f32 {
    atanh_with(x, ln)
}

/// `atanh` with its `ln_1p` taking `log`'s logarithm; where the argument of that is a positive
/// normal float32 (0 < |x| < 1), `ln_1p`'s own edges do not arise.
#[inline(always)]
fn atanh_with(x: f32, log: impl Fn(f32) -> f32) -> f32 {
    let abs = x.abs();
    let twice = abs + abs;
    let rest = 1.0 - abs;
    let value = 0.5 * ln_1p_with(select(abs < 0.5, twice + twice * abs / rest, twice / rest), log);
    let value = select(abs == 1.0, f32::INFINITY, value);
    let value = select(x < 0.0, -value, value);
    let value = select(abs > 1.0, f32::NAN, value);
    select(abs == 0.0 || x.is_nan(), x, value)
}

/// q of erfc(a) = e^(-a²)·t·q(t) for a >= 0 and t = 2/(2 + a) (`tools/fit_erfc.py`: relative
/// error below 4e-9 on [0, 10.5]), with a zero for `estrin_11`'s twelfth coefficient.
const ERFC_SCALED: [f64; 12] = [
    f64::from_bits(0x3fd20dbfcc81d7ac),
    f64::from_bits(0x3fd2102b21155e93),
    f64::from_bits(0x3fcf672894c591fd),
    f64::from_bits(0x3fc7a4502100ac96),
    f64::from_bits(0x3fadbd683e09951e),
    f64::from_bits(0x3f9c79b75ac24618),
    f64::from_bits(0xbf844be791e80ba6),
    f64::from_bits(0xbfd3583e758c16dc),
    f64::from_bits(0x3fd8f3fef30f7283),
    f64::from_bits(0xbfc8deb0a2378ee6),
    f64::from_bits(0x3fa2983a714ed6e3),
    0.0,
];

/// erf(x)/x = (2/√π)·Σ (-z)^n/(n!·(2n + 1)) for z = x², to z^8: for |x| < 1/2 the next term is
/// below 1e-12 of the sum.
const ERF_SERIES: [f64; 9] = {
    use std::f64::consts::FRAC_2_SQRT_PI as K;
    [K, -K / 3.0, K / 10.0, -K / 42.0, K / 216.0, -K / 1320.0, K / 9360.0, -K / 75_600.0, K / 685_440.0]
};

/// erfc(a) for a >= 0 in float64, within a relative 4e-9; past 10.5, where float32's erfc is 0, that
/// of 10.5 (below 1e-49). a² is exact in float64, and 2^(-a²·log2 e) is `pow`'s.
#[inline(always)]
fn erfc_of_abs(a: f64) -> f64 {
    let a = a.min(10.5);
    let t = 2.0 / (2.0 + a);
    exp2_bounded(-(a * a) * std::f64::consts::LOG2_E) * t * estrin_11(t, ERFC_SCALED)
}

/// The complementary error function 1 - erf(x), in float64 and rounded once: within 0.5 ulps and a
/// few hundredths, also where it is small (x large).
#[inline(always)]
pub fn erfc(x: f32) -> f32 {
    let e = erfc_of_abs(x.abs() as f64);
    let value = select(x < 0.0, 2.0 - e, e) as f32;
    select(x.is_nan(), x, value)
}

/// The error function, in float64 and rounded once: its series near 0 (so that erf(x) keeps x's
/// relative accuracy, subnormals and -0 included), 1 - erfc(|x|) from 1/2.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let w = x as f64;
    let near = w * estrin_8(w * w, ERF_SERIES);
    let far = 1.0 - erfc_of_abs(w.abs());
    let value = select(x.abs() < 0.5, near, select(x < 0.0, -far, far)) as f32;
    select(x.is_nan(), x, value)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_within_two_ulps, sweep, worst_ulps};
    use super::*;

    #[test]
    fn expm1_is_within_two_ulps_and_handles_the_edges() {
        let points = sweep(-20.0, 88.7, 600_000).chain(sweep(-1e-3, 1e-3, 100_000)).chain(sweep(-1.0, 1.0, 200_000));
        let (err, at) = worst_ulps(points, expm1, f64::exp_m1);
        assert!(err < 2.0, "expm1: {err} ulps at {at}");
        assert_eq!(expm1(89.0), f32::INFINITY);
        assert_eq!(expm1(f32::INFINITY), f32::INFINITY);
        assert_eq!(expm1(f32::NEG_INFINITY), -1.0);
        assert_eq!(expm1(-30.0), -1.0);
        assert_eq!(expm1(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(expm1(1e-30), 1e-30);
        assert!(expm1(f32::NAN).is_nan());
    }

    #[test]
    fn ln_1p_is_within_two_ulps_and_handles_the_edges() {
        let points = sweep(-0.999, 10.0, 400_000).chain(sweep(-1e-3, 1e-3, 100_000)).chain(sweep(1.0, 1e30, 100_000));
        let (err, at) = worst_ulps(points, ln_1p, f64::ln_1p);
        assert!(err < 2.0, "ln_1p: {err} ulps at {at}");
        assert_eq!(ln_1p(-1.0), f32::NEG_INFINITY);
        assert_eq!(ln_1p(f32::INFINITY), f32::INFINITY);
        assert!(ln_1p(-2.0).is_nan() && ln_1p(f32::NAN).is_nan());
        assert_eq!(ln_1p(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(ln_1p(1e-30), 1e-30);
    }

    #[test]
    fn hyperbolic_functions_are_within_two_ulps() {
        type Pair = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f32, f32);
        let cases: [Pair; 5] = [
            ("sinh", sinh, f64::sinh, -89.4, 89.4),
            ("cosh", cosh, f64::cosh, -89.4, 89.4),
            ("asinh", asinh, f64::asinh, -1e6, 1e6),
            ("acosh", acosh, f64::acosh, 1.0, 1e6),
            ("atanh", atanh, f64::atanh, -0.9999, 0.9999),
        ];
        for (name, fast, exact, lo, hi) in cases {
            assert_within_two_ulps(name, fast, exact, (lo, hi), 400_000);
        }
        assert_eq!(sinh(90.0), f32::INFINITY);
        assert_eq!(sinh(f32::NEG_INFINITY), f32::NEG_INFINITY);
        assert_eq!(cosh(f32::NEG_INFINITY), f32::INFINITY);
        assert_eq!(asinh(f32::NEG_INFINITY), f32::NEG_INFINITY);
        assert_eq!(acosh(f32::INFINITY), f32::INFINITY);
        assert_eq!(atanh(-1.0), f32::NEG_INFINITY);
        assert!(acosh(0.5).is_nan() && atanh(1.5).is_nan());
        for f in [sinh, asinh, atanh] {
            assert_eq!(f(-0.0).to_bits(), (-0.0f32).to_bits());
            assert!(f(f32::NAN).is_nan());
        }
        assert!(cosh(f32::NAN).is_nan() && acosh(f32::NAN).is_nan());
    }

    #[test]
    fn sinh_and_cosh_are_rounded_once_from_float64() {
        // Within half an ulp but for the float64 error (1e-13 at most): the nearest float32 but in
        // the rare ties; the sweeps cross sinh's switch to its series at 1/16.
        let points = || sweep(-89.4, 89.4, 400_000).chain(sweep(-0.2, 0.2, 200_000)).chain(sweep(-1e-6, 1e-6, 1000));
        for (name, fast, exact) in
            [("sinh", sinh as fn(f32) -> f32, f64::sinh as fn(f64) -> f64), ("cosh", cosh, f64::cosh)]
        {
            let (err, at) = worst_ulps(points(), fast, exact);
            assert!(err < 0.5 + 1e-5, "{name}: {err} ulps at {at}");
        }
    }

    #[test]
    fn erf_and_erfc_are_rounded_once_from_float64() {
        // Within half an ulp but for the float64 error (4e-9 relative at most, under 0.04 ulps): the
        // sweeps cross erf's switch from its series at 1/2, and erfc's underflow to 0 past 10.05.
        let points = || {
            let near_switch =
                [0.5f32, -0.5].into_iter().flat_map(|h| (0..4000).map(move |i| f32::from_bits(h.to_bits() - 2000 + i)));
            sweep(-6.0, 6.0, 600_000).chain(sweep(-1e-3, 1e-3, 50_000)).chain(near_switch)
        };
        let (err, at) = worst_ulps(points(), erf, libm::erf);
        assert!(err < 0.5 + 0.05, "erf: {err} ulps at {at}");
        let (err, at) = worst_ulps(points().chain(sweep(-10.6, 10.6, 400_000)), erfc, libm::erfc);
        assert!(err < 0.5 + 0.05, "erfc: {err} ulps at {at}");
        assert_eq!(erfc(f32::INFINITY), 0.0);
        assert_eq!(erfc(f32::NEG_INFINITY), 2.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf(1e-40), libm::erff(1e-40));
        assert_eq!(erf(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(erf(f32::NAN).is_nan() && erfc(f32::NAN).is_nan());
    }
}
