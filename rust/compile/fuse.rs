//! Exact fusion of a traced SGD step. An eager step such as
//!
//! ```text
//! loss.backward()                  # accumulate L += g
//! w.sub_(lr * w.grad)              # a = grad of L; b = a * lr; write w AddScaled(-1) [b]
//! w.grad.zero_()                   # c = grad of L; write c Fill(0)
//! ```
//!
//! makes five passes over each weight-sized tensor and one temporary. When every
//! instruction of a stretch of the program belongs to such groups (one per leaf),
//! the stretch becomes one `Instr::LeafSteps`, which runs each leaf's group in one
//! pass (`kernels::leaf_sgd`) with the same per-element arithmetic, so the same bits.
//! The groups touch disjoint memory (checked on every run), so running them one
//! after another instead of interleaved changes nothing; when a check fails (a
//! layout, a dtype, shared memory) the block runs its original instructions.
//!
//! A matrix product just before the block that makes a step's incoming gradient
//! (the weight gradient `xᵀ·g`) joins the step: once `.grad` is known to hold its
//! zero, the product's kernel applies the step as it stores each element
//! (`forward::matmul::matmul_sgd_step_in_place`), so the gradient is never written.

use super::program::{run_one, Instr, LeafRef, Write};
use super::trace::storage_id;
use crate::dtype::{float_dispatch, Float, Scalar};
use crate::error::{Error, Result};
use crate::forward;
use crate::kernels::elementwise::ScalarOp;
use crate::kernels::leaf_sgd::{leaf_sgd, GradUse, LeafSgd};
use crate::op::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;
use parking_lot::Mutex;
use std::sync::{Arc, Weak};

/// One leaf's group: `.grad += incoming`, `weight += alpha * (.grad op scale)`, then
/// `.grad[:] = zero` if `zero` is given.
pub struct LeafStep {
    pub leaf: LeafRef,
    pub incoming: usize,
    pub scale: (ScalarOp, Scalar),
    pub weight: usize,
    pub alpha: f64,
    pub zero: Option<Scalar>,
    /// The product that makes `incoming`, when it joined the step.
    product: Option<Product>,
    /// The `.grad` the last fused run left filled with `zero`.
    filled: Mutex<Option<Filled>>,
}

impl LeafStep {
    /// Whether the step runs the product that makes its incoming gradient.
    pub fn joins_its_product(&self) -> bool {
        self.product.is_some()
    }
}

/// `incoming = op(a)·op(b)` (an `Op::MatMul` instruction), run by the step.
struct Product {
    inputs: [usize; 2],
    transpose: [bool; 2],
}

/// The product instruction `instr`, if it makes the incoming gradient of one of
/// `steps` that has no product yet: that step's index and the product.
fn product_feeding(instr: &Instr, steps: &[LeafStep]) -> Option<(usize, Product)> {
    let Instr::Op { op: Op::MatMul { transpose_a, transpose_b }, inputs, out } = instr else { return None };
    let k = steps.iter().position(|s| s.incoming == *out && s.product.is_none())?;
    let inputs: [usize; 2] = inputs.as_slice().try_into().ok()?;
    Some((k, Product { inputs, transpose: [*transpose_a, *transpose_b] }))
}

/// A `.grad` region a run filled with the step's zero. Its storage's version after that
/// run says whether anything wrote it since: every write through rustgrad bumps the
/// version, and memory others can write (`versions_are_complete`) is never trusted.
/// The `Weak` keeps the storage's address from being reused without keeping its memory.
struct Filled {
    storage: Weak<Storage>,
    version: u64,
    offset: usize,
    numel: usize,
}

impl Filled {
    fn of(grad: &Tensor) -> Filled {
        let storage = Arc::downgrade(grad.storage());
        Filled { storage, version: grad.storage().version(), offset: grad.offset(), numel: grad.numel() }
    }

    fn still_holds(&self, grad: &Tensor) -> bool {
        let storage = grad.storage();
        std::ptr::eq(self.storage.as_ptr(), Arc::as_ptr(storage))
            && storage.version() == self.version
            && storage.versions_are_complete()
            && (grad.offset(), grad.numel()) == (self.offset, self.numel)
    }
}

fn same_leaf(a: &LeafRef, b: &LeafRef) -> bool {
    match (a, b) {
        (LeafRef::Feed(i), LeafRef::Feed(j)) => i == j,
        (LeafRef::Fixed(s), LeafRef::Fixed(t)) => s.same_tensor(t),
        _ => false,
    }
}

