//! Ops that copy the elements into a new order: `flip` (TF `reverse`), `fliplr`,
//! `flipud`, `roll` (TF `roll`), `repeat` and `tile` (TF `tile`). Each reads its input
//! through a view (negative or zero strides) and copies that once.

use super::layout::{flipped, meta, narrowed, only, reshaped, same_as};
use super::shape::cat;
use super::{internal, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, ONE_INPUT};
use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::forward::copy;
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{normalize_dim, normalize_dims};
use crate::tensor::Tensor;

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

const fn ints_param(torch: &'static str, tf: &'static str) -> Param {
    Param { torch, tf, tf_aliases: &[], kind: Kind::Ints, torch_default: None, tf_default: None }
}

fn apply<D: Differentiator>(d: &mut D, op: TableOps, inputs: &[&D::Value]) -> Result<D::Value> {
    d.apply(Op::Table(op), inputs)
}

/// `dims` normalised against `rank`, each named once (a 0-d tensor has none to name).
fn distinct_dims(op: &str, dims: &[isize], rank: usize) -> Result<Vec<usize>> {
    let normalized = normalize_dims(op, dims, rank)?;
    Ok(if rank == 0 { vec![] } else { normalized })
}

// ---------------------------------------------------------------- flip

#[derive(Clone, Debug)]
pub struct Flip {
    dims: Vec<isize>,
}

fn flip(op: &str, x: &Tensor, dims: &[isize]) -> Result<Tensor> {
    let mut view = x.clone();
    for d in distinct_dims(op, dims, x.rank())? {
        view = flipped(&view, d)?;
    }
    copy(&view)
}

fn infer_flip(op: &str, dims: &[isize], inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let input = meta(inputs, 0, op)?;
    if let Some(shape) = input.0 {
        distinct_dims(op, dims, shape.len())?;
    }
    Ok(same_as(input))
}

impl TableOp for Flip {
    const SPEC: Spec = Spec {
        name: "flip",
        torch_aliases: &[],
        tf: &["reverse", "reverse_v2"],
        doc: "The elements in reverse order along each dim of `dims` (a copy).",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "tensor", list: false }],
        params: &[ints_param("dims", "axis")],
    };

    fn tf_type(&self) -> &'static str {
        "ReverseV2"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Flip { dims: args.required_ints(0, "dims")? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        flip("flip", only(inputs, "flip")?, &self.dims)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        infer_flip("flip", &self.dims, inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(apply(d, TableOps::Flip(self.clone()), &[a.grad])?)])
    }
}

macro_rules! flip_one_dim {
    ($ty:ident, $name:literal, dim: $dim:literal, min_rank: $min:literal, $doc:literal) => {
        #[derive(Clone, Debug)]
        pub struct $ty;

        impl $ty {
            fn check(rank: Option<usize>) -> Result<()> {
                match rank {
                    Some(r) if r < $min => {
                        shape_err(format!("{}: the input must be at least {}-D, got {r}-D", $name, $min))
                    }
                    _ => Ok(()),
                }
            }
        }

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[],
                doc: $doc,
                differentiable: true,
                inputs: ONE_INPUT,
                params: &[],
            };

            fn build(_args: &Args) -> Result<Self> {
                Ok($ty)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let x = only(inputs, $name)?;
                Self::check(Some(x.rank()))?;
                flip($name, x, &[$dim])
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                let input = meta(inputs, 0, $name)?;
                Self::check(input.0.as_ref().map(Vec::len))?;
                Ok(same_as(input))
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                NO_SAVES
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![Some(apply(d, TableOps::$ty($ty), &[a.grad])?)])
            }
        }
    };
}

flip_one_dim!(Fliplr, "fliplr", dim: 1, min_rank: 2, "The columns (dim 1) in reverse order (a copy).");
flip_one_dim!(Flipud, "flipud", dim: 0, min_rank: 1, "The rows (dim 0) in reverse order (a copy).");

// ---------------------------------------------------------------- roll

#[derive(Clone, Debug)]
pub struct Roll {
    shifts: Vec<isize>,
    /// None: roll the flattened tensor, then restore its shape.
    dims: Option<Vec<isize>>,
    /// Roll the other way (the gradient), without negating a shift that may not negate.
    back: bool,
}

