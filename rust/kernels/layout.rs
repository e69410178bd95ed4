//! Walking strided layouts: gathers, scatters and the multi-operand walker the
//! broadcasting kernels use.

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
pub fn copy_slice<T: Copy + Send + Sync>(src: &[T]) -> Vec<T> {
    // Size first: asking for the thread count takes a lock, which small copies should not pay.
    if std::mem::size_of_val(src) < PARALLEL_COPY_MIN_BYTES || super::threads::num_threads() < 2 {
        return src.to_vec();
    }
    let mut out: Vec<T> = crate::storage::vec_with_capacity(src.len());
    let half = src.len() / 2;
    let dst = SendPtr(out.as_mut_ptr());
    super::spin_pool::run(2, &|part| {
        let (start, end) = if part == 0 { (0, half) } else { (half, src.len()) };
        // SAFETY: the two parts write disjoint halves of `out`'s allocated capacity.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(start), dst.get().add(start), end - start) };
    });
    // SAFETY: both halves were initialised above.
    unsafe { out.set_len(src.len()) };
    out
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

/// Copies a strided view into a new row-major vector.
pub fn gather_strided<T: Copy>(src: &[T], shape: &[usize], strides: &[isize], offset: usize) -> Vec<T> {
    let mut out = crate::storage::vec_with_capacity(shape.iter().product());
    walk(shape, [strides], [offset], |[i]| out.push(src[i]));
    out
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

    #[test]
    fn scatter_writes_a_column() {
        let mut dst = [0; 6];
        scatter_strided(&mut dst, &[2], &[3], 1, &[7, 8]);
        assert_eq!(dst, [0, 7, 0, 0, 8, 0]);
    }
}
