//! Norms: torch's `norm(input, p='fro', dim=None, keepdim=False)`, a vector norm over
//! `dim` for any number `p`, and TF1's `norm(tensor, ord='euclidean', axis=None,
//! keepdims=None)`, where a two-element `axis` asks for a matrix norm.

use super::reduce::float_only;
use super::{nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TF_SEMANTICS};
use crate::dtype::float_dispatch;
use crate::dtype::{DType, Float};
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::kernels::fold::{fold_dims, Fold};
use crate::op::Op;
use crate::ops::args::NumberOrName;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{fmt_shape, normalize_dims, reduced_shape};
use crate::storage::Element;
use crate::tensor::Tensor;

const NORM_PARAMS: &[Param] = &[
    Param {
        torch: "p",
        tf: "ord",
        tf_aliases: &[],
        kind: Kind::NumberOrName,
        torch_default: Some("'fro'"),
        tf_default: Some("'euclidean'"),
    },
    Param {
        torch: "dim",
        tf: "axis",
        tf_aliases: &[],
        kind: Kind::OptDims,
        torch_default: Some("None"),
        tf_default: Some("None"),
    },
    Param {
        torch: "keepdim",
        tf: "keepdims",
        tf_aliases: &["keep_dims"],
        kind: Kind::Bool,
        torch_default: Some("False"),
        tf_default: Some("False"),
    },
    // Neither front names this: it says whose rules read `p` and `dim`. TF1 reads a
    // two-element axis as a matrix norm; torch's `norm` with a number is a vector norm.
    TF_SEMANTICS,
];

/// Which norm.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Order {
    /// `(Σ |x|^p)^(1/p)` over the dims: 2 is Euclidean, ±inf the largest/smallest |x|,
    /// 0 the number of nonzero elements.
    Vector(f64),
    /// TF1's matrix 1- and inf-norms: the largest over `max_axis` of the sums of |x| over `sum_axis`.
    Matrix { sum_axis: isize, max_axis: isize },
}

fn shown(p: &NumberOrName) -> String {
    match p {
        NumberOrName::Number(v) => format!("{v}"),
        NumberOrName::Name(name) => format!("'{name}'"),
    }
}

fn invalid<T>(message: String) -> Result<T> {
    Err(Error::InvalidArgument(message))
}

/// torch's `p`: any number, or 'fro' (the Euclidean norm over at most two dims).
fn torch_order(p: &NumberOrName, dims: &Option<Vec<isize>>) -> Result<Order> {
    match p {
        NumberOrName::Number(v) => Ok(Order::Vector(*v)),
        NumberOrName::Name(name) if name == "fro" => match dims {
            Some(d) if d.len() > 2 => {
                invalid(format!("norm: p='fro' is a norm over at most 2 dims, got dim={d:?}; use p=2 for more"))
            }
            _ => Ok(Order::Vector(2.0)),
        },
        NumberOrName::Name(name) if name == "nuc" => {
            invalid("norm: the nuclear norm (p='nuc') is not supported; it needs a singular value decomposition".into())
        }
        other => invalid(format!("norm: p must be a number, 'fro' or 'nuc', got {}", shown(other))),
    }
}

/// TF1's `ord` and `axis`: a vector norm for `axis` None or one int, a matrix norm for two.
fn tf_order(ord: &NumberOrName, axis: &Option<Vec<isize>>) -> Result<Order> {
    let matrix = match axis.as_deref() {
        None | Some([_]) => None,
        Some(&[a, b]) if a != b => Some((a, b)),
        Some(other) => {
            return invalid(format!(
                "norm: 'axis' must be None, an integer, or a tuple of 2 unique integers, got {other:?}"
            ))
        }
    };
    let number = |v: f64| matches!(ord, NumberOrName::Number(n) if *n == v);
    let name = |s: &str| matches!(ord, NumberOrName::Name(n) if n == s);
    match matrix {
        None if name("euclidean") => Ok(Order::Vector(2.0)),
        None => match ord {
            NumberOrName::Number(v) if *v > 0.0 => Ok(Order::Vector(*v)),
            _ => invalid(format!("norm: 'ord' must be a supported vector norm, got {}", shown(ord))),
        },
        Some(_) if name("euclidean") || name("fro") => Ok(Order::Vector(2.0)),
        Some((a, b)) if number(1.0) => Ok(Order::Matrix { sum_axis: a, max_axis: b }),
        Some((a, b)) if number(f64::INFINITY) => Ok(Order::Matrix { sum_axis: b, max_axis: a }),
        Some(_) if number(2.0) => invalid(
            "norm: the matrix 2-norm (ord=2 over two axes) is not supported; it needs a singular value \
                     decomposition"
                .into(),
        ),
        Some(_) => invalid(format!(
            "norm: 'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, 2, inf], got {}",
            shown(ord)
        )),
    }
}

