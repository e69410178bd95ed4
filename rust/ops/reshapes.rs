//! Reshaping views: `squeeze`, `unsqueeze` (TF `expand_dims`), `flatten`, `unflatten`,
//! `view_as` and `reshape_as`. Each output shares its input's storage unless the strides
//! cannot express the new shape (then it is a copy), and each gradient is laid back out
//! as the input at run time (`ReshapeLike`), so unknown static dims are no obstacle.

use super::layout::{meta, only, product, reshaped, static_dim};
use super::views::WITH_OTHER;
use super::{Args, Input, Kind, Meta, Param, Spec, TableOp, ONE_INPUT, TF_SEMANTICS};
use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{fmt_shape, normalize_dim, normalize_dims, Shape, Strides};
use crate::tensor::Tensor;

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

/// The gradient of a reshape: `g` laid out as the input `x` (read at run time).
fn reshape_back<D: Differentiator>(d: &mut D, a: &RuleArgs<'_, D::Value>) -> Result<Option<D::Value>> {
    let x = super::nth(a.inputs, 0, "reshape")?;
    d.apply(Op::ReshapeLike, &[a.grad, x]).map(Some)
}

// ---------------------------------------------------------------- squeeze / unsqueeze

#[derive(Clone, Debug)]
pub struct Squeeze {
    dims: Option<Vec<isize>>,
    /// TF's rule: a named dim that is not 1 is an error (torch leaves it).
    strict: bool,
}

impl Squeeze {
    /// Which dims go, given their sizes; None when that depends on a size unknown at build time.
    fn removed(&self, sizes: &[Option<usize>]) -> Result<Option<Vec<bool>>> {
        let rank = sizes.len();
        let Some(dims) = &self.dims else {
            return Ok(sizes.iter().map(|s| s.map(|n| n == 1)).collect());
        };
        let named = normalize_dims("squeeze", dims, rank)?;
        let mut out = vec![false; rank];
        if rank == 0 {
            return Ok(Some(out));
        }
        for d in named {
            out[d] = match sizes[d] {
                Some(1) => true,
                Some(n) if self.strict => {
                    return Err(Error::InvalidArgument(format!(
                        "squeeze: Can not squeeze dim[{d}], expected a dimension of 1, got {n}"
                    )))
                }
                Some(_) => false,
                None if self.strict => true,
                None => return Ok(None),
            };
        }
        Ok(Some(out))
    }
}

impl TableOp for Squeeze {
    const SPEC: Spec = Spec {
        name: "squeeze",
        torch_aliases: &[],
        tf: &["squeeze"],
        doc: "The dims of size 1 removed (only those of `dim` when given), as a view. TF1 refuses to squeeze a \
              named dim that is not 1; torch leaves it.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }],
        params: &[
            Param {
                torch: "dim",
                tf: "axis",
                tf_aliases: &["squeeze_dims"],
                kind: Kind::OptDims,
                torch_default: Some("None"),
                tf_default: Some("None"),
            },
            TF_SEMANTICS,
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Squeeze { dims: args.dims(0)?, strict: args.flag(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "squeeze")?;
        let sizes: Vec<Option<usize>> = x.shape().iter().map(|&s| Some(s)).collect();
        // invariant: every size is known here, so which dims go is known.
        let removed = self.removed(&sizes)?.unwrap_or_default();
        let kept = |i: &usize| !removed.get(*i).copied().unwrap_or(false);
        let shape: Vec<usize> = (0..x.rank()).filter(kept).map(|i| x.shape()[i]).collect();
        let strides: Vec<isize> = (0..x.rank()).filter(kept).map(|i| x.strides()[i]).collect();
        x.view_as_layout(shape, strides, x.offset())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "squeeze")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        let Some(removed) = self.removed(dims)? else { return Ok((None, dtype)) };
        Ok((Some(dims.iter().zip(&removed).filter(|(_, r)| !**r).map(|(d, _)| *d).collect()), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![reshape_back(d, &a)?])
    }

    fn is_view(&self) -> bool {
        true
    }
}

#[derive(Clone, Debug)]
pub struct Unsqueeze {
    dim: isize,
}

impl Unsqueeze {
    /// `unsqueeze(dim)`, for rules that emit it.
    pub fn new(dim: isize) -> Unsqueeze {
        Unsqueeze { dim }
    }
}

impl TableOp for Unsqueeze {
    const SPEC: Spec = Spec {
        name: "unsqueeze",
        torch_aliases: &[],
        tf: &["expand_dims"],
        doc: "A dim of size 1 inserted at `dim` (counted in the output), as a view.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }],
        params: &[Param {
            torch: "dim",
            tf: "axis",
            tf_aliases: &["dim"],
            kind: Kind::Int,
            torch_default: None,
            tf_default: Some("None"),
        }],
    };

    fn tf_type(&self) -> &'static str {
        "ExpandDims"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Unsqueeze { dim: args.int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "unsqueeze")?;
        let d = normalize_dim("unsqueeze", self.dim, x.rank() + 1)?;
        let stride = if d < x.rank() { x.strides()[d] * x.shape()[d] as isize } else { 1 };
        // Inline up to four dims: growing a Vec copy of the shape by one reallocated it, and the
        // Vecs' allocations were about a fifth of the call in a `perf` profile of `unsqueeze`
        // calls (`python benchmarks/view_calls.py` times them).
        let mut shape = Shape::from_slice(x.shape());
        let mut strides = Strides::from_slice(x.strides());
        shape.insert(d, 1);
        strides.insert(d, stride);
        x.view_as_layout(shape, strides, x.offset())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "unsqueeze")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        let d = normalize_dim("unsqueeze", self.dim, dims.len() + 1)?;
        let mut out = dims.clone();
        out.insert(d, Some(1));
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![reshape_back(d, &a)?])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- flatten / unflatten

#[derive(Clone, Debug)]
pub struct Flatten {
    start_dim: isize,
    end_dim: isize,
}

impl Flatten {
    /// `flatten(start_dim, end_dim)`, for rules that emit it.
    pub fn new(start_dim: isize, end_dim: isize) -> Flatten {
        Flatten { start_dim, end_dim }
    }

