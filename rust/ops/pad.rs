//! Padding: torch's `nn.functional.pad(input, pad, mode, value)` and TF1's
//! `pad(tensor, paddings, mode, constant_values)`, in the modes constant, reflect,
//! replicate, circular and symmetric. Built from views and one `cat` per padded dim;
//! the gradient folds the padded borders back onto the elements they copied.

use super::layout::{flipped, meta, narrowed, only, spread};
use super::shape::cat;
use super::{internal, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps};
use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::forward::{add_in_place, copy, write_into};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    Constant,
    Reflect,
    Replicate,
    Circular,
    Symmetric,
}

impl PadMode {
    fn parse(name: &str) -> Result<PadMode> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "replicate" => PadMode::Replicate,
            "circular" => PadMode::Circular,
            "symmetric" => PadMode::Symmetric,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "pad: mode must be 'constant', 'reflect', 'replicate', 'circular' or 'symmetric' (any case), \
                     got '{name}'"
                )))
            }
        })
    }
}

#[derive(Clone, Debug)]
pub struct Pad {
    /// `(before, after)` for each of the last `pads.len()` dims, in dim order.
    pads: Vec<(isize, isize)>,
    /// TF's paddings name every dim, so their count must be the rank.
    whole: bool,
    mode: PadMode,
    value: f64,
}

/// The part of one dim that the input keeps, as (first kept input index, count, where it lands).
struct Kept {
    from: usize,
    len: usize,
    to: usize,
}

impl Pad {
    /// The first padded dim of a tensor of this rank.
    fn first_dim(&self, rank: usize) -> Result<usize> {
        if self.whole && self.pads.len() != rank {
            return shape_err(format!(
                "pad: paddings must hold one (before, after) pair per dim: got {} pairs for a tensor of rank {rank}",
                self.pads.len()
            ));
        }
        rank.checked_sub(self.pads.len()).ok_or_else(|| {
            Error::Shape(format!(
                "pad: the padding has {} pairs, more than the {rank} dims of the input",
                self.pads.len()
            ))
        })
    }

    /// The padded size of a dim of size `n`, checked against the mode.
    fn padded(&self, n: usize, (before, after): (isize, isize)) -> Result<usize> {
        let size = (n as isize).checked_add(before).and_then(|s| s.checked_add(after));
        let size = size.ok_or_else(|| Error::OutOfMemory(format!("pad: padding ({before}, {after}) overflows")))?;
        if size < 0 {
            return shape_err(format!(
                "pad: the input size {n}, plus padding {before} and {after}, resulted in a negative output size {size}"
            ));
        }
        if before == 0 && after == 0 || self.mode == PadMode::Constant {
            return Ok(size as usize);
        }
        let most = before.max(after);
        let fits = match self.mode {
            _ if before < 0 || after < 0 => false,
            PadMode::Reflect => most < n as isize,
            PadMode::Symmetric | PadMode::Circular => most <= n as isize,
            _ => n > 0,
        };
        if !fits {
            return shape_err(format!(
                "pad: padding ({before}, {after}) does not fit a dim of size {n} in {:?} mode (reflect needs less \
                 than the size, symmetric and circular at most the size, and only constant mode crops)",
                self.mode
            ));
        }
        Ok(size as usize)
    }

    fn kept(n: usize, (before, after): (isize, isize)) -> Kept {
        let (crop_before, crop_after) = ((-before).max(0) as usize, (-after).max(0) as usize);
        let len = n.saturating_sub(crop_before.saturating_add(crop_after));
        Kept { from: crop_before.min(n), len, to: before.max(0) as usize }
    }

    fn out_shape(&self, shape: &[usize]) -> Result<Vec<usize>> {
        let first = self.first_dim(shape.len())?;
        let mut out = shape.to_vec();
        for (d, &pad) in (first..).zip(&self.pads) {
            out[d] = self.padded(shape[d], pad)?;
        }
        Ok(out)
    }

