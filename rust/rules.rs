//! Derivative rules, written once for both modes.
//!
//! A rule turns the gradient of an op's output into gradients of its inputs by
//! emitting more ops through a `Differentiator`. The eager tape's
//! differentiator evaluates those ops at once; the static graph's adds them as
//! new graph nodes. So `gradients()` in a static graph and `backward()` on an
//! eager tensor are the same code.

use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::op::Op;
use crate::ops::Keeps;

pub trait Differentiator {
    type Value: Clone;
    /// Emits `op` applied to `inputs` and returns its output.
    fn apply(&mut self, op: Op, inputs: &[&Self::Value]) -> Result<Self::Value>;

    // Shorthands for the ops rules emit most.
    fn unary(&mut self, op: UnaryOp, x: &Self::Value) -> Result<Self::Value> {
        self.apply(Op::Unary(op), &[x])
    }
    /// `x op s` for a number `s` (`ScalarOp::RSub` is `s - x`).
    fn scalar(&mut self, x: &Self::Value, op: ScalarOp, s: f64) -> Result<Self::Value> {
        self.apply(Op::Scalar(op, Scalar::Float(s)), &[x])
    }
    fn mul(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value> {
        self.apply(Op::Binary(BinaryOp::Mul), &[a, b])
    }
    fn div(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value> {
        self.apply(Op::Binary(BinaryOp::Div), &[a, b])
    }
    fn zeros_like(&mut self, x: &Self::Value) -> Result<Self::Value> {
        self.apply(Op::FullLike(0.0), &[x])
    }
    /// The rank of `value` where it is known before run time (a rule may then skip work).
    fn rank(&self, _value: &Self::Value) -> Option<usize> {
        None
    }
}

/// What the rule for one op needs: its inputs, its output and the output's gradient.
pub struct RuleArgs<'a, V> {
    pub inputs: &'a [V],
    pub output: &'a V,
    pub grad: &'a V,
    /// `needs[i]` is false when nothing wants the gradient of input i; the rule skips it.
    pub needs: &'a [bool],
}

/// Which values the rule of `op` reads, so the eager tape keeps only those.
/// Inputs whose values are not kept are seen by the rule as placeholders of the
/// right shape and dtype (the rule reads only their shape).
pub struct Saves {
    /// Bit i set: keep the value of input i.
    pub inputs: u32,
    pub output: bool,
}

impl Saves {
    pub fn keeps_input(&self, i: usize) -> bool {
        i < 32 && self.inputs & (1 << i) != 0
    }
}

/// What `op`'s rule reads when `needs[i]` says which inputs want a gradient.
pub fn saves(op: &Op, needs: &[bool]) -> Saves {
    let n = needs.len().min(32);
    let none = || 0u32;
    let all = || ((1u64 << n) - 1) as u32;
    let only = |i: usize| 1u32 << i;
    let first = || only(0);
    let (inputs, output) = match op {
        Op::Unary(u) => match u.keeps() {
            Keeps::Nothing => (none(), false),
            Keeps::Input => (all(), false),
            Keeps::Output => (none(), true),
        },
        Op::Scalar(
            ScalarOp::Add
            | ScalarOp::Sub
            | ScalarOp::RSub
            | ScalarOp::Mul
            | ScalarOp::Div
            | ScalarOp::FloorDiv
            | ScalarOp::RFloorDiv
            | ScalarOp::Remainder,
            _,
        ) => (none(), false),
        Op::Scalar(ScalarOp::RRemainder, _) => (all(), false),
        Op::Scalar(ScalarOp::RDiv, _) => (all(), true),
        Op::Scalar(ScalarOp::RPow, _) => (none(), true),
        Op::Scalar(ScalarOp::Pow | ScalarOp::Max | ScalarOp::Min, _) | Op::Clamp { .. } => (all(), false),
        Op::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::FloorDiv) => (none(), false),
        Op::Binary(BinaryOp::Div) => (only(1), true),
        Op::Binary(_) => (all(), false),
        // Each operand is read only for the other operand's gradient.
        Op::MatMul { .. } => {
            let keep = |i: usize, other: usize| if needs.get(other).copied().unwrap_or(true) { only(i) } else { 0 };
            (keep(0, 1) | keep(1, 0), false)
        }
        Op::Where => (first(), false),
        Op::Extreme { .. } => (all(), true),
        Op::MaskedSelect => (only(1), false),
        Op::ReluBackward | Op::ClampBackward { .. } => (only(1), false),
        Op::Compare(_)
        | Op::Sum { .. }
        | Op::Mean { .. }
        | Op::Reshape(_)
        | Op::Transpose(..)
        | Op::Index(_)
        | Op::Cast(_)
        | Op::Copy
        | Op::StopGradient
        | Op::SumToLike
        | Op::BroadcastLike
        | Op::ReshapeLike
        | Op::CheckGradShape(_)
        | Op::FullLike(_) => (none(), false),
        // Linear in the gradient; the other operands are read for their shape only.
        Op::ExpandReduced { .. } | Op::IndexBackward(_) => (none(), false),
        Op::MaskedScatter => (only(1), false),
        Op::Custom(_) => (all(), false),
        Op::Table(t) => return t.saves(needs),
    };
    Saves { inputs, output }
}

