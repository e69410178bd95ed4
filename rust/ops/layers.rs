//! Layers as ops: `linear` (a product with its bias added in place) and `embedding` (rows
//! of a weight picked by index), with the internal gradient ops their rules emit.

use super::binary::same_float_dtype;
use super::{internal, nth, Args, Input, Kind, Meta, Param, Role, Spec, TableOp, TableOps, TorchFront};
use crate::dtype::{float_dispatch, DType};
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::{fmt_partial, PartialShape};
use crate::kernels::elementwise::CmpOp;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::storage::Element;
use crate::tensor::Tensor;

// ---------------------------------------------------------------- linear

#[derive(Clone, Debug)]
pub struct Linear;

/// `x` as a matrix of its rows: `[prod(leading), last]` (a view when `x` is contiguous).
fn as_rows(x: &Tensor) -> Result<Tensor> {
    let (rows, last) = match x.shape().split_last() {
        Some((last, lead)) => (lead.iter().product::<usize>(), *last),
        None => (1, 1),
    };
    forward::reshape(x, &[rows as isize, last as isize])
}

fn check_linear(x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<()> {
    let fits = !x.is_empty() && w.len() == 2 && x[x.len() - 1] == w[1];
    if !fits {
        return Err(Error::Shape(format!(
            "linear: mat1 and mat2 shapes cannot be multiplied: input of shape {} and weight of shape {} (weight \
             must be [out_features, in_features] with in_features the input's last dim)",
            fmt_shape(x),
            fmt_shape(w)
        )));
    }
    if let Some(b) = b {
        if b != [w[0]] && !b.is_empty() {
            return Err(Error::Shape(format!(
                "linear: bias of shape {} does not fit a weight of shape {}: expected [{}]",
                fmt_shape(b),
                fmt_shape(w),
                w[0]
            )));
        }
    }
    Ok(())
}

/// Adds the `bias` row (or one number) to each row of `out`, in its own memory.
fn add_bias_in_place(out: &Tensor, bias: &Tensor) -> Result<()> {
    float_dispatch!(out.dtype(), "linear", |T| {
        let row: Vec<T> = bias.to_vec()?;
        let mut guard = out.storage().write();
        let values = T::slice_mut(&mut guard)
            .and_then(|all| all.get_mut(..out.numel()))
            .ok_or_else(|| Error::Internal("linear: the product's storage does not fit its shape".into()))?;
        let width = out.shape().last().copied().unwrap_or(1).max(1);
        let row: Vec<T> = if row.len() == 1 { vec![row[0]; width] } else { row };
        for chunk in values.chunks_mut(width) {
            for (v, &b) in chunk.iter_mut().zip(&row) {
                *v += b;
            }
        }
        Ok(())
    })
}

impl TableOp for Linear {
    const SPEC: Spec = Spec {
        name: "linear",
        torch_aliases: &[],
        tf: &[],
        doc: "`input @ weight.T + bias`, over any leading dims of `input`; the bias is added as the product is \
              stored.",
        differentiable: true,
        inputs: &[
            Input { torch: "input", tf: "x", list: false },
            Input { torch: "weight", tf: "weight", list: false },
            Input { torch: "bias", tf: "bias", list: false },
        ],
        params: &[],
    };
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTIONAL;

    fn build(_args: &Args) -> Result<Self> {
        Ok(Linear)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, w, b) = (*nth(inputs, 0, "linear")?, *nth(inputs, 1, "linear")?, *nth(inputs, 2, "linear")?);
        check_linear(x.shape(), w.shape(), Some(b.shape()))?;
        if !x.dtype().is_float() {
            return dtype_err(format!("linear: expected float tensors, got {}", x.dtype().name()));
        }
        let product = forward::matmul2d(&as_rows(x)?, w, false, true)?;
        add_bias_in_place(&product, b)?;
        let mut shape: Vec<isize> = x.shape()[..x.rank() - 1].iter().map(|&d| d as isize).collect();
        shape.push(w.shape()[0] as isize);
        forward::reshape(&product, &shape)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let dtype = same_float_dtype(&Self::SPEC, inputs)?;
        let (x, w) = (&nth(inputs, 0, "linear")?.0, &nth(inputs, 1, "linear")?.0);
        let (Some(x), Some(w)) = (x, w) else { return Ok((None, dtype)) };
        if w.len() != 2 || x.is_empty() {
            return Err(Error::Shape(format!(
                "linear: input of shape {} and weight of shape {} do not fit (weight must be 2-D)",
                fmt_partial(&Some(x.clone())),
                fmt_partial(&Some(w.clone()))
            )));
        }
        let mut out = x[..x.len() - 1].to_vec();
        out.push(w[0]);
        Ok((Some(out), dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        Saves { inputs: (need(1) as u32) | ((need(0) as u32) << 1), output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let (x, w, b) = (nth(a.inputs, 0, "linear")?, nth(a.inputs, 1, "linear")?, nth(a.inputs, 2, "linear")?);
        let g = a.grad;
        let part = |d: &mut D, part: LinearPart| {
            d.apply(Op::Table(TableOps::LinearBackward(LinearBackward { part })), &[g, x, w])
        };
        let gx = if need(0) { Some(part(&mut *d, LinearPart::Input)?) } else { None };
        let gw = if need(1) { Some(part(&mut *d, LinearPart::Weight)?) } else { None };
        let gb = if need(2) { Some(d.apply(Op::SumToLike, &[g, b])?) } else { None };
        Ok(vec![gx, gw, gb])
    }
}

/// Which gradient a `linear_backward` computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinearPart {
    /// `g @ weight`, in the input's shape.
    Input,
    /// `g.T @ x` over all the rows of the leading dims, one product.
    Weight,
}

/// `linear`'s input or weight gradient, from `g`, `x` and `weight`.
#[derive(Clone, Debug)]
pub struct LinearBackward {
    part: LinearPart,
}

impl TableOp for LinearBackward {
    const SPEC: Spec = internal(
        "linear_backward",
        &[
            Input { torch: "grad", tf: "grad", list: false },
            Input { torch: "input", tf: "x", list: false },
            Input { torch: "weight", tf: "weight", list: false },
        ],
    );

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("linear_backward is emitted by derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = "linear_backward";
        let (g, x, w) = (*nth(inputs, 0, op)?, *nth(inputs, 1, op)?, *nth(inputs, 2, op)?);
        let g = as_rows(&forward::as_dtype(g, x.dtype())?)?;
        match self.part {
            LinearPart::Input => {
                let rows = forward::matmul2d(&g, w, false, false)?;
                let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
                forward::reshape(&rows, &shape)
            }
            LinearPart::Weight => forward::matmul2d(&g, &as_rows(x)?, true, false),
        }
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "linear_backward")?;
        let like = if self.part == LinearPart::Input { 1 } else { 2 };
        Ok((nth(inputs, like, "linear_backward")?.0.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b111, output: false }
    }

    /// Bilinear in (g, the other operand); the remaining operand is read for its shape only.
    /// Input part `g·W`: d/dg = `gg·Wᵀ` (a bias-free `linear`), d/dW = `gᵀ·gg` (the weight
    /// part with `gg` as input). Weight part `gᵀ·X`: d/dg = `X·ggᵀ`, d/dX = `g·gg`.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let op = "linear_backward";
        let (g, x, w) = (nth(a.inputs, 0, op)?, nth(a.inputs, 1, op)?, nth(a.inputs, 2, op)?);
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let gg = a.grad;
        let backward = |d: &mut D, part: LinearPart, operands: [&D::Value; 3]| {
            d.apply(Op::Table(TableOps::LinearBackward(LinearBackward { part })), &operands)
        };
        Ok(match self.part {
            LinearPart::Input => vec![
                if need(0) { Some(product_with_transpose(d, gg, w)?) } else { None },
                None,
                if need(2) { Some(backward(d, LinearPart::Weight, [g, gg, w])?) } else { None },
            ],
            LinearPart::Weight => vec![
                if need(0) { Some(product_with_transpose(d, x, gg)?) } else { None },
                if need(1) { Some(backward(d, LinearPart::Input, [g, x, gg])?) } else { None },
                None,
            ],
        })
    }
}

/// `x·wᵀ` over any leading dims of `x`: `linear` with a zero bias.
fn product_with_transpose<D: Differentiator>(d: &mut D, x: &D::Value, w: &D::Value) -> Result<D::Value> {
    let zeros = d.zeros_like(w)?;
    let zero = d.apply(Op::Sum { dims: None, keepdim: false }, &[&zeros])?;
    d.apply(Op::Table(TableOps::Linear(Linear)), &[x, w, &zero])
}

// ---------------------------------------------------------------- embedding

/// The indices as int64, each checked against `rows`.
fn rows_of(op: &str, index: &Tensor, rows: usize) -> Result<Vec<usize>> {
    let values: Vec<i64> = match index.dtype() {
        DType::I64 => index.to_vec::<i64>()?,
        DType::I32 => index.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
        other => {
            return dtype_err(format!(
                "{op}: Expected tensor for argument #1 'indices' to have one of the following scalar types: int64, \
                 int32; but got {} instead",
                other.name()
            ))
        }
    };
    values
        .into_iter()
        .map(|i| {
            usize::try_from(i).ok().filter(|&r| r < rows).ok_or_else(|| {
                Error::Index(format!(
                    "{op}: index {i} is out of range for a weight of {rows} rows (valid: 0 to {})",
                    rows as i64 - 1
                ))
            })
        })
        .collect()
}

fn copy_rows<T: Element>(weight: &[T], picks: &[usize], width: usize) -> Vec<T> {
    let mut out = crate::storage::vec_with_capacity(picks.len() * width);
    for &r in picks {
        out.extend_from_slice(&weight[r * width..(r + 1) * width]);
    }
    out
}

#[derive(Clone, Debug)]
pub struct Embedding {
    padding_idx: Option<isize>,
}

impl Embedding {
    /// `padding_idx` as a row, checked against the weight's rows (negative counts from the end).
    fn padding_row(&self, rows: usize) -> Result<Option<usize>> {
        let Some(p) = self.padding_idx else { return Ok(None) };
        let row = if p < 0 { p + rows as isize } else { p };
        if row < 0 || row as usize >= rows {
            return Err(Error::InvalidArgument(format!(
                "embedding: padding_idx {p} must be within num_embeddings ({rows}): in [-{rows}, {rows})"
            )));
        }
        Ok(Some(row as usize))
    }
}

fn check_weight(op: &str, w: &[usize]) -> Result<(usize, usize)> {
    match w {
        [rows, width] => Ok((*rows, *width)),
        _ => Err(Error::Shape(format!(
            "{op}: weight must be 2-D ([num_embeddings, embedding_dim]), got shape {}",
            fmt_shape(w)
        ))),
    }
}

impl TableOp for Embedding {
    const SPEC: Spec = Spec {
        name: "embedding",
        torch_aliases: &[],
        tf: &[],
        doc: "The rows of `weight` at the indices `input`: shape `input.shape + [embedding_dim]`; the row at \
              `padding_idx` gets no gradient.",
        differentiable: true,
        inputs: &[
            Input { torch: "input", tf: "ids", list: false },
            Input { torch: "weight", tf: "params", list: false },
        ],
        params: &[Param {
            torch: "padding_idx",
            tf: "padding_idx",
            tf_aliases: &[],
            kind: Kind::OptInt,
            torch_default: Some("None"),
            tf_default: Some("None"),
        }],
    };
    const ROLES: &'static [Role] = &[Role::Index, Role::Data];
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTIONAL;

    fn build(args: &Args) -> Result<Self> {
        Ok(Embedding { padding_idx: args.opt_int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (index, w) = (*nth(inputs, 0, "embedding")?, *nth(inputs, 1, "embedding")?);
        let (rows, width) = check_weight("embedding", w.shape())?;
        self.padding_row(rows)?;
        let picks = rows_of("embedding", index, rows)?;
        let mut shape = index.shape().to_vec();
        shape.push(width);
        crate::dtype::dispatch!(w.dtype(), |T| {
            let out = w.with_contiguous(|ws: &[T]| copy_rows(ws, &picks, width))?;
            Tensor::from_vec(out, shape)
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((index, index_dtype), (w, dtype)) = (*nth(inputs, 0, "embedding")?, *nth(inputs, 1, "embedding")?);
        if !matches!(index_dtype, DType::I64 | DType::I32) {
            return dtype_err(format!("embedding: ids must be int32 or int64, got {}", index_dtype.name()));
        }
        if let Some(w) = w {
            if w.len() != 2 {
                return Err(Error::Shape(format!(
                    "embedding: params must be 2-D, got shape {}",
                    fmt_partial(&Some(w.clone()))
                )));
            }
        }
        let out = match (index, w) {
            (Some(i), Some(w)) => Some(i.iter().copied().chain([w[1]]).collect()),
            _ => None,
        };
        Ok((out, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b11, output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.get(1).copied().unwrap_or(false) {
            return Ok(vec![None, None]);
        }
        let (index, w) = (nth(a.inputs, 0, "embedding")?, nth(a.inputs, 1, "embedding")?);
        let back = EmbeddingBackward { padding_idx: self.padding_idx };
        Ok(vec![None, Some(d.apply(Op::Table(TableOps::EmbeddingBackward(back)), &[a.grad, index, w])?)])
    }
}

/// `embedding`'s weight gradient: each row of `g` added into the weight row its index names
/// (zeros elsewhere, and at `padding_idx`).
#[derive(Clone, Debug)]
pub struct EmbeddingBackward {
    padding_idx: Option<isize>,
}

impl TableOp for EmbeddingBackward {
    const SPEC: Spec = internal(
        "embedding_backward",
        &[
            Input { torch: "grad", tf: "grad", list: false },
            Input { torch: "input", tf: "ids", list: false },
            Input { torch: "weight", tf: "params", list: false },
        ],
    );
    const ROLES: &'static [Role] = &[Role::Data, Role::Index, Role::Data];

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("embedding_backward is emitted by derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = "embedding_backward";
        let (g, index, w) = (*nth(inputs, 0, op)?, *nth(inputs, 1, op)?, *nth(inputs, 2, op)?);
        let (rows, width) = check_weight(op, w.shape())?;
        let skip = Embedding { padding_idx: self.padding_idx }.padding_row(rows)?;
        let picks = rows_of(op, index, rows)?;
        let g = forward::as_dtype(g, w.dtype())?;
        float_dispatch!(w.dtype(), op, |T| {
            let mut out: Vec<T> = crate::storage::zeroed_vec(rows * width);
            g.with_contiguous(|gs: &[T]| {
                for (k, &r) in picks.iter().enumerate() {
                    if Some(r) == skip {
                        continue;
                    }
                    for (o, &v) in out[r * width..(r + 1) * width].iter_mut().zip(&gs[k * width..(k + 1) * width]) {
                        *o += v;
                    }
                }
            })?;
            Tensor::from_vec(out, w.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (w, dtype) = *nth(inputs, 2, "embedding_backward")?;
        Ok((w.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b111, output: false }
    }

    /// Linear in g: the adjoint of adding rows of g into the weight is picking rows of gg.
    /// With a `padding_idx`, whose row takes nothing, the picks of that row are zeros.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(vec![None, None, None]);
        }
        let (index, w) = (nth(a.inputs, 1, "embedding_backward")?, nth(a.inputs, 2, "embedding_backward")?);
        let pick = Op::Table(TableOps::Embedding(Embedding { padding_idx: None }));
        let gg = match self.padding_idx {
            None => a.grad.clone(),
            Some(_) => {
                // This op applied to ones counts the picks of each row, 0 at the padding row:
                // gg is kept on the rows counted (the only ones picked, but the padding one).
                let ones = d.apply(Op::FullLike(1.0), &[w])?;
                let picked_ones = d.apply(pick.clone(), &[index, &ones])?;
                let counts =
                    d.apply(Op::Table(TableOps::EmbeddingBackward(self.clone())), &[&picked_ones, index, w])?;
                let zeros = d.zeros_like(w)?;
                let counted = d.apply(Op::Compare(CmpOp::Gt), &[&counts, &zeros])?;
                d.apply(Op::Where, &[&counted, a.grad, &zeros])?
            }
        };
        Ok(vec![Some(d.apply(pick, &[index, &gg])?), None, None])
    }
}
