//! Reductions as folds: each element is stepped into an accumulator, and
//! accumulators merge. `prod`, the norms and `all`/`any` are folds; `sum` keeps
//! its own kernels (`reduce.rs`).
//!
//! Every path folds in a fixed order that does not depend on the number of
//! threads, so results are the same on every run. A contiguous run is folded in
//! `RUN_LANES` independent lanes, which lets the compiler vectorise the loop.

use super::layout::walk;
use super::spin_pool::{map_chunks, split_into};
use super::threads::num_threads;
use super::PARALLEL_MIN_ELEMENTS;

/// Elements folded sequentially per chunk of a reduction to one value; fixed so that
/// the order of operations never depends on the number of threads.
pub const CHUNK: usize = 4096;
/// Lanes of `fold_lanes`: with float64 accumulators, four AVX-512 vectors, so four
/// chains of adds hide each other's latency. With eight lanes (one vector) the norm
/// of 1M float32 took 193 µs on one thread, waiting on each add.
const RUN_LANES: usize = 32;

/// How to fold: the accumulator of no elements, how one element enters it, and how
/// two accumulators combine. `merge` must agree with `step` (folding a run in two
/// parts and merging them is folding it whole, up to rounding).
pub trait Fold<T: Copy>: Sync {
    type Acc: Copy + Send + Sync + 'static;
    fn identity(&self) -> Self::Acc;
    fn step(&self, acc: Self::Acc, v: T) -> Self::Acc;
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;

    /// The fold of a contiguous run of at most `CHUNK` elements. A fold may replace
    /// this (and `columns`) with a faster equivalent.
    fn run(&self, x: &[T]) -> Self::Acc {
        fold_lanes_widest(self, x)
    }

    /// Steps `acc[j]` through column `start + j` of every row of `x` (rows of length `width`).
    fn columns(&self, acc: &mut [Self::Acc], x: &[T], width: usize, start: usize) {
        step_columns(acc, x, width, start, |a, v| self.step(a, v));
    }
}

/// Groups of four rows of `x` (rows of `width`), each cut to the columns `start..start + len`,
/// and then the rows left over, one by one. A column loop that steps each accumulator through
/// a group's four rows in order loads and stores it once per group instead of once per row,
/// and runs the same operations in the same order as a loop over single rows.
#[inline(always)]
pub(super) fn rows_by_four<T>(
    x: &[T],
    width: usize,
    start: usize,
    len: usize,
) -> (impl Iterator<Item = [&[T]; 4]>, impl Iterator<Item = &[T]>) {
    fn cut<T>(row: &[T], start: usize, len: usize) -> &[T] {
        &row[start..start + len]
    }
    let columns = move |row| cut(row, start, len);
    let groups = x.chunks_exact(4 * width.max(1));
    let rest = groups.remainder().chunks(width.max(1)).map(columns);
    let groups = groups.map(move |g| [0, 1, 2, 3].map(|i| columns(&g[i * width..(i + 1) * width])));
    (groups, rest)
}

/// `step_columns` steps four rows per pass when it reads at most this many bytes in all (an
/// eighth of the last-level cache of the 2-core EPYC we measure on). Larger inputs come from
/// memory rather than cache, and reading four rows at once was slower there: `sum(0)` of
/// 16384×1024 float32 (8 MiB per block of rows) took 3.4–3.5 ms against 2.7 one row at a time
/// on one thread.
const FOUR_ROWS_MAX_BYTES: usize = 4 << 20;

/// Steps `acc[j]` through column `start + j` of every row of `x` (rows of `width`), rows
/// in order; four rows per pass over `acc` (see `rows_by_four`) when the columns read are
/// few enough to sit in cache.
#[inline(always)]
pub(super) fn step_columns<A: Copy, T: Copy>(
    acc: &mut [A],
    x: &[T],
    width: usize,
    start: usize,
    step: impl Fn(A, T) -> A,
) {
    let len = acc.len();
    let step_row = |acc: &mut [A], row: &[T]| {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a = step(*a, v);
        }
    };
    let bytes_read = (x.len() / width.max(1)) * len * std::mem::size_of::<T>();
    if bytes_read > FOUR_ROWS_MAX_BYTES {
        x.chunks(width.max(1)).for_each(|row| step_row(acc, &row[start..start + len]));
        return;
    }
    let (groups, rest) = rows_by_four(x, width, start, len);
    for [r0, r1, r2, r3] in groups {
        for ((((a, &v0), &v1), &v2), &v3) in acc.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3) {
            *a = step(step(step(step(*a, v0), v1), v2), v3);
        }
    }
    rest.for_each(|row| step_row(acc, row));
}

