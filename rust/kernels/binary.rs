//! Kernels of the elementwise ops with more than one input (`rust/ops/binary.rs`):
//! the element functions the standard library lacks, and a broadcasting walk over
//! three operands (`lerp`).

use super::broadcast::{zip_in_runs, Runs};
use super::elementwise::{fill_chunks, map, zip_broadcast, zip_map, Operand};
use super::layout::walk;
use super::vecmath;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// Element functions of the binary float ops, one implementation per float type.
pub trait BinaryMath: Copy {
    /// The remainder with the sign of the divisor (Python's `%`, numpy's `remainder`, TF's `floormod`).
    fn remainder(self, divisor: Self) -> Self;
    /// `x·log(y)`, 0 where x is 0 (unless y is NaN), as torch's `xlogy`.
    fn xlogy(self, y: Self) -> Self;
    /// `self + weight·(end - self)`, exact at both ends, as torch's `lerp`.
    fn lerp(self, end: Self, weight: Self) -> Self;
    /// `log(e^self + e^other)` without overflow, as numpy's `logaddexp`.
    fn log_add_exp(self, other: Self) -> Self;
    /// `atan2(self, x)`: the C library's for float64, the vectorising `vecmath::atan2` for float32.
    fn angle(self, x: Self) -> Self;
    /// `self^p`: the C library's `pow` for float64, the vectorising `vecmath::pow` for float32.
    fn raised_to(self, p: Self) -> Self;
    /// `|a - b| <= atol + rtol·|b|`, or equal (so infinities of one sign are close), as torch's `isclose`.
    fn is_close(self, other: Self, rtol: f64, atol: f64, equal_nan: bool) -> bool;
}

/// `$ln`, `$exp`, `$ln_1p`, `$atan2` and `$pow` are the element functions: float32's are the vectorising
/// ones of `vecmath`, so that the `binary_ops!` loops over them vectorise.
macro_rules! impl_binary_math {
    ($t:ty, ln: $ln:path, exp: $exp:path, ln_1p: $ln_1p:path, atan2: $atan2:path, pow: $pow:path) => {
        impl BinaryMath for $t {
            #[inline(always)]
            fn remainder(self, divisor: $t) -> $t {
                let r = self % divisor;
                if r != 0.0 {
                    if (r < 0.0) != (divisor < 0.0) {
                        r + divisor
                    } else {
                        r
                    }
                } else {
                    // A zero remainder takes the divisor's sign, as in Python and numpy (NaN stays NaN).
                    r.abs().copysign(divisor)
                }
            }

            #[inline(always)]
            fn xlogy(self, y: $t) -> $t {
                if y.is_nan() {
                    y
                } else if self == 0.0 {
                    0.0
                } else {
                    self * $ln(y)
                }
            }

            #[inline(always)]
            fn lerp(self, end: $t, weight: $t) -> $t {
                let diff = end - self;
                // As torch: from the nearer end, so weight 0 gives `self` and weight 1 gives `end` exactly.
                if weight.abs() < 0.5 {
                    self + weight * diff
                } else {
                    end - diff * (1.0 - weight)
                }
            }

            #[inline(always)]
            fn log_add_exp(self, other: $t) -> $t {
                if self == other {
                    // Equal infinities stay infinite (their difference is NaN).
                    return self + std::f64::consts::LN_2 as $t;
                }
                let diff = self - other;
                if diff > 0.0 {
                    self + $ln_1p($exp(-diff))
                } else if diff <= 0.0 {
                    other + $ln_1p($exp(diff))
                } else {
                    diff // NaN
                }
            }

            #[inline(always)]
            fn is_close(self, other: $t, rtol: f64, atol: f64, equal_nan: bool) -> bool {
                if self == other {
                    return true;
                }
                if self.is_nan() || other.is_nan() {
                    return equal_nan && self.is_nan() && other.is_nan();
                }
                let error = (self - other).abs();
                error.is_finite() && error <= (atol as $t) + ((rtol as $t) * other).abs()
            }

            #[inline(always)]
            fn angle(self, x: $t) -> $t {
                $atan2(self, x)
            }

            #[inline(always)]
            fn raised_to(self, p: $t) -> $t {
                $pow(self, p)
            }
        }
    };
}

