//! The traits kernels are generic over: `Number` for every numeric element type
//! (floats and integers), `Float` for the floating ones.

use crate::storage::Element;

/// The numeric element types (floats and integers; bool is not one). Arithmetic
/// wraps around for integers, as in torch, so no kernel can overflow-panic.
/// Implemented only for primitive numbers, whose all-zero bytes are the value 0
/// (`storage::zeroed_vec` relies on it).
pub trait Number: Element + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    /// What sums accumulate in: f64 for floats, i64 for integers.
    type Acc: Number;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(acc: Self::Acc) -> Self;
    fn plus(self, other: Self) -> Self;
    fn minus(self, other: Self) -> Self;
    fn times(self, other: Self) -> Self;
    fn is_nan(self) -> bool;
    /// `self / other`. For integers it truncates, and gives 0 for a zero divisor; true
    /// division never runs on integers (it computes in a float dtype, `DType::true_division`).
    fn quotient(self, other: Self) -> Self;
    /// `self // other` with Python's rounding toward negative infinity. An integer
    /// division by zero gives 0: the forward layer refuses it before a kernel runs.
    fn floor_div(self, other: Self) -> Self;
    /// `self % other` with the sign of `other`, as Python's `%` (0 for an integer `% 0`, see `floor_div`).
    fn remainder(self, other: Self) -> Self;
    /// `self ** p`, for an integer `p` may be negative (0, or ±1 for a base of ±1, as torch).
    fn power(self, p: Self) -> Self;
}

/// NaN-propagating max and min, as numpy's `maximum`/`minimum`.
#[inline(always)]
pub fn nan_max<T: Number>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        a.plus(b)
    } else if a >= b {
        a
    } else {
        b
    }
}

#[inline(always)]
pub fn nan_min<T: Number>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        a.plus(b)
    } else if a <= b {
        a
    } else {
        b
    }
}

macro_rules! impl_float_number {
    ($t:ty) => {
        impl Number for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            type Acc = f64;
            #[inline(always)]
            fn to_acc(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_acc(acc: f64) -> Self {
                acc as $t
            }
            #[inline(always)]
            fn plus(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn minus(self, other: Self) -> Self {
                self - other
            }
            #[inline(always)]
            fn times(self, other: Self) -> Self {
                self * other
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn quotient(self, other: Self) -> Self {
                self / other
            }
            /// numpy's `npy_divmod` (torch's `div_floor_floating` is the same algorithm).
            #[inline(always)]
            fn floor_div(self, other: Self) -> Self {
                let (a, b) = (self, other);
                if b == 0.0 {
                    return a / b;
                }
                let m = a % b;
                let mut div = (a - m) / b;
                if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div == 0.0 {
                    return (0.0 as $t).copysign(a / b);
                }
                let floor = div.floor();
                if div - floor > 0.5 {
                    floor + 1.0
                } else {
                    floor
                }
            }
            #[inline(always)]
            fn remainder(self, other: Self) -> Self {
                let (a, b) = (self, other);
                let m = a % b;
                if b == 0.0 {
                    m
                } else if m == 0.0 {
                    (0.0 as $t).copysign(b)
                } else if (b < 0.0) != (m < 0.0) {
                    m + b
                } else {
                    m
                }
            }
            #[inline(always)]
            fn power(self, p: Self) -> Self {
                self.powf(p)
            }
        }
    };
}

impl_float_number!(f32);
impl_float_number!(f64);

macro_rules! impl_integer_number {
    ($t:ty, $signed:expr) => {
        // `r < 0` is always false for an unsigned type, where `$signed` already rules it out.
        #[allow(unused_comparisons)]
        impl Number for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            type Acc = i64;
            #[inline(always)]
            fn to_acc(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_acc(acc: i64) -> Self {
                acc as $t
            }
            #[inline(always)]
            fn plus(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn minus(self, other: Self) -> Self {
                self.wrapping_sub(other)
            }
            #[inline(always)]
            fn times(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn quotient(self, other: Self) -> Self {
                if other == 0 {
                    0
                } else {
                    self.wrapping_div(other)
                }
            }
            #[inline(always)]
            fn floor_div(self, other: Self) -> Self {
                if other == 0 {
                    return 0;
                }
                let (q, r) = (self.wrapping_div(other), self.wrapping_rem(other));
                if $signed && r != 0 && ((r < 0) != (other < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            #[inline(always)]
            fn remainder(self, other: Self) -> Self {
                if other == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(other);
                if $signed && r != 0 && ((r < 0) != (other < 0)) {
                    r.wrapping_add(other)
                } else {
                    r
                }
            }
            #[inline(always)]
            fn power(self, p: Self) -> Self {
                if p < 0 {
                    // 1/self^|p| truncated toward zero, as torch does for integers.
                    return match self as i64 {
                        1 => 1,
                        -1 if (p as i64) % 2 == 0 => 1,
                        -1 => self,
                        _ => 0,
                    };
                }
                let mut exponent = p as u64;
                let (mut base, mut out): (Self, Self) = (self, 1);
                while exponent > 0 {
                    if exponent & 1 == 1 {
                        out = out.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    exponent >>= 1;
                }
                out
            }
        }
    };
}

impl_integer_number!(i64, true);
impl_integer_number!(i32, true);
impl_integer_number!(u8, false);

/// The floating element types. Kernels of float-only ops are written once against this trait.
pub trait Float:
    Number
    + crate::ops::unary::UnaryKernel
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + std::ops::DivAssign
{
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    /// ln(1 + self), precise for small self.
    fn ln_1p(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
    fn signum_or_zero(self) -> Self;
    /// The high 32 bits of |self|: its exponent and leading mantissa bits. Compared as
    /// integers they order magnitudes (float64's to 20 bits of mantissa), with infinity
    /// and then NaN above every number.
    fn magnitude_high_bits(self) -> u32;
}

macro_rules! impl_float {
    ($t:ty, $high_bits:expr) => {
        impl Float for $t {
            #[inline(always)]
            fn magnitude_high_bits(self) -> u32 {
                $high_bits(self.to_bits()) & 0x7fff_ffff
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn powf(self, p: Self) -> Self {
                <$t>::powf(self, p)
            }
            #[inline(always)]
            fn signum_or_zero(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    // sign(0) = 0 and sign(NaN) = NaN, as in PyTorch.
                    self * 0.0
                }
            }
        }
    };
}

impl_float!(f32, |bits: u32| bits);
impl_float!(f64, |bits: u64| (bits >> 32) as u32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_rounds_down_and_remainders_take_the_divisors_sign() {
        assert_eq!((-7i64).floor_div(2), -4);
        assert_eq!(7i64.floor_div(-2), -4);
        assert_eq!((-7i64).remainder(2), 1);
        assert_eq!(7i32.remainder(-2), -1);
        assert_eq!(i64::MIN.floor_div(-1), i64::MIN);
        assert_eq!(5u8.floor_div(0), 0);
        assert_eq!((-7.0f64).floor_div(2.0), -4.0);
        assert_eq!((-7.0f64).remainder(2.0), 1.0);
    }

    #[test]
    fn integer_powers_wrap_and_negative_ones_truncate() {
        assert_eq!(3i64.power(4), 81);
        assert_eq!(2i32.power(-1), 0);
        assert_eq!((-1i64).power(-3), -1);
        assert_eq!(2u8.power(9), 0);
    }
}