widest_vectors! {
    /// `fold_lanes` with the widest vectors the CPU has: the same steps in the same
    /// order, so the same bits.
    fn fold_lanes_widest[T: Copy, F: Fold<T> + ?Sized](f: &F, x: &[T]) -> F::Acc => fold_lanes(f, x);
}

/// Folds a contiguous run in `RUN_LANES` interleaved lanes, then merges the lanes in order.
#[inline(always)]
pub fn fold_lanes<T: Copy, F: Fold<T> + ?Sized>(f: &F, x: &[T]) -> F::Acc {
    let mut lanes = [f.identity(); RUN_LANES];
    let mut blocks = x.chunks_exact(RUN_LANES);
    for block in &mut blocks {
        for (lane, &v) in lanes.iter_mut().zip(block) {
            *lane = f.step(*lane, v);
        }
    }
    let mut acc = lanes.iter().fold(f.identity(), |a, &b| f.merge(a, b));
    for &v in blocks.remainder() {
        acc = f.step(acc, v);
    }
    acc
}

#[inline]
pub(super) fn fold_run<T: Copy, F: Fold<T>>(f: &F, x: &[T]) -> F::Acc {
    f.run(x)
}

/// The fold of a whole contiguous slice: fixed chunks, in parallel when large, merged in order.
pub(super) fn fold_all<T: Copy + Sync, F: Fold<T>>(f: &F, x: &[T]) -> F::Acc {
    let poller = crate::interrupt::Poller::here();
    let partial = |chunk: &[T]| {
        poller.poll();
        fold_run(f, chunk)
    };
    map_chunks(x, CHUNK, partial).into_iter().fold(f.identity(), |a, b| f.merge(a, b))
}

/// Folds a contiguous tensor of `shape` over the sorted, deduplicated `dims`. The
/// result is row-major over the kept dims (one accumulator per output element).
pub fn fold_dims<T: Copy + Sync, F: Fold<T>>(f: &F, x: &[T], shape: &[usize], dims: &[usize]) -> Vec<F::Acc> {
    let rank = shape.len();
    let kept: usize = (0..rank).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
    if kept == 0 {
        return Vec::new();
    }
    if dims.len() == rank {
        return vec![fold_all(f, x)];
    }
    let is_suffix = dims.iter().enumerate().all(|(i, &d)| d == rank - dims.len() + i);
    let is_prefix = dims.iter().enumerate().all(|(i, &d)| d == i);
    if is_suffix {
        let row: usize = dims.iter().map(|&d| shape[d]).product();
        return fold_rows(f, x, row, kept);
    }
    if is_prefix {
        return fold_columns(f, x, kept);
    }
    fold_general(f, x, shape, dims, kept)
}

/// Each output folds one contiguous row of length `row`.
fn fold_rows<T: Copy + Sync, F: Fold<T>>(f: &F, x: &[T], row: usize, rows: usize) -> Vec<F::Acc> {
    if row == 0 {
        return crate::storage::collect_vec(rows, std::iter::repeat(f.identity()));
    }
    let fold_row = |r: &[T]| r.chunks(CHUNK).map(|c| fold_run(f, c)).fold(f.identity(), |a, b| f.merge(a, b));
    map_chunks(x, row, fold_row)
}

/// Folds `x`, viewed as rows of length `width`, down to one row: each step reads a
/// whole row in order, so the inner loop runs over contiguous memory. Large inputs
/// split the columns among threads.
///
/// The folds run on the spin pool (`split_into`: the caller takes the first part), not
/// on rayon's pool: a caller outside it waits while a parked worker wakes, and `prod(0)`
/// of 1024×1024 float32 gained little from a second thread (98–111 µs against 71–90 on
/// the spin pool, docs/performance.md).
fn fold_columns<T: Copy + Sync, F: Fold<T>>(f: &F, x: &[T], width: usize) -> Vec<F::Acc> {
    let fold_block = |start: usize, acc: &mut [F::Acc]| f.columns(acc, x, width, start);
    let mut acc = crate::storage::collect_vec(width, std::iter::repeat(f.identity()));
    let block = width.div_ceil(num_threads()).max(64);
    if x.len() >= PARALLEL_MIN_ELEMENTS && block < width {
        split_into(width.div_ceil(block), &mut acc, fold_block);
    } else {
        fold_block(0, &mut acc);
    }
    acc
}