impl_binary_math!(f32, ln: vecmath::ln, exp: vecmath::exp, ln_1p: vecmath::ln_1p, atan2: vecmath::atan2, pow: vecmath::pow);
impl_binary_math!(f64, ln: f64::ln, exp: f64::exp, ln_1p: f64::ln_1p, atan2: f64::atan2, pow: f64::powf);

/// One `binary_ops!` entry's element function, for each float type (a type per op, so that the
/// vectorised float32 loop always inlines it: see `vecmath::ElementFn`).
pub trait BinaryKernel: Copy + Sync + Send + 'static {
    fn of_f32(a: f32, b: f32) -> f32;
    fn of_f64(a: f64, b: f64) -> f64;

    /// Whether the float32 loops run `of_f32_checked` (see `vecmath::ElementFn::SPLIT`).
    const SPLIT: bool = false;

    /// A value that is `of_f32(a, b)` where the flag is false: the common form of a kernel built
    /// on a split `vecmath` function, and whether that function met a rare argument.
    #[inline(always)]
    fn of_f32_checked(a: f32, b: f32) -> (f32, bool) {
        (Self::of_f32(a, b), false)
    }
}

/// `K` as `vecmath::zip_map_f32`'s element function.
struct Vectorised<K>(PhantomData<K>);

impl<K: BinaryKernel> vecmath::ElementFn2 for Vectorised<K> {
    const SPLIT: bool = K::SPLIT;

    #[inline(always)]
    fn at(&self, a: f32, b: f32) -> f32 {
        K::of_f32(a, b)
    }

    #[inline(always)]
    fn common_checked(&self, a: f32, b: f32) -> (f32, bool) {
        K::of_f32_checked(a, b)
    }
}

/// `K` over the broadcast `shape`: dense float32 operands in the CPU's widest vectors.
pub trait ZipKernel: Sized {
    fn zip_kernel<K: BinaryKernel>(shape: &[usize], a: &Operand<Self>, b: &Operand<Self>) -> Vec<Self>;
}

/// `K` with its second operand fixed, as `vecmath::map_f32`'s element function.
struct SecondFixed<K>(f32, PhantomData<K>);

impl<K: BinaryKernel> vecmath::ElementFn for SecondFixed<K> {
    const SPLIT: bool = K::SPLIT;

    #[inline(always)]
    fn at(&self, a: f32) -> f32 {
        K::of_f32(a, self.0)
    }

    #[inline(always)]
    fn common_checked(&self, a: f32) -> (f32, bool) {
        K::of_f32_checked(a, self.0)
    }
}

/// `K` with its first operand fixed.
struct FirstFixed<K>(f32, PhantomData<K>);

impl<K: BinaryKernel> vecmath::ElementFn for FirstFixed<K> {
    const SPLIT: bool = K::SPLIT;

    #[inline(always)]
    fn at(&self, b: f32) -> f32 {
        K::of_f32(self.0, b)
    }

    #[inline(always)]
    fn common_checked(&self, b: f32) -> (f32, bool) {
        K::of_f32_checked(self.0, b)
    }
}

/// `K`'s runs for `zip_in_runs`, in the CPU's widest vectors.
struct VectorisedRuns<K>(PhantomData<K>);

