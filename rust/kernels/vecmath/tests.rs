//! The tests of the functions in `vecmath/mod.rs` and of the loops: error bounds against float64,
//! edges, and the bits of the vectorised loops against plain ones.

use super::*;

/// The largest distance in units in the last place between `fast` and the float64 reference, over `xs`.
pub(super) fn worst_ulps(xs: impl Iterator<Item = f32>, fast: fn(f32) -> f32, exact: fn(f64) -> f64) -> (f64, f32) {
    let mut worst = (0.0, 0.0);
    for x in xs {
        let want = exact(x as f64);
        let got = fast(x) as f64;
        if want.is_nan() {
            assert!(got.is_nan(), "{x}: got {got}, want NaN");
            continue;
        }
        if want.is_infinite() || got.is_infinite() {
            assert_eq!(got, (want as f32) as f64, "{x}");
            continue;
        }
        // One ulp of the float32 result; subnormals all have the smallest one.
        let ulp = ((want as f32).abs() as f64 * f32::EPSILON as f64).max(2f64.powi(-149));
        let err = (got - want).abs() / ulp;
        if err > worst.0 {
            worst = (err, x);
        }
    }
    worst
}

pub(super) fn sweep(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
    (0..=n).map(move |i| lo + (hi - lo) * (i as f32 / n as f32))
}

/// Asserts `fast` within 2 ulps of `exact` at `count` points of [lo, hi] and as many of its
/// part within [-3, 3], where most of the pieces meet.
pub(super) fn assert_within_two_ulps(
    name: &str,
    fast: fn(f32) -> f32,
    exact: fn(f64) -> f64,
    (lo, hi): (f32, f32),
    count: usize,
) {
    let points = sweep(lo, hi, count).chain(sweep(lo.max(-3.0), hi.min(3.0), count));
    let (err, at) = worst_ulps(points, fast, exact);
    assert!(err < 2.0, "{name}: {err} ulps at {at}");
}

/// Inputs for the bit-for-bit tests: three chunks and a short one, with the edge cases first.
fn vectorised_inputs() -> (Vec<f32>, Vec<f32>) {
    let n = 3 * super::super::PARALLEL_MIN_ELEMENTS + 37;
    let g: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.37).sin() * 3.0).collect();
    let mut x: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.011).cos() * 12.0).collect();
    x[..7].copy_from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-40, -104.5, 0.9]);
    (g, x)
}

fn assert_same_bits(got: &[f32], plain: impl Iterator<Item = f32>, name: &str) {
    let plain: Vec<u32> = plain.map(f32::to_bits).collect();
    let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got.len(), plain.len());
    assert!(got == plain, "{name}: first difference at {:?}", got.iter().zip(&plain).position(|(p, q)| p != q));
}

#[test]
fn times_slope_f32_gives_the_bits_of_a_plain_loop() {
    // A sigmoid's slope, as an activation's backward: exp's floor and the division compiled
    // for the CPU's vectors must round as the plain loop does, at every position; and erfc's
    // pieces, which take the vectorised loop only as an inlined function.
    struct GeluLike;
    impl ElementFn for GeluLike {
        #[inline(always)]
        fn at(&self, v: f32) -> f32 {
            0.5 * erfc(-v * std::f32::consts::FRAC_1_SQRT_2) + v * exp(-0.5 * v * v)
        }
    }
    let (g, x) = vectorised_inputs();
    let sigmoid = |v: f32| 1.0 / (1.0 + exp(-v));
    let plain = g.iter().zip(&x).map(|(&gv, &xv)| gv * sigmoid(xv));
    assert_same_bits(&times_slope_f32(&g, &x, sigmoid), plain, "sigmoid");
    let plain = g.iter().zip(&x).map(|(&gv, &xv)| gv * GeluLike.at(xv));
    assert_same_bits(&times_slope_f32(&g, &x, GeluLike), plain, "gelu");
}

/// Each function as a kernel type, so that `map_f32` inlines it into its vectorised loop, where
/// the fused multiply-adds are instructions; the plain loop here, compiled for the baseline,
/// calls the C library's `fma` for each.
macro_rules! assert_vectorised_bits {
    ($x:expr, $($f:ident),+) => {$({
        struct Kernel;
        impl ElementFn for Kernel {
            #[inline(always)]
            fn at(&self, v: f32) -> f32 {
                $f(v)
            }
        }
        assert_same_bits(&map_f32($x, Kernel), $x.iter().map(|&v| $f(v)), stringify!($f));
    })+};
}

