//! The loops that run a float32 element function over slices: compiled for AVX-512, for AVX2 or
//! for the baseline (`widest_vectors!`), whichever the CPU has, and split into chunks that run in
//! parallel for large inputs.

use super::TRIG_REDUCTION_LIMIT;
use std::mem::MaybeUninit;

/// A float32 function of one element, for the vectorised loops below.
///
/// A closure is one: LLVM inlines it into the loop when its cost model agrees, which it does for
/// small ones. A large kernel (erfc's pieces, sinh's) stayed a scalar call per element that way,
/// even as a function marked `#[inline(always)]` (the call goes through the `Fn` shim, which is
/// not), slower than the C library's. Such kernels are a type of their own whose `at` is marked
/// `#[inline(always)]`: then the loop calls `at` directly, and it is always inlined.
///
/// A function whose edge cases (zeros, infinities, NaN, subnormals, out of range) take many
/// vector instructions may say so with `SPLIT`: the loop then runs `common` on every element,
/// a shorter form that is right wherever `is_rare` is false, and redoes the rare elements of a
/// vector with `at` (so the bits are `at`'s everywhere).
pub trait ElementFn: Sync + Send {
    fn at(&self, v: f32) -> f32;

    /// Whether the loop runs `common`, then `at` on the rare elements.
    const SPLIT: bool = false;

    /// Whether `common` may differ from `at` at `v`.
    #[inline(always)]
    fn is_rare(&self, _v: f32) -> bool {
        false
    }

    /// `at(v)` wherever `is_rare(v)` is false.
    #[inline(always)]
    fn common(&self, v: f32) -> f32 {
        self.at(v)
    }

    /// `common(v)` and `is_rare(v)` in one evaluation: a function made of several split ones (an
    /// activation of `exp` and `log1p`) knows whether one of them met a rare argument only as it
    /// computes it.
    #[inline(always)]
    fn common_checked(&self, v: f32) -> (f32, bool) {
        (self.common(v), self.is_rare(v))
    }
}

impl<F: Fn(f32) -> f32 + Sync + Send> ElementFn for F {
    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        self(v)
    }
}

/// A float32 function of two elements for `zip_map_f32`, always inlined there as `ElementFn` is,
/// and split as it may be.
pub trait ElementFn2: Sync + Send {
    fn at(&self, a: f32, b: f32) -> f32;

    /// Whether the loop runs `common_checked`, then `at` on the vectors with a rare pair.
    const SPLIT: bool = false;

    /// A value that is `at(a, b)` where the flag is false.
    #[inline(always)]
    fn common_checked(&self, a: f32, b: f32) -> (f32, bool) {
        (self.at(a, b), false)
    }
}

/// Writes `f(a[i], b[i])` into `out[i]`; compiled for the instruction set of its caller.
#[inline(always)]
fn fill_zip<F: ElementFn2>(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], f: &F) {
    if F::SPLIT {
        return fill_zip_split(out, a, b, f);
    }
    for ((slot, &p), &q) in out.iter_mut().zip(a).zip(b) {
        slot.write(f.at(p, q));
    }
}

/// `fill_zip` for a `SPLIT` function, as `fill_split`.
#[inline(always)]
fn fill_zip_split(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], f: &impl ElementFn2) {
    let n = out.len().min(a.len()).min(b.len());
    let (out_vectors, out_rest) = out[..n].as_chunks_mut::<SPLIT_LANES>();
    let (a_vectors, a_rest) = a[..n].as_chunks::<SPLIT_LANES>();
    let (b_vectors, b_rest) = b[..n].as_chunks::<SPLIT_LANES>();
    for ((slots, firsts), seconds) in out_vectors.iter_mut().zip(a_vectors).zip(b_vectors) {
        let mut any_rare = false;
        for ((slot, &p), &q) in slots.iter_mut().zip(firsts).zip(seconds) {
            let (value, rare) = f.common_checked(p, q);
            slot.write(value);
            any_rare |= rare;
        }
        if any_rare {
            for ((slot, &p), &q) in slots.iter_mut().zip(firsts).zip(seconds) {
                slot.write(f.at(p, q));
            }
        }
    }
    for ((slot, &p), &q) in out_rest.iter_mut().zip(a_rest).zip(b_rest) {
        slot.write(f.at(p, q));
    }
}

widest_vectors! {
    /// Fills `out[i] = f(a[i], b[i])` for one chunk, with the widest vectors the CPU has: the first
    /// `min` of the three lengths slots (callers that need every slot pass inputs as long as `out`).
    pub fn fill_zip_chunk[](out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], f: &impl ElementFn2)
        => fill_zip(out, a, b, f);
}

