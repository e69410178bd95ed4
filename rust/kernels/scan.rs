//! Scans: running sums along one axis.

use crate::dtype::Float;

/// How a scan walks its axis: TF's `reverse` runs from the end, and `exclusive`
/// leaves each element out of its own result (the first result is 0).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ScanOrder {
    pub reverse: bool,
    pub exclusive: bool,
}

/// Running sums along the middle axis of a contiguous `(outer, n, inner)` block.
/// Each step adds a whole row of `inner` elements, so the loop vectorises over
/// `inner` and reads memory in order.
pub fn cumsum<T: Float>(x: &[T], outer: usize, n: usize, inner: usize, order: ScanOrder) -> Vec<T> {
    let mut out = crate::storage::zeroed_vec::<T>(x.len());
    let mut running = vec![T::ZERO; inner];
    for o in 0..outer {
        running.fill(T::ZERO);
        for step in 0..n {
            let k = if order.reverse { n - 1 - step } else { step };
            let at = (o * n + k) * inner;
            let (row, dst) = (&x[at..at + inner], &mut out[at..at + inner]);
            if order.exclusive {
                for ((d, r), &v) in dst.iter_mut().zip(running.iter_mut()).zip(row) {
                    *d = *r;
                    *r += v;
                }
            } else {
                for ((d, r), &v) in dst.iter_mut().zip(running.iter_mut()).zip(row) {
                    *r += v;
                    *d = *r;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumsum_runs_along_the_middle_axis_in_every_order() {
        // shape (1, 3, 2): columns [1, 2, 3] and [10, 20, 30]
        let x = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0];
        let plain = cumsum(&x, 1, 3, 2, ScanOrder::default());
        assert_eq!(plain, vec![1.0, 10.0, 3.0, 30.0, 6.0, 60.0]);
        let reverse = cumsum(&x, 1, 3, 2, ScanOrder { reverse: true, exclusive: false });
        assert_eq!(reverse, vec![6.0, 60.0, 5.0, 50.0, 3.0, 30.0]);
        let exclusive = cumsum(&x, 1, 3, 2, ScanOrder { reverse: false, exclusive: true });
        assert_eq!(exclusive, vec![0.0, 0.0, 1.0, 10.0, 3.0, 30.0]);
    }
}
