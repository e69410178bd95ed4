//! Walking strided layouts: gathers, scatters and the multi-operand walker the
//! broadcasting kernels use.

use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Calls `f` with the element offsets of `N` operands that share the iteration
/// `shape`, in row-major order. Strides may be 0 (broadcast) or negative.
#[inline]
pub fn walk<const N: usize>(
    shape: &[usize],
    strides: [&[isize]; N],
    offsets: [usize; N],
    mut f: impl FnMut([usize; N]),
) {
    if shape.contains(&0) {
        return;
    }
    if shape.is_empty() {
        f(offsets);
        return;
    }
    let last = shape.len() - 1;
    let inner = shape[last];
    let inner_strides: [isize; N] = std::array::from_fn(|k| strides[k][last]);
    let mut index = vec![0usize; last];
    let mut base: [isize; N] = std::array::from_fn(|k| offsets[k] as isize);
    loop {
        for i in 0..inner as isize {
            f(std::array::from_fn(|k| (base[k] + i * inner_strides[k]) as usize));
        }
        // Advance the outer index with carry.
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            for k in 0..N {
                base[k] += strides[k][d];
            }
            if index[d] < shape[d] {
                break;
            }
            for k in 0..N {
                base[k] -= strides[k][d] * shape[d] as isize;
            }
            index[d] = 0;
        }
    }
}

/// Copies below this many bytes run on one thread.
const PARALLEL_COPY_MIN_BYTES: usize = 1 << 18;

/// A copy of `src`, split across cores for large slices (copies of weight matrices
/// are on the hot path of every static training step).
pub fn copy_slice<T: Copy + Send + Sync + 'static>(src: &[T]) -> Vec<T> {
    let mut out: Vec<T> = crate::storage::vec_with_capacity(src.len());
    copy_into(&mut out.spare_capacity_mut()[..src.len()], src);
    // SAFETY: copy_into initialised all src.len() elements.
    unsafe { out.set_len(src.len()) };
    out
}

/// Copies `src` into `dst` (of the same length), one half per core for large
/// slices. Each half is a single `memcpy`, which for large sizes writes with
/// streaming stores and so does not first read the destination: a 64 MiB copy
/// took 3 ms this way, against about 6 ms in 256 KiB pieces.
pub fn copy_into<T: Copy + Send + Sync>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    // invariant: callers pass slices of one length (checked here before the raw copies).
    assert_eq!(dst.len(), src.len(), "copy_into: lengths differ");
    // Size first: asking for the thread count takes a lock, which small copies should not pay.
    if std::mem::size_of_val(src) < PARALLEL_COPY_MIN_BYTES || super::threads::num_threads() < 2 {
        // SAFETY: both slices hold src.len() elements and do not overlap (dst is &mut).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<T>(), src.len()) };
        return;
    }
    let half = src.len() / 2;
    let out = SendPtr(dst.as_mut_ptr().cast::<T>());
    super::spin_pool::run(2, &|part| {
        let (start, end) = if part == 0 { (0, half) } else { (half, src.len()) };
        // SAFETY: the two parts write disjoint halves of `dst`, which holds src.len() elements.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(start), out.get().add(start), end - start) };
    });
}

#[derive(Copy, Clone)]
struct SendPtr<T>(*mut T);

impl<T> SendPtr<T> {
    /// Through a method, so closures capture the (Sync) wrapper rather than the raw pointer.
    fn get(self) -> *mut T {
        self.0
    }
}
// SAFETY: used only to write disjoint ranges from the parts of one `spin_pool::run`.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