fn leaf_of(instr: &Instr) -> Option<&LeafRef> {
    match instr {
        Instr::AccumulateLeaf { leaf, .. } | Instr::GradOf { leaf, .. } | Instr::SetGrad { leaf, .. } => Some(leaf),
        _ => None,
    }
}

/// How many instructions (and outputs) read each slot.
fn read_counts(instrs: &[Instr], n_slots: usize, outputs: &[usize]) -> Vec<usize> {
    let mut reads = vec![0; n_slots];
    for instr in instrs {
        instr.for_each_read(&mut |s| reads[s] += 1);
    }
    outputs.iter().for_each(|&s| reads[s] += 1);
    reads
}

/// The group that starts with the accumulation at `i`: its instruction indices and step.
fn match_group(instrs: &[Instr], i: usize, reads: &[usize]) -> Option<(Vec<usize>, LeafStep)> {
    let Instr::AccumulateLeaf { leaf, grad: incoming } = &instrs[i] else { return None };
    let next_use =
        |after: usize| (after + 1..instrs.len()).find(|&k| leaf_of(&instrs[k]).is_some_and(|l| same_leaf(l, leaf)));
    let j = next_use(i)?;
    let Instr::GradOf { out: a, .. } = &instrs[j] else { return None };
    let Some(Instr::Op { op: Op::Scalar(op, s), inputs, out: b }) = instrs.get(j + 1) else { return None };
    let Some(Instr::Write { write: Write::AddScaled(alpha), dst: weight, srcs }) = instrs.get(j + 2) else {
        return None;
    };
    let single_use = reads[*incoming] == 1 && reads[*a] == 1 && reads[*b] == 1;
    if !single_use || inputs[..] != [*a] || srcs[..] != [*b] || [*a, *b].contains(weight) {
        return None;
    }
    let mut indices = vec![i, j, j + 1, j + 2];
    let mut zero = None;
    if let Some(m) = next_use(j + 2) {
        if let (Instr::GradOf { out: c, .. }, Some(Instr::Write { write: Write::Fill(z), dst, srcs })) =
            (&instrs[m], instrs.get(m + 1))
        {
            if dst == c && srcs.is_empty() && reads[*c] == 1 {
                indices.extend([m, m + 1]);
                zero = Some(*z);
            }
        }
    }
    let step = LeafStep {
        leaf: leaf.clone(),
        incoming: *incoming,
        scale: (*op, *s),
        weight: *weight,
        alpha: *alpha,
        zero,
        product: None,
        filled: Mutex::new(None),
    };
    Some((indices, step))
}

/// The program with every stretch made only of whole leaf groups replaced by one `LeafSteps`.
pub(crate) fn fuse_leaf_steps(instrs: Vec<Instr>, n_slots: usize, outputs: &[usize]) -> Vec<Instr> {
    let reads = read_counts(&instrs, n_slots, outputs);
    let mut owner: Vec<Option<usize>> = vec![None; instrs.len()];
    let mut groups = Vec::new();
    for i in 0..instrs.len() {
        if let Some((indices, step)) = match_group(&instrs, i, &reads) {
            if indices.iter().all(|&k| owner[k].is_none()) {
                indices.iter().for_each(|&k| owner[k] = Some(groups.len()));
                groups.push((indices, Some(step)));
            }
        }
    }
    let mut slots: Vec<Option<Instr>> = instrs.into_iter().map(Some).collect();
    let mut fused = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        match owner[i].and_then(|g| block_from(i, g, &owner, &groups)) {
            Some((end, members)) => {
                let mut original: Vec<Instr> = slots[i..=end].iter_mut().filter_map(Option::take).collect();
                let mut steps: Vec<LeafStep> = members.iter().filter_map(|&g| groups[g].1.take()).collect();
                while let Some((k, product)) = fused.last().and_then(|last| product_feeding(last, &steps)) {
                    steps[k].product = Some(product);
                    original.splice(0..0, fused.pop());
                }
                fused.push(Instr::LeafSteps { steps, original });
                i = end + 1;
            }
            None => {
                fused.extend(slots[i].take());
                i += 1;
            }
        }
    }
    fused
}

/// The stretch that starts at `start` with group `g`: its last index and its groups in
/// order, if every instruction in it belongs to a group wholly inside it, one per leaf.
fn block_from(
    start: usize,
    g: usize,
    owner: &[Option<usize>],
    groups: &[(Vec<usize>, Option<LeafStep>)],
) -> Option<(usize, Vec<usize>)> {
    if groups[g].0[0] != start {
        return None;
    }
    let (mut end, mut members) = (start, Vec::new());
    let mut k = start;
    while k <= end {
        let h = owner[k]?;
        let indices = &groups[h].0;
        if indices[0] < start {
            return None;
        }
        if !members.contains(&h) {
            members.push(h);
            end = end.max(*indices.last()?);
        }
        k += 1;
    }
    let leaves: Vec<&LeafRef> = members.iter().filter_map(|&h| groups[h].1.as_ref().map(|s| &s.leaf)).collect();
    let distinct = leaves.iter().enumerate().all(|(x, a)| leaves[..x].iter().all(|b| !same_leaf(a, b)));
    distinct.then_some((end, members))
}

