//! Kernels of the loss ops: softmax and log-softmax along one dim, with the row helpers (the
//! shift and log-sum-exp of a row: a long contiguous row alone, strided or short rows side by
//! side) that the class losses of `class` (cross-entropy fused with log-softmax, and nll) share.
//! A tensor is seen as `(outer, classes, inner)`: the class dim in the middle, contiguous.

use crate::dtype::Float;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

mod class;
mod softmax;
pub use class::{total, ClassLoss, Factor, Reduction, Targets};
pub use softmax::{softmax, softmax_backward};

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

    /// Whether a task's blocks are gathered class-major and their rows run side by side as one
    /// `(classes, rows)` block (`Gathered`): short contiguous rows (see `SHORT_ROW`),
    /// and strided blocks narrower than `NARROW_BLOCK` rows when a task holds more than one.
    fn gathered(&self) -> bool {
        match self.inner {
            0 => false,
            1 => (1..=SHORT_ROW).contains(&self.classes),
            inner => inner < NARROW_BLOCK && self.classes > 0 && self.task_blocks() > 1,
        }
    }

    /// The `(classes, inner)` blocks of one task of `for_tasks`: enough for a task to have work.
    fn task_blocks(&self) -> usize {
        (TASK_ELEMENTS / self.block().max(1)).max(1)
    }

    fn task_len(&self) -> usize {
        (self.task_blocks() * self.block()).max(1)
    }
}

/// Contiguous rows this short or shorter run side by side as a strided class dim's: one at a time,
/// each row paid a fixed cost of a few calls (its max, exps and sums over a few elements). The
/// forwards and the cross-entropy gradient transpose a task's rows into a `(classes, rows)` block
/// and back; the softmax gradient needs only each row's sum, in class order. The transposes cost
/// about as much as the rest of the work, so longer rows run one at a time.
const SHORT_ROW: usize = 32;

/// Strided blocks of fewer rows than this are gathered a task's blocks at a time (see
/// `Rows::gathered`): side by side, each block alone paid for its few rows a fixed cost (the
/// shifts', sums' and factors' vectors, a loop's setup).
const NARROW_BLOCK: usize = 64;

/// Elements per task of `for_tasks` (whole blocks; one block when larger).
const TASK_ELEMENTS: usize = 8192;

/// Rows of one block per band of `for_row_bands` along a strided class dim: parallel work even for
/// a batch of one block.
const SIDE_BY_SIDE_BAND: usize = 512;

/// Whether a loss kernel over `numel` elements runs its tasks in parallel.
fn parallel(numel: usize) -> bool {
    numel >= super::PARALLEL_MIN_ELEMENTS / 8 && super::threads::num_threads() > 1
}

/// Runs `f(task_index, input_task, output_task)` over the tasks: `rows.task_blocks()` whole
/// `(classes, inner)` blocks each (fewer in the last).
fn for_tasks<T: Float>(x: &[T], out: &mut [T], rows: Rows, f: impl Fn(usize, &[T], &mut [T]) + Sync + Send) {
    let len = rows.task_len();
    if parallel(x.len()) {
        super::threads::install(|| {
            out.par_chunks_mut(len).zip(x.par_chunks(len)).enumerate().for_each(|(o, (y, x))| f(o, x, y))
        });
    } else {
        out.chunks_mut(len).zip(x.chunks(len)).enumerate().for_each(|(o, (y, x))| f(o, x, y));
    }
}

/// A task's whole blocks gathered class-major as one `(classes, width)` block (see
/// `Rows::gathered`), with room for the kernel's output in the same layout. Callers run the
/// kernel on `x` and `y` themselves: a kernel passed in as a closure was compiled apart from the
/// caller's `widest_vectors!` copy, its exps in baseline code (13× slower).
struct Gathered<T> {
    x: Vec<T>,
    y: Vec<T>,
    width: usize,
}

// Both inlined, so that the copies compile in the caller's `widest_vectors!` copy (they take no
// closure): compiled apart, in baseline code, they made short rows' softmaxes up to 10% slower.
impl<T: Float> Gathered<T> {
    #[inline(always)]
    fn of(x: &[T], rows: Rows) -> Gathered<T> {
        Gathered { x: class_major(x, rows), y: vec![T::ZERO; x.len()], width: class_major_width(x, rows) }
    }

    /// `y` scattered back into `out`, in the layout of the blocks it was gathered from.
    #[inline(always)]
    fn scatter_into(self, rows: Rows, out: &mut [T]) {
        from_class_major_into(&self.y, rows, out);
    }
}

