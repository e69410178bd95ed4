//! The in-place add of mid-size tensors (`w -= lr·g`), split among the kernel
//! threads from `SPLIT_MIN_ELEMENTS` on.
//!
//! The split is lower than `PARALLEL_MIN_ELEMENTS` because of where a weight sits
//! in a training step: both cores have just read all of it (every band of the
//! forward product streams the whole weight), so one core writing it alone waits
//! for the other core's copy of each cache line to be dropped.
//! `w1.sub_(lr * w1.grad)` on the seed step's 1000×100 float32 weight took 44 µs in
//! the two-thread eager step against 11 µs in the one-thread step, and 20–22 µs split
//! (`benchmarks/eager_step_parts.py`).
//! (`zero_` of the gradient was tried too: split, it took 20 µs against 8, since
//! the core that had just read the gradient had to hand half of it over.)
//! Each element is computed as before, so the bits do not change.

use super::spin_pool;
use crate::dtype::Float;
use parking_lot::Mutex;

/// From this many elements an in-place write is split among the kernel threads.
const SPLIT_MIN_ELEMENTS: usize = 1 << 15;

/// `dst += alpha·src` (`dst += src` when alpha is 1), element by element.
pub fn add_scaled<T: Float>(dst: &mut [T], src: &[T], alpha: T) {
    // invariant: callers pass operands of one shape; this keeps every part's slice in bounds.
    assert_eq!(dst.len(), src.len(), "add_scaled: operands of different lengths");
    split(dst, |start, part| {
        let src = &src[start..start + part.len()];
        if alpha == T::ONE {
            part.iter_mut().zip(src).for_each(|(o, &v)| *o += v);
        } else {
            part.iter_mut().zip(src).for_each(|(o, &v)| *o += alpha * v);
        }
    });
}

/// Runs `write(start, part)` over consecutive parts of `dst`, one per kernel thread
/// for a large enough `dst`, else once over all of it.
fn split<T: Send>(dst: &mut [T], write: impl Fn(usize, &mut [T]) + Sync) {
    let threads = super::threads::num_threads();
    if dst.len() < SPLIT_MIN_ELEMENTS || threads < 2 {
        return write(0, dst);
    }
    let size = dst.len().div_ceil(threads);
    // One uncontended lock per part: each part is taken by exactly one task.
    let parts: Vec<Mutex<&mut [T]>> = dst.chunks_mut(size).map(Mutex::new).collect();
    spin_pool::run(parts.len(), &|i| write(i * size, &mut parts[i].lock()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_writes_give_the_values_of_one_loop_at_any_size() {
        for n in [0, 7, SPLIT_MIN_ELEMENTS - 1, SPLIT_MIN_ELEMENTS, 3 * SPLIT_MIN_ELEMENTS + 5] {
            let src: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let start: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let mut dst = start.clone();
            add_scaled(&mut dst, &src, -0.3);
            let want: Vec<f32> = start.iter().zip(&src).map(|(&d, &s)| d + -0.3 * s).collect();
            assert_eq!(dst, want, "{n} elements");
            let mut plain = start.clone();
            add_scaled(&mut plain, &src, 1.0);
            assert!(plain.iter().zip(&start).zip(&src).all(|((&p, &d), &s)| p == d + s), "{n} elements, alpha 1");
        }
    }
}
