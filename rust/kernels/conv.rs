//! 2-D convolution over NCHW samples with OIHW weights, by im2col into the matrix
//! kernels of matmul.rs: each sample's patches become a (C/groups·kh·kw)×(oh·ow)
//! matrix, multiplied by the group's weights. Samples run side by side, one per
//! thread, each with its own patch buffer (a sample's product is too small to split).
//!
//! The three products of a convolution's forward and backward passes:
//! - `forward`: y = W·col(x);
//! - `input_grad`: gx = col⁻¹(Wᵀ·gy), the patches' gradients added back where they came from;
//! - `weight_grad`: gW = Σ_samples gy·col(x)ᵀ, accumulated per thread, then summed.

use super::matmul::{matmul_into, matmul_into_as_part_of_batch, MatRef};
use crate::dtype::Float;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The sizes of one convolution, with the padding at the top and left (any extra padding
/// at the bottom and right only decides `oh` and `ow`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ConvGeom {
    pub n: usize,
    pub c_in: usize,
    pub h: usize,
    pub w: usize,
    pub c_out: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

impl ConvGeom {
    fn c_in_group(&self) -> usize {
        self.c_in / self.groups
    }
    fn c_out_group(&self) -> usize {
        self.c_out / self.groups
    }
    /// The rows of a group's patch matrix: one per weight of an output channel.
    fn patch_rows(&self) -> usize {
        self.c_in_group() * self.kh * self.kw
    }
    fn positions(&self) -> usize {
        self.oh * self.ow
    }
    fn macs(&self) -> usize {
        self.n.saturating_mul(self.c_out).saturating_mul(self.positions()).saturating_mul(self.patch_rows())
    }
    pub fn input_len(&self) -> usize {
        self.n * self.c_in * self.h * self.w
    }
    pub fn output_len(&self) -> usize {
        self.n * self.c_out * self.positions()
    }
    pub fn weight_len(&self) -> usize {
        self.c_out * self.patch_rows()
    }
}

/// Convolutions of fewer multiply-adds than this run on the calling thread.
const THREADING_MIN_MACS: usize = 1 << 20;

fn workers(geom: &ConvGeom) -> usize {
    if geom.macs() < THREADING_MIN_MACS {
        1
    } else {
        super::threads::num_threads().clamp(1, geom.n.max(1))
    }
}

fn mat<T>(data: &[T], offset: usize, dims: (usize, usize), strides: (usize, usize)) -> Result<MatRef<'_, T>> {
    MatRef::new(data, offset, dims, (strides.0 as isize, strides.1 as isize))
        .ok_or_else(|| Error::Internal("conv: a matrix operand falls outside its buffer".into()))
}

/// `out = a·b` (or `out += a·b` when `accumulate`), on all threads when the convolution
/// runs on one worker, else on this thread alone.
fn product<T: Float>(a: MatRef<T>, b: MatRef<T>, out: &mut [T], accumulate: bool, alone: bool) {
    let beta = if accumulate { T::ONE } else { T::ZERO };
    if alone {
        matmul_into(a, b, out, T::ONE, beta);
    } else {
        matmul_into_as_part_of_batch(a, b, out, T::ONE, beta);
    }
}

/// The positions `ox` in `0..out` whose input column `ox·stride + offset - pad` lies in `0..size`.
fn valid_range(out: usize, stride: usize, offset: usize, pad: usize, size: usize) -> (usize, usize) {
    let lo = if pad > offset { (pad - offset).div_ceil(stride) } else { 0 };
    let hi = if size + pad <= offset { 0 } else { (size + pad - offset).div_ceil(stride) };
    (lo.min(out), hi.min(out).max(lo.min(out)))
}

/// A group's patches of one sample: row (c, i, j), column (oy, ox) holds
/// x[c, oy·sh + i·dh - ph, ox·sw + j·dw - pw], or 0 in the padding.
fn im2col<T: Float>(g: &ConvGeom, x: &[T], col: &mut [T]) {
    let (p, ow) = (g.positions(), g.ow);
    let (cols_lo, cols_hi): (Vec<usize>, Vec<usize>) =
        (0..g.kw).map(|j| valid_range(ow, g.stride[1], j * g.dilation[1], g.pad[1], g.w)).unzip();
    for c in 0..g.c_in_group() {
        let plane = &x[c * g.h * g.w..(c + 1) * g.h * g.w];
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = (c * g.kh + i) * g.kw + j;
                let dst = &mut col[row * p..(row + 1) * p];
                let (lo, hi) = (cols_lo[j], cols_hi[j]);
                for oy in 0..g.oh {
                    let out_row = &mut dst[oy * ow..(oy + 1) * ow];
                    let iy = (oy * g.stride[0] + i * g.dilation[0]).wrapping_sub(g.pad[0]);
                    if iy >= g.h {
                        out_row.fill(T::ZERO);
                        continue;
                    }
                    let src = &plane[iy * g.w..(iy + 1) * g.w];
                    out_row[..lo].fill(T::ZERO);
                    out_row[hi..].fill(T::ZERO);
                    if lo == hi {
                        continue;
                    }
                    let first = lo * g.stride[1] + j * g.dilation[1] - g.pad[1];
                    if g.stride[1] == 1 {
                        out_row[lo..hi].copy_from_slice(&src[first..first + (hi - lo)]);
                    } else {
                        for (k, v) in out_row[lo..hi].iter_mut().enumerate() {
                            *v = src[first + k * g.stride[1]];
                        }
                    }
                }
            }
        }
    }
}

