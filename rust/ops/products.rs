//! Products: `einsum`, `tensordot`, and the fixed products `outer` (`ger`), `dot`
//! (`vdot`), `mv`, and `addmm`, `addmv`, `baddbmm` (`beta·input + alpha·product`).
//! All run on the contraction engine of `einsum.rs`; every rule is the internal op
//! `einsum_backward`, which resolves its equation against the operands' ranks at run time.

use super::args::Axes;
use super::einsum::{gradient, infer_with, Equation, Label, Plan};
use super::layout::meta;
use super::{internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps};
use crate::dtype::DType;
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::infer::broadcast;
use crate::graph::{fmt_partial, PartialShape};
use crate::kernels::elementwise::{BinaryOp, ScalarOp};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::normalize_dim;
use crate::tensor::Tensor;

/// Which contraction an op runs: an equation, or `tensordot`'s axes (resolved against the ranks).
#[derive(Clone, Debug)]
pub enum Contraction {
    Einsum(Box<Equation>),
    Tensordot(Axes),
}

impl Contraction {
    fn plan(&self, ranks: &[usize]) -> Result<Plan> {
        match self {
            Contraction::Einsum(eq) => eq.plan(ranks),
            Contraction::Tensordot(axes) => tensordot_plan(axes, ranks).map(|(plan, _)| plan),
        }
    }

    fn evaluate(&self, operands: &[&Tensor]) -> Result<Tensor> {
        let ranks: Vec<usize> = operands.iter().map(|t| t.rank()).collect();
        self.plan(&ranks)?.evaluate(operands)
    }

    fn infer(&self, shapes: &[&PartialShape]) -> Result<PartialShape> {
        // An operand of unknown rank whose term has no ellipsis has as many dims as letters.
        let filled: Vec<PartialShape> = (shapes.iter().enumerate())
            .map(|(k, s)| match (s, self) {
                (None, Contraction::Einsum(eq)) => eq.fixed_rank(k).map(|r| vec![None; r]),
                _ => (*s).clone(),
            })
            .collect();
        infer_with(|ranks| self.plan(ranks), &filled.iter().collect::<Vec<_>>())
    }
}

