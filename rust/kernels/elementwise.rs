//! Elementwise kernels: unary maps, scalar ops, broadcasting binary ops,
//! comparisons and `where`.
//!
//! The broadcasting walk the binary ops and comparisons run on (`Operand`,
//! `zip_broadcast`) is in `broadcast.rs`.

pub use super::broadcast::{zip_broadcast, Operand, ROW_MIN_ELEMENTS};
use super::layout::{for_each_chunk, walk};
use super::{power, PARALLEL_MIN_ELEMENTS};
use crate::dtype::{nan_max, nan_min, Float, Number};
pub use crate::ops::unary::UnaryOp;
use rayon::prelude::*;
use std::mem::MaybeUninit;
// Masks in gradients are data-dependent coin flips: a branch per element would mispredict half the time.
use std::hint::select_unpredictable;

/// `x op s` for a scalar `s`; the `R` variants put the scalar on the left.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ScalarOp {
    Add,
    Sub,
    RSub,
    Mul,
    Div,
    RDiv,
    Pow,
    RPow,
    Max,
    Min,
    FloorDiv,
    RFloorDiv,
    Remainder,
    RRemainder,
}

impl ScalarOp {
    pub fn name(self) -> &'static str {
        match self {
            ScalarOp::Add => "add",
            ScalarOp::Sub => "sub",
            ScalarOp::RSub => "rsub",
            ScalarOp::Mul => "mul",
            ScalarOp::Div => "div",
            ScalarOp::RDiv => "rdiv",
            ScalarOp::Pow => "pow",
            ScalarOp::RPow => "rpow",
            ScalarOp::Max => "maximum",
            ScalarOp::Min => "minimum",
            ScalarOp::FloorDiv => "floor_divide",
            ScalarOp::RFloorDiv => "rfloor_divide",
            ScalarOp::Remainder => "remainder",
            ScalarOp::RRemainder => "rremainder",
        }
    }

    /// Whether the op divides by `x` (the tensor) rather than by the number.
    pub fn divides_by_tensor(self) -> bool {
        matches!(self, ScalarOp::RDiv | ScalarOp::RFloorDiv | ScalarOp::RRemainder)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Maximum,
    Minimum,
    /// `a // b`, rounding toward negative infinity (Python's and torch's `floor_divide`).
    FloorDiv,
    /// `a % b` with the sign of `b` (Python's `%`, torch's `remainder`, TF's `floormod`).
    Remainder,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::FloorDiv => "floor_divide",
            BinaryOp::Remainder => "remainder",
        }
    }

    /// Integer division and remainder, which refuse a zero divisor.
    pub fn divides_integers(self) -> bool {
        matches!(self, BinaryOp::FloorDiv | BinaryOp::Remainder)
    }

    /// The scalar op computing `x op s` (or `s op x` when `reflected`) for a number `s`.
    pub fn with_scalar(self, reflected: bool) -> ScalarOp {
        match (self, reflected) {
            (BinaryOp::Add, _) => ScalarOp::Add,
            (BinaryOp::Mul, _) => ScalarOp::Mul,
            (BinaryOp::Sub, false) => ScalarOp::Sub,
            (BinaryOp::Sub, true) => ScalarOp::RSub,
            (BinaryOp::Div, false) => ScalarOp::Div,
            (BinaryOp::Div, true) => ScalarOp::RDiv,
            (BinaryOp::Maximum, _) => ScalarOp::Max,
            (BinaryOp::Minimum, _) => ScalarOp::Min,
            (BinaryOp::FloorDiv, false) => ScalarOp::FloorDiv,
            (BinaryOp::FloorDiv, true) => ScalarOp::RFloorDiv,
            (BinaryOp::Remainder, false) => ScalarOp::Remainder,
            (BinaryOp::Remainder, true) => ScalarOp::RRemainder,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
        }
    }
}

/// Elements per parallel task: large enough that a task outlasts its scheduling.
const CHUNK: usize = PARALLEL_MIN_ELEMENTS / 4;

