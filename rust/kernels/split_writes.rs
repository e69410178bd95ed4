//! The in-place add and the fill of mid-size tensors (`w -= lr·g`, `g.zero_()`), split
//! among the kernel threads from `SPLIT_MIN_ELEMENTS` on.
//!
//! The split is lower than `PARALLEL_MIN_ELEMENTS` because of where a weight sits
//! in a training step: both cores have just read it (all of it in bands of rows of the
//! forward product, or each the half that it writes here in halves of the depth, see
//! `crate_gemm::always_in_depth_halves`), so one core writing it alone waits
//! for the other core's copy of each cache line to be dropped.
//! `w1.sub_(lr * w1.grad)` on the seed step's 1000×100 float32 weight took 44 µs in
//! the two-thread eager step against 11 µs in the one-thread step, and 20–22 µs split
//! (`benchmarks/eager_step_parts.py`).
//!
//! `zero_` of the gradient (`fill`) is split into the same parts, so each core zeroes the
//! part of the gradient that it adds the next step's gradient into (`add_scaled`, in
//! backward's accumulation). Zeroed by one core, half of the gradient moved to it and back
//! every step: in the eager seed step, zeroing both gradients took 28–32 µs on one core
//! against 8–9 split, in the slow machine state (`benchmarks/eager_step_parts.py`). (When
//! this was first tried, before `lr * g` was split, one core had just read all of the
//! gradient, and zeroing it there was faster: 8 µs against 20.)
//!
//! The temporary `lr * g` of that update (a number times a mid-size tensor) is split
//! into the same parts, so each core writes the part of it that it then reads in
//! `sub_`. Written by one core, its recycled buffer had last been read by the other
//! core: it took 23 µs against 9 split.
//! Each element is computed as before, so the bits do not change.

use super::spin_pool;
use crate::dtype::Float;

/// From this many elements an in-place write is split among the kernel threads.
const SPLIT_MIN_ELEMENTS: usize = 1 << 15;

/// `dst += alpha·src` (`dst += src` when alpha is 1), element by element.
pub fn add_scaled<T: Float>(dst: &mut [T], src: &[T], alpha: T) {
    add_scaled_in(parts_for(dst.len()), dst, src, alpha)
}

fn add_scaled_in<T: Float>(parts: usize, dst: &mut [T], src: &[T], alpha: T) {
    // invariant: callers pass operands of one shape; this keeps every part's slice in bounds.
    assert_eq!(dst.len(), src.len(), "add_scaled: operands of different lengths");
    spin_pool::split_into(parts, dst, |start, part| {
        let src = &src[start..start + part.len()];
        if alpha == T::ONE {
            part.iter_mut().zip(src).for_each(|(o, &v)| *o += v);
        } else {
            part.iter_mut().zip(src).for_each(|(o, &v)| *o += alpha * v);
        }
    });
}

/// `f(v)` for each `v` of `src`, written in the parts that `add_scaled` splits its
/// `dst` into, so that in `w.sub_(lr * g)` each core reads back the part of the
/// temporary it wrote. `elementwise::scalar` calls it below `PARALLEL_MIN_ELEMENTS`;
/// from there on `elementwise::map` writes in parallel chunks.
pub fn map<T: Copy + Send + Sync + 'static>(src: &[T], f: impl Fn(T) -> T + Sync) -> Vec<T> {
    map_in(parts_for(src.len()), src, f)
}

fn map_in<T: Copy + Send + Sync + 'static>(parts: usize, src: &[T], f: impl Fn(T) -> T + Sync) -> Vec<T> {
    let mut out = crate::storage::vec_with_capacity(src.len());
    spin_pool::split_into(parts, &mut out.spare_capacity_mut()[..src.len()], |start, part| {
        for (slot, &v) in part.iter_mut().zip(&src[start..]) {
            slot.write(f(v));
        }
    });
    // SAFETY: the parts cover all `src.len()` slots, and each part's zip writes every slot
    // of it, since the part at `start` is at most `src.len() - start` long.
    unsafe { out.set_len(src.len()) };
    out
}

/// `v` into every element of `dst`, in the parts that `add_scaled` splits its `dst` into, so
/// that `w.grad.zero_()` leaves each part of the gradient in the cache of the core that adds
/// the next step's gradient into it.
pub fn fill<T: Copy + Send + Sync>(dst: &mut [T], v: T) {
    fill_in(parts_for(dst.len()), dst, v)
}

fn fill_in<T: Copy + Send + Sync>(parts: usize, dst: &mut [T], v: T) {
    spin_pool::split_into(parts, dst, |_, part| part.fill(v));
}

/// Whether `map` may split a tensor of `n` elements where `elementwise::map` would not.
pub fn splits_below_parallel(n: usize) -> bool {
    (SPLIT_MIN_ELEMENTS..super::PARALLEL_MIN_ELEMENTS).contains(&n)
}

/// Into how many parts a write of `n` elements is split: one per kernel thread for a large
/// enough `n`, else 1. Below `PARALLEL_MIN_ELEMENTS` it splits only while the helpers spin
/// (as they do right after a product): waking a parked helper took longer than the write it
/// would share (`t * 0.5` of 1000×100 after a pause of 1 ms took 25–37 µs split, against
/// 16–29 on one thread: `benchmarks/lone_scalar_mul.py`).
fn parts_for(n: usize) -> usize {
    let threads = super::threads::num_threads();
    let waking_costs_more = n < super::PARALLEL_MIN_ELEMENTS && !spin_pool::helpers_awake();
    if n < SPLIT_MIN_ELEMENTS || threads < 2 || waking_costs_more {
        1
    } else {
        threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZES: [usize; 5] = [0, 7, SPLIT_MIN_ELEMENTS - 1, SPLIT_MIN_ELEMENTS, 3 * SPLIT_MIN_ELEMENTS + 5];

    #[test]
    fn split_writes_give_the_values_of_one_loop_in_any_number_of_parts() {
        for (n, parts) in SIZES.into_iter().flat_map(|n| [1, 2, 3].map(|p| (n, p))) {
            let src: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let start: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let mut dst = start.clone();
            add_scaled_in(parts, &mut dst, &src, -0.3);
            let want: Vec<f32> = start.iter().zip(&src).map(|(&d, &s)| d + -0.3 * s).collect();
            assert_eq!(dst, want, "{n} elements in {parts} parts");
            let mut plain = start.clone();
            add_scaled_in(parts, &mut plain, &src, 1.0);
            let summed = plain.iter().zip(&start).zip(&src).all(|((&p, &d), &s)| p == d + s);
            assert!(summed, "{n} elements in {parts} parts, alpha 1");
            let scaled: Vec<f32> = src.iter().map(|&v| v * -0.3).collect();
            assert_eq!(map_in(parts, &src, |v| v * -0.3), scaled, "{n} elements in {parts} parts");
            let mut filled = start.clone();
            fill_in(parts, &mut filled, -0.0);
            assert!(filled.iter().all(|v| v.to_bits() == (-0.0f32).to_bits()), "{n} elements in {parts} parts, fill");
        }
    }

    #[test]
    fn short_writes_stay_whole_and_long_ones_split_per_thread() {
        assert_eq!(parts_for(SPLIT_MIN_ELEMENTS - 1), 1);
        let threads = super::super::threads::num_threads();
        assert_eq!(parts_for(super::super::PARALLEL_MIN_ELEMENTS), if threads < 2 { 1 } else { threads });
    }
}
