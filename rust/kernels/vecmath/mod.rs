//! Float32 functions that vectorise: `exp`, `exp2`, `log`, `log2`, `log10`, `sin`, `cos` and
//! `tanh` here, `expm1`, `log1p`, `erf`, `erfc` and the hyperbolic functions in `special`, `tan`,
//! `atan`, `asin`, `acos` and `atan2` in `trig`, and `pow` in `pow`. Most are branch-free
//! polynomials (Cephes' and FreeBSD's coefficients, and fitted ones for `atan2`, each within 2 ulps,
//! tested); `pow`, `sinh`, `cosh`, `erf` and `erfc` compute in float64 and round once. All are
//! written so that a loop over a slice compiles to SIMD code. The C library's versions are one call per element, which made `exp` four times
//! and `sin` fifteen times slower than numpy.
//!
//! `map_f32` and the other loops of `loops` run such a function over a slice, compiled for AVX-512
//! or AVX2 when the CPU has them.
//!
//! Edge cases cost instructions in every lane: the logarithms' checks for zeros, negatives,
//! infinities, NaN and subnormals took a third of their loop. The kernel types `Ln`, `Log2`,
//! `Log10`, `Ln1p`, `Asinh`, `Acosh`, `Atanh`, `Exp`, `Exp2`, `Expm1`, `Tanh` and `Sigmoid`, and
//! `map_trig`'s, leave them out where no lane of a vector needs them, and redo a vector in full
//! where one does (`ElementFn::SPLIT`): the same bits, in less time per element
//! (docs/performance.md). The activations and `xlogy` run these common forms too.
//!
//! The polynomials take fused multiply-adds (`mul_add`: a·b + c rounded once), which made most of
//! these functions 5–18% faster than a multiply and an add. Its result is defined to the bit, so the
//! bits are the same on every CPU. Only the copies `widest_vectors!` compiles for AVX-512 or for
//! AVX2 and FMA run it as one instruction; elsewhere it is a call to `fmaf` (Rust's
//! compiler-builtins: the instruction behind a call, or an exact software version on a CPU without
//! it) per operation, several times slower. So every caller runs these functions in such a loop:
//! the ones of `loops`, or its own (the losses' blocks). Inside one, a plain `for` loop keeps them
//! there; a closure does not, when it is handed to a function that is not inlined (`collect`'s
//! `from_iter`, a helper taking a closure), and not always even when it is (a kernel handed to an
//! `#[inline(always)]` helper of the losses stayed a function of its own, called from every copy):
//! it is compiled apart, in baseline code. An x86-64 CPU
//! without AVX2 and FMA runs the baseline copies: these functions are several times slower there
//! than with a multiply and an add.

