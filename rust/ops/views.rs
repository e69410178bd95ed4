//! Reordering views: `permute` (TF `transpose`), `movedim`, `swapaxes`, `expand` (TF
//! `broadcast_to`) and `expand_as`. Each output shares its input's storage, and each
//! gradient is read back at run time through ops that take the input as reference.

use super::layout::{meta, only};
use super::{Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, ONE_INPUT};
use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{fmt_shape, normalize_dim, normalize_dims};
use crate::tensor::Tensor;

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

/// The tensor and the reference tensor of the `_as` ops.
pub(super) const WITH_OTHER: &[Input] =
    &[Input { torch: "input", tf: "input", list: false }, Input { torch: "other", tf: "other", list: false }];

fn table<D: Differentiator>(d: &mut D, op: TableOps, input: &D::Value) -> Result<D::Value> {
    d.apply(Op::Table(op), &[input])
}

/// The view of `x` with its dims in the order `perm` (a permutation of `0..rank`).
fn permuted(x: &Tensor, perm: &[usize]) -> Result<Tensor> {
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let strides: Vec<isize> = perm.iter().map(|&p| x.strides()[p]).collect();
    x.view_as_layout(shape, strides, x.offset())
}

fn permuted_static(shape: &PartialShape, perm: &[usize]) -> PartialShape {
    shape.as_ref().map(|dims| perm.iter().map(|&p| dims[p]).collect())
}

// ---------------------------------------------------------------- permute

#[derive(Clone, Debug)]
pub struct Permute {
    /// None reverses the dims (TF's `perm=None`).
    dims: Option<Vec<isize>>,
}

impl Permute {
    fn perm(&self, rank: usize) -> Result<Vec<usize>> {
        let Some(dims) = &self.dims else { return Ok((0..rank).rev().collect()) };
        if dims.len() != rank {
            return shape_err(format!(
                "permute: the number of dims in the input ({rank}) does not match the length of the desired \
                 ordering of dims ({}): {dims:?}",
                dims.len()
            ));
        }
        let perm: Vec<usize> = dims.iter().map(|&d| normalize_dim("permute", d, rank)).collect::<Result<_>>()?;
        normalize_dims("permute", dims, rank)?; // refuses a dim named twice
        Ok(perm)
    }
}

impl TableOp for Permute {
    const SPEC: Spec = Spec {
        name: "permute",
        torch_aliases: &[],
        tf: &["transpose"],
        doc: "The dims in the order `dims` lists them, as a view; TF's `perm=None` reverses them.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "a", list: false }],
        params: &[Param {
            torch: "dims",
            tf: "perm",
            tf_aliases: &[],
            kind: Kind::Ints,
            torch_default: None,
            tf_default: Some("None"),
        }],
    };