/// One group's tensors at run time, checked for the fused pass.
struct Ready<'a> {
    step: &'a LeafStep,
    leaf: Tensor,
    /// `.grad` before the step (None: the accumulation sets it).
    grad: Option<Tensor>,
    incoming: Incoming,
    weight: Tensor,
}

/// Where a step's incoming gradient comes from.
enum Incoming {
    Computed(Tensor),
    /// The operands of the `Product` that makes it.
    Product {
        a: Tensor,
        b: Tensor,
        transpose: [bool; 2],
    },
}

impl Incoming {
    /// The incoming gradient, running its product if it has one.
    fn tensor(&self) -> Result<Tensor> {
        match self {
            Incoming::Computed(t) => Ok(t.clone()),
            Incoming::Product { a, b, transpose } => {
                forward::forward(&Op::MatMul { transpose_a: transpose[0], transpose_b: transpose[1] }, &[a, b])
            }
        }
    }

    /// A product whose operands are matrices of `weight`'s dtype making `weight`'s shape
    /// (so its result fits the step, contiguous) is kept to run inside the step; any
    /// other is computed now.
    fn resolved(self, weight: &Tensor) -> Result<Incoming> {
        let Incoming::Product { a, b, transpose: [ta, tb] } = &self else { return Ok(self) };
        if forward::check_matmul_update(weight, a, b, *ta, *tb, 0).is_ok() {
            Ok(self)
        } else {
            Ok(Incoming::Computed(self.tensor()?))
        }
    }
}

/// Every group's tensors, if each group can run fused and no two tensors share memory
/// (a product's operands, only read, may share memory with each other). A product
/// that cannot run inside its step runs here, before any step writes (as it ran
/// before the block); an error there leaves the block to its original instructions.
fn prepare<'a>(steps: &'a [LeafStep], slots: &[Option<Tensor>], feeds: &[Tensor]) -> Option<Vec<Ready<'a>>> {
    let (mut storages, mut operands) = (Vec::new(), Vec::new());
    let mut ready = Vec::with_capacity(steps.len());
    for step in steps {
        let leaf = super::program::leaf(&step.leaf, feeds).clone();
        let (weight, grad) = (slots[step.weight].clone()?, leaf.grad());
        let incoming = match &step.product {
            None => Incoming::Computed(slots[step.incoming].clone()?),
            Some(p) => {
                let (a, b) = (slots[p.inputs[0]].clone()?, slots[p.inputs[1]].clone()?);
                Incoming::Product { a, b, transpose: p.transpose }.resolved(&weight).ok()?
            }
        };
        let dtype = weight.dtype();
        let fits = |t: &Tensor| t.dtype() == dtype && t.shape() == weight.shape() && t.is_contiguous();
        let incoming_fits = !matches!(&incoming, Incoming::Computed(t) if !fits(t));
        let (op, s) = step.scale;
        if !(dtype.is_float() && grad.as_ref().is_none_or(fits) && incoming_fits && fits(&weight))
            || forward::scalar_dtype(op, dtype, s) != dtype
        {
            return None;
        }
        storages.extend(grad.iter().chain([&weight]).map(storage_id));
        match &incoming {
            Incoming::Computed(t) => storages.push(storage_id(t)),
            Incoming::Product { a, b, .. } => operands.extend([a, b].map(storage_id)),
        }
        ready.push(Ready { step, leaf, grad, incoming, weight });
    }
    let distinct = storages.iter().enumerate().all(|(k, id)| !storages[..k].contains(id));
    (distinct && operands.iter().all(|id| !storages.contains(id))).then_some(ready)
}

/// Runs a `LeafSteps` block: fused when `prepare` allows, else its original instructions.
pub(crate) fn run_leaf_steps(
    steps: &[LeafStep],
    original: &[Instr],
    slots: &mut [Option<Tensor>],
    feeds: &[Tensor],
) -> Result<()> {
    match prepare(steps, slots, feeds) {
        Some(ready) => ready.into_iter().try_for_each(run_fused),
        None => original.iter().try_for_each(|instr| run_one(instr, slots, feeds)),
    }
}