/// A vector of `n` elements written by `fill(start, slots)` over consecutive chunks,
/// in parallel for large `n`. Callers write their chunk with plain loops over
/// slices: rayon's `collect_into_vec` checks its bound on every element, which keeps
/// the loop from vectorising (a relu backward mask at 1024×4096 took 13 ms that way).
///
/// # Safety
/// `fill` must write every slot of the chunk it is given.
pub(crate) unsafe fn fill_chunks<U: Copy + Send + Sync + 'static>(
    n: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync + Send,
) -> Vec<U> {
    // SAFETY: the caller's contract, passed on.
    unsafe { fill_chunks_of(n, PARALLEL_MIN_ELEMENTS, CHUNK, fill) }
}

/// Elements from which, and per task, `fill_costly_chunks` runs in parallel. From 2^17 on, two
/// threads took 20–35% less than one for `exp`, `tanh`, `sigmoid` and `log` (128K: `tanh` 59–66
/// against 89 µs); at 2^16 they won for `tanh` only, and at 2^15 all lost (`exp` 33.5 against
/// 10.8 µs): `python benchmarks/mid_size_maps.py`, docs/performance.md.
const COSTLY_PARALLEL_MIN_ELEMENTS: usize = 1 << 17;
const COSTLY_CHUNK: usize = 1 << 15;

/// `fill_chunks` for work of several cycles an element (the special functions of `vecmath`),
/// which repays its tasks' scheduling from fewer elements than a memory-bound loop does.
///
/// # Safety
/// As `fill_chunks`.
pub(crate) unsafe fn fill_costly_chunks<U: Copy + Send + Sync + 'static>(
    n: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync + Send,
) -> Vec<U> {
    // SAFETY: the caller's contract, passed on.
    unsafe { fill_chunks_of(n, COSTLY_PARALLEL_MIN_ELEMENTS, COSTLY_CHUNK, fill) }
}

/// `fill_chunks` in chunks of `chunk`, in parallel from `parallel_from` elements.
///
/// # Safety
/// As `fill_chunks`.
unsafe fn fill_chunks_of<U: Copy + Send + Sync + 'static>(
    n: usize,
    parallel_from: usize,
    chunk: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync + Send,
) -> Vec<U> {
    let mut out = crate::storage::vec_with_capacity(n);
    let parallel = n >= parallel_from && super::threads::num_threads() > 1;
    for_each_chunk(&mut out.spare_capacity_mut()[..n], chunk, parallel, |(i, slots)| fill(i * chunk, slots));
    // SAFETY: `fill` writes each slot of its chunk (the caller's contract), and the
    // chunks cover all `n` slots.
    unsafe { out.set_len(n) };
    out
}

/// Maps `f` over a contiguous slice, in parallel for large inputs.
#[inline]
pub fn map<T: Copy + Send + Sync, U: Copy + Send + Sync + 'static>(
    x: &[T],
    f: impl Fn(T) -> U + Sync + Send,
) -> Vec<U> {
    // SAFETY: the chunk at `start` is at most `x.len() - start` long, so the zip writes every slot.
    unsafe {
        fill_chunks(x.len(), |start, out| {
            for (slot, &v) in out.iter_mut().zip(&x[start..]) {
                slot.write(f(v));
            }
        })
    }
}

/// `f(a[i], b[i])` over two contiguous slices of the same length, in parallel for large inputs.
#[inline]
pub fn zip_map<T: Copy + Send + Sync, U: Copy + Send + Sync + 'static>(
    a: &[T],
    b: &[T],
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Vec<U> {
    // invariant: callers pass two dense operands of the output's length; this guards the unsafe fill.
    assert_eq!(a.len(), b.len(), "zip_map: operands of different lengths");
    // SAFETY: both inputs have the output's length, so the zip writes every slot of each chunk.
    unsafe {
        fill_chunks(a.len(), |start, out| {
            for ((slot, &p), &q) in out.iter_mut().zip(&a[start..]).zip(&b[start..]) {
                slot.write(f(p, q));
            }
        })
    }
}

