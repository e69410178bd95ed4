//! 2-D pooling over planes (N·C planes of H×W, row-major): max, average and adaptive
//! average, with their gradients. Planes run side by side on the spin pool.

use crate::dtype::Float;
use parking_lot::Mutex;

/// The sizes of one pooling: `pad` is the padding before (top, left) and `pad_end` after
/// (bottom, right); a window never lies wholly in the padding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PoolGeom {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub oh: usize,
    pub ow: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub pad_end: [usize; 2],
    pub dilation: [usize; 2],
}

impl PoolGeom {
    pub fn input_len(&self) -> usize {
        self.planes * self.h * self.w
    }
    pub fn output_len(&self) -> usize {
        self.planes * self.oh * self.ow
    }
    /// Whether every window lies wholly inside the input: no padding, no dilation, and
    /// the last window of each axis ends within it.
    fn windows_inside(&self) -> bool {
        let fits = |axis: usize, out: usize, size: usize| {
            out == 0 || (out - 1) * self.stride[axis] + self.kernel[axis] <= size
        };
        self.pad == [0, 0]
            && self.dilation == [1, 1]
            && self.kernel[0] > 0
            && self.kernel[1] > 0
            && fits(0, self.oh, self.h)
            && fits(1, self.ow, self.w)
    }

    /// The input rows (or columns, `axis` 1) that output position `o` reads, in order.
    fn taps(&self, axis: usize, o: usize) -> impl Iterator<Item = usize> + '_ {
        let size = if axis == 0 { self.h } else { self.w };
        let start = o * self.stride[axis];
        (0..self.kernel[axis])
            .map(move |k| (start + k * self.dilation[axis]).wrapping_sub(self.pad[axis]))
            .filter(move |&i| i < size)
    }
}

/// Pooling of fewer elements than this runs on the calling thread.
const THREADING_MIN_ELEMENTS: usize = 1 << 16;

/// Runs `task(plane, out_chunk)` for each plane's chunk of `out`, on the spin pool when large.
/// Each worker takes one contiguous run of planes: claiming planes one at a time (an atomic
/// counter and a lock per plane) made the digits network's pooling (1,024 planes of 8×8)
/// two to six times slower on two threads than on one.
fn for_planes<U: Send>(out: &mut [U], chunk: usize, work: usize, task: &(dyn Fn(usize, &mut [U]) + Sync)) {
    if chunk == 0 {
        return;
    }
    let planes = out.len() / chunk;
    let workers = if work < THREADING_MIN_ELEMENTS { 1 } else { super::threads::num_threads().clamp(1, planes.max(1)) };
    if workers == 1 {
        out.chunks_mut(chunk).enumerate().for_each(|(i, c)| task(i, c));
        return;
    }
    let per_worker = planes.div_ceil(workers);
    let runs: Vec<Mutex<&mut [U]>> = out.chunks_mut(per_worker * chunk).map(Mutex::new).collect();
    super::spin_pool::run(runs.len(), &|part| {
        // Each run belongs to one part only, so this lock never waits.
        let mut run = runs[part].lock();
        run.chunks_mut(chunk).enumerate().for_each(|(i, c)| task(part * per_worker + i, c));
    });
}

/// The flat index (over H·W of its plane) of each window's maximum; NaN wins, the first maximum
/// wins ties, as torch.
pub fn max_indices<T: Float>(g: &PoolGeom, x: &[T], out: &mut [i64]) {
    let plane_in = g.h * g.w;
    let inside = g.windows_inside();
    for_planes(out, g.oh * g.ow, g.input_len(), &|plane, out| {
        let xs = &x[plane * plane_in..(plane + 1) * plane_in];
        if inside {
            return max_indices_inside(g, xs, out);
        }
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let mut best: Option<(usize, T)> = None;
                'window: for iy in g.taps(0, oy) {
                    for ix in g.taps(1, ox) {
                        let at = iy * g.w + ix;
                        let v = xs[at];
                        if v.is_nan() {
                            best = Some((at, v));
                            break 'window;
                        }
                        if best.is_none_or(|(_, b)| v > b) {
                            best = Some((at, v));
                        }
                    }
                }
                out[oy * g.ow + ox] = best.map_or(0, |(at, _)| at as i64);
            }
        }
    });
}

