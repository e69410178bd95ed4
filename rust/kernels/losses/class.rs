//! The class losses (cross-entropy fused with log-softmax, and nll) and their gradients, on the
//! row helpers of `losses`: a position's class dim contiguous (`inner` = 1) or strided, the rows
//! of a strided dim and short contiguous rows side by side.

use super::*;

/// How a class loss reduces its per-position losses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    /// torch's names; anything else is refused with torch's message.
    pub fn parse(op: &str, name: &str) -> Result<Reduction> {
        match name {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::InvalidArgument(format!(
                "{op}: {other} is not a valid value for reduction (use 'none', 'mean' or 'sum')"
            ))),
        }
    }
}

/// Class indices, one per position, each checked to be a class or `ignore_index`: a loss made of
/// them needs no check per position, and a failed check leaves nothing computed.
#[derive(Copy, Clone, Debug)]
pub struct Targets<'a> {
    indices: &'a [i64],
    ignore_index: i64,
}

impl<'a> Targets<'a> {
    /// `indices` if each is in `[0, classes)` or `ignore_index`; else an error naming `op`.
    pub fn check(op: &str, indices: &'a [i64], classes: usize, ignore_index: i64) -> Result<Targets<'a>> {
        // A negative index is a huge u64. `|` rather than `||`: no branch, so the folds vectorise.
        let fits = |t: i64| (t == ignore_index) | ((t as u64) < classes as u64);
        // Chunks folded without a branch, the culprit looked for only on failure.
        if !indices.chunks(1024).all(|chunk| chunk.iter().fold(true, |all, &t| all & fits(t))) {
            let t = indices.iter().copied().find(|&t| !fits(t)).unwrap_or_default();
            return Err(Error::Index(format!(
                "{op}: target {t} is out of bounds for {classes} classes (targets must be in [0, {classes}), or \
                 ignore_index {ignore_index})"
            )));
        }
        Ok(Targets { indices, ignore_index })
    }

    /// The class at position `p`, or None when ignored.
    #[inline(always)]
    fn at(&self, p: usize) -> Option<usize> {
        let t = self.indices[p];
        (t != self.ignore_index).then_some(t as usize)
    }
}

/// The factor of each position's gradient: the output's gradient (for a mean, divided by the mean's
/// denominator).
#[derive(Copy, Clone, Debug)]
pub enum Factor<'a> {
    /// One for every position (a summed or mean loss).
    Same(f64),
    /// One per position (no reduction).
    Each(&'a [f64]),
}

impl Factor<'_> {
    #[inline(always)]
    fn at(&self, p: usize) -> f64 {
        match self {
            Factor::Same(k) => *k,
            Factor::Each(ks) => ks[p],
        }
    }
}

/// What a class loss computes from its input, targets and class weights.
#[derive(Copy, Clone, Debug)]
pub struct ClassLoss<'a, T> {
    pub op: &'static str,
    /// The input holds logits (cross-entropy: log-softmax is fused in) rather than log-probabilities (nll).
    pub logits: bool,
    pub rows: Rows,
    pub target: Targets<'a>,
    /// One weight per class, or None.
    pub weight: Option<&'a [T]>,
    pub label_smoothing: f64,
}

/// The sum of `values` in a fixed order (lanes, as the rows' sums), whatever the thread count.
pub fn total(values: &[f64]) -> f64 {
    lane_sum(values, values, |v, _| v)
}

