//! Float32 `tan`, `atan`, `atan2`, `asin` and `acos` that vectorise: Cephes' single-precision
//! polynomials, each piece computed for every lane and selected (their fused multiply-adds give the
//! same bits on every instruction set: see `vecmath`'s module doc). `tan` shares `sin`'s reduction and,
//! like it, hands elements past `TRIG_REDUCTION_LIMIT` to the C library (`map_trig`).

use super::{reduce_quarter_pi, select};

const HALF_PI: f32 = std::f32::consts::FRAC_PI_2;
const QUARTER_PI: f32 = std::f32::consts::FRAC_PI_4;
const PI: f32 = std::f32::consts::PI;
// What float32's π/2 and π miss of the real ones (π/2 - HALF_PI, in float64, rounded): added after
// the subtractions that cancel, they keep asin and acos within 2 ulps.
const HALF_PI_REST: f32 = -4.371_139e-8;
const PI_REST: f32 = -8.742_278e-8;

/// The tangent for |x| <= `TRIG_REDUCTION_LIMIT` (and NaN).
#[inline(always)]
pub fn tan(x: f32) -> f32 {
    let (j, z) = reduce_quarter_pi(x.abs());
    let zz = z * z;
    let p = 0.009385402_f32;
    let p = p.mul_add(zz, 0.0031199222);
    let p = p.mul_add(zz, 0.024430135);
    let p = p.mul_add(zz, 0.05341128);
    let p = p.mul_add(zz, 0.133388);
    let p = p.mul_add(zz, 0.33333156);
    let y = p * zz * z + z;
    // In the odd quarter-periods tan(z + π/2) = -1/tan(z).
    let value = select(j & 2 != 0, -1.0 / y, y);
    let value = select(x.is_sign_negative(), -value, value);
    select(x == 0.0 || x.is_nan(), x, value)
}

/// The arc tangent, in (-π/2, π/2).
#[inline(always)]
pub fn atan(x: f32) -> f32 {
    let abs = x.abs();
    let far = abs > 2.4142137;
    let middle = abs > 0.41421357;
    // atan(a) = π/2 + atan(-1/a) = π/4 + atan((a - 1)/(a + 1)).
    let t = select(far, -1.0 / abs, select(middle, (abs - 1.0) / (abs + 1.0), abs));
    let base = select(far, HALF_PI, select(middle, QUARTER_PI, 0.0));
    let z = t * t;
    let p = 0.080537446_f32;
    let p = p.mul_add(z, -0.13877685);
    let p = p.mul_add(z, 0.19977711);
    let p = p.mul_add(z, -0.3333295);
    let value = base + (p * z * t + t);
    let value = select(x < 0.0, -value, value);
    select(x == 0.0 || x.is_nan(), x, value)
}

/// asin(|x|) for |x| <= 1 from the polynomial; past 1/2 through asin(a) = π/2 - 2·asin(sqrt((1 - a)/2)).
#[inline(always)]
fn asin_of_abs(abs: f32) -> f32 {
    let far = abs > 0.5;
    let half_rest = 0.5 * (1.0 - abs);
    let t = select(far, half_rest.sqrt(), abs);
    let z = select(far, half_rest, abs * abs);
    let near = asin_polynomial(t, z);
    select(far, (HALF_PI - (near + near)) + HALF_PI_REST, near)
}

/// asin(t) for t in [0, 1/2], given z = t² (or what stands for it).
#[inline(always)]
fn asin_polynomial(t: f32, z: f32) -> f32 {
    let p = 0.0421632_f32;
    let p = p.mul_add(z, 0.024181312);
    let p = p.mul_add(z, 0.045470025);
    let p = p.mul_add(z, 0.074953005);
    let p = p.mul_add(z, 0.16666752);
    p * z * t + t
}

/// The arc sine, in [-π/2, π/2]; NaN outside [-1, 1].
#[inline(always)]
pub fn asin(x: f32) -> f32 {
    let abs = x.abs();
    let value = asin_of_abs(abs.min(1.0));
    let value = select(x < 0.0, -value, value);
    let value = select(abs > 1.0, f32::NAN, value);
    select(x == 0.0 || x.is_nan(), x, value)
}

/// The arc cosine, in [0, π]; NaN outside [-1, 1].
#[inline(always)]
pub fn acos(x: f32) -> f32 {
    let bounded = x.clamp(-1.0, 1.0);
    let abs = bounded.abs();
    // Past ±1/2 from the half angle, acos(x) = 2·asin(sqrt((1 - x)/2)), which keeps acos near 1
    // accurate; between them π/2 - asin(x). Either way asin's argument is at most 1/2, so one
    // polynomial serves both (asin_of_abs of either would take its near piece).
    let far = abs > 0.5;
    let t = select(far, (0.5 * (1.0 - abs)).sqrt(), abs);
    let angle = asin_polynomial(t, t * t);
    let twice = angle + angle;
    let middle = (HALF_PI - select(bounded < 0.0, -angle, angle)) + HALF_PI_REST;
    let value = select(bounded > 0.5, twice, select(bounded < -0.5, (PI - twice) + PI_REST, middle));
    select(x.abs() > 1.0 || x.is_nan(), f32::NAN, value)
}