/// The rows of `src`'s whole blocks, the width of their class-major block (`Rows::gathered` has at
/// least one class).
fn class_major_width<T>(src: &[T], rows: Rows) -> usize {
    src.len() / rows.classes.max(1)
}

/// Whole `(classes, inner)` blocks of `src` as one `(classes, blocks · inner)` block: element
/// `(b, c, i)` at `c · width + b · inner + i`. Short rows (`inner` = 1) are a transpose.
#[inline(always)]
fn class_major<T: Float>(src: &[T], rows: Rows) -> Vec<T> {
    let mut dst = vec![T::ZERO; src.len()];
    let (classes, inner, width) = (rows.classes, rows.inner, class_major_width(src, rows));
    if inner == 1 {
        transpose_into(src, width, classes, &mut dst);
        return dst;
    }
    // One (class, row of a block) at a time across the blocks: each run of `inner` elements copied
    // alone was a call of `memcpy` (14% of a profile of the softmaxes and cross-entropy of
    // (100000, 3, 2)).
    for (c, dst_class) in dst.chunks_exact_mut(width).enumerate() {
        for i in 0..inner {
            let from = src[c * inner + i..].iter().step_by(rows.block());
            dst_class[i..].iter_mut().step_by(inner).zip(from).for_each(|(d, &s)| *d = s);
        }
    }
    dst
}

/// `class_major` undone: the `(classes, width)` block `src` into whole blocks of `dst`.
#[inline(always)]
fn from_class_major_into<T: Float>(src: &[T], rows: Rows, dst: &mut [T]) {
    let (classes, inner, width) = (rows.classes, rows.inner, class_major_width(src, rows));
    if inner == 1 {
        return transpose_into(src, classes, width, dst);
    }
    for (c, src_class) in src.chunks_exact(width).enumerate() {
        for i in 0..inner {
            let to = dst[c * inner + i..].iter_mut().step_by(rows.block());
            to.zip(src_class[i..].iter().step_by(inner)).for_each(|(d, &s)| *d = s);
        }
    }
}

/// `src`, `rows` × `cols` in row-major order, transposed into `dst` (`cols` × `rows`), in tiles of
/// `TILE` rows: each column of a tile is one contiguous run of `dst`. (The tiles did not measurably
/// speed up a short-row softmax; `perf` had put the transposes at about 30% of its forward and
/// backward before them. A faster transpose is what would move `SHORT_ROW`.)
#[inline(always)]
fn transpose_into<T: Float>(src: &[T], rows: usize, cols: usize, dst: &mut [T]) {
    const TILE: usize = 16;
    for (t, tile) in src.chunks(TILE * cols).enumerate() {
        let first = t * TILE;
        for (c, column) in dst.chunks_exact_mut(rows).enumerate() {
            let run = &mut column[first..first + tile.len() / cols];
            for (o, row) in run.iter_mut().zip(tile.chunks_exact(cols)) {
                *o = row[c];
            }
        }
    }
}

/// The sums of the exps of the rows `cols` of one `(classes, inner)` block, side by side: the
/// classes walked in order for every row at once.
struct SideBySideSums<T> {
    /// Each row's max, or 0 when it is not finite.
    shift: Vec<T>,
    /// How many of each row's exps `exp(x - shift)` are exactly 1.
    ones: Vec<T>,
    /// The sum of each row's other exps.
    rest: Vec<T>,
}

/// The shifts and log-totals (log(sum(exp(x - shift)))) of the rows `cols` of one `(classes,
/// inner)` block side by side, the ones counted apart (`log_of_total`). Callers compute
/// `(x - shift) - log_total`, as torch does: adding the two first would lose the small log to
/// rounding next to a large max.
#[inline(always)]
fn side_by_side_lse<T: FastExp>(xb: &[T], inner: usize, cols: Range<usize>) -> (Vec<T>, Vec<T>) {
    let SideBySideSums { shift, ones, rest } = side_by_side_sums(xb, inner, cols);
    // A plain loop, not `collect`: `Vec`'s `from_iter` is not inlined here, and the logarithms
    // would run in its baseline code, their fused multiply-adds as library calls.
    let mut log_totals = vec![T::ZERO; ones.len()];
    for ((log_total, &one), &other) in log_totals.iter_mut().zip(&ones).zip(&rest) {
        *log_total = log_of_total(one, other);
    }
    (shift, log_totals)
}