    /// The dims merged, `start..=end`, for a tensor of this rank.
    fn span(&self, rank: usize) -> Result<(usize, usize)> {
        let (s, e) = (normalize_dim("flatten", self.start_dim, rank)?, normalize_dim("flatten", self.end_dim, rank)?);
        if s > e {
            return shape_err(format!(
                "flatten: start_dim ({}) cannot come after end_dim ({})",
                self.start_dim, self.end_dim
            ));
        }
        Ok((s, e))
    }

    fn merged<T: Clone>(dims: &[T], s: usize, e: usize, merge: impl Fn(&[T]) -> T) -> Vec<T> {
        let mut out = dims[..s].to_vec();
        out.push(merge(&dims[s..=e]));
        out.extend_from_slice(&dims[e + 1..]);
        out
    }
}

impl TableOp for Flatten {
    const SPEC: Spec = Spec {
        name: "flatten",
        torch_aliases: &[],
        tf: &[],
        doc: "The dims `start_dim` to `end_dim` merged into one (a 0-d tensor becomes 1-D): a view when the \
              strides allow, else a copy.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[
            Param {
                torch: "start_dim",
                tf: "start_dim",
                tf_aliases: &[],
                kind: Kind::Int,
                torch_default: Some("0"),
                tf_default: Some("0"),
            },
            Param {
                torch: "end_dim",
                tf: "end_dim",
                tf_aliases: &[],
                kind: Kind::Int,
                torch_default: Some("-1"),
                tf_default: Some("-1"),
            },
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Flatten { start_dim: args.int(0)?, end_dim: args.int(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "flatten")?;
        let (s, e) = self.span(x.rank())?;
        if x.rank() == 0 {
            return reshaped(x, &[1]);
        }
        reshaped(x, &Self::merged(x.shape(), s, e, |span| span.iter().product()))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "flatten")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        let (s, e) = self.span(dims.len())?;
        if dims.is_empty() {
            return Ok((Some(vec![Some(1)]), dtype));
        }
        Ok((Some(Self::merged(dims, s, e, product)), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![reshape_back(d, &a)?])
    }

    fn is_view(&self) -> bool {
        true
    }
}

#[derive(Clone, Debug)]
pub struct Unflatten {
    dim: isize,
    sizes: Vec<isize>,
}

impl Unflatten {
    /// `unflatten(dim, sizes)`, for rules that emit it.
    pub fn new(dim: isize, sizes: Vec<isize>) -> Unflatten {
        Unflatten { dim, sizes }
    }

