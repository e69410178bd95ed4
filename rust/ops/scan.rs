//! Scans along one dim: `cumsum` and `cumprod` (and `cumprod`'s gradient, which its rule emits).

use super::reduce::accumulated_dtype;
use super::TF_SEMANTICS;
use super::{internal, nth, Args, Kind, Meta, Param, Spec, TableOp, TableOps, ONE_INPUT};
use crate::dtype::DType;
use crate::dtype::{float_dispatch, numeric_dispatch};
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::scan::{self, ScanOrder, ScanShape};
use crate::op::Op;
use crate::rules::{vjp_of_composite, Differentiator, RuleArgs, Saves};
use crate::shape::normalize_dim;
use crate::tensor::Tensor;

/// The dim a scan runs along, and TF's `exclusive` and `reverse` (torch has neither).
const SCAN_PARAMS: &[Param] = &[
    Param { torch: "dim", tf: "axis", tf_aliases: &[], kind: Kind::Int, torch_default: None, tf_default: Some("0") },
    Param {
        torch: "",
        tf: "exclusive",
        tf_aliases: &[],
        kind: Kind::Bool,
        torch_default: None,
        tf_default: Some("False"),
    },
    Param {
        torch: "",
        tf: "reverse",
        tf_aliases: &[],
        kind: Kind::Bool,
        torch_default: None,
        tf_default: Some("False"),
    },
    TF_SEMANTICS,
];

#[derive(Clone, Debug)]
pub struct Cumsum {
    dim: isize,
    order: ScanOrder,
    widen: bool,
}

/// The block a scan along `dim` of `shape` walks.
fn scan_shape(shape: &[usize], dim: usize) -> ScanShape {
    if shape.is_empty() {
        return ScanShape { outer: 1, n: 1, inner: 1 };
    }
    ScanShape { outer: shape[..dim].iter().product(), n: shape[dim], inner: shape[dim + 1..].iter().product() }
}

/// A scan's output: its input's shape and the dtype of its sums or products, once `dim`
/// is checked against the rank.
fn infer_scan(op: &str, dim: isize, widen: bool, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let (shape, dtype) = *nth(inputs, 0, op)?;
    if let Some(dims) = shape {
        normalize_dim(op, dim, dims.len())?;
    }
    Ok((shape.clone(), accumulated_dtype(op, dtype, widen)?))
}