/// `SideBySideSums` of the rows `cols` of one `(classes, inner)` block.
#[inline(always)]
fn side_by_side_sums<T: FastExp>(xb: &[T], inner: usize, cols: Range<usize>) -> SideBySideSums<T> {
    let classes = || xb.chunks_exact(inner).map(|xc| &xc[cols.clone()]);
    let mut shift = vec![T::from_f64(f64::NEG_INFINITY); cols.len()];
    for xc in classes() {
        for (p, &v) in shift.iter_mut().zip(xc) {
            if v > *p || v.is_nan() {
                *p = v;
            }
        }
    }
    // An infinite max (all -inf, or a +inf) shifts by 0, as logsumexp does.
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
    SideBySideSums { shift, ones, rest }
}

/// Runs `f(first, shift, log_total, out)` over bands of the rows of `x` (row `o * inner + i`): a
/// wide strided block's rows `SIDE_BY_SIDE_BAND` at a time (parallel work even for one block),
/// the rows of a task's blocks otherwise; in parallel when large. `shift` and `log_total` are the
/// band's rows' (`band_lse`: each row's as log-softmax of its layout computes them), and `out` the
/// band's slice of `out`, one element per row.
fn for_row_bands<T: FastExp, O: Send>(
    x: &[T],
    rows: Rows,
    out: &mut [O],
    f: impl Fn(usize, &[T], &[T], &mut [O]) + Sync + Send,
) {
    let (block_rows, band) = match rows.inner > 1 && !rows.gathered() {
        true => (rows.inner, SIDE_BY_SIDE_BAND),
        false => (out.len().max(1), rows.task_blocks() * rows.inner.max(1)),
    };
    let run = |first: usize, out: &mut [O]| {
        let (shift, log_total) = band_lse(x, rows, first, out.len());
        f(first, &shift, &log_total, out)
    };
    if parallel(x.len()) {
        super::threads::install(|| {
            out.par_chunks_mut(block_rows).enumerate().for_each(|(o, block)| {
                block.par_chunks_mut(band).enumerate().for_each(|(b, out)| run(o * block_rows + b * band, out))
            })
        });
    } else {
        for (o, block) in out.chunks_mut(block_rows).enumerate() {
            block.chunks_mut(band).enumerate().for_each(|(b, out)| run(o * block_rows + b * band, out));
        }
    }
}

/// Every row's shift and log-total, as `for_row_bands` hands them out.
fn every_rows_lse<T: FastExp>(x: &[T], rows: Rows) -> Vec<(T, T)> {
    let mut pairs = vec![(T::ZERO, T::ZERO); rows.positions()];
    for_row_bands(x, rows, &mut pairs, |_, shift, log_total, out| {
        out.iter_mut().zip(shift.iter().zip(log_total)).for_each(|(o, (&s, &l))| *o = (s, l))
    });
    pairs
}

widest_vectors! {
    /// The shifts and log-totals of the `len` rows from `first` on (a wide strided block's band lies
    /// in that block; a gathered band is a task's whole blocks), compiled for the CPU's widest
    /// vectors.
    fn band_lse[T: FastExp](x: &[T], rows: Rows, first: usize, len: usize) -> (Vec<T>, Vec<T>)
        => band_lse_of(x, rows, first, len);
}

