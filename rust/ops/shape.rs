//! Joining tensors: `cat` (TF `concat`) and `stack` (TF `stack`).

use super::{internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps};
use crate::dtype::DType;
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::{IndexItem, Op};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{fmt_shape, normalize_dim};
use crate::storage::Element;
use crate::tensor::Tensor;

/// Joins tensors along an existing dim.
#[derive(Clone, Debug)]
pub struct Cat {
    dim: isize,
}

/// torch skips 1-D empty tensors in `cat` whatever the others' shapes (a legacy rule programs rely on).
fn skipped(shape: &[usize]) -> bool {
    shape == [0]
}

impl Cat {
    /// The joined shape, or torch's error naming the first tensor that does not fit.
    fn joined_shape(&self, shapes: &[&[usize]]) -> Result<(Vec<usize>, usize)> {
        let Some(first) = shapes.iter().find(|s| !skipped(s)) else {
            return Ok((vec![0], 0));
        };
        if first.is_empty() {
            return shape_err("cat: zero-dimensional tensor cannot be concatenated; unsqueeze it first".to_string());
        }
        let dim = normalize_dim("cat", self.dim, first.len())?;
        let mut out = first.to_vec();
        out[dim] = 0;
        for (i, shape) in shapes.iter().enumerate().filter(|(_, s)| !skipped(s)) {
            let fits = shape.len() == first.len()
                && shape.iter().zip(*first).enumerate().all(|(d, (a, b))| d == dim || a == b);
            if !fits {
                return shape_err(format!(
                    "cat: Sizes of tensors must match except in dimension {dim}. Expected {} but got tensor {i} of \
                     shape {}",
                    fmt_shape(first),
                    fmt_shape(shape)
                ));
            }
            out[dim] += shape[dim];
        }
        Ok((out, dim))
    }
}

/// `cat(parts, dim)`, for the ops built from it.
pub fn cat(parts: &[&Tensor], dim: isize) -> Result<Tensor> {
    Cat { dim }.forward(parts)
}

/// Copies each part's `(outer, n_i, inner)` block into its place along the middle axis of the output,
/// straight from the part's memory (a non-contiguous part is gathered once).
fn join<T: Element>(parts: &[&Tensor], outer: usize, inner: usize, dim: usize, out_shape: &[usize]) -> Result<Tensor> {
    let total: usize = out_shape.iter().product();
    let out_row = out_shape[dim] * inner;
    let mut out: Vec<T> = crate::storage::vec_with_capacity(total);
    let slots = &mut out.spare_capacity_mut()[..total];
    let mut start = 0;
    for part in parts {
        let row = part.shape()[dim] * inner;
        part.with_contiguous(|data: &[T]| {
            // invariant: a part has the output's shape except along `dim` (joined_shape checked it).
            assert_eq!(data.len(), outer * row, "cat: a part of the wrong size");
            for (o, src) in data.chunks_exact(row.max(1)).take(outer).enumerate() {
                let at = o * out_row + start;
                crate::kernels::layout::copy_into(&mut slots[at..at + row], src);
            }
        })?;
        start += row;
    }
    // invariant: the parts' rows tile each output row (joined_shape summed them), so every slot was written.
    assert_eq!(start, out_row, "cat: the parts do not fill the output");
    // SAFETY: the loop above wrote all `total` slots: each part held `outer` rows of `row` (asserted),
    // and for each output row the parts' pieces at offsets 0, row_0, row_0 + row_1, ... cover `out_row`
    // (asserted).
    unsafe { out.set_len(total) };
    Tensor::from_vec(out, out_shape)
}

impl TableOp for Cat {
    const SPEC: Spec = Spec {
        name: "cat",
        torch_aliases: &["concat", "concatenate"],
        tf: &["concat"],
        doc: "Joins tensors along `dim`; all have the same shape except in that dim.",
        differentiable: true,
        inputs: &[Input { torch: "tensors", tf: "values", list: true }],
        params: &[Param {
            torch: "dim",
            tf: "axis",
            tf_aliases: &[],
            kind: Kind::Int,
            torch_default: Some("0"),
            tf_default: None,
        }],
    };

