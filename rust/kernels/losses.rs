//! Kernels of the loss ops: softmax and log-softmax along one dim, and the class losses
//! (cross-entropy fused with log-softmax, and nll) with their gradients. A tensor is seen
//! as `(outer, classes, inner)`: the class dim in the middle, contiguous.

use crate::dtype::Float;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// exp and the logarithms computed with the vectorising float32 versions (`vecmath`); float64
/// keeps libm's.
pub trait FastExp: Float {
    fn fast_exp(self) -> Self;
    fn fast_ln(self) -> Self;
    fn fast_ln_1p(self) -> Self;
    /// `out[i] = exp((x[i] - a) - b)` over one contiguous row (vectorised for float32).
    fn exp_row(out: &mut [Self], x: &[Self], a: Self, b: Self);
}

impl FastExp for f32 {
    #[inline(always)]
    fn fast_exp(self) -> f32 {
        super::vecmath::exp(self)
    }
    #[inline(always)]
    fn fast_ln(self) -> f32 {
        super::vecmath::ln(self)
    }
    #[inline(always)]
    fn fast_ln_1p(self) -> f32 {
        super::vecmath::ln_1p(self)
    }
    fn exp_row(out: &mut [f32], x: &[f32], a: f32, b: f32) {
        super::vecmath::map_row_f32(out, x, &|v| super::vecmath::exp((v - a) - b));
    }
}

