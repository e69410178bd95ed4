//! The gradient of a scatter's source, and its adjoint, each the other's derivative rule:
//! `scatter_src_backward` puts a gradient picked at the index into the source's shape,
//! `scatter_src_corner` takes it back out.

use super::{internal, nth, Args, Meta, Spec, TableOp, TableOps};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::op::{IndexItem, Op};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// The slices `[0, n)` of each dim of `shape`: its leading corner.
fn corner(shape: &[usize]) -> Vec<IndexItem> {
    shape.iter().map(|&n| IndexItem::Slice { start: Some(0), stop: Some(n as isize), step: 1 }).collect()
}

/// `(g, src)`: the gradient of a scatter's source, from `g` picked at the index: a
/// number's is the sum, a tensor's is `g` in its leading corner and zeros elsewhere.
#[derive(Clone, Debug)]
pub struct ScatterSourceGrad;

impl TableOp for ScatterSourceGrad {
    const SPEC: Spec = internal("scatter_src_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("scatter_src_backward is built by scatter's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, src) = (*nth(inputs, 0, "scatter_backward")?, *nth(inputs, 1, "scatter_backward")?);
        if src.rank() == 0 {
            return forward::sum_to(g, &[], src.dtype());
        }
        let out = Tensor::zeros(src.shape(), g.dtype())?;
        forward::write_into(&forward::index(&out, &corner(g.shape()))?, g)?;
        Ok(out)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "scatter_backward")?;
        let (src, _) = *nth(inputs, 1, "scatter_backward")?;
        Ok((src.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // The rule reads the shape of `g` only.
        Saves { inputs: 0, output: false }
    }

    /// Linear in g: the adjoint of putting g in a corner is taking that corner.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(vec![None, None]);
        }
        let g = nth(a.inputs, 0, "scatter_backward")?;
        let take = Op::Table(TableOps::ScatterSourceCorner(ScatterSourceCorner));
        Ok(vec![Some(d.apply(take, &[a.grad, g])?), None])
    }
}

/// `(h, like)`: the leading corner of `h` in the shape of `like`, or a 0-d `h` spread over
/// that shape (the adjoint of `scatter_src_backward` with a source of `h`'s shape).
#[derive(Clone, Debug)]
pub struct ScatterSourceCorner;

impl TableOp for ScatterSourceCorner {
    const SPEC: Spec = internal("scatter_src_corner", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("scatter_src_corner is built by derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (h, like) = (*nth(inputs, 0, "scatter_src_corner")?, *nth(inputs, 1, "scatter_src_corner")?);
        if h.rank() == 0 {
            return forward::broadcast_to(h, like.shape());
        }
        forward::copy(&forward::index(h, &corner(like.shape()))?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "scatter_src_corner")?;
        let (like, _) = *nth(inputs, 1, "scatter_src_corner")?;
        Ok((like.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // The rule reads the shape of `h` only.
        Saves { inputs: 0, output: false }
    }

    /// Linear in h: the adjoint of taking a corner is putting into it.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(vec![None, None]);
        }
        let h = nth(a.inputs, 0, "scatter_src_corner")?;
        let put = Op::Table(TableOps::ScatterSourceGrad(ScatterSourceGrad));
        Ok(vec![Some(d.apply(put, &[a.grad, h])?), None])
    }
}
