//! A traced call as a program: the kernels the eager call ran, in its order, on
//! slots; replayed by calling the same kernels again (so the same bits).

use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::forward::optim::AdamHyper;
use crate::forward::{self, forward};
use crate::kernels::elementwise::{BinaryOp, ScalarOp};
use crate::op::Op;
use crate::tensor::Tensor;
use std::fmt::Write as _;

pub use super::fuse::LeafStep;

/// Where a slot's value comes from before the first instruction runs.
pub enum Bound {
    /// The k-th tensor argument of the call.
    Feed(usize),
    /// A tensor that existed before the traced call (a weight, a constant made of a
    /// Python number): the program holds it and reads its current values.
    Fixed(Tensor),
}

/// A leaf whose `.grad` the program reads or writes.
#[derive(Clone)]
pub enum LeafRef {
    Feed(usize),
    Fixed(Tensor),
}

/// How an in-place write combines the destination with its sources.
#[derive(Clone, Debug)]
pub enum Write {
    /// `dst += alpha * src` (`forward::add_in_place`).
    AddScaled(f64),
    /// `dst = dst op s` (`forward::update_in_place`).
    Update(ScalarOp, Scalar),
    /// `dst[:] = s` (`forward::fill`).
    Fill(Scalar),
    /// `dst[mask] = value` (`forward::masked_fill`), sources `[mask, value]`.
    MaskedFill,
    /// `dst[:] = src` (`forward::write_into`).
    Into,
}

pub enum Instr {
    Op {
        op: Op,
        inputs: Vec<usize>,
        out: usize,
    },
    /// The engine's sum of two gradient contributions (`forward::binary(Add)`).
    AddGrads {
        a: usize,
        b: usize,
        out: usize,
    },
    /// The engine's cast of a gradient to its input's dtype (`forward::cast`).
    Cast {
        x: usize,
        dtype: DType,
        out: usize,
    },
    Write {
        write: Write,
        dst: usize,
        srcs: Vec<usize>,
    },
    /// `engine::accumulate_into_leaf`: sets or adds into `.grad`, as the eager pass does.
    AccumulateLeaf {
        leaf: LeafRef,
        grad: usize,
    },
    /// Reading `leaf.grad` (known to be set at this point).
    GradOf {
        leaf: LeafRef,
        out: usize,
    },
    /// `leaf.grad = value`.
    SetGrad {
        leaf: LeafRef,
        value: Option<usize>,
    },
    /// A capturable Adam step: `tensors` in `AdamTensors::all()`'s order.
    Adam {
        tensors: Vec<usize>,
        n: usize,
        amsgrad: bool,
        tensor_lr: bool,
        hyper: AdamHyper,
    },
    /// SGD steps fused per leaf (`fuse.rs`), with the instructions they replace.
    LeafSteps {
        steps: Vec<LeafStep>,
        original: Vec<Instr>,
    },
}

impl Instr {
    /// Calls `f` on every slot the instruction reads (an in-place write reads its destination).
    pub(crate) fn for_each_read(&self, f: &mut impl FnMut(usize)) {
        match self {
            Instr::Op { inputs, .. } => inputs.iter().for_each(|&s| f(s)),
            Instr::AddGrads { a, b, .. } => [*a, *b].into_iter().for_each(f),
            Instr::Cast { x, .. } => f(*x),
            Instr::Write { dst, srcs, .. } => std::iter::once(dst).chain(srcs).for_each(|&s| f(s)),
            Instr::AccumulateLeaf { grad, .. } => f(*grad),
            Instr::GradOf { .. } => {}
            Instr::SetGrad { value, .. } => value.iter().for_each(|&s| f(s)),
            Instr::Adam { tensors, .. } => tensors.iter().for_each(|&s| f(s)),
            Instr::LeafSteps { original, .. } => original.iter().for_each(|i| i.for_each_read(f)),
        }
    }

    /// Calls `f` on every slot the instruction reads or writes.
    pub(crate) fn for_each_slot(&self, f: &mut impl FnMut(usize)) {
        if let Instr::LeafSteps { original, .. } = self {
            return original.iter().for_each(|i| i.for_each_slot(f));
        }
        self.for_each_read(f);
        if let Instr::Op { out, .. }
        | Instr::AddGrads { out, .. }
        | Instr::Cast { out, .. }
        | Instr::GradOf { out, .. } = self
        {
            f(*out)
        }
    }
}

/// What a feed must look like for the program to apply.
pub struct FeedGuard {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub requires_grad: bool,
}

/// A state the program relies on at its start.
pub enum StateGuard {
    /// A captured tensor's `requires_grad` as traced.
    RequiresGrad(Tensor, bool),
    /// A leaf's `.grad` presence (and its shape and dtype when present) as traced.
    GradState(LeafRef, Option<(Vec<usize>, DType)>),
}