/// The reverse of `im2col`: adds each patch element into the input position it came from.
fn col2im_add<T: Float>(g: &ConvGeom, col: &[T], x: &mut [T]) {
    let (p, ow) = (g.positions(), g.ow);
    for c in 0..g.c_in_group() {
        let plane = &mut x[c * g.h * g.w..(c + 1) * g.h * g.w];
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = (c * g.kh + i) * g.kw + j;
                let src = &col[row * p..(row + 1) * p];
                let (lo, hi) = valid_range(ow, g.stride[1], j * g.dilation[1], g.pad[1], g.w);
                for oy in 0..g.oh {
                    let iy = (oy * g.stride[0] + i * g.dilation[0]).wrapping_sub(g.pad[0]);
                    if iy >= g.h || lo >= hi {
                        continue;
                    }
                    let dst = &mut plane[iy * g.w..(iy + 1) * g.w];
                    let first = lo * g.stride[1] + j * g.dilation[1] - g.pad[1];
                    let values = &src[oy * ow + lo..oy * ow + hi];
                    if g.stride[1] == 1 {
                        dst[first..first + (hi - lo)].iter_mut().zip(values).for_each(|(d, &v)| *d += v);
                    } else {
                        for (k, &v) in values.iter().enumerate() {
                            dst[first + k * g.stride[1]] += v;
                        }
                    }
                }
            }
        }
    }
}

/// The work for one sample: `task(worker, sample, out_chunk, scratch)`.
type SampleTask<'a, T> = dyn Fn(usize, usize, &mut [T], &mut [T]) -> Result<()> + Sync + 'a;

/// Runs `task(worker, sample, out_chunk, scratch)` for every sample, on `workers` threads;
/// each worker owns one scratch buffer of `scratch_len` elements.
fn per_sample<T: Float>(
    workers: usize,
    out: &mut [T],
    chunk: usize,
    scratch_len: usize,
    task: &SampleTask<'_, T>,
) -> Result<()> {
    if chunk == 0 {
        return Ok(());
    }
    let slots: Vec<Mutex<&mut [T]>> = out.chunks_mut(chunk).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let poller = crate::interrupt::Poller::here();
    super::spin_pool::run(workers.min(slots.len()).max(1), &|worker| {
        let mut scratch: Vec<T> = crate::storage::vec_with_capacity(scratch_len);
        scratch.resize(scratch_len, T::ZERO);
        loop {
            let sample = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(sample) else { break };
            poller.poll();
            // Each slot is claimed by one worker only, so this lock never waits.
            let mut chunk = slot.lock();
            if let Err(e) = task(worker, sample, &mut chunk, &mut scratch) {
                *failure.lock() = Some(e);
                break;
            }
        }
    });
    failure.into_inner().map_or(Ok(()), Err)
}

/// y = conv(x, w): `x` is N·C_in·H·W, `w` C_out·(C_in/groups)·kh·kw, `y` N·C_out·oh·ow.
pub fn forward<T: Float>(g: &ConvGeom, x: &[T], w: &[T], y: &mut [T]) -> Result<()> {
    check_sizes(g, x.len(), w.len(), y.len())?;
    let (k, p, cog, cig) = (g.patch_rows(), g.positions(), g.c_out_group(), g.c_in_group());
    let workers = workers(g);
    let sample_in = g.c_in * g.h * g.w;
    per_sample(workers, y, g.c_out * p, k * p, &|_, n, y_n, col| {
        for group in 0..g.groups {
            let x_ng = &x[n * sample_in + group * cig * g.h * g.w..];
            im2col(g, x_ng, col);
            let a = mat(w, group * cog * k, (cog, k), (k, 1))?;
            let b = mat(col, 0, (k, p), (p, 1))?;
            product(a, b, &mut y_n[group * cog * p..(group + 1) * cog * p], false, workers == 1);
        }
        Ok(())
    })
}