/// Gradients for each input of `op` (None where not needed or not differentiable).
pub fn vjp<D: Differentiator>(d: &mut D, op: &Op, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
    let g = a.grad;
    let x = |i: usize| -> Result<&D::Value> {
        a.inputs.get(i).ok_or_else(|| Error::Gradient(format!("{}: rule is missing input {i}", op.name())))
    };
    let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
    let one = |v: Option<D::Value>| Ok(vec![v]);
    match op {
        Op::Unary(u) => one(Some(crate::ops::unary::rule(d, *u, x(0)?, a.output, g)?)),
        Op::Scalar(s, v) => one(Some(scalar_rule(d, *s, v.as_f64(), x(0)?, a.output, g)?)),
        Op::Clamp { min, max } => one(Some(d.apply(Op::ClampBackward { min: *min, max: *max }, &[g, x(0)?])?)),
        Op::Binary(b) => binary_rule(d, *b, x(0)?, x(1)?, a.output, g, [need(0), need(1)]),
        Op::Compare(_) => Ok(vec![None, None]),
        Op::Where => {
            let zeros = d.apply(Op::FullLike(0.0), &[g])?;
            let gx = if need(1) {
                let picked = d.apply(Op::Where, &[x(0)?, g, &zeros])?;
                Some(sum_to(d, picked, x(1)?)?)
            } else {
                None
            };
            let gy = if need(2) {
                let picked = d.apply(Op::Where, &[x(0)?, &zeros, g])?;
                Some(sum_to(d, picked, x(2)?)?)
            } else {
                None
            };
            Ok(vec![None, gx, gy])
        }
        Op::MatMul { transpose_a, transpose_b } => {
            matmul_rule(d, *transpose_a, *transpose_b, x(0)?, x(1)?, g, [need(0), need(1)])
        }
        Op::Sum { dims, keepdim } | Op::Mean { dims, keepdim } => {
            let mean = matches!(op, Op::Mean { .. });
            one(Some(d.apply(Op::ExpandReduced { dims: dims.clone(), keepdim: *keepdim, mean }, &[g, x(0)?])?))
        }
        Op::Extreme { dims, keepdim, .. } => one(Some(extreme_rule(d, dims, *keepdim, x(0)?, a.output, g)?)),
        Op::Reshape(_) => one(Some(d.apply(Op::ReshapeLike, &[g, x(0)?])?)),
        Op::Transpose(d0, d1) => one(Some(d.apply(Op::Transpose(*d0, *d1), &[g])?)),
        Op::Index(items) => one(Some(d.apply(Op::IndexBackward(items.clone()), &[g, x(0)?])?)),
        Op::MaskedSelect => Ok(vec![Some(d.apply(Op::MaskedScatter, &[g, x(1)?, x(0)?])?), None]),
        Op::Cast(_) => one(Some(d.apply(Op::SumToLike, &[g, x(0)?])?)),
        Op::SumToLike => {
            let spread = d.apply(Op::BroadcastLike, &[g, x(0)?])?;
            Ok(vec![Some(d.apply(Op::SumToLike, &[&spread, x(0)?])?), None])
        }
        Op::Copy => one(Some(g.clone())),
        Op::StopGradient => one(None),
        Op::BroadcastLike => Ok(vec![Some(sum_to(d, g.clone(), x(0)?)?), None]),
        Op::ReshapeLike => Ok(vec![Some(d.apply(Op::ReshapeLike, &[g, x(0)?])?), None]),
        Op::CheckGradShape(_) => Ok(vec![Some(g.clone()), None]),
        Op::ReluBackward => Ok(vec![Some(d.apply(Op::ReluBackward, &[g, x(1)?])?), None]),
        Op::ClampBackward { min, max } => {
            Ok(vec![Some(d.apply(Op::ClampBackward { min: *min, max: *max }, &[g, x(1)?])?), None])
        }
        Op::FullLike(_) => Ok(vec![None]),
        Op::Table(t) => t.vjp(d, a),
        // The backward ops of reductions and indexing are linear in the gradient: each rule
        // is the adjoint map, the forward op itself (the reduction, or the pick).
        Op::ExpandReduced { dims, keepdim, mean } => {
            let (dims, keepdim) = (dims.clone(), *keepdim);
            let reduce = if *mean { Op::Mean { dims, keepdim } } else { Op::Sum { dims, keepdim } };
            Ok(vec![Some(d.apply(reduce, &[g])?), None])
        }
        Op::IndexBackward(items) => Ok(vec![Some(d.apply(Op::Index(items.clone()), &[g])?), None]),
        Op::MaskedScatter => Ok(vec![Some(d.apply(Op::MaskedSelect, &[g, x(1)?])?), None, None]),
        // The engine runs a Function's own backward; no rule reaches it.
        Op::Custom(_) => Err(Error::Gradient(format!(
            "{}: differentiating this op is not supported (no double backward through it)",
            op.backward_name()
        ))),
    }
}

