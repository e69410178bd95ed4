//! Variance: the sum of squared deviations from the mean, in two passes (the mean,
//! then the deviations), accumulated in f64. Two passes lose nothing to cancellation
//! when the mean is large against the spread, as numpy's `var` does not either.

use super::fold::{fold_all, fold_dims, fold_run, Fold, CHUNK};
use super::layout::walk;
use super::PARALLEL_MIN_ELEMENTS;
use crate::dtype::Float;
use rayon::prelude::*;

struct Sum;

impl<T: Float> Fold<T> for Sum {
    type Acc = f64;
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline]
    fn step(&self, acc: f64, v: T) -> f64 {
        acc + v.to_f64()
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

/// Σ (v - mean)² over a run.
struct SquaredDeviation(f64);

impl<T: Float> Fold<T> for SquaredDeviation {
    type Acc = f64;
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline]
    fn step(&self, acc: f64, v: T) -> f64 {
        let d = v.to_f64() - self.0;
        acc + d * d
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

fn deviations_of_row<T: Float>(row: &[T], mean: f64) -> f64 {
    let f = SquaredDeviation(mean);
    row.chunks(CHUNK).map(|c| fold_run(&f, c)).sum()
}

/// For each output element of a reduction over the sorted `dims` of a contiguous
/// tensor of `shape`: the sum of squared deviations from the mean of its elements
/// (NaN when it has none). Row-major over the kept dims.
pub fn squared_deviations<T: Float>(x: &[T], shape: &[usize], dims: &[usize]) -> Vec<f64> {
    let rank = shape.len();
    let count: usize = dims.iter().map(|&d| shape[d]).product();
    let means: Vec<f64> = fold_dims(&Sum, x, shape, dims).into_iter().map(|s| s / count as f64).collect();
    let kept = means.len();
    if kept == 0 || count == 0 {
        return means.iter().map(|_| f64::NAN).collect();
    }
    if dims.len() == rank {
        return vec![fold_all(&SquaredDeviation(means[0]), x)];
    }
    let is_suffix = dims.iter().enumerate().all(|(i, &d)| d == rank - dims.len() + i);
    let is_prefix = dims.iter().enumerate().all(|(i, &d)| d == i);
    if is_suffix {
        let row_deviations = |(row, &mean): (&[T], &f64)| deviations_of_row(row, mean);
        if x.len() >= PARALLEL_MIN_ELEMENTS {
            let mut out = crate::storage::vec_with_capacity(kept);
            super::threads::install(|| x.par_chunks(count).zip(&means).map(row_deviations).collect_into_vec(&mut out));
            return out;
        }
        return x.chunks(count).zip(&means).map(row_deviations).collect();
    }
    if is_prefix {
        let mut acc = vec![0.0f64; kept];
        for row in x.chunks(kept) {
            for ((a, &v), &m) in acc.iter_mut().zip(row).zip(&means) {
                let d = v.to_f64() - m;
                *a += d * d;
            }
        }
        return acc;
    }
    let in_strides = crate::shape::contiguous_strides(shape);
    let kept_shape: Vec<usize> = (0..rank).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let mut out_strides = crate::shape::contiguous_strides(&kept_shape);
    for &d in dims {
        out_strides[d] = 0;
    }
    let mut acc = vec![0.0f64; kept];
    walk(shape, [&in_strides, &out_strides], [0, 0], |[i, o]| {
        let d = x[i].to_f64() - means[o];
        acc[o] += d * d;
    });
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64], shape: &[usize], dims: &[usize]) -> Vec<f64> {
        let in_strides = crate::shape::contiguous_strides(shape);
        let kept_shape: Vec<usize> = (0..shape.len()).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
        let kept: usize = kept_shape.iter().product();
        let mut out_strides = crate::shape::contiguous_strides(&kept_shape);
        for &d in dims {
            out_strides[d] = 0;
        }
        let mut groups = vec![Vec::new(); kept];
        walk(shape, [&in_strides, &out_strides], [0, 0], |[i, o]| groups[o].push(x[i]));
        groups
            .iter()
            .map(|g| {
                let mean = g.iter().sum::<f64>() / g.len() as f64;
                g.iter().map(|v| (v - mean) * (v - mean)).sum()
            })
            .collect()
    }

    #[test]
    fn every_path_agrees_with_the_definition() {
        let shape = [3, 4, 5];
        let x: Vec<f64> = (0..60).map(|i| 1e6 + (i as f64).sin()).collect();
        for dims in [vec![0], vec![1], vec![2], vec![0, 1], vec![1, 2], vec![0, 2], vec![0, 1, 2]] {
            let fast = squared_deviations(&x, &shape, &dims);
            let slow = naive(&x, &shape, &dims);
            for (a, b) in fast.iter().zip(&slow) {
                assert!((a - b).abs() < 1e-9 * b.abs(), "dims {dims:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn no_elements_have_no_mean() {
        assert!(squared_deviations::<f64>(&[], &[0, 3], &[0]).iter().all(|v| v.is_nan()));
        assert!(squared_deviations::<f32>(&[], &[0], &[0])[0].is_nan());
    }
}