fn run_fused(r: Ready<'_>) -> Result<()> {
    let mut filled = r.step.filled.lock();
    let known =
        r.step.zero.is_some() && r.grad.as_ref().is_some_and(|g| filled.as_ref().is_some_and(|f| f.still_holds(g)));
    let grad = float_dispatch!(r.weight.dtype(), "sgd step", |T| run_fused_as::<T>(&r, known)?);
    *filled = r.step.zero.map(|_| Filled::of(&grad));
    Ok(())
}

/// The step of `r` on elements of type `T`, where `known` says `.grad` holds the step's
/// zero; returns the leaf's `.grad` after it.
fn run_fused_as<T: Float>(r: &Ready<'_>, known: bool) -> Result<Tensor> {
    let (op, s) = r.step.scale;
    let c = LeafSgd { scale_op: op, scale: s.to_element::<T>(), alpha: T::from_f64(r.step.alpha) };
    let zero = r.step.zero.map(|z| z.to_element::<T>());
    if let (true, Some(value), Some(grad), Incoming::Product { a, b, transpose }) = (known, zero, &r.grad, &r.incoming)
    {
        if forward::matmul_sgd_step_in_place(&r.weight, (a, transpose[0]), (b, transpose[1]), value, &c)? {
            record_accumulation_and_zeroing(grad);
            return Ok(grad.clone());
        }
    }
    let incoming = r.incoming.tensor()?;
    if r.grad.is_none() {
        crate::autograd::engine::accumulate_into_leaf(&r.leaf, incoming.clone())?;
    }
    let grad = r.leaf.grad().ok_or_else(|| Error::Internal("compile: .grad vanished".into()))?;
    let grad_use = match (known, r.grad.is_some()) {
        (true, _) => Use::Filled,
        (false, true) => Use::Accumulate,
        (false, false) => Use::Set,
    };
    step_on::<T>(&grad, grad_use, &incoming, &r.weight, zero, &c)?;
    Ok(grad)
}

/// Eager wrote a `.grad` that holds its zero twice (the accumulation, then the zeroing):
/// its version says so, though the fused step leaves its values as they were.
fn record_accumulation_and_zeroing(grad: &Tensor) {
    drop(grad.storage().write());
    drop(grad.storage().write());
}

/// How a fused step meets `.grad`: known to hold the zero value, accumulated into, or
/// already set to the incoming gradient.
#[derive(Clone, Copy)]
enum Use {
    Filled,
    Accumulate,
    Set,
}

fn step_on<T: Float>(
    grad: &Tensor,
    grad_use: Use,
    incoming: &Tensor,
    weight: &Tensor,
    zero: Option<T>,
    c: &LeafSgd<T>,
) -> Result<()> {
    let n = weight.numel();
    let mismatch = || Error::Internal("compile: sgd step dtype mismatch".into());
    let mut weight_guard = weight.storage().write();
    let w = &mut T::slice_mut(&mut weight_guard).ok_or_else(mismatch)?[weight.offset()..weight.offset() + n];
    let region = |t: &Tensor| t.offset()..t.offset() + n;
    match (grad_use, zero) {
        (Use::Filled, Some(value)) => {
            let incoming_guard = incoming.storage().read();
            let inc = &T::slice(&incoming_guard).ok_or_else(mismatch)?[region(incoming)];
            leaf_sgd(GradUse::Filled { value, incoming: inc }, w, c);
            record_accumulation_and_zeroing(grad);
        }
        (Use::Set, None) => {
            let grad_guard = grad.storage().read();
            leaf_sgd(GradUse::Read(&T::slice(&grad_guard).ok_or_else(mismatch)?[region(grad)]), w, c);
        }
        (grad_use, zero) => {
            let accumulate = matches!(grad_use, Use::Accumulate);
            let incoming_guard = accumulate.then(|| incoming.storage().read());
            let inc = match &incoming_guard {
                Some(guard) => Some(&T::slice(guard).ok_or_else(mismatch)?[region(incoming)]),
                None => None,
            };
            {
                let mut grad_guard = grad.storage().write();
                let g = &mut T::slice_mut(&mut grad_guard).ok_or_else(mismatch)?[region(grad)];
                leaf_sgd(GradUse::Write { grad: g, incoming: inc, zero }, w, c);
            }
            if accumulate && zero.is_some() {
                drop(grad.storage().write());
            }
        }
    }
    Ok(())
}

pub(crate) fn describe(step: &LeafStep) -> String {
    let product = match &step.product {
        Some(p) => format!(" of product {:?}{:?}", p.inputs, p.transpose),
        None => String::new(),
    };
    format!("sgd({:?} {:?}, alpha {}, zero {:?}){product}", step.scale.0, step.scale.1, step.alpha, step.zero)
}