/// Copies a strided view into a new row-major vector: row by row (a tight loop
/// over the source row when it is contiguous), with the transpose of a matrix
/// done in tiles so that every source cache line is read once. Large views with
/// more than one row (or band of 256 rows) are copied in parallel.
pub fn gather_strided<T: Copy + Send + Sync + 'static>(
    src: &[T],
    shape: &[usize],
    strides: &[isize],
    offset: usize,
) -> Vec<T> {
    let n: usize = shape.iter().product();
    let mut out = crate::storage::vec_with_capacity(n);
    if n == 0 {
        return out;
    }
    if shape.is_empty() {
        out.push(src[offset]);
        return out;
    }
    let slots = &mut out.spare_capacity_mut()[..n];
    let cols = shape[shape.len() - 1];
    let bytes = n * std::mem::size_of::<T>();
    let parallel = bytes >= PARALLEL_COPY_MIN_BYTES && super::threads::num_threads() > 1;
    match transposed_matrix(shape, strides) {
        Some(column_stride) => {
            let band = TRANSPOSE_BAND_ROWS * cols;
            let fill = |(b, rows): (usize, &mut [MaybeUninit<T>])| {
                gather_transposed_band(src, offset + b * TRANSPOSE_BAND_ROWS, column_stride, cols, rows)
            };
            for_each_chunk(slots, band, parallel, fill);
        }
        None => {
            let fill = |(r, row): (usize, &mut [MaybeUninit<T>])| gather_row(src, shape, strides, offset, r, row);
            for_each_chunk(slots, cols, parallel, fill);
        }
    }
    // SAFETY: the chunks cover all `n` slots and both fills write every slot of their chunk.
    unsafe { out.set_len(n) };
    out
}

/// Output rows per band of a transpose (one parallel task).
const TRANSPOSE_BAND_ROWS: usize = 256;
/// A transpose goes through square tiles of this side: a tile reads 16 runs of 64
/// bytes (f32) from the source and writes 16 whole 64-byte output lines.
const TILE: usize = 16;

/// For a matrix stored transposed (rows are stride 1 apart, columns `s` apart), `s`.
fn transposed_matrix(shape: &[usize], strides: &[isize]) -> Option<usize> {
    match (shape, strides) {
        (&[rows, cols], &[1, s]) if rows > 1 && cols > 1 && s >= rows as isize => Some(s as usize),
        _ => None,
    }
}

/// Calls `fill((index, chunk))` for each consecutive chunk of `size` slots, on the
/// pool's threads when `parallel`.
#[inline]
pub(crate) fn for_each_chunk<T: Send>(
    slots: &mut [MaybeUninit<T>],
    size: usize,
    parallel: bool,
    fill: impl Fn((usize, &mut [MaybeUninit<T>])) + Sync + Send,
) {
    // One chunk is too short to parallelise or to stop halfway on Ctrl-C; the loop's set-up
    // was a noticeable part of a one-element op.
    if slots.len() <= size {
        if !slots.is_empty() {
            fill((0, slots));
        }
        return;
    }
    chunk_loop(slots, size, parallel, fill);
}

fn chunk_loop<T: Send>(
    slots: &mut [MaybeUninit<T>],
    size: usize,
    parallel: bool,
    fill: impl Fn((usize, &mut [MaybeUninit<T>])) + Sync + Send,
) {
    // Every chunk fills new memory, so a Ctrl-C may stop the loop between two.
    let poller = crate::interrupt::Poller::here();
    let fill = |chunk| {
        poller.poll();
        fill(chunk)
    };
    if parallel {
        super::threads::install(|| slots.par_chunks_mut(size).enumerate().for_each(fill));
    } else {
        slots.chunks_mut(size).enumerate().for_each(fill);
    }
}

/// Output rows `first..` of a transposed matrix: `band[i·cols + j] = src[first + i + j·s]`.
/// For each group of 16 source rows it walks the whole band, so every source row is
/// read as one sequential run (which the prefetcher follows); walking 16 output rows
/// across all columns instead read 16 KiB-strided lines and took 3.4 ms at 4096×1024.
/// 4-byte elements on CPUs with AVX2 go through `transpose8`'s 8×8 blocks instead.
fn gather_transposed_band<T: Copy>(src: &[T], first: usize, s: usize, cols: usize, band: &mut [MaybeUninit<T>]) {
    if super::transpose8::transposed_band(src, first, s, cols, band) {
        return;
    }
    let rows = band.len() / cols;
    let mut tile = [[src[first]; TILE]; TILE];
    for j0 in (0..cols).step_by(TILE) {
        let width = TILE.min(cols - j0);
        for i0 in (0..rows).step_by(TILE) {
            let height = TILE.min(rows - i0);
            for (jj, tile_row) in tile.iter_mut().enumerate().take(width) {
                tile_row[..height].copy_from_slice(&src[first + i0 + (j0 + jj) * s..][..height]);
            }
            for i in 0..height {
                let out = &mut band[(i0 + i) * cols + j0..][..width];
                for (jj, slot) in out.iter_mut().enumerate() {
                    slot.write(tile[jj][i]);
                }
            }
        }
    }
}