    fn tf_type(&self) -> &'static str {
        "Transpose"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Permute { dims: args.dims(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "permute")?;
        permuted(x, &self.perm(x.rank())?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "permute")?;
        let rank = shape.as_ref().map(Vec::len).or(self.dims.as_ref().map(Vec::len));
        let Some(rank) = rank else { return Ok((None, dtype)) };
        let perm = self.perm(rank)?;
        Ok((permuted_static(shape, &perm).or(Some(vec![None; rank])), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let back = match &self.dims {
            None => None,
            Some(dims) => {
                let perm = self.perm(dims.len())?;
                let mut inverse = vec![0isize; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inverse[p] = i as isize;
                }
                Some(inverse)
            }
        };
        Ok(vec![Some(table(d, TableOps::Permute(Permute { dims: back }), a.grad)?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- movedim

#[derive(Clone, Debug)]
pub struct Movedim {
    source: Vec<isize>,
    destination: Vec<isize>,
}

impl Movedim {
    fn perm(&self, rank: usize) -> Result<Vec<usize>> {
        if self.source.len() != self.destination.len() {
            return shape_err(format!(
                "movedim: source {:?} and destination {:?} must name the same number of dims",
                self.source, self.destination
            ));
        }
        let src: Vec<usize> = self.source.iter().map(|&d| normalize_dim("movedim", d, rank)).collect::<Result<_>>()?;
        let dst: Vec<usize> =
            self.destination.iter().map(|&d| normalize_dim("movedim", d, rank)).collect::<Result<_>>()?;
        normalize_dims("movedim", &self.source, rank)?;
        normalize_dims("movedim", &self.destination, rank)?;
        let mut perm: Vec<Option<usize>> = vec![None; rank];
        for (&s, &d) in src.iter().zip(&dst) {
            perm[d] = Some(s);
        }
        let mut rest = (0..rank).filter(|i| !src.contains(i));
        Ok(perm.into_iter().map(|slot| slot.or_else(|| rest.next()).unwrap_or(0)).take(rank).collect())
    }
}

impl TableOp for Movedim {
    const SPEC: Spec = Spec {
        name: "movedim",
        torch_aliases: &["moveaxis"],
        tf: &[],
        doc: "The dims `source` moved to the places `destination`, the others keeping their order: a view.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[
            Param {
                torch: "source",
                tf: "source",
                tf_aliases: &[],
                kind: Kind::Ints,
                torch_default: None,
                tf_default: None,
            },
            Param {
                torch: "destination",
                tf: "destination",
                tf_aliases: &[],
                kind: Kind::Ints,
                torch_default: None,
                tf_default: None,
            },
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Movedim { source: args.required_ints(0, "source")?, destination: args.required_ints(1, "destination")? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "movedim")?;
        permuted(x, &self.perm(x.rank())?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "movedim")?;
        let Some(rank) = shape.as_ref().map(Vec::len) else { return Ok((None, dtype)) };
        Ok((permuted_static(shape, &self.perm(rank)?), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let back = Movedim { source: self.destination.clone(), destination: self.source.clone() };
        Ok(vec![Some(table(d, TableOps::Movedim(back), a.grad)?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- swapaxes

#[derive(Clone, Debug)]
pub struct Swapaxes {
    axis0: isize,
    axis1: isize,
}

impl TableOp for Swapaxes {
    const SPEC: Spec = Spec {
        name: "swapaxes",
        torch_aliases: &["swapdims"],
        tf: &[],
        doc: "The two dims swapped, as a view (`transpose(input, dim0, dim1)`).",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[
            Param {
                torch: "axis0",
                tf: "axis0",
                tf_aliases: &[],
                kind: Kind::Int,
                torch_default: None,
                tf_default: None,
            },
            Param {
                torch: "axis1",
                tf: "axis1",
                tf_aliases: &[],
                kind: Kind::Int,
                torch_default: None,
                tf_default: None,
            },
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Swapaxes { axis0: args.int(0)?, axis1: args.int(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::forward::transpose(only(inputs, "swapaxes")?, self.axis0, self.axis1)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "swapaxes")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        if dims.is_empty() {
            return Ok((Some(vec![]), dtype));
        }
        let (a, b) =
            (normalize_dim("swapaxes", self.axis0, dims.len())?, normalize_dim("swapaxes", self.axis1, dims.len())?);
        let mut out = dims.clone();
        out.swap(a, b);
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(table(d, TableOps::Swapaxes(self.clone()), a.grad)?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- expand

#[derive(Clone, Debug)]
pub struct Expand {
    size: Vec<isize>,
}

fn expand_error(size: &[isize], shape: &[usize], why: String) -> Error {
    Error::Shape(format!("expand: cannot expand a tensor of shape {} to {size:?}: {why}", fmt_shape(shape)))
}

impl Expand {
    /// The expanded shape and the strides that read `x` at it (0 along every expanded dim).
    fn layout(&self, shape: &[usize], strides: &[isize]) -> Result<(Vec<usize>, Vec<isize>)> {
        let size = &self.size;
        if size.len() < shape.len() {
            let why =
                format!("the number of sizes ({}) must be at least the number of dims ({})", size.len(), shape.len());
            return Err(expand_error(size, shape, why));
        }
        let lead = size.len() - shape.len();
        let mut out = Vec::with_capacity(size.len());
        let mut out_strides = Vec::with_capacity(size.len());
        for (i, &s) in size.iter().enumerate() {
            if i < lead {
                if s < 0 {
                    return Err(expand_error(
                        size,
                        shape,
                        format!("the size {s} is not allowed in a new leading dim {i}"),
                    ));
                }
                out.push(s as usize);
                out_strides.push(0);
                continue;
            }
            let (have, stride) = (shape[i - lead], strides[i - lead]);
            match s {
                -1 => out.push(have),
                s if s >= 0 && (have == 1 || s as usize == have) => out.push(s as usize),
                s => {
                    let why = format!(
                        "the expanded size ({s}) must match the existing size ({have}) at non-singleton dim {i}"
                    );
                    return Err(expand_error(size, shape, why));
                }
            }
            out_strides.push(if have == 1 && out[i] != 1 { 0 } else { stride });
        }
        crate::shape::checked_numel(&out)?;
        Ok((out, out_strides))
    }

    fn infer_shape(&self, shape: &PartialShape) -> Result<PartialShape> {
        let size = &self.size;
        let Some(dims) = shape else {
            return Ok(Some(size.iter().map(|&s| (s >= 0).then_some(s as usize)).collect()));
        };
        if size.len() < dims.len() {
            let known: Vec<usize> = dims.iter().map(|d| d.unwrap_or(0)).collect();
            return Err(expand_error(size, &known, format!("it has {} dims but {} sizes", dims.len(), size.len())));
        }
        let lead = size.len() - dims.len();
        let mut out = Vec::with_capacity(size.len());
        for (i, &s) in size.iter().enumerate() {
            let have = if i < lead { Some(1) } else { dims[i - lead] };
            out.push(match (s, have) {
                (-1, have) if i >= lead => have,
                (s, Some(h)) if s >= 0 && h != 1 && s as usize != h => {
                    return shape_err(format!(
                        "broadcast_to: cannot broadcast a tensor of shape {} to {size:?}: size {s} does not match {h} \
                         at dim {i}",
                        crate::graph::fmt_partial(shape)
                    ))
                }
                (s, _) if s >= 0 => Some(s as usize),
                (s, _) => return shape_err(format!("broadcast_to: the size {s} is not allowed at dim {i}")),
            });
        }
        Ok(Some(out))
    }
}

fn expanded(x: &Tensor, size: Vec<isize>) -> Result<Tensor> {
    let (shape, strides) = Expand { size }.layout(x.shape(), x.strides())?;
    x.view_as_layout(shape, strides, x.offset())
}

impl TableOp for Expand {
    const SPEC: Spec = Spec {
        name: "expand",
        torch_aliases: &["broadcast_to"],
        tf: &["broadcast_to"],
        doc: "The tensor repeated along dims of size 1 (and new leading dims) to `size`, as a view: no copy. \
              -1 keeps a dim's size.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }],
        params: &[Param {
            torch: "size",
            tf: "shape",
            tf_aliases: &[],
            kind: Kind::Ints,
            torch_default: None,
            tf_default: None,
        }],
    };

    fn tf_type(&self) -> &'static str {
        "BroadcastTo"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Expand { size: args.required_ints(0, "size")? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        expanded(only(inputs, "expand")?, self.size.clone())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "expand")?;
        Ok((self.infer_shape(shape)?, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = super::nth(a.inputs, 0, "expand")?;
        Ok(vec![Some(d.apply(Op::SumToLike, &[a.grad, x])?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

fn sizes_of(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// `expand_as(input, other)`: `input` expanded to `other`'s shape.
#[derive(Clone, Debug)]
pub struct ExpandAs;

impl TableOp for ExpandAs {
    const SPEC: Spec = Spec {
        name: "expand_as",
        torch_aliases: &[],
        tf: &[],
        doc: "The tensor expanded to `other`'s shape, as a view (`expand(other.size())`).",
        differentiable: true,
        inputs: WITH_OTHER,
        params: &[],
    };

    fn build(_args: &Args) -> Result<Self> {
        Ok(ExpandAs)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let other = *super::nth(inputs, 1, "expand_as")?;
        expanded(only(inputs, "expand_as")?, sizes_of(other.shape()))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((shape, dtype), (other, _)) = (meta(inputs, 0, "expand_as")?, meta(inputs, 1, "expand_as")?);
        if let Some(target) = other.as_ref().filter(|t| t.iter().all(Option::is_some)) {
            let size = target.iter().map(|d| d.map_or(-1, |v| v as isize)).collect();
            Expand { size }.infer_shape(shape)?;
        }
        Ok((other.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = super::nth(a.inputs, 0, "expand_as")?;
        Ok(vec![Some(d.apply(Op::SumToLike, &[a.grad, x])?), None])
    }

    fn is_view(&self) -> bool {
        true
    }
}
