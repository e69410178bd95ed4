//! `rustgrad.compile` (issue 18 §1): an eager call traced into a `Program` of the
//! kernels it ran, replayed later in one Rust call.
//!
//! Tracing is per thread. Every hook below starts with `tracing()`, one relaxed
//! atomic load, so eager code pays nothing more when no trace is running.

pub mod adam;
mod fuse;
mod program;
mod trace;

pub use program::{Program, Write};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use trace::Tracer;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::tensor::Tensor;

/// How many threads are tracing right now.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static TRACER: RefCell<Option<Tracer>> = const { RefCell::new(None) };
}

/// Whether any thread traces: the one check every hook makes first.
#[inline]
pub fn tracing() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// Runs `f` on this thread's tracer, if it has a running one.
fn with_tracer(f: impl FnOnce(&mut Tracer)) {
    TRACER.with(|cell| {
        if let Ok(mut guard) = cell.try_borrow_mut() {
            if let Some(tracer) = guard.as_mut().filter(|t| !t.stopped()) {
                f(tracer)
            }
        }
    })
}

/// Whether this thread traces (the bindings' data-read hooks ask this).
pub fn tracing_here() -> bool {
    tracing() && TRACER.with(|cell| cell.try_borrow().map(|t| t.is_some()).unwrap_or(true))
}

/// Starts tracing on this thread; `feeds` are the call's tensor arguments.
pub fn begin(feeds: Vec<Tensor>) -> Result<()> {
    TRACER.with(|cell| {
        let mut guard = cell.borrow_mut();
        if guard.is_some() {
            return Err(Error::InvalidArgument("compile: this thread is already tracing a call".into()));
        }
        *guard = Some(Tracer::new(feeds));
        ACTIVE.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

/// A value the traced call hands back: a tensor, or a slot read out by `item()`.
pub enum Output {
    Tensor(Tensor),
    Slot(usize),
}

/// Ends this thread's trace: the program, or why the call cannot be replayed.
pub fn end(outputs: &[Output]) -> std::result::Result<Program, String> {
    let tracer = TRACER.with(|cell| cell.borrow_mut().take());
    let Some(tracer) = tracer else { return Err("compile: no trace is running".into()) };
    ACTIVE.fetch_sub(1, Ordering::Relaxed);
    tracer.finish(outputs)
}

/// Drops this thread's trace, if any (the traced call raised).
pub fn abort() {
    if TRACER.with(|cell| cell.borrow_mut().take()).is_some() {
        ACTIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Stops this thread's trace: the call goes on eagerly and will not be replayed.
pub fn stop(reason: impl FnOnce() -> String) {
    if tracing() {
        with_tracer(|t| t.stop(reason()));
    }
}

/// A new storage was made (by `Tensor::from_buffer`); `constant` when its values come
/// from a Python number (`Tensor::scalar`, `Tensor::full`).
pub fn created(t: &Tensor, constant: bool) {
    with_tracer(|tracer| tracer.note_created(t, constant));
}

/// `out = forward(op, inputs)` ran.
#[inline]
pub fn op(op: &Op, inputs: &[&Tensor], out: &Tensor) {
    if tracing() {
        with_tracer(|t| match op {
            Op::Custom(_) => t.stop("a custom op inside the traced call".into()),
            _ => t.op(op, inputs, out),
        });
    }
}

/// The engine summed two gradient contributions.
#[inline]
pub fn add_grads(a: &Tensor, b: &Tensor, out: &Tensor) {
    if tracing() {
        with_tracer(|t| t.add_grads(a, b, out));
    }
}

/// The engine cast a gradient to its input's dtype.
#[inline]
pub fn cast(x: &Tensor, dtype: DType, out: &Tensor) {
    if tracing() {
        with_tracer(|t| t.cast(x, dtype, out));
    }
}

/// An in-place write is about to run (hooks call this before writing, so that the
/// destination's old value is what the write reads).
#[inline]
pub fn write(write: Write, dst: &Tensor, srcs: &[&Tensor]) {
    if tracing() {
        with_tracer(|t| t.write(write, dst, srcs));
    }
}

/// `engine::accumulate_into_leaf(leaf, grad)` is about to run.
#[inline]
pub fn accumulate_leaf(leaf: &Tensor, grad: &Tensor) {
    if tracing() {
        with_tracer(|t| t.accumulate_leaf(leaf, grad));
    }
}

/// Python read `leaf.grad`, which is `grad`.
#[inline]
pub fn grad_read(leaf: &Tensor, grad: Option<&Tensor>) {
    if tracing() {
        with_tracer(|t| t.grad_read(leaf, grad));
    }
}

/// Python set `leaf.grad = value`.
#[inline]
pub fn grad_set(leaf: &Tensor, value: Option<&Tensor>) {
    if tracing() {
        with_tracer(|t| t.grad_set(leaf, value));
    }
}

/// Python read `t`'s value (`item()`): its slot, for the call to return it.
pub fn read(t: &Tensor) -> Option<usize> {
    let mut slot = None;
    with_tracer(|tracer| slot = tracer.read(t));
    slot
}

/// A capturable Adam step (`adam::adam_update_counted`) is about to run.
pub fn adam(tensors: &adam::AdamTensors, hyper: &crate::forward::optim::AdamHyper) {
    if tracing() {
        with_tracer(|t| t.adam(tensors, hyper));
    }
}
