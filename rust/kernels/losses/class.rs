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

/// What a class loss computes from its input, targets and class weights.
#[derive(Copy, Clone, Debug)]
pub struct ClassLoss<'a, T> {
    pub op: &'static str,
    /// The input holds logits (cross-entropy: log-softmax is fused in) rather than log-probabilities (nll).
    pub logits: bool,
    pub rows: Rows,
    pub target: &'a [i64],
    /// One weight per class, or None.
    pub weight: Option<&'a [T]>,
    pub ignore_index: i64,
    pub label_smoothing: f64,
}

/// The loss at each position and the weight of its target (0 where ignored).
pub struct PerPosition {
    pub loss: Vec<f64>,
    pub weight: Vec<f64>,
}

impl<T: FastExp> ClassLoss<'_, T> {
    /// The class at position `p`: None when ignored; an error naming the op when out of range.
    fn class(&self, p: usize) -> Result<Option<usize>> {
        let t = self.target[p];
        if t == self.ignore_index {
            return Ok(None);
        }
        if t < 0 || t as u64 >= self.rows.classes as u64 {
            return Err(Error::Index(format!(
                "{}: target {t} is out of bounds for {} classes (targets must be in [0, {}), or ignore_index {})",
                self.op, self.rows.classes, self.rows.classes, self.ignore_index
            )));
        }
        Ok(Some(t as usize))
    }

    /// The offset in the input of the first class of position `p`'s row.
    fn row_start(&self, p: usize) -> usize {
        (p / self.rows.inner) * self.rows.block() + p % self.rows.inner
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

    /// Every target checked before any work: a failed call computes nothing.
    pub fn check_targets(&self) -> Result<()> {
        (0..self.rows.positions()).try_for_each(|p| self.class(p).map(|_| ()))
    }

    /// (loss, weight of the target `t`) given a row's log-probabilities `lp`.
    #[inline(always)]
    fn loss_of_row(&self, t: usize, lp: impl Fn(usize) -> f64) -> (f64, f64) {
        let wt = self.w(t);
        let nll = -lp(t) * wt;
        if self.label_smoothing == 0.0 {
            return (nll, wt);
        }
        let smooth: f64 = (0..self.rows.classes).map(|c| -lp(c) * self.w(c)).sum();
        let eps = self.label_smoothing;
        ((1.0 - eps) * nll + eps / self.rows.classes as f64 * smooth, wt)
    }

    /// The loss and target weight at every position: of logits a band of rows at a time
    /// (`for_row_bands`: their log-sum-exps first, side by side where strided or short), of
    /// log-probabilities position by position.
    pub fn forward(&self, x: &[T]) -> Result<PerPosition> {
        self.check_targets()?;
        let n = self.rows.positions();
        if !self.logits {
            let at = |p: usize| match self.class(p) {
                Ok(Some(t)) => self.loss_of_row(t, self.log_probs_given(&x[self.row_start(p)..], T::ZERO, T::ZERO)),
                _ => (0.0, 0.0),
            };
            let (loss, weight) = if parallel(x.len()) {
                crate::kernels::threads::install(|| (0..n).into_par_iter().map(at).unzip())
            } else {
                (0..n).map(at).unzip()
            };
            return Ok(PerPosition { loss, weight });
        }
        let mut pairs = vec![(0.0, 0.0); n];
        // The rows of a band are consecutive positions, within one block where strided.
        let step = if self.rows.inner > 1 { 1 } else { self.rows.classes };
        for_row_bands(x, self.rows, &mut pairs, |first, shift, log_total, out| {
            let start = self.row_start(first);
            for (k, slot) in out.iter_mut().enumerate() {
                if let Ok(Some(t)) = self.class(first + k) {
                    let row = &x[start + k * step..];
                    *slot = self.loss_of_row(t, self.log_probs_given(row, shift[k], log_total[k]));
                }
            }
        });
        let (loss, weight) = pairs.into_iter().unzip();
        Ok(PerPosition { loss, weight })
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

    /// The sum of the target weights of the positions not ignored (the mean's denominator).
    pub fn total_weight(&self) -> Result<f64> {
        self.check_targets()?;
        Ok((0..self.rows.positions()).filter_map(|p| self.class(p).ok().flatten()).map(|t| self.w(t)).sum())
    }

    /// The gradient with respect to the input, given each position's factor (the output's
    /// gradient, divided by the mean's denominator): softmax − one-hot for cross-entropy, scaled
    /// by the target's weight and mixed with the smoothing term; −one-hot for nll.
    pub fn backward(&self, x: &[T], scale: &(dyn Fn(usize) -> f64 + Sync)) -> Result<Vec<T>> {
        self.check_targets()?;
        let mut gx = crate::storage::zeroed_vec(x.len());
        let total_w: f64 = (0..self.rows.classes).map(|c| self.w(c)).sum();
        let body = |task: usize, xs: &[T], gs: &mut [T]| class_loss_backward_task(self, task, xs, gs, scale, total_w);
        for_tasks(x, &mut gx, self.rows, body);
        Ok(gx)
    }

    /// `backward`'s work on the task `task` of the input (see `for_tasks`): short rows of logits
    /// transposed and side by side, anything else block by block.
    #[inline(always)]
    fn backward_task(&self, task: usize, xs: &[T], gs: &mut [T], scale: &(dyn Fn(usize) -> f64 + Sync), total_w: f64) {
        let (classes, block) = (self.rows.classes, self.rows.block());
        let first_block = task * self.rows.task_blocks();
        if self.logits && self.rows.short() {
            let n = xs.len() / classes;
            let mut gt = vec![T::ZERO; xs.len()];
            self.side_by_side_backward(first_block, &transposed(xs, n, classes), &mut gt, n, scale, total_w);
            return transpose_into(&gt, classes, n, gs);
        }
        for (b, (xb, gb)) in xs.chunks(block).zip(gs.chunks_mut(block)).enumerate() {
            self.backward_block(first_block + b, xb, gb, scale, total_w);
        }
    }

    /// `backward`'s work on the block `o` of the input.
    #[inline(always)]
    fn backward_block(&self, o: usize, xb: &[T], gb: &mut [T], scale: &(dyn Fn(usize) -> f64 + Sync), total_w: f64) {
        if self.logits && self.rows.inner > 1 {
            return self.side_by_side_backward(o * self.rows.inner, xb, gb, self.rows.inner, scale, total_w);
        }
        let classes = self.rows.classes;
        let eps = self.label_smoothing;
        for i in 0..self.rows.inner {
            let p = o * self.rows.inner + i;
            let Ok(Some(t)) = self.class(p) else { continue };
            let k = scale(p);
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
    /// (a strided class dim's, or short rows transposed), of the positions from `first` on: class
    /// by class, with each element's value computed as in `contiguous_backward`'s terms:
    /// `k (hot (p - onehot) + ε/C (W p - w_c))`.
    #[inline(always)]
    fn side_by_side_backward(
        &self,
        first: usize,
        xb: &[T],
        gb: &mut [T],
        inner: usize,
        scale: &(dyn Fn(usize) -> f64 + Sync),
        total_w: f64,
    ) {
        let (classes, eps) = (self.rows.classes, self.label_smoothing);
        let (shifts, log_totals) = side_by_side_lse(xb, inner, 0..inner);
        // Each position's target (usize::MAX where ignored: its gradient stays 0), factor and the
        // target's share of it.
        let targets: Vec<usize> =
            (0..inner).map(|i| self.class(first + i).ok().flatten().unwrap_or(usize::MAX)).collect();
        let factors: Vec<f64> =
            (0..inner).map(|i| if targets[i] == usize::MAX { 0.0 } else { scale(first + i) }).collect();
        let hots: Vec<f64> =
            targets.iter().map(|&t| if t == usize::MAX { 0.0 } else { (1.0 - eps) * self.w(t) }).collect();
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
        scale: &(dyn Fn(usize) -> f64 + Sync),
        total_w: f64,
    ) => loss.backward_task(task, xs, gs, scale, total_w);
}

impl<T: FastExp> ClassLoss<'_, T> {
    /// The gradient with respect to the class weights, given each position's factor `scale`
    /// (as for `backward`) and, for a mean, `(output gradient, mean)`: the mean's denominator
    /// holds the weights too, so each position's target weight also takes `-g * mean / total`.
    pub fn weight_backward(
        &self,
        x: &[T],
        scale: &dyn Fn(usize) -> f64,
        mean: Option<(f64, f64, f64)>,
    ) -> Result<Vec<f64>> {
        self.check_targets()?;
        let classes = self.rows.classes;
        let eps = self.label_smoothing;
        let mut gw = vec![0.0; classes];
        // Every row's shift and log-total first (the logits' log-softmax; none for log-probabilities).
        let rows_lse = self.logits.then(|| {
            let mut rows_lse = vec![(T::ZERO, T::ZERO); self.rows.positions()];
            for_row_bands(x, self.rows, &mut rows_lse, |_, shift, log_total, out| {
                out.iter_mut().zip(shift.iter().zip(log_total)).for_each(|(o, (&s, &l))| *o = (s, l))
            });
            rows_lse
        });
        for p in 0..self.rows.positions() {
            let Ok(Some(t)) = self.class(p) else { continue };
            let (shift, log_total) = rows_lse.as_ref().map_or((T::ZERO, T::ZERO), |rows_lse| rows_lse[p]);
            let lp = self.log_probs_given(&x[self.row_start(p)..], shift, log_total);
            let k = scale(p);
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
        Ok(gw)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{one_row_lse, strided_block};
    use super::*;

    #[test]
    fn out_of_range_target_names_the_op_and_the_classes() {
        let rows = Rows { outer: 2, classes: 3, inner: 1 };
        let loss = ClassLoss::<f64> {
            op: "cross_entropy",
            logits: true,
            rows,
            target: &[0, 3],
            weight: None,
            ignore_index: -100,
            label_smoothing: 0.0,
        };
        let err = loss.forward(&[0.0; 6]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("target 3") && err.contains("3 classes"), "{err}");
    }

    /// The cross-entropy gradient of each position as it was computed before the rows went side by
    /// side: `one_row_lse`, then the classes of that one position.
    fn gradient_position_by_position(loss: &ClassLoss<'_, f32>, x: &[f32], k: f64) -> Vec<f32> {
        let (classes, inner, eps) = (loss.rows.classes, loss.rows.inner, loss.label_smoothing);
        let total_w: f64 = (0..classes).map(|c| loss.w(c)).sum();
        let mut g = vec![0.0f32; x.len()];
        for p in 0..loss.rows.positions() {
            let Ok(Some(t)) = loss.class(p) else { continue };
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
        // The same 14 rows of 4 classes contiguous: short rows, transposed and side by side.
        let strided_x = &x;
        let x_short: Vec<f32> =
            (0..14).flat_map(|p| (0..4).map(move |c| strided_x[(p / 7) * 28 + c * 7 + p % 7])).collect();
        let target = [0i64, 2, 1, -100, 3, 1, 0, 3, 3, -100, 0, 2, 1, 1];
        let weight = [0.5f32, 2.0, 1.0, 1.5];
        let layouts =
            [(Rows { outer: 2, classes: 4, inner: 7 }, &x), (Rows { outer: 14, classes: 4, inner: 1 }, &x_short)];
        for (smoothing, weight) in [(0.0, None), (0.15, Some(&weight[..]))] {
            for (rows, x) in layouts {
                let loss = ClassLoss {
                    op: "cross_entropy",
                    logits: true,
                    rows,
                    target: &target,
                    weight,
                    ignore_index: -100,
                    label_smoothing: smoothing,
                };
                let got = loss.backward(x, &|_| 0.25).unwrap();
                let want = gradient_position_by_position(&loss, x, 0.25);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "smoothing {smoothing}, {rows:?}");
            }
        }
    }
}
