//! Ops whose results are positions (int64 indices): `argmax`/`argmin`, `argsort`, and
//! `take_along_dim`, which reads elements at such positions. `max(dim)`, `topk` and
//! `sort` (torch) and `math.top_k` and `sort` (TF1) are compositions of them in Python.

use super::{internal, nth, Args, Input, Kind, Meta, Param, Role, Spec, TableOp, TableOps, TF_SEMANTICS};
use crate::dtype::{dispatch, float_dispatch, numeric_dispatch, DType};
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::ordering::{self, Along};
use crate::kernels::scan::ScanShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{fmt_shape, normalize_dim};
use crate::tensor::Tensor;

/// The block a reduction along `dim` of `shape` walks (a 0-d tensor is one element).
fn along(shape: &[usize], dim: usize) -> ScanShape {
    if shape.is_empty() {
        return ScanShape { outer: 1, n: 1, inner: 1 };
    }
    ScanShape { outer: shape[..dim].iter().product(), n: shape[dim], inner: shape[dim + 1..].iter().product() }
}

/// The one dim of `dims` (None stays None), or an error: these ops take a single dim.
fn single_dim(op: &str, dims: Option<Vec<isize>>) -> Result<Option<isize>> {
    match dims.as_deref() {
        None => Ok(None),
        Some(&[d]) => Ok(Some(d)),
        Some(other) => Err(Error::InvalidArgument(format!("{op}: expected one dim (an int) or None, got {other:?}"))),
    }
}

/// An int64 result, or int32 when TF's `output_type` asks for it.
fn index_dtype(op: &str, requested: Option<DType>) -> Result<DType> {
    match requested {
        None | Some(DType::I64) => Ok(DType::I64),
        Some(DType::I32) => Ok(DType::I32),
        Some(other) => dtype_err(format!("{op}: output_type must be int32 or int64, got {}", other.name())),
    }
}

fn indices_tensor(values: Vec<i64>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let t = Tensor::from_vec(values, shape)?;
    if dtype == DType::I64 {
        return Ok(t);
    }
    forward::cast(&t, dtype)
}

/// `argmax` (`largest`) or `argmin`: torch's `dim=None` is the flattened tensor; TF1's is dim 0.
#[derive(Clone, Debug)]
pub struct ArgExtreme<const LARGEST: bool> {
    dim: Option<isize>,
    keepdim: bool,
    output: DType,
}

const ARG_PARAMS: &[Param] = &[
    Param {
        torch: "dim",
        tf: "axis",
        tf_aliases: &["dimension"],
        kind: Kind::OptDims,
        torch_default: Some("None"),
        tf_default: Some("None"),
    },
    Param {
        torch: "keepdim",
        tf: "",
        tf_aliases: &[],
        kind: Kind::Bool,
        torch_default: Some("False"),
        tf_default: None,
    },
    Param {
        torch: "",
        tf: "output_type",
        tf_aliases: &[],
        kind: Kind::OptDType,
        torch_default: None,
        tf_default: Some("None"),
    },
    // Neither front names this: TF1 reads `axis=None` as dim 0, torch as every dim.
    TF_SEMANTICS,
];

impl<const LARGEST: bool> ArgExtreme<LARGEST> {
    const NAME: &'static str = if LARGEST { "argmax" } else { "argmin" };

    fn build_from(args: &Args) -> Result<Self> {
        let dim = single_dim(Self::NAME, args.dims(0)?)?;
        let tf_axis = args.flag(3)?;
        Ok(ArgExtreme {
            dim: if tf_axis { dim.or(Some(0)) } else { dim },
            keepdim: args.flag(1)?,
            output: index_dtype(Self::NAME, args.opt_dtype(2)?)?,
        })
    }

    fn run(&self, x: &Tensor) -> Result<Tensor> {
        let op = Self::NAME;
        let (flat, dim) = match self.dim {
            None => (forward::reshape(x, &[-1])?, 0),
            Some(d) => (x.clone(), normalize_dim(op, d, x.rank())?),
        };
        let size = if flat.rank() == 0 { 1 } else { flat.shape()[dim] };
        if size == 0 {
            return Err(Error::Index(format!(
                "{op}: cannot take the {op} over dimension {dim} of size 0 (shape {}): an empty slice has none",
                fmt_shape(x.shape())
            )));
        }
        let out_shape: Vec<usize> = match (self.dim, self.keepdim) {
            (None, false) => vec![],
            (None, true) => vec![1; x.rank()],
            (Some(_), keep) => crate::shape::reduced_shape(x.shape(), &[dim], keep).to_vec(),
        };
        let shape = along(flat.shape(), dim);
        let indices = numeric_dispatch!(x.dtype(), op, |T| {
            flat.with_contiguous(|s: &[T]| ordering::arg_extreme(s, shape, LARGEST))?
        });
        indices_tensor(indices, &out_shape, self.output)
    }

