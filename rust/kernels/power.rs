//! Powers of one number type: `x ** s` with the exponent's case (`PowCase`) chosen once before the
//! loop, and float32's general power (`vecmath::pow`) in the CPU's widest vectors.

use super::elementwise::{map, map_in_place, ScalarOp};
use super::{float32, vecmath};
use crate::dtype::{DType, Number};

/// How `v^p` is computed for an exponent `p`: exactly, or from float64, for the common small ones
/// (numpy's fast paths are 2, 1, 0.5 and -1; torch's also 3 and -2).
#[derive(Copy, Clone)]
enum PowCase {
    /// `v·v` (squares are common in losses).
    Square,
    Itself,
    /// As numpy and PyTorch: x ** 0.5 is sqrt(x), so (-inf) ** 0.5 is NaN, not +inf.
    /// (A square root rounded from f64 is the correctly rounded f32 one.)
    SquareRoot,
    /// Float32 only: the cube in float64 (rounded once there, from up to 72 bits) rounded to
    /// float32, so the nearest float32 but in rare ties. Float64 keeps `powf`, which is correctly
    /// rounded where `w·w·w` is not.
    Cube,
    /// `1/v`, floats only (one division, correctly rounded).
    Reciprocal,
    /// `1/v²`, float32 only, from float64 as `Cube` (in float64, `v·v` would overflow or lose bits
    /// where the result does not).
    InverseSquare,
    General,
}

fn pow_case<T: Number>(p: T) -> PowCase {
    let float = T::DTYPE.is_float();
    let float32 = T::DTYPE == DType::F32;
    match p.to_f64() {
        2.0 => PowCase::Square,
        1.0 => PowCase::Itself,
        0.5 if float => PowCase::SquareRoot,
        3.0 if float32 => PowCase::Cube,
        -1.0 if float => PowCase::Reciprocal,
        -2.0 if float32 => PowCase::InverseSquare,
        _ => PowCase::General,
    }
}

#[inline(always)]
fn pow_in_case<T: Number>(case: PowCase, v: T, p: T) -> T {
    match case {
        PowCase::Square => v.times(v),
        PowCase::Itself => v,
        PowCase::SquareRoot => T::from_f64(v.to_f64().sqrt()),
        PowCase::Cube => {
            let w = v.to_f64();
            T::from_f64(w * w * w)
        }
        PowCase::Reciprocal => T::ONE.quotient(v),
        PowCase::InverseSquare => {
            let w = v.to_f64();
            T::from_f64(1.0 / (w * w))
        }
        PowCase::General => power(v, p),
    }
}

/// `v^p`: float32's is `vecmath::pow` (so a power has the same bits in every loop, vectorised or
/// not), other types' is `Number::power`.
#[inline(always)]
pub(super) fn power<T: Number>(v: T, p: T) -> T {
    match (float32::to_f32(v), float32::to_f32(p)) {
        (Some(v), Some(p)) => float32::from_f32(vecmath::pow(v, p)).unwrap_or(T::ZERO),
        _ => v.power(p),
    }
}

/// `vecmath::pow` with a fixed exponent, as a kernel type (see `vecmath::ElementFn`).
struct RaisedTo(f32);

impl vecmath::ElementFn for RaisedTo {
    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        vecmath::pow(v, self.0)
    }
}

/// `vecmath::pow` with a fixed base.
struct PowerOf(f32);

impl vecmath::ElementFn for PowerOf {
    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        vecmath::pow(self.0, v)
    }
}

/// `x ** s` (`Pow`) or `s ** x` (`RPow`) over float32 in the CPU's widest vectors, when `T` is
/// f32 and the power has no case of its own (`PowCase`); `None` otherwise.
pub(super) fn float32_power<T: Number>(op: ScalarOp, x: &[T], s: T) -> Option<Vec<T>> {
    let (x, s) = (float32::as_f32(x)?, float32::to_f32(s)?);
    let out = match op {
        ScalarOp::Pow if matches!(pow_case(s), PowCase::General) => vecmath::map_f32(x, RaisedTo(s)),
        ScalarOp::RPow => vecmath::map_f32(x, PowerOf(s)),
        _ => return None,
    };
    float32::vec_from_f32(out)
}

/// `float32_power` in place; false (nothing written) where it returns `None`.
pub(super) fn float32_power_in_place<T: Number>(op: ScalarOp, x: &mut [T], s: T) -> bool {
    let (Some(x), Some(s)) = (float32::as_f32_mut(x), float32::to_f32(s)) else {
        return false;
    };
    match op {
        ScalarOp::Pow if matches!(pow_case(s), PowCase::General) => vecmath::map_in_place_f32(x, RaisedTo(s)),
        ScalarOp::RPow => vecmath::map_in_place_f32(x, PowerOf(s)),
        _ => return false,
    }
    true
}