    fn tf_type(&self) -> &'static str {
        "ConcatV2"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Cat { dim: args.int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let first = *nth(inputs, 0, "cat")
            .map_err(|_| Error::InvalidArgument("cat: expected a non-empty list of tensors".into()))?;
        let mut dtype = first.dtype();
        for t in &inputs[1..] {
            dtype = crate::dtype::result_type(&[
                crate::dtype::Participant::tensor(dtype, 1),
                crate::dtype::Participant::tensor(t.dtype(), 1),
            ]);
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let (out_shape, dim) = self.joined_shape(&shapes)?;
        let parts: Vec<Tensor> = inputs
            .iter()
            .filter(|t| !skipped(t.shape()) || out_shape == [0])
            .map(|t| crate::forward::as_dtype(t, dtype))
            .collect::<Result<_>>()?;
        let parts: Vec<&Tensor> = parts.iter().collect();
        let outer = out_shape[..dim].iter().product();
        let inner = out_shape[dim + 1..].iter().product();
        crate::dtype::dispatch!(dtype, |T| join::<T>(&parts, outer, inner, dim, &out_shape))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (first_shape, dtype) = *nth(inputs, 0, "concat")?;
        for (i, (_, other)) in inputs.iter().enumerate() {
            if *other != dtype {
                return dtype_err(format!(
                    "ConcatV2: values[{i}] has dtype {} but values[0] has dtype {}; cast one with tf.cast",
                    other.name(),
                    dtype.name()
                ));
            }
        }
        let Some(rank) = inputs.iter().find_map(|(s, _)| s.as_ref().map(Vec::len)) else { return Ok((None, dtype)) };
        let _ = first_shape;
        let dim = normalize_dim("concat", self.dim, rank)?;
        let mut out: Vec<Option<usize>> = vec![None; rank];
        out[dim] = Some(0);
        for (i, (shape, _)) in inputs.iter().enumerate() {
            let Some(dims) = shape else {
                out[dim] = None;
                continue;
            };
            if dims.len() != rank {
                return shape_err(format!(
                    "ConcatV2: Shape must be rank {rank} but is rank {} for values[{i}]",
                    dims.len()
                ));
            }
            for (d, (slot, size)) in out.iter_mut().zip(dims).enumerate() {
                if d == dim {
                    *slot = slot.zip(*size).map(|(a, b)| a + b);
                } else {
                    match (*slot, size) {
                        (Some(a), Some(b)) if a != *b => {
                            return shape_err(format!(
                                "ConcatV2: Dimension {d} in both shapes must be equal, but are {a} and {b} \
                                 (values[{i}])"
                            ))
                        }
                        (None, known) => *slot = *known,
                        _ => {}
                    }
                }
            }
        }
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only each input's shape is read, which the tape keeps anyway.
        Saves { inputs: 0, output: false }
    }

    /// Each input's gradient is its slice of `g` along the joined dim, cut when the
    /// sizes are known (at run time, in a static graph).
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let mut operands: Vec<&D::Value> = vec![a.grad];
        operands.extend(a.inputs.iter());
        (0..a.inputs.len())
            .map(|part| {
                if !a.needs.get(part).copied().unwrap_or(false) {
                    return Ok(None);
                }
                let slice = CatGrad { dim: self.dim, part };
                d.apply(Op::Table(TableOps::CatGrad(slice)), &operands).map(Some)
            })
            .collect()
    }
}

/// `(g, x_0, x_1, ...)`: the slice of `cat`'s output gradient `g` that belongs to `x_part`.
#[derive(Clone, Debug)]
pub struct CatGrad {
    dim: isize,
    part: usize,
}

impl TableOp for CatGrad {
    const SPEC: Spec = internal("cat_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("cat_backward is built by cat's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let g = *nth(inputs, 0, "cat_backward")?;
        let parts = &inputs[1..];
        let shapes: Vec<&[usize]> = parts.iter().map(|t| t.shape()).collect();
        let (_, dim) = Cat { dim: self.dim }.joined_shape(&shapes)?;
        let this = *nth(parts, self.part, "cat_backward")?;
        if skipped(this.shape()) && parts.len() > 1 {
            return Tensor::zeros(&[0], g.dtype());
        }
        let start: usize = parts[..self.part].iter().filter(|t| !skipped(t.shape())).map(|t| t.shape()[dim]).sum();
        let stop = start + this.shape()[dim];
        let mut items = vec![IndexItem::Slice { start: None, stop: None, step: 1 }; dim];
        items.push(IndexItem::Slice { start: Some(start as isize), stop: Some(stop as isize), step: 1 });
        crate::forward::index(g, &items)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "cat_backward")?;
        let (shape, _) = *nth(inputs, self.part + 1, "cat_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    /// Linear in g: the adjoint puts `gg` back at this part's place among zeros of the
    /// other parts' shapes (which are read for their shape only).
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let parts = a.inputs.get(1..).unwrap_or(&[]);
        let mut none = vec![None; a.inputs.len()];
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(none);
        }
        let mut pieces = Vec::with_capacity(parts.len());
        for (j, x) in parts.iter().enumerate() {
            pieces.push(if j == self.part { a.grad.clone() } else { d.zeros_like(x)? });
        }
        let refs: Vec<&D::Value> = pieces.iter().collect();
        none[0] = Some(d.apply(Op::Table(TableOps::Cat(Cat { dim: self.dim })), &refs)?);
        Ok(none)
    }
}

