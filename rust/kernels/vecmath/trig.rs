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

/// p of atan(t) = t + t·z·p(z) for t in [0, 1], z = t² (`tools/fit_atan.py`: relative error
/// below 2e-8 before rounding).
const ATAN_UNIT: [f32; 8] = [
    f32::from_bits(0xbeaaaa6e),
    f32::from_bits(0x3e4cbc7a),
    f32::from_bits(0xbe118573),
    f32::from_bits(0x3dda70c4),
    f32::from_bits(0xbd9aabc8),
    f32::from_bits(0x3d310005),
    f32::from_bits(0xbc86177e),
    f32::from_bits(0x3b3f6c36),
];

/// atan(t) for t in [0, 1], with no reduction (so no division).
#[inline(always)]
fn atan_of_unit(t: f32) -> f32 {
    let z = t * t;
    let p = ATAN_UNIT[..7].iter().rev().fold(ATAN_UNIT[7], |acc, &c| acc.mul_add(z, c));
    (t * z).mul_add(p, t)
}

/// The angle of the point (x, y), in [-π, π], with C's signs at zeros and infinities.
///
/// One division: t = min(|x|, |y|)/max(|x|, |y|) is in [0, 1], and the angle is atan(t) or π/2, π
/// less or π/2 more, by the octant; the constant and the float32 rest of its exact value are added
/// last, so the axes' angles are the nearest float32 ones.
#[inline(always)]
pub fn atan2(y: f32, x: f32) -> f32 {
    let (ay, ax) = (y.abs(), x.abs());
    let steep = ay > ax;
    let t = select(steep, ax, ay) / select(steep, ay, ax);
    // 0/0 and ∞/∞: the origin takes the angle of the x axis, the diagonals are set below.
    let angle = atan_of_unit(select(t.is_nan(), 0.0, t));
    let left = x.is_sign_negative();
    let base = select(steep, HALF_PI, select(left, PI, 0.0));
    let rest = select(steep, HALF_PI_REST, select(left, PI_REST, 0.0));
    let value = base + (rest + select(steep != left, -angle, angle));
    let diagonal = select(left, 3.0 * QUARTER_PI, QUARTER_PI);
    let value = select(ay.is_infinite() && ax.is_infinite(), diagonal, value);
    let value = select(y.is_sign_negative(), -value, value);
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
    fn atan2_is_within_one_and_a_half_ulps_and_has_c_s_signs() {
        // A grid of both signs of x and y; pairs of every (7919·1024)th bit pattern (264: subnormals
        // to 3e38); and points on either side of the diagonal, where the octants meet. Each pair
        // also with its signs flipped.
        let grid = (0..=2000)
            .flat_map(|i| (0..=200).map(move |j| ((i as f32 - 1000.0) / 37.0, (j as f32 - 100.0) / 13.0 + 0.001)));
        let patterns: Vec<f32> = (0..0x7f80_0000u32).step_by(7919 * 1024).map(f32::from_bits).collect();
        let pairs = patterns.iter().flat_map(|&y| patterns.iter().map(move |&x| (y, x)));
        let near_diagonal = (0..20_000).map(|i| (1.0 + (i as f32 - 10_000.0) * 1e-6, 1.0));
        let mut worst = (0.0, 0.0, 0.0);
        for (y, x) in grid.chain(pairs).chain(near_diagonal) {
            for (y, x) in [(y, x), (-y, x), (y, -x), (-y, -x)] {
                let want = (y as f64).atan2(x as f64);
                let ulp = ((want as f32).abs() as f64 * f32::EPSILON as f64).max(2f64.powi(-149));
                let err = (atan2(y, x) as f64 - want).abs() / ulp;
                if err > worst.0 {
                    worst = (err, y, x);
                }
            }
        }
        // 1.06 ulps at worst here (the form with three divisions before it read 1.67).
        assert!(worst.0 < 1.5, "atan2: {} ulps at ({}, {})", worst.0, worst.1, worst.2);
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
