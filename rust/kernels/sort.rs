//! The permutation that sorts each line along one dim of a contiguous `(outer, n, inner)`
//! block: (key, position) pairs sorted as integers, so ties keep their order.
//!
//! NaN ranks above every number, as in torch: it sorts last in ascending order.

use super::ordering::ascending;
use super::scan::ScanShape;
use super::PARALLEL_MIN_ELEMENTS;
use crate::dtype::{DType, Number};
use rayon::prelude::*;

/// For each line along the middle axis, the indices of its first `k` elements in
/// sorted order (ascending, or descending), equal elements in their original order.
pub fn argsort<T: Number>(x: &[T], shape: ScanShape, descending: bool, k: usize) -> Vec<i64> {
    let ScanShape { outer, n, inner } = shape;
    let order = |a: &T, b: &T| if descending { ascending(*b, *a) } else { ascending(*a, *b) };
    let sort_line = |line: &[T], dst: &mut [i64]| {
        if let Ok(n32) = u32::try_from(n) {
            return sort_line_by_keys(line, n32, descending, dst);
        }
        let mut positions: Vec<usize> = (0..n).collect();
        positions.sort_by(|&a, &b| order(&line[a], &line[b]));
        for (d, &p) in dst.iter_mut().zip(&positions) {
            *d = p as i64;
        }
    };
    // Every position is written below: recycled memory saves the page faults of new zeros.
    let mut out: Vec<i64> = crate::storage::overwritable_vec(outer * k * inner);
    if k == 0 {
        return out;
    }
    if inner == 1 {
        if x.len() >= PARALLEL_MIN_ELEMENTS && outer > 1 {
            super::threads::install(|| {
                out.par_chunks_mut(k).zip(x.par_chunks(n)).for_each(|(dst, line)| sort_line(line, dst))
            });
        } else {
            out.chunks_mut(k).zip(x.chunks(n)).for_each(|(dst, line)| sort_line(line, dst));
        }
        return out;
    }
    let (mut line, mut sorted) = (Vec::with_capacity(n), vec![0i64; k]);
    for o in 0..outer {
        for j in 0..inner {
            line.clear();
            line.extend((0..n).map(|t| x[(o * n + t) * inner + j]));
            sort_line(&line, &mut sorted);
            for (t, &p) in sorted.iter().enumerate() {
                out[(o * k + t) * inner + j] = p;
            }
        }
    }
    out
}

/// An integer that orders as `ascending` does, ties included: every NaN has the largest key,
/// and -0.0 the key of 0.0.
#[inline]
fn sort_key<T: Number>(v: T) -> u64 {
    if T::DTYPE.is_float() {
        let f = v.to_f64(); // exact for float32, and order-preserving
        if f.is_nan() {
            return u64::MAX;
        }
        ordered_float_bits((f + 0.0).to_bits(), 1 << 63) // -0.0 + 0.0 is 0.0
    } else {
        (v.to_i64() as u64) ^ 1 << 63
    }
}

/// A float's bits (`sign` is its sign bit) as an unsigned integer that orders as the float
/// does: a negative value's bits flipped, a positive value's with the sign bit set.
#[inline]
fn ordered_float_bits(bits: u64, sign: u64) -> u64 {
    if bits & sign != 0 {
        !bits & (sign | (sign - 1))
    } else {
        bits | sign
    }
}

/// `dst` = the first positions of `line` in sorted order, equal elements in their original
/// order: (key, position) pairs sorted as plain integers, so ties break by position and an
/// unstable sort is stable. Sorting positions through a comparator that looked the values up
/// was 11–14× numpy's `sort` on 1024×1024 (docs/benchmarks.md).
fn sort_line_by_keys<T: Number>(line: &[T], n: u32, descending: bool, dst: &mut [i64]) {
    if matches!(T::DTYPE, DType::F32 | DType::I32 | DType::U8) {
        return sort_line_by_packed_keys(line, n, descending, dst);
    }
    let mut pairs: Vec<(u64, u32)> = line
        .iter()
        .zip(0..n)
        .map(|(&v, i)| {
            let key = sort_key(v);
            (if descending { !key } else { key }, i)
        })
        .collect();
    pairs.sort_unstable();
    for (d, &(_, i)) in dst.iter_mut().zip(&pairs) {
        *d = i64::from(i);
    }
}

/// `sort_line_by_keys` for float32, int32 and uint8 values: each key and position packed into
/// one u64 (key above, position below), which sorts as the (key, position) pair does
/// with half the memory and one comparison.
fn sort_line_by_packed_keys<T: Number>(line: &[T], n: u32, descending: bool, dst: &mut [i64]) {
    let mut packed: Vec<u64> = line
        .iter()
        .zip(0..n)
        .map(|(&v, i)| {
            let key = narrow_sort_key(v);
            u64::from(if descending { !key } else { key }) << 32 | u64::from(i)
        })
        .collect();
    let sorted = if packed.len() >= RADIX_MIN_LEN {
        radix_sort_by_upper_half(packed)
    } else {
        packed.sort_unstable();
        packed
    };
    for (d, &p) in dst.iter_mut().zip(&sorted) {
        *d = i64::from(p as u32);
    }
}