/// The dtype of a static product: TF1 converts nothing, so every operand has the first's.
fn same_dtype(op: &str, inputs: &[Meta<'_>]) -> Result<DType> {
    let (_, first) = *nth(inputs, 0, op)?;
    if let Some((i, (_, other))) = inputs.iter().enumerate().find(|(_, (_, d))| *d != first) {
        return dtype_err(format!(
            "{op}: input {i} has type {} that does not match type {} of input 0; cast one with tf.cast",
            other.name(),
            first.name()
        ));
    }
    if first == DType::Bool {
        return dtype_err(format!("{op}: expected numeric tensors, got bool"));
    }
    Ok(first)
}

/// Products multiply and sum: bool tensors are refused, naming the op.
fn numeric(op: &str, inputs: &[&Tensor]) -> Result<()> {
    if inputs.iter().any(|t| t.dtype() == DType::Bool) {
        return dtype_err(format!(
            "{op}: expected numeric tensors, got bool; convert them with .int() or .float() first"
        ));
    }
    Ok(())
}

fn apply<D: Differentiator>(d: &mut D, op: TableOps, inputs: &[&D::Value]) -> Result<D::Value> {
    d.apply(Op::Table(op), inputs)
}

/// The gradients of a contraction of `operands` (the rule's inputs from `first` on).
fn contraction_grads<D: Differentiator>(
    d: &mut D,
    contraction: &Contraction,
    a: &RuleArgs<'_, D::Value>,
    first: usize,
    scale: f64,
) -> Result<Vec<Option<D::Value>>> {
    let operands = &a.inputs[first..];
    let inputs: Vec<&D::Value> = std::iter::once(a.grad).chain(operands).collect();
    (0..operands.len())
        .map(|which| {
            if !a.needs.get(first + which).copied().unwrap_or(false) {
                return Ok(None);
            }
            let op = TableOps::EinsumGrad(EinsumGrad { contraction: contraction.clone(), which });
            let grad = apply(d, op, &inputs)?;
            Ok(Some(if scale == 1.0 { grad } else { d.scalar(&grad, ScalarOp::Mul, scale)? }))
        })
        .collect()
}

/// What a contraction's rule reads: every operand another operand's gradient needs.
fn contraction_saves(needs: &[bool], first: usize) -> Saves {
    let n = needs.len().min(32);
    let wanted = |i: usize| needs.get(i).copied().unwrap_or(false);
    let inputs = (first..n).filter(|&k| (first..n).any(|i| i != k && wanted(i))).fold(0u32, |bits, k| bits | 1 << k);
    Saves { inputs, output: false }
}

// ---------------------------------------------------------------- einsum

#[derive(Clone, Debug)]
pub struct Einsum {
    contraction: Contraction,
}

impl TableOp for Einsum {
    const SPEC: Spec = Spec {
        name: "einsum",
        torch_aliases: &[],
        tf: &["einsum", "linalg.einsum"],
        doc: "The sum of products of the operands' elements that the equation names, in Einstein notation \
              (`'bij,bjk->bik'`; `...` broadcasts; without `->` the output is the labels seen once, in \
              alphabetical order). More than two operands are contracted from the left.",
        differentiable: true,
        inputs: &[Input { torch: "operands", tf: "inputs", list: true }],
        params: &[
            Param {
                torch: "equation",
                tf: "equation",
                tf_aliases: &[],
                kind: Kind::Str,
                torch_default: None,
                tf_default: None,
            },
            super::TF_SEMANTICS,
        ],
    };
    const TORCH_ORDER: &'static [&'static str] = &["equation", "*operands"];

    fn build(args: &Args) -> Result<Self> {
        Ok(Einsum { contraction: Contraction::Einsum(Box::new(Equation::parse_for(args.text(0)?, args.flag(1)?)?)) })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        numeric("einsum", inputs)?;
        self.contraction.evaluate(inputs)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let dtype = same_dtype("einsum", inputs)?;
        let shapes: Vec<&PartialShape> = inputs.iter().map(|(s, _)| *s).collect();
        Ok((self.contraction.infer(&shapes)?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        contraction_saves(needs, 0)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        contraction_grads(d, &self.contraction, &a, 0, 1.0)
    }
}

/// `(g, operands...)`: the gradient of a contraction for operand `which`, of its shape.
#[derive(Clone, Debug)]
pub struct EinsumGrad {
    contraction: Contraction,
    which: usize,
}

impl TableOp for EinsumGrad {
    const SPEC: Spec = internal("einsum_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("einsum_backward is built by the products' rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, operands) = inputs.split_first().ok_or_else(|| Error::Internal("einsum_backward: no inputs".into()))?;
        let ranks: Vec<usize> = operands.iter().map(|t| t.rank()).collect();
        gradient(&self.contraction.plan(&ranks)?, self.which, g, operands)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((_, dtype), (shape, _)) =
            (meta(inputs, 0, "einsum_backward")?, meta(inputs, self.which + 1, "einsum_backward")?);
        Ok((shape.clone(), dtype))
    }

    /// Reads every input but operand `which`, whose shape alone mattered.
    fn saves(&self, needs: &[bool]) -> Saves {
        let all = (0..needs.len().min(32)).fold(0u32, |bits, i| bits | 1 << i);
        Saves { inputs: all & !(1u32.checked_shl(self.which as u32 + 1).unwrap_or(0)), output: false }
    }

    /// Linear in `g` and in each other operand. With `h` the gradient of this output, put in
    /// operand `which`'s place: `g`'s gradient is the contraction itself, another operand's
    /// is its own `einsum_backward`; operand `which` (read for its shape) has none.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (g, operands) =
            a.inputs.split_first().ok_or_else(|| Error::Internal("einsum_backward: no inputs".into()))?;
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let replaced: Vec<&D::Value> =
            operands.iter().enumerate().map(|(k, x)| if k == self.which { a.grad } else { x }).collect();
        let mut grads = Vec::with_capacity(a.inputs.len());
        grads.push(if need(0) {
            Some(apply(d, TableOps::Einsum(Einsum { contraction: self.contraction.clone() }), &replaced)?)
        } else {
            None
        });
        for k in 0..operands.len() {
            grads.push(if k != self.which && need(k + 1) {
                let op = TableOps::EinsumGrad(EinsumGrad { contraction: self.contraction.clone(), which: k });
                let inputs: Vec<&D::Value> = std::iter::once(g).chain(replaced.iter().copied()).collect();
                Some(apply(d, op, &inputs)?)
            } else {
                None
            });
        }
        Ok(grads)
    }
}

// ---------------------------------------------------------------- tensordot

/// Labels for `tensordot`: `a`'s dims, then `b`'s free dims; the contracted dims of `b` take
/// the labels of the `a` dims they pair with. Also gives the pairs `(dim of a, dim of b)`.
fn tensordot_plan(axes: &Axes, ranks: &[usize]) -> Result<(Plan, Vec<(usize, usize)>)> {
    let &[ra, rb] = ranks else {
        return Err(Error::InvalidArgument(format!("tensordot: expected 2 operands, got {}", ranks.len())));
    };
    let pairs: Vec<(usize, usize)> = match axes {
        Axes::Count(n) => {
            let n = usize::try_from(*n)
                .map_err(|_| Error::InvalidArgument(format!("tensordot expects dims >= 0, but got dims={n}")))?;
            if n > ra.min(rb) {
                return shape_err(format!(
                    "tensordot expects dims <= the rank of both operands, but got dims={n} for ranks {ra} and {rb}"
                ));
            }
            (0..n).map(|i| (ra - n + i, i)).collect()
        }
        Axes::Lists(da, db) => {
            if da.len() != db.len() {
                return shape_err(format!(
                    "tensordot: both dimension lists should have same length, got {} and {}",
                    da.len(),
                    db.len()
                ));
            }
            let norm = |d: isize, r: usize| normalize_dim("tensordot", d, r);
            da.iter().zip(db).map(|(&p, &q)| Ok((norm(p, ra)?, norm(q, rb)?))).collect::<Result<_>>()?
        }
    };
    for (i, &(p, q)) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|&(p2, q2)| p2 == p || q2 == q) {
            return shape_err(format!("tensordot: dim {p} of a or dim {q} of b appears more than once in the dims"));
        }
    }
    let a: Vec<Label> = (0..ra as Label).collect();
    let b: Vec<Label> = (0..rb)
        .map(|j| pairs.iter().find(|&&(_, q)| q == j).map_or(ra as Label + j as Label, |&(p, _)| p as Label))
        .collect();
    let output: Vec<Label> =
        a.iter().copied().filter(|l| !b.contains(l)).chain(b.iter().copied().filter(|&l| l >= ra as Label)).collect();
    Ok((Plan { operands: vec![a, b], output }, pairs))
}