// SAFETY: `fill_zip_chunk` and `fill_chunk` write as many slots of `out` as their inputs have
// elements, and the trait's callers pass inputs as long as `out` (debug builds check): every slot.
unsafe impl<K: BinaryKernel> Runs<f32, f32> for VectorisedRuns<K> {
    fn pair(&self, out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32]) {
        debug_assert!(a.len() == out.len() && b.len() == out.len());
        vecmath::fill_zip_chunk(out, a, b, &Vectorised::<K>(PhantomData))
    }
    fn second_fixed(&self, out: &mut [MaybeUninit<f32>], a: &[f32], b: f32) {
        debug_assert_eq!(a.len(), out.len());
        vecmath::fill_chunk(out, a, &SecondFixed::<K>(b, PhantomData))
    }
    fn first_fixed(&self, out: &mut [MaybeUninit<f32>], a: f32, b: &[f32]) {
        debug_assert_eq!(b.len(), out.len());
        vecmath::fill_chunk(out, b, &FirstFixed::<K>(a, PhantomData))
    }
    fn one(&self, a: f32, b: f32) -> f32 {
        K::of_f32(a, b)
    }
}

/// Every float32 path runs `K` in the CPU's widest vectors, so that its `vecmath` functions run
/// their fused multiply-adds as instructions (see `vecmath`): a number against a tensor as a map,
/// rows and channels by runs, and any other broadcast in chunks (`walked_in_chunks`).
impl ZipKernel for f32 {
    fn zip_kernel<K: BinaryKernel>(shape: &[usize], a: &Operand<f32>, b: &Operand<f32>) -> Vec<f32> {
        let n: usize = shape.iter().product();
        if a.dense && b.is_single(shape) && n > 0 {
            return vecmath::map_f32(a.dense_slice(n), SecondFixed::<K>(b.data[b.offset], PhantomData));
        }
        if b.dense && a.is_single(shape) && n > 0 {
            return vecmath::map_f32(b.dense_slice(n), FirstFixed::<K>(a.data[a.offset], PhantomData));
        }
        if a.dense && b.dense {
            return vecmath::zip_map_f32(a.dense_slice(n), b.dense_slice(n), Vectorised::<K>(PhantomData));
        }
        if let Some(out) = zip_in_runs(shape, a, b, &VectorisedRuns::<K>(PhantomData)) {
            return out;
        }
        walked_in_chunks::<K>(shape, a, b)
    }
}

/// Elements per buffer of `walked_in_chunks`.
const WALK_CHUNK: usize = 4096;

/// `K` over a broadcast of any other layout: the operands' elements walked in order into buffers
/// of `WALK_CHUNK`, each run in the CPU's vectors (no copy of a whole operand at the output's size).
fn walked_in_chunks<K: BinaryKernel>(shape: &[usize], a: &Operand<f32>, b: &Operand<f32>) -> Vec<f32> {
    let mut out = crate::storage::vec_with_capacity(shape.iter().product());
    let (mut xs, mut ys) = (Vec::with_capacity(WALK_CHUNK), Vec::with_capacity(WALK_CHUNK));
    let flush = |out: &mut Vec<f32>, xs: &mut Vec<f32>, ys: &mut Vec<f32>| {
        out.extend_from_slice(&vecmath::zip_map_f32(xs, ys, Vectorised::<K>(PhantomData)));
        xs.clear();
        ys.clear();
    };
    walk(shape, [a.strides, b.strides], [a.offset, b.offset], |[i, j]| {
        xs.push(a.data[i]);
        ys.push(b.data[j]);
        if xs.len() == WALK_CHUNK {
            flush(&mut out, &mut xs, &mut ys);
        }
    });
    flush(&mut out, &mut xs, &mut ys);
    out
}

impl ZipKernel for f64 {
    fn zip_kernel<K: BinaryKernel>(shape: &[usize], a: &Operand<f64>, b: &Operand<f64>) -> Vec<f64> {
        zip_broadcast(shape, a, b, K::of_f64)
    }
}

