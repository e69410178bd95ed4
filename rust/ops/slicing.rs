//! Windows into a tensor, all views: `narrow`, `select` and `diagonal` (TF
//! `linalg.diag_part`). Their gradient is one internal op, `window_backward`: zeros of
//! the input's shape (read at run time) with the gradient written into the same window.

use super::layout::{meta, narrowed, only, static_dim};
use super::{internal, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, ONE_INPUT};
use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{normalize_dim, Shape, Strides};
use crate::tensor::Tensor;

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

const fn int_param(name: &'static str, default: Option<&'static str>) -> Param {
    Param { torch: name, tf: name, tf_aliases: &[], kind: Kind::Int, torch_default: default, tf_default: default }
}

/// The gradient of a window: `window_backward(g, x)`.
fn window_grad<D: Differentiator>(d: &mut D, window: Window, a: &RuleArgs<'_, D::Value>) -> Result<D::Value> {
    let x = super::nth(a.inputs, 0, window.name())?;
    d.apply(Op::Table(TableOps::WindowGrad(WindowGrad { window })), &[a.grad, x])
}

// ---------------------------------------------------------------- narrow

#[derive(Clone, Debug)]
pub struct Narrow {
    dim: isize,
    start: isize,
    length: isize,
}

impl Narrow {
    /// The dim, and the start and length resolved against that dim's size `n`.
    fn resolve(&self, rank: usize, n: Option<usize>) -> Result<(usize, Option<usize>)> {
        if rank == 0 {
            return shape_err("narrow: cannot be applied to a 0-d tensor");
        }
        let dim = normalize_dim("narrow", self.dim, rank)?;
        if self.length < 0 {
            return shape_err(format!("narrow: length must be non-negative, got {}", self.length));
        }
        let Some(n) = n else { return Ok((dim, (self.start >= 0).then_some(self.start as usize))) };
        let size = n as isize;
        if self.start < -size || self.start > size {
            return Err(Error::Index(format!(
                "narrow: start out of range (expected to be in range of [{}, {size}], but got {})",
                -size, self.start
            )));
        }
        let start = if self.start < 0 { self.start + size } else { self.start };
        if start.saturating_add(self.length) > size {
            return Err(Error::Index(format!(
                "narrow: start ({start}) + length ({}) exceeds dimension size ({size})",
                self.length
            )));
        }
        Ok((dim, Some(start as usize)))
    }

    fn of(&self, x: &Tensor) -> Result<Tensor> {
        let rank = x.rank();
        let n = (rank > 0).then(|| x.shape()[normalize_dim("narrow", self.dim, rank).unwrap_or(0)]);
        let (dim, start) = self.resolve(rank, n)?;
        narrowed(x, dim, start.unwrap_or(0), self.length as usize)
    }
}

