//! Scans along one axis: running sums and products, and the gradient of a running product.
//!
//! A tensor scanned along one dim is a contiguous `(outer, n, inner)` block: `outer`
//! independent scans of `n` steps, each step a row of `inner` elements. Steps add
//! whole rows, so the loops run over contiguous memory in order and vectorise over
//! `inner`; independent blocks run in parallel when the tensor is large.

use super::PARALLEL_MIN_ELEMENTS;
use crate::dtype::{Float, Number};
use rayon::prelude::*;

/// How a scan walks its axis: TF's `reverse` runs from the end, and `exclusive`
/// leaves each element out of its own result (the first result is the identity).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ScanOrder {
    pub reverse: bool,
    pub exclusive: bool,
}

impl ScanOrder {
    /// The row (0..n) of the `k`-th step.
    #[inline]
    fn row(self, k: usize, n: usize) -> usize {
        if self.reverse {
            n - 1 - k
        } else {
            k
        }
    }
}

/// The sizes of a scanned tensor: `outer` blocks of `n` steps of `inner` elements.
#[derive(Copy, Clone, Debug)]
pub struct ScanShape {
    pub outer: usize,
    pub n: usize,
    pub inner: usize,
}

/// Runs `block(x_block, out_block, ...)` over every `(n, inner)` block, in parallel when large.
fn per_block<T: Number>(inputs: &[&[T]], shape: ScanShape, block: impl Fn(&[&[T]], &mut [T]) + Sync + Send) -> Vec<T> {
    let total = shape.outer * shape.n * shape.inner;
    let size = shape.n * shape.inner;
    if size == 0 {
        return crate::storage::zeroed_vec::<T>(total);
    }
    // Every block writes all its elements, so a recycled buffer needs no zeroing.
    let mut out = crate::storage::overwritable_vec::<T>(total);
    let parts = |o: usize| -> Vec<&[T]> { inputs.iter().map(|x| &x[o * size..(o + 1) * size]).collect() };
    if total >= PARALLEL_MIN_ELEMENTS && shape.outer > 1 {
        super::threads::install(|| {
            out.par_chunks_mut(size).enumerate().for_each(|(o, dst)| block(&parts(o), dst));
        });
    } else {
        out.chunks_mut(size).enumerate().for_each(|(o, dst)| block(&parts(o), dst));
    }
    out
}

/// Running combinations (`f` with its `identity`) along the middle axis, accumulated in
/// `T::Acc` (f64 for floats, as torch does on the CPU; i64, wrapping, for integers) and
/// converted to `T` at each output.
fn scan<T: Number>(
    x: &[T],
    shape: ScanShape,
    order: ScanOrder,
    identity: T::Acc,
    f: impl Fn(T::Acc, T::Acc) -> T::Acc + Sync + Send,
) -> Vec<T> {
    let (n, inner) = (shape.n, shape.inner);
    per_block(&[x], shape, |parts, dst| {
        let src = parts[0];
        if inner == 1 {
            let mut running = identity;
            for k in 0..n {
                let i = order.row(k, n);
                if order.exclusive {
                    dst[i] = T::from_acc(running);
                    running = f(running, src[i].to_acc());
                } else {
                    running = f(running, src[i].to_acc());
                    dst[i] = T::from_acc(running);
                }
            }
            return;
        }
        let mut running = vec![identity; inner];
        for k in 0..n {
            let at = order.row(k, n) * inner;
            let (row, out) = (&src[at..at + inner], &mut dst[at..at + inner]);
            if order.exclusive {
                for ((d, r), &v) in out.iter_mut().zip(running.iter_mut()).zip(row) {
                    *d = T::from_acc(*r);
                    *r = f(*r, v.to_acc());
                }
            } else {
                for ((d, r), &v) in out.iter_mut().zip(running.iter_mut()).zip(row) {
                    *r = f(*r, v.to_acc());
                    *d = T::from_acc(*r);
                }
            }
        }
    })
}

/// Running sums along the middle axis of a contiguous `(outer, n, inner)` block.
pub fn cumsum<T: Number>(x: &[T], shape: ScanShape, order: ScanOrder) -> Vec<T> {
    scan(x, shape, order, <T::Acc as Number>::ZERO, |a, b| a.plus(b))
}

/// Running products along the middle axis of a contiguous `(outer, n, inner)` block.
pub fn cumprod<T: Number>(x: &[T], shape: ScanShape, order: ScanOrder) -> Vec<T> {
    scan(x, shape, order, <T::Acc as Number>::ONE, |a, b| a.times(b))
}