/// A fold of |x| into an f64: `step` takes the accumulator and one |x|, `merge` two accumulators.
macro_rules! abs_fold {
    ($name:ident, $identity:expr, step: |$acc:ident, $a:ident| $step:expr, merge: |$l:ident, $r:ident| $merge:expr) => {
        struct $name;

        impl<T: Float> Fold<T> for $name {
            type Acc = f64;
            fn identity(&self) -> f64 {
                $identity
            }
            #[inline]
            fn step(&self, $acc: f64, v: T) -> f64 {
                let $a = v.to_f64().abs();
                $step
            }
            fn merge(&self, $l: f64, $r: f64) -> f64 {
                $merge
            }
        }
    };
}

/// NaN wins, as in torch: a NaN accumulator stays, a NaN element replaces it.
fn larger(acc: f64, a: f64) -> f64 {
    if a > acc || a.is_nan() {
        a
    } else {
        acc
    }
}

fn smaller(acc: f64, a: f64) -> f64 {
    if a < acc || a.is_nan() {
        a
    } else {
        acc
    }
}

abs_fold!(SumOfSquares, 0.0, step: |acc, a| acc + a * a, merge: |l, r| l + r);
abs_fold!(SumOfAbs, 0.0, step: |acc, a| acc + a, merge: |l, r| l + r);
abs_fold!(LargestAbs, f64::NEG_INFINITY, step: |acc, a| larger(acc, a), merge: |l, r| larger(l, r));
abs_fold!(SmallestAbs, f64::INFINITY, step: |acc, a| smaller(acc, a), merge: |l, r| smaller(l, r));

struct CountNonzero;

impl<T: Float> Fold<T> for CountNonzero {
    type Acc = f64;
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline]
    fn step(&self, acc: f64, v: T) -> f64 {
        acc + f64::from(u8::from(v.to_f64() != 0.0))
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

struct SumOfPowers(f64);

impl<T: Float> Fold<T> for SumOfPowers {
    type Acc = f64;
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline]
    fn step(&self, acc: f64, v: T) -> f64 {
        acc + v.to_f64().abs().powf(self.0)
    }
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

/// The p-norm of each slice over `dims` of a contiguous tensor.
fn vector_norms<T: Float>(x: &[T], shape: &[usize], dims: &[usize], p: f64) -> Vec<f64> {
    if p == 2.0 {
        return fold_dims(&SumOfSquares, x, shape, dims).into_iter().map(f64::sqrt).collect();
    }
    if p == 1.0 {
        return fold_dims(&SumOfAbs, x, shape, dims);
    }
    if p == f64::INFINITY {
        return fold_dims(&LargestAbs, x, shape, dims);
    }
    if p == f64::NEG_INFINITY {
        return fold_dims(&SmallestAbs, x, shape, dims);
    }
    if p == 0.0 {
        return fold_dims(&CountNonzero, x, shape, dims);
    }
    fold_dims(&SumOfPowers(p), x, shape, dims).into_iter().map(|s| s.powf(1.0 / p)).collect()
}

#[derive(Clone, Debug)]
pub struct Norm {
    order: Order,
    dims: Option<Vec<isize>>,
    keepdim: bool,
}

impl Norm {
    fn vector(&self, x: &Tensor, p: f64) -> Result<Tensor> {
        let dims = forward::reduce_dims("norm", x, self.dims.as_deref())?;
        if p.is_infinite() {
            if let Some(&d) = dims.iter().find(|&&d| x.shape()[d] == 0) {
                return invalid(format!(
                    "norm: cannot compute the {p} norm over dimension {d} of size 0 (shape {}): the largest or \
                     smallest of no elements is undefined",
                    fmt_shape(x.shape())
                ));
            }
        }
        let out_shape = reduced_shape(x.shape(), &dims, self.keepdim);
        float_dispatch!(x.dtype(), "norm", |T| {
            let norms = x.with_contiguous(|s: &[T]| vector_norms(s, x.shape(), &dims, p))?;
            Tensor::from_vec(crate::storage::collect_vec(norms.len(), norms.iter().map(|&v| T::from_f64(v))), out_shape)
        })
    }

    fn matrix(&self, x: &Tensor, sum_axis: isize, max_axis: isize) -> Result<Tensor> {
        let both = normalize_dims("norm", &[sum_axis, max_axis], x.rank())?;
        let sums = forward::sum(&forward::unary(UnaryOp::Abs, x)?, Some(&[sum_axis]), true, false)?;
        let largest = forward::extreme(&sums, Some(&[max_axis]), true, true)?;
        if self.keepdim {
            return Ok(largest);
        }
        let out: Vec<isize> = reduced_shape(x.shape(), &both, false).iter().map(|&d| d as isize).collect();
        forward::reshape(&largest, &out)
    }
}

impl TableOp for Norm {
    const SPEC: Spec = Spec {
        name: "norm",
        torch_aliases: &[],
        tf: &["norm"],
        doc: "The p-norm over `dim` (all dims by default): 'fro' and 2 are Euclidean, 1 sums |x|, inf and -inf \
              are the largest and smallest |x|, 0 counts the nonzero elements, any other p is (Σ|x|^p)^(1/p). \
              TF1: `ord` 1 or inf over a two-element `axis` is a matrix norm.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "tensor", list: false }],
        params: NORM_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        let (p, dims, keepdim, tf) = (args.number_or_name(0)?, args.dims(1)?, args.flag(2)?, args.flag(3)?);
        let order = if tf { tf_order(&p, &dims)? } else { torch_order(&p, &dims)? };
        Ok(Norm { order, dims, keepdim })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "norm")?;
        match self.order {
            Order::Vector(p) => self.vector(x, p),
            Order::Matrix { sum_axis, max_axis } => self.matrix(x, sum_axis, max_axis),
        }
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, "norm")?;
        let out = crate::graph::infer::reduce("norm", shape, self.dims.as_deref(), self.keepdim)?;
        Ok((out, float_only("norm", dtype)?))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: true }
    }

    /// torch's rules: where the norm is 0 the 2-norm's (and every p > 1 norm's) gradient
    /// is 0, not 0/0; ties of the inf norms share the gradient evenly.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "norm")?;
        let grad = match self.order {
            Order::Vector(p) => self.vector_grad(d, p, x, a.output, a.grad)?,
            Order::Matrix { sum_axis, max_axis } => self.matrix_grad(d, sum_axis, max_axis, x, a.grad)?,
        };
        Ok(vec![Some(grad)])
    }
}

