//! Softmax and log-softmax along one dim, and their gradient, on the row helpers of `losses`: long
//! contiguous rows one at a time, a strided class dim's rows and short contiguous rows side by side.

use super::*;

widest_vectors! {
    /// `softmax_task` compiled for the CPU's widest vectors. Its exps are `vecmath::exp`, whose
    /// `floor` is a library call per element in the baseline build: a softmax along a dim other
    /// than the last took 12 times as long as along the last.
    fn softmax_task_widest[T: FastExp](x: &[T], y: &mut [T], rows: Rows, log: bool) => softmax_task(x, y, rows, log);
}

/// Softmax (`log`: log-softmax) of one task of `for_tasks`: short rows and narrow blocks gathered
/// and side by side, long rows one at a time, a wide strided class dim block by block.
#[inline(always)]
fn softmax_task<T: FastExp>(x: &[T], y: &mut [T], rows: Rows, log: bool) {
    let (classes, inner) = (rows.classes, rows.inner);
    if rows.gathered() {
        let mut gathered = Gathered::of(x, rows);
        side_by_side_softmax(&gathered.x, &mut gathered.y, gathered.width, log);
        return gathered.scatter_into(rows, y);
    }
    if inner > 1 {
        for (xb, yb) in x.chunks(rows.block()).zip(y.chunks_mut(rows.block())) {
            side_by_side_softmax(xb, yb, inner, log);
        }
        return;
    }
    for (xr, yr) in x.chunks(classes).zip(y.chunks_mut(classes)) {
        if log {
            let (shift, lt) = lse_into(xr, yr);
            yr.iter_mut().zip(xr).for_each(|(o, &v)| *o = (v - shift) - lt);
        } else {
            let shift = row_shift(xr);
            T::exp_row(yr, xr, shift, T::ZERO);
            let total = lane_sum(yr, yr, |v, _| v);
            let scale = T::ONE / total;
            yr.iter_mut().for_each(|o| *o = *o * scale);
        }
    }
}

/// Softmax of the `inner` rows of one `(classes, inner)` block side by side: one pass over the
/// classes for the max, one for the exps, counting the ones apart (no second pass per row
/// dominated by its max, which was a strided walk of that row). Log-softmax is `(x - shift) -
/// log_total`, as a class loss's; softmax `exp(x - shift) · (1 / total)`, as along a contiguous
/// row (`exp((x - shift) - log_total)` rounded its argument, adding that error to the result's).
#[inline(always)]
fn side_by_side_softmax<T: FastExp>(xb: &[T], yb: &mut [T], inner: usize, log: bool) {
    let rows = yb.chunks_exact_mut(inner).zip(xb.chunks_exact(inner));
    if log {
        let (peak, log_total) = side_by_side_lse(xb, inner, 0..inner);
        for (yc, xc) in rows {
            for (((o, &v), &p), &l) in yc.iter_mut().zip(xc).zip(&peak).zip(&log_total) {
                *o = (v - p) - l;
            }
        }
        return;
    }
    let SideBySideSums { shift, ones, rest } = side_by_side_sums(xb, inner, 0..inner);
    let mut scale = vec![T::ZERO; inner];
    for ((k, &one), &other) in scale.iter_mut().zip(&ones).zip(&rest) {
        *k = T::ONE / (one + other);
    }
    for (yc, xc) in rows {
        for (((o, &v), &p), &k) in yc.iter_mut().zip(xc).zip(&shift).zip(&scale) {
            *o = (v - p).fast_exp() * k;
        }
    }
}

/// Softmax (or log-softmax, `log`) of `x` along the class dim of `rows`.
pub fn softmax<T: FastExp>(x: &[T], rows: Rows, log: bool) -> Vec<T> {
    // Every element is written below: recycled memory saves the page faults of new zeros.
    let mut y = crate::storage::overwritable_vec(x.len());
    for_tasks(x, &mut y, rows, |_, xb, yb| softmax_task_widest(xb, yb, rows, log));
    y
}

/// The gradient of softmax (`log`: log-softmax) from its output `y` and output gradient `g`:
/// `y * (g - sum(g * y))` and `g - exp(y) * sum(g)` along the class dim.
pub fn softmax_backward<T: FastExp>(g: &[T], y: &[T], rows: Rows, log: bool) -> Vec<T> {
    let mut out = crate::storage::overwritable_vec(g.len());
    let len = rows.task_len();
    for_tasks(g, &mut out, rows, |task, gs, os| {
        softmax_backward_task(gs, &y[task * len..task * len + gs.len()], os, rows, log)
    });
    out
}

widest_vectors! {
    /// `softmax_backward`'s work on one task, compiled for the CPU's widest vectors (log-softmax's
    /// exps, as in `softmax_task_widest`).
    fn softmax_backward_task[T: FastExp](gb: &[T], yb: &[T], ob: &mut [T], rows: Rows, log: bool)
        => softmax_backward_of_task(gb, yb, ob, rows, log);
}

#[inline(always)]
fn softmax_backward_of_task<T: FastExp>(gb: &[T], yb: &[T], ob: &mut [T], rows: Rows, log: bool) {
    let inner = rows.inner;
    if inner == 1 && rows.gathered() {
        return short_rows_softmax_backward(gb, yb, ob, rows.classes, log);
    }
    let mut totals = Vec::new();
    if rows.gathered() {
        let (mut gathered, y) = (Gathered::of(gb, rows), class_major(yb, rows));
        side_by_side_softmax_backward(&gathered.x, &y, &mut gathered.y, gathered.width, log, &mut totals);
        return gathered.scatter_into(rows, ob);
    }
    let block = rows.block();
    for ((g, y), o) in gb.chunks(block).zip(yb.chunks(block)).zip(ob.chunks_mut(block)) {
        if inner > 1 {
            side_by_side_softmax_backward(g, y, o, inner, log, &mut totals);
            continue;
        }
        let total = if log { lane_sum(g, g, |v, _| v) } else { lane_sum(g, y, |g, y| g * y) };
        for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
            *o = softmax_grad(g, y, total, log);
        }
    }
}