/// From this many elements a line's packed keys are radix sorted. Shorter lines keep
/// `sort_unstable`, as the radix sort's four tables of 256 counters (cleared and summed
/// for every line) would outweigh the line itself; only 1024-element lines were timed.
const RADIX_MIN_LEN: usize = 256;

/// `items` sorted by their upper 32 bits (the key), a stable LSD radix sort of 8 bits a
/// pass. Items with equal keys keep their order, so items packed in position order come
/// out as `sort_unstable` of the packed (key, position) values puts them.
fn radix_sort_by_upper_half(items: Vec<u64>) -> Vec<u64> {
    let digit = |item: u64, pass: usize| ((item >> (32 + 8 * pass)) & 0xff) as usize;
    let mut counts = [[0usize; 256]; 4];
    for &item in items.iter() {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[digit(item, pass)] += 1;
        }
    }
    let mut from = items;
    let mut to = vec![0u64; from.len()];
    for (pass, count) in counts.iter().enumerate() {
        // A pass in which every key has the same digit would move nothing.
        if count.contains(&from.len()) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut start = 0;
        for (slot, &c) in next.iter_mut().zip(count) {
            *slot = start;
            start += c;
        }
        for &item in &from {
            let slot = &mut next[digit(item, pass)];
            to[*slot] = item;
            *slot += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    from
}

/// `sort_key` in 32 bits, for float32, int32 and uint8 values.
#[inline]
fn narrow_sort_key<T: Number>(v: T) -> u32 {
    if T::DTYPE.is_float() {
        let f = v.to_f64() as f32; // exact: the value is a float32
        if f.is_nan() {
            return u32::MAX;
        }
        ordered_float_bits(u64::from((f + 0.0).to_bits()), 1 << 31) as u32 // fits: the sign bit is bit 31
    } else {
        (v.to_i64() as i32 as u32) ^ 1 << 31 // exact: an int32 or uint8 fits in i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(outer: usize, n: usize, inner: usize) -> ScanShape {
        ScanShape { outer, n, inner }
    }

    #[test]
    fn argsort_is_stable_and_puts_nan_last() {
        let x = [3.0, f64::NAN, 1.0, 3.0, 0.0];
        assert_eq!(argsort(&x, shape(1, 5, 1), false, 5), vec![4, 2, 0, 3, 1]);
        assert_eq!(argsort(&x, shape(1, 5, 1), true, 3), vec![1, 0, 3]);
        // (2, 2) along dim 0: columns [3, 1] and [NaN, 3]
        assert_eq!(argsort(&x[..4], shape(1, 2, 2), false, 2), vec![1, 1, 0, 0]);
    }

    /// The stable comparator sort the keys replace, as the oracle.
    fn reference_argsort<T: Number>(line: &[T], descending: bool) -> Vec<i64> {
        let mut positions: Vec<usize> = (0..line.len()).collect();
        positions.sort_by(|&a, &b| if descending { ascending(line[b], line[a]) } else { ascending(line[a], line[b]) });
        positions.into_iter().map(|p| p as i64).collect()
    }

    #[test]
    fn sorting_by_keys_matches_the_stable_comparator_sort() {
        // Ties, both zeros, NaNs of two payloads, infinities, and extremes of each type.
        let floats = [2.5, -0.0, f64::NAN, 0.0, -1.0, f64::INFINITY, 2.5, -f64::NAN, f64::NEG_INFINITY, -0.0, 1e-300];
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for _ in 0..50 {
            // Short lines, and lines long enough for the radix sort of packed keys.
            let len = if next() % 2 == 0 { 1 + next() % 40 } else { RADIX_MIN_LEN + next() % 500 };
            let line64: Vec<f64> = (0..len).map(|_| floats[next() % floats.len()]).collect();
            let line32: Vec<f32> = line64.iter().map(|&v| v as f32).collect();
            let ints: Vec<i64> = (0..len).map(|_| [i64::MIN, -3, 0, 3, i64::MAX][next() % 5]).collect();
            let bytes: Vec<u8> = (0..len).map(|_| [0, 1, 200, 255][next() % 4]).collect();
            let int32s: Vec<i32> = (0..len).map(|_| [i32::MIN, -3, 0, 3, i32::MAX][next() % 5]).collect();
            let extremes32 = [f32::MAX, f32::MIN, f32::MIN_POSITIVE, 1e-45, -1e-45, f32::NAN, 0.0, -0.0];
            let wide32: Vec<f32> = (0..len).map(|_| extremes32[next() % extremes32.len()]).collect();
            for descending in [false, true] {
                assert_eq!(
                    argsort(&line64, shape(1, len, 1), descending, len),
                    reference_argsort(&line64, descending),
                    "{line64:?} {descending}"
                );
                assert_eq!(argsort(&line32, shape(1, len, 1), descending, len), reference_argsort(&line32, descending));
                assert_eq!(argsort(&ints, shape(1, len, 1), descending, len), reference_argsort(&ints, descending));
                assert_eq!(argsort(&bytes, shape(1, len, 1), descending, len), reference_argsort(&bytes, descending));
                assert_eq!(argsort(&int32s, shape(1, len, 1), descending, len), reference_argsort(&int32s, descending));
                assert_eq!(argsort(&wide32, shape(1, len, 1), descending, len), reference_argsort(&wide32, descending));
            }
        }
    }
}