/// `f(a, b, c)` over the broadcast `shape`, row-major: one linear pass when every
/// operand is dense or a single value.
pub fn zip3_broadcast<T, U>(
    shape: &[usize],
    a: &Operand<T>,
    b: &Operand<T>,
    c: &Operand<T>,
    f: impl Fn(T, T, T) -> U + Sync + Send,
) -> Vec<U>
where
    T: Copy + Send + Sync + 'static,
    U: Copy + Send + Sync + 'static,
{
    let n: usize = shape.iter().product();
    if n == 0 {
        return Vec::new();
    }
    let linear = |o: &Operand<T>| o.dense || o.is_single(shape);
    if linear(a) && linear(b) && linear(c) {
        // The common cases first: a number for the third operand, or two dense operands and a number.
        if a.dense && b.dense && c.is_single(shape) {
            let w = c.data[c.offset];
            return zip_map(a.dense_slice(n), b.dense_slice(n), |p, q| f(p, q, w));
        }
        if a.dense && !b.dense && !c.dense {
            let (q, w) = (b.data[b.offset], c.data[c.offset]);
            return map(a.dense_slice(n), |p| f(p, q, w));
        }
        let at = |o: &Operand<T>, i: usize| if o.dense { o.data[o.offset + i] } else { o.data[o.offset] };
        // SAFETY: the loop runs over every slot of each chunk (`out.len()` of them).
        return unsafe {
            fill_chunks(n, |start, out| {
                for (i, slot) in out.iter_mut().enumerate() {
                    let k = start + i;
                    slot.write(f(at(a, k), at(b, k), at(c, k)));
                }
            })
        };
    }
    let mut out = crate::storage::vec_with_capacity(n);
    walk(shape, [a.strides, b.strides, c.strides], [a.offset, b.offset, c.offset], |[i, j, k]| {
        out.push(f(a.data[i], b.data[j], c.data[k]))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remainder_takes_the_sign_of_the_divisor() {
        assert_eq!(5.0f64.remainder(-3.0), -1.0);
        assert_eq!((-5.0f64).remainder(3.0), 1.0);
        assert_eq!((-4.0f64).remainder(2.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(4.0f64.remainder(-2.0).to_bits(), (-0.0f64).to_bits());
        assert!(1.0f32.remainder(0.0).is_nan());
    }

    #[test]
    fn xlogy_is_zero_at_zero_unless_y_is_nan() {
        assert_eq!(0.0f64.xlogy(0.0), 0.0);
        assert!(0.0f64.xlogy(f64::NAN).is_nan());
        assert_eq!(2.0f64.xlogy(1.0), 0.0);
    }

    #[test]
    fn lerp_is_exact_at_both_ends() {
        assert_eq!(0.1f64.lerp(0.7, 0.0), 0.1);
        assert_eq!(0.1f64.lerp(0.7, 1.0), 0.7);
    }

    #[test]
    fn log_add_exp_neither_overflows_nor_loses_infinities() {
        assert_eq!(1000.0f64.log_add_exp(1000.0), 1000.0 + std::f64::consts::LN_2);
        assert_eq!(f64::NEG_INFINITY.log_add_exp(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(f64::INFINITY.log_add_exp(1.0), f64::INFINITY);
        assert!(f64::NAN.log_add_exp(1.0).is_nan());
    }

    #[test]
    fn close_infinities_of_one_sign_only() {
        assert!(f64::INFINITY.is_close(f64::INFINITY, 1e-5, 1e-8, false));
        assert!(!f64::INFINITY.is_close(f64::NEG_INFINITY, 1e-5, 1e-8, false));
        assert!(!f64::NAN.is_close(f64::NAN, 1e-5, 1e-8, false));
        assert!(f64::NAN.is_close(f64::NAN, 1e-5, 1e-8, true));
        assert!(1.0f32.is_close(1.000001, 1e-5, 1e-8, false));
    }

    #[test]
    fn three_operands_broadcast_against_each_other() {
        let col = [1.0f64, 2.0];
        let row = [10.0f64, 20.0, 30.0];
        let w = [0.5f64];
        let a = Operand { data: &col, strides: &[1, 0], offset: 0, dense: false };
        let b = Operand { data: &row, strides: &[0, 1], offset: 0, dense: false };
        let c = Operand { data: &w, strides: &[0, 0], offset: 0, dense: false };
        let out = zip3_broadcast(&[2, 3], &a, &b, &c, |p, q, r| p + q * r);
        assert_eq!(out, vec![6.0, 11.0, 16.0, 7.0, 12.0, 17.0]);
    }
}