impl<T: FastExp> ClassLoss<'_, T> {
    /// The class at position `p`, or None when ignored.
    #[inline(always)]
    fn class(&self, p: usize) -> Option<usize> {
        self.target.at(p)
    }

    /// The offsets of the rows of the positions from `first` on, in order, without a division per
    /// position.
    #[inline(always)]
    fn row_starts(&self, first: usize) -> impl Iterator<Item = usize> {
        let (inner, block) = (self.rows.inner.max(1), self.rows.block());
        let (mut start, mut i) = (self.row_start(first), first % inner);
        std::iter::from_fn(move || {
            let row = start;
            (start, i) = (start + 1, i + 1);
            if i == inner {
                // Past the block's last row: on to the next block's first.
                (start, i) = ((start + block) - inner, 0);
            }
            Some(row)
        })
    }

    /// The offset in the input of the first class of position `p`'s row (with no positions, as
    /// when `inner` is 0, the start of the input).
    fn row_start(&self, p: usize) -> usize {
        let inner = self.rows.inner.max(1);
        (p / inner) * self.rows.block() + p % inner
    }

    /// The log-probability of each class in a row starting at `row` (strided by `inner`), in
    /// float64, given the row's shift and log-total.
    #[inline(always)]
    fn log_probs_given<'r>(&self, row: &'r [T], shift: T, lt: T) -> impl Fn(usize) -> f64 + 'r {
        let stride = self.rows.inner;
        let (shift, lt) = (shift.to_f64(), lt.to_f64());
        move |c| (row[c * stride].to_f64() - shift) - lt
    }

    fn w(&self, c: usize) -> f64 {
        self.weight.map_or(1.0, |w| w[c].to_f64())
    }

    /// The loss of the target `t` given a row's log-probabilities `lp`.
    #[inline(always)]
    fn loss_of_row(&self, t: usize, lp: impl Fn(usize) -> f64) -> f64 {
        let nll = -lp(t) * self.w(t);
        if self.label_smoothing == 0.0 {
            return nll;
        }
        let smooth: f64 = (0..self.rows.classes).map(|c| -lp(c) * self.w(c)).sum();
        let eps = self.label_smoothing;
        (1.0 - eps) * nll + eps / self.rows.classes as f64 * smooth
    }

    /// The loss at every position (0 where ignored): of logits a band of rows at a time
    /// (`for_row_bands`: their log-sum-exps first, side by side where strided or short), of
    /// log-probabilities position by position.
    pub fn forward(&self, x: &[T]) -> Vec<f64> {
        // Every element is written below: recycled memory saves the page faults of new zeros.
        let mut losses = crate::storage::overwritable_vec(self.rows.positions());
        if !self.logits {
            let at = |(p, slot): (usize, &mut f64)| {
                *slot = match self.class(p) {
                    Some(t) => self.loss_of_row(t, self.log_probs_given(&x[self.row_start(p)..], T::ZERO, T::ZERO)),
                    None => 0.0,
                }
            };
            if parallel(x.len()) {
                crate::kernels::threads::install(|| losses.par_iter_mut().enumerate().for_each(at));
            } else {
                losses.iter_mut().enumerate().for_each(at);
            }
            return losses;
        }
        for_row_bands(x, self.rows, &mut losses, |first, shift, log_total, out| {
            for (((k, slot), start), (&shift, &lt)) in
                out.iter_mut().enumerate().zip(self.row_starts(first)).zip(shift.iter().zip(log_total))
            {
                *slot = match self.class(first + k) {
                    Some(t) => self.loss_of_row(t, self.log_probs_given(&x[start..], shift, lt)),
                    None => 0.0,
                };
            }
        });
        losses
    }

    /// The cross-entropy gradient of one contiguous row `xb` into `gb`: `k` (hot (p - onehot) +
    /// ε/C (W p - w)), with the softmax `p` computed in place (one exp pass), vectorised.
    fn contiguous_backward(&self, xb: &[T], gb: &mut [T], t: usize, k: f64, hot: f64, total_w: f64) {
        let classes = self.rows.classes;
        let eps_c = self.label_smoothing / classes as f64;
        let (xb, gb) = (&xb[..classes], &mut gb[..classes]);
        T::exp_row(gb, xb, row_shift(xb), T::ZERO);
        let total = lane_sum(gb, gb, |v, _| v).to_f64();
        let scale = T::from_f64(k * (hot + eps_c * total_w) / total);
        gb.iter_mut().for_each(|v| *v = *v * scale);
        if eps_c != 0.0 {
            match self.weight {
                Some(w) => gb.iter_mut().zip(w).for_each(|(v, &wc)| *v = *v - T::from_f64(k * eps_c) * wc),
                None => {
                    let off = T::from_f64(k * eps_c);
                    gb.iter_mut().for_each(|v| *v = *v - off);
                }
            }
        }
        gb[t] = gb[t] - T::from_f64(k * hot);
    }

    /// The sum of the target weights of the positions not ignored (the mean's denominator): a count
    /// without class weights, with them a sum in lanes in the order of `total`'s.
    pub fn total_weight(&self) -> f64 {
        let (indices, ignore_index) = (self.target.indices, self.target.ignore_index);
        if self.weight.is_none() {
            return indices.iter().filter(|&&t| t != ignore_index).count() as f64;
        }
        let mut lanes = [0.0; LANES];
        for chunk in indices.chunks(LANES) {
            for (lane, &t) in lanes.iter_mut().zip(chunk) {
                if t != ignore_index {
                    *lane += self.w(t as usize);
                }
            }
        }
        lanes.iter().fold(0.0, |sum, &lane| sum + lane)
    }

    /// The gradient with respect to the input, given each position's factor (see `Factor`): softmax − one-hot for cross-entropy, scaled
    /// by the target's weight and mixed with the smoothing term; −one-hot for nll.
    pub fn backward(&self, x: &[T], scale: Factor<'_>) -> Vec<T> {
        let mut gx = crate::storage::zeroed_vec(x.len());
        let total_w: f64 = (0..self.rows.classes).map(|c| self.w(c)).sum();
        let body = |task: usize, xs: &[T], gs: &mut [T]| class_loss_backward_task(self, task, xs, gs, scale, total_w);
        for_tasks(x, &mut gx, self.rows, body);
        gx
    }

    /// `backward`'s work on the task `task` of the input (see `for_tasks`): the rows of logits of
    /// short rows and narrow blocks gathered and side by side, anything else block by block.
    #[inline(always)]
    fn backward_task(&self, task: usize, xs: &[T], gs: &mut [T], scale: Factor<'_>, total_w: f64) {
        let (inner, block) = (self.rows.inner, self.rows.block());
        let first_block = task * self.rows.task_blocks();
        if self.logits && self.rows.gathered() {
            let mut gathered = Gathered::of(xs, self.rows);
            let first = first_block * inner;
            self.side_by_side_backward(first, &gathered.x, &mut gathered.y, gathered.width, scale, total_w);
            return gathered.scatter_into(self.rows, gs);
        }
        for (b, (xb, gb)) in xs.chunks(block).zip(gs.chunks_mut(block)).enumerate() {
            self.backward_block(first_block + b, xb, gb, scale, total_w);
        }
    }

    /// `backward`'s work on the block `o` of the input.
    #[inline(always)]
    fn backward_block(&self, o: usize, xb: &[T], gb: &mut [T], scale: Factor<'_>, total_w: f64) {
        if self.logits && self.rows.inner > 1 {
            return self.side_by_side_backward(o * self.rows.inner, xb, gb, self.rows.inner, scale, total_w);
        }
        let classes = self.rows.classes;
        let eps = self.label_smoothing;
        for i in 0..self.rows.inner {
            let p = o * self.rows.inner + i;
            let Some(t) = self.class(p) else { continue };
            let k = scale.at(p);
            let stride = self.rows.inner;
            let wt = self.w(t);
            if !self.logits {
                // Log-probabilities given: the loss is linear in them.
                if eps != 0.0 {
                    for c in 0..classes {
                        gb[c * stride + i] = T::from_f64(-k * eps / classes as f64 * self.w(c));
                    }
                    gb[t * stride + i] = gb[t * stride + i] - T::from_f64(k * (1.0 - eps) * wt);
                } else {
                    gb[t * stride + i] = T::from_f64(-k * wt);
                }
                continue;
            }
            self.contiguous_backward(xb, gb, t, k, (1.0 - eps) * wt, total_w);
        }
    }

    /// The gradient of the `inner` rows of logits side by side in the `(classes, inner)` block `xb`
    /// (a strided class dim's, or a task's blocks gathered), of the positions from `first` on: class
    /// by class, with each element's value computed as in `contiguous_backward`'s terms:
    /// `k (hot (p - onehot) + ε/C (W p - w_c))`.
    #[inline(always)]
    fn side_by_side_backward(
        &self,
        first: usize,
        xb: &[T],
        gb: &mut [T],
        inner: usize,
        scale: Factor<'_>,
        total_w: f64,
    ) {
        let (classes, eps) = (self.rows.classes, self.label_smoothing);
        let (shifts, log_totals) = side_by_side_lse(xb, inner, 0..inner);
        // Each position's target (usize::MAX where ignored: its gradient stays 0), factor and the
        // target's share of it, in one pass.
        let (mut targets, mut factors, mut hots) = (vec![usize::MAX; inner], vec![0.0; inner], vec![0.0; inner]);
        for (i, ((target, factor), hot)) in targets.iter_mut().zip(&mut factors).zip(&mut hots).enumerate() {
            if let Some(t) = self.class(first + i) {
                (*target, *factor, *hot) = (t, scale.at(first + i), (1.0 - eps) * self.w(t));
            }
        }
        let smooth = eps / classes as f64;
        for (c, (xc, gc)) in xb.chunks_exact(inner).zip(gb.chunks_exact_mut(inner)).enumerate() {
            let w_c = self.w(c);
            let per_row = targets.iter().zip(&factors).zip(&hots).zip(shifts.iter().zip(&log_totals));
            for ((g, &v), (((&t, &k), &hot), (&shift, &lt))) in gc.iter_mut().zip(xc).zip(per_row) {
                let prob = ((v - shift) - lt).fast_exp().to_f64();
                let mut value = hot * prob;
                if eps != 0.0 {
                    value += smooth * (total_w * prob - w_c);
                }
                value -= if c == t { hot } else { 0.0 };
                *g = if t == usize::MAX { T::ZERO } else { T::from_f64(k * value) };
            }
        }
    }
}

