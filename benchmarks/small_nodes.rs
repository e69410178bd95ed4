//! The static seed step's small nodes called alone from Rust: the relu's masked gradient
//! (64×100) and the three products with 10 columns or a depth of 10, µs per call (the
//! median of 7 rounds of 2000 calls), three times.
//!
//!     cargo run --release --example small_nodes
//!
//! `--profile quick` builds it faster, but see "Tried on the AVX-512 EPYC and not merged
//! (2026-12-06)" in docs/performance.md: that profile does not vectorise some generic loops
//! that the release build does.

use rustgrad::forward::{mask_grad_threshold, matmul2d};
use rustgrad::kernels::elementwise::CmpOp;
use rustgrad::tensor::Tensor;
use std::time::Instant;

fn matrix(rows: usize, cols: usize, step: usize) -> Tensor {
    let values: Vec<f32> = (0..rows * cols).map(|i| (((i * step) % 17) as f32 - 8.0) * 0.1).collect();
    Tensor::from_vec(values, vec![rows, cols]).expect("a matrix")
}

fn median_us(name: &str, call: impl Fn()) {
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            (0..2000).for_each(|_| call());
            start.elapsed().as_secs_f64() / 2000.0 * 1e6
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    print!("{name} {:.2}  ", rounds[3]);
}

fn main() {
    let (h, w2, g2, g) = (matrix(64, 100, 3), matrix(100, 10, 5), matrix(64, 10, 7), matrix(64, 100, 11));
    for _ in 0..3 {
        median_us("relu mask 64×100", || drop(mask_grad_threshold(&g, &h, CmpOp::Gt, 0.0, true)));
        median_us("h·w2 64×100×10", || drop(matmul2d(&h, &w2, false, false)));
        median_us("g2·w2ᵀ 64×10×100", || drop(matmul2d(&g2, &w2, false, true)));
        median_us("hᵀ·g2 100×64×10", || drop(matmul2d(&h, &g2, true, false)));
        println!();
    }
}
