//! Normalisation kernels: layer, group and batch norm over a contiguous input viewed as
//! `[n, c, s]` (samples, channels, positions), with a per-channel affine `w`, `b`.
//!
//! - `Stats::Groups(g)`: each sample's channels in `g` groups, each normalised by its own
//!   mean and variance (group norm; layer norm is one group with `s = 1`, its normalised
//!   positions as channels);
//! - `Stats::Channels`: each channel normalised over all samples and positions (batch norm
//!   in training);
//! - `Stats::Given`: the mean and variance of each channel given (batch norm in evaluation).
//!
//! Means and variances are two-pass (mean, then the mean squared deviation) with float64
//! sums. The backward passes are the closed forms:
//! `dx = rstd·(dy·w - mean(dy·w) - x̂·mean(dy·w·x̂))` over each normalised set,
//! `dw[c] = Σ dy·x̂` and `db[c] = Σ dy`.

use super::activation::ActFloat;
use rayon::prelude::*;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NormShape {
    pub n: usize,
    pub c: usize,
    pub s: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stats {
    Groups(usize),
    Channels,
    /// Each channel's mean and variance.
    Given(Vec<f64>, Vec<f64>),
}

/// Mean and `1/sqrt(var + eps)` of one normalised set.
#[derive(Copy, Clone, Debug, Default)]
pub struct Moments {
    pub mean: f64,
    pub rstd: f64,
}

/// Independent running sums in `lane_sums`: with one f64 accumulator every add waits for
/// the one before.
const SUM_LANES: usize = 16;

/// The sums of `K` quantities over `terms`: the i-th term goes to lane i % SUM_LANES, and the
/// lanes are added in order at the end, so the order depends only on the number of terms.
#[inline(always)]
fn lane_sums<const K: usize>(terms: impl Iterator<Item = [f64; K]>) -> [f64; K] {
    let mut lanes = [[0.0f64; K]; SUM_LANES];
    for (i, term) in terms.enumerate() {
        let lane = &mut lanes[i % SUM_LANES];
        for (sum, t) in lane.iter_mut().zip(term) {
            *sum += t;
        }
    }
    let mut total = [0.0f64; K];
    for lane in &lanes {
        for (sum, &t) in total.iter_mut().zip(lane) {
            *sum += t;
        }
    }
    total
}

widest_vectors! {
    /// Σ x over a slice, in SUM_LANES lanes added in order at the end.
    fn slice_sum[T: ActFloat](xs: &[T]) -> f64 => slice_lane_sum(xs, |v| v);
}

widest_vectors! {
    /// Σ (x - mean)² over a slice, in SUM_LANES lanes added in order at the end.
    fn slice_squared_deviations[T: ActFloat](xs: &[T], mean: f64) -> f64 =>
        slice_lane_sum(xs, |v| (v - mean) * (v - mean));
}

/// Σ f(x) over a slice (x as f64) in SUM_LANES lanes: a loop that vectorises.
#[inline(always)]
fn slice_lane_sum<T: ActFloat>(xs: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; SUM_LANES];
    let blocks = xs.chunks_exact(SUM_LANES);
    let tail = blocks.remainder();
    for block in blocks {
        for (lane, &v) in lanes.iter_mut().zip(block) {
            *lane += f(v.to_f64());
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(tail) {
        *lane += f(v.to_f64());
    }
    lanes.iter().fold(0.0, |total, &lane| total + lane)
}

fn moments_of<'a, T: ActFloat>(parts: impl Iterator<Item = &'a [T]> + Clone, eps: f64) -> Moments {
    let count: usize = parts.clone().map(|p| p.len()).sum();
    if count == 0 {
        return Moments { mean: f64::NAN, rstd: f64::NAN };
    }
    let sum = parts.clone().fold(0.0, |total, p| total + slice_sum(p));
    let mean = sum / count as f64;
    let squares = parts.fold(0.0, |total, p| total + slice_squared_deviations(p, mean));
    Moments { mean, rstd: 1.0 / (squares / count as f64 + eps).sqrt() }
}

/// The runs of `s` positions of channel `c`, one per sample.
fn channel_runs<T>(x: &[T], shape: NormShape, c: usize) -> impl Iterator<Item = &[T]> + Clone {
    (0..shape.n).map(move |n| &x[(n * shape.c + c) * shape.s..(n * shape.c + c + 1) * shape.s])
}

/// The moments of each normalised set: per (sample, group), or per channel.
pub fn moments<T: ActFloat>(x: &[T], shape: NormShape, stats: &Stats, eps: f64) -> Vec<Moments> {
    match stats {
        Stats::Groups(g) => {
            let len = shape.c / g * shape.s;
            if len == 0 {
                return vec![Moments::default(); shape.n * g];
            }
            super::threads::install(|| x.par_chunks(len).map(|set| moments_of(std::iter::once(set), eps)).collect())
        }
        Stats::Channels => super::threads::install(|| {
            (0..shape.c).into_par_iter().map(|c| moments_of(channel_runs(x, shape, c), eps)).collect()
        }),
        Stats::Given(mean, var) => {
            mean.iter().zip(var).map(|(&mean, &var)| Moments { mean, rstd: 1.0 / (var + eps).sqrt() }).collect()
        }
    }
}

/// The moments that normalise row `(n, c)` (a run of `s` positions).
fn row_moments(m: &[Moments], shape: NormShape, stats: &Stats, row: usize) -> Moments {
    let (n, c) = (row / shape.c, row % shape.c);
    match stats {
        Stats::Groups(g) => m[n * g + c / (shape.c / g)],
        _ => m[c],
    }
}

/// The normalised, scaled and shifted input.
pub fn forward<T: ActFloat>(x: &[T], shape: NormShape, stats: &Stats, w: &[T], b: &[T], eps: f64) -> Vec<T> {
    let m = moments(x, shape, stats, eps);
    let mut out = crate::storage::collect_vec(x.len(), std::iter::repeat(T::of(0.0)));
    if shape.s == 0 {
        return out;
    }
    if shape.s == 1 && matches!(stats, Stats::Groups(1)) {
        // layer norm: one set per sample, one weight per element
        super::threads::install(|| {
            out.par_chunks_mut(shape.c.max(1)).zip(x.par_chunks(shape.c.max(1))).zip(&m).for_each(|((o, xs), mo)| {
                for (((o, &v), &w), &b) in o.iter_mut().zip(xs).zip(w).zip(b) {
                    *o = T::of((v.to_f64() - mo.mean) * mo.rstd) * w + b;
                }
            })
        });
        return out;
    }
    super::threads::install(|| {
        out.par_chunks_mut(shape.s).zip(x.par_chunks(shape.s)).enumerate().for_each(|(row, (o, xs))| {
            let mo = row_moments(&m, shape, stats, row);
            let c = row % shape.c;
            // (x - mean)·rstd first, not x·scale + shift: that would cancel when the mean is large,
            // and make 0·inf of a normalised 0 times an infinite weight.
            let (w, b) = (w[c], b[c]);
            for (o, &v) in o.iter_mut().zip(xs) {
                *o = T::of((v.to_f64() - mo.mean) * mo.rstd) * w + b;
            }
        })
    });
    out
}

/// Per channel: `Σ dy·x̂` and `Σ dy` (the weight's and the bias's gradients).
pub fn affine_grads<T: ActFloat>(
    g: &[T],
    x: &[T],
    shape: NormShape,
    stats: &Stats,
    m: &[Moments],
) -> (Vec<f64>, Vec<f64>) {
    if shape.s == 1 && matches!(stats, Stats::Groups(1)) {
        let (mut dw, mut db) = (vec![0.0; shape.c], vec![0.0; shape.c]);
        for (n, mo) in m.iter().enumerate().take(shape.n) {
            let rows = n * shape.c..(n + 1) * shape.c;
            for (((dw, db), &gv), &xv) in dw.iter_mut().zip(db.iter_mut()).zip(&g[rows.clone()]).zip(&x[rows]) {
                *dw += gv.to_f64() * (xv.to_f64() - mo.mean) * mo.rstd;
                *db += gv.to_f64();
            }
        }
        return (dw, db);
    }
    super::threads::install(|| {
        (0..shape.c)
            .into_par_iter()
            .map(|c| {
                let [dw, db] = lane_sums((0..shape.n).flat_map(|n| {
                    let row = n * shape.c + c;
                    let mo = row_moments(m, shape, stats, row);
                    let span = row * shape.s..(row + 1) * shape.s;
                    g[span.clone()]
                        .iter()
                        .zip(&x[span])
                        .map(move |(&gv, &xv)| [gv.to_f64() * (xv.to_f64() - mo.mean) * mo.rstd, gv.to_f64()])
                }));
                (dw, db)
            })
            .unzip()
    })
}

widest_vectors! {
    /// `Σ dy·w` and `Σ dy·w·x̂` over one set whose weights are a slice, in SUM_LANES lanes
    /// added in order at the end (the terms and order of `weighted_grad_sums`).
    fn grad_sums[T: ActFloat](gs: &[T], xs: &[T], ws: &[T], mean: f64, rstd: f64) -> [f64; 2] =>
        grad_lane_sums(gs, xs, ws, mean, rstd);
}

#[inline(always)]
fn grad_lane_sums<T: ActFloat>(gs: &[T], xs: &[T], ws: &[T], mean: f64, rstd: f64) -> [f64; 2] {
    let (mut s1, mut s2) = ([0.0f64; SUM_LANES], [0.0f64; SUM_LANES]);
    let mut add = |lane: usize, g: T, x: T, w: T| {
        let gw = g.to_f64() * w.to_f64();
        s1[lane] += gw;
        s2[lane] += gw * (x.to_f64() - mean) * rstd;
    };
    let (g_blocks, x_blocks, w_blocks) =
        (gs.chunks_exact(SUM_LANES), xs.chunks_exact(SUM_LANES), ws.chunks_exact(SUM_LANES));
    let tails = (g_blocks.remainder(), x_blocks.remainder(), w_blocks.remainder());
    for ((g, x), w) in g_blocks.zip(x_blocks).zip(w_blocks) {
        for lane in 0..SUM_LANES {
            add(lane, g[lane], x[lane], w[lane]);
        }
    }
    for (lane, ((&g, &x), &w)) in tails.0.iter().zip(tails.1).zip(tails.2).enumerate() {
        add(lane, g, x, w);
    }
    [s1.iter().fold(0.0, |t, &v| t + v), s2.iter().fold(0.0, |t, &v| t + v)]
}

/// `Σ dy·w` and `Σ dy·w·x̂` over one set, its weights given one by one.
fn weighted_grad_sums<T: ActFloat>(gs: &[T], xs: &[T], mo: Moments, weights: impl Iterator<Item = f64>) -> [f64; 2] {
    lane_sums(gs.iter().zip(xs).zip(weights).map(|((&gv, &xv), w)| {
        let gw = gv.to_f64() * w;
        [gw, gw * (xv.to_f64() - mo.mean) * mo.rstd]
    }))
}

/// `dx` of one normalised set from its output gradient, input, moments, weights, and the
/// sums `Σ dy·w` and `Σ dy·w·x̂` over the set (`grad_sums` or `weighted_grad_sums`).
#[inline(always)]
fn set_input_grad<T: ActFloat>(
    o: &mut [T],
    gs: &[T],
    xs: &[T],
    mo: Moments,
    weights: impl Iterator<Item = f64>,
    [s1, s2]: [f64; 2],
) {
    let len = o.len() as f64;
    let (s1, s2) = (s1 / len, s2 / len);
    for (((o, &gv), &xv), w) in o.iter_mut().zip(gs).zip(xs).zip(weights) {
        let xhat = (xv.to_f64() - mo.mean) * mo.rstd;
        *o = T::of(mo.rstd * (gv.to_f64() * w - s1 - xhat * s2));
    }
}

/// The input's gradient.
pub fn input_grad<T: ActFloat>(g: &[T], x: &[T], shape: NormShape, stats: &Stats, w: &[T], eps: f64) -> Vec<T> {
    let m = moments(x, shape, stats, eps);
    let mut out = crate::storage::collect_vec(x.len(), std::iter::repeat(T::of(0.0)));
    let weight = |i: usize| w[(i / shape.s.max(1)) % shape.c.max(1)].to_f64();
    match stats {
        Stats::Groups(groups) => {
            let len = shape.c / groups * shape.s;
            if len == 0 {
                return out;
            }
            super::threads::install(|| {
                out.par_chunks_mut(len).zip(g.par_chunks(len)).zip(x.par_chunks(len)).enumerate().for_each(
                    |(set, ((o, gs), xs))| {
                        if shape.s == 1 {
                            // One position per channel: the set's weights are one slice of `w`
                            // (layer norm's are all of it), with no division per element.
                            let first = (set % groups) * len;
                            let ws = &w[first..first + len];
                            let sums = grad_sums(gs, xs, ws, m[set].mean, m[set].rstd);
                            set_input_grad(o, gs, xs, m[set], ws.iter().map(|v| v.to_f64()), sums);
                        } else {
                            let weights = (set * len..(set + 1) * len).map(weight);
                            let sums = weighted_grad_sums(gs, xs, m[set], weights.clone());
                            set_input_grad(o, gs, xs, m[set], weights, sums);
                        }
                    },
                )
            });
        }
        Stats::Channels => {
            let (dw, db) = affine_grads(g, x, shape, stats, &m);
            let count = (shape.n * shape.s) as f64;
            if shape.s == 0 {
                return out;
            }
            super::threads::install(|| {
                out.par_chunks_mut(shape.s).zip(g.par_chunks(shape.s)).zip(x.par_chunks(shape.s)).enumerate().for_each(
                    |(row, ((o, gs), xs))| {
                        let c = row % shape.c;
                        let mo = m[c];
                        let (mean_g, mean_gx) = (db[c] / count, dw[c] / count);
                        let wr = w[c].to_f64() * mo.rstd;
                        for ((o, &gv), &xv) in o.iter_mut().zip(gs).zip(xs) {
                            let xhat = (xv.to_f64() - mo.mean) * mo.rstd;
                            *o = T::of(wr * (gv.to_f64() - mean_g - xhat * mean_gx));
                        }
                    },
                )
            });
        }
        Stats::Given(..) => {
            if shape.s == 0 {
                return out;
            }
            super::threads::install(|| {
                out.par_chunks_mut(shape.s).zip(g.par_chunks(shape.s)).enumerate().for_each(|(row, (o, gs))| {
                    let c = row % shape.c;
                    let scale = T::of(w[c].to_f64() * m[c].rstd);
                    for (o, &gv) in o.iter_mut().zip(gs) {
                        *o = gv * scale;
                    }
                })
            });
        }
    }
    out
}