/// A kernel type for `map_f32` that computes `$full` with `ElementFn::SPLIT`: `$common` where
/// `$rare` is false (where it gives `$full`'s bits), `$full` on the rare elements.
macro_rules! split_kernel {
    ($(#[$doc:meta])* $kernel:ident: $full:expr, rare: |$v:ident| $rare:expr, common: |$c:ident| $common:expr) => {
        $(#[$doc])*
        #[derive(Copy, Clone)]
        pub struct $kernel;

        impl $crate::kernels::vecmath::ElementFn for $kernel {
            const SPLIT: bool = true;

            #[inline(always)]
            fn at(&self, v: f32) -> f32 {
                $full(v)
            }

            #[inline(always)]
            fn is_rare(&self, $v: f32) -> bool {
                $rare
            }

            #[inline(always)]
            fn common(&self, $c: f32) -> f32 {
                $common
            }
        }
    };
}

mod loops;
mod pow;
mod special;
mod trig;
pub use loops::{
    fill_chunk, fill_zip_chunk, map_f32, map_in_place_f32, map_row_f32, map_trig, simd, times_slope_f32, zip_map_f32,
    ElementFn, ElementFn2, Simd,
};
pub use pow::pow;
pub use special::{acosh, asinh, atanh, cosh, erf, erfc, expm1, ln_1p, sinh, Acosh, Asinh, Atanh, Expm1, Ln1p};
pub use trig::{acos, asin, atan, atan2, tan};

#[inline(always)]
fn select<T>(condition: bool, a: T, b: T) -> T {
    if condition {
        a
    } else {
        b
    }
}

/// The integer value of a whole float `n` with |n| < 2^22, without a float-to-int
/// conversion: Rust's saturating `as` kept these loops from vectorising.
#[inline(always)]
fn whole_to_int(n: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 · 2^23: adding it puts n in the low mantissa bits
    ((n + MAGIC).to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32)
}

/// 2^n for an integer n in [-252, 254], as the product of two normal powers of two,
/// so that results in the subnormal range are rounded once.
#[inline(always)]
fn pow2(n: i32) -> (f32, f32) {
    let half = n >> 1;
    let rest = n.wrapping_sub(half);
    let bits = |e: i32| (e.wrapping_add(127) as u32).wrapping_shl(23);
    (f32::from_bits(bits(half)), f32::from_bits(bits(rest)))
}

/// A float type that `estrin_8` and `estrin_11` evaluate polynomials in, with its fused
/// multiply-add.
trait Polynomial: Copy + std::ops::Mul<Output = Self> {
    /// `self·b + c`, rounded once.
    fn mul_add(self, b: Self, c: Self) -> Self;
}

impl Polynomial for f32 {
    #[inline(always)]
    fn mul_add(self, b: f32, c: f32) -> f32 {
        f32::mul_add(self, b, c)
    }
}

impl Polynomial for f64 {
    #[inline(always)]
    fn mul_add(self, b: f64, c: f64) -> f64 {
        f64::mul_add(self, b, c)
    }
}

/// `c[0] + c[1]·x + ... + c[8]·x^8` by Estrin's scheme: pairs, then powers x², x⁴, x⁸, so that the
/// longest chain is 4 multiply-adds deep instead of Horner's 8: loops of these functions were bound
/// by the chain's latency, not by the number of operations.
#[inline(always)]
fn estrin_8<T: Polynomial>(x: T, c: [T; 9]) -> T {
    let x2 = x * x;
    let x4 = x2 * x2;
    let pairs = [c[1].mul_add(x, c[0]), c[3].mul_add(x, c[2]), c[5].mul_add(x, c[4]), c[7].mul_add(x, c[6])];
    let quads = [pairs[1].mul_add(x2, pairs[0]), pairs[3].mul_add(x2, pairs[2])];
    c[8].mul_add(x4 * x4, quads[1].mul_add(x4, quads[0]))
}

/// `c[0] + c[1]·x + ... + c[11]·x^11` by Estrin's scheme (see `estrin_8`).
#[inline(always)]
fn estrin_11<T: Polynomial>(x: T, c: [T; 12]) -> T {
    let x2 = x * x;
    let x4 = x2 * x2;
    let pairs = [
        c[1].mul_add(x, c[0]),
        c[3].mul_add(x, c[2]),
        c[5].mul_add(x, c[4]),
        c[7].mul_add(x, c[6]),
        c[9].mul_add(x, c[8]),
        c[11].mul_add(x, c[10]),
    ];
    let quads = [pairs[1].mul_add(x2, pairs[0]), pairs[3].mul_add(x2, pairs[2]), pairs[5].mul_add(x2, pairs[4])];
    quads[2].mul_add(x4 * x4, quads[1].mul_add(x4, quads[0]))
}

// ln 2 in two parts: the first has few bits, so n·LN2_HI is exact for the n of `exp`'s range
// (and for a logarithm's exponent).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// The whole n nearest x / ln 2, as a float.
#[inline(always)]
fn nearest_multiple_of_ln2(x: f32) -> f32 {
    (x * std::f32::consts::LOG2_E + 0.5).floor()
}

/// x - n·ln 2, with n·LN2_HI subtracted exactly first (Cody and Waite's reduction).
#[inline(always)]
fn minus_multiple_of_ln2(x: f32, n: f32) -> f32 {
    x - n * LN2_HI - n * LN2_LO
}

/// e^x.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let value = exp_within_range(x.clamp(-104.0, 89.0));
    let value = select(x > 88.722_84, f32::INFINITY, value);
    let value = select(x < -103.972_08, 0.0, value);
    select(x.is_nan(), x, value)
}

/// `exp` for x in [-104, 89], where none of its edges applies but at the ends.
#[inline(always)]
fn exp_within_range(x: f32) -> f32 {
    let n = nearest_multiple_of_ln2(x);
    let r = minus_multiple_of_ln2(x, n);
    let p = 1.987_569_1e-4_f32;
    let p = p.mul_add(r, 1.398_2e-3);
    let p = p.mul_add(r, 8.333_452e-3);
    let p = p.mul_add(r, 4.166_579_6e-2);
    let p = p.mul_add(r, 1.666_666_5e-1);
    let p = p.mul_add(r, 0.5);
    let p = p * r * r + r + 1.0;
    let (a, b) = pow2(whole_to_int(n));
    p * a * b
}

split_kernel! {
    /// `exp`: within [-103, 88] (and not NaN) it needs none of its edges.
    Exp: exp, rare: |v| !(-103.0..=88.0).contains(&v), common: |v| exp_within_range(v)
}

/// x = 2^e·(1 + m) with 1 + m in [sqrt(1/2), sqrt(2)), and the pieces of ln(1 + m) - m that the
/// logarithms share: z = m² and m·z·p(m) (Cephes' polynomial).
struct LogParts {
    e: f32,
    m: f32,
    z: f32,
    mzp: f32,
}

#[inline(always)]
fn log_parts(x: f32) -> LogParts {
    // Subnormal inputs are scaled into the normal range first.
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = select(subnormal, x * 8_388_608.0, x);
    log_parts_of_normal(scaled, select(subnormal, 23, 0))
}

/// Whether x is a positive normal float32, for which the logarithms need none of their edges.
#[inline(always)]
fn positive_normal(x: f32) -> bool {
    (f32::MIN_POSITIVE..=f32::MAX).contains(&x)
}

/// `log_parts` of a normal `x` that is the input times 2^`scaled_by`.
#[inline(always)]
fn log_parts_of_normal(x: f32, scaled_by: i32) -> LogParts {
    const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
    let bits = x.to_bits();
    let exponent = ((bits >> 23) & 0xff) as i32 - 126 - scaled_by;
    // The mantissa in [0.5, 1), then moved to [sqrt(1/2), sqrt(2)).
    let m = f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000);
    let small = m < SQRT_HALF;
    let e = (exponent - small as i32) as f32;
    let m = select(small, m + m, m) - 1.0;
    let z = m * m;
    let p = estrin_8(
        m,
        [
            3.333_333e-1,
            -2.499_999_4e-1,
            2.000_071_4e-1,
            -1.666_805_8e-1,
            1.424_932_3e-1,
            -1.242_014_1e-1,
            1.167_699_9e-1,
            -1.151_461e-1,
            7.037_683_6e-2,
        ],
    );
    LogParts { e, m, z, mzp: m * z * p }
}