widest_vectors! {
    /// `ClassLoss::backward_task` compiled for the CPU's widest vectors (the exps of rows side by
    /// side; see `softmax_task_widest`).
    fn class_loss_backward_task[T: FastExp](
        loss: &ClassLoss<'_, T>,
        task: usize,
        xs: &[T],
        gs: &mut [T],
        scale: Factor<'_>,
        total_w: f64,
    ) => loss.backward_task(task, xs, gs, scale, total_w);
}

impl<T: FastExp> ClassLoss<'_, T> {
    /// The gradient with respect to the class weights, given each position's factor `scale`
    /// (as for `backward`) and, for a mean, `(output gradient, mean)`: the mean's denominator
    /// holds the weights too, so each position's target weight also takes `-g * mean / total`.
    pub fn weight_backward(&self, x: &[T], scale: Factor<'_>, mean: Option<(f64, f64, f64)>) -> Vec<f64> {
        let classes = self.rows.classes;
        let eps = self.label_smoothing;
        let mut gw = vec![0.0; classes];
        // Every row's shift and log-total first (the logits' log-softmax; none for log-probabilities).
        let rows_lse = self.logits.then(|| every_rows_lse(x, self.rows));
        for (p, start) in self.row_starts(0).take(self.rows.positions()).enumerate() {
            let Some(t) = self.class(p) else { continue };
            let (shift, log_total) = rows_lse.as_ref().map_or((T::ZERO, T::ZERO), |rows_lse| rows_lse[p]);
            let lp = self.log_probs_given(&x[start..], shift, log_total);
            let k = scale.at(p);
            gw[t] -= k * (1.0 - eps) * lp(t);
            if eps != 0.0 {
                for (c, slot) in gw.iter_mut().enumerate() {
                    *slot -= k * eps / classes as f64 * lp(c);
                }
            }
            if let Some((g, value, total)) = mean {
                gw[t] -= g * value / total;
            }
        }
        gw
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{one_row_lse, strided_block};
    use super::*;

    #[test]
    fn out_of_range_target_names_the_op_and_the_classes() {
        for bad in [3, -1] {
            let err = Targets::check("cross_entropy", &[0, -100, bad, 1], 3, -100).err().map(|e| e.to_string());
            let err = err.unwrap_or_default();
            assert!(err.contains(&format!("target {bad} ")) && err.contains("3 classes"), "{err}");
        }
        assert!(Targets::check("cross_entropy", &[0, -100, 2, 1], 3, -100).is_ok());
    }

    /// The cross-entropy gradient of each position as it was computed before the rows went side by
    /// side: `one_row_lse`, then the classes of that one position.
    fn gradient_position_by_position(loss: &ClassLoss<'_, f32>, x: &[f32], k: f64) -> Vec<f32> {
        let (classes, inner, eps) = (loss.rows.classes, loss.rows.inner, loss.label_smoothing);
        let total_w: f64 = (0..classes).map(|c| loss.w(c)).sum();
        let mut g = vec![0.0f32; x.len()];
        for p in 0..loss.rows.positions() {
            let Some(t) = loss.class(p) else { continue };
            let (o, i) = (p / inner, p % inner);
            let (xb, gb) = (&x[o * classes * inner..], &mut g[o * classes * inner..]);
            let hot = (1.0 - eps) * loss.w(t);
            let (shift, lt) = one_row_lse(&xb[i..], classes, inner);
            for c in 0..classes {
                let prob = ((xb[c * inner + i] - shift) - lt).fast_exp() as f64;
                let mut v = hot * prob;
                if eps != 0.0 {
                    v += eps / classes as f64 * (total_w * prob - loss.w(c));
                }
                if c == t {
                    v -= hot;
                }
                gb[c * inner + i] = (k * v) as f32;
            }
        }
        g
    }

    #[test]
    fn the_cross_entropy_gradient_of_rows_side_by_side_keeps_the_bits_of_each_position() {
        let block = strided_block();
        let x: Vec<f32> =
            block.iter().chain(block.iter().map(|v| v * 0.5 - 1.0).collect::<Vec<_>>().iter()).copied().collect();
        // The same 14 rows of 4 classes contiguous: short rows, gathered and side by side.
        let strided_x = &x;
        let x_short: Vec<f32> =
            (0..14).flat_map(|p| (0..4).map(move |c| strided_x[(p / 7) * 28 + c * 7 + p % 7])).collect();
        let target: Vec<i64> = [0i64, 2, 1, -100, 3, 1, 0, 3, 3, -100, 0, 2, 1, 1].repeat(10);
        // 140 rows of a block too wide to gather, side by side in it.
        let x_wide: Vec<f32> = (0..560).map(|k| ((k * 7919 % 1000) as f32 - 500.0) / 37.0).collect();
        let weight = [0.5f32, 2.0, 1.0, 1.5];
        let layouts = [
            (Rows { outer: 2, classes: 4, inner: 7 }, &x),
            (Rows { outer: 14, classes: 4, inner: 1 }, &x_short),
            (Rows { outer: 1, classes: 4, inner: 140 }, &x_wide),
        ];
        for (smoothing, weight) in [(0.0, None), (0.15, Some(&weight[..]))] {
            for (rows, x) in layouts {
                assert_eq!(rows.gathered(), rows.inner < 64, "{rows:?}");
                let target = Targets::check("cross_entropy", &target[..rows.positions()], 4, -100).unwrap();
                let loss =
                    ClassLoss { op: "cross_entropy", logits: true, rows, target, weight, label_smoothing: smoothing };
                let got = loss.backward(x, Factor::Same(0.25));
                let want = gradient_position_by_position(&loss, x, 0.25);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "smoothing {smoothing}, {rows:?}");
            }
        }
    }
}
