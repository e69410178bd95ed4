//! Matrix structure: `diag` (torch's and TF1's), `diag_embed` (TF `linalg.diag`),
//! `trace` (TF `linalg.trace`), and the band masks `tril`, `triu` and `band_part`
//! (TF `linalg.band_part`). Batched ops act on the last two dims.

use super::layout::{meta, only, reshaped, same_as};
use super::slicing::{embed, Diagonal};
use super::TF_SEMANTICS;
use super::{internal, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps};
use crate::dtype::DType;
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::normalize_dim;
use crate::tensor::Tensor;

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

const fn int_param(
    torch: &'static str,
    tf: &'static str,
    torch_default: &'static str,
    tf_default: &'static str,
) -> Param {
    Param {
        torch,
        tf,
        tf_aliases: &[],
        kind: Kind::Int,
        torch_default: Some(torch_default),
        tf_default: Some(tf_default),
    }
}

fn apply<D: Differentiator>(d: &mut D, op: TableOps, inputs: &[&D::Value]) -> Result<D::Value> {
    d.apply(Op::Table(op), inputs)
}

// ---------------------------------------------------------------- diag_embed

#[derive(Clone, Debug)]
pub struct DiagEmbed {
    offset: isize,
    dim1: isize,
    dim2: isize,
}

impl DiagEmbed {
    /// The output's dims for input dims `dims`: the last one becomes the (dim1, dim2) planes' diagonal.
    fn out_dims(&self, dims: &[Option<usize>]) -> Result<Vec<Option<usize>>> {
        let Some((last, others)) = dims.split_last() else {
            return shape_err("diag_embed: expected a tensor of at least 1 dim, got a 0-d one");
        };
        let rank = dims.len() + 1;
        let (a, b) = (normalize_dim("diag_embed", self.dim1, rank)?, normalize_dim("diag_embed", self.dim2, rank)?);
        if a == b {
            return shape_err(format!("diag_embed: dim1 and dim2 cannot be the same dim ({a})"));
        }
        let side = match last.map(|n| n.checked_add(self.offset.unsigned_abs())) {
            Some(None) => return shape_err(format!("diag_embed: the offset {} is too large", self.offset)),
            side => side.flatten(),
        };
        let mut rest = others.iter();
        Ok((0..rank).map(|i| if i == a || i == b { side } else { rest.next().copied().flatten() }).collect())
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::new(self.offset, self.dim1, self.dim2)
    }

    fn embed(&self, x: &Tensor) -> Result<Tensor> {
        let dims: Vec<Option<usize>> = x.shape().iter().map(|&n| Some(n)).collect();
        let shape: Vec<usize> = self.out_dims(&dims)?.into_iter().map(|d| d.unwrap_or(0)).collect();
        let out = Tensor::zeros(&shape, x.dtype())?;
        crate::forward::write_into(&self.diagonal().of(&out)?, x)?;
        Ok(out)
    }
}

impl TableOp for DiagEmbed {
    const SPEC: Spec = Spec {
        name: "diag_embed",
        torch_aliases: &[],
        tf: &["linalg.diag", "matrix_diag"],
        doc: "Matrices (in the dims `dim1`, `dim2`) whose diagonal `offset` holds the last dim of the input, \
              zero elsewhere.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "diagonal", list: false }],
        params: &[
            int_param("offset", "", "0", "0"),
            int_param("dim1", "", "-2", "-2"),
            int_param("dim2", "", "-1", "-1"),
        ],
    };