/// A logarithm's value at x, given its value for positive finite x: ∞ at ∞, -∞ at 0, NaN below.
#[inline(always)]
fn log_edges(x: f32, value: f32) -> f32 {
    let value = select(x == f32::INFINITY, x, value);
    let value = select(x == 0.0, f32::NEG_INFINITY, value);
    select(x < 0.0 || x.is_nan(), f32::NAN, value)
}

/// The natural logarithm.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    log_edges(x, ln_of(log_parts(x)))
}

/// `ln(x)` for a positive normal x, without the edges.
#[inline(always)]
fn ln_of_positive_normal(x: f32) -> f32 {
    ln_of(log_parts_of_normal(x, 0))
}

#[inline(always)]
fn ln_of(LogParts { e, m, z, mzp }: LogParts) -> f32 {
    let y = mzp + e * LN2_LO - 0.5 * z;
    m + y + e * LN2_HI
}

/// The base-2 logarithm: Cephes' sum, which adds the integer exponent last (exact for powers of 2).
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    log_edges(x, log2_of(log_parts(x)))
}

#[inline(always)]
fn log2_of(LogParts { e, m, z, mzp }: LogParts) -> f32 {
    const LOG2E_MINUS_ONE: f32 = 0.442_695_04;
    let y = mzp - 0.5 * z;
    y * LOG2E_MINUS_ONE + m * LOG2E_MINUS_ONE + y + m + e
}