    fn infer_shape(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, Self::NAME)?;
        if !dtype.is_float() && !dtype.is_integer() {
            return dtype_err(format!("{}: expected a numeric tensor, got {}", Self::NAME, dtype.name()));
        }
        let out = match (self.dim, shape) {
            (None, _) if !self.keepdim => Some(vec![]),
            (_, None) => None,
            (None, Some(dims)) => Some(vec![Some(1); dims.len()]),
            (Some(d), shape) => crate::graph::infer::reduce(Self::NAME, shape, Some(&[d]), self.keepdim)?,
        };
        Ok((out, self.output))
    }
}

macro_rules! arg_extreme_op {
    ($largest:literal, $name:literal, $tf_type:literal, $doc:literal) => {
        impl TableOp for ArgExtreme<$largest> {
            fn tf_type(&self) -> &'static str {
                $tf_type
            }

            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[$name, concat!("math.", $name)],
                doc: $doc,
                differentiable: false,
                inputs: &[Input { torch: "input", tf: "input", list: false }],
                params: ARG_PARAMS,
            };

            fn build(args: &Args) -> Result<Self> {
                Self::build_from(args)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                self.run(nth(inputs, 0, $name)?)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                self.infer_shape(inputs)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: 0, output: false }
            }

            fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![None])
            }
        }
    };
}

arg_extreme_op!(
    true,
    "argmax",
    "ArgMax",
    "The index of the largest element along `dim` (of the flattened tensor when `dim` is None; TF1's \
     `axis=None` is dim 0), as int64; the first of equal elements, and NaN counts as the largest."
);
arg_extreme_op!(
    false,
    "argmin",
    "ArgMin",
    "The index of the smallest element along `dim` (of the flattened tensor when `dim` is None; TF1's \
     `axis=None` is dim 0), as int64; the first of equal elements, and a NaN is picked as in `argmax`."
);

/// The permutation that sorts along `dim`, or its first `k` positions (what `topk` uses).
#[derive(Clone, Debug)]
pub struct Argsort {
    dim: isize,
    descending: bool,
    k: Option<usize>,
}

const ARGSORT_PARAMS: &[Param] = &[
    Param {
        torch: "dim",
        tf: "axis",
        tf_aliases: &[],
        kind: Kind::Int,
        torch_default: Some("-1"),
        tf_default: Some("-1"),
    },
    Param {
        torch: "descending",
        tf: "",
        tf_aliases: &[],
        kind: Kind::Bool,
        torch_default: Some("False"),
        tf_default: None,
    },
    Param {
        torch: "",
        tf: "direction",
        tf_aliases: &[],
        kind: Kind::Str,
        torch_default: None,
        tf_default: Some("'ASCENDING'"),
    },
    // Equal elements always keep their order: the sort is stable whatever this says.
    Param {
        torch: "stable",
        tf: "stable",
        tf_aliases: &[],
        kind: Kind::Bool,
        torch_default: Some("False"),
        tf_default: Some("False"),
    },
    // Neither front names this: `topk` asks for the first k positions (-1: all of them).
    Param { torch: "", tf: "", tf_aliases: &[], kind: Kind::Int, torch_default: Some("-1"), tf_default: Some("-1") },
];