/// The gradient of a max/min goes to the elements equal to the result, split evenly among ties.
fn extreme_rule<D: Differentiator>(
    d: &mut D,
    dims: &Option<Vec<isize>>,
    keepdim: bool,
    x: &D::Value,
    out: &D::Value,
    g: &D::Value,
) -> Result<D::Value> {
    let spread =
        |d: &mut D, v: &D::Value| d.apply(Op::ExpandReduced { dims: dims.clone(), keepdim, mean: false }, &[v, x]);
    let best = spread(d, out)?;
    let hit = d.apply(Op::Compare(CmpOp::Eq), &[x, &best])?;
    let ones = d.apply(Op::FullLike(1.0), &[x])?;
    let zeros = d.apply(Op::FullLike(0.0), &[x])?;
    let indicator = d.apply(Op::Where, &[&hit, &ones, &zeros])?;
    let ties = d.apply(Op::Sum { dims: dims.clone(), keepdim }, &[&indicator])?;
    let share = d.apply(Op::Binary(BinaryOp::Div), &[g, &ties])?;
    let spread_share = spread(d, &share)?;
    d.apply(Op::Binary(BinaryOp::Mul), &[&spread_share, &indicator])
}

fn sum_to<D: Differentiator>(d: &mut D, g: D::Value, like: &D::Value) -> Result<D::Value> {
    d.apply(Op::SumToLike, &[&g, like])
}

fn scalar_rule<D: Differentiator>(
    d: &mut D,
    s: ScalarOp,
    v: f64,
    x: &D::Value,
    out: &D::Value,
    g: &D::Value,
) -> Result<D::Value> {
    let mul = |d: &mut D, a: &D::Value, b: &D::Value| d.apply(Op::Binary(BinaryOp::Mul), &[a, b]);
    match s {
        ScalarOp::Add | ScalarOp::Sub => Ok(g.clone()),
        ScalarOp::RSub => d.apply(Op::Unary(UnaryOp::Neg), &[g]),
        ScalarOp::Mul => d.scalar(g, ScalarOp::Mul, v),
        ScalarOp::Div => d.scalar(g, ScalarOp::Div, v),
        ScalarOp::RDiv => {
            // d(v/x)/dx = -v/x² = -out/x
            let ratio = d.apply(Op::Binary(BinaryOp::Div), &[out, x])?;
            let neg = d.apply(Op::Unary(UnaryOp::Neg), &[&ratio])?;
            mul(d, g, &neg)
        }
        ScalarOp::Pow => {
            if v == 0.0 {
                return d.apply(Op::FullLike(0.0), &[g]);
            }
            // x² (the squared error) is common enough to skip computing x¹.
            let lowered = if v == 2.0 { x.clone() } else { d.scalar(x, ScalarOp::Pow, v - 1.0)? };
            let slope = d.scalar(&lowered, ScalarOp::Mul, v)?;
            mul(d, g, &slope)
        }
        ScalarOp::RPow => {
            let slope = d.scalar(out, ScalarOp::Mul, v.ln())?;
            mul(d, g, &slope)
        }
        ScalarOp::Max => d.apply(Op::ClampBackward { min: Some(v), max: None }, &[g, x]),
        ScalarOp::Min => d.apply(Op::ClampBackward { min: None, max: Some(v) }, &[g, x]),
        // Piecewise constant: the gradient is 0 (as floor's).
        ScalarOp::FloorDiv | ScalarOp::RFloorDiv => d.zeros_like(g),
        // x - v·floor(x/v): the slope in x is 1.
        ScalarOp::Remainder => Ok(g.clone()),
        // v - x·floor(v/x): the slope in x is -floor(v/x).
        ScalarOp::RRemainder => {
            let quotient = d.scalar(x, ScalarOp::RFloorDiv, v)?;
            let slope = d.unary(UnaryOp::Neg, &quotient)?;
            mul(d, g, &slope)
        }
    }
}