/// The base-10 logarithm: Cephes' sum, with log10(e) and log10(2) each in two parts.
#[inline(always)]
pub fn log10(x: f32) -> f32 {
    log_edges(x, log10_of(log_parts(x)))
}

#[inline(always)]
fn log10_of(LogParts { e, m, z, mzp }: LogParts) -> f32 {
    const LOG10E_HI: f32 = 4.335_937_5e-1;
    const LOG10E_LO: f32 = 7.007_319e-4;
    const LOG10_2_HI: f32 = 3.007_812_5e-1;
    const LOG10_2_LO: f32 = 2.487_456_7e-4;
    let y = mzp - 0.5 * z;
    y * LOG10E_LO + m * LOG10E_LO + e * LOG10_2_LO + y * LOG10E_HI + m * LOG10E_HI + e * LOG10_2_HI
}

split_kernel! {
    /// `ln` without its edges on positive normal elements.
    Ln: ln, rare: |v| !positive_normal(v), common: |v| ln_of(log_parts_of_normal(v, 0))
}
split_kernel! {
    /// `log2` without its edges on positive normal elements.
    Log2: log2, rare: |v| !positive_normal(v), common: |v| log2_of(log_parts_of_normal(v, 0))
}
split_kernel! {
    /// `log10` without its edges on positive normal elements.
    Log10: log10, rare: |v| !positive_normal(v), common: |v| log10_of(log_parts_of_normal(v, 0))
}

/// 2^x: x = n + r with |r| <= 1/2 exact, Cephes' polynomial for 2^r.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    let value = exp2_within_range(x.clamp(-151.0, 129.0));
    let value = select(x >= 128.0, f32::INFINITY, value);
    let value = select(x < -151.0, 0.0, value);
    select(x.is_nan(), x, value)
}

/// `exp2` for x in [-151, 129], where none of its edges applies but at the ends.
#[inline(always)]
fn exp2_within_range(x: f32) -> f32 {
    let n = (x + 0.5).floor();
    let r = x - n;
    let p = 1.535_336_2e-4_f32;
    let p = p.mul_add(r, 1.339_887_4e-3);
    let p = p.mul_add(r, 9.618_437e-3);
    let p = p.mul_add(r, 5.550_332_5e-2);
    let p = p.mul_add(r, 2.402_264_8e-1);
    let p = p.mul_add(r, 6.931_472e-1);
    let (a, b) = pow2(whole_to_int(n));
    (p * r + 1.0) * a * b
}

split_kernel! {
    /// `exp2`: within [-150, 127] (and not NaN) it needs none of its edges.
    Exp2: exp2, rare: |v| !(-150.0..=127.0).contains(&v), common: |v| exp2_within_range(v)
}

/// |x| beyond which `sin` and `cos` hand over to the C library: up to here the float64
/// reduction by π/4 keeps them within 1 ulp; past it the error near their zeros grows.
pub const TRIG_REDUCTION_LIMIT: f32 = 1024.0;

