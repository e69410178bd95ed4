//! Orderings along one dim of a contiguous `(outer, n, inner)` block: the index of the
//! largest or smallest element, and the elements at given indices (and the gradient
//! that sends values back to them). The permutation that sorts is in `sort`.
//!
//! NaN ranks above every number, as in torch: it is the largest element, sorts last
//! in ascending order, and `argmax` and `argmin` both pick it.

use super::scan::ScanShape;
pub use super::sort::argsort;
use super::PARALLEL_MIN_ELEMENTS;
use crate::dtype::Number;
use rayon::prelude::*;
use std::cmp::Ordering;
use std::mem::MaybeUninit;

/// Ascending order with NaN above every number (and equal to another NaN).
#[inline]
pub(super) fn ascending<T: Number>(a: T, b: T) -> Ordering {
    a.partial_cmp(&b).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// The index of the largest (or smallest) element of `line` (not empty): the first of
/// equal ones, or the first NaN.
fn line_arg_extreme<T: Number>(line: &[T], largest: bool) -> usize {
    if u32::try_from(line.len()).is_err() {
        return line_scan(line, largest); // 2^32 elements and more: element by element
    }
    #[cfg(target_arch = "x86_64")]
    if let (Some(line), true) = (super::float32::as_f32(line), super::extreme_f32::available()) {
        return super::extreme_f32::arg_extreme(line, largest);
    }
    line_arg_widest(line, largest)
}

widest_vectors! {
    fn line_arg_widest[T: Number](line: &[T], largest: bool) -> usize =>
        if largest { line_arg::<T, true>(line) } else { line_arg::<T, false>(line) };
}

/// `line_arg_extreme` in sixteen lanes whose updates are selects on 32-bit indices (no
/// branches, `LARGEST` known at compile time), so the loop vectorises. A NaN never wins
/// a comparison there, so a line holding one is searched again for its first NaN.
/// (Float32 on AVX-512 or AVX2 takes `extreme_f32::arg_extreme` instead: this loop's lane updates
/// can compile to masked stores and reloads that stall.)
#[inline(always)]
fn line_arg<T: Number, const LARGEST: bool>(line: &[T]) -> usize {
    const LANES: usize = 16;
    let better = |v: T, b: T| if LARGEST { v > b } else { v < b };
    let mut best = [line[0]; LANES];
    let mut index = [0u32; LANES];
    let mut nan = [0u32; LANES];
    let mut blocks = line.chunks_exact(LANES);
    let mut base = 0u32;
    let lanes: [u32; LANES] = std::array::from_fn(|lane| lane as u32);
    for block in &mut blocks {
        let Ok(block) = <&[T; LANES]>::try_from(block) else { continue }; // chunks_exact: always LANES
        for lane in 0..LANES {
            let v = block[lane];
            let wins = better(v, best[lane]);
            best[lane] = if wins { v } else { best[lane] };
            index[lane] = if wins { base + lanes[lane] } else { index[lane] };
            nan[lane] |= u32::from(v.is_nan());
        }
        base = base.wrapping_add(LANES as u32);
    }
    let tail = line.len() - blocks.remainder().len();
    pick_from_lanes(line, &best, &index, tail, nan.iter().any(|&n| n != 0), LARGEST)
}

/// The index `line_arg_extreme` picks, given each lane's best element and its index, the
/// position `tail` from which the elements went through no lane, and whether a lane met a
/// NaN: the first of equal best elements, or the first NaN.
pub(super) fn pick_from_lanes<T: Number>(
    line: &[T],
    best: &[T],
    index: &[u32],
    tail: usize,
    lanes_met_nan: bool,
    largest: bool,
) -> usize {
    let better = |v: T, b: T| if largest { v > b } else { v < b };
    let (mut winner, mut at) = (line[0], 0usize);
    for (&v, &i) in best.iter().zip(index) {
        let i = i as usize;
        if better(v, winner) || (v == winner && i < at) {
            (winner, at) = (v, i);
        }
    }
    let mut any_nan = lanes_met_nan || line[0].is_nan();
    for (k, &v) in line[tail..].iter().enumerate() {
        any_nan |= v.is_nan();
        if better(v, winner) {
            (winner, at) = (v, tail + k);
        }
    }
    if any_nan {
        return line.iter().position(|v| v.is_nan()).unwrap_or(at);
    }
    at
}

/// `line_arg_extreme` one element at a time.
fn line_scan<T: Number>(line: &[T], largest: bool) -> usize {
    if let Some(first_nan) = line.iter().position(|v| v.is_nan()) {
        return first_nan;
    }
    let better = |v: T, b: T| if largest { v > b } else { v < b };
    let mut at = 0;
    for (i, &v) in line.iter().enumerate() {
        if better(v, line[at]) {
            at = i;
        }
    }
    at
}

/// For each of the `outer × inner` lines along the middle axis (`n ≥ 1` long), the
/// index of its largest (or smallest) element: the first of equal ones, or the first NaN.
pub fn arg_extreme<T: Number>(x: &[T], shape: ScanShape, largest: bool) -> Vec<i64> {
    let ScanShape { outer, n, inner } = shape;
    let mut out = vec![0i64; outer * inner];
    if out.is_empty() {
        return out;
    }
    if inner == 1 {
        let line = |(dst, line): (&mut i64, &[T])| *dst = line_arg_extreme(line, largest) as i64;
        if x.len() >= PARALLEL_MIN_ELEMENTS && outer > 1 {
            super::threads::install(|| out.par_iter_mut().zip(x.par_chunks(n)).for_each(line));
        } else {
            out.iter_mut().zip(x.chunks(n)).for_each(line);
        }
        return out;
    }
    for (block, indices) in x.chunks(n * inner).zip(out.chunks_mut(inner)) {
        // One block of a large tensor: its columns split among threads.
        let columns = inner.div_ceil(super::threads::num_threads().max(1)).max(64);
        if block.len() >= PARALLEL_MIN_ELEMENTS && columns < inner {
            super::threads::install(|| {
                indices
                    .par_chunks_mut(columns)
                    .enumerate()
                    .for_each(|(i, part)| columns_arg_extreme(block, n, inner, i * columns, part, largest))
            });
        } else {
            columns_arg_extreme(block, n, inner, 0, indices, largest);
        }
    }
    out
}

/// `arg_extreme` of the columns `start..start + indices.len()` of `block`, `n` rows of
/// `inner`: rows at a time, so memory is read in order, with selects as in
/// `line_arg_extreme` on 32-bit indices (longer columns take the element-by-element scan).
fn columns_arg_extreme<T: Number>(
    block: &[T],
    n: usize,
    inner: usize,
    start: usize,
    indices: &mut [i64],
    largest: bool,
) {
    let width = indices.len();
    if n > u32::MAX as usize {
        for (j, index) in indices.iter_mut().enumerate() {
            let line: Vec<T> = (0..n).map(|k| block[k * inner + start + j]).collect();
            *index = line_arg_extreme(&line, largest) as i64;
        }
        return;
    }
    let better = |v: T, b: T| if largest { v > b } else { v < b };
    let mut best: Vec<T> = block[start..start + width].to_vec();
    let mut at = vec![0u32; width];
    let mut nan = false;
    for (k, row) in block.chunks(inner).enumerate() {
        for ((b, index), &v) in best.iter_mut().zip(at.iter_mut()).zip(&row[start..start + width]) {
            let wins = better(v, *b);
            *b = if wins { v } else { *b };
            *index = if wins { k as u32 } else { *index };
            nan |= v.is_nan();
        }
    }
    for (j, (index, &a)) in indices.iter_mut().zip(&at).enumerate() {
        let first_nan = if nan { (0..n).find(|&k| block[k * inner + start + j].is_nan()) } else { None };
        *index = first_nan.unwrap_or(a as usize) as i64;
    }
}

/// How `take_along` walks: the output's shape, and for each output position the
/// strides of `x` (0 along the indexed dim and where `x` is broadcast) and of the indices.
pub struct Along {
    pub out_shape: Vec<usize>,
    x_strides: Vec<isize>,
    index_strides: Vec<isize>,
    /// `x`'s stride and size along the indexed dim.
    step: usize,
    size: usize,
    /// The length of an index line when the dim is the last and nothing broadcasts: then
    /// `take` reads line by line, each index line from the matching line of `x`.
    plain_lines: Option<usize>,
}

impl Along {
    /// `x_shape` and `index_shape` have one rank; sizes other than along `dim` broadcast.
    /// None when they do not fit.
    pub fn new(x_shape: &[usize], index_shape: &[usize], dim: usize) -> Option<Along> {
        let rank = x_shape.len();
        if index_shape.len() != rank || dim >= rank {
            return None;
        }
        let mut out_shape = Vec::with_capacity(rank);
        for d in 0..rank {
            let (a, b) = (x_shape[d], index_shape[d]);
            out_shape.push(match (d == dim, a, b) {
                (true, _, b) => b,
                (false, a, b) if a == b || b == 1 => a,
                (false, 1, b) => b,
                _ => return None,
            });
        }
        let x_contiguous = crate::shape::contiguous_strides(x_shape);
        let index_contiguous = crate::shape::contiguous_strides(index_shape);
        let zero_if_broadcast = |strides: &[isize], shape: &[usize]| -> Vec<isize> {
            (0..rank).map(|d| if shape[d] == 1 && out_shape[d] != 1 { 0 } else { strides[d] }).collect()
        };
        let mut x_strides = zero_if_broadcast(&x_contiguous, x_shape);
        x_strides[dim] = 0;
        let plain = dim + 1 == rank && x_shape[..dim] == index_shape[..dim];
        Some(Along {
            plain_lines: plain.then_some(index_shape[dim]),
            index_strides: zero_if_broadcast(&index_contiguous, index_shape),
            step: x_contiguous[dim] as usize,
            size: x_shape[dim],
            x_strides,
            out_shape,
        })
    }

    /// Calls `f(output position, x offset)` for each output element, or returns the first
    /// index outside `0..size`.
    fn walk(&self, indices: &[i64], mut f: impl FnMut(usize, usize)) -> Result<(), i64> {
        let mut bad = None;
        let mut position = 0;
        super::layout::walk(&self.out_shape, [&self.x_strides, &self.index_strides], [0, 0], |[base, i]| {
            let index = indices[i];
            if index < 0 || index as usize >= self.size {
                bad = bad.or(Some(index));
            } else {
                f(position, base + index as usize * self.step);
            }
            position += 1;
        });
        bad.map_or(Ok(()), Err)
    }

    /// The elements of `x` at `indices` along the dim; Err(index) for an index out of range.
    pub fn take<T: Copy + 'static>(&self, x: &[T], indices: &[i64]) -> Result<Vec<T>, i64> {
        let len = self.out_shape.iter().product();
        let mut out: Vec<T> = crate::storage::vec_with_capacity(len);
        let slots = &mut out.spare_capacity_mut()[..len];
        match self.plain_lines {
            Some(k) if k > 0 && self.size > 0 => take_line_by_line(x, self.size, indices, k, slots)?,
            _ => self.walk(indices, |p, at| {
                slots[p].write(x[at]);
            })?,
        }
        // SAFETY: both paths return Ok only after writing all `len` slots: the walk visits
        // every output position once, and `take_line_by_line` asserts that its lines cover them.
        unsafe { out.set_len(len) };
        Ok(out)
    }

    /// `take`'s gradient: each output gradient added into the element of `x` it came from.
    pub fn scatter_add<T: Number>(&self, g: &[T], x_len: usize, indices: &[i64]) -> Result<Vec<T>, i64> {
        let mut out: Vec<T> = crate::storage::zeroed_vec(x_len);
        self.walk(indices, |p, at| out[at] = out[at].plus(g[p]))?;
        Ok(out)
    }
}