impl TableOp for Cumsum {
    const SPEC: Spec = Spec {
        name: "cumsum",
        torch_aliases: &[],
        tf: &["cumsum", "math.cumsum"],
        doc: "Running sums along `dim`.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: SCAN_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        let order = ScanOrder { exclusive: args.flag(1)?, reverse: args.flag(2)? };
        Ok(Cumsum { dim: args.int(0)?, order, widen: !args.flag(3)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "cumsum")?;
        let shape = scan_shape(x.shape(), normalize_dim("cumsum", self.dim, x.rank())?);
        let x = &forward::as_dtype(x, accumulated_dtype("cumsum", x.dtype(), self.widen)?)?;
        numeric_dispatch!(x.dtype(), "cumsum", |T| {
            let out = x.with_contiguous(|s: &[T]| scan::cumsum(s, shape, self.order))?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        infer_scan("Cumsum", self.dim, self.widen, inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    /// Each input feeds every later running sum: the gradient is the scan of `g` the other way.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let order = ScanOrder { reverse: !self.order.reverse, ..self.order };
        let back = Cumsum { dim: self.dim, order, widen: self.widen };
        let g = d.apply(crate::op::Op::Table(super::TableOps::Cumsum(back)), &[a.grad])?;
        Ok(vec![Some(g)])
    }
}

#[derive(Clone, Debug)]
pub struct Cumprod {
    dim: isize,
    order: ScanOrder,
    widen: bool,
}

impl Cumprod {
    /// A float `cumprod` along `dim` in `order`, for rules that emit it.
    pub fn new(dim: isize, order: ScanOrder) -> Cumprod {
        Cumprod { dim, order, widen: false }
    }
}

impl TableOp for Cumprod {
    const SPEC: Spec = Spec {
        name: "cumprod",
        torch_aliases: &[],
        tf: &["cumprod", "math.cumprod"],
        doc: "Running products along `dim`.",
        differentiable: true,
        inputs: ONE_INPUT,
        params: SCAN_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        let order = ScanOrder { exclusive: args.flag(1)?, reverse: args.flag(2)? };
        Ok(Cumprod { dim: args.int(0)?, order, widen: !args.flag(3)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "cumprod")?;
        let shape = scan_shape(x.shape(), normalize_dim("cumprod", self.dim, x.rank())?);
        let x = &forward::as_dtype(x, accumulated_dtype("cumprod", x.dtype(), self.widen)?)?;
        numeric_dispatch!(x.dtype(), "cumprod", |T| {
            let out = x.with_contiguous(|s: &[T]| scan::cumprod(s, shape, self.order))?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        infer_scan("Cumprod", self.dim, self.widen, inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: false }
    }

    /// Exact when the input holds zeros (see `kernels::scan::cumprod_grad`): no division by the input.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "cumprod")?;
        let grad = CumprodGrad { dim: self.dim, order: self.order };
        Ok(vec![Some(d.apply(Op::Table(TableOps::CumprodGrad(grad)), &[a.grad, x])?)])
    }
}

/// `(g, x)`: the gradient of `cumprod(x)` given its output's gradient `g`.
#[derive(Clone, Debug)]
pub struct CumprodGrad {
    dim: isize,
    order: ScanOrder,
}

impl TableOp for CumprodGrad {
    const SPEC: Spec = internal("cumprod_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("cumprod_backward is built by cumprod's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (*nth(inputs, 0, "cumprod_backward")?, *nth(inputs, 1, "cumprod_backward")?);
        let shape = scan_shape(x.shape(), normalize_dim("cumprod", self.dim, x.rank())?);
        let g = crate::forward::as_dtype(g, x.dtype())?;
        float_dispatch!(x.dtype(), "cumprod_backward", |T| {
            let gv: Vec<T> = g.to_vec()?;
            let out = x.with_contiguous(|s: &[T]| scan::cumprod_grad(&gv, s, shape, self.order))?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "cumprod_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads both.
        Saves { inputs: 0b11, output: false }
    }

    /// Through a composite that is exact with zeros, as torch's: O(n²) along the dim. With
    /// a new axis k beside the dim, `∂y_i/∂x_k` is the scan (along the dim, in this order) of
    /// x with x_k replaced by 1, where the window of y_i holds k (the same scan of one-hot(k)).
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 1, "cumprod_backward")?;
        let rank = d.rank(x).ok_or_else(|| {
            Error::Gradient("cumprod_backward: differentiating it needs the input's rank known when it is built".into())
        })?;
        let (dim, order) = (self.dim, self.order);
        vjp_of_composite(d, a, |t, ins| {
            let (g, x) = (&ins[0], &ins[1]);
            if rank == 0 {
                // One element: as a 1-D scan of it.
                let (g1, x1) = (t.apply(Op::Reshape(vec![1]), &[g])?, t.apply(Op::Reshape(vec![1]), &[x])?);
                let grad = cumprod_grad_composite(t, &g1, &x1, 0, order)?;
                return t.apply(Op::ReshapeLike, &[&grad, x]);
            }
            let p = normalize_dim("cumprod", dim, rank)?;
            cumprod_grad_composite(t, g, x, p, order)
        })
    }
}

/// `cumprod`'s gradient along dim `p` (in `order`) from `g` and `x`, with differentiable ops:
/// `grad_k = Σ_i g_i · C[k, i] · M[k, i]`, where row k of C is the scan of x with x_k set to
/// 1, and `M[k, i]` is 1 where the window of y_i holds k. Axis k is put before the dim.
fn cumprod_grad_composite<D: Differentiator>(
    t: &mut D,
    g: &D::Value,
    x: &D::Value,
    p: usize,
    order: ScanOrder,
) -> Result<D::Value> {
    let p = p as isize;
    let unsqueeze = |t: &mut D, v: &D::Value, at: isize| {
        t.apply(Op::Table(TableOps::Unsqueeze(super::reshapes::Unsqueeze::new(at))), &[v])
    };
    let ones = t.apply(Op::FullLike(1.0), &[x])?;
    let inclusive = ScanOrder { reverse: false, exclusive: false };
    let position = t.apply(Op::Table(TableOps::Cumsum(Cumsum { dim: p, order: inclusive, widen: false })), &[&ones])?;
    let (at_k, at_i) = (unsqueeze(t, &position, p + 1)?, unsqueeze(t, &position, p)?);
    let diagonal = t.apply(Op::Compare(crate::kernels::elementwise::CmpOp::Eq), &[&at_k, &at_i])?;
    let x_along = unsqueeze(t, x, p)?;
    let ones_along = unsqueeze(t, &ones, p)?;
    let without_k = t.apply(Op::Where, &[&diagonal, &ones_along, &x_along])?;
    let scans = t.apply(Op::Table(TableOps::Cumprod(Cumprod::new(p + 1, order))), &[&without_k])?;
    let zeros_along = t.zeros_like(&ones_along)?;
    let one_hot = t.apply(Op::Where, &[&diagonal, &ones_along, &zeros_along])?;
    let in_window = t.apply(Op::Table(TableOps::Cumsum(Cumsum { dim: p + 1, order, widen: false })), &[&one_hot])?;
    let g_along = unsqueeze(t, g, p)?;
    let weighted = t.mul(&g_along, &scans)?;
    let masked = t.mul(&weighted, &in_window)?;
    t.apply(Op::Sum { dims: Some(vec![p + 1]), keepdim: false }, &[&masked])
}