/// The gradient of `cumprod(x)` given the output's gradient `g`, exact when `x` holds zeros.
///
/// In scan order, `y_j = x_0 ⋯ x_j`, so `dL/dx_k = (x_0 ⋯ x_{k-1}) · r_k` with
/// `r_k = Σ_{j≥k} g_j · x_{k+1} ⋯ x_j`, which satisfies `r_k = g_k + x_{k+1} · r_{k+1}`.
/// One pass back computes `r`, one pass forward multiplies in the prefix products;
/// nothing is divided, so zeros need no special case. An exclusive scan shifts `g`
/// by one step (`y_j` leaves out `x_j`): `r_k = g_{k+1} + x_{k+1} · r_{k+1}`.
pub fn cumprod_grad<T: Float>(g: &[T], x: &[T], shape: ScanShape, order: ScanOrder) -> Vec<T> {
    let (n, inner) = (shape.n, shape.inner);
    per_block(&[g, x], shape, |parts, dst| {
        let (g, x) = (parts[0], parts[1]);
        let row = |k: usize| order.row(k, n) * inner;
        let mut carry = vec![T::ZERO; inner];
        for k in (0..n).rev() {
            let at = row(k);
            let own = if !order.exclusive {
                Some(&g[at..at + inner])
            } else if k + 1 < n {
                Some(&g[row(k + 1)..row(k + 1) + inner])
            } else {
                None
            };
            let next_x = (k + 1 < n).then(|| &x[row(k + 1)..row(k + 1) + inner]);
            let out = &mut dst[at..at + inner];
            match (own, next_x) {
                (Some(own), Some(next_x)) => {
                    for (((d, r), &gv), &xv) in out.iter_mut().zip(carry.iter_mut()).zip(own).zip(next_x) {
                        *r = gv + xv * *r;
                        *d = *r;
                    }
                }
                (Some(own), None) => {
                    carry.copy_from_slice(own);
                    out.copy_from_slice(own);
                }
                (None, _) => out.fill(T::ZERO),
            }
        }
        let mut prefix = vec![T::ONE; inner];
        for k in 0..n {
            let at = row(k);
            for ((d, p), &xv) in dst[at..at + inner].iter_mut().zip(prefix.iter_mut()).zip(&x[at..at + inner]) {
                *d = *d * *p;
                *p = *p * xv;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(outer: usize, n: usize, inner: usize) -> ScanShape {
        ScanShape { outer, n, inner }
    }

    #[test]
    fn cumsum_runs_along_the_middle_axis_in_every_order() {
        // shape (1, 3, 2): columns [1, 2, 3] and [10, 20, 30]
        let x = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0];
        let plain = cumsum(&x, shape(1, 3, 2), ScanOrder::default());
        assert_eq!(plain, vec![1.0, 10.0, 3.0, 30.0, 6.0, 60.0]);
        let reverse = cumsum(&x, shape(1, 3, 2), ScanOrder { reverse: true, exclusive: false });
        assert_eq!(reverse, vec![6.0, 60.0, 5.0, 50.0, 3.0, 30.0]);
        let exclusive = cumsum(&x, shape(1, 3, 2), ScanOrder { reverse: false, exclusive: true });
        assert_eq!(exclusive, vec![0.0, 0.0, 1.0, 10.0, 3.0, 30.0]);
    }

    #[test]
    fn integer_scans_wrap_in_i64() {
        let x = [i32::MAX, 1, 2];
        assert_eq!(cumsum(&x, shape(1, 3, 1), ScanOrder::default()), vec![i32::MAX, i32::MIN, i32::MIN + 2]);
        assert_eq!(cumprod(&[3u8, 100, 2], shape(1, 3, 1), ScanOrder::default()), vec![3, 44, 88]);
    }

    #[test]
    fn one_column_scans_take_the_line_path() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(cumprod(&x, shape(2, 2, 1), ScanOrder::default()), vec![1.0, 2.0, 3.0, 12.0]);
        let both = ScanOrder { reverse: true, exclusive: true };
        assert_eq!(cumprod(&x, shape(1, 4, 1), both), vec![24.0, 12.0, 4.0, 1.0]);
    }

    /// dL/dx_k of L = Σ g_j y_j, straight from the definition.
    fn naive_grad(g: &[f64], x: &[f64], exclusive: bool) -> Vec<f64> {
        let n = x.len();
        (0..n)
            .map(|k| {
                (0..n)
                    .map(|j| {
                        let terms: Vec<usize> = if exclusive { (0..j).collect() } else { (0..=j).collect() };
                        if !terms.contains(&k) {
                            return 0.0;
                        }
                        g[j] * terms.iter().filter(|&&i| i != k).map(|&i| x[i]).product::<f64>()
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn cumprod_grad_is_exact_with_zeros() {
        let g = [0.5, -1.0, 2.0, 1.5, 0.25];
        for x in [[2.0, 3.0, -1.0, 0.5, 4.0], [2.0, 0.0, 3.0, 0.5, 4.0], [0.0, 3.0, 0.0, 0.5, 0.0]] {
            for exclusive in [false, true] {
                let got = cumprod_grad(&g, &x, shape(1, 5, 1), ScanOrder { reverse: false, exclusive });
                assert_eq!(got, naive_grad(&g, &x, exclusive), "x {x:?}, exclusive {exclusive}");
                let rev = |v: &[f64]| v.iter().rev().copied().collect::<Vec<f64>>();
                let backwards =
                    cumprod_grad(&rev(&g), &rev(&x), shape(1, 5, 1), ScanOrder { reverse: true, exclusive });
                assert_eq!(backwards, rev(&got), "reverse of x {x:?}, exclusive {exclusive}");
            }
        }
    }

    #[test]
    fn cumprod_grad_runs_rows_like_lines() {
        // shape (1, 3, 2): the columns are two independent scans.
        let g = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let x = [2.0, 0.0, 0.0, 3.0, 4.0, 5.0];
        let got = cumprod_grad(&g, &x, shape(1, 3, 2), ScanOrder::default());
        let left = naive_grad(&[1.0, 3.0, 5.0], &[2.0, 0.0, 4.0], false);
        let right = naive_grad(&[2.0, 4.0, 6.0], &[0.0, 3.0, 5.0], false);
        assert_eq!(got, vec![left[0], right[0], left[1], right[1], left[2], right[2]]);
    }
}
