//! The broadcasting walk of the elementwise kernels: `Operand`, one input read at the
//! output's shape, and `zip_broadcast`, which applies a two-input function over the
//! broadcast shape, with its paths for dense and single operands, a per-channel operand
//! (`zip_channel`) and rows (`zip_rows`). Re-exported from `elementwise.rs`.

use super::elementwise::{fill_chunks, map, zip_map};
use super::layout::walk;
use std::borrow::Cow;
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

impl<T: Copy + Send + Sync + 'static> Operand<'_, T> {
    /// The operand's elements at the output's `shape`, row-major: its own slice when dense, else
    /// a gathered copy (for float32 kernels that run only over dense slices, in the CPU's vectors).
    pub(crate) fn dense_or_gathered(&self, shape: &[usize]) -> Cow<'_, [T]> {
        match self.dense {
            true => Cow::Borrowed(self.dense_slice(shape.iter().product())),
            false => Cow::Owned(super::layout::gather_strided(self.data, shape, self.strides, self.offset)),
        }
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
    if let Some(out) = zip_in_runs(shape, a, b, &Plain(&f)) {
        return out;
    }
    let mut out = crate::storage::vec_with_capacity(n);
    walk(shape, [a.strides, b.strides], [a.offset, b.offset], |[i, j]| out.push(f(a.data[i], b.data[j])));
    out
}

/// How `zip_in_runs` applies a two-input function to a run of elements: plain loops over a
/// closure (`Plain`), or float32 loops compiled for the CPU's widest vectors (`binary.rs`).
///
/// # Safety
/// Each method that takes `out` must write every slot of it, given input slices as long as `out`
/// (which `zip_rows` and `zip_channel` pass): the runs fill uninitialised memory that is then read
/// as written.
pub unsafe trait Runs<T, U>: Sync + Send {
    /// `out[i] = f(a[i], b[i])`.
    fn pair(&self, out: &mut [MaybeUninit<U>], a: &[T], b: &[T]);
    /// `out[i] = f(a[i], b)`.
    fn second_fixed(&self, out: &mut [MaybeUninit<U>], a: &[T], b: T);
    /// `out[i] = f(a, b[i])`.
    fn first_fixed(&self, out: &mut [MaybeUninit<U>], a: T, b: &[T]);
    fn one(&self, a: T, b: T) -> U;
}

/// A closure's runs, as plain loops that vectorise where the closure does.
pub struct Plain<F>(pub F);

// SAFETY: each loop zips `out` with inputs at least as long (the trait's callers pass them so;
// debug builds check), so it writes every slot.
unsafe impl<T: Copy, U, F: Fn(T, T) -> U + Sync + Send> Runs<T, U> for Plain<F> {
    #[inline(always)]
    fn pair(&self, out: &mut [MaybeUninit<U>], a: &[T], b: &[T]) {
        debug_assert!(a.len() == out.len() && b.len() == out.len());
        for ((slot, &x), &y) in out.iter_mut().zip(a).zip(b) {
            slot.write((self.0)(x, y));
        }
    }
    #[inline(always)]
    fn second_fixed(&self, out: &mut [MaybeUninit<U>], a: &[T], b: T) {
        debug_assert_eq!(a.len(), out.len());
        for (slot, &x) in out.iter_mut().zip(a) {
            slot.write((self.0)(x, b));
        }
    }
    #[inline(always)]
    fn first_fixed(&self, out: &mut [MaybeUninit<U>], a: T, b: &[T]) {
        debug_assert_eq!(b.len(), out.len());
        for (slot, &y) in out.iter_mut().zip(b) {
            slot.write((self.0)(a, y));
        }
    }
    #[inline(always)]
    fn one(&self, a: T, b: T) -> U {
        (self.0)(a, b)
    }
}

/// `zip_broadcast` by runs of elements, when one operand is dense and the other per-channel
/// (`zip_channel`) or each operand's last dim is contiguous or broadcast (`zip_rows`); None for
/// other layouts.
pub fn zip_in_runs<T, U>(shape: &[usize], a: &Operand<T>, b: &Operand<T>, runs: &impl Runs<T, U>) -> Option<Vec<U>>
where
    T: Copy + Send + Sync + 'static,
    U: Copy + Send + Sync + 'static,
{
    let n: usize = shape.iter().product();
    if a.dense {
        if let Some(layout) = channel_layout(b, shape) {
            return Some(zip_channel(shape, a.dense_slice(n), b, layout, Channel::Second, runs));
        }
    }
    if b.dense {
        if let Some(layout) = channel_layout(a, shape) {
            return Some(zip_channel(shape, b.dense_slice(n), a, layout, Channel::First, runs));
        }
    }
    let last = shape.len().saturating_sub(1);
    let in_rows = |o: &Operand<T>| o.strides.get(last).is_some_and(|&s| s == 0 || s == 1);
    if n > 0 && shape.len() > 1 && shape[last] >= ROW_MIN_ELEMENTS && in_rows(a) && in_rows(b) {
        return Some(zip_rows(shape, a, b, runs));
    }
    None
}

/// Which operand of the function the per-channel one is.
#[derive(Copy, Clone)]
enum Channel {
    First,
    Second,
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

/// `f(x, v)` (or `f(v, x)`, `side` First) over `shape`, where x is `dense` and v is `ch`'s value
/// at the position's index along `dim` (see `channel_layout`): runs of one v.
fn zip_channel<T, U>(
    shape: &[usize],
    dense: &[T],
    ch: &Operand<T>,
    (dim, stride): (usize, isize),
    side: Channel,
    runs: &impl Runs<T, U>,
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
            let (slots, xs, v) = (&mut out[done..done + len], &dense[p..p + len], value(p));
            match side {
                Channel::Second => runs.second_fixed(slots, xs, v),
                Channel::First => runs.first_fixed(slots, v, xs),
            }
            done += len;
        }
    };
    // SAFETY: `fill` writes every slot of its chunk: each pass has `runs` write all `len` slots
    // (the input run is `len` long too, as `p + len <= start + out.len() <= dense.len()`) and
    // advances `done` by `len` until the chunk is full.
    unsafe { fill_chunks(dense.len(), fill) }
}

/// Rows at least this long take `zip_rows`.
pub const ROW_MIN_ELEMENTS: usize = 16;

/// `zip_broadcast` where each operand's last dim is contiguous or broadcast (a bias row
/// against a matrix, an expanded column): row by row with the loops of `runs`, in parallel
/// for large outputs, instead of one walk element by element.
fn zip_rows<T, U>(shape: &[usize], a: &Operand<T>, b: &Operand<T>, runs: &impl Runs<T, U>) -> Vec<U>
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
                (1, 1) => runs.pair(slots, &a.data[i..i + len], &b.data[j..j + len]),
                (1, _) => runs.second_fixed(slots, &a.data[i..i + len], b.data[j]),
                (_, 1) => runs.first_fixed(slots, a.data[i], &b.data[j..j + len]),
                _ => {
                    let v = runs.one(a.data[i], b.data[j]);
                    slots.iter_mut().for_each(|slot| {
                        slot.write(v);
                    });
                }
            }
            done += len;
        }
    };
    // SAFETY: `fill` writes every slot of its chunk: it advances `done` by the length of each
    // run of slots it has `runs` write (the input runs are exactly `len` long) until the chunk is full.
    unsafe { fill_chunks(n, fill) }
}