impl FastExp for f64 {
    #[inline(always)]
    fn fast_exp(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn fast_ln(self) -> f64 {
        self.ln()
    }
    #[inline(always)]
    fn fast_ln_1p(self) -> f64 {
        self.ln_1p()
    }
    fn exp_row(out: &mut [f64], x: &[f64], a: f64, b: f64) {
        out.iter_mut().zip(x).for_each(|(o, &v)| *o = ((v - a) - b).exp());
    }
}

/// Independent running sums in `lane_sum`: one accumulator makes every addition wait for
/// the one before (the row sums were most of a softmax of 512×1000). Cross-entropy's rows
/// use them too.
const LANES: usize = 16;

/// The sum of `f(a[i], b[i])` over two slices of one length: element i goes to lane
/// i % LANES, and the lanes are added in order at the end (as `reduce::sum_slice`), so the
/// order depends only on the row's length.
#[inline]
fn lane_sum<T: Float>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> T {
    let mut lanes = [T::ZERO; LANES];
    let (a_blocks, b_blocks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (a_tail, b_tail) = (a_blocks.remainder(), b_blocks.remainder());
    for (a_block, b_block) in a_blocks.zip(b_blocks) {
        for ((lane, &p), &q) in lanes.iter_mut().zip(a_block).zip(b_block) {
            *lane += f(p, q);
        }
    }
    for ((lane, &p), &q) in lanes.iter_mut().zip(a_tail).zip(b_tail) {
        *lane += f(p, q);
    }
    lanes.iter().fold(T::ZERO, |acc, &lane| acc + lane)
}

/// The max of a contiguous row, or 0 when it is not finite (NaN wins). The max is `amax`'s
/// vectorised one: a scalar loop of compares, each waiting for the one before, was 3/4 of
/// log-softmax's own time on 512×1000 float32.
#[inline]
fn row_shift<T: Float>(x: &[T]) -> T {
    if x.is_empty() {
        return T::ZERO;
    }
    let peak = super::reduce::best_in_row(x, true);
    if peak.to_f64().is_finite() {
        peak
    } else {
        T::ZERO
    }
}

/// ln(ones + rest): the log of a sum of exps, `ones` of which are exactly 1 (an element equal
/// to its row's shift gives exp(0) = 1) and `rest` the sum of the others. Taken as ln_1p of
/// the others, so that a row its max dominates keeps the small log to float precision (ln of
/// 1 + 2.5e-4 rounded to float32 first is off by up to 5e-4 of it). Both logs are computed and
/// one picked, so that a loop of these over rows side by side vectorises.
#[inline(always)]
fn log_of_total<T: FastExp>(ones: T, rest: T) -> T {
    let with_ones = ((ones - T::ONE) + rest).fast_ln_1p();
    let without = rest.fast_ln();
    if ones > T::ZERO {
        with_ones
    } else {
        without
    }
}

/// Whether the log of `total`, the sum of a row's exps shifted by its max, needs a second pass.
/// Below 2 the sum is the max's own 1 and others much smaller, whose low bits that 1 rounds away:
/// then the caller recounts (`log_of_total`). From 2 up, ln of the rounded sum is as exact (NaN
/// too). The callers branch themselves rather than pass the second pass as a closure: a closure
/// would be compiled apart from their `widest_vectors!` copies, its logarithms in baseline code.
#[inline(always)]
fn needs_recount<T: FastExp>(total: T) -> bool {
    total < T::from_f64(2.0)
}

/// The log of the sum of a row's exps shifted by its max (see `needs_recount`). The second pass
/// sums the exps other than 1; the ones are the difference (0 or 1: two would make 2).
#[inline(always)]
fn log_sum_of_exps<T: FastExp>(exps: &[T]) -> T {
    let total = lane_sum(exps, exps, |v, _| v);
    if !needs_recount(total) {
        return total.fast_ln();
    }
    let rest = lane_sum(exps, exps, |e, _| if e == T::ONE { T::ZERO } else { e });
    let ones = if total - rest >= T::from_f64(0.5) { T::ONE } else { T::ZERO };
    log_of_total(ones, rest)
}

/// The shift and log(sum(exp(x - shift))) of a contiguous row, with `scratch` holding the exps.
#[inline(always)]
fn contiguous_lse<T: FastExp>(x: &[T], scratch: &mut Vec<T>) -> (T, T) {
    scratch.resize(x.len(), T::ZERO);
    lse_into(x, scratch)
}

/// `contiguous_lse` with the exps written to `exps`, a slice of the row's length.
#[inline(always)]
fn lse_into<T: FastExp>(x: &[T], exps: &mut [T]) -> (T, T) {
    let shift = row_shift(x);
    T::exp_row(exps, x, shift, T::ZERO);
    (shift, log_sum_of_exps(exps))
}

/// A contiguous tensor seen as `(outer, classes, inner)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rows {
    pub outer: usize,
    pub classes: usize,
    pub inner: usize,
}

impl Rows {
    /// The layout of `shape` around `dim` (a rank-0 tensor is one class).
    pub fn around(shape: &[usize], dim: usize) -> Rows {
        if shape.is_empty() {
            return Rows { outer: 1, classes: 1, inner: 1 };
        }
        Rows { outer: shape[..dim].iter().product(), classes: shape[dim], inner: shape[dim + 1..].iter().product() }
    }

    fn block(&self) -> usize {
        self.classes * self.inner
    }