    fn constant(&self, x: &Tensor) -> Result<Tensor> {
        let out = Tensor::full(&self.out_shape(x.shape())?, self.value, x.dtype())?;
        let (mut src, mut dst) = (x.clone(), out.clone());
        for (d, &pad) in (self.first_dim(x.rank())?..).zip(&self.pads) {
            let kept = Self::kept(x.shape()[d], pad);
            src = narrowed(&src, d, kept.from, kept.len)?;
            dst = narrowed(&dst, d, kept.to, kept.len)?;
        }
        write_into(&dst, &src)?;
        Ok(out)
    }

    /// The borders copied from `x` (already padded in the dims before `d`) along `d`.
    fn borders(&self, x: &Tensor, d: usize, (before, after): (isize, isize)) -> Result<(Tensor, Tensor)> {
        let (n, b, a) = (x.shape()[d], before as usize, after as usize);
        Ok(match self.mode {
            PadMode::Reflect => (flipped(&narrowed(x, d, 1, b)?, d)?, flipped(&narrowed(x, d, n - 1 - a, a)?, d)?),
            PadMode::Symmetric => (flipped(&narrowed(x, d, 0, b)?, d)?, flipped(&narrowed(x, d, n - a, a)?, d)?),
            PadMode::Circular => (narrowed(x, d, n - b, b)?, narrowed(x, d, 0, a)?),
            _ => (spread(&narrowed(x, d, 0, 1)?, d, b)?, spread(&narrowed(x, d, n - 1, 1)?, d, a)?),
        })
    }

    fn copied_borders(&self, x: &Tensor) -> Result<Tensor> {
        self.out_shape(x.shape())?;
        let mut out = x.clone();
        for (d, &pad) in (self.first_dim(x.rank())?..).zip(&self.pads) {
            if pad == (0, 0) {
                continue;
            }
            let (left, right) = self.borders(&out, d, pad)?;
            out = cat(&[&left, &out, &right], d as isize)?;
        }
        if out.shares_storage(x) {
            return copy(x);
        }
        Ok(out)
    }

    /// The gradient for `x` from the gradient `g` of the padded tensor.
    fn fold(&self, g: &Tensor, x: &Tensor) -> Result<Tensor> {
        let first = self.first_dim(x.rank())?;
        if self.mode == PadMode::Constant {
            let out = Tensor::zeros(x.shape(), g.dtype())?;
            let (mut src, mut dst) = (g.clone(), out.clone());
            for (d, &pad) in (first..).zip(&self.pads) {
                let kept = Self::kept(x.shape()[d], pad);
                src = narrowed(&src, d, kept.to, kept.len)?;
                dst = narrowed(&dst, d, kept.from, kept.len)?;
            }
            write_into(&dst, &src)?;
            return Ok(out);
        }
        let mut current = g.clone();
        for (i, &(before, after)) in self.pads.iter().enumerate().rev() {
            let d = first + i;
            if (before, after) == (0, 0) {
                continue;
            }
            let (n, b, a) = (x.shape()[d], before as usize, after as usize);
            let inner = copy(&narrowed(&current, d, b, n)?)?;
            let (left, right) = (narrowed(&current, d, 0, b)?, narrowed(&current, d, b + n, a)?);
            let add = |start: usize, len: usize, part: &Tensor| -> Result<()> {
                if len > 0 {
                    add_in_place(&narrowed(&inner, d, start, len)?, part, 1.0)?;
                }
                Ok(())
            };
            match self.mode {
                PadMode::Reflect => {
                    add(1, b, &flipped(&left, d)?)?;
                    add(n - 1 - a, a, &flipped(&right, d)?)?;
                }
                PadMode::Symmetric => {
                    add(0, b, &flipped(&left, d)?)?;
                    add(n - a, a, &flipped(&right, d)?)?;
                }
                PadMode::Circular => {
                    add(n - b, b, &left)?;
                    add(0, a, &right)?;
                }
                _ => {
                    let edge = |part: &Tensor| crate::forward::sum(part, Some(&[d as isize]), true, false);
                    add(0, b.min(1), &edge(&left)?)?;
                    add(n - 1, a.min(1), &edge(&right)?)?;
                }
            }
            current = inner;
        }
        if current.shares_storage(g) {
            return copy(g);
        }
        Ok(current)
    }
}