impl Roll {
    fn check(&self) -> Result<()> {
        let aligned = match &self.dims {
            None => self.shifts.len() == 1,
            Some(dims) => dims.len() == self.shifts.len() && !dims.is_empty(),
        };
        if !aligned {
            return shape_err(format!(
                "roll: shifts {:?} and dims {:?} must align (one shift per dim, or one shift and no dims)",
                self.shifts, self.dims
            ));
        }
        Ok(())
    }

    /// `x` rolled by `shift` along `dim`: the last `k` elements move to the front.
    fn roll_dim(&self, x: &Tensor, dim: usize, shift: isize) -> Result<Option<Tensor>> {
        let n = x.shape()[dim];
        if n == 0 {
            return Ok(None);
        }
        let k = shift.rem_euclid(n as isize) as usize;
        let k = if self.back { (n - k) % n } else { k };
        if k == 0 {
            return Ok(None);
        }
        cat(&[&narrowed(x, dim, n - k, k)?, &narrowed(x, dim, 0, n - k)?], dim as isize).map(Some)
    }
}

impl TableOp for Roll {
    const SPEC: Spec = Spec {
        name: "roll",
        torch_aliases: &[],
        tf: &["roll"],
        doc: "The elements shifted by `shifts` along `dims`, those pushed off the end coming back at the start \
              (a copy); without dims, along the flattened tensor.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }],
        params: &[
            ints_param("shifts", "shift"),
            Param {
                torch: "dims",
                tf: "axis",
                tf_aliases: &[],
                kind: Kind::OptDims,
                torch_default: Some("None"),
                tf_default: None,
            },
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        let roll = Roll { shifts: args.required_ints(0, "shifts")?, dims: args.dims(1)?, back: false };
        roll.check()?;
        Ok(roll)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "roll")?;
        let Some(dims) = &self.dims else {
            let flat = reshaped(x, &[x.numel()])?;
            return match self.roll_dim(&flat, 0, self.shifts[0])? {
                Some(rolled) => rolled.copy_with_shape(x.shape()),
                None => copy(x),
            };
        };
        if x.rank() == 0 {
            dims.iter().try_for_each(|&d| normalize_dim("roll", d, 0).map(drop))?;
            return copy(x);
        }
        let mut out: Option<Tensor> = None;
        for (&shift, &dim) in self.shifts.iter().zip(dims) {
            let current = out.as_ref().unwrap_or(x);
            if let Some(rolled) = self.roll_dim(current, normalize_dim("roll", dim, x.rank())?, shift)? {
                out = Some(rolled);
            }
        }
        out.map_or_else(|| copy(x), Ok)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let input = meta(inputs, 0, "roll")?;
        if let (Some(shape), Some(dims)) = (input.0, &self.dims) {
            for &d in dims {
                normalize_dim("roll", d, shape.len())?;
            }
        }
        Ok(same_as(input))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let back = Roll { back: !self.back, ..self.clone() };
        Ok(vec![Some(apply(d, TableOps::Roll(back), &[a.grad])?)])
    }
}

// ---------------------------------------------------------------- repeat / tile

/// The repeats and the input's dims, both padded with leading ones to the same length.
fn aligned(reps: &[isize], shape: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
    if let Some(&r) = reps.iter().find(|&&r| r < 0) {
        return shape_err(format!("tile: the repeats {reps:?} must not be negative (got {r})"));
    }
    let len = reps.len().max(shape.len());
    let pad = |n: usize| std::iter::repeat_n(1usize, len - n);
    let reps: Vec<usize> = pad(reps.len()).chain(reps.iter().map(|&r| r as usize)).collect();
    let dims: Vec<usize> = pad(shape.len()).chain(shape.iter().copied()).collect();
    Ok((reps, dims))
}

/// `x` repeated `reps[i]` times along each dim `i` (x gets leading dims of 1 to match).
fn tiled(x: &Tensor, reps: &[isize]) -> Result<Tensor> {
    let (reps, dims) = aligned(reps, x.shape())?;
    let lead = dims.len() - x.rank();
    let strides: Vec<isize> = std::iter::repeat_n(0, lead).chain(x.strides().iter().copied()).collect();
    // Read x as [r0, d0, r1, d1, ...], each copy along a stride-0 dim, then copy that once.
    let view_shape: Vec<usize> = reps.iter().zip(&dims).flat_map(|(&r, &d)| [r, d]).collect();
    let view_strides: Vec<isize> = strides.iter().flat_map(|&s| [0, s]).collect();
    crate::storage::ensure_allocatable(&view_shape, x.dtype())?;
    let out_shape: Vec<usize> = reps
        .iter()
        .zip(&dims)
        .map(|(&r, &d)| r.checked_mul(d))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::OutOfMemory(format!("tile: the repeats {reps:?} of shape {dims:?} overflow")))?;
    x.view_as_layout(view_shape, view_strides, x.offset())?.copy_with_shape(&out_shape)
}