fn binary_rule<D: Differentiator>(
    d: &mut D,
    b: BinaryOp,
    x: &D::Value,
    y: &D::Value,
    out: &D::Value,
    g: &D::Value,
    need: [bool; 2],
) -> Result<Vec<Option<D::Value>>> {
    let (gx, gy) = match b {
        BinaryOp::Add => (need[0].then(|| g.clone()), need[1].then(|| g.clone())),
        BinaryOp::Sub => {
            (need[0].then(|| g.clone()), if need[1] { Some(d.apply(Op::Unary(UnaryOp::Neg), &[g])?) } else { None })
        }
        BinaryOp::Mul => (
            if need[0] { Some(d.apply(Op::Binary(BinaryOp::Mul), &[g, y])?) } else { None },
            if need[1] { Some(d.apply(Op::Binary(BinaryOp::Mul), &[g, x])?) } else { None },
        ),
        BinaryOp::Div => {
            let q = d.apply(Op::Binary(BinaryOp::Div), &[g, y])?;
            let gy = if need[1] {
                // d(x/y)/dy = -x/y² = -(g/y)·(x/y)
                let t = d.apply(Op::Binary(BinaryOp::Mul), &[&q, out])?;
                Some(d.apply(Op::Unary(UnaryOp::Neg), &[&t])?)
            } else {
                None
            };
            (need[0].then_some(q), gy)
        }
        BinaryOp::Maximum | BinaryOp::Minimum => {
            // As TF: ties send the whole gradient to x.
            let cmp = if b == BinaryOp::Maximum { CmpOp::Ge } else { CmpOp::Le };
            let pick_x = d.apply(Op::Compare(cmp), &[x, y])?;
            let zeros = d.apply(Op::FullLike(0.0), &[g])?;
            (
                if need[0] { Some(d.apply(Op::Where, &[&pick_x, g, &zeros])?) } else { None },
                if need[1] { Some(d.apply(Op::Where, &[&pick_x, &zeros, g])?) } else { None },
            )
        }
        // Piecewise constant: the gradient is 0 (as floor's).
        BinaryOp::FloorDiv => {
            let zeros = d.zeros_like(g)?;
            (need[0].then(|| zeros.clone()), need[1].then_some(zeros))
        }
        // x - y·floor(x/y): 1 for x, -floor(x/y) for y (torch's rule).
        BinaryOp::Remainder => {
            let gy = if need[1] {
                let quotient = d.apply(Op::Binary(BinaryOp::FloorDiv), &[x, y])?;
                let t = d.mul(g, &quotient)?;
                Some(d.unary(UnaryOp::Neg, &t)?)
            } else {
                None
            };
            (need[0].then(|| g.clone()), gy)
        }
    };
    let gx = gx.map(|v| sum_to(d, v, x)).transpose()?;
    let gy = gy.map(|v| sum_to(d, v, y)).transpose()?;
    Ok(vec![gx, gy])
}

