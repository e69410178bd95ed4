//! Sum reductions. Every path accumulates in a fixed order (floats in f64,
//! integers in i64 with wrap-around), so results are bitwise identical across
//! runs and thread counts.

use super::fold::step_columns;
use super::layout::walk;
use super::spin_pool::{map_chunks, map_chunks_into};
use super::threads::num_threads;
use super::PARALLEL_MIN_ELEMENTS;
use crate::dtype::Number;

/// Elements summed sequentially per chunk before chunks are combined; fixed so
/// that the order of additions never depends on the number of threads.
const CHUNK: usize = 4096;

/// The sum of the partial sums. It starts from +0.0: `Iterator::sum` of f64
/// starts from -0.0, which made the sum of no elements -0.0 (numpy and PyTorch
/// give 0.0). Partials are sums from +0.0, so for any other input the two agree
/// bit for bit.
fn total<A: Number>(partials: &[A]) -> A {
    partials.iter().fold(A::ZERO, |acc, &p| acc.plus(p))
}

/// Independent running sums per slice: one accumulator would make every addition
/// wait for the one before (a sum ran at a third of numpy's speed that way). With f64
/// accumulators, 32 lanes are four AVX-512 vectors, four chains of adds.
const LANES: usize = 32;

widest_vectors! {
    /// The sum of `f(v)` over a slice: element i goes to lane i % LANES, and the lanes are
    /// added in order at the end, so the order of additions depends only on the slice.
    fn sum_slice[T: Number](x: &[T], f: impl Fn(T) -> T) -> T::Acc => sum_lanes(x, f);
}