    fn positions(&self) -> usize {
        self.outer * self.inner
    }
}

/// Rows per parallel task of `side_by_side_forward`.
const SIDE_BY_SIDE_BAND: usize = 512;

/// Blocks of `(classes, inner)` elements per parallel task, so that a task has enough work.
fn parallel(numel: usize) -> bool {
    numel >= super::PARALLEL_MIN_ELEMENTS / 8 && super::threads::num_threads() > 1
}

/// Runs `f(block_index, input_block, output_block)` over the `(classes, inner)` blocks.
fn for_blocks<T: Float>(x: &[T], out: &mut [T], rows: Rows, f: impl Fn(usize, &[T], &mut [T]) + Sync + Send) {
    let block = rows.block().max(1);
    if parallel(x.len()) {
        super::threads::install(|| {
            out.par_chunks_mut(block).zip(x.par_chunks(block)).enumerate().for_each(|(o, (y, x))| f(o, x, y))
        });
    } else {
        out.chunks_mut(block).zip(x.chunks(block)).enumerate().for_each(|(o, (y, x))| f(o, x, y));
    }
}

/// The shift (the max, or 0 when it is not finite) and log(sum(exp(x - shift))) of one row of
/// `classes` elements `stride` apart. Callers compute `(x - shift) - log_total`, as torch does:
/// adding the two first would lose the small log to rounding next to a large max. The exps
/// equal to 1 are counted apart from the others (`log_of_total`).
#[inline(always)]
fn row_lse<T: FastExp>(x: &[T], classes: usize, stride: usize) -> (T, T) {
    let mut peak = T::from_f64(f64::NEG_INFINITY);
    for c in 0..classes {
        let v = x[c * stride];
        if v > peak || v.is_nan() {
            peak = v;
        }
    }
    // An infinite peak (all -inf, or a +inf) shifts by 0, as logsumexp does.
    let shift = if peak.to_f64().is_finite() { peak } else { T::ZERO };
    (shift, strided_log_of_total(x, classes, stride, shift))
}

widest_vectors! {
    /// `contiguous_lse` compiled for the CPU's widest vectors (a class loss's rows, one at a time).
    fn row_lse_widest[T: FastExp](x: &[T], scratch: &mut Vec<T>) -> (T, T) => contiguous_lse(x, scratch);
}

widest_vectors! {
    /// `row_lse` compiled for the CPU's widest vectors (see `softmax_block_widest`).
    fn strided_lse[T: FastExp](x: &[T], classes: usize, stride: usize) -> (T, T) => row_lse(x, classes, stride);
}

/// `log_of_total` of the exps of one row of `classes` elements `stride` apart, shifted by `shift`.
#[inline(always)]
fn strided_log_of_total<T: FastExp>(x: &[T], classes: usize, stride: usize, shift: T) -> T {
    let (mut ones, mut rest) = (T::ZERO, T::ZERO);
    for c in 0..classes {
        let e = (x[c * stride] - shift).fast_exp();
        if e == T::ONE {
            ones += T::ONE;
        } else {
            rest += e;
        }
    }
    log_of_total(ones, rest)
}

widest_vectors! {
    /// `softmax_block` compiled for the CPU's widest vectors. Its exps are `vecmath::exp`, whose
    /// `floor` is a library call per element in the baseline build: a softmax along a dim other
    /// than the last took 12 times as long as along the last.
    fn softmax_block_widest[T: FastExp](x: &[T], y: &mut [T], rows: Rows, log: bool) => softmax_block(x, y, rows, log);
}

/// The shifts and log-totals (`row_lse`) of the rows `cols` of one `(classes, inner)` block, side
/// by side: the classes walked in order for every row at once, with each row's sums in the order
/// of `row_lse`'s, so the same bits.
#[inline(always)]
fn side_by_side_lse<T: FastExp>(xb: &[T], inner: usize, cols: Range<usize>) -> (Vec<T>, Vec<T>) {
    let classes = || xb.chunks_exact(inner).map(|xc| &xc[cols.clone()]);
    let mut shift = vec![T::from_f64(f64::NEG_INFINITY); cols.len()];
    for xc in classes() {
        for (p, &v) in shift.iter_mut().zip(xc) {
            if v > *p || v.is_nan() {
                *p = v;
            }
        }
    }
    shift.iter_mut().for_each(|p| *p = if p.to_f64().is_finite() { *p } else { T::ZERO });
    let (mut ones, mut rest) = (vec![T::ZERO; cols.len()], vec![T::ZERO; cols.len()]);
    for xc in classes() {
        for (((one, other), &s), &v) in ones.iter_mut().zip(rest.iter_mut()).zip(&shift).zip(xc) {
            let e = (v - s).fast_exp();
            // Adding 0 leaves either sum's bits as they were: no branch, so the loop vectorises.
            let is_one = e == T::ONE;
            *one += if is_one { T::ONE } else { T::ZERO };
            *other += if is_one { T::ZERO } else { e };
        }
    }
    // A plain loop, not `collect`: `Vec`'s `from_iter` is not inlined here, and the logarithms
    // would run in its baseline code, their fused multiply-adds as library calls.
    let mut log_totals = vec![T::ZERO; ones.len()];
    for ((log_total, &one), &other) in log_totals.iter_mut().zip(&ones).zip(&rest) {
        *log_total = log_of_total(one, other);
    }
    (shift, log_totals)
}

widest_vectors! {
    /// `side_by_side_lse` compiled for the CPU's widest vectors.
    fn block_lse[T: FastExp](xb: &[T], inner: usize, cols: Range<usize>) -> (Vec<T>, Vec<T>)
        => side_by_side_lse(xb, inner, cols);
}

/// Softmax (`log`: log-softmax) of a contiguous block along its class dim.
#[inline(always)]
fn softmax_block<T: FastExp>(x: &[T], y: &mut [T], rows: Rows, log: bool) {
    let (classes, inner) = (rows.classes, rows.inner);
    if inner == 1 {
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
        return;
    }
    // Many short rows side by side: their shifts and log-totals as a class loss's (one pass over
    // the classes for the max, one for the exps, counting the ones apart: no second pass per row
    // dominated by its max, which was a strided walk of that row).
    let (peak, log_total) = side_by_side_lse(x, inner, 0..inner);
    for c in 0..classes {
        let range = c * inner..(c + 1) * inner;
        for (((o, &v), &p), &l) in y[range.clone()].iter_mut().zip(&x[range]).zip(&peak).zip(&log_total) {
            let value = (v - p) - l;
            *o = if log { value } else { value.fast_exp() };
        }
    }
}

/// Softmax (or log-softmax, `log`) of `x` along the class dim of `rows`.
pub fn softmax<T: FastExp>(x: &[T], rows: Rows, log: bool) -> Vec<T> {
    // Every element is written below: recycled memory saves the page faults of new zeros.
    let mut y = crate::storage::overwritable_vec(x.len());
    for_blocks(x, &mut y, rows, |_, xb, yb| softmax_block_widest(xb, yb, rows, log));
    y
}

/// The gradient of softmax (`log`: log-softmax) from its output `y` and output gradient `g`:
/// `y * (g - sum(g * y))` and `g - exp(y) * sum(g)` along the class dim.
pub fn softmax_backward<T: FastExp>(g: &[T], y: &[T], rows: Rows, log: bool) -> Vec<T> {
    let mut out = crate::storage::overwritable_vec(g.len());
    let block = rows.block().max(1);
    for_blocks(g, &mut out, rows, |o, gb, ob| {
        softmax_backward_block(gb, &y[o * block..(o + 1) * block], ob, rows, log)
    });
    out
}

widest_vectors! {
    /// `softmax_backward`'s work on one block, compiled for the CPU's widest vectors (log-softmax's
    /// exps, as in `softmax_block_widest`).
    fn softmax_backward_block[T: FastExp](gb: &[T], yb: &[T], ob: &mut [T], rows: Rows, log: bool)
        => softmax_backward_of_block(gb, yb, ob, rows, log);
}

#[inline(always)]
fn softmax_backward_of_block<T: FastExp>(gb: &[T], yb: &[T], ob: &mut [T], rows: Rows, log: bool) {
    let inner = rows.inner;
    if inner == 1 {
        let total = if log { lane_sum(gb, gb, |v, _| v) } else { lane_sum(gb, yb, |g, y| g * y) };
        for ((o, &g), &y) in ob.iter_mut().zip(gb).zip(yb) {
            *o = if log { g - y.fast_exp() * total } else { y * (g - total) };
        }
        return;
    }
    // Many short rows side by side: one running total per row, walking the classes in order.
    let mut totals = vec![T::ZERO; inner];
    let class_runs = || gb.chunks_exact(inner).zip(yb.chunks_exact(inner));
    for (g, y) in class_runs() {
        let run = totals.iter_mut().zip(g).zip(y);
        match log {
            true => run.for_each(|((t, &g), _)| *t += g),
            false => run.for_each(|((t, &g), &y)| *t += g * y),
        }
    }
    for ((g, y), o) in class_runs().zip(ob.chunks_exact_mut(inner)) {
        for (((o, &g), &y), &t) in o.iter_mut().zip(g).zip(y).zip(&totals) {
            *o = if log { g - y.fast_exp() * t } else { y * (g - t) };
        }
    }
}

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