/// One element of the softmax gradient from its row's `total` (`sum(g)` for log-softmax,
/// `sum(g * y)` for softmax).
#[inline(always)]
fn softmax_grad<T: FastExp>(g: T, y: T, total: T, log: bool) -> T {
    if log {
        g - y.fast_exp() * total
    } else {
        y * (g - total)
    }
}

/// The softmax gradient of the `inner` rows of one `(classes, inner)` block side by side: one
/// running total per row (in `totals`, reused from block to block), walking the classes in order.
#[inline(always)]
fn side_by_side_softmax_backward<T: FastExp>(
    gb: &[T],
    yb: &[T],
    ob: &mut [T],
    inner: usize,
    log: bool,
    totals: &mut Vec<T>,
) {
    totals.clear();
    totals.resize(inner, T::ZERO);
    let class_runs = || gb.chunks_exact(inner).zip(yb.chunks_exact(inner));
    for (g, y) in class_runs() {
        let run = totals.iter_mut().zip(g).zip(y);
        match log {
            true => run.for_each(|((t, &g), _)| *t += g),
            false => run.for_each(|((t, &g), &y)| *t += g * y),
        }
    }
    for ((g, y), o) in class_runs().zip(ob.chunks_exact_mut(inner)) {
        for (((o, &g), &y), &t) in o.iter_mut().zip(g).zip(y).zip(totals.iter()) {
            *o = softmax_grad(g, y, t, log);
        }
    }
}

/// The softmax gradient of short contiguous rows without transposing them (three transposes took
/// longer than rows one at a time): each row's total summed in class order, as side by side (so
/// the bits of the same rows strided), spread over the row's elements, then one pass over all.
#[inline(always)]
fn short_rows_softmax_backward<T: FastExp>(gb: &[T], yb: &[T], ob: &mut [T], classes: usize, log: bool) {
    let mut spread = vec![T::ZERO; gb.len()];
    let rows = gb.chunks_exact(classes).zip(yb.chunks_exact(classes));
    for ((g, y), totals) in rows.zip(spread.chunks_exact_mut(classes)) {
        let total = match log {
            true => g.iter().fold(T::ZERO, |t, &g| t + g),
            false => g.iter().zip(y).fold(T::ZERO, |t, (&g, &y)| t + g * y),
        };
        totals.fill(total);
    }
    for (((o, &g), &y), &t) in ob.iter_mut().zip(gb).zip(yb).zip(&spread) {
        *o = softmax_grad(g, y, t, log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_of_a_row_sums_to_one_in_probability() {
        let rows = Rows { outer: 1, classes: 3, inner: 1 };
        let y = softmax(&[1.0f64, 2.0, 3.0], rows, true);
        let total: f64 = y.iter().map(|v| v.exp()).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

    /// log_softmax keeps the same precision, along a contiguous and a strided class dim.
    #[test]
    fn log_softmax_of_the_dominant_class_keeps_float32_precision() {
        let exact = -(2.0 * (-9.0f64).exp()).ln_1p();
        let contiguous = softmax(&[-6.0f32, 3.0, -6.0], Rows { outer: 1, classes: 3, inner: 1 }, true)[1];
        let strided = softmax(&[-6.0f32, 9.0, 3.0, 9.0, -6.0, 9.0], Rows { outer: 1, classes: 3, inner: 2 }, true)[2];
        for got in [contiguous as f64, strided as f64] {
            assert!((got - exact).abs() < 1e-6 * -exact, "{got} against {exact}");
        }
    }

    /// Short contiguous rows and narrow blocks, gathered a task's blocks at a time, give the bits of
    /// the same rows in one wide block (a `(classes, rows)` block side by side), forward and
    /// backward, across tasks and both tiles of the transposes.
    #[test]
    fn gathered_rows_give_the_bits_of_the_same_rows_in_one_block() {
        for (outer, classes, inner) in [(3000, 5, 1), (700, 20, 1), (2000, 3, 2), (300, 4, 7)] {
            let (len, width) = (outer * classes * inner, outer * inner);
            let value = |k: usize| ((k * 7919 % 1000) as f32 - 500.0) / 37.0;
            let x: Vec<f32> = (0..len).map(value).collect();
            let g: Vec<f32> = (0..len).map(|k| value(k + 11) / 9.0).collect();
            // Element (o, c, i) of `v` at c * width + o * inner + i.
            let one_block = |v: &[f32]| {
                let at = |c: usize, row: usize| v[(row / inner) * classes * inner + c * inner + row % inner];
                (0..len).map(|k| at(k / width, k % width)).collect::<Vec<_>>()
            };
            let rows = Rows { outer, classes, inner };
            let side_by_side = Rows { outer: 1, classes, inner: width };
            assert!(rows.gathered() && rows.task_blocks() < outer && !side_by_side.gathered());
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for log in [true, false] {
                let case = format!("{rows:?}, log {log}");
                let y = softmax(&x, rows, log);
                let y_one_block = softmax(&one_block(&x), side_by_side, log);
                assert_eq!(bits(&one_block(&y)), bits(&y_one_block), "{case}");
                let back = softmax_backward(&g, &y, rows, log);
                let back_one_block = softmax_backward(&one_block(&g), &y_one_block, side_by_side, log);
                assert_eq!(bits(&one_block(&back)), bits(&back_one_block), "{case}");
            }
        }
    }
}