pub struct Program {
    pub(crate) n_slots: usize,
    pub(crate) bound: Vec<(usize, Bound)>,
    pub(crate) instrs: Vec<Instr>,
    /// Slots no later instruction (nor the outputs) reads, freed after each instruction.
    pub(crate) frees: Vec<Vec<usize>>,
    pub(crate) outputs: Vec<usize>,
    pub(crate) feeds: Vec<FeedGuard>,
    pub(crate) guards: Vec<StateGuard>,
    pub(crate) grad_mode: bool,
    pub(crate) signature: String,
}

pub(crate) fn leaf<'a>(r: &'a LeafRef, feeds: &'a [Tensor]) -> &'a Tensor {
    match r {
        LeafRef::Feed(k) => &feeds[*k],
        LeafRef::Fixed(t) => t,
    }
}

fn grad_state(t: &Tensor) -> Option<(Vec<usize>, DType)> {
    t.grad().map(|g| (g.shape().to_vec(), g.dtype()))
}

impl Program {
    pub fn signature(&self) -> &str {
        &self.signature
    }

    pub fn len(&self) -> usize {
        self.instrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }

    /// How many leaf steps `fuse.rs` fused.
    pub fn fused_leaf_steps(&self) -> usize {
        self.instrs.iter().map(|i| if let Instr::LeafSteps { steps, .. } = i { steps.len() } else { 0 }).sum()
    }

    /// How many of those steps also run the product that makes their gradient (`fuse.rs`).
    pub fn fused_products(&self) -> usize {
        let count = |steps: &[LeafStep]| steps.iter().filter(|s| s.joins_its_product()).count();
        self.instrs.iter().map(|i| if let Instr::LeafSteps { steps, .. } = i { count(steps) } else { 0 }).sum()
    }

    /// Why the program does not apply to these feeds and the current state, if it does not.
    pub fn check(&self, feeds: &[Tensor]) -> Option<String> {
        if crate::autograd::grad_mode::is_enabled() != self.grad_mode {
            return Some("grad mode changed".into());
        }
        if feeds.len() != self.feeds.len() {
            return Some(format!("expected {} tensor arguments, got {}", self.feeds.len(), feeds.len()));
        }
        for (k, (t, g)) in feeds.iter().zip(&self.feeds).enumerate() {
            if t.shape() != g.shape.as_slice() || t.dtype() != g.dtype || t.requires_grad() != g.requires_grad {
                return Some(format!("tensor argument {k} changed shape, dtype or requires_grad"));
            }
        }
        for guard in &self.guards {
            match guard {
                StateGuard::RequiresGrad(t, expected) if t.requires_grad() != *expected => {
                    return Some("a captured tensor's requires_grad changed".into())
                }
                StateGuard::GradState(r, expected) if grad_state(leaf(r, feeds)) != *expected => {
                    return Some("a .grad changed presence, shape or dtype".into())
                }
                _ => {}
            }
        }
        None
    }

    /// Runs the program; the caller has checked it applies (`check`).
    pub fn run(&self, feeds: &[Tensor]) -> Result<Vec<Tensor>> {
        let mut slots: Vec<Option<Tensor>> = vec![None; self.n_slots];
        for (slot, bound) in &self.bound {
            slots[*slot] = Some(match bound {
                Bound::Feed(k) => feeds[*k].clone(),
                Bound::Fixed(t) => t.clone(),
            });
        }
        for (instr, frees) in self.instrs.iter().zip(&self.frees) {
            run_one(instr, &mut slots, feeds)?;
            for &s in frees {
                slots[s] = None;
            }
        }
        self.outputs.iter().map(|&s| take(&slots, s).cloned()).collect()
    }
}

fn take(slots: &[Option<Tensor>], s: usize) -> Result<&Tensor> {
    slots[s].as_ref().ok_or_else(|| Error::Internal(format!("compile: slot {s} read before it was written")))
}

pub(crate) fn run_one(instr: &Instr, slots: &mut [Option<Tensor>], feeds: &[Tensor]) -> Result<()> {
    match instr {
        Instr::Op { op, inputs, out } => {
            let ins: Vec<&Tensor> = inputs.iter().map(|&s| take(slots, s)).collect::<Result<_>>()?;
            let value = forward(op, &ins)?;
            slots[*out] = Some(value);
        }
        Instr::AddGrads { a, b, out } => {
            let value = forward::binary(BinaryOp::Add, take(slots, *a)?, take(slots, *b)?)?;
            slots[*out] = Some(value);
        }
        Instr::Cast { x, dtype, out } => {
            let value = forward::cast(take(slots, *x)?, *dtype)?;
            slots[*out] = Some(value);
        }
        Instr::Write { write, dst, srcs } => {
            let dst = take(slots, *dst)?;
            let src = |i: usize| take(slots, srcs[i]);
            match write {
                Write::AddScaled(alpha) => forward::add_in_place(dst, src(0)?, *alpha)?,
                Write::Update(op, s) => forward::update_in_place(dst, *op, *s)?,
                Write::Fill(s) => forward::fill(dst, *s)?,
                Write::MaskedFill => forward::masked_fill(dst, src(0)?, src(1)?)?,
                Write::Into => forward::write_into(dst, src(0)?)?,
            }
        }
        Instr::AccumulateLeaf { leaf: r, grad } => {
            let grad = take(slots, *grad)?.clone();
            crate::autograd::engine::accumulate_into_leaf(leaf(r, feeds), grad)?;
        }
        Instr::GradOf { leaf: r, out } => {
            let grad = leaf(r, feeds).grad().ok_or_else(|| Error::Internal("compile: .grad vanished".into()))?;
            slots[*out] = Some(grad);
        }
        Instr::SetGrad { leaf: r, value } => {
            let value = value.map(|s| take(slots, s).cloned()).transpose()?;
            leaf(r, feeds).set_grad(value);
        }
        Instr::Adam { tensors, n, amsgrad, tensor_lr, hyper } => {
            let all = tensors.iter().map(|&s| take(slots, s).cloned()).collect::<Result<Vec<_>>>()?;
            super::adam::adam_update_counted(
                &super::adam::AdamTensors::from_all(all, *n, *amsgrad, *tensor_lr),
                hyper,
            )?;
        }
        Instr::LeafSteps { steps, original } => super::fuse::run_leaf_steps(steps, original, slots, feeds)?,
    }
    Ok(())
}

