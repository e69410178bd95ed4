//! The large step's five products on `kernels::matmul` alone, with their outputs allocated
//! once: `matmul_into` (a fresh output) for x·w1, h·w2 and g2·w2ᵀ, `matmul_accumulate_into`
//! (the weight updated in place) for the two weight gradients xᵀ·g and hᵀ·g2.
//!
//!     cargo run --release --example large_products [rounds] [M×K×N[ᵀ] ...]
//!
//! Shapes given after the rounds replace the step's products (a trailing ᵀ: A transposed,
//! as a fresh output like the others).
//! Prints ms and the share of `PEAK` GFLOP/s per product: the median of each round's median
//! of five calls (best round in brackets). `RUSTGRAD_GEMM=crate` runs them on the `gemm` crate.

use rustgrad::kernels::matmul::{matmul_accumulate_into, matmul_into, MatRef};
use std::time::Instant;

/// The FMA peak of the 2-core AVX-512 EPYC on two threads (`python benchmarks/fma_probe.py`).
const PEAK_GFLOPS: f64 = 234.0;

struct Product {
    name: String,
    m: usize,
    k: usize,
    n: usize,
    transposed_a: bool,
    in_place: bool,
}

fn step_products() -> Vec<Product> {
    let product =
        |name: &str, (m, k, n), transposed_a, in_place| Product { name: name.into(), m, k, n, transposed_a, in_place };
    vec![
        product("x·w1", (1024, 4096, 4096), false, false),
        product("h·w2", (1024, 4096, 1000), false, false),
        product("xᵀ·g (into w1)", (4096, 1024, 4096), true, true),
        product("hᵀ·g2 (into w2)", (4096, 1024, 1000), true, true),
        product("2048²", (2048, 2048, 2048), false, false),
    ]
}

/// "M×K×N" or "M×K×Nᵀ" (also with x for ×).
fn parse_product(text: &str) -> Product {
    let transposed_a = text.ends_with('ᵀ');
    let dims: Vec<usize> =
        text.trim_end_matches('ᵀ').split(['×', 'x']).map(|d| d.parse().expect("a shape: M×K×N")).collect();
    assert!(dims.len() == 3, "a shape: M×K×N, not {text}");
    Product { name: text.into(), m: dims[0], k: dims[1], n: dims[2], transposed_a, in_place: false }
}

fn time_product(p: &Product, a: &[f32], b: &[f32], out: &mut [f32]) -> f64 {
    let (m, k, n) = (p.m, p.k, p.n);
    let strides = if p.transposed_a { (1, m as isize) } else { (k as isize, 1) };
    let a = MatRef::new(a, 0, (m, k), strides).expect("a fits");
    let b = MatRef::new(b, 0, (k, n), (n as isize, 1)).expect("b fits");
    let mut calls = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        if p.in_place {
            matmul_accumulate_into(a, b, out, None, -1e-6);
        } else {
            matmul_into(a, b, out, 1.0, 0.0);
        }
        calls.push(start.elapsed().as_secs_f64());
    }
    calls.sort_by(f64::total_cmp);
    calls[2]
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(3, |r| r.parse().expect("rounds: a number"));
    let shapes: Vec<Product> = std::env::args().skip(2).map(|s| parse_product(&s)).collect();
    let products = if shapes.is_empty() { step_products() } else { shapes };
    for p in &products {
        let (m, k, n) = (p.m, p.k, p.n);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.01).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.01).collect();
        let mut out = vec![0.0f32; m * n];
        let mut medians: Vec<f64> = (0..rounds).map(|_| time_product(p, &a, &b, &mut out)).collect();
        medians.sort_by(f64::total_cmp);
        let share = |seconds: f64| 2.0 * (m * n * k) as f64 / seconds / 1e9 / PEAK_GFLOPS * 100.0;
        let (median, best) = (medians[rounds / 2], medians[0]);
        println!(
            "{:16} {m}×{k}×{n}: {:.1} ms ({:.1}), {:.1}% of peak ({:.1})",
            p.name,
            median * 1e3,
            best * 1e3,
            share(median),
            share(best)
        );
    }
}
