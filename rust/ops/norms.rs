//! Normalisation layers: `layer_norm`, `group_norm` and `batch_norm`, and `norm_backward`,
//! the closed-form gradients their rules emit. Kernels in `kernels::norm`.
//!
//! The ops take their affine weight and bias as tensors (the Python fronts pass ones and
//! zeros when the caller gives None), and `batch_norm` its running mean and variance, which
//! it reads in evaluation; updating them in training is the fronts' job (`rustgrad/_norm.py`),
//! each with its own momentum convention.

use super::binary::same_float_dtype;
use super::reshapes::Unflatten;
use super::{internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, TorchFront};
use crate::dtype::{float_dispatch, DType};
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::kernels::elementwise::{BinaryOp, ScalarOp, UnaryOp};
use crate::kernels::norm::{self, NormShape, Stats};
use crate::op::Op;
use crate::rules::{vjp_of_composite, Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// Which normalisation, with what it needs besides its tensors.
#[derive(Clone, Debug, PartialEq)]
enum NormKind {
    Layer { normalized: Vec<usize> },
    Group { groups: usize },
    Batch { training: bool },
}

/// One normalisation: its kind and epsilon. Inputs: `x, weight, bias` (then `running_mean,
/// running_var` for batch norm).
#[derive(Clone, Debug, PartialEq)]
pub struct Norm {
    kind: NormKind,
    eps: f64,
}

fn shape_error<T>(msg: String) -> Result<T> {
    Err(Error::Shape(msg))
}

impl Norm {
    fn name(&self) -> &'static str {
        match self.kind {
            NormKind::Layer { .. } => "layer_norm",
            NormKind::Group { .. } => "group_norm",
            NormKind::Batch { .. } => "batch_norm",
        }
    }

    /// The `[n, c, s]` view of `x` and how its sets are normalised; checks the affine's shape.
    fn layout(&self, inputs: &[&Tensor]) -> Result<(NormShape, Stats)> {
        let op = self.name();
        let x = *nth(inputs, 0, op)?;
        let dims = x.shape();
        let (shape, stats) = match &self.kind {
            NormKind::Layer { normalized } => {
                let k = normalized.len();
                if dims.len() < k || dims[dims.len() - k..] != normalized[..] {
                    return shape_error(format!(
                        "layer_norm: Given normalized_shape={}, expected input with shape [*, {}], but got input of \
                         size {}",
                        fmt_shape(normalized),
                        normalized.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
                        fmt_shape(dims)
                    ));
                }
                let c: usize = normalized.iter().product();
                (NormShape { n: dims[..dims.len() - k].iter().product(), c, s: 1 }, Stats::Groups(1))
            }
            NormKind::Group { groups } => {
                if dims.len() < 2 || dims[1] % groups != 0 {
                    return shape_error(format!(
                        "group_norm: Expected an input of shape [N, C, *] with C divisible by num_groups, but got \
                         input of shape {} and num_groups={groups}",
                        fmt_shape(dims)
                    ));
                }
                (channels_view(dims), Stats::Groups(*groups))
            }
            NormKind::Batch { training } => {
                if dims.len() < 2 {
                    return shape_error(format!(
                        "batch_norm: expected an input of shape [N, C, *] (2 or more dims), got {}",
                        fmt_shape(dims)
                    ));
                }
                let view = channels_view(dims);
                if *training {
                    if view.n * view.s == 1 {
                        return Err(Error::InvalidArgument(format!(
                            "batch_norm: Expected more than 1 value per channel when training, got input size {}",
                            fmt_shape(dims)
                        )));
                    }
                    (view, Stats::Channels)
                } else {
                    let (mean, var) = (*nth(inputs, 3, op)?, *nth(inputs, 4, op)?);
                    for (what, t) in [("running_mean", mean), ("running_var", var)] {
                        if t.shape() != [view.c] {
                            return shape_error(format!(
                                "batch_norm: {what} should contain {} elements (one per channel), not {}",
                                view.c,
                                t.numel()
                            ));
                        }
                    }
                    (view, Stats::Given(mean.to_f64_vec(), var.to_f64_vec()))
                }
            }
        };
        let want: Vec<usize> = match &self.kind {
            NormKind::Layer { normalized } => normalized.clone(),
            _ => vec![shape.c],
        };
        for (what, i) in [("weight", 1), ("bias", 2)] {
            let t = *nth(inputs, i, op)?;
            if t.shape() != &want[..] {
                return shape_error(format!(
                    "{op}: {what} of shape {} does not fit: expected {} for an input of shape {}",
                    fmt_shape(t.shape()),
                    fmt_shape(&want),
                    fmt_shape(dims)
                ));
            }
        }
        Ok((shape, stats))
    }

    /// The inputs the gradients read: `x` and `weight`, and the running statistics in evaluation
    /// (in training they are left out, so updating them in place does not void the tape).
    fn reads(&self) -> u32 {
        match self.kind {
            NormKind::Batch { training: false } => 0b11011,
            _ => 0b011,
        }
    }

    fn infer_output(&self, inputs: &[Meta<'_>], spec: &Spec) -> Result<(PartialShape, DType)> {
        let dtype = same_float_dtype(spec, inputs)?;
        Ok((nth(inputs, 0, self.name())?.0.clone(), dtype))
    }

    fn forward_(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (shape, stats) = self.layout(inputs)?;
        let (x, w, b) = (inputs[0], inputs[1], inputs[2]);
        let eps = self.eps;
        float_dispatch!(x.dtype(), self.name(), |T| {
            let (ws, bs) = (w.to_vec::<T>()?, b.to_vec::<T>()?);
            let out = x.with_contiguous(|xs: &[T]| norm::forward(xs, shape, &stats, &ws, &bs, eps))?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn vjp_<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let mut operands: Vec<&D::Value> = vec![a.grad];
        operands.extend(a.inputs.iter());
        let mut grads = Vec::new();
        for (i, part) in [Part::Input, Part::Weight, Part::Bias].into_iter().enumerate() {
            let need = a.needs.get(i).copied().unwrap_or(false);
            grads.push(if need {
                let back = NormBackward { norm: self.clone(), part };
                Some(d.apply(Op::Table(TableOps::NormBackward(back)), &operands)?)
            } else {
                None
            });
        }
        grads.extend(a.inputs.iter().skip(3).map(|_| None));
        Ok(grads)
    }
}

/// `[N, C, *]` as `[N, C, prod(*)]`.
fn channels_view(dims: &[usize]) -> NormShape {
    NormShape { n: dims[0], c: dims[1], s: dims[2..].iter().product() }
}

const AFFINE: [Input; 3] = [
    Input { torch: "input", tf: "x", list: false },
    Input { torch: "weight", tf: "weight", list: false },
    Input { torch: "bias", tf: "bias", list: false },
];

const fn eps_param(tf_default: &'static str) -> Param {
    Param {
        torch: "eps",
        tf: "epsilon",
        tf_aliases: &[],
        kind: Kind::Float,
        torch_default: Some("1e-05"),
        tf_default: Some(tf_default),
    }
}

macro_rules! norm_op {
    ($ty:ident, spec: $spec:expr, order: $order:expr, build: |$args:ident| $build:expr) => {
        #[derive(Clone, Debug)]
        pub struct $ty(Norm);

        impl TableOp for $ty {
            const SPEC: Spec = $spec;
            const TORCH_ORDER: &'static [&'static str] = $order;
            const TORCH_FRONT: TorchFront = TorchFront::FUNCTIONAL;

            fn build($args: &Args) -> Result<Self> {
                Ok($ty($build))
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                self.0.forward_(inputs)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                self.0.infer_output(inputs, &Self::SPEC)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: self.0.reads(), output: false }
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                self.0.vjp_(d, a)
            }
        }
    };
}

fn sizes(args: &Args, i: usize, name: &str) -> Result<Vec<usize>> {
    args.required_ints(i, name)?
        .into_iter()
        .map(|v| {
            usize::try_from(v).map_err(|_| {
                Error::InvalidArgument(format!("{}: {name} must hold sizes of 0 or more, got {v}", args.op))
            })
        })
        .collect()
}

norm_op!(
    LayerNorm,
    spec: Spec {
        name: "layer_norm",
        torch_aliases: &[],
        tf: &[],
        doc: "Each sample normalised over its last dims (`normalized_shape`), then scaled by `weight` and shifted \
              by `bias` elementwise.",
        differentiable: true,
        inputs: &AFFINE,
        params: &[
            Param { torch: "normalized_shape", tf: "normalized_shape", tf_aliases: &[], kind: Kind::Ints, torch_default: None, tf_default: None },
            eps_param("1e-05"),
        ],
    },
    order: &["input", "normalized_shape", "weight", "bias", "eps"],
    build: |args| Norm { kind: NormKind::Layer { normalized: sizes(args, 0, "normalized_shape")? }, eps: args.float(1)? }
);

norm_op!(
    GroupNorm,
    spec: Spec {
        name: "group_norm",
        torch_aliases: &[],
        tf: &[],
        doc: "The channels of each sample in `num_groups` groups, each normalised over its channels and positions, \
              then scaled by `weight` and shifted by `bias` per channel.",
        differentiable: true,
        inputs: &AFFINE,
        params: &[
            Param { torch: "num_groups", tf: "num_groups", tf_aliases: &[], kind: Kind::Int, torch_default: None, tf_default: None },
            eps_param("1e-05"),
        ],
    },
    order: &["input", "num_groups", "weight", "bias", "eps"],
    build: |args| {
        let groups = args.int(0)?;
        if groups <= 0 {
            return Err(Error::InvalidArgument(format!("group_norm: num_groups must be positive, got {groups}")));
        }
        Norm { kind: NormKind::Group { groups: groups as usize }, eps: args.float(1)? }
    }
);

norm_op!(
    BatchNorm,
    spec: Spec {
        name: "batch_norm",
        torch_aliases: &[],
        tf: &[],
        doc: "Each channel (dim 1) normalised over the batch and positions (`training=True`) or by the running mean \
              and variance, then scaled by `weight` and shifted by `bias`.",
        differentiable: true,
        inputs: &[
            Input { torch: "input", tf: "x", list: false },
            Input { torch: "weight", tf: "weight", list: false },
            Input { torch: "bias", tf: "bias", list: false },
            Input { torch: "running_mean", tf: "running_mean", list: false },
            Input { torch: "running_var", tf: "running_var", list: false },
        ],
        params: &[
            Param { torch: "training", tf: "training", tf_aliases: &[], kind: Kind::Bool, torch_default: Some("False"), tf_default: Some("False") },
            eps_param("0.001"),
        ],
    },
    order: &["input", "running_mean", "running_var", "weight", "bias", "training", "eps"],
    build: |args| Norm { kind: NormKind::Batch { training: args.flag(0)? }, eps: args.float(1)? }
);

/// Which gradient a `norm_backward` computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Input,
    Weight,
    Bias,
}