/// `v` where `test(v, 0)` fails, else 0.
fn zero_where<D: Differentiator>(d: &mut D, cmp: CmpOp, test: &D::Value, v: &D::Value) -> Result<D::Value> {
    let zeros = d.zeros_like(test)?;
    let hit = d.apply(Op::Compare(cmp), &[test, &zeros])?;
    let zeros_v = d.zeros_like(v)?;
    d.apply(Op::Where, &[&hit, &zeros_v, v])
}

impl Norm {
    /// `v`, shaped like the output, spread over `x`'s shape.
    fn spread<D: Differentiator>(&self, d: &mut D, v: &D::Value, x: &D::Value) -> Result<D::Value> {
        d.apply(Op::ExpandReduced { dims: self.dims.clone(), keepdim: self.keepdim, mean: false }, &[v, x])
    }

    fn vector_grad<D: Differentiator>(
        &self,
        d: &mut D,
        p: f64,
        x: &D::Value,
        out: &D::Value,
        g: &D::Value,
    ) -> Result<D::Value> {
        if p == 0.0 {
            return d.zeros_like(x);
        }
        let sign = d.unary(UnaryOp::Sign, x)?;
        if p == 1.0 {
            let spread = self.spread(d, g, x)?;
            return d.mul(&sign, &spread);
        }
        let abs = d.unary(UnaryOp::Abs, x)?;
        if p.is_infinite() {
            // The elements at the norm (and NaNs, which made it) share the gradient.
            let norm = self.spread(d, out, x)?;
            let hit = d.apply(Op::Compare(CmpOp::Eq), &[&abs, &norm])?;
            let nan = d.apply(Op::Compare(CmpOp::Ne), &[x, x])?;
            let ones = d.apply(Op::FullLike(1.0), &[x])?;
            let zeros = d.zeros_like(x)?;
            let at_norm = d.apply(Op::Where, &[&hit, &ones, &zeros])?;
            let picked = d.apply(Op::Where, &[&nan, &ones, &at_norm])?;
            let ties = d.apply(Op::Sum { dims: self.dims.clone(), keepdim: self.keepdim }, &[&picked])?;
            let share = d.div(g, &ties)?;
            let spread = self.spread(d, &share, x)?;
            let signed = d.mul(&sign, &spread)?;
            return d.mul(&signed, &picked);
        }
        if p < 1.0 {
            // sign(x) |x|^(p-1) (0 at x = 0) · g · norm^(1-p)
            let power = d.scalar(&abs, ScalarOp::Pow, p - 1.0)?;
            let slope = zero_where(d, CmpOp::Eq, x, &power)?;
            let signed = d.mul(&sign, &slope)?;
            let scale = d.scalar(out, ScalarOp::Pow, 1.0 - p)?;
            let scaled = d.mul(g, &scale)?;
            let spread = self.spread(d, &scaled, x)?;
            return d.mul(&signed, &spread);
        }
        // x |x|^(p-2) · g / norm^(p-1), 0 where the norm is 0 (p = 2: x · g / norm).
        let slope = if p == 2.0 {
            x.clone()
        } else if p < 2.0 {
            let power = d.scalar(&abs, ScalarOp::Pow, p - 1.0)?;
            d.mul(&sign, &power)?
        } else {
            let power = d.scalar(&abs, ScalarOp::Pow, p - 2.0)?;
            d.mul(x, &power)?
        };
        let denominator = if p == 2.0 { out.clone() } else { d.scalar(out, ScalarOp::Pow, p - 1.0)? };
        let ratio = d.div(g, &denominator)?;
        let safe = zero_where(d, CmpOp::Eq, out, &ratio)?;
        let spread = self.spread(d, &safe, x)?;
        d.mul(&slope, &spread)
    }