/// `max_indices` of one plane when every window lies wholly inside it (no padding, no
/// dilation, no partial window at the end): no tap is clipped, so the window is read
/// row by row without per-tap checks. The same answers as the general loop: the first
/// NaN wins, else the first of equal maxima.
fn max_indices_inside<T: Float>(g: &PoolGeom, xs: &[T], out: &mut [i64]) {
    let ([kh, kw], [sh, sw]) = (g.kernel, g.stride);
    for oy in 0..g.oh {
        let out_row = &mut out[oy * g.ow..(oy + 1) * g.ow];
        for (ox, o) in out_row.iter_mut().enumerate() {
            let first = oy * sh * g.w + ox * sw;
            let (mut best_at, mut best) = (first, xs[first]);
            if !best.is_nan() {
                'window: for row in (first..).step_by(g.w).take(kh) {
                    for (at, &v) in xs[row..row + kw].iter().enumerate().map(|(k, v)| (row + k, v)) {
                        if v.is_nan() {
                            best_at = at;
                            break 'window;
                        }
                        if v > best {
                            (best_at, best) = (at, v);
                        }
                    }
                }
            }
            *o = best_at as i64;
        }
    }
}

/// Each plane's values at the flat `indices`.
pub fn take_indices<T: Float>(g: &PoolGeom, x: &[T], indices: &[i64], out: &mut [T]) {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    for_planes(out, plane_out, g.output_len(), &|plane, out| {
        let xs = &x[plane * plane_in..(plane + 1) * plane_in];
        let idx = &indices[plane * plane_out..(plane + 1) * plane_out];
        out.iter_mut().zip(idx).for_each(|(o, &i)| *o = xs[i as usize]);
    });
}

/// The gradient of max pooling: each output's gradient added at its maximum's index.
pub fn max_grad<T: Float>(g: &PoolGeom, gy: &[T], indices: &[i64], gx: &mut [T]) {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    for_planes(gx, plane_in, g.input_len(), &|plane, gx| {
        gx.fill(T::ZERO);
        let idx = &indices[plane * plane_out..(plane + 1) * plane_out];
        let gs = &gy[plane * plane_out..(plane + 1) * plane_out];
        idx.iter().zip(gs).for_each(|(&i, &v)| gx[i as usize] += v);
    });
}

/// What an average divides by.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Divisor {
    /// The window's size clipped to the padded input (torch's `count_include_pad=True`).
    WithPadding,
    /// The number of input elements in the window (TF, torch's `count_include_pad=False`).
    InputOnly,
    /// A fixed divisor (torch's `divisor_override`).
    Fixed(f64),
}

fn divisor(g: &PoolGeom, how: Divisor, oy: usize, ox: usize) -> f64 {
    match how {
        Divisor::Fixed(d) => d,
        Divisor::InputOnly => (g.taps(0, oy).count() * g.taps(1, ox).count()) as f64,
        Divisor::WithPadding => {
            let span = |axis: usize, o: usize, size: usize| {
                let start = o * g.stride[axis];
                let end = (start + g.kernel[axis]).min(size + g.pad[axis] + g.pad_end[axis]);
                end.saturating_sub(start)
            };
            (span(0, oy, g.h) * span(1, ox, g.w)) as f64
        }
    }
}

/// Average pooling (dilation 1).
pub fn avg<T: Float>(g: &PoolGeom, how: Divisor, x: &[T], out: &mut [T]) {
    let plane_in = g.h * g.w;
    for_planes(out, g.oh * g.ow, g.input_len(), &|plane, out| {
        let xs = &x[plane * plane_in..(plane + 1) * plane_in];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let mut sum = T::ZERO;
                for iy in g.taps(0, oy) {
                    for ix in g.taps(1, ox) {
                        sum += xs[iy * g.w + ix];
                    }
                }
                out[oy * g.ow + ox] = sum / T::from_f64(divisor(g, how, oy, ox));
            }
        }
    });
}

/// The gradient of average pooling: each output's gradient spread over its window.
pub fn avg_grad<T: Float>(g: &PoolGeom, how: Divisor, gy: &[T], gx: &mut [T]) {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    for_planes(gx, plane_in, g.input_len(), &|plane, gx| {
        gx.fill(T::ZERO);
        let gs = &gy[plane * plane_out..(plane + 1) * plane_out];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let share = gs[oy * g.ow + ox] / T::from_f64(divisor(g, how, oy, ox));
                for iy in g.taps(0, oy) {
                    for ix in g.taps(1, ox) {
                        gx[iy * g.w + ix] += share;
                    }
                }
            }
        }
    });
}

/// The input rows `start..end` that adaptive output row `o` of `out` averages over `size` rows.
fn adaptive_span(o: usize, out: usize, size: usize) -> (usize, usize) {
    (o * size / out, ((o + 1) * size).div_ceil(out))
}

