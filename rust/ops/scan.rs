//! Scans along one dim: `cumsum`.

use super::{nth, Args, Kind, Meta, Param, Spec, TableOp, ONE_INPUT};
use crate::dtype::float_dispatch;
use crate::dtype::DType;
use crate::error::{dtype_err, Result};
use crate::graph::PartialShape;
use crate::kernels::scan::{self, ScanOrder};
use crate::rules::{Differentiator, RuleArgs, Saves};
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
];

#[derive(Clone, Debug)]
pub struct Cumsum {
    dim: isize,
    order: ScanOrder,
}

/// `(outer, n, inner)`: the sizes before, along and after `dim` of `shape`.
fn split_at_dim(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product())
}

fn check_dim(op: &str, dim: isize, shape: &PartialShape) -> Result<()> {
    if let Some(dims) = shape {
        normalize_dim(op, dim, dims.len())?;
    }
    Ok(())
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
        Ok(Cumsum { dim: args.int(0)?, order: ScanOrder { exclusive: args.flag(1)?, reverse: args.flag(2)? } })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "cumsum")?;
        let dim = normalize_dim("cumsum", self.dim, x.rank())?;
        let (outer, n, inner) = split_at_dim(x.shape(), dim);
        float_dispatch!(x.dtype(), "cumsum", |T| {
            let out = x.with_contiguous(|s: &[T]| scan::cumsum(s, outer, n, inner, self.order))?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, "cumsum")?;
        if !dtype.is_float() {
            return dtype_err(format!("cumsum: expected a float tensor, got {}", dtype.name()));
        }
        check_dim("cumsum", self.dim, shape)?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    /// Each input feeds every later running sum: the gradient is the scan of `g` the other way.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let back = Cumsum { dim: self.dim, order: ScanOrder { reverse: !self.order.reverse, ..self.order } };
        let g = d.apply(crate::op::Op::Table(super::TableOps::Cumsum(back)), &[a.grad])?;
        Ok(vec![Some(g)])
    }
}