/// `take` where each line of `k` indices reads the matching line of `size` elements of `x`
/// (the dim is the last, and nothing broadcasts). Err(the first index outside `0..size`).
fn take_line_by_line<T: Copy>(
    x: &[T],
    size: usize,
    indices: &[i64],
    k: usize,
    out: &mut [MaybeUninit<T>],
) -> Result<(), i64> {
    let lines = out.len() / k;
    // invariant: `Along` made the output's shape from these lines (`take` relies on full cover).
    assert!(indices.len() == out.len() && out.len() == lines * k && x.len() == lines * size, "take: line sizes");
    for ((dst, line_indices), line) in out.chunks_mut(k).zip(indices.chunks(k)).zip(x.chunks(size)) {
        for (d, &index) in dst.iter_mut().zip(line_indices) {
            // A negative index wraps to a usize past any line, so `get` refuses it too.
            d.write(*line.get(index as usize).ok_or(index)?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(outer: usize, n: usize, inner: usize) -> ScanShape {
        ScanShape { outer, n, inner }
    }

    #[test]
    fn arg_extremes_pick_the_first_of_ties_and_nan() {
        let x = [1.0, 5.0, 5.0, f64::NAN, 2.0, f64::NAN];
        assert_eq!(arg_extreme(&x[..3], shape(1, 3, 1), true), vec![1]);
        assert_eq!(arg_extreme(&x, shape(1, 6, 1), false), vec![3]);
        // (3, 2): columns [1, 5, 2] and [5, NaN, NaN]
        assert_eq!(arg_extreme(&x, shape(1, 3, 2), true), vec![1, 1]);
        assert_eq!(arg_extreme(&x, shape(1, 3, 2), false), vec![0, 1]);
        assert_eq!(arg_extreme::<f64>(&[], shape(1, 1, 0), true), Vec::<i64>::new());
    }

    #[test]
    fn long_lines_agree_with_a_plain_scan() {
        let x: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 613) as f32).collect();
        let plain = |largest: bool| {
            let mut best = 0;
            for (k, &v) in x.iter().enumerate() {
                if (largest && v > x[best]) || (!largest && v < x[best]) {
                    best = k;
                }
            }
            best as i64
        };
        assert_eq!(arg_extreme(&x, shape(1, 1000, 1), true), vec![plain(true)]);
        assert_eq!(arg_extreme(&x, shape(1, 1000, 1), false), vec![plain(false)]);
        let mut with_nan = x.clone();
        with_nan[700] = f32::NAN;
        with_nan[900] = f32::NAN;
        assert_eq!(arg_extreme(&with_nan, shape(1, 1000, 1), false), vec![700]);
        assert_eq!(arg_extreme(&with_nan, shape(1, 100, 10), true)[0], 70);
    }

    #[test]
    fn lines_of_every_length_around_the_lanes_pick_the_first_extreme() {
        fn plain<T: Number>(line: &[T], largest: bool) -> i64 {
            let mut best = 0;
            for (k, &v) in line.iter().enumerate() {
                if (largest && v > line[best]) || (!largest && v < line[best]) {
                    best = k;
                }
            }
            best as i64
        }
        for n in [1, 2, 31, 32, 33, 63, 64, 65, 97, 1000] {
            // Few distinct values, so every line has ties across lanes and blocks.
            let floats: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
            let ints: Vec<i32> = floats.iter().map(|&v| v as i32).collect();
            for largest in [true, false] {
                assert_eq!(arg_extreme(&floats, shape(1, n, 1), largest), vec![plain(&floats, largest)], "{n}");
                assert_eq!(arg_extreme(&ints, shape(1, n, 1), largest), vec![plain(&ints, largest)], "{n}");
            }
        }
    }

    #[test]
    fn take_along_broadcasts_and_checks_indices() {
        // x (2, 3), indices (1, 2) along dim 1: both rows take columns 2 and 0.
        let along = Along::new(&[2, 3], &[1, 2], 1).unwrap();
        assert_eq!(along.out_shape, vec![2, 2]);
        let x = [1, 2, 3, 4, 5, 6];
        assert_eq!(along.take(&x, &[2, 0]).unwrap(), vec![3, 1, 6, 4]);
        assert_eq!(along.take(&x, &[3, 0]), Err(3));
        assert_eq!(along.scatter_add(&[1.0, 2.0, 3.0, 4.0], 6, &[2, 2]).unwrap(), vec![0.0, 0.0, 3.0, 0.0, 0.0, 7.0]);
        assert!(Along::new(&[2, 3], &[3, 1], 1).is_none());
    }

    #[test]
    fn taking_line_by_line_agrees_with_the_general_walk() {
        // (rows, size) x, (rows, k) indices along the last dim, some of them out of range.
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for case in 0..200 {
            let (rows, size, k) = (1 + next() % 5, 1 + next() % 9, 1 + next() % 12);
            let x: Vec<u32> = (0..rows * size).map(|_| next() as u32).collect();
            let out_of_range = case % 4 == 0;
            let indices: Vec<i64> = (0..rows * k)
                .map(|_| {
                    if out_of_range && next() % 5 == 0 {
                        [-1, size as i64][next() % 2]
                    } else {
                        (next() % size) as i64
                    }
                })
                .collect();
            let along = Along::new(&[rows, size], &[rows, k], 1).unwrap();
            assert_eq!(along.plain_lines, Some(k));
            let mut walked = vec![0u32; rows * k];
            let expected = along.walk(&indices, |p, at| walked[p] = x[at]).map(|()| walked);
            assert_eq!(along.take(&x, &indices), expected, "rows {rows} size {size} k {k}");
        }
    }
}