impl TableOp for Argsort {
    const SPEC: Spec = Spec {
        name: "argsort",
        torch_aliases: &[],
        tf: &["argsort"],
        doc: "The indices that sort the elements along `dim` (ascending unless `descending`, or TF1's \
              `direction='DESCENDING'`), as int64. The sort is stable, and NaN sorts above every number.",
        differentiable: false,
        inputs: &[Input { torch: "input", tf: "values", list: false }],
        params: ARGSORT_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        let descending = match args.text(2)? {
            "ASCENDING" => args.flag(1)?,
            "DESCENDING" => true,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "argsort: direction should be one of ASCENDING, DESCENDING, got '{other}'"
                )))
            }
        };
        let k = args.int(4)?;
        Ok(Argsort { dim: args.int(0)?, descending, k: usize::try_from(k).ok() })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "argsort")?;
        let dim = normalize_dim("argsort", self.dim, x.rank())?;
        let shape = along(x.shape(), dim);
        let k = self.k.unwrap_or(shape.n);
        if k > shape.n {
            return Err(Error::InvalidArgument(format!(
                "topk: k ({k}) is larger than the {} elements along dimension {dim} (shape {})",
                shape.n,
                fmt_shape(x.shape())
            )));
        }
        let x = if x.dtype() == DType::Bool { forward::cast(x, DType::U8)? } else { x.clone() };
        let indices = numeric_dispatch!(x.dtype(), "argsort", |T| {
            x.with_contiguous(|s: &[T]| ordering::argsort(s, shape, self.descending, k))?
        });
        let mut out_shape = x.shape().to_vec();
        if let Some(size) = out_shape.get_mut(dim) {
            *size = k;
        }
        Tensor::from_vec(indices, out_shape)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, _) = *nth(inputs, 0, "argsort")?;
        let Some(dims) = shape else { return Ok((None, DType::I64)) };
        let dim = normalize_dim("argsort", self.dim, dims.len())?;
        let mut out = dims.clone();
        if let (Some(k), Some(size)) = (self.k, out.get_mut(dim)) {
            if let Some(n) = *size {
                if k > n {
                    return Err(Error::InvalidArgument(format!(
                        "top_k: input must have at least k columns. Had {n}, needed {k}"
                    )));
                }
            }
            *size = Some(k);
        }
        Ok((Some(out), DType::I64))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}

/// `input`'s elements at `indices` along `dim` (of the flattened tensors when `dim` is
/// None); the other dims broadcast.
#[derive(Clone, Debug)]
pub struct TakeAlongDim {
    dim: Option<isize>,
}

impl TakeAlongDim {
    /// `take_along_dim(.., dim)`, for rules that emit it.
    pub fn along(dim: isize) -> TakeAlongDim {
        TakeAlongDim { dim: Some(dim) }
    }

    /// The walk, the (flattened) operands' shapes and the dim, checked.
    fn plan(&self, x: &Tensor, indices: &Tensor) -> Result<(Along, usize)> {
        let op = "take_along_dim";
        if !indices.dtype().is_integer() {
            return dtype_err(format!(
                "{op}: the indices must be an integer tensor (int64, as argmax and argsort give), got {}",
                indices.dtype().name()
            ));
        }
        let (x_shape, index_shape, dim) = match self.dim {
            None => (vec![x.numel()], vec![indices.numel()], 0),
            Some(d) => {
                let dim = normalize_dim(op, d, x.rank().max(1))?;
                let lift = |s: &[usize]| if s.is_empty() { vec![1] } else { s.to_vec() };
                (lift(x.shape()), lift(indices.shape()), dim)
            }
        };
        let along = Along::new(&x_shape, &index_shape, dim).ok_or_else(|| {
            Error::Shape(format!(
                "{op}: input of shape {} and indices of shape {} must have one rank and sizes that broadcast \
                 except along dim {dim}",
                fmt_shape(x.shape()),
                fmt_shape(indices.shape())
            ))
        })?;
        Ok((along, x_shape[dim]))
    }

    fn out_of_range(index: i64, size: usize) -> Error {
        Error::Index(format!("take_along_dim: index {index} is out of bounds for a dimension of size {size}"))
    }

    /// The output shape: the broadcast shape, or the indices' shape for 0-d operands.
    fn out_shape(&self, along: &Along, x: &Tensor, indices: &Tensor) -> Vec<usize> {
        match self.dim {
            Some(_) if x.rank() == 0 && indices.rank() == 0 => vec![],
            _ => along.out_shape.clone(),
        }
    }
}

impl TableOp for TakeAlongDim {
    const SPEC: Spec = Spec {
        name: "take_along_dim",
        torch_aliases: &[],
        tf: &[],
        doc: "The elements of `input` at `indices` along `dim` (of the flattened tensors when `dim` is None), \
              the other dims broadcasting: what `argmax(dim, keepdim=True)` and `argsort` point at.",
        differentiable: true,
        inputs: &[
            Input { torch: "input", tf: "input", list: false },
            Input { torch: "indices", tf: "indices", list: false },
        ],
        params: &[Param {
            torch: "dim",
            tf: "dim",
            tf_aliases: &[],
            kind: Kind::OptDims,
            torch_default: Some("None"),
            tf_default: Some("None"),
        }],
    };
    const ROLES: &'static [Role] = &[Role::Data, Role::Index];