    /// max over `max_axis` of Σ_{sum_axis} |x|: the gradient reaches the largest sums'
    /// elements (shared among ties), signed.
    fn matrix_grad<D: Differentiator>(
        &self,
        d: &mut D,
        sum_axis: isize,
        max_axis: isize,
        x: &D::Value,
        g: &D::Value,
    ) -> Result<D::Value> {
        let abs = d.unary(UnaryOp::Abs, x)?;
        let sums = d.apply(Op::Sum { dims: Some(vec![sum_axis]), keepdim: true }, &[&abs])?;
        let largest = d.apply(Op::Extreme { largest: true, dims: Some(vec![max_axis]), keepdim: true }, &[&sums])?;
        let hit = d.apply(Op::Compare(CmpOp::Eq), &[&sums, &largest])?;
        let ones = d.apply(Op::FullLike(1.0), &[&sums])?;
        let zeros = d.zeros_like(&sums)?;
        let picked = d.apply(Op::Where, &[&hit, &ones, &zeros])?;
        let ties = d.apply(Op::Sum { dims: Some(vec![max_axis]), keepdim: true }, &[&picked])?;
        let share = d.apply(Op::Binary(BinaryOp::Div), &[&picked, &ties])?;
        let spread = self.spread(d, g, x)?;
        let sign = d.unary(UnaryOp::Sign, x)?;
        let signed = d.mul(&sign, &spread)?;
        d.mul(&signed, &share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> NumberOrName {
        NumberOrName::Name(s.into())
    }

    #[test]
    fn tf_reads_two_axes_as_a_matrix_norm() {
        let axes = Some(vec![0, 1]);
        assert_eq!(tf_order(&NumberOrName::Number(1.0), &axes).unwrap(), Order::Matrix { sum_axis: 0, max_axis: 1 });
        let inf = NumberOrName::Number(f64::INFINITY);
        assert_eq!(tf_order(&inf, &axes).unwrap(), Order::Matrix { sum_axis: 1, max_axis: 0 });
        assert_eq!(tf_order(&name("fro"), &axes).unwrap(), Order::Vector(2.0));
        assert!(tf_order(&name("fro"), &Some(vec![0])).is_err());
        assert!(tf_order(&NumberOrName::Number(-1.0), &None).is_err());
        assert!(tf_order(&name("euclidean"), &Some(vec![0, 1, 2])).is_err());
    }

    #[test]
    fn torch_reads_any_number_as_a_vector_norm() {
        let axes = Some(vec![0, 1]);
        assert_eq!(torch_order(&NumberOrName::Number(1.0), &axes).unwrap(), Order::Vector(1.0));
        assert_eq!(torch_order(&name("fro"), &None).unwrap(), Order::Vector(2.0));
        assert!(torch_order(&name("nuc"), &None).unwrap_err().to_string().contains("not supported"));
        assert!(torch_order(&name("euclidean"), &None).is_err());
    }

    #[test]
    fn vector_norms_match_their_definitions() {
        let x = [3.0f64, -4.0, 0.0];
        let norm = |p| vector_norms(&x, &[3], &[0], p)[0];
        assert_eq!(norm(2.0), 5.0);
        assert_eq!(norm(1.0), 7.0);
        assert_eq!(norm(f64::INFINITY), 4.0);
        assert_eq!(norm(f64::NEG_INFINITY), 0.0);
        assert_eq!(norm(0.0), 2.0);
        assert!((norm(3.0) - 91.0f64.powf(1.0 / 3.0)).abs() < 1e-12);
        assert!(vector_norms(&[1.0, f64::NAN], &[2], &[0], f64::INFINITY)[0].is_nan());
    }
}
