//! Gathers and scatters by rows: the one kernel under advanced indexing and the
//! index ops (`gather`, `index_select`, `take`, `gather_nd`, their scatters and the
//! gradients of all of them).
//!
//! A [`Rows`] plan says where each row of the dense side (the gathered result, or
//! the values to scatter) starts in the strided side's storage, and the layout of
//! the block every row covers (the dims after the indexed ones). Plans are built by
//! `crate::indexing::advanced` and the index ops from bounds-checked indices;
//! every access here is a checked slice index as well.

use super::layout::{for_each_chunk, walk};
use super::PARALLEL_MIN_ELEMENTS;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Where the rows of a gather or scatter lie in the strided side's storage.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    /// The storage offset of each row's first element.
    pub starts: Vec<usize>,
    /// The block each row covers, relative to its start.
    pub block_shape: Vec<usize>,
    pub block_strides: Vec<isize>,
}

impl Rows {
    pub fn block_len(&self) -> usize {
        self.block_shape.iter().product()
    }

    /// The number of elements of the dense side.
    pub fn len(&self) -> usize {
        self.starts.len() * self.block_len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offsets of a block's elements from its start, in row-major order.
    fn block_offsets(&self) -> Vec<isize> {
        let mut out = Vec::with_capacity(self.block_len());
        // A negative offset comes out of `walk` wrapped around as a usize; the cast back undoes that.
        walk(&self.block_shape, [&self.block_strides], [0], |[i]| out.push(i as isize));
        out
    }

    /// Whether each block is one run of consecutive elements.
    fn contiguous_block(&self) -> bool {
        let mut expected = 1isize;
        for (&size, &stride) in self.block_shape.iter().zip(&self.block_strides).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected *= size as isize;
        }
        true
    }

    /// Checks that every element the plan touches lies in a storage of `len` elements,
    /// so the loops below cannot index past it.
    pub fn check_within(&self, len: usize) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let (mut low, mut high) = (0isize, 0isize);
        for (&size, &stride) in self.block_shape.iter().zip(&self.block_strides) {
            let reach = stride.saturating_mul(size as isize - 1);
            if reach < 0 {
                low = low.saturating_add(reach);
            } else {
                high = high.saturating_add(reach);
            }
        }
        let (first, last) = self.starts.iter().fold((usize::MAX, 0), |(a, b), &s| (a.min(s), b.max(s)));
        let inside = (first as isize).checked_add(low).is_some_and(|v| v >= 0)
            && (last as isize).checked_add(high).is_some_and(|v| v < len as isize);
        if !inside {
            return Err(Error::Internal(format!(
                "index plan reaches outside its storage of {len} elements (rows from {first} to {last}, block \
                 {low}..={high})"
            )));
        }
        Ok(())
    }
}

/// Rows per parallel task: enough elements that waking a thread pays.
fn rows_per_task(block: usize) -> usize {
    (1 << 14) / block.max(1) + 1
}

/// The dense side of `rows` read out of `src`, in row-major order.
pub fn gather<T: Copy + Send + Sync + 'static>(src: &[T], rows: &Rows) -> Result<Vec<T>> {
    rows.check_within(src.len())?;
    let (n, block) = (rows.len(), rows.block_len());
    let mut out: Vec<T> = crate::storage::vec_with_capacity(n);
    if n == 0 {
        return Ok(out);
    }
    let contiguous = rows.contiguous_block();
    let offsets = if contiguous { Vec::new() } else { rows.block_offsets() };
    let per_task = rows_per_task(block);
    let fill = |(task, chunk): (usize, &mut [MaybeUninit<T>])| {
        let first = task * per_task;
        for (r, slots) in chunk.chunks_mut(block).enumerate() {
            let start = rows.starts[first + r];
            if contiguous {
                for (slot, &v) in slots.iter_mut().zip(&src[start..start + block]) {
                    slot.write(v);
                }
            } else {
                for (slot, &off) in slots.iter_mut().zip(&offsets) {
                    slot.write(src[start.wrapping_add_signed(off)]);
                }
            }
        }
    };
    let parallel = n >= PARALLEL_MIN_ELEMENTS && super::threads::num_threads() > 1;
    for_each_chunk(&mut out.spare_capacity_mut()[..n], per_task * block, parallel, fill);
    // SAFETY: the chunks cover all n slots, and `fill` writes every slot of its chunk
    // (each chunk is whole rows of `block` slots, one per block element).
    unsafe { out.set_len(n) };
    Ok(out)
}