/// An op with every parameter that changes what it computes (the numbers baked into it).
pub(crate) fn describe(op: &Op) -> String {
    match op {
        Op::Unary(u) => format!("{u:?}"),
        Op::Scalar(o, s) => format!("Scalar({o:?},{s:?})"),
        Op::Clamp { min, max } => format!("Clamp({min:?},{max:?})"),
        Op::Binary(b) => format!("{b:?}"),
        Op::Compare(c) => format!("Compare({c:?})"),
        Op::Where => "Where".into(),
        Op::MatMul { transpose_a, transpose_b } => format!("MatMul({transpose_a},{transpose_b})"),
        Op::Sum { dims, keepdim } => format!("Sum({dims:?},{keepdim})"),
        Op::Mean { dims, keepdim } => format!("Mean({dims:?},{keepdim})"),
        Op::Extreme { largest, dims, keepdim } => format!("Extreme({largest},{dims:?},{keepdim})"),
        Op::Reshape(s) => format!("Reshape({s:?})"),
        Op::Transpose(a, b) => format!("Transpose({a},{b})"),
        Op::Index(items) => format!("Index({items:?})"),
        Op::MaskedSelect => "MaskedSelect".into(),
        Op::Cast(d) => format!("Cast({d:?})"),
        Op::Copy => "Copy".into(),
        Op::StopGradient => "StopGradient".into(),
        Op::SumToLike => "SumToLike".into(),
        Op::BroadcastLike => "BroadcastLike".into(),
        Op::ReshapeLike => "ReshapeLike".into(),
        Op::ExpandReduced { dims, keepdim, mean } => format!("ExpandReduced({dims:?},{keepdim},{mean})"),
        Op::FullLike(v) => format!("FullLike({v:?})"),
        Op::ReluBackward => "ReluBackward".into(),
        Op::ClampBackward { min, max } => format!("ClampBackward({min:?},{max:?})"),
        Op::IndexBackward(items) => format!("IndexBackward({items:?})"),
        Op::MaskedScatter => "MaskedScatter".into(),
        Op::CheckGradShape(i) => format!("CheckGradShape({i})"),
        Op::Table(t) => format!("{t:?}"),
        Op::Custom(_) => "Custom".into(),
    }
}

pub(crate) fn describe_instr(out: &mut String, instr: &Instr, leaf_name: &dyn Fn(&LeafRef) -> String) {
    let _ = match instr {
        Instr::Op { op, inputs, out: o } => writeln!(out, "{o} = {}{inputs:?}", describe(op)),
        Instr::AddGrads { a, b, out: o } => writeln!(out, "{o} = add_grads({a},{b})"),
        Instr::Cast { x, dtype, out: o } => writeln!(out, "{o} = cast({x},{dtype:?})"),
        Instr::Write { write, dst, srcs } => writeln!(out, "write {dst} {write:?} {srcs:?}"),
        Instr::AccumulateLeaf { leaf, grad } => writeln!(out, "accumulate {} += {grad}", leaf_name(leaf)),
        Instr::GradOf { leaf, out: o } => writeln!(out, "{o} = grad of {}", leaf_name(leaf)),
        Instr::SetGrad { leaf, value } => writeln!(out, "grad of {} = {value:?}", leaf_name(leaf)),
        Instr::Adam { tensors, amsgrad, tensor_lr, hyper, .. } => {
            writeln!(out, "adam {tensors:?} {amsgrad} {tensor_lr} {hyper:?}")
        }
        Instr::LeafSteps { steps, original } => {
            let steps: Vec<String> = steps.iter().map(super::fuse::describe).collect();
            let _ = writeln!(out, "fused {} ({} instructions)", steps.join(", "), original.len());
            original.iter().for_each(|i| describe_instr(out, i, leaf_name));
            Ok(())
        }
    };
}