    fn build(args: &Args) -> Result<Self> {
        Ok(TakeAlongDim { dim: single_dim("take_along_dim", args.dims(0)?)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, indices) = (*nth(inputs, 0, "take_along_dim")?, *nth(inputs, 1, "take_along_dim")?);
        let (along, size) = self.plan(x, indices)?;
        let out_shape = self.out_shape(&along, x, indices);
        take_along(x, indices, &along, out_shape, |i| Self::out_of_range(i, size))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((x_shape, dtype), (index_shape, index_dtype)) =
            (*nth(inputs, 0, "take_along_dim")?, *nth(inputs, 1, "take_along_dim")?);
        if !index_dtype.is_integer() {
            return dtype_err(format!(
                "take_along_dim: the indices must be an integer tensor, got {}",
                index_dtype.name()
            ));
        }
        let shape = match (self.dim, x_shape, index_shape) {
            (None, _, Some(i)) => Some(vec![i.iter().try_fold(1usize, |acc, d| d.map(|d| acc * d))]),
            (None, _, None) => Some(vec![None]),
            (Some(d), Some(x), Some(i)) if x.len() == i.len() => {
                let dim = normalize_dim("take_along_dim", d, x.len().max(1))?;
                let out = x.iter().zip(i).enumerate().map(|(k, (a, b))| match (k == dim, a, b) {
                    (true, _, b) => *b,
                    (false, Some(1), b) => *b,
                    (false, a, _) => *a,
                });
                Some(out.collect())
            }
            (Some(_), Some(x), Some(i)) => {
                return Err(Error::Shape(format!(
                    "take_along_dim: input of rank {} and indices of rank {} must have one rank",
                    x.len(),
                    i.len()
                )))
            }
            _ => None,
        };
        Ok((shape, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // The indices' values; the input's shape only, which the tape keeps anyway.
        Saves { inputs: 0b10, output: false }
    }

    /// Each output's gradient goes back to the element it was taken from.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (x, indices) = (nth(a.inputs, 0, "take_along_dim")?, nth(a.inputs, 1, "take_along_dim")?);
        let back = TakeAlongDimGrad { take: self.clone() };
        Ok(vec![Some(d.apply(Op::Table(TableOps::TakeAlongDimGrad(back)), &[a.grad, x, indices])?), None])
    }
}

/// The elements of `x` that `along` picks by `indices`, as a tensor of `out_shape`;
/// `out_of_range(index)` is the error for the first index outside the dim.
pub(super) fn take_along(
    x: &Tensor,
    indices: &Tensor,
    along: &Along,
    out_shape: Vec<usize>,
    out_of_range: impl Fn(i64) -> Error,
) -> Result<Tensor> {
    with_int64(indices, |idx| {
        dispatch!(x.dtype(), |T| {
            let values = x.with_contiguous(|s: &[T]| along.take(s, idx))?.map_err(&out_of_range)?;
            Tensor::from_vec(values, out_shape)
        })
    })
}

/// `f` on the indices' values as int64, copied only when they are not contiguous int64 already.
fn with_int64<R>(indices: &Tensor, f: impl FnOnce(&[i64]) -> Result<R>) -> Result<R> {
    let cast;
    let indices = if indices.dtype() == DType::I64 {
        indices
    } else {
        cast = forward::cast(indices, DType::I64)?;
        &cast
    };
    indices.with_contiguous(f)?
}

/// `(g, x, indices)`: the gradient of `take_along_dim(x, indices)`: zeros of `x`'s shape
/// with each element of `g` added where it was taken from.
#[derive(Clone, Debug)]
pub struct TakeAlongDimGrad {
    take: TakeAlongDim,
}

impl TableOp for TakeAlongDimGrad {
    const SPEC: Spec = internal("take_along_dim_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("take_along_dim_backward is built by take_along_dim's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = "take_along_dim_backward";
        let (g, x, indices) = (*nth(inputs, 0, op)?, *nth(inputs, 1, op)?, *nth(inputs, 2, op)?);
        let (along, size) = self.take.plan(x, indices)?;
        let g = forward::as_dtype(g, x.dtype())?;
        with_int64(indices, |idx| {
            float_dispatch!(x.dtype(), op, |T| {
                let out = g
                    .with_contiguous(|gv: &[T]| along.scatter_add(gv, x.numel(), idx))?
                    .map_err(|i| TakeAlongDim::out_of_range(i, size))?;
                Tensor::from_vec(out, x.shape())
            })
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "take_along_dim_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads the indices.
        Saves { inputs: 0b100, output: false }
    }

    /// Linear in g: the adjoint of the scatter-add is the pick itself.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(vec![None, None, None]);
        }
        let indices = nth(a.inputs, 2, "take_along_dim_backward")?;
        let take = Op::Table(TableOps::TakeAlongDim(self.take.clone()));
        Ok(vec![Some(d.apply(take, &[a.grad, indices])?), None, None])
    }
}