/// Adaptive average pooling to `oh`×`ow` (the geometry's kernel, stride and padding are unused).
pub fn adaptive_avg<T: Float>(g: &PoolGeom, x: &[T], out: &mut [T]) {
    let plane_in = g.h * g.w;
    for_planes(out, g.oh * g.ow, g.input_len(), &|plane, out| {
        let xs = &x[plane * plane_in..(plane + 1) * plane_in];
        for oy in 0..g.oh {
            let (y0, y1) = adaptive_span(oy, g.oh, g.h);
            for ox in 0..g.ow {
                let (x0, x1) = adaptive_span(ox, g.ow, g.w);
                let mut sum = T::ZERO;
                for iy in y0..y1 {
                    xs[iy * g.w + x0..iy * g.w + x1].iter().for_each(|&v| sum += v);
                }
                out[oy * g.ow + ox] = sum / T::from_f64(((y1 - y0) * (x1 - x0)) as f64);
            }
        }
    });
}

/// The gradient of adaptive average pooling.
pub fn adaptive_avg_grad<T: Float>(g: &PoolGeom, gy: &[T], gx: &mut [T]) {
    let (plane_in, plane_out) = (g.h * g.w, g.oh * g.ow);
    for_planes(gx, plane_in, g.input_len(), &|plane, gx| {
        gx.fill(T::ZERO);
        let gs = &gy[plane * plane_out..(plane + 1) * plane_out];
        for oy in 0..g.oh {
            let (y0, y1) = adaptive_span(oy, g.oh, g.h);
            for ox in 0..g.ow {
                let (x0, x1) = adaptive_span(ox, g.ow, g.w);
                let share = gs[oy * g.ow + ox] / T::from_f64(((y1 - y0) * (x1 - x0)) as f64);
                for iy in y0..y1 {
                    gx[iy * g.w + x0..iy * g.w + x1].iter_mut().for_each(|v| *v += share);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(h: usize, w: usize, kernel: usize, stride: usize, pad: usize) -> PoolGeom {
        let out = |size: usize| (size + 2 * pad - kernel) / stride + 1;
        PoolGeom {
            planes: 2,
            h,
            w,
            oh: out(h),
            ow: out(w),
            kernel: [kernel; 2],
            stride: [stride; 2],
            pad: [pad; 2],
            pad_end: [pad; 2],
            dilation: [1, 1],
        }
    }

    /// The general loop, by way of a padding that no window reaches into.
    fn general_indices(g: &PoolGeom, x: &[f64]) -> Vec<i64> {
        let mut out = vec![0; g.output_len()];
        let plane_in = g.h * g.w;
        for (plane, chunk) in out.chunks_mut(g.oh * g.ow).enumerate() {
            let xs = &x[plane * plane_in..(plane + 1) * plane_in];
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let mut best: Option<(usize, f64)> = None;
                    'window: for iy in g.taps(0, oy) {
                        for ix in g.taps(1, ox) {
                            let (at, v) = (iy * g.w + ix, xs[iy * g.w + ix]);
                            if v.is_nan() {
                                best = Some((at, v));
                                break 'window;
                            }
                            if best.is_none_or(|(_, b)| v > b) {
                                best = Some((at, v));
                            }
                        }
                    }
                    chunk[oy * g.ow + ox] = best.map_or(0, |(at, _)| at as i64);
                }
            }
        }
        out
    }

    #[test]
    fn windows_inside_the_plane_give_the_general_loops_indices_with_ties_and_nans() {
        for (h, w, kernel, stride) in [(6, 6, 2, 2), (7, 5, 3, 2), (5, 5, 2, 1), (4, 6, 3, 3)] {
            let g = geom(h, w, kernel, stride, 0);
            assert!(g.windows_inside());
            let mut x: Vec<f64> = (0..g.input_len()).map(|i| ((i * 7) % 5) as f64).collect();
            x[3] = f64::NAN;
            x[g.w + 3] = f64::NAN; // below the first NaN: often in the same window, which the first wins
            x[g.h * g.w + 8] = f64::NAN;
            let mut fast = vec![0; g.output_len()];
            max_indices(&g, &x, &mut fast);
            assert_eq!(fast, general_indices(&g, &x), "{h}x{w} kernel {kernel} stride {stride}");
        }
        assert!(!geom(6, 6, 3, 2, 1).windows_inside(), "a padded window is not inside");
    }
}