    fn tf_type(&self) -> &'static str {
        "MatrixDiag"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(DiagEmbed { offset: args.int(0)?, dim1: args.int(1)?, dim2: args.int(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.embed(only(inputs, "diag_embed")?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "diag_embed")?;
        Ok((shape.as_deref().map(|dims| self.out_dims(dims)).transpose()?, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(apply(d, TableOps::Diagonal(self.diagonal()), &[a.grad])?)])
    }
}

// ---------------------------------------------------------------- diag

/// torch's `diag`: a 1-D tensor's matrix, or a matrix's diagonal; TF1's: rank k to rank 2k.
#[derive(Clone, Debug)]
pub struct Diag {
    diagonal: isize,
    tf: bool,
}

impl Diag {
    fn torch_embed(&self) -> DiagEmbed {
        DiagEmbed { offset: self.diagonal, dim1: 0, dim2: 1 }
    }

    fn out_dims(&self, dims: &[Option<usize>]) -> Result<Vec<Option<usize>>> {
        match (self.tf, dims.len()) {
            (true, 0) => shape_err("diag: Input must be at least rank 1, got 0"),
            (true, _) => Ok([dims, dims].concat()),
            (false, 1) => self.torch_embed().out_dims(dims),
            (false, 2) => Ok(Diagonal::new(self.diagonal, 0, 1).infer_shape(&Some(dims.to_vec()))?.unwrap_or_default()),
            (false, r) => shape_err(format!("diag: expected a 1-D or 2-D tensor, got a {r}-D one")),
        }
    }
}

impl TableOp for Diag {
    const SPEC: Spec = Spec {
        name: "diag",
        torch_aliases: &[],
        tf: &["diag"],
        doc: "torch: the matrix with a 1-D input on its diagonal `diagonal`, or a matrix's diagonal. TF1: a \
              rank-2k tensor with the rank-k input on its diagonal.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "diagonal", list: false }],
        params: &[int_param("diagonal", "", "0", "0"), TF_SEMANTICS],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Diag { diagonal: args.int(0)?, tf: args.flag(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "diag")?;
        let dims: Vec<Option<usize>> = x.shape().iter().map(|&n| Some(n)).collect();
        self.out_dims(&dims)?;
        if self.tf {
            let square = DiagEmbed { offset: 0, dim1: 0, dim2: 1 }.embed(&reshaped(x, &[x.numel()])?)?;
            return square.copy_with_shape(&[x.shape(), x.shape()].concat());
        }
        match x.rank() {
            1 => self.torch_embed().embed(x),
            _ => crate::forward::copy(&Diagonal::new(self.diagonal, 0, 1).of(x)?),
        }
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "diag")?;
        Ok((shape.as_deref().map(|dims| self.out_dims(dims)).transpose()?, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = super::nth(a.inputs, 0, "diag")?;
        Ok(vec![Some(apply(d, TableOps::DiagGrad(DiagGrad { diag: self.clone() }), &[a.grad, x])?)])
    }
}

/// `(g, x)`: the gradient of `diag` at `x`, whose rank says which way it went (known at run time).
#[derive(Clone, Debug)]
pub struct DiagGrad {
    diag: Diag,
}

impl TableOp for DiagGrad {
    const SPEC: Spec = internal("diag_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("diag_backward is built by diag's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (only(inputs, "diag_backward")?, *super::nth(inputs, 1, "diag_backward")?);
        let Diag { diagonal, tf } = self.diag;
        if tf {
            let n = x.numel();
            let picked = Diagonal::new(0, 0, 1).of(&reshaped(g, &[n, n])?)?;
            return reshaped(&crate::forward::copy(&picked)?, x.shape());
        }
        let window = Diagonal::new(diagonal, 0, 1);
        match x.rank() {
            1 => crate::forward::copy(&window.of(g)?),
            _ => embed(g, x, |t| window.of(t)),
        }
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((_, dtype), (shape, _)) = (meta(inputs, 0, "diag_backward")?, meta(inputs, 1, "diag_backward")?);
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(apply(d, TableOps::Diag(self.diag.clone()), &[a.grad])?), None])
    }
}

// ---------------------------------------------------------------- trace

#[derive(Clone, Debug)]
pub struct Trace {
    /// TF's rule: the traces of the matrices in the last two dims. torch takes matrices only.
    batched: bool,
}

impl Trace {
    fn check_rank(&self, rank: usize) -> Result<()> {
        match (self.batched, rank) {
            (false, 2) | (true, 2..) => Ok(()),
            (false, r) => shape_err(format!("trace: expected a matrix, got a {r}-D tensor")),
            (true, r) => shape_err(format!("trace: expected a tensor of at least 2 dims, got {r}")),
        }
    }
}

fn main_diagonal() -> Diagonal {
    Diagonal::new(0, -2, -1)
}

impl TableOp for Trace {
    const SPEC: Spec = Spec {
        name: "trace",
        torch_aliases: &[],
        tf: &["trace", "linalg.trace"],
        doc: "The sum of a matrix's main diagonal; TF1's takes the matrices in the last two dims.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "x", list: false }],
        params: &[TF_SEMANTICS],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Trace { batched: args.flag(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = only(inputs, "trace")?;
        self.check_rank(x.rank())?;
        crate::forward::sum(&main_diagonal().of(x)?, Some(&[-1]), false, false)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "trace")?;
        if !dtype.is_float() {
            return dtype_err(format!("trace: expected a float tensor, got {}", dtype.name()));
        }
        let Some(dims) = shape else { return Ok((None, dtype)) };
        self.check_rank(dims.len())?;
        Ok((Some(dims[..dims.len() - 2].to_vec()), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = super::nth(a.inputs, 0, "trace")?;
        Ok(vec![Some(apply(d, TableOps::TraceGrad(TraceGrad), &[a.grad, x])?)])
    }
}

/// `(g, x)`: zeros of `x`'s shape with each trace's gradient along its matrix's main diagonal.
#[derive(Clone, Debug)]
pub struct TraceGrad;

impl TableOp for TraceGrad {
    const SPEC: Spec = internal("trace_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("trace_backward is built by trace's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (only(inputs, "trace_backward")?, *super::nth(inputs, 1, "trace_backward")?);
        let column = reshaped(g, &[g.shape(), &[1]].concat())?;
        embed(&column, x, |t| main_diagonal().of(t))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((_, dtype), (shape, _)) = (meta(inputs, 0, "trace_backward")?, meta(inputs, 1, "trace_backward")?);
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(apply(d, TableOps::Trace(Trace { batched: true }), &[a.grad])?), None])
    }
}

// ---------------------------------------------------------------- band masks

/// `x` with the elements of each matrix (last two dims) outside the band zeroed: the band
/// keeps `[i, j]` where `lo <= j - i <= hi` (None: no bound on that side).
fn band(op: &str, x: &Tensor, lo: Option<isize>, hi: Option<isize>) -> Result<Tensor> {
    check_matrices(op, x.rank())?;
    let (rows, cols) = (x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]);
    let keep = |k: usize| {
        let diff = (k % cols) as isize - (k / cols) as isize;
        lo.is_none_or(|l| diff >= l) && hi.is_none_or(|h| diff <= h)
    };
    let mask = Tensor::from_vec((0..rows * cols).map(keep).collect::<Vec<bool>>(), [rows, cols].as_slice())?;
    crate::forward::where_select(&mask, x, &Tensor::zeros(&[], x.dtype())?)
}

fn check_matrices(op: &str, rank: usize) -> Result<()> {
    if rank < 2 {
        return shape_err(format!("{op}: expected a tensor of at least 2 dims, got {rank}"));
    }
    Ok(())
}

fn infer_band(op: &str, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let input = meta(inputs, 0, op)?;
    if let Some(dims) = input.0 {
        check_matrices(op, dims.len())?;
    }
    Ok(same_as(input))
}

macro_rules! band_op {
    (
        $ty:ident { $($field:ident: $index:literal),* }, $name:literal, tf: $tf:expr, doc: $doc:literal,
        params: $params:expr, bounds: |$s:ident| $bounds:expr $(, tf_type: $tf_type:literal)?
    ) => {
        #[derive(Clone, Debug)]
        pub struct $ty {
            $($field: isize,)*
        }

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: $tf,
                doc: $doc,
                differentiable: true,
                inputs: &[Input { torch: "input", tf: "input", list: false }],
                params: $params,
            };

            $(fn tf_type(&self) -> &'static str {
                $tf_type
            })?

            fn build(args: &Args) -> Result<Self> {
                Ok($ty { $($field: args.int($index)?,)* })
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let $s = self;
                let (lo, hi) = $bounds;
                band($name, only(inputs, $name)?, lo, hi)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                infer_band($name, inputs)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                NO_SAVES
            }

            /// The mask is linear and its own adjoint: the gradient is masked the same way.
            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![Some(apply(d, TableOps::$ty(self.clone()), &[a.grad])?)])
            }
        }
    };
}