/// `f(a[i], b[i])` over two float32 slices of one length, vectorised for this CPU, in
/// parallel for large inputs.
pub fn zip_map_f32(a: &[f32], b: &[f32], f: impl ElementFn2) -> Vec<f32> {
    // invariant: callers pass two dense operands of the output's length; this guards the unsafe fill.
    assert_eq!(a.len(), b.len(), "zip_map_f32: operands of different lengths");
    // SAFETY: `fill_zip_chunk` writes every slot of the chunk it is given (both inputs from `start`
    // are at least as long as the chunk, since they have the output's length).
    unsafe {
        crate::kernels::elementwise::fill_chunks(a.len(), |start, out| {
            fill_zip_chunk(out, &a[start..], &b[start..], &f)
        })
    }
}

/// Writes `f(x[i])` into `out[i]`; compiled for the instruction set of its caller.
#[inline(always)]
fn fill<F: ElementFn>(out: &mut [MaybeUninit<f32>], x: &[f32], f: &F) {
    if F::SPLIT {
        return fill_split(out, x, f);
    }
    for (slot, &v) in out.iter_mut().zip(x) {
        slot.write(f.at(v));
    }
}

/// Elements per vector of `fill_split`: one AVX-512 register, two AVX2 ones.
const SPLIT_LANES: usize = 16;

/// `fill` for a `SPLIT` function: `common` on a vector of elements, then `at` on the whole
/// vector if it has a rare element (the same bits as `at` on its common ones).
#[inline(always)]
fn fill_split(out: &mut [MaybeUninit<f32>], x: &[f32], f: &impl ElementFn) {
    let n = out.len().min(x.len());
    let (out, x) = (&mut out[..n], &x[..n]);
    let (out_vectors, out_rest) = out.as_chunks_mut::<SPLIT_LANES>();
    let (x_vectors, x_rest) = x.as_chunks::<SPLIT_LANES>();
    for (slots, values) in out_vectors.iter_mut().zip(x_vectors) {
        let mut any_rare = false;
        for (slot, &v) in slots.iter_mut().zip(values) {
            let (value, rare) = f.common_checked(v);
            slot.write(value);
            any_rare |= rare;
        }
        if any_rare {
            for (slot, &v) in slots.iter_mut().zip(values) {
                slot.write(f.at(v));
            }
        }
    }
    for (slot, &v) in out_rest.iter_mut().zip(x_rest) {
        slot.write(f.at(v));
    }
}

/// The widest instruction set the CPU runs, checked once.
#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Simd {
    Avx512,
    Avx2,
    Baseline,
}

pub fn simd() -> Simd {
    static LEVEL: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::kernels::sgemm_avx512::available() {
                return Simd::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                return Simd::Avx2;
            }
        }
        Simd::Baseline
    })
}

/// `g · slope(x)` as a function of the two elements, split where `slope` is.
struct Times<'a, F>(&'a F);

impl<F: ElementFn> ElementFn2 for Times<'_, F> {
    const SPLIT: bool = F::SPLIT;

    #[inline(always)]
    fn at(&self, g: f32, x: f32) -> f32 {
        g * self.0.at(x)
    }

    #[inline(always)]
    fn common_checked(&self, g: f32, x: f32) -> (f32, bool) {
        let (slope, rare) = self.0.common_checked(x);
        (g * slope, rare)
    }
}

/// Writes `g[i] · slope(x[i])` into `out[i]`; compiled for the instruction set of its caller.
/// `slope` is called through `Times`, a type whose `at` is always inlined, not a closure around
/// it, so that an `ElementFn` type's `at` is inlined into the vectorised loop whatever its size.
#[inline(always)]
fn fill_times(out: &mut [MaybeUninit<f32>], g: &[f32], x: &[f32], slope: &impl ElementFn) {
    fill_zip(out, g, x, &Times(slope))
}

widest_vectors! {
    /// Fills `out[i] = g[i] · slope(x[i])` for one chunk, with the widest vectors the CPU has.
    fn fill_times_chunk[](out: &mut [MaybeUninit<f32>], g: &[f32], x: &[f32], slope: &impl ElementFn)
        => fill_times(out, g, x, slope);
}

widest_vectors! {
    /// Fills `out[i] = f(x[i])` for one chunk, with the widest vectors the CPU has: the first `min`
    /// of the two lengths slots (callers that need every slot pass an input as long as `out`).
    pub fn fill_chunk[](out: &mut [MaybeUninit<f32>], x: &[f32], f: &impl ElementFn) => fill(out, x, f);
}