/// Applies `f` in place over a contiguous slice, in parallel for large inputs.
pub fn map_in_place<T: Copy + Send + Sync + 'static>(x: &mut [T], f: impl Fn(T) -> T + Sync + Send) {
    for_each_chunk_mut(x, |c| c.iter_mut().for_each(|v| *v = f(*v)));
}

/// `update` over consecutive chunks of `x`, in parallel for large inputs (a whole slice below that).
pub fn for_each_chunk_mut<T: Send>(x: &mut [T], update: impl Fn(&mut [T]) + Sync + Send) {
    if x.len() >= PARALLEL_MIN_ELEMENTS && super::threads::num_threads() > 1 {
        super::threads::install(|| x.par_chunks_mut(CHUNK).for_each(&update));
    } else {
        update(x);
    }
}

pub fn unary<T: Float>(op: UnaryOp, x: &[T]) -> Vec<T> {
    T::unary(op, x)
}

pub fn scalar<T: Number>(op: ScalarOp, x: &[T], s: T) -> Vec<T> {
    if let Some(out) = power::float32_power(op, x, s) {
        return out;
    }
    match op {
        // One monomorphised loop per op keeps the inner loop free of the match.
        ScalarOp::Add => map(x, |v| v.plus(s)),
        ScalarOp::Sub => map(x, |v| v.minus(s)),
        // Only `Mul` splits mid-size writes: it makes the eager update's `lr * grad` in the
        // halves `sub_` reads (as `split_writes::fill` zeroes the gradient in them).
        ScalarOp::Mul if super::split_writes::splits_below_parallel(x.len()) => {
            super::split_writes::map(x, |v| v.times(s))
        }
        ScalarOp::Mul => map(x, |v| v.times(s)),
        ScalarOp::Div => map(x, |v| v.quotient(s)),
        ScalarOp::FloorDiv => map(x, |v| v.floor_div(s)),
        ScalarOp::Remainder => map(x, |v| v.remainder(s)),
        ScalarOp::Pow => power::powers(x, s),
        // The number on the left: `1 - x` is everywhere (gates, their derivatives). In a shared
        // closure whose match on the op stayed inside the loop it took 2.2 ns an element.
        ScalarOp::RSub => map(x, |v| s.minus(v)),
        ScalarOp::RDiv => map(x, |v| s.quotient(v)),
        ScalarOp::Max => map(x, |v| nan_max(v, s)),
        ScalarOp::Min => map(x, |v| nan_min(v, s)),
        ScalarOp::RFloorDiv => map(x, |v| s.floor_div(v)),
        ScalarOp::RRemainder => map(x, |v| s.remainder(v)),
        ScalarOp::RPow => map(x, |v| power::power(s, v)),
    }
}

/// `x = x op s` in place, with the same one loop per common op as `scalar`: with the
/// match inside the loop it ran about 3 cycles per element, unvectorised.
pub fn scalar_in_place<T: Number>(op: ScalarOp, x: &mut [T], s: T) {
    if power::float32_power_in_place(op, x, s) {
        return;
    }
    match op {
        ScalarOp::Add => map_in_place(x, |v| v.plus(s)),
        ScalarOp::Sub => map_in_place(x, |v| v.minus(s)),
        ScalarOp::Mul => map_in_place(x, |v| v.times(s)),
        ScalarOp::Div => map_in_place(x, |v| v.quotient(s)),
        ScalarOp::FloorDiv => map_in_place(x, |v| v.floor_div(s)),
        ScalarOp::Remainder => map_in_place(x, |v| v.remainder(s)),
        ScalarOp::Pow => power::powers_in_place(x, s),
        ScalarOp::RSub => map_in_place(x, |v| s.minus(v)),
        ScalarOp::RDiv => map_in_place(x, |v| s.quotient(v)),
        ScalarOp::Max => map_in_place(x, |v| nan_max(v, s)),
        ScalarOp::Min => map_in_place(x, |v| nan_min(v, s)),
        ScalarOp::RFloorDiv => map_in_place(x, |v| s.floor_div(v)),
        ScalarOp::RRemainder => map_in_place(x, |v| s.remainder(v)),
        ScalarOp::RPow => map_in_place(x, |v| power::power(s, v)),
    }
}