fn matmul_rule<D: Differentiator>(
    d: &mut D,
    ta: bool,
    tb: bool,
    a: &D::Value,
    b: &D::Value,
    g: &D::Value,
    need: [bool; 2],
) -> Result<Vec<Option<D::Value>>> {
    let mm = |d: &mut D, p: &D::Value, q: &D::Value, tp: bool, tq: bool| {
        d.apply(Op::MatMul { transpose_a: tp, transpose_b: tq }, &[p, q])
    };
    // C = op(A)·op(B); each case reads the stored operands through transposed views.
    // Batched, an operand's gradient is summed over the batch dims it was broadcast along;
    // two matrices (the common case) need no sum.
    let matrices = d.rank(a) == Some(2) && d.rank(b) == Some(2);
    let ga = if !need[0] {
        None
    } else {
        Some(match (ta, tb) {
            (false, false) => mm(d, g, b, false, true)?,
            (false, true) => mm(d, g, b, false, false)?,
            (true, false) => mm(d, b, g, false, true)?,
            (true, true) => mm(d, b, g, true, true)?,
        })
    };
    let gb = if !need[1] {
        None
    } else {
        Some(match (ta, tb) {
            (false, false) => mm(d, a, g, true, false)?,
            (false, true) => mm(d, g, a, true, false)?,
            (true, false) => mm(d, a, g, false, false)?,
            (true, true) => mm(d, g, a, true, true)?,
        })
    };
    if matrices {
        return Ok(vec![ga, gb]);
    }
    Ok(vec![ga.map(|g| sum_to(d, g, a)).transpose()?, gb.map(|g| sum_to(d, g, b)).transpose()?])
}

/// A value inside a composite: an index into its tape.
pub type Local = usize;

/// The differentiator a composite is built with: each op goes to the outer
/// differentiator `d` at once (so a composite is evaluated, recorded or added to a
/// graph as `d` does), and is also kept here, to be differentiated afterwards.
pub struct LocalTape<'d, D: Differentiator> {
    d: &'d mut D,
    values: Vec<D::Value>,
    records: Vec<(Op, Vec<Local>, Local)>,
}

impl<D: Differentiator> Differentiator for LocalTape<'_, D> {
    type Value = Local;

    fn apply(&mut self, op: Op, inputs: &[&Local]) -> Result<Local> {
        let values: Vec<&D::Value> = inputs.iter().map(|&&i| &self.values[i]).collect();
        let out = self.d.apply(op.clone(), &values)?;
        self.values.push(out);
        let id = self.values.len() - 1;
        self.records.push((op, inputs.iter().map(|&&i| i).collect(), id));
        Ok(id)
    }

    fn rank(&self, value: &Local) -> Option<usize> {
        self.d.rank(&self.values[*value])
    }
}

/// The rule of an op given as a composite of differentiable ops: `build` computes the
/// op's output from its inputs (locals `0..n`, in order) with ops that have rules of
/// their own; the composite is then differentiated backwards from `a.grad`, with
/// every op emitted through `d`. So fused backward ops (activations, softmax, losses)
/// get exact derivatives of any order in both modes, at the cost of recomputing the
/// composite's forward once.
pub fn vjp_of_composite<D: Differentiator>(
    d: &mut D,
    a: RuleArgs<'_, D::Value>,
    build: impl FnOnce(&mut LocalTape<'_, D>, &[Local]) -> Result<Local>,
) -> Result<Vec<Option<D::Value>>> {
    let n = a.inputs.len();
    let mut tape = LocalTape { d, values: a.inputs.to_vec(), records: Vec::new() };
    let inputs: Vec<Local> = (0..n).collect();
    let out = build(&mut tape, &inputs)?;
    let LocalTape { d, values, records } = tape;
    // Which locals depend on an input whose gradient is wanted.
    let mut wanted: Vec<bool> = (0..values.len()).map(|i| i < n && a.needs.get(i).copied().unwrap_or(false)).collect();
    for (_, ins, o) in &records {
        wanted[*o] = ins.iter().any(|&i| wanted[i]);
    }
    let mut grads: Vec<Option<D::Value>> = vec![None; values.len()];
    grads[out] = Some(a.grad.clone());
    for (op, ins, o) in records.iter().rev() {
        let Some(g) = grads[*o].take().filter(|_| wanted[*o]) else { continue };
        let operands: Vec<D::Value> = ins.iter().map(|&i| values[i].clone()).collect();
        let needs: Vec<bool> = ins.iter().map(|&i| wanted[i]).collect();
        let args = RuleArgs { inputs: &operands, output: &values[*o], grad: &g, needs: &needs };
        for (&i, gi) in ins.iter().zip(vjp(d, op, args)?) {
            let Some(gi) = gi.filter(|_| wanted[i]) else { continue };
            grads[i] = Some(match grads[i].take() {
                Some(previous) => d.apply(Op::Binary(BinaryOp::Add), &[&previous, &gi])?,
                None => gi,
            });
        }
    }
    grads.truncate(n);
    Ok(grads)
}