#[inline(always)]
fn sum_lanes<T: Number>(x: &[T], f: impl Fn(T) -> T) -> T::Acc {
    let mut lanes = [T::Acc::ZERO; LANES];
    let blocks = x.chunks_exact(LANES);
    let tail = blocks.remainder();
    for block in blocks {
        for (lane, &v) in lanes.iter_mut().zip(block) {
            *lane = lane.plus(f(v).to_acc());
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(tail) {
        *lane = lane.plus(f(v).to_acc());
    }
    lanes.iter().fold(T::Acc::ZERO, |acc, &lane| acc.plus(lane))
}

/// The sum of `f(v)` over all elements, in the fixed order of `sum_all`.
fn sum_all_of<T: Number>(x: &[T], f: impl Fn(T) -> T + Sync + Send) -> T {
    let poller = crate::interrupt::Poller::here();
    let partial = |chunk: &[T]| {
        poller.poll();
        sum_slice(chunk, &f)
    };
    T::from_acc(total(&map_chunks(x, CHUNK, partial)))
}

/// The sum of all elements.
pub fn sum_all<T: Number>(x: &[T]) -> T {
    sum_all_of(x, |v| v)
}

/// The sum of the squares of all elements, bitwise equal to `sum_all` of the
/// squares (each square is rounded to T before it is added).
pub fn sum_of_squares<T: Number>(x: &[T]) -> T {
    sum_all_of(x, |v| v.times(v))
}

/// Sums a contiguous tensor of `shape` over the sorted, deduplicated `dims`.
/// The result is row-major over the kept dims.
pub fn sum_dims<T: Number>(x: &[T], shape: &[usize], dims: &[usize]) -> Vec<T> {
    let rank = shape.len();
    let kept: usize = (0..rank).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
    if kept == 0 {
        return Vec::new();
    }
    if dims.len() == rank || x.len() == kept && dims.iter().all(|&d| shape[d] == 1) {
        return if dims.len() == rank { vec![sum_all(x)] } else { super::layout::copy_slice(x) };
    }
    let is_suffix = dims.iter().enumerate().all(|(i, &d)| d == rank - dims.len() + i);
    let is_prefix = dims.iter().enumerate().all(|(i, &d)| d == i);
    if is_suffix {
        let row: usize = dims.iter().map(|&d| shape[d]).product();
        return sum_rows(x, row, kept);
    }
    if is_prefix {
        return sum_columns(x, kept);
    }
    if let Some((outer, inner)) = around_kept_block(shape, dims) {
        return sum_around(x, outer, kept, inner);
    }
    sum_general(x, shape, dims, kept)
}

/// When `dims` are a leading run and a trailing run of axes with every kept axis between
/// them (NCHW's per-channel sum over (0, 2, 3)): the sizes of the leading and trailing blocks.
fn around_kept_block(shape: &[usize], dims: &[usize]) -> Option<(usize, usize)> {
    let leading = dims.iter().enumerate().take_while(|&(i, &d)| d == i).count();
    let trailing = &dims[leading..];
    let first_trailing = shape.len().checked_sub(trailing.len())?;
    let contiguous = trailing.iter().enumerate().all(|(i, &d)| d == first_trailing + i);
    (leading > 0 && !trailing.is_empty() && contiguous).then(|| {
        let outer = shape[..leading].iter().product();
        let inner = shape[first_trailing..].iter().product();
        (outer, inner)
    })
}

/// Sums `x` viewed as (outer, kept, inner) over its first and last axes: each contiguous
/// row of `inner` elements is summed as `sum_rows` sums a row, then added to its kept
/// position's total, rows in order.
fn sum_around<T: Number>(x: &[T], outer: usize, kept: usize, inner: usize) -> Vec<T> {
    let mut acc = crate::storage::zeroed_vec::<T::Acc>(kept);
    if inner > 0 {
        for block in x.chunks(kept * inner).take(outer) {
            for (a, row) in acc.iter_mut().zip(block.chunks(inner)) {
                let row_sum = row.chunks(CHUNK).fold(T::Acc::ZERO, |t, c| t.plus(sum_slice(c, |v| v)));
                *a = a.plus(row_sum);
            }
        }
    }
    crate::storage::collect_vec(acc.len(), acc.iter().map(|&a| T::from_acc(a)))
}

/// Each output is the sum of one contiguous row of length `row`.
fn sum_rows<T: Number>(x: &[T], row: usize, rows: usize) -> Vec<T> {
    if row == 0 {
        return crate::storage::zeroed_vec(rows);
    }
    let sum_row = |r: &[T]| {
        let partials: Vec<T::Acc> = r.chunks(CHUNK).map(|c| sum_slice(c, |v| v)).collect();
        T::from_acc(total(&partials))
    };
    map_chunks(x, row, sum_row)
}

/// Sums `x` viewed as rows of length `width` down to one row.
fn sum_columns<T: Number>(x: &[T], width: usize) -> Vec<T> {
    let zeros = |_: &[T]| crate::storage::zeroed_vec::<T::Acc>(width);
    let add = |acc: &mut [T::Acc], rows: &[T]| add_columns(acc, rows, width);
    let merge = |acc: &mut [T::Acc], part: &[T::Acc]| acc.iter_mut().zip(part).for_each(|(a, &p)| *a = a.plus(p));
    let acc = reduce_columns(x, width, zeros, add, merge);
    crate::storage::collect_vec(acc.len(), acc.iter().map(|&a| T::from_acc(a)))
}

/// Row blocks of a large column reduction: a fixed number, so that the order of operations
/// does not depend on the number of threads. Each thread streams whole rows; splitting the
/// columns instead made each thread read half of every row, and the sum over dim 0 of
/// 16384×1024 float32 took 5.0 ms against 3.1 ms on one thread.
const ROW_BLOCKS: usize = 8;

/// Reduces `x` (rows of `width`) over its rows: `start(block)` makes a block's accumulators
/// and `fold(acc, rest)` steps them through rows in order; a large input is cut into
/// `ROW_BLOCKS` blocks of rows, reduced in parallel and merged in order.
fn reduce_columns<T: Sync, A: Send>(
    x: &[T],
    width: usize,
    start: impl Fn(&[T]) -> Vec<A> + Sync,
    fold: impl Fn(&mut [A], &[T]) + Sync,
    merge: impl Fn(&mut [A], &[A]),
) -> Vec<A> {
    let rows = x.len() / width.max(1);
    let run = |block: &[T]| {
        let mut acc = start(block);
        fold(&mut acc, block);
        acc
    };
    if x.len() < PARALLEL_MIN_ELEMENTS || width == 0 || rows < 2 * ROW_BLOCKS {
        return run(x);
    }
    let block_len = rows.div_ceil(ROW_BLOCKS) * width;
    let mut parts: Vec<Vec<A>> = std::iter::repeat_with(Vec::new).take(x.len().div_ceil(block_len)).collect();
    map_chunks_into(num_threads(), &mut parts, x, block_len, run);
    let mut parts = parts.into_iter();
    let mut acc = parts.next().unwrap_or_default();
    for part in parts {
        merge(&mut acc, &part);
    }
    acc
}

widest_vectors! {
    /// Adds column `j` of every row of `x` (rows of `width`) into `acc[j]`, rows in order.
    fn add_columns[T: Number](acc: &mut [T::Acc], x: &[T], width: usize) =>
        step_columns(acc, x, width, 0, |a, v| a.plus(v.to_acc()));
}

fn sum_general<T: Number>(x: &[T], shape: &[usize], dims: &[usize], kept: usize) -> Vec<T> {
    let in_strides = crate::shape::contiguous_strides(shape);
    let kept_shape: Vec<usize> = (0..shape.len()).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let mut out_strides = crate::shape::contiguous_strides(&kept_shape);
    for &d in dims {
        out_strides[d] = 0;
    }
    let mut acc = crate::storage::zeroed_vec::<T::Acc>(kept);
    walk(shape, [&in_strides, &out_strides], [0, 0], |[i, o]| acc[o] = acc[o].plus(x[i].to_acc()));
    crate::storage::collect_vec(acc.len(), acc.iter().map(|&a| T::from_acc(a)))
}

/// The largest (or smallest) element over `dims` of a contiguous tensor; NaN propagates.
/// Reducing an empty dim has no answer, so the caller rejects it first.
pub fn extreme_dims<T: Number>(x: &[T], shape: &[usize], dims: &[usize], largest: bool) -> Vec<T> {
    let rank = shape.len();
    let kept: usize = (0..rank).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
    if kept == 0 || x.is_empty() {
        return crate::storage::zeroed_vec(kept);
    }
    let is_suffix = dims.iter().enumerate().all(|(i, &d)| d == rank - dims.len() + i);
    let is_prefix = dims.iter().enumerate().all(|(i, &d)| d == i);
    if is_suffix {
        let row = x.len() / kept;
        let best_of = |r: &[T]| best_in_row(r, largest);
        return map_chunks(x, row, best_of);
    }
    if is_prefix {
        return best_in_columns(x, kept, largest);
    }
    extreme_general(x, shape, dims, kept, largest)
}

/// `candidate` if it beats `best` or is NaN, else `best`: once NaN, a running best stays NaN.
#[inline(always)]
pub(super) fn better<T: Number>(best: T, candidate: T, largest: bool) -> T {
    let beats = if largest { candidate > best } else { candidate < best };
    std::hint::select_unpredictable(beats || candidate.is_nan(), candidate, best)
}

/// Lanes of `best_in_row`'s generic loop.
const BEST_LANES: usize = 16;

/// The best of a non-empty row, kept in independent lanes so the loop vectorises.
pub(super) fn best_in_row<T: Number>(row: &[T], largest: bool) -> T {
    #[cfg(target_arch = "x86_64")]
    if let (Some(row), true) = (super::float32::as_f32(row), super::extreme_f32::available()) {
        if let Some(best) = super::float32::from_f32(super::extreme_f32::best_in_row(row, largest)) {
            return best;
        }
    }
    let mut lanes = [row[0]; BEST_LANES];
    let blocks = row.chunks_exact(BEST_LANES);
    let tail = blocks.remainder();
    for block in blocks {
        for (lane, &v) in lanes.iter_mut().zip(block) {
            *lane = better(*lane, v, largest);
        }
    }
    let mut best = tail.iter().fold(row[0], |b, &v| better(b, v, largest));
    for &lane in &lanes {
        best = better(best, lane, largest);
    }
    best
}

/// The best of each column of `x` viewed as rows of length `width`.
fn best_in_columns<T: Number>(x: &[T], width: usize, largest: bool) -> Vec<T> {
    let first_row = |block: &[T]| super::layout::copy_slice(&block[..width]);
    let step = |best: &mut [T], block: &[T]| best_columns(best, &block[width..], width, largest);
    let merge = |best: &mut [T], part: &[T]| best.iter_mut().zip(part).for_each(|(b, &p)| *b = better(*b, p, largest));
    reduce_columns(x, width, first_row, step, merge)
}

widest_vectors! {
    /// Steps `best[j]` through column `j` of every row of `x` (rows of `width`), rows in order.
    fn best_columns[T: Number](best: &mut [T], x: &[T], width: usize, largest: bool) =>
        step_columns(best, x, width, 0, |b, v| better(b, v, largest));
}

fn extreme_general<T: Number>(x: &[T], shape: &[usize], dims: &[usize], kept: usize, largest: bool) -> Vec<T> {
    let kept_shape: Vec<usize> = (0..shape.len()).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let in_strides = crate::shape::contiguous_strides(shape);
    let mut out_strides = crate::shape::contiguous_strides(&kept_shape);
    for &d in dims {
        out_strides[d] = 0;
    }
    let mut acc: Vec<Option<T>> = crate::storage::collect_vec(kept, std::iter::repeat(None));
    walk(shape, [&in_strides, &out_strides], [0, 0], |[i, o]| {
        let v = x[i];
        acc[o] = Some(match acc[o] {
            None => v,
            Some(best) => better(best, v, largest),
        });
    });
    crate::storage::collect_vec(kept, acc.iter().map(|v| v.unwrap_or(T::ZERO)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64], shape: &[usize], dims: &[usize]) -> Vec<f64> {
        sum_general(x, shape, dims, (0..shape.len()).filter(|d| !dims.contains(d)).map(|d| shape[d]).product())
    }

    #[test]
    fn every_path_agrees_with_the_general_walk() {
        let shape = [3, 4, 5];
        let x: Vec<f64> = (0..60).map(|i| (i as f64).sin()).collect();
        for dims in [vec![0], vec![1], vec![2], vec![0, 1], vec![1, 2], vec![0, 2], vec![0, 1, 2]] {
            let fast = sum_dims(&x, &shape, &dims);
            let slow = naive(&x, &shape, &dims);
            assert_eq!(fast.len(), slow.len(), "dims {dims:?}");
            for (f, s) in fast.iter().zip(&slow) {
                assert!((f - s).abs() < 1e-12, "dims {dims:?}: {f} vs {s}");
            }
        }
    }

    #[test]
    fn sums_around_a_kept_block_agree_with_the_general_walk() {
        let shape = [3, 4, 5, 6];
        let x: Vec<f64> = (0..360).map(|i| (i as f64 * 0.7).cos()).collect();
        for dims in [vec![0, 2, 3], vec![0, 3], vec![0, 1, 3], vec![0, 1, 2, 3]] {
            assert!(dims.len() == 4 || around_kept_block(&shape, &dims).is_some(), "dims {dims:?}");
            let fast = sum_dims(&x, &shape, &dims);
            let slow = naive(&x, &shape, &dims);
            assert_eq!(fast.len(), slow.len(), "dims {dims:?}");
            for (f, s) in fast.iter().zip(&slow) {
                assert!((f - s).abs() < 1e-12, "dims {dims:?}: {f} vs {s}");
            }
        }
        assert_eq!(around_kept_block(&shape, &[0, 2]), None, "a kept axis after the trailing run");
        assert_eq!(around_kept_block(&shape, &[1, 3]), None, "no leading run");
        let ints: Vec<i64> = (0..360).collect();
        let per_channel = sum_dims(&ints, &shape, &[0, 2, 3]);
        let expected: Vec<i64> = (0..4).map(|c| (0..360).filter(|i| (i / 30) % 4 == c).sum()).collect();
        assert_eq!(per_channel, expected);
    }

    #[test]
    fn every_extreme_path_agrees_with_the_general_walk() {
        let shape = [3, 4, 5];
        let mut x: Vec<f64> = (0..60).map(|i| ((i * 37) % 23) as f64 - 11.0).collect();
        for largest in [true, false] {
            for dims in [vec![0], vec![1], vec![2], vec![0, 1], vec![1, 2], vec![0, 2], vec![0, 1, 2]] {
                let kept = (0..3).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
                let fast = extreme_dims(&x, &shape, &dims, largest);
                assert_eq!(fast, extreme_general(&x, &shape, &dims, kept, largest), "dims {dims:?}");
            }
        }
        x[33] = f64::NAN;
        for dims in [vec![2], vec![0], vec![0, 1, 2]] {
            let kept = (0..3).filter(|d| !dims.contains(d)).map(|d| shape[d]).product();
            let fast = extreme_dims(&x, &shape, &dims, true);
            let slow = extreme_general(&x, &shape, &dims, kept, true);
            assert_eq!(fast.iter().filter(|v| v.is_nan()).count(), 1);
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
        }
    }

    #[test]
    fn extremes_reduce_over_any_dims_and_propagate_nan() {
        let x = [1.0f64, 5.0, -2.0, 4.0, f64::NAN, 0.0];
        assert_eq!(extreme_dims(&x[..4], &[2, 2], &[0], true), vec![1.0, 5.0]);
        assert_eq!(extreme_dims(&x[..4], &[2, 2], &[1], false), vec![1.0, -2.0]);
        assert!(extreme_dims(&x, &[6], &[0], true)[0].is_nan());
    }

    #[test]
    fn zero_size_inputs_sum_to_zero() {
        assert_eq!(sum_dims::<f64>(&[], &[0, 3], &[0]), vec![0.0, 0.0, 0.0]);
        assert_eq!(sum_dims::<f64>(&[], &[3, 0], &[1]), vec![0.0, 0.0, 0.0]);
        assert_eq!(sum_all::<f32>(&[]), 0.0);
    }

    #[test]
    fn sum_of_squares_equals_the_sum_of_the_squares() {
        let x: Vec<f32> = (0..300_000).map(|i| ((i as f32) * 0.37).sin() * 3.0).collect();
        let squares: Vec<f32> = x.iter().map(|v| v * v).collect();
        assert_eq!(sum_of_squares(&x).to_bits(), sum_all(&squares).to_bits());
        assert_eq!(sum_of_squares::<f64>(&[]), 0.0);
    }

    #[test]
    fn sum_all_is_the_same_in_parallel() {
        let x: Vec<f32> = (0..PARALLEL_MIN_ELEMENTS * 2 + 5).map(|i| ((i % 97) as f32) * 0.37).collect();
        let serial: Vec<f64> = x.chunks(CHUNK).map(|c| sum_slice(c, |v| v)).collect();
        assert_eq!(sum_all(&x), serial.iter().sum::<f64>() as f32);
    }

    #[test]
    fn integer_sums_are_exact_and_wrap() {
        let x: Vec<i64> = (0..PARALLEL_MIN_ELEMENTS as i64 + 3).map(|i| i * 1_000_003).collect();
        let expected = x.iter().fold(0i64, |a, &v| a.wrapping_add(v));
        assert_eq!(sum_all(&x), expected);
        assert_eq!(sum_all(&[i64::MAX, 1]), i64::MIN);
        assert_eq!(sum_dims(&[1i64, 2, 3, 4], &[2, 2], &[0]), vec![4, 6]);
    }
}