    /// The sizes replacing a dim of size `n` (None: unknown), with the one -1 resolved when it can be.
    fn resolved(&self, n: Option<usize>) -> Result<Vec<Option<usize>>> {
        let sizes = &self.sizes;
        if sizes.is_empty() {
            return shape_err("unflatten: sizes must be non-empty");
        }
        if sizes.iter().filter(|&&s| s == -1).count() > 1 || sizes.iter().any(|&s| s < -1) {
            return shape_err(format!("unflatten: sizes {sizes:?} may hold one -1 and no other negative size"));
        }
        let known = sizes.iter().filter(|&&s| s >= 0).try_fold(1usize, |acc, &s| acc.checked_mul(s as usize));
        let Some(known) = known else { return shape_err(format!("unflatten: the sizes {sizes:?} overflow")) };
        let fits = |n: usize| if sizes.contains(&-1) { known != 0 && n.is_multiple_of(known) } else { known == n };
        if let Some(n) = n.filter(|&n| !fits(n)) {
            return shape_err(format!(
                "unflatten: the sizes {sizes:?} don't multiply up to the size of dim {} ({n}) of the input",
                self.dim
            ));
        }
        Ok(sizes.iter().map(|&s| if s >= 0 { Some(s as usize) } else { n.map(|n| n / known) }).collect())
    }
}

impl TableOp for Unflatten {
    const SPEC: Spec = Spec {
        name: "unflatten",
        torch_aliases: &[],
        tf: &[],
        doc: "The dim `dim` split into dims of `sizes` (one may be -1): a view when the strides allow, else a copy.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[
            Param { torch: "dim", tf: "dim", tf_aliases: &[], kind: Kind::Int, torch_default: None, tf_default: None },
            Param {
                torch: "sizes",
                tf: "sizes",
                tf_aliases: &[],
                kind: Kind::Ints,
                torch_default: None,
                tf_default: None,
            },
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Unflatten { dim: args.int(0)?, sizes: args.required_ints(1, "sizes")? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "unflatten")?;
        if x.rank() == 0 {
            return shape_err("unflatten: a 0-d tensor has no dim to unflatten");
        }
        let d = normalize_dim("unflatten", self.dim, x.rank())?;
        let sizes = self.resolved(Some(x.shape()[d]))?;
        let mut shape = x.shape()[..d].to_vec();
        shape.extend(sizes.into_iter().map(|s| s.unwrap_or(0)));
        shape.extend_from_slice(&x.shape()[d + 1..]);
        reshaped(x, &shape)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "unflatten")?;
        let Some(d) = static_dim("unflatten", self.dim, shape)? else { return Ok((None, dtype)) };
        let dims = shape.as_ref().map(Vec::as_slice).unwrap_or_default();
        let mut out = dims[..d].to_vec();
        out.extend(self.resolved(dims[d])?);
        out.extend_from_slice(&dims[d + 1..]);
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![reshape_back(d, &a)?])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- view_as / reshape_as

/// `input` with `other`'s shape; `view_as` refuses a layout that needs a copy.
fn reshaped_as(op: &str, x: &Tensor, other: &Tensor, must_view: bool) -> Result<Tensor> {
    if x.numel() != other.numel() {
        return shape_err(format!(
            "{op}: shape {} is invalid for input of size {} (the input has shape {})",
            fmt_shape(other.shape()),
            x.numel(),
            fmt_shape(x.shape())
        ));
    }
    if must_view && super::layout::view_strides(x.shape(), x.strides(), other.shape()).is_none() {
        return shape_err(format!(
            "{op}: view size is not compatible with input tensor's size and stride (at least one dimension spans \
             across two contiguous subspaces); use reshape_as(...) instead"
        ));
    }
    reshaped(x, other.shape())
}

fn infer_reshaped_as(op: &str, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let ((shape, dtype), (other, _)) = (meta(inputs, 0, op)?, meta(inputs, 1, op)?);
    let sizes = (shape.as_ref().and_then(|s| product(s)), other.as_ref().and_then(|s| product(s)));
    if let (Some(a), Some(b)) = sizes {
        if a != b {
            return shape_err(format!(
                "{op}: cannot reshape a tensor of shape {} ({a} elements) to {} ({b} elements)",
                crate::graph::fmt_partial(shape),
                crate::graph::fmt_partial(other)
            ));
        }
    }
    Ok((other.clone(), dtype))
}

macro_rules! reshape_as_op {
    ($ty:ident, $name:literal, $must_view:expr, $doc:literal) => {
        #[derive(Clone, Debug)]
        pub struct $ty;

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[],
                doc: $doc,
                differentiable: true,
                inputs: WITH_OTHER,
                params: &[],
            };

            fn build(_args: &Args) -> Result<Self> {
                Ok($ty)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let other = *super::nth(inputs, 1, $name)?;
                reshaped_as($name, only(inputs, $name)?, other, $must_view)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                infer_reshaped_as($name, inputs)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                NO_SAVES
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![reshape_back(d, &a)?, None])
            }

            fn is_view(&self) -> bool {
                true
            }
        }
    };
}

reshape_as_op!(ViewAs, "view_as", true, "The tensor viewed with `other`'s shape; raises when that needs a copy.");
reshape_as_op!(ReshapeAs, "reshape_as", false, "The tensor with `other`'s shape: a view when the strides allow.");