impl TableOp for Narrow {
    const SPEC: Spec = Spec {
        name: "narrow",
        torch_aliases: &[],
        tf: &[],
        doc: "The `length` elements from `start` along `dim` (a negative start counts from the end), as a view.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[int_param("dim", None), int_param("start", None), int_param("length", None)],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Narrow { dim: args.int(0)?, start: args.int(1)?, length: args.int(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.of(only(inputs, "narrow")?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "narrow")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        let n = static_dim("narrow", self.dim, shape).ok().flatten().and_then(|d| dims[d]);
        let (dim, _) = self.resolve(dims.len(), n)?;
        let mut out = dims.clone();
        out[dim] = Some(self.length as usize);
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(window_grad(d, Window::Narrow(self.clone()), &a)?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- select

#[derive(Clone, Debug)]
pub struct Select {
    dim: isize,
    index: isize,
}

impl Select {
    pub fn new(dim: isize, index: isize) -> Select {
        Select { dim, index }
    }

    fn resolve(&self, rank: usize, n: Option<usize>) -> Result<(usize, Option<usize>)> {
        if rank == 0 {
            return Err(Error::Index("select: cannot be applied to a 0-d tensor".into()));
        }
        let dim = normalize_dim("select", self.dim, rank)?;
        let Some(n) = n else { return Ok((dim, None)) };
        let size = n as isize;
        if self.index < -size || self.index >= size {
            return Err(Error::Index(format!(
                "select: index {} out of range for tensor of size {n} at dimension {dim}",
                self.index
            )));
        }
        Ok((dim, Some(if self.index < 0 { self.index + size } else { self.index } as usize)))
    }

    fn of(&self, x: &Tensor) -> Result<Tensor> {
        let rank = x.rank();
        let n = (rank > 0).then(|| x.shape()[normalize_dim("select", self.dim, rank).unwrap_or(0)]);
        let (dim, index) = self.resolve(rank, n)?;
        let one = narrowed(x, dim, index.unwrap_or(0), 1)?;
        let (mut shape, mut strides) = (Shape::from_slice(one.shape()), Strides::from_slice(one.strides()));
        shape.remove(dim);
        strides.remove(dim);
        x.view_as_layout(shape, strides, one.offset())
    }
}

impl TableOp for Select {
    const SPEC: Spec = Spec {
        name: "select",
        torch_aliases: &[],
        tf: &[],
        doc: "The slice at `index` along `dim`, which goes (`x[..., index, ...]`), as a view.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[int_param("dim", None), int_param("index", None)],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Select { dim: args.int(0)?, index: args.int(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.of(only(inputs, "select")?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "select")?;
        let Some(dims) = shape else { return Ok((None, dtype)) };
        let n = static_dim("select", self.dim, shape).ok().flatten().and_then(|d| dims[d]);
        let (dim, _) = self.resolve(dims.len(), n)?;
        let mut out = dims.clone();
        out.remove(dim);
        Ok((Some(out), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(window_grad(d, Window::Select(self.clone()), &a)?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- diagonal

#[derive(Clone, Debug)]
pub struct Diagonal {
    offset: isize,
    dim1: isize,
    dim2: isize,
}

impl Diagonal {
    pub fn new(offset: isize, dim1: isize, dim2: isize) -> Diagonal {
        Diagonal { offset, dim1, dim2 }
    }

    fn dims(&self, rank: usize) -> Result<(usize, usize)> {
        if rank < 2 {
            return shape_err(format!("diagonal: expected a tensor of at least 2 dims, got {rank}"));
        }
        let (a, b) = (normalize_dim("diagonal", self.dim1, rank)?, normalize_dim("diagonal", self.dim2, rank)?);
        if a == b {
            return shape_err(format!("diagonal: dim1 and dim2 cannot be the same dim ({a})"));
        }
        Ok((a, b))
    }

    /// The diagonal's length for sides `n1` (along dim1) and `n2`.
    fn length(&self, n1: usize, n2: usize) -> usize {
        let (n1, n2) = (n1 as isize, n2 as isize);
        let len = if self.offset >= 0 {
            n1.min(n2.saturating_sub(self.offset))
        } else {
            n1.saturating_add(self.offset).min(n2)
        };
        len.max(0) as usize
    }

    /// The view of the diagonal of `x`: the other dims in order, then the diagonal.
    pub fn of(&self, x: &Tensor) -> Result<Tensor> {
        let (a, b) = self.dims(x.rank())?;
        let (shape, strides) = (x.shape(), x.strides());
        let len = self.length(shape[a], shape[b]);
        let mut offset = x.offset() as isize;
        if len > 0 {
            offset += if self.offset >= 0 { self.offset * strides[b] } else { -self.offset * strides[a] };
        }
        let others = (0..x.rank()).filter(|&i| i != a && i != b);
        let mut out_shape: Vec<usize> = others.clone().map(|i| shape[i]).collect();
        let mut out_strides: Vec<isize> = others.map(|i| strides[i]).collect();
        out_shape.push(len);
        out_strides.push(strides[a] + strides[b]);
        x.view_as_layout(out_shape, out_strides, offset as usize)
    }

    pub fn infer_shape(&self, shape: &PartialShape) -> Result<PartialShape> {
        let Some(dims) = shape else { return Ok(None) };
        let (a, b) = self.dims(dims.len())?;
        let mut out: Vec<Option<usize>> = (0..dims.len()).filter(|&i| i != a && i != b).map(|i| dims[i]).collect();
        out.push(dims[a].zip(dims[b]).map(|(n1, n2)| self.length(n1, n2)));
        Ok(Some(out))
    }
}

const DIAGONAL_PARAMS: &[Param] = &[
    Param {
        torch: "offset",
        tf: "",
        tf_aliases: &[],
        kind: Kind::Int,
        torch_default: Some("0"),
        tf_default: Some("0"),
    },
    Param { torch: "dim1", tf: "", tf_aliases: &[], kind: Kind::Int, torch_default: Some("0"), tf_default: Some("-2") },
    Param { torch: "dim2", tf: "", tf_aliases: &[], kind: Kind::Int, torch_default: Some("1"), tf_default: Some("-1") },
];

impl TableOp for Diagonal {
    const SPEC: Spec = Spec {
        name: "diagonal",
        torch_aliases: &[],
        tf: &["linalg.diag_part", "matrix_diag_part"],
        doc: "The diagonal of the (dim1, dim2) planes, `offset` above the main one, as a view; it becomes the last \
              dim. TF1's `diag_part` takes the last two dims.",
        differentiable: true,
        inputs: &[Input { torch: "input", tf: "input", list: false }],
        params: DIAGONAL_PARAMS,
    };

    fn tf_type(&self) -> &'static str {
        "MatrixDiagPart"
    }

    fn build(args: &Args) -> Result<Self> {
        Ok(Diagonal { offset: args.int(0)?, dim1: args.int(1)?, dim2: args.int(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.of(only(inputs, "diagonal")?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = meta(inputs, 0, "diagonal")?;
        Ok((self.infer_shape(shape)?, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(window_grad(d, Window::Diagonal(self.clone()), &a)?)])
    }

    fn is_view(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------- the gradient of a window

/// Which window of the input an op reads.
#[derive(Clone, Debug)]
pub enum Window {
    Narrow(Narrow),
    Select(Select),
    Diagonal(Diagonal),
}

impl Window {
    fn name(&self) -> &'static str {
        match self {
            Window::Narrow(_) => "narrow",
            Window::Select(_) => "select",
            Window::Diagonal(_) => "diagonal",
        }
    }

    fn of(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Window::Narrow(op) => op.of(x),
            Window::Select(op) => op.of(x),
            Window::Diagonal(op) => op.of(x),
        }
    }

    fn op(&self) -> TableOps {
        match self {
            Window::Narrow(op) => TableOps::Narrow(op.clone()),
            Window::Select(op) => TableOps::Select(op.clone()),
            Window::Diagonal(op) => TableOps::Diagonal(op.clone()),
        }
    }
}

/// `(g, x)`: zeros of `x`'s shape with `g` written into the window of the op it reverses.
#[derive(Clone, Debug)]
pub struct WindowGrad {
    window: Window,
}

/// Zeros of `like`'s shape and `g`'s dtype with `g` written into the `window` view of them.
pub fn embed(g: &Tensor, like: &Tensor, window: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let out = Tensor::zeros(like.shape(), g.dtype())?;
    crate::forward::write_into(&window(&out)?, g)?;
    Ok(out)
}

impl TableOp for WindowGrad {
    const SPEC: Spec = internal("window_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("window_backward is built by the rules of narrow, select and diagonal only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, like) = (only(inputs, "window_backward")?, *super::nth(inputs, 1, "window_backward")?);
        embed(g, like, |t| self.window.of(t))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((_, dtype), (shape, _)) = (meta(inputs, 0, "window_backward")?, meta(inputs, 1, "window_backward")?);
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    /// The window is linear in `g`: the gradient of its gradient is the window again.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(d.apply(Op::Table(self.window.op()), &[a.grad])?), None])
    }
}