#[test]
fn map_f32_of_each_function_gives_the_bits_of_a_plain_loop() {
    let (_, x) = vectorised_inputs();
    assert_vectorised_bits!(
        &x, exp, ln, log2, log10, exp2, expm1, ln_1p, sin, cos, sinh, cosh, asinh, acosh, atanh, erf, erfc, tan, atan,
        asin, acos, tanh
    );
    struct Angle;
    impl ElementFn2 for Angle {
        #[inline(always)]
        fn at(&self, y: f32, x: f32) -> f32 {
            atan2(y, x)
        }
    }
    let (y, x) = vectorised_inputs();
    assert_same_bits(&zip_map_f32(&y, &x, Angle), y.iter().zip(&x).map(|(&a, &b)| atan2(a, b)), "atan2");
}

#[test]
fn split_kernels_give_the_bits_of_their_full_functions() {
    // Every 65537th float32 bit pattern (both signs, subnormals, infinities, NaNs), whose
    // vectors mostly hold a rare element, the ends of each kernel's common range and their
    // neighbours, and the vectorised inputs, whose vectors mostly do not: `common` on every
    // element, `at` redoing only the rare ones, must give `at`'s bits. (Small enough for an
    // unoptimised build: CI's `cargo test`.)
    let ends = [0.0f32, 1.0, 17.0, 44.0, 88.0, 103.0, 127.0, 150.0, f32::MIN_POSITIVE, f32::MAX, TRIG_REDUCTION_LIMIT];
    let near_ends = ends.iter().flat_map(|&e| [e, e.next_up(), e.next_down(), -e, (-e).next_up(), (-e).next_down()]);
    let patterns: Vec<f32> = (0..=u32::MAX).step_by(65537).map(f32::from_bits).chain(near_ends).collect();
    let positive: Vec<f32> = patterns.iter().map(|v| v.abs()).collect();
    let (_, mixed) = vectorised_inputs();
    let mixed: Vec<f32> = mixed.iter().map(|v| v * v).collect();
    fn check<K: ElementFn + Copy>(kernel: K, inputs: &[&[f32]], name: &str) {
        assert!(K::SPLIT, "{name}");
        for x in inputs {
            assert_same_bits(&map_f32(x, kernel), x.iter().map(|&v| kernel.at(v)), name);
        }
    }
    let inputs: [&[f32]; 3] = [&patterns, &positive, &mixed];
    check(Ln, &inputs, "ln");
    check(Log2, &inputs, "log2");
    check(Log10, &inputs, "log10");
    check(Ln1p, &inputs, "log1p");
    check(Exp, &inputs, "exp");
    check(Exp2, &inputs, "exp2");
    check(Expm1, &inputs, "expm1");
    check(Tanh, &inputs, "tanh");
    let spread: Vec<f32> = mixed.iter().map(|v| v - 50.0).collect();
    for kernel_inputs in [&spread[..], &mixed[..]] {
        check(Exp, &[kernel_inputs], "exp of [-50, 94]");
        check(Expm1, &[kernel_inputs], "expm1 of [-50, 94]");
    }
    check(Asinh, &inputs, "asinh");
    check(Acosh, &inputs, "acosh");
    check(Atanh, &inputs, "atanh");
    let unit: Vec<f32> = mixed.iter().map(|v| v / 200.0).collect();
    check(Atanh, &[&unit], "atanh in (-1, 1)");
    // sin and cos: the C library's past the reduction's limit, in the vectors that have one.
    let mut wide = mixed.clone();
    wide.iter_mut().step_by(37).enumerate().for_each(|(i, v)| *v = 1e5 + i as f32);
    for x in [&patterns, &wide] {
        let plain = |v: f32, fast: fn(f32) -> f32, exact: fn(f32) -> f32| {
            if v.abs() > TRIG_REDUCTION_LIMIT {
                exact(v)
            } else {
                fast(v)
            }
        };
        assert_same_bits(&map_trig(x, sin, f32::sin), x.iter().map(|&v| plain(v, sin, f32::sin)), "sin");
        assert_same_bits(&map_trig(x, cos, f32::cos), x.iter().map(|&v| plain(v, cos, f32::cos)), "cos");
    }
    assert_same_bits(&map_f32(&mixed, Ln), mixed.iter().map(|&v| ln(v)), "Ln is ln");
}

