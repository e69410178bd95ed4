//! Kernels of the logical ops and the float tests (`rust/ops/logical.rs`).

use super::elementwise::{map, zip_broadcast, Operand};
use crate::dtype::Float;

/// A test of each float element.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FloatTest {
    Nan,
    Inf,
    PosInf,
    NegInf,
    Finite,
}

/// `test` of every element, one loop per test.
pub fn float_test<T: Float>(test: FloatTest, x: &[T]) -> Vec<bool> {
    let inf = T::from_f64(f64::INFINITY);
    match test {
        FloatTest::Nan => map(x, |v: T| v.is_nan()),
        FloatTest::Inf => map(x, move |v: T| v == inf || v == -inf),
        FloatTest::PosInf => map(x, move |v: T| v == inf),
        FloatTest::NegInf => map(x, move |v: T| v == -inf),
        // False for NaN, which compares false.
        FloatTest::Finite => map(x, move |v: T| v.abs() < inf),
    }
}

/// `x` with NaN, +inf and -inf replaced by the given values.
pub fn nan_to_num<T: Float>(x: &[T], nan: T, posinf: T, neginf: T) -> Vec<T> {
    let inf = T::from_f64(f64::INFINITY);
    map(x, move |v: T| {
        if v.is_nan() {
            nan
        } else if v == inf {
            posinf
        } else if v == -inf {
            neginf
        } else {
            v
        }
    })
}

/// A logical connective of two bools.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Connective {
    And,
    Or,
    Xor,
}

/// `a op b` over the broadcast `shape`, one loop per connective.
pub fn connect(op: Connective, shape: &[usize], a: &Operand<bool>, b: &Operand<bool>) -> Vec<bool> {
    match op {
        Connective::And => zip_broadcast(shape, a, b, |p, q| p & q),
        Connective::Or => zip_broadcast(shape, a, b, |p, q| p | q),
        Connective::Xor => zip_broadcast(shape, a, b, |p, q| p ^ q),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_tell_nan_and_the_infinities_apart() {
        let x = [0.0f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -2.5];
        assert_eq!(float_test(FloatTest::Nan, &x), [false, true, false, false, false]);
        assert_eq!(float_test(FloatTest::Inf, &x), [false, false, true, true, false]);
        assert_eq!(float_test(FloatTest::PosInf, &x), [false, false, true, false, false]);
        assert_eq!(float_test(FloatTest::NegInf, &x), [false, false, false, true, false]);
        assert_eq!(float_test(FloatTest::Finite, &x), [true, false, false, false, true]);
    }

    #[test]
    fn nan_to_num_replaces_each_special_value() {
        let x = [1.0f64, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        assert_eq!(nan_to_num(&x, 0.0, 9.0, -9.0), [1.0, 0.0, 9.0, -9.0]);
    }
}