/// gx = the gradient of conv(x, w) with respect to x, for the output gradient `gy`.
pub fn input_grad<T: Float>(g: &ConvGeom, gy: &[T], w: &[T], gx: &mut [T]) -> Result<()> {
    check_sizes(g, gx.len(), w.len(), gy.len())?;
    let (k, p, cog, cig) = (g.patch_rows(), g.positions(), g.c_out_group(), g.c_in_group());
    let workers = workers(g);
    let sample_out = g.c_out * p;
    per_sample(workers, gx, g.c_in * g.h * g.w, k * p, &|_, n, gx_n, col| {
        gx_n.fill(T::ZERO);
        for group in 0..g.groups {
            let a = mat(w, group * cog * k, (k, cog), (1, k))?;
            let b = mat(gy, n * sample_out + group * cog * p, (cog, p), (p, 1))?;
            product(a, b, col, false, workers == 1);
            col2im_add(g, col, &mut gx_n[group * cig * g.h * g.w..]);
        }
        Ok(())
    })
}

/// gw = the gradient of conv(x, w) with respect to w, for the output gradient `gy`.
pub fn weight_grad<T: Float>(g: &ConvGeom, gy: &[T], x: &[T], gw: &mut [T]) -> Result<()> {
    check_sizes(g, x.len(), gw.len(), gy.len())?;
    let (k, p, cog, cig) = (g.patch_rows(), g.positions(), g.c_out_group(), g.c_in_group());
    let workers = workers(g);
    let (sample_in, sample_out) = (g.c_in * g.h * g.w, g.c_out * p);
    // One partial sum of gw per worker (plus the patch buffer), summed at the end.
    let wlen = gw.len();
    let mut partials: Vec<T> = crate::storage::vec_with_capacity(workers * wlen);
    partials.resize(workers * wlen, T::ZERO);
    let partial_slots: Vec<Mutex<&mut [T]>> = partials.chunks_mut(wlen.max(1)).map(Mutex::new).collect();
    let mut samples = vec![T::ZERO; g.n];
    per_sample(workers, &mut samples, 1, k * p, &|worker, n, _, col| {
        let mut partial = partial_slots[worker].lock();
        for group in 0..g.groups {
            im2col(g, &x[n * sample_in + group * cig * g.h * g.w..], col);
            let a = mat(gy, n * sample_out + group * cog * p, (cog, p), (p, 1))?;
            let b = mat(col, 0, (p, k), (1, p))?;
            product(a, b, &mut partial[group * cog * k..(group + 1) * cog * k], true, workers == 1);
        }
        Ok(())
    })?;
    drop(partial_slots);
    gw.fill(T::ZERO);
    for part in partials.chunks(wlen.max(1)) {
        gw.iter_mut().zip(part).for_each(|(d, &v)| *d += v);
    }
    Ok(())
}

fn check_sizes(g: &ConvGeom, input: usize, weight: usize, output: usize) -> Result<()> {
    let ok = g.groups > 0
        && g.c_in.is_multiple_of(g.groups)
        && g.c_out.is_multiple_of(g.groups)
        && input == g.input_len()
        && weight == g.weight_len()
        && output == g.output_len()
        && g.stride.iter().all(|&s| s > 0)
        && g.dilation.iter().all(|&d| d > 0);
    if ok {
        Ok(())
    } else {
        Err(Error::Internal(format!("conv: buffer sizes do not fit the geometry {g:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(g: &ConvGeom, x: &[f64], w: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; g.output_len()];
        let (cig, cog) = (g.c_in / g.groups, g.c_out / g.groups);
        for n in 0..g.n {
            for o in 0..g.c_out {
                let group = o / cog;
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        let mut s = 0.0;
                        for c in 0..cig {
                            for i in 0..g.kh {
                                for j in 0..g.kw {
                                    let iy = (oy * g.stride[0] + i * g.dilation[0]) as isize - g.pad[0] as isize;
                                    let ix = (ox * g.stride[1] + j * g.dilation[1]) as isize - g.pad[1] as isize;
                                    if iy < 0 || ix < 0 || iy >= g.h as isize || ix >= g.w as isize {
                                        continue;
                                    }
                                    let xc = group * cig + c;
                                    let xv = x[((n * g.c_in + xc) * g.h + iy as usize) * g.w + ix as usize];
                                    s += xv * w[((o * cig + c) * g.kh + i) * g.kw + j];
                                }
                            }
                        }
                        y[((n * g.c_out + o) * g.oh + oy) * g.ow + ox] = s;
                    }
                }
            }
        }
        y
    }

    #[test]
    fn im2col_product_matches_direct_loops_with_stride_padding_dilation_and_groups() {
        let g = ConvGeom {
            n: 2,
            c_in: 4,
            h: 7,
            w: 6,
            c_out: 6,
            kh: 3,
            kw: 2,
            oh: 5,
            ow: 6,
            stride: [2, 1],
            pad: [2, 1],
            dilation: [1, 2],
            groups: 2,
        };
        let x: Vec<f64> = (0..g.input_len()).map(|i| ((i * 7 % 11) as f64) - 5.0).collect();
        let w: Vec<f64> = (0..g.weight_len()).map(|i| ((i * 5 % 7) as f64) - 3.0).collect();
        let mut y = vec![0.0; g.output_len()];
        forward(&g, &x, &w, &mut y).unwrap();
        assert_eq!(y, direct(&g, &x, &w));
    }
}
