//! `widest_vectors!`: one loop, compiled for AVX-512, for AVX2 and for the baseline,
//! behind a function that runs the copy for the widest vectors this CPU has.
//!
//! The copies run the same operations on each element, so they give the same bits;
//! only the vector width changes. The loop itself must be `#[inline(always)]`, so that
//! each copy inlines it and vectorises it for its own instruction set.

/// Defines `fn NAME[GENERICS](ARGS) -> RET => BODY;` as a function that evaluates
/// `BODY` (an expression over `ARGS`) in a copy compiled for AVX-512, or for AVX2 and
/// FMA, or for the baseline, whichever is the widest this CPU runs. The generics go in
/// square brackets and must all be inferable from the arguments.
macro_rules! widest_vectors {
    ($(#[$attr:meta])* $vis:vis fn $name:ident [$($generics:tt)*] ($($arg:ident: $ty:ty),* $(,)?)
        $(-> $ret:ty)? => $body:expr;) => {
        $(#[$attr])*
        $vis fn $name<$($generics)*>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            fn avx512<$($generics)*>($($arg: $ty),*) $(-> $ret)? {
                $body
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2<$($generics)*>($($arg: $ty),*) $(-> $ret)? {
                $body
            }
            match $crate::kernels::vecmath::simd() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `simd()` returns Avx512 only when `sgemm_avx512::available()` saw avx512f.
                $crate::kernels::vecmath::Simd::Avx512 => unsafe { avx512($($arg),*) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `simd()` returns Avx2 only when the CPU reported both avx2 and fma.
                $crate::kernels::vecmath::Simd::Avx2 => unsafe { avx2($($arg),*) },
                _ => $body,
            }
        }
    };
}