fn infer_tiled(reps: &[isize], input: Meta<'_>) -> Result<(PartialShape, DType)> {
    let Some(dims) = input.0 else { return Ok((None, input.1)) };
    let known: Vec<usize> = dims.iter().map(|d| d.unwrap_or(1)).collect();
    let (reps_aligned, _) = aligned(reps, &known)?;
    let lead = reps_aligned.len() - dims.len();
    let padded = std::iter::repeat_n(Some(1), lead).chain(dims.iter().copied());
    Ok((Some(reps_aligned.iter().zip(padded).map(|(&r, d)| d.map(|d| r * d)).collect()), input.1))
}

fn tile_grad<D: Differentiator>(d: &mut D, reps: &[isize], a: &RuleArgs<'_, D::Value>) -> Result<D::Value> {
    let x = super::nth(a.inputs, 0, "tile")?;
    apply(d, TableOps::TileGrad(TileGrad { reps: reps.to_vec() }), &[a.grad, x])
}

#[derive(Clone, Debug)]
pub struct Repeat {
    repeats: Vec<isize>,
}

impl Repeat {
    fn check(&self, rank: usize) -> Result<()> {
        if self.repeats.len() < rank {
            return shape_err(format!(
                "repeat: the number of repeats ({}) can not be smaller than the number of dims of the tensor ({rank})",
                self.repeats.len()
            ));
        }
        Ok(())
    }
}

impl TableOp for Repeat {
    const SPEC: Spec = Spec {
        name: "repeat",
        torch_aliases: &[],
        tf: &[],
        doc: "The tensor repeated `repeats[i]` times along each dim (a copy); more repeats than dims add leading dims.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[ints_param("repeats", "repeats")],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Repeat { repeats: args.required_ints(0, "repeats")? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "repeat")?;
        self.check(x.rank())?;
        tiled(x, &self.repeats)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let input = meta(inputs, 0, "repeat")?;
        if let Some(dims) = input.0 {
            self.check(dims.len())?;
        }
        infer_tiled(&self.repeats, input)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(tile_grad(d, &self.repeats, &a)?)])
    }
}

#[derive(Clone, Debug)]
pub struct Tile {
    dims: Vec<isize>,
}

impl TableOp for Tile {
    const SPEC: Spec = Spec {
        name: "tile",
        torch_aliases: &[],
        tf: &["tile"],
        doc: "The tensor repeated `dims[i]` times along each dim (a copy); fewer repeats than dims repeat the \
              last dims.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }],
        params: &[ints_param("dims", "multiples")],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Tile { dims: args.required_ints(0, "dims")? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        tiled(only(inputs, "tile")?, &self.dims)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        infer_tiled(&self.dims, meta(inputs, 0, "tile")?)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(tile_grad(d, &self.dims, &a)?)])
    }
}

/// `(g, x)`: the gradient of `tile(x, reps)`: the sum of `g` over the copies, in `x`'s shape.
#[derive(Clone, Debug)]
pub struct TileGrad {
    reps: Vec<isize>,
}

impl TableOp for TileGrad {
    const SPEC: Spec = internal("tile_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("tile_backward is built by the rules of tile and repeat only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (only(inputs, "tile_backward")?, *super::nth(inputs, 1, "tile_backward")?);
        let (reps, dims) = aligned(&self.reps, x.shape())?;
        let split: Vec<usize> = reps.iter().zip(&dims).flat_map(|(&r, &d)| [r, d]).collect();
        let copies: Vec<isize> = (0..reps.len()).map(|i| 2 * i as isize).collect();
        let summed = crate::forward::sum(&reshaped(g, &split)?, Some(&copies), false, false)?;
        reshaped(&summed, x.shape())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((_, dtype), (shape, _)) = (meta(inputs, 0, "tile_backward")?, meta(inputs, 1, "tile_backward")?);
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(apply(d, TableOps::Tile(Tile { dims: self.reps.clone() }), &[a.grad])?), None])
    }
}
