//! The broadcasting walk of the elementwise kernels: `Operand`, one input read at the
//! output's shape, and `zip_broadcast`, which applies a two-input function over the
//! broadcast shape, with its paths for dense and single operands, a per-channel operand
//! (`zip_channel`) and rows (`zip_rows`). Re-exported from `elementwise.rs`.

use super::elementwise::{fill_chunks, map, zip_map};
use super::layout::walk;
use std::mem::MaybeUninit;

/// One operand of a broadcasting kernel: the whole storage slice plus the
/// strides and offset that read it at the output's shape.
pub struct Operand<'a, T> {
    pub data: &'a [T],
    pub strides: &'a [isize],
    pub offset: usize,
    /// True when the operand is contiguous and already has the output's shape.
    pub dense: bool,
}

impl<T: Copy> Operand<'_, T> {
    pub(crate) fn dense_slice(&self, n: usize) -> &[T] {
        &self.data[self.offset..self.offset + n]
    }
    pub(crate) fn is_single(&self, shape: &[usize]) -> bool {
        self.strides.iter().zip(shape).all(|(&s, &d)| s == 0 || d <= 1)
    }
}

/// `f(a, b)` over the broadcast `shape`, row-major.
pub fn zip_broadcast<T, U>(
    shape: &[usize],
    a: &Operand<T>,
    b: &Operand<T>,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Vec<U>
where
    T: Copy + Send + Sync + 'static,
    U: Copy + Send + Sync + 'static,
{
    let n: usize = shape.iter().product();
    if n == 0 {
        return Vec::new();
    }
    if a.dense && b.dense {
        return zip_map(a.dense_slice(n), b.dense_slice(n), f);
    }
    if a.dense && b.is_single(shape) {
        let s = b.data[b.offset];
        return map(a.dense_slice(n), |v| f(v, s));
    }
    if b.dense && a.is_single(shape) {
        let s = a.data[a.offset];
        return map(b.dense_slice(n), |v| f(s, v));
    }
    if a.dense {
        if let Some((dim, stride)) = channel_layout(b, shape) {
            return zip_channel(shape, a.dense_slice(n), b, (dim, stride), &f);
        }
    }
    if b.dense {
        if let Some((dim, stride)) = channel_layout(a, shape) {
            return zip_channel(shape, b.dense_slice(n), a, (dim, stride), |y, v| f(v, y));
        }
    }
    let last = shape.len().saturating_sub(1);
    let in_rows = |o: &Operand<T>| o.strides.get(last).is_some_and(|&s| s == 0 || s == 1);
    if shape.len() > 1 && shape[last] >= ROW_MIN_ELEMENTS && in_rows(a) && in_rows(b) {
        return zip_rows(shape, a, b, f);
    }
    let mut out = crate::storage::vec_with_capacity(n);
    walk(shape, [a.strides, b.strides], [a.offset, b.offset], |[i, j]| out.push(f(a.data[i], b.data[j])));
    out
}

/// Runs at least this long take `zip_channel`.
const CHANNEL_MIN_RUN: usize = 8;

/// For an operand that varies along one dim only (a per-channel bias against an NCHW
/// tensor: strides `[0, 1, 0, 0]`), that dim and its stride, when the dims after it hold
/// at least `CHANNEL_MIN_RUN` elements (the runs over which its value is constant).
fn channel_layout<T>(o: &Operand<T>, shape: &[usize]) -> Option<(usize, isize)> {
    let mut varying = o.strides.iter().zip(shape).enumerate().filter(|(_, (&s, &len))| s != 0 && len > 1);
    let (dim, (&stride, _)) = varying.next()?;
    let run: usize = shape[dim + 1..].iter().product();
    (varying.next().is_none() && run >= CHANNEL_MIN_RUN).then_some((dim, stride))
}

/// `f(x, v)` over `shape`, where x is `dense` and v is `ch`'s value at the position's
/// index along `dim` (see `channel_layout`): runs of one v with a plain loop that vectorises.
fn zip_channel<T, U>(
    shape: &[usize],
    dense: &[T],
    ch: &Operand<T>,
    (dim, stride): (usize, isize),
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Vec<U>
where
    T: Copy + Send + Sync + 'static,
    U: Copy + Send + Sync + 'static,
{
    let (run, channels): (usize, usize) = (shape[dim + 1..].iter().product(), shape[dim]);
    // The strided view is valid, so each channel's element is inside `ch.data`.
    let value = |p: usize| ch.data[(ch.offset as isize + ((p / run) % channels) as isize * stride) as usize];
    let fill = |start: usize, out: &mut [MaybeUninit<U>]| {
        let mut done = 0;
        while done < out.len() {
            let p = start + done;
            let len = (run - p % run).min(out.len() - done);
            let v = value(p);
            for (slot, &x) in out[done..done + len].iter_mut().zip(&dense[p..p + len]) {
                slot.write(f(x, v));
            }
            done += len;
        }
    };
    // SAFETY: `fill` writes every slot of its chunk: each pass writes `len` slots (the zipped
    // slices are both `len` long, as `p + len <= start + out.len() <= dense.len()`) and
    // advances `done` by `len` until the chunk is full.
    unsafe { fill_chunks(dense.len(), fill) }
}

/// Rows at least this long take `zip_rows`.
const ROW_MIN_ELEMENTS: usize = 16;

/// `zip_broadcast` where each operand's last dim is contiguous or broadcast (a bias row
/// against a matrix, an expanded column): row by row with plain loops that vectorise,
/// in parallel for large outputs, instead of one walk element by element.
fn zip_rows<T, U>(shape: &[usize], a: &Operand<T>, b: &Operand<T>, f: impl Fn(T, T) -> U + Sync + Send) -> Vec<U>
where
    T: Copy + Send + Sync + 'static,
    U: Copy + Send + Sync + 'static,
{
    let (last, n) = (shape.len() - 1, shape.iter().product::<usize>());
    let inner = shape[last];
    let mut starts = Vec::with_capacity(n / inner);
    walk(&shape[..last], [&a.strides[..last], &b.strides[..last]], [a.offset, b.offset], |[i, j]| starts.push((i, j)));
    let (step_a, step_b) = (a.strides[last], b.strides[last]);
    let fill = |start: usize, out: &mut [MaybeUninit<U>]| {
        let mut done = 0;
        while done < out.len() {
            let (row, col) = ((start + done) / inner, (start + done) % inner);
            let len = (inner - col).min(out.len() - done);
            let slots = &mut out[done..done + len];
            let (i, j) = (starts[row].0 + col * step_a as usize, starts[row].1 + col * step_b as usize);
            match (step_a, step_b) {
                (1, 1) => {
                    for ((slot, &x), &y) in slots.iter_mut().zip(&a.data[i..i + len]).zip(&b.data[j..j + len]) {
                        slot.write(f(x, y));
                    }
                }
                (1, _) => {
                    let y = b.data[j];
                    for (slot, &x) in slots.iter_mut().zip(&a.data[i..i + len]) {
                        slot.write(f(x, y));
                    }
                }
                (_, 1) => {
                    let x = a.data[i];
                    for (slot, &y) in slots.iter_mut().zip(&b.data[j..j + len]) {
                        slot.write(f(x, y));
                    }
                }
                _ => {
                    let v = f(a.data[i], b.data[j]);
                    slots.iter_mut().for_each(|slot| {
                        slot.write(v);
                    });
                }
            }
            done += len;
        }
    };
    // SAFETY: `fill` writes every slot of its chunk: it advances `done` by the length of each
    // run of slots it writes until the chunk is full (the slices it zips are exactly `len` long).
    unsafe { fill_chunks(n, fill) }
}