/// Output row `r` of a strided view (`row.len()` is the last dimension).
fn gather_row<T: Copy>(
    src: &[T],
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    r: usize,
    row: &mut [MaybeUninit<T>],
) {
    let last = shape.len() - 1;
    let mut start = offset as isize;
    let mut rest = r;
    for d in (0..last).rev() {
        start += (rest % shape[d]) as isize * strides[d];
        rest /= shape[d];
    }
    let step = strides[last];
    match step {
        1 => {
            let source = &src[start as usize..][..row.len()];
            for (slot, &v) in row.iter_mut().zip(source) {
                slot.write(v);
            }
        }
        0 => row.iter_mut().for_each(|slot| {
            slot.write(src[start as usize]);
        }),
        _ => {
            for (j, slot) in row.iter_mut().enumerate() {
                slot.write(src[(start + j as isize * step) as usize]);
            }
        }
    }
}

/// Writes row-major `values` into a strided view of `dst`.
pub fn scatter_strided<T: Copy>(dst: &mut [T], shape: &[usize], strides: &[isize], offset: usize, values: &[T]) {
    let mut next = 0;
    walk(shape, [strides], [offset], |[i]| {
        dst[i] = values[next];
        next += 1;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_reads_a_transpose() {
        // [[0, 1, 2], [3, 4, 5]] transposed is [[0, 3], [1, 4], [2, 5]].
        let src = [0, 1, 2, 3, 4, 5];
        assert_eq!(gather_strided(&src, &[3, 2], &[1, 3], 0), vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn gather_handles_negative_strides_and_scalars() {
        let src = [0, 1, 2, 3];
        assert_eq!(gather_strided(&src, &[4], &[-1], 3), vec![3, 2, 1, 0]);
        assert_eq!(gather_strided(&src, &[], &[], 2), vec![2]);
        assert!(gather_strided(&src, &[0, 4], &[4, 1], 0).is_empty());
    }

    fn walked<T: Copy>(src: &[T], shape: &[usize], strides: &[isize], offset: usize) -> Vec<T> {
        let mut out = Vec::new();
        walk(shape, [strides], [offset], |[i]| out.push(src[i]));
        out
    }

    #[test]
    fn large_gathers_match_the_element_walk() {
        // Big enough to run in parallel and to end on a partial band of transposed rows.
        let (rows, cols) = (203, 517);
        let src: Vec<u32> = (0..(rows * cols + 7) as u32).collect();
        let cases: [(&[usize], &[isize], usize); 5] = [
            (&[cols, rows], &[1, cols as isize], 0),
            (&[cols, rows - 3], &[1, cols as isize], 5),
            (&[7, 29, 517], &[517, 7 * 517, 1], 3),
            (&[29, 7, 517], &[517, 29 * 517, -1], 516),
            (&[rows, cols], &[0, 1], 2),
        ];
        for (shape, strides, offset) in cases {
            assert_eq!(gather_strided(&src, shape, strides, offset), walked(&src, shape, strides, offset), "{shape:?}");
        }
    }

    #[test]
    fn scatter_writes_a_column() {
        let mut dst = [0; 6];
        scatter_strided(&mut dst, &[2], &[3], 1, &[7, 8]);
        assert_eq!(dst, [0, 7, 0, 0, 8, 0]);
    }
}