/// `v^p`, exact for the small exponents of `PowCase`: one element as the loops compute it
/// (their tests compare against it).
#[cfg(test)]
pub(super) fn pow_scalar<T: Number>(v: T, p: T) -> T {
    pow_in_case(pow_case(p), v, p)
}

/// `each(f)` with `f` the power `p` of one element, its case chosen once, before the loop that
/// `each` runs: with the test inside the loop, `x ** 2` was a scalar loop (5.7–7.0× numpy's time
/// at 1M floats, `benchmarks/special_functions.py`). Each element gets `pow_scalar`'s expression,
/// so its bits.
macro_rules! with_pow_case {
    ($p:expr, |$f:ident| $each:expr) => {
        with_pow_case!(@cases $p, $f, $each, [Square, Itself, SquareRoot, Cube, Reciprocal, InverseSquare, General])
    };
    (@cases $p:expr, $f:ident, $each:expr, [$($case:ident),*]) => {{
        let p = $p;
        match pow_case(p) {
            $(PowCase::$case => {
                let $f = move |v| pow_in_case(PowCase::$case, v, p);
                $each
            })*
        }
    }};
}

/// `x ** s` over any number type, the case of `s` chosen once (`with_pow_case!`).
pub(super) fn powers<T: Number>(x: &[T], s: T) -> Vec<T> {
    with_pow_case!(s, |power| map(x, power))
}

/// `powers` in place.
pub(super) fn powers_in_place<T: Number>(x: &mut [T], s: T) {
    with_pow_case!(s, |power| map_in_place(x, power))
}

#[cfg(test)]
mod tests {
    #[test]
    fn float32_powers_give_the_bits_of_a_plain_loop_in_every_path() {
        use super::super::elementwise::{scalar, scalar_in_place, ScalarOp};
        use super::super::vecmath;
        use super::super::PARALLEL_MIN_ELEMENTS;
        let x: Vec<f32> = (0..PARALLEL_MIN_ELEMENTS * 3 + 7).map(|i| ((i as f32) * 0.013).sin() * 9.0).collect();
        // Bits, with every NaN as one (the cases' NaNs come from different operations).
        let bits = |v: &[f32]| v.iter().map(|v| if v.is_nan() { u32::MAX } else { v.to_bits() }).collect::<Vec<u32>>();
        let rounded_from_f64 = |p: f64| x.iter().map(move |&v| ((v as f64).powf(p)) as f32).collect::<Vec<f32>>();
        // Exponents without a case of their own are `vecmath::pow`, vectorised or not; the cases
        // are the float64 power rounded once (2 and 0.5 exactly so, 3 and -2 but in rare ties).
        let general = |p: f32| x.iter().map(move |&v| vecmath::pow(v, p)).collect::<Vec<f32>>();
        let expected = [
            (1.5f32, general(1.5)),
            (-0.5, general(-0.5)),
            (7.25, general(7.25)),
            (2.0, rounded_from_f64(2.0)),
            (0.5, rounded_from_f64(0.5)),
            (3.0, rounded_from_f64(3.0)),
            (-1.0, rounded_from_f64(-1.0)),
            (-2.0, rounded_from_f64(-2.0)),
        ];
        for (s, want) in expected {
            let plain: Vec<f32> = x.iter().map(|&v| super::pow_scalar(v, s)).collect();
            assert_eq!(bits(&plain), bits(&want), "x ** {s}");
            assert_eq!(bits(&scalar(ScalarOp::Pow, &x, s)), bits(&plain), "x ** {s}");
            let mut in_place = x.clone();
            scalar_in_place(ScalarOp::Pow, &mut in_place, s);
            assert_eq!(bits(&in_place), bits(&plain), "x **= {s}");
            let plain: Vec<f32> = x.iter().map(|&v| vecmath::pow(s, v)).collect();
            assert_eq!(bits(&scalar(ScalarOp::RPow, &x, s)), bits(&plain), "{s} ** x");
        }
    }

    #[test]
    fn float64_cubes_and_inverse_squares_keep_the_c_library_s_power() {
        use super::super::elementwise::{scalar, ScalarOp};
        // w·w·w is an ulp off here, and 1/(w·w) overflows to 0 at 2^520 (the power is subnormal).
        let x = [1.194_440_724_972_594_6f64, 2f64.powi(520), 7.873_695_108_513_215e-155, -3.5];
        for p in [3.0, -2.0] {
            let want: Vec<u64> = x.iter().map(|v| v.powf(p).to_bits()).collect();
            let got: Vec<u64> = scalar(ScalarOp::Pow, &x, p).iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "x ** {p}");
        }
    }
}