impl TableOp for Pad {
    const SPEC: Spec = Spec {
        name: "pad",
        torch_aliases: &[],
        tf: &["pad"],
        doc: "The tensor with borders added: torch's `pad` lists (before, after) from the last dim backwards, TF's \
              `paddings` one pair per dim. Modes: constant (negative padding crops), reflect, replicate, circular, \
              symmetric.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "tensor", list: false }],
        params: &[
            Param {
                torch: "pad",
                tf: "",
                tf_aliases: &[],
                kind: Kind::Ints,
                torch_default: None,
                tf_default: Some("()"),
            },
            Param {
                torch: "",
                tf: "paddings",
                tf_aliases: &[],
                kind: Kind::Pairs,
                torch_default: Some("None"),
                tf_default: None,
            },
            Param {
                torch: "mode",
                tf: "mode",
                tf_aliases: &[],
                kind: Kind::Str,
                torch_default: Some("'constant'"),
                tf_default: Some("'CONSTANT'"),
            },
            Param {
                torch: "value",
                tf: "constant_values",
                tf_aliases: &[],
                kind: Kind::Float,
                torch_default: Some("0.0"),
                tf_default: Some("0"),
            },
        ],
    };

    fn tf_type(&self) -> &'static str {
        // TF: `Pad` pads with zeros, `PadV2` with another value, `MirrorPad` reflects.
        match self.mode {
            PadMode::Constant if self.value == 0.0 => "Pad",
            PadMode::Constant => "PadV2",
            PadMode::Reflect | PadMode::Symmetric => "MirrorPad",
            PadMode::Replicate | PadMode::Circular => "",
        }
    }

    fn build(args: &Args) -> Result<Self> {
        let pair = |c: &[isize]| (c[0], c[1]);
        let (pads, whole) = match (args.dims(1)?, args.dims(0)?) {
            (Some(paddings), _) => (paddings.chunks(2).map(pair).collect(), true),
            (None, Some(flat)) if flat.len() % 2 == 0 => (flat.chunks(2).rev().map(pair).collect(), false),
            (None, Some(flat)) => {
                return shape_err(format!("pad: the padding length must be divisible by 2, got {} values", flat.len()))
            }
            (None, None) => return Err(Error::InvalidArgument("pad: argument 'pad' is required".into())),
        };
        Ok(Pad { pads, whole, mode: PadMode::parse(args.text(2)?)?, value: args.float(3)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "pad")?;
        match self.mode {
            PadMode::Constant => self.constant(x),
            _ => self.copied_borders(x),
        }
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "pad")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        let first = self.first_dim(dims.len())?;
        let mut out = dims.clone();
        for (d, &pad) in (first..).zip(&self.pads) {
            out[d] = dims[d].map(|n| self.padded(n, pad)).transpose()?;
        }
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = super::nth(a.inputs, 0, "pad")?;
        Ok(vec![Some(d.apply(Op::Table(TableOps::PadGrad(PadGrad { pad: self.clone() })), &[a.grad, x])?)])
    }
}

/// `(g, x)`: the gradient of `pad` for `x`: the inner part of `g`, plus the borders folded back.
#[derive(Clone, Debug)]
pub struct PadGrad {
    pad: Pad,
}

impl TableOp for PadGrad {
    const SPEC: Spec = internal("pad_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("pad_backward is built by pad's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (only(inputs, "pad_backward")?, *super::nth(inputs, 1, "pad_backward")?);
        self.pad.fold(g, x)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((_, dtype), (shape, _)) = (meta(inputs, 0, "pad_backward")?, meta(inputs, 1, "pad_backward")?);
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    /// Folding is the adjoint of padding with zeros, so its gradient pads again.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let zero_padded = Pad { value: 0.0, ..self.pad.clone() };
        Ok(vec![Some(d.apply(Op::Table(TableOps::Pad(zero_padded)), &[a.grad])?), None])
    }
}