/// Writes the dense `values` (row-major, `rows.len()` of them) into `dst` at `rows`,
/// combined with what is there by `combine`. Elements written by several rows take
/// their values in row order, whatever the number of threads: the work is split by
/// ranges of `dst`, each walked by one thread through all the rows in order.
pub fn scatter<T: Copy + Send + Sync>(
    dst: &mut [T],
    rows: &Rows,
    values: &[T],
    combine: impl Fn(&mut T, T) + Sync,
) -> Result<()> {
    rows.check_within(dst.len())?;
    if values.len() != rows.len() {
        return Err(Error::Internal(format!("scatter: {} values for {} slots", values.len(), rows.len())));
    }
    if rows.is_empty() {
        return Ok(());
    }
    let contiguous = rows.contiguous_block();
    let offsets = if contiguous { Vec::new() } else { rows.block_offsets() };
    let block = rows.block_len();
    // Writes the rows' values that fall in `range` (the part of dst that `part` is).
    let write = |part: &mut [T], range: std::ops::Range<usize>| {
        for (r, &start) in rows.starts.iter().enumerate() {
            let row = &values[r * block..(r + 1) * block];
            if contiguous {
                let (lo, hi) = (start.max(range.start), (start + block).min(range.end));
                if lo < hi {
                    for (slot, &v) in part[lo - range.start..hi - range.start].iter_mut().zip(&row[lo - start..]) {
                        combine(slot, v);
                    }
                }
            } else {
                for (&off, &v) in offsets.iter().zip(row) {
                    let at = start.wrapping_add_signed(off);
                    if range.contains(&at) {
                        combine(&mut part[at - range.start], v);
                    }
                }
            }
        }
    };
    let threads = super::threads::num_threads();
    if rows.len() < PARALLEL_MIN_ELEMENTS || threads < 2 || dst.len() < 2 {
        let len = dst.len();
        write(dst, 0..len);
        return Ok(());
    }
    let span = dst.len().div_ceil(threads);
    super::threads::install(|| {
        dst.par_chunks_mut(span).enumerate().for_each(|(k, part)| {
            let start = k * span;
            let end = start + part.len();
            write(part, start..end)
        })
    });
    Ok(())
}

/// The coordinates of the non-zero elements of a row-major array of `shape`, as
/// `(count, rank)` int64s, row-major (numpy's `argwhere`, torch's `nonzero`).
pub fn nonzero<T: Copy + PartialEq + Default>(values: &[T], shape: &[usize]) -> (usize, Vec<i64>) {
    let zero = T::default();
    let count = values.iter().filter(|&&v| v != zero).count();
    let mut out = crate::storage::vec_with_capacity(count * shape.len());
    let mut coord = vec![0i64; shape.len()];
    for &v in values {
        if v != zero {
            out.extend_from_slice(&coord);
        }
        for d in (0..shape.len()).rev() {
            coord[d] += 1;
            if (coord[d] as usize) < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    (count, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(starts: Vec<usize>, block_shape: Vec<usize>, block_strides: Vec<isize>) -> Rows {
        Rows { starts, block_shape, block_strides }
    }

    #[test]
    fn gathers_rows_of_strided_blocks() {
        let src: Vec<i32> = (0..12).collect();
        // Rows 2 and 0 of a 3x4 matrix, each read backwards.
        let plan = rows(vec![11, 3], vec![4], vec![-1]);
        assert_eq!(gather(&src, &plan).unwrap(), vec![11, 10, 9, 8, 3, 2, 1, 0]);
        let plan = rows(vec![4, 4, 0], vec![2], vec![1]);
        assert_eq!(gather(&src, &plan).unwrap(), vec![4, 5, 4, 5, 0, 1]);
    }

    #[test]
    fn a_plan_reaching_past_its_storage_is_an_error_not_a_read() {
        let plan = rows(vec![10], vec![4], vec![1]);
        assert!(matches!(gather(&[0u8; 12], &plan), Err(Error::Internal(_))));
        let plan = rows(vec![1], vec![3], vec![-1]);
        assert!(matches!(gather(&[0u8; 12], &plan), Err(Error::Internal(_))));
    }

    #[test]
    fn duplicate_rows_add_in_order_and_the_last_set_wins() {
        let plan = rows(vec![1, 1, 0], vec![], vec![]);
        let mut dst = vec![0.0f64; 3];
        scatter(&mut dst, &plan, &[1.0, 2.0, 3.0], |d, v| *d += v).unwrap();
        assert_eq!(dst, vec![3.0, 3.0, 0.0]);
        scatter(&mut dst, &plan, &[7.0, 8.0, 9.0], |d, v| *d = v).unwrap();
        assert_eq!(dst, vec![9.0, 8.0, 0.0]);
    }

    #[test]
    fn parallel_scatters_add_in_the_same_order_as_one_thread() {
        // Many rows onto few elements, in an order where float rounding depends on it.
        let n = PARALLEL_MIN_ELEMENTS + 17;
        let starts: Vec<usize> = (0..n).map(|i| (i * 7919) % 101).collect();
        let values: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
        let plan = rows(starts.clone(), vec![], vec![]);
        let mut expected = vec![0.0f32; 101];
        for (&s, &v) in starts.iter().zip(&values) {
            expected[s] += v;
        }
        let mut got = vec![0.0f32; 101];
        scatter(&mut got, &plan, &values, |d, v| *d += v).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn contiguous_rows_are_clipped_to_each_part() {
        let n = PARALLEL_MIN_ELEMENTS * 2;
        let plan = rows(vec![0, 1], vec![n - 1], vec![1]);
        let values = vec![1u32; 2 * (n - 1)];
        let mut dst = vec![0u32; n];
        scatter(&mut dst, &plan, &values, |d, v| *d += v).unwrap();
        assert_eq!((dst[0], dst[1], dst[n - 2], dst[n - 1]), (1, 2, 2, 1));
    }

    #[test]
    fn nonzero_lists_coordinates_in_order() {
        let (count, coords) = nonzero(&[0.0, 1.0, f64::NAN, -0.0], &[2, 2]);
        assert_eq!((count, coords), (2, vec![0, 1, 1, 0]));
        assert_eq!(nonzero(&[true], &[]), (1, vec![]));
    }
}