    /// The shift and log-sum-exp of a row starting at `row` (strided by `inner`).
    fn lse(&self, row: &[T], scratch: &mut Vec<T>) -> (T, T) {
        if self.rows.inner == 1 {
            row_lse_widest(&row[..self.rows.classes], scratch)
        } else {
            strided_lse(row, self.rows.classes, self.rows.inner)
        }
    }

    /// The log-probability of each class in a row starting at `row` (strided by `inner`), in float64.
    fn log_probs<'r>(&self, row: &'r [T], scratch: &mut Vec<T>) -> impl Fn(usize) -> f64 + 'r {
        let (shift, lt) = if self.logits { self.lse(row, scratch) } else { (T::ZERO, T::ZERO) };
        self.log_probs_given(row, shift, lt)
    }

    /// `log_probs` with the row's shift and log-total given.
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

    /// (loss, weight of the target) at position `p` of the input `x`.
    fn at(&self, x: &[T], p: usize, scratch: &mut Vec<T>) -> (f64, f64) {
        let Ok(Some(t)) = self.class(p) else { return (0.0, 0.0) };
        let (o, i) = (p / self.rows.inner, p % self.rows.inner);
        let row = &x[o * self.rows.block() + i..];
        self.loss_of_row(t, self.log_probs(row, scratch))
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

    /// The loss and target weight at every position.
    pub fn forward(&self, x: &[T]) -> Result<PerPosition> {
        self.check_targets()?;
        if self.logits && self.rows.inner > 1 {
            return Ok(self.side_by_side_forward(x));
        }
        let n = self.rows.positions();
        let pairs: Vec<(f64, f64)> = if parallel(x.len()) {
            super::threads::install(|| (0..n).into_par_iter().map_init(Vec::new, |s, p| self.at(x, p, s)).collect())
        } else {
            let mut scratch = Vec::new();
            (0..n).map(|p| self.at(x, p, &mut scratch)).collect()
        };
        let (loss, weight) = pairs.into_iter().unzip();
        Ok(PerPosition { loss, weight })
    }

    /// `forward` of logits whose class dim is strided (`inner` > 1), in bands of a block's rows
    /// (parallel tasks even for one block): their log-totals side by side (`block_lse`), then each
    /// position's loss.
    fn side_by_side_forward(&self, x: &[T]) -> PerPosition {
        let (n, inner, block) = (self.rows.positions(), self.rows.inner, self.rows.block());
        let mut pairs = vec![(0.0, 0.0); n];
        let fill = |o: usize, start: usize, out: &mut [(f64, f64)]| {
            let xb = &x[o * block..(o + 1) * block];
            let (shift, lt) = block_lse(xb, inner, start..start + out.len());
            for (k, slot) in out.iter_mut().enumerate() {
                let i = start + k;
                if let Ok(Some(t)) = self.class(o * inner + i) {
                    *slot = self.loss_of_row(t, self.log_probs_given(&xb[i..], shift[k], lt[k]));
                }
            }
        };
        if parallel(x.len()) {
            super::threads::install(|| {
                pairs.par_chunks_mut(inner).enumerate().for_each(|(o, rows)| {
                    rows.par_chunks_mut(SIDE_BY_SIDE_BAND)
                        .enumerate()
                        .for_each(|(b, band)| fill(o, b * SIDE_BY_SIDE_BAND, band))
                })
            });
        } else {
            pairs.chunks_mut(inner).enumerate().for_each(|(o, rows)| fill(o, 0, rows));
        }
        let (loss, weight) = pairs.into_iter().unzip();
        PerPosition { loss, weight }
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
        let body = |o: usize, xb: &[T], gb: &mut [T]| class_loss_backward_block(self, o, xb, gb, scale, total_w);
        for_blocks(x, &mut gx, self.rows, body);
        Ok(gx)
    }

    /// `backward`'s work on the block `o` of the input.
    #[inline(always)]
    fn backward_block(&self, o: usize, xb: &[T], gb: &mut [T], scale: &(dyn Fn(usize) -> f64 + Sync), total_w: f64) {
        if self.logits && self.rows.inner > 1 {
            return self.side_by_side_backward(o, xb, gb, scale, total_w);
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

    /// `backward_block` of logits whose class dim is strided (`inner` > 1): the rows side by side,
    /// class by class, with each element's value computed as in `contiguous_backward`'s terms:
    /// `k (hot (p - onehot) + ε/C (W p - w_c))`.
    #[inline(always)]
    fn side_by_side_backward(
        &self,
        o: usize,
        xb: &[T],
        gb: &mut [T],
        scale: &(dyn Fn(usize) -> f64 + Sync),
        total_w: f64,
    ) {
        let (classes, inner, eps) = (self.rows.classes, self.rows.inner, self.label_smoothing);
        let (shifts, log_totals) = side_by_side_lse(xb, inner, 0..inner);
        // Each position's target (usize::MAX where ignored: its gradient stays 0), factor and the
        // target's share of it.
        let targets: Vec<usize> =
            (0..inner).map(|i| self.class(o * inner + i).ok().flatten().unwrap_or(usize::MAX)).collect();
        let factors: Vec<f64> =
            (0..inner).map(|i| if targets[i] == usize::MAX { 0.0 } else { scale(o * inner + i) }).collect();
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
    /// `ClassLoss::backward_block` compiled for the CPU's widest vectors (the exps of a strided
    /// class dim; see `softmax_block_widest`).
    fn class_loss_backward_block[T: FastExp](
        loss: &ClassLoss<'_, T>,
        o: usize,
        xb: &[T],
        gb: &mut [T],
        scale: &(dyn Fn(usize) -> f64 + Sync),
        total_w: f64,
    ) => loss.backward_block(o, xb, gb, scale, total_w);
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
        let stride = self.rows.inner;
        let eps = self.label_smoothing;
        let mut gw = vec![0.0; classes];
        let mut scratch = Vec::new();
        for p in 0..self.rows.positions() {
            let Ok(Some(t)) = self.class(p) else { continue };
            let (o, i) = (p / stride, p % stride);
            let lp = self.log_probs(&x[o * self.rows.block() + i..], &mut scratch);
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
    use super::*;

    #[test]
    fn log_softmax_of_a_row_sums_to_one_in_probability() {
        let rows = Rows { outer: 1, classes: 3, inner: 1 };
        let y = softmax(&[1.0f64, 2.0, 3.0], rows, true);
        let total: f64 = y.iter().map(|v| v.exp()).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

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

    /// -log p of the max class when it dominates, 3 against -6 and -6: log(1 + 2e^-9), which a
    /// float32 sum 1 + 2.5e-4 rounded before its log gets wrong by up to 5e-4 of itself.
    #[test]
    fn the_small_log_of_a_row_its_max_dominates_keeps_float32_precision() {
        let exact = (2.0 * (-9.0f64).exp()).ln_1p();
        let nll = |(shift, lt): (f32, f32)| -((3.0 - shift as f64) - lt as f64);
        let mut scratch = Vec::new();
        let contiguous = nll(contiguous_lse(&[-6.0f32, 3.0, -6.0], &mut scratch));
        // The same row strided: classes 2 apart, interleaved with another position's.
        let strided = nll(row_lse(&[-6.0f32, 9.0, -6.0, 9.0, 3.0, 9.0], 3, 2));
        for got in [contiguous, strided] {
            assert!((got - exact).abs() < 1e-6 * exact, "{got} against {exact}");
        }
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

    /// Two elements at the max count as 2 + the others: ln(2 + e^-9), in both layouts.
    #[test]
    fn a_tie_at_the_max_counts_both_ones() {
        let exact = (2.0f64 + (-9.0f64).exp()).ln();
        let mut scratch = Vec::new();
        let (shift, contiguous) = contiguous_lse(&[3.0f32, -6.0, 3.0], &mut scratch);
        let (_, strided) = row_lse(&[3.0f32, 0.0, -6.0, 0.0, 3.0, 0.0], 3, 2);
        assert_eq!(shift, 3.0);
        for got in [contiguous as f64, strided as f64] {
            assert!((got - exact).abs() < 1e-6 * exact, "{got} against {exact}");
        }
    }

    /// A `(classes, inner)` block of 4 classes and 7 rows side by side: ties at the max, a NaN, an
    /// all -∞ row, a +∞, and ordinary values.
    fn strided_block() -> Vec<f32> {
        let columns: [[f32; 4]; 7] = [
            [3.0, -6.0, 3.0, 1.0],
            [0.5, f32::NAN, 2.0, -1.0],
            [f32::NEG_INFINITY; 4],
            [1.0, f32::INFINITY, 0.0, -2.0],
            [-0.25, 7.5, -3.0, 7.25],
            [1e-3, -1e-3, 40.0, -40.0],
            [-88.0, -87.5, -89.0, -86.0],
        ];
        (0..4).flat_map(|c| columns.iter().map(move |col| col[c])).collect()
    }

    #[test]
    fn rows_side_by_side_give_the_bits_of_each_strided_row() {
        let block = strided_block();
        for cols in [0..7, 2..5] {
            let (shifts, logs) = side_by_side_lse(&block, 7, cols.clone());
            for (k, i) in cols.enumerate() {
                let (shift, log) = row_lse(&block[i..], 4, 7);
                assert_eq!((shifts[k].to_bits(), logs[k].to_bits()), (shift.to_bits(), log.to_bits()), "row {i}");
            }
        }
    }

    /// The strided cross-entropy gradient of each position as it was computed before the rows went
    /// side by side: `row_lse`, then the classes of that one position.
    fn gradient_position_by_position(loss: &ClassLoss<'_, f32>, x: &[f32], k: f64) -> Vec<f32> {
        let (classes, inner, eps) = (loss.rows.classes, loss.rows.inner, loss.label_smoothing);
        let total_w: f64 = (0..classes).map(|c| loss.w(c)).sum();
        let mut g = vec![0.0f32; x.len()];
        for p in 0..loss.rows.positions() {
            let Ok(Some(t)) = loss.class(p) else { continue };
            let (o, i) = (p / inner, p % inner);
            let (xb, gb) = (&x[o * classes * inner..], &mut g[o * classes * inner..]);
            let hot = (1.0 - eps) * loss.w(t);
            let (shift, lt) = row_lse(&xb[i..], classes, inner);
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
    fn the_strided_cross_entropy_gradient_keeps_the_bits_of_each_position() {
        let block = strided_block();
        let x: Vec<f32> =
            block.iter().chain(block.iter().map(|v| v * 0.5 - 1.0).collect::<Vec<_>>().iter()).copied().collect();
        let target = [0i64, 2, 1, -100, 3, 1, 0, 3, 3, -100, 0, 2, 1, 1];
        let weight = [0.5f32, 2.0, 1.0, 1.5];
        for (smoothing, weight) in [(0.0, None), (0.15, Some(&weight[..]))] {
            let loss = ClassLoss {
                op: "cross_entropy",
                logits: true,
                rows: Rows { outer: 2, classes: 4, inner: 7 },
                target: &target,
                weight,
                ignore_index: -100,
                label_smoothing: smoothing,
            };
            let got = loss.backward(&x, &|_| 0.25).unwrap();
            let want = gradient_position_by_position(&loss, &x, 0.25);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "smoothing {smoothing}");
        }
    }
}