band_op!(
    Tril { diagonal: 0 }, "tril", tf: &[],
    doc: "The lower triangle of each matrix (last two dims), on and below the diagonal `diagonal`; zeros above.",
    params: &[int_param("diagonal", "diagonal", "0", "0")],
    bounds: |s| (None, Some(s.diagonal))
);

band_op!(
    Triu { diagonal: 0 }, "triu", tf: &[],
    doc: "The upper triangle of each matrix (last two dims), on and above the diagonal `diagonal`; zeros below.",
    params: &[int_param("diagonal", "diagonal", "0", "0")],
    bounds: |s| (Some(s.diagonal), None)
);

band_op!(
    BandPart { num_lower: 0, num_upper: 1 }, "band_part", tf: &["linalg.band_part", "matrix_band_part"],
    doc: "Each matrix's band: `num_lower` diagonals below the main one and `num_upper` above (negative: all).",
    params: &[
        Param { torch: "num_lower", tf: "num_lower", tf_aliases: &[], kind: Kind::Int, torch_default: None, tf_default: None },
        Param { torch: "num_upper", tf: "num_upper", tf_aliases: &[], kind: Kind::Int, torch_default: None, tf_default: None },
    ],
    bounds: |s| ((s.num_lower >= 0).then_some(-s.num_lower), (s.num_upper >= 0).then_some(s.num_upper)),
    tf_type: "MatrixBandPart"
);