#[derive(Clone, Debug)]
pub struct Tensordot {
    axes: Axes,
}

impl Tensordot {
    /// The contracted sizes must be equal (no broadcasting), as torch and TF1 check.
    fn check(&self, a: &[Option<usize>], b: &[Option<usize>]) -> Result<()> {
        let (_, pairs) = tensordot_plan(&self.axes, &[a.len(), b.len()])?;
        for (p, q) in pairs {
            if let (Some(m), Some(n)) = (a[p], b[q]) {
                if m != n {
                    return shape_err(format!(
                        "tensordot: contracted dimensions need to match, but first has size {m} in dim {p} and \
                         second has size {n} in dim {q}"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl TableOp for Tensordot {
    const SPEC: Spec = Spec {
        name: "tensordot",
        torch_aliases: &[],
        tf: &["tensordot", "linalg.tensordot"],
        doc: "The sum of products over the last `dims` dims of `a` and the first `dims` of `b`, or over the \
              dims paired by two lists; the output has `a`'s other dims, then `b`'s.",
        differentiable: true,
        inputs: &[Input { torch: "a", tf: "a", list: false }, Input { torch: "b", tf: "b", list: false }],
        params: &[Param {
            torch: "dims",
            tf: "axes",
            tf_aliases: &[],
            kind: Kind::Axes,
            torch_default: Some("2"),
            tf_default: None,
        }],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Tensordot { axes: args.axes(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (*nth(inputs, 0, "tensordot")?, *nth(inputs, 1, "tensordot")?);
        numeric("tensordot", inputs)?;
        let known = |t: &Tensor| t.shape().iter().map(|&n| Some(n)).collect::<Vec<_>>();
        self.check(&known(a), &known(b))?;
        Contraction::Tensordot(self.axes.clone()).evaluate(&[a, b])
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let dtype = same_dtype("tensordot", inputs)?;
        let (a, b) = (meta(inputs, 0, "tensordot")?.0, meta(inputs, 1, "tensordot")?.0);
        if let (Some(da), Some(db)) = (a, b) {
            self.check(da, db)?;
        }
        Ok((Contraction::Tensordot(self.axes.clone()).infer(&[a, b])?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        contraction_saves(needs, 0)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        contraction_grads(d, &Contraction::Tensordot(self.axes.clone()), &a, 0, 1.0)
    }
}

// ---------------------------------------------------------------- fixed products

/// Checks operands of a fixed product: their ranks, and that each label's sizes are equal
/// (these products do not broadcast). `what` describes the operands for the messages.
fn check_fixed(op: &str, equation: &Equation, what: &str, shapes: &[&PartialShape]) -> Result<()> {
    let Some(dims) = shapes.iter().map(|s| s.as_ref()).collect::<Option<Vec<_>>>() else { return Ok(()) };
    let described = || {
        let one = |d: &Vec<Option<usize>>| match d.iter().copied().collect::<Option<Vec<usize>>>() {
            Some(known) => crate::shape::fmt_shape(&known),
            None => fmt_partial(&Some(d.clone())),
        };
        dims.iter().map(|d| one(d)).collect::<Vec<_>>().join(" and ")
    };
    let ranks: Vec<usize> = dims.iter().map(|d| d.len()).collect();
    let plan = equation
        .plan(&ranks)
        .map_err(|_| Error::Shape(format!("{op}: expected {what}, got shapes {}", described())))?;
    let mut seen: Vec<(Label, usize)> = Vec::new();
    for (labels, d) in plan.operands.iter().zip(&dims) {
        for (&l, &n) in labels.iter().zip(d.iter()) {
            let Some(n) = n else { continue };
            match seen.iter().find(|(m, _)| *m == l) {
                Some(&(_, size)) if size != n => {
                    return shape_err(format!(
                        "{op}: shapes {} cannot be multiplied: the sizes {size} and {n} must be equal",
                        described()
                    ))
                }
                Some(_) => {}
                None => seen.push((l, n)),
            }
        }
    }
    Ok(())
}

macro_rules! fixed_product {
    (
        $ty:ident, $name:literal, aliases: $aliases:expr, equation: $equation:literal, what: $what:literal,
        doc: $doc:literal, inputs: [$($input:literal),+]
    ) => {
        #[derive(Clone, Debug)]
        pub struct $ty {
            equation: Box<Equation>,
        }

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: $aliases,
                tf: &[],
                doc: $doc,
                differentiable: true,
                inputs: &[$(Input { torch: $input, tf: $input, list: false }),+],
                params: &[],
            };

            fn build(_args: &Args) -> Result<Self> {
                Ok($ty { equation: Box::new(Equation::parse($equation)?) })
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                numeric($name, inputs)?;
                let shapes: Vec<PartialShape> =
                    inputs.iter().map(|t| Some(t.shape().iter().map(|&n| Some(n)).collect())).collect();
                check_fixed($name, &self.equation, $what, &shapes.iter().collect::<Vec<_>>())?;
                self.equation.plan(&inputs.iter().map(|t| t.rank()).collect::<Vec<_>>())?.evaluate(inputs)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                let dtype = same_dtype($name, inputs)?;
                let shapes: Vec<&PartialShape> = inputs.iter().map(|(s, _)| *s).collect();
                check_fixed($name, &self.equation, $what, &shapes)?;
                Ok((infer_with(|ranks| self.equation.plan(ranks), &shapes)?, dtype))
            }

            fn saves(&self, needs: &[bool]) -> Saves {
                contraction_saves(needs, 0)
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                contraction_grads(d, &Contraction::Einsum(self.equation.clone()), &a, 0, 1.0)
            }
        }
    };
}

fixed_product!(
    Outer, "outer", aliases: &["ger"], equation: "i,j->ij", what: "two 1-D tensors",
    doc: "The outer product of two 1-D tensors: `out[i, j] = input[i] * vec2[j]`.", inputs: ["input", "vec2"]
);

fixed_product!(
    Dot, "dot", aliases: &["vdot"], equation: "i,i->", what: "two 1-D tensors",
    doc: "The dot product of two 1-D tensors of the same size.", inputs: ["input", "tensor"]
);

fixed_product!(
    Mv, "mv", aliases: &[], equation: "ij,j->i", what: "a matrix and a 1-D vector",
    doc: "The product of a matrix and a vector.", inputs: ["input", "vec"]
);

// ---------------------------------------------------------------- beta·input + alpha·product

const fn scale_param(torch: &'static str) -> Param {
    Param { torch, tf: torch, tf_aliases: &[], kind: Kind::Float, torch_default: Some("1"), tf_default: Some("1") }
}

macro_rules! add_product {
    (
        $ty:ident, $name:literal, equation: $equation:literal, what: $what:literal, doc: $doc:literal,
        inputs: [$first:literal, $second:literal]
    ) => {
        #[derive(Clone, Debug)]
        pub struct $ty {
            equation: Box<Equation>,
            beta: f64,
            alpha: f64,
        }

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[],
                doc: $doc,
                differentiable: true,
                inputs: &[
                    Input { torch: "input", tf: "input", list: false },
                    Input { torch: $first, tf: $first, list: false },
                    Input { torch: $second, tf: $second, list: false },
                ],
                params: &[scale_param("beta"), scale_param("alpha")],
            };

            fn build(args: &Args) -> Result<Self> {
                Ok($ty { equation: Box::new(Equation::parse($equation)?), beta: args.float(0)?, alpha: args.float(1)? })
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                numeric($name, inputs)?;
                let (input, operands) = (*nth(inputs, 0, $name)?, &inputs[1..]);
                let shapes: Vec<PartialShape> =
                    operands.iter().map(|t| Some(t.shape().iter().map(|&n| Some(n)).collect())).collect();
                check_fixed($name, &self.equation, $what, &shapes.iter().collect::<Vec<_>>())?;
                let product =
                    self.equation.plan(&operands.iter().map(|t| t.rank()).collect::<Vec<_>>())?.evaluate(operands)?;
                add_scaled($name, input, product, self.beta, self.alpha)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                let dtype = same_dtype($name, inputs)?;
                let shapes: Vec<&PartialShape> = inputs[1..].iter().map(|(s, _)| *s).collect();
                check_fixed($name, &self.equation, $what, &shapes)?;
                let product = infer_with(|ranks| self.equation.plan(ranks), &shapes)?;
                let input = meta(inputs, 0, $name)?.0;
                let joined = broadcast($name, input, &product)?;
                if let (Some(joined), Some(want)) = (&joined, &product) {
                    if joined.len() != want.len() {
                        return shape_err(format!(
                            "{}: the input of shape {} does not broadcast to the product's shape {}",
                            $name,
                            fmt_partial(input),
                            fmt_partial(&product)
                        ));
                    }
                }
                Ok((product, dtype))
            }

            fn saves(&self, needs: &[bool]) -> Saves {
                contraction_saves(needs, 1)
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                let input = if a.needs.first().copied().unwrap_or(false) {
                    let scaled = d.scalar(a.grad, ScalarOp::Mul, self.beta)?;
                    Some(d.apply(Op::SumToLike, &[&scaled, nth(a.inputs, 0, $name)?])?)
                } else {
                    None
                };
                let rest = contraction_grads(d, &Contraction::Einsum(self.equation.clone()), &a, 1, self.alpha)?;
                Ok(std::iter::once(input).chain(rest).collect())
            }
        }
    };
}

/// `beta·input + alpha·product`, with `input` broadcast to the product's shape (and ignored,
/// NaN and all, when `beta` is 0, as torch).
fn add_scaled(op: &str, input: &Tensor, product: Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
    let fits = crate::shape::broadcast_shapes(op, input.shape(), product.shape())
        .is_ok_and(|joined| joined.as_slice() == product.shape());
    if !fits {
        return shape_err(format!(
            "{op}: the input of shape {} does not broadcast to the product's shape {}",
            crate::shape::fmt_shape(input.shape()),
            crate::shape::fmt_shape(product.shape())
        ));
    }
    let scale = |t: &Tensor, s: f64| crate::forward::scalar(ScalarOp::Mul, t, crate::dtype::Scalar::Float(s));
    let scaled = if alpha == 1.0 { product } else { scale(&product, alpha)? };
    if beta == 0.0 {
        return Ok(scaled);
    }
    let input = if beta == 1.0 { input.clone() } else { scale(input, beta)? };
    crate::forward::binary(BinaryOp::Add, &scaled, &input)
}

add_product!(
    Addmm, "addmm", equation: "ij,jk->ik", what: "two matrices",
    doc: "`beta * input + alpha * (mat1 @ mat2)` for matrices `mat1` and `mat2`; `input` broadcasts.",
    inputs: ["mat1", "mat2"]
);

add_product!(
    Addmv, "addmv", equation: "ij,j->i", what: "a matrix and a 1-D vector",
    doc: "`beta * input + alpha * (mat @ vec)`; `input` broadcasts.",
    inputs: ["mat", "vec"]
);

add_product!(
    Baddbmm, "baddbmm", equation: "bij,bjk->bik", what: "two 3-D tensors (batches of matrices)",
    doc: "`beta * input + alpha * bmm(batch1, batch2)`; `input` broadcasts.",
    inputs: ["batch1", "batch2"]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensordot_pairs_the_last_dims_of_a_with_the_first_of_b() {
        let (plan, pairs) = tensordot_plan(&Axes::Count(2), &[3, 3]).unwrap();
        assert_eq!(pairs, vec![(1, 0), (2, 1)]);
        assert_eq!(plan.operands, vec![vec![0, 1, 2], vec![1, 2, 5]]);
        assert_eq!(plan.output, vec![0, 5]);
    }
}