#[inline(always)]
fn band_lse_of<T: FastExp>(x: &[T], rows: Rows, first: usize, len: usize) -> (Vec<T>, Vec<T>) {
    let (classes, inner) = (rows.classes, rows.inner);
    if rows.gathered() {
        // The band is whole blocks: `first` and `len` are multiples of `inner`.
        let blocks = (first / inner) * rows.block()..((first + len) / inner) * rows.block();
        return side_by_side_lse(&class_major(&x[blocks], rows), len, 0..len);
    }
    if inner > 1 {
        let (o, i) = (first / inner, first % inner);
        return side_by_side_lse(&x[o * rows.block()..(o + 1) * rows.block()], inner, i..i + len);
    }
    let (mut shift, mut log_total) = (vec![T::ZERO; len], vec![T::ZERO; len]);
    let mut scratch = Vec::new();
    for (k, (s, l)) in shift.iter_mut().zip(log_total.iter_mut()).enumerate() {
        let row = first + k;
        (*s, *l) = contiguous_lse(&x[row * classes..(row + 1) * classes], &mut scratch);
    }
    (shift, log_total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_row<T: Copy>((shifts, log_totals): (Vec<T>, Vec<T>)) -> (T, T) {
        (shifts[0], log_totals[0])
    }

    /// The shift and log-total of one row of `classes` elements `stride` apart, one element at a
    /// time: the independent reference of the rows side by side.
    pub(super) fn one_row_lse(x: &[f32], classes: usize, stride: usize) -> (f32, f32) {
        let row: Vec<f32> = (0..classes).map(|c| x[c * stride]).collect();
        let peak = row.iter().fold(f32::NEG_INFINITY, |m, &v| if v > m || v.is_nan() { v } else { m });
        let shift = if peak.is_finite() { peak } else { 0.0 };
        let exps: Vec<f32> = row.iter().map(|&v| (v - shift).fast_exp()).collect();
        let ones = exps.iter().filter(|&&e| e == 1.0).count() as f32;
        let rest = exps.iter().filter(|&&e| e != 1.0).fold(0.0, |total, &e| total + e);
        let log_total = if ones > 0.0 { ((ones - 1.0) + rest).fast_ln_1p() } else { rest.fast_ln() };
        (shift, log_total)
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
        let strided = nll(first_row(side_by_side_lse(&[-6.0f32, 9.0, -6.0, 9.0, 3.0, 9.0], 2, 0..1)));
        for got in [contiguous, strided] {
            assert!((got - exact).abs() < 1e-6 * exact, "{got} against {exact}");
        }
    }

    /// Two elements at the max count as 2 + the others: ln(2 + e^-9), in both layouts.
    #[test]
    fn a_tie_at_the_max_counts_both_ones() {
        let exact = (2.0f64 + (-9.0f64).exp()).ln();
        let mut scratch = Vec::new();
        let (shift, contiguous) = contiguous_lse(&[3.0f32, -6.0, 3.0], &mut scratch);
        let (_, strided) = first_row(side_by_side_lse(&[3.0f32, 0.0, -6.0, 0.0, 3.0, 0.0], 2, 0..1));
        assert_eq!(shift, 3.0);
        for got in [contiguous as f64, strided as f64] {
            assert!((got - exact).abs() < 1e-6 * exact, "{got} against {exact}");
        }
    }

    /// A `(classes, inner)` block of 4 classes and 7 rows side by side: ties at the max, a NaN, an
    /// all -∞ row, a +∞, and ordinary values.
    pub(super) fn strided_block() -> Vec<f32> {
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
                let (shift, log) = one_row_lse(&block[i..], 4, 7);
                assert_eq!((shifts[k].to_bits(), logs[k].to_bits()), (shift.to_bits(), log.to_bits()), "row {i}");
            }
        }
    }

    /// `for_row_bands` gives each layout's rule: the bits of `one_row_lse` for strided and short
    /// rows (a wide block's in bands of `SIDE_BY_SIDE_BAND`, narrow blocks and short rows gathered
    /// a task's blocks at a time), and for long rows `contiguous_lse`'s (the function it calls:
    /// this checks the rows it hands it).
    #[test]
    fn row_bands_give_the_bits_of_each_rows_rule() {
        let value = |k: usize| ((k * 7919 % 1000) as f32 - 500.0) / 37.0;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for rows in [
            Rows { outer: 2, classes: 3, inner: 1100 },
            Rows { outer: 2000, classes: 7, inner: 1 },
            Rows { outer: 3000, classes: 3, inner: 2 },
            Rows { outer: 40, classes: 300, inner: 1 },
        ] {
            let x: Vec<f32> = (0..rows.outer * rows.block()).map(value).collect();
            let (shift, log_total): (Vec<f32>, Vec<f32>) = every_rows_lse(&x, rows).into_iter().unzip();
            let mut scratch = Vec::new();
            let want: Vec<(f32, f32)> = (0..rows.positions())
                .map(|p| {
                    let row = &x[(p / rows.inner) * rows.block() + p % rows.inner..];
                    match rows.inner > 1 || rows.gathered() {
                        true => one_row_lse(row, rows.classes, rows.inner),
                        false => contiguous_lse(&row[..rows.classes], &mut scratch),
                    }
                })
                .collect();
            let (want_shift, want_log): (Vec<f32>, Vec<f32>) = want.into_iter().unzip();
            assert_eq!((bits(&shift), bits(&log_total)), (bits(&want_shift), bits(&want_log)), "{rows:?}");
        }
    }
}