fn fold_general<T: Copy, F: Fold<T>>(f: &F, x: &[T], shape: &[usize], dims: &[usize], kept: usize) -> Vec<F::Acc> {
    let in_strides = crate::shape::contiguous_strides(shape);
    let kept_shape: Vec<usize> = (0..shape.len()).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let mut out_strides = crate::shape::contiguous_strides(&kept_shape);
    for &d in dims {
        out_strides[d] = 0;
    }
    let mut acc = crate::storage::collect_vec(kept, std::iter::repeat(f.identity()));
    walk(shape, [&in_strides, &out_strides], [0, 0], |[i, o]| acc[o] = f.step(acc[o], x[i]));
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain;

    impl Fold<f64> for Plain {
        type Acc = f64;
        fn identity(&self) -> f64 {
            1.0
        }
        fn step(&self, acc: f64, v: f64) -> f64 {
            acc * v
        }
        fn merge(&self, a: f64, b: f64) -> f64 {
            a * b
        }
    }

    #[test]
    fn every_path_agrees_with_the_general_walk() {
        let shape = [3, 4, 5];
        let x: Vec<f64> = (0..60).map(|i| 1.0 + (i as f64).sin() / 4.0).collect();
        for dims in [vec![0], vec![1], vec![2], vec![0, 1], vec![1, 2], vec![0, 2], vec![0, 1, 2]] {
            let kept = (0..3).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
            let fast = fold_dims(&Plain, &x, &shape, &dims);
            let slow = fold_general(&Plain, &x, &shape, &dims, kept);
            assert_eq!(fast.len(), slow.len(), "dims {dims:?}");
            for (a, b) in fast.iter().zip(&slow) {
                assert!((a - b).abs() < 1e-12 * b.abs(), "dims {dims:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn columns_by_four_rows_give_the_bits_of_one_row_at_a_time() {
        let width = 7;
        let past_the_four_row_limit = FOUR_ROWS_MAX_BYTES / (8 * width) + 5; // rows of f64
        for rows in (0..11).chain([past_the_four_row_limit]) {
            let x: Vec<f64> = (0..rows * width).map(|i| 1.0 + (i as f64).sin() / 3.0).collect();
            for (start, len) in [(0, width), (2, 3), (6, 1), (3, 0)] {
                let mut fast = vec![0.5f64; len];
                step_columns(&mut fast, &x, width, start, |a, v| a * 0.5 + v);
                let mut slow = vec![0.5f64; len];
                for row in x.chunks(width) {
                    for (a, &v) in slow.iter_mut().zip(&row[start..start + len]) {
                        *a = *a * 0.5 + v;
                    }
                }
                assert_eq!(fast, slow, "{rows} rows, columns {start}..{}", start + len);
            }
        }
    }

    #[test]
    fn empty_dims_fold_to_the_identity() {
        assert_eq!(fold_dims(&Plain, &[], &[0, 3], &[0]), vec![1.0, 1.0, 1.0]);
        assert_eq!(fold_dims(&Plain, &[], &[3, 0], &[1]), vec![1.0, 1.0, 1.0]);
        assert_eq!(fold_dims(&Plain, &[], &[3, 0], &[0]), Vec::<f64>::new());
    }

    #[test]
    fn large_inputs_fold_the_same_in_parallel() {
        let n = PARALLEL_MIN_ELEMENTS * 2 + 5;
        let x: Vec<f64> = (0..n).map(|i| 1.0 + ((i % 7) as f64 - 3.0) * 1e-7).collect();
        let serial = x.chunks(CHUNK).map(|c| fold_run(&Plain, c)).fold(1.0, |a, b| a * b);
        assert_eq!(fold_dims(&Plain, &x, &[n], &[0]), vec![serial]);
        let columns = fold_dims(&Plain, &x[..n - 5], &[n / 128, 128], &[0]);
        let slow = fold_general(&Plain, &x[..n - 5], &[n / 128, 128], &[0], 128);
        assert_eq!(columns, slow);
    }
}