/// The quadrant reduction shared by `sin` and `cos`: `(j, z)` with x = j·π/4 + z, j even.
/// The subtraction runs in float64: in float32, even with π/4 split in three parts as
/// Cephes does, it lost up to 34 ulps near the zeros of sin past |x| = 256. π/4 in
/// float64 is off by 3e-17, which at |x| <= `TRIG_REDUCTION_LIMIT` moves z by less
/// than 1e-13.
#[inline(always)]
fn reduce_quarter_pi(abs: f32) -> (i32, f32) {
    const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
    const QUARTER_PI: f64 = std::f64::consts::FRAC_PI_4;
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52: see `whole_to_int`
    let bounded = abs.min(TRIG_REDUCTION_LIMIT) as f64;
    // The multiple of π/4 at or above x·4/π, rounded up to even.
    let y = (bounded * TWO_OVER_PI + 0.5).floor() * 2.0;
    let j = (y + MAGIC).to_bits() as i32;
    (j, (bounded - y * QUARTER_PI) as f32)
}

#[inline(always)]
fn sin_poly(z: f32) -> f32 {
    let zz = z * z;
    let p = -1.951_529_6e-4_f32;
    let p = p.mul_add(zz, 8.332_161e-3);
    let p = p.mul_add(zz, -1.666_665_5e-1);
    p * zz * z + z
}

#[inline(always)]
fn cos_poly(z: f32) -> f32 {
    let zz = z * z;
    let p = 2.443_315_7e-5_f32;
    let p = p.mul_add(zz, -1.388_731_6e-3);
    let p = p.mul_add(zz, 4.166_664_6e-2);
    p * zz * zz - 0.5 * zz + 1.0
}

/// The sine for |x| <= `TRIG_REDUCTION_LIMIT` (and NaN); `map_trig` fixes the rest.
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    let (j, z) = reduce_quarter_pi(x.abs());
    let octant = j & 7;
    let value = select(octant & 2 != 0, cos_poly(z), sin_poly(z));
    let negative = (octant & 4 != 0) != x.is_sign_negative();
    let value = select(negative, -value, value);
    // The reduction's `min` turned NaN into the limit.
    select(x.is_nan(), x, value)
}

/// The cosine for |x| <= `TRIG_REDUCTION_LIMIT` (and NaN); `map_trig` fixes the rest.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    let (j, z) = reduce_quarter_pi(x.abs());
    let octant = j & 7;
    let value = select(octant & 2 != 0, sin_poly(z), cos_poly(z));
    let negative = ((octant + 2) & 4) != 0;
    let value = select(negative, -value, value);
    select(x.is_nan(), x, value)
}

/// The hyperbolic tangent: a polynomial near 0 (where 1 - 2/(e^2x + 1) would cancel).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let value = tanh_of(x, exp(x.abs() + x.abs()));
    // ±0 keep their sign, as the C library's tanh does.
    select(x == 0.0, x, value)
}

/// tanh(x) given e^2|x|.
#[inline(always)]
fn tanh_of(x: f32, exp_of_twice: f32) -> f32 {
    let abs = x.abs();
    let z = x * x;
    let p = -5.704_988_7e-3_f32;
    let p = p.mul_add(z, 2.063_909e-2);
    let p = p.mul_add(z, -5.373_971_6e-2);
    let p = p.mul_add(z, 1.333_144_2e-1);
    let p = p.mul_add(z, -3.333_328e-1);
    let near_zero = p * z * x + x;
    let far = 1.0 - 2.0 / (exp_of_twice + 1.0);
    let far = select(x < 0.0, -far, far);
    select(abs < 0.625 || x.is_nan(), near_zero, far)
}

split_kernel! {
    /// `tanh`: for 0 < |x| <= 44, e^2|x| needs none of exp's edges.
    Tanh: tanh,
    rare: |v| v.is_nan() || v.abs() > 44.0 || v == 0.0,
    common: |v| tanh_of(v, exp_within_range(v.abs() + v.abs()))
}

/// The logistic function 1/(1 + e^-x).
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

split_kernel! {
    /// `sigmoid`: within [-88, 103] (and not NaN) e^-x needs none of exp's edges.
    Sigmoid: sigmoid, rare: |v| !(-88.0..=103.0).contains(&v), common: |v| 1.0 / (1.0 + exp_within_range(-v))
}

#[cfg(test)]
mod tests;