/// One gradient of a normalisation, from `g` and the op's inputs (`g, x, weight, bias, ...`).
#[derive(Clone, Debug)]
pub struct NormBackward {
    norm: Norm,
    part: Part,
}

impl TableOp for NormBackward {
    const SPEC: Spec = internal("norm_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("norm_backward is emitted by derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = "norm_backward";
        let g = *nth(inputs, 0, op)?;
        let rest = &inputs[1..];
        let (shape, stats) = self.norm.layout(rest)?;
        let (x, w) = (*nth(rest, 0, op)?, *nth(rest, 1, op)?);
        let eps = self.norm.eps;
        let g = crate::forward::as_dtype(g, x.dtype())?;
        float_dispatch!(x.dtype(), op, |T| {
            let ws = w.to_vec::<T>()?;
            // `g` and `x` are read in place (a copy of `g` cost a pass over it and new memory).
            match self.part {
                Part::Input => {
                    let out = g.with_contiguous(|gs: &[T]| {
                        x.with_contiguous(|xs: &[T]| norm::input_grad(gs, xs, shape, &stats, &ws, eps))
                    })??;
                    Tensor::from_vec(out, x.shape())
                }
                Part::Weight | Part::Bias => {
                    let (dw, db) = g.with_contiguous(|gs: &[T]| {
                        x.with_contiguous(|xs: &[T]| {
                            let m = norm::moments(xs, shape, &stats, eps);
                            norm::affine_grads(gs, xs, shape, &stats, &m)
                        })
                    })??;
                    let picked = if self.part == Part::Weight { dw } else { db };
                    let values: Vec<T> =
                        picked.into_iter().map(<T as crate::kernels::activation::ActScalar>::of).collect();
                    Tensor::from_vec(values, w.shape())
                }
            }
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let i = match self.part {
            Part::Input => 1,
            Part::Weight => 2,
            Part::Bias => 3,
        };
        let (shape, dtype) = *nth(inputs, i, "norm_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: u32::MAX, output: false }
    }

    /// Through a composite: the closed-form gradient written with differentiable ops, so the
    /// fused kernel's result is differentiated exactly, to any order.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 1, "norm_backward")?;
        let rank = d.rank(x).ok_or_else(|| {
            Error::Gradient("norm_backward: differentiating it needs the input's rank known when it is built".into())
        })?;
        let (norm, part) = (self.norm.clone(), self.part);
        vjp_of_composite(d, a, |t, ins| norm.gradient_composite(t, ins, rank, part))
    }
}

impl Norm {
    /// One gradient of a normalisation from its operands (`g, x, weight, bias`, then the
    /// running statistics), for `rank`-D inputs, written with differentiable ops:
    /// `dx = r·(ĝ − mean ĝ − x̂·mean(ĝ x̂))` with ĝ = g·w over the statistics' dims (in
    /// evaluation `dx = ĝ·r`), `dw = Σ g·x̂`, `db = Σ g`. Group norm computes on x with
    /// its channels split into `[groups, C/groups]`, its statistics over all dims from 2.
    fn gradient_composite<D: Differentiator>(
        &self,
        t: &mut D,
        ins: &[D::Value],
        rank: usize,
        part: Part,
    ) -> Result<D::Value> {
        let op = "norm_backward";
        let (g, x, w, b) = (nth(ins, 0, op)?, nth(ins, 1, op)?, nth(ins, 2, op)?, nth(ins, 3, op)?);
        // Batch norm's per-channel values, laid out along dim 1 of x.
        let channel_shape: Vec<isize> =
            std::iter::once(-1).chain(std::iter::repeat_n(1, rank.saturating_sub(2))).collect();
        let per_channel = |t: &mut D, v: &D::Value| t.apply(Op::Reshape(channel_shape.clone()), &[v]);
        let groups = match self.kind {
            NormKind::Group { groups } => Some(groups as isize),
            _ => None,
        };
        // Group norm's view of an x-shaped value, and back; the identity otherwise.
        let grouped = |t: &mut D, v: &D::Value| match groups {
            Some(k) => t.apply(Op::Table(TableOps::Unflatten(Unflatten::new(1, vec![k, -1]))), &[v]),
            None => Ok(v.clone()),
        };
        let ungrouped = |t: &mut D, v: &D::Value| match groups {
            Some(_) => t.apply(Op::ReshapeLike, &[v, x]),
            None => Ok(v.clone()),
        };
        let (xhat, inv, dims, wide_w) = match &self.kind {
            NormKind::Layer { normalized } => {
                let dims: Vec<isize> = (1..=normalized.len() as isize).map(|k| -k).collect();
                let (xhat, inv) = standardise(t, x, dims.clone(), self.eps)?;
                (xhat, inv, Some(dims), w.clone())
            }
            NormKind::Batch { training: true } => {
                let dims: Vec<isize> = std::iter::once(0).chain(2..rank as isize).collect();
                let (xhat, inv) = standardise(t, x, dims.clone(), self.eps)?;
                (xhat, inv, Some(dims), per_channel(t, w)?)
            }
            NormKind::Batch { training: false } => {
                let (mean, var) = (per_channel(t, nth(ins, 4, op)?)?, per_channel(t, nth(ins, 5, op)?)?);
                let centred = t.apply(Op::Binary(BinaryOp::Sub), &[x, &mean])?;
                let shifted = t.scalar(&var, ScalarOp::Add, self.eps)?;
                let inv = t.unary(UnaryOp::Rsqrt, &shifted)?;
                (t.mul(&centred, &inv)?, inv, None, per_channel(t, w)?)
            }
            NormKind::Group { .. } => {
                let dims: Vec<isize> = (2..=rank as isize).collect();
                let split = grouped(t, x)?;
                let (xhat, inv) = standardise(t, &split, dims.clone(), self.eps)?;
                (xhat, inv, Some(dims), per_channel(t, w)?)
            }
        };
        match part {
            Part::Input => {
                let gw = t.mul(g, &wide_w)?;
                let gw = grouped(t, &gw)?;
                let Some(dims) = dims else { return t.mul(&gw, &inv) };
                let mean =
                    |t: &mut D, v: &D::Value| t.apply(Op::Mean { dims: Some(dims.clone()), keepdim: true }, &[v]);
                let m1 = mean(t, &gw)?;
                let gwx = t.mul(&gw, &xhat)?;
                let m2 = mean(t, &gwx)?;
                let centred = t.apply(Op::Binary(BinaryOp::Sub), &[&gw, &m1])?;
                let along = t.mul(&xhat, &m2)?;
                let inner = t.apply(Op::Binary(BinaryOp::Sub), &[&centred, &along])?;
                let dx = t.mul(&inner, &inv)?;
                ungrouped(t, &dx)
            }
            Part::Weight => {
                let xhat = ungrouped(t, &xhat)?;
                let gx = t.mul(g, &xhat)?;
                let summed = t.apply(Op::SumToLike, &[&gx, &wide_w])?;
                t.apply(Op::ReshapeLike, &[&summed, w])
            }
            Part::Bias => {
                let summed = t.apply(Op::SumToLike, &[g, &wide_w])?;
                t.apply(Op::ReshapeLike, &[&summed, b])
            }
        }
    }
}

/// `((x − mean)·r, r)` with `r = 1/sqrt(var + eps)` over `dims` (the biased variance, as the kernels).
fn standardise<D: Differentiator>(t: &mut D, x: &D::Value, dims: Vec<isize>, eps: f64) -> Result<(D::Value, D::Value)> {
    let mean = t.apply(Op::Mean { dims: Some(dims.clone()), keepdim: true }, &[x])?;
    let centred = t.apply(Op::Binary(BinaryOp::Sub), &[x, &mean])?;
    let square = t.mul(&centred, &centred)?;
    let var = t.apply(Op::Mean { dims: Some(dims), keepdim: true }, &[&square])?;
    let shifted = t.scalar(&var, ScalarOp::Add, eps)?;
    let inv = t.unary(UnaryOp::Rsqrt, &shifted)?;
    Ok((t.mul(&centred, &inv)?, inv))
}