/// The angle of the point (x, y), in [-π, π], with C's signs at zeros and infinities.
#[inline(always)]
pub fn atan2(y: f32, x: f32) -> f32 {
    let base = atan(y / x);
    // Left of the y axis (x negative, or -0) the angle is π away, on y's side.
    let half_turn = select(y.is_sign_negative(), -PI, PI);
    let half_turn_rest = select(y.is_sign_negative(), -PI_REST, PI_REST);
    let left = x.is_sign_negative();
    let value = select(left, (half_turn + base) + half_turn_rest, base);
    // On the y axis, ±π/2 exactly (π less atan's π/2 would be a rounding off).
    let on_y_axis = x == 0.0 || (y.is_infinite() && x.is_finite());
    let value = select(on_y_axis, select(y.is_sign_negative(), -HALF_PI, HALF_PI), value);
    // 0/0 and ∞/∞ made NaN of y/x: y itself or ±π at the origin, a diagonal at infinity.
    let value = select(y == 0.0 && x == 0.0, select(left, half_turn, y), value);
    let diagonal = select(left, 3.0 * QUARTER_PI, QUARTER_PI);
    let value = select(y.is_infinite() && x.is_infinite(), select(y < 0.0, -diagonal, diagonal), value);
    select(y.is_nan() || x.is_nan(), f32::NAN, value)
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_within_two_ulps;
    use super::super::TRIG_REDUCTION_LIMIT;
    use super::*;

    #[test]
    fn tan_atan_asin_and_acos_are_within_two_ulps() {
        type Case = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f32, f32);
        let cases: [Case; 4] = [
            ("tan", tan, f64::tan, -TRIG_REDUCTION_LIMIT, TRIG_REDUCTION_LIMIT),
            ("atan", atan, f64::atan, -1e4, 1e4),
            ("asin", asin, f64::asin, -1.0, 1.0),
            ("acos", acos, f64::acos, -1.0, 1.0),
        ];
        for (name, fast, exact, lo, hi) in cases {
            assert_within_two_ulps(name, fast, exact, (lo, hi), 1_000_000);
        }
    }

    #[test]
    fn atan2_is_within_two_ulps_and_has_c_s_signs() {
        let mut worst = (0.0, 0.0, 0.0);
        for i in 0..=2000 {
            for j in 0..=200 {
                let y = (i as f32 - 1000.0) / 37.0;
                let x = (j as f32 - 100.0) / 13.0 + 0.001;
                let want = (y as f64).atan2(x as f64);
                let ulp = ((want as f32).abs() as f64 * f32::EPSILON as f64).max(2f64.powi(-149));
                let err = (atan2(y, x) as f64 - want).abs() / ulp;
                if err > worst.0 {
                    worst = (err, y, x);
                }
            }
        }
        assert!(worst.0 < 2.0, "atan2: {} ulps at ({}, {})", worst.0, worst.1, worst.2);
        let special = [0.0f32, -0.0, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        for y in special {
            for x in special {
                let (got, want) = (atan2(y, x), y.atan2(x));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "atan2({y}, {x}) = {got}, want {want}"
                );
            }
        }
    }

    /// acos as it was computed before one polynomial served both pieces.
    fn acos_of_two_pieces(x: f32) -> f32 {
        let bounded = x.clamp(-1.0, 1.0);
        let abs = bounded.abs();
        let half_angle = asin_of_abs((0.5 * (1.0 - abs)).sqrt());
        let twice = half_angle + half_angle;
        let middle = asin_of_abs(abs);
        let middle = (HALF_PI - select(bounded < 0.0, -middle, middle)) + HALF_PI_REST;
        let value = select(bounded > 0.5, twice, select(bounded < -0.5, (PI - twice) + PI_REST, middle));
        select(x.abs() > 1.0 || x.is_nan(), f32::NAN, value)
    }

    #[test]
    fn acos_keeps_the_bits_of_its_two_pieces() {
        // Every float32 in [-1, 1] of every 4093rd bit pattern, both signs, every one near ±1/2
        // (where the pieces meet), and the edges.
        let edges = [0.5f32, -0.5, 1.0, -1.0, 0.0, -0.0, 1.5, f32::NAN, f32::INFINITY];
        let half = 0.5f32.to_bits();
        let near_half = (half - 4096..half + 4096).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]);
        let values = (0..=0x3f80_0000u32).step_by(4093).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]);
        let values = values.chain(near_half);
        for x in values.chain(edges) {
            let (got, want) = (acos(x), acos_of_two_pieces(x));
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "acos({x}): {got} against {want}"
            );
        }
    }

    #[test]
    fn the_edges_are_those_of_the_c_library() {
        assert_eq!(atan(f32::INFINITY), HALF_PI);
        assert_eq!(atan(f32::NEG_INFINITY), -HALF_PI);
        assert_eq!(asin(1.0), HALF_PI);
        assert_eq!(acos(-1.0), PI);
        assert_eq!(acos(1.0), 0.0);
        assert!(asin(1.5).is_nan() && acos(-1.5).is_nan());
        for f in [tan, atan, asin, acos] {
            assert!(f(f32::NAN).is_nan());
        }
        for f in [tan, atan, asin] {
            assert_eq!(f(-0.0).to_bits(), (-0.0f32).to_bits());
        }
    }
}