/// `out[i] = f(x[i])` over one short float32 slice on the calling thread, vectorised for this CPU
/// (a row of a softmax: the caller already runs rows in parallel).
pub fn map_row_f32(out: &mut [f32], x: &[f32], f: &impl ElementFn) {
    let n = out.len().min(x.len());
    // SAFETY: `MaybeUninit<f32>` has the layout of `f32`, and `fill_chunk` writes only initialised
    // values, so the slice stays initialised.
    let slots = unsafe { &mut *(&mut out[..n] as *mut [f32] as *mut [MaybeUninit<f32>]) };
    fill_chunk(slots, &x[..n], f)
}

/// `f` over a float32 slice, vectorised for this CPU, in parallel for large inputs (from fewer
/// elements for the split kernels, the special functions, than for the cheap ones).
pub fn map_f32<F: ElementFn>(x: &[f32], f: F) -> Vec<f32> {
    let fill = |start: usize, out: &mut [MaybeUninit<f32>]| fill_chunk(out, &x[start..], &f);
    use crate::kernels::elementwise::{fill_chunks, fill_costly_chunks};
    // SAFETY: `fill_chunk` writes every slot of the chunk it is given (the zip covers the
    // chunk: the input from `start` is at least as long).
    unsafe {
        if F::SPLIT {
            fill_costly_chunks(x.len(), fill)
        } else {
            fill_chunks(x.len(), fill)
        }
    }
}

/// Writes `f(x[i])` into `x[i]`; compiled for the instruction set of its caller.
#[inline(always)]
fn update(x: &mut [f32], f: &impl ElementFn) {
    for v in x.iter_mut() {
        *v = f.at(*v);
    }
}

widest_vectors! {
    /// `x[i] = f(x[i])` for one chunk, with the widest vectors the CPU has.
    fn update_chunk[](x: &mut [f32], f: &impl ElementFn) => update(x, f);
}

/// `x[i] = f(x[i])` over a float32 slice, vectorised for this CPU, in parallel for large inputs.
pub fn map_in_place_f32(x: &mut [f32], f: impl ElementFn) {
    crate::kernels::elementwise::for_each_chunk_mut(x, |chunk| update_chunk(chunk, &f));
}

/// `g[i] · slope(x[i])` over two float32 slices of one length (an activation's backward),
/// vectorised for this CPU, in parallel for large inputs.
pub fn times_slope_f32(g: &[f32], x: &[f32], slope: impl ElementFn) -> Vec<f32> {
    // invariant: callers pass two dense operands of the output's length; this guards the unsafe fill.
    assert_eq!(g.len(), x.len(), "times_slope_f32: operands of different lengths");
    // SAFETY: `fill_times_chunk` writes every slot of the chunk it is given (both inputs from
    // `start` are at least as long as the chunk, since they have the output's length).
    unsafe {
        crate::kernels::elementwise::fill_chunks(g.len(), |start, out| {
            fill_times_chunk(out, &g[start..], &x[start..], &slope)
        })
    }
}

/// `map_f32` of a vectorised `sin` or `cos`, whose rare elements past
/// `TRIG_REDUCTION_LIMIT` (and infinities) are redone by `exact`, the C library's,
/// whose reduction is exact: only in the vectors that hold one (`ElementFn::SPLIT`).
pub fn map_trig(x: &[f32], fast: impl ElementFn, exact: impl Fn(f32) -> f32 + Sync + Send) -> Vec<f32> {
    map_f32(x, Trig { fast, exact })
}

/// A vectorised `sin` or `cos` with the C library's for the elements past its reduction's limit.
struct Trig<F, E> {
    fast: F,
    exact: E,
}

impl<F: ElementFn, E: Fn(f32) -> f32 + Sync + Send> ElementFn for Trig<F, E> {
    const SPLIT: bool = true;

    #[inline(always)]
    fn at(&self, v: f32) -> f32 {
        if self.is_rare(v) {
            (self.exact)(v)
        } else {
            self.fast.at(v)
        }
    }

    /// Past the limit (NaN is not: its `at` is the fast form's).
    #[inline(always)]
    fn is_rare(&self, v: f32) -> bool {
        v.abs() > TRIG_REDUCTION_LIMIT
    }

    #[inline(always)]
    fn common(&self, v: f32) -> f32 {
        self.fast.at(v)
    }
}