/// `zip_broadcast` with the op's function inlined (a function pointer would stop vectorisation).
pub fn binary<T: Number>(op: BinaryOp, shape: &[usize], a: &Operand<T>, b: &Operand<T>) -> Vec<T> {
    match op {
        BinaryOp::Add => zip_broadcast(shape, a, b, |p: T, q| p.plus(q)),
        BinaryOp::Sub => zip_broadcast(shape, a, b, |p: T, q| p.minus(q)),
        BinaryOp::Mul => zip_broadcast(shape, a, b, |p: T, q| p.times(q)),
        BinaryOp::Div => zip_broadcast(shape, a, b, |p: T, q| p.quotient(q)),
        BinaryOp::Maximum => zip_broadcast(shape, a, b, nan_max),
        BinaryOp::Minimum => zip_broadcast(shape, a, b, nan_min),
        BinaryOp::FloorDiv => zip_broadcast(shape, a, b, |p: T, q| p.floor_div(q)),
        BinaryOp::Remainder => zip_broadcast(shape, a, b, |p: T, q| p.remainder(q)),
    }
}

/// Comparisons, each with its predicate inlined.
pub fn compare<T: Number>(op: CmpOp, shape: &[usize], a: &Operand<T>, b: &Operand<T>) -> Vec<bool> {
    match op {
        CmpOp::Lt => zip_broadcast(shape, a, b, |p, q| p < q),
        CmpOp::Le => zip_broadcast(shape, a, b, |p, q| p <= q),
        CmpOp::Gt => zip_broadcast(shape, a, b, |p, q| p > q),
        CmpOp::Ge => zip_broadcast(shape, a, b, |p, q| p >= q),
        CmpOp::Eq => zip_broadcast(shape, a, b, |p, q| p == q),
        CmpOp::Ne => zip_broadcast(shape, a, b, |p, q| p != q),
    }
}