#[test]
fn exp_is_within_two_ulps_and_handles_the_edges() {
    let (err, at) = worst_ulps(sweep(-103.0, 88.7, 400_000), exp, f64::exp);
    assert!(err < 2.0, "exp: {err} ulps at {at}");
    assert_eq!(exp(89.0), f32::INFINITY);
    assert_eq!(exp(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(-200.0), 0.0);
    assert!(exp(f32::NAN).is_nan());
}

#[test]
fn ln_is_within_two_ulps_and_handles_the_edges() {
    let normal = sweep(1e-30, 1e30, 200_000).chain(sweep(0.01, 10.0, 200_000));
    let (err, at) = worst_ulps(normal, ln, f64::ln);
    assert!(err < 2.0, "ln: {err} ulps at {at}");
    let (err, at) = worst_ulps(sweep(1e-45, 1e-38, 10_000), ln, f64::ln);
    assert!(err < 2.0, "ln of subnormals: {err} ulps at {at}");
    assert_eq!(ln(0.0), f32::NEG_INFINITY);
    assert_eq!(ln(f32::INFINITY), f32::INFINITY);
    assert!(ln(-1.0).is_nan() && ln(f32::NAN).is_nan());
}

#[test]
fn log2_log10_and_exp2_are_within_two_ulps_and_handle_the_edges() {
    let positive = || sweep(1e-30, 1e30, 200_000).chain(sweep(0.01, 10.0, 200_000)).chain(sweep(1e-45, 1e-38, 10_000));
    let (err, at) = worst_ulps(positive(), log2, f64::log2);
    assert!(err < 2.0, "log2: {err} ulps at {at}");
    let (err, at) = worst_ulps(positive(), log10, f64::log10);
    assert!(err < 2.0, "log10: {err} ulps at {at}");
    let (err, at) = worst_ulps(sweep(-149.0, 127.9, 400_000).chain(sweep(-1.0, 1.0, 200_000)), exp2, f64::exp2);
    assert!(err < 2.0, "exp2: {err} ulps at {at}");
    for k in -149..128 {
        assert_eq!(exp2(k as f32), (k as f64).exp2() as f32, "2^{k}");
        assert_eq!(log2((k as f64).exp2() as f32), k as f32, "log2 of 2^{k}");
    }
    assert_eq!(log10(1000.0), 3.0);
    assert_eq!(exp2(128.0), f32::INFINITY);
    assert_eq!(exp2(f32::NEG_INFINITY), 0.0);
    for f in [log2, log10] {
        assert_eq!(f(0.0), f32::NEG_INFINITY);
        assert_eq!(f(f32::INFINITY), f32::INFINITY);
        assert!(f(-1.0).is_nan() && f(f32::NAN).is_nan());
    }
    assert!(exp2(f32::NAN).is_nan());
}

#[test]
fn sin_and_cos_are_within_two_ulps_up_to_the_reduction_limit() {
    for (name, fast, exact) in [("sin", sin as fn(f32) -> f32, f64::sin as fn(f64) -> f64), ("cos", cos, f64::cos)] {
        let (err, at) = worst_ulps(sweep(-10.0, 10.0, 400_000), fast, exact);
        assert!(err < 2.0, "{name}: {err} ulps at {at}");
        let (err, at) = worst_ulps(sweep(-TRIG_REDUCTION_LIMIT, TRIG_REDUCTION_LIMIT, 2_000_000), fast, exact);
        assert!(err < 2.0, "{name}: {err} ulps at {at}");
    }
}

#[test]
fn trig_past_the_limit_and_infinities_fall_back_to_the_c_library() {
    let x = [1e5f32, -3e38, f32::INFINITY, 0.5];
    let s = map_trig(&x, sin, f32::sin);
    assert_eq!(s[..2], [1e5f32.sin(), (-3e38f32).sin()]);
    assert!(s[2].is_nan());
    assert_eq!(s[3], sin(0.5));
    assert!(sin(f32::NAN).is_nan() && cos(f32::NAN).is_nan());
    assert_eq!(sin(-0.0).to_bits(), (-0.0f32).to_bits());
}

#[test]
fn tanh_is_within_three_ulps() {
    let (err, at) = worst_ulps(sweep(-12.0, 12.0, 400_000), tanh, f64::tanh);
    assert!(err < 3.0, "tanh: {err} ulps at {at}");
    assert_eq!(tanh(f32::INFINITY), 1.0);
    assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
    assert!(tanh(f32::NAN).is_nan());
    assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
}