// ---------------------------------------------------------------- stack

/// Joins tensors of one shape along a new dim.
#[derive(Clone, Debug)]
pub struct Stack {
    dim: isize,
}

impl TableOp for Stack {
    const SPEC: Spec = Spec {
        name: "stack",
        torch_aliases: &[],
        tf: &["stack"],
        doc: "Joins tensors of the same shape along a new dim `dim`.",
        differentiable: true,
        inputs: &[Input { torch: "tensors", tf: "values", list: true }],
        params: &[Param {
            torch: "dim",
            tf: "axis",
            tf_aliases: &[],
            kind: Kind::Int,
            torch_default: Some("0"),
            tf_default: Some("0"),
        }],
    };

    fn tf_type(&self) -> &'static str {
        "Pack"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Stack { dim: args.int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let first = *nth(inputs, 0, "stack")
            .map_err(|_| Error::InvalidArgument("stack: expected a non-empty list of tensors".into()))?;
        if let Some((i, other)) = inputs.iter().enumerate().find(|(_, t)| t.shape() != first.shape()) {
            return shape_err(format!(
                "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
                fmt_shape(first.shape()),
                fmt_shape(other.shape())
            ));
        }
        let dim = normalize_dim("stack", self.dim, first.rank() + 1)?;
        let mut shape = first.shape().to_vec();
        shape.insert(dim, 1);
        let parts: Vec<Tensor> = inputs.iter().map(|t| super::layout::reshaped(t, &shape)).collect::<Result<_>>()?;
        cat(&parts.iter().collect::<Vec<_>>(), dim as isize)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "stack")?;
        let mut merged: PartialShape = None;
        for (i, (shape, other)) in inputs.iter().enumerate() {
            if *other != dtype {
                return dtype_err(format!(
                    "Pack: values[{i}] has dtype {} but values[0] has dtype {}; cast one with tf.cast",
                    other.name(),
                    dtype.name()
                ));
            }
            merged = merge_shapes(&merged, shape, i)?;
        }
        let Some(mut dims) = merged else { return Ok((None, dtype)) };
        let dim = normalize_dim("stack", self.dim, dims.len() + 1)?;
        dims.insert(dim, Some(inputs.len()));
        Ok((Some(dims), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    /// Each input's gradient is its slice of `g` along the new dim.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        (0..a.inputs.len())
            .map(|part| {
                if !a.needs.get(part).copied().unwrap_or(false) {
                    return Ok(None);
                }
                let slice = super::slicing::Select::new(self.dim, part as isize);
                d.apply(Op::Table(TableOps::Select(slice)), &[a.grad]).map(Some)
            })
            .collect()
    }
}

/// What two partial shapes that must be equal say together (TF's error when they certainly differ).
fn merge_shapes(a: &PartialShape, b: &PartialShape, index: usize) -> Result<PartialShape> {
    let (Some(x), Some(y)) = (a, b) else { return Ok(a.clone().or_else(|| b.clone())) };
    if x.len() != y.len() {
        return shape_err(format!(
            "stack: Shapes must be equal rank, but are {} and {} (values[{index}])",
            x.len(),
            y.len()
        ));
    }
    x.iter()
        .zip(y)
        .enumerate()
        .map(|(d, (p, q))| match (p, q) {
            (Some(p), Some(q)) if p != q => shape_err(format!(
                "stack: Dimension {d} in both shapes must be equal, but are {p} and {q} (values[{index}])"
            )),
            _ => Ok(p.or(*q)),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}