/// `cond ? x : y` over the broadcast `shape`.
pub fn where_select<T: Copy + Send + Sync + 'static>(
    shape: &[usize],
    cond: &Operand<bool>,
    x: &Operand<T>,
    y: &Operand<T>,
) -> Vec<T> {
    let n: usize = shape.iter().product();
    if n > 0 && cond.dense && (x.dense || x.is_single(shape)) && (y.dense || y.is_single(shape)) {
        // The common case (masks in relu-style gradients): one linear, vectorisable pass.
        let c = cond.dense_slice(n);
        let pick = |x: &Operand<T>, start: usize, i: usize| {
            if x.dense {
                x.data[x.offset + start + i]
            } else {
                x.data[x.offset]
            }
        };
        return match (x.dense, y.dense) {
            (true, true) => {
                let (xs, ys) = (x.dense_slice(n), y.dense_slice(n));
                // SAFETY: c, xs and ys all hold n elements, so the zip writes every slot.
                unsafe {
                    fill_chunks(n, |start, out| {
                        let inputs = c[start..].iter().zip(&xs[start..]).zip(&ys[start..]);
                        for (slot, ((&k, &p), &q)) in out.iter_mut().zip(inputs) {
                            slot.write(select_unpredictable(k, p, q));
                        }
                    })
                }
            }
            // SAFETY: c holds n elements, so the zip writes every slot.
            _ => unsafe {
                fill_chunks(n, |start, out| {
                    for (i, (slot, &k)) in out.iter_mut().zip(&c[start..]).enumerate() {
                        slot.write(select_unpredictable(k, pick(x, start, i), pick(y, start, i)));
                    }
                })
            },
        };
    }
    let mut out = crate::storage::vec_with_capacity(n);
    walk(shape, [cond.strides, x.strides, y.strides], [cond.offset, x.offset, y.offset], |[c, i, j]| {
        out.push(if cond.data[c] { x.data[i] } else { y.data[j] })
    });
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_per_channel_operand_broadcasts_over_nchw_on_either_side() {
        use super::{binary, BinaryOp, Operand};
        let shape = [2usize, 3, 2, 4];
        let x: Vec<f64> = (0..48).map(|i| i as f64).collect();
        let bias = [100.0, 200.0, 300.0];
        let dense = Operand { data: &x, strides: &[24, 8, 4, 1], offset: 0, dense: true };
        let channel = Operand { data: &bias, strides: &[0, 1, 0, 0], offset: 0, dense: false };
        let expected = |swap: bool| -> Vec<f64> {
            (0..48).map(|i| if swap { bias[(i / 8) % 3] - x[i] } else { x[i] - bias[(i / 8) % 3] }).collect()
        };
        assert_eq!(binary(BinaryOp::Sub, &shape, &dense, &channel), expected(false));
        assert_eq!(binary(BinaryOp::Sub, &shape, &channel, &dense), expected(true));
    }

    use super::*;

    fn dense<'a, T>(data: &'a [T], strides: &'a [isize]) -> Operand<'a, T> {
        Operand { data, strides, offset: 0, dense: true }
    }

    #[test]
    fn binary_broadcasts_a_row_against_a_column() {
        let col = [1.0f64, 2.0, 3.0];
        let row = [10.0f64, 20.0];
        let a = Operand { data: &col, strides: &[1, 0], offset: 0, dense: false };
        let b = Operand { data: &row, strides: &[0, 1], offset: 0, dense: false };
        let out = binary(BinaryOp::Add, &[3, 2], &a, &b);
        assert_eq!(out, vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]);
    }

    #[test]
    fn binary_with_a_broadcast_scalar_uses_the_fast_path() {
        let x = [1.0f32, 2.0, 3.0];
        let s = [2.0f32];
        let a = dense(&x, &[1]);
        let b = Operand { data: &s, strides: &[0], offset: 0, dense: false };
        assert_eq!(binary(BinaryOp::Mul, &[3], &a, &b), vec![2.0, 4.0, 6.0]);
    }

    #[test]
    fn maximum_propagates_nan() {
        assert!(nan_max(f64::NAN, 1.0).is_nan());
        assert!(nan_max(1.0, f64::NAN).is_nan());
        assert_eq!(nan_max(1.0, 2.0), 2.0);
        assert!(nan_min(f64::NAN, 1.0).is_nan());
    }

    #[test]
    fn integer_kernels_wrap_around() {
        let x = [i32::MAX, -3];
        assert_eq!(scalar(ScalarOp::Add, &x, 1), vec![i32::MIN, -2]);
        assert_eq!(scalar(ScalarOp::FloorDiv, &x, 2), vec![i32::MAX / 2, -2]);
        assert_eq!(scalar(ScalarOp::Pow, &[3u8, 16], 2), vec![9, 0]);
    }

    #[test]
    fn unary_ops_match_their_definitions() {
        let x = [-2.0f64, 0.0, 3.0];
        assert_eq!(unary(UnaryOp::Relu, &x), vec![0.0, 0.0, 3.0]);
        assert_eq!(unary(UnaryOp::Sign, &x), vec![-1.0, 0.0, 1.0]);
        assert_eq!(unary(UnaryOp::Square, &x), vec![4.0, 0.0, 9.0]);
        let s = unary(UnaryOp::Sigmoid, &[0.0f64]);
        assert!((s[0] - 0.5).abs() < 1e-15);
    }

    #[test]
    fn large_inputs_give_the_same_result_in_parallel() {
        let x: Vec<f64> = (0..PARALLEL_MIN_ELEMENTS * 3 + 7).map(|i| i as f64 * 0.001).collect();
        let serial: Vec<f64> = x.iter().map(|v| v.tanh()).collect();
        assert_eq!(unary(UnaryOp::Tanh, &x), serial);
    }

    #[test]
    fn where_selects_with_broadcasting() {
        let c = [true, false];
        let x = [1.0f64];
        let y = [5.0f64, 6.0];
        let out = where_select(
            &[2],
            &Operand { data: &c, strides: &[1], offset: 0, dense: true },
            &Operand { data: &x, strides: &[0], offset: 0, dense: false },
            &Operand { data: &y, strides: &[1], offset: 0, dense: true },
        );
        assert_eq!(out, vec![1.0, 6.0]);
    }
}
