//! TF1's coordinate ops: `gather_nd` and `scatter_nd`, whose index's last dim holds
//! coordinates into the leading dims of the data.

use super::indexing::{keep_indices_from, pick, pick_rule, picked, put, Combine};
use super::picks::{check_index_dtype, infer_pick, Pick};
use super::{nth, Args, Input, Kind, Meta, Param, Role, Spec, TableOp};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

/// TF1's `gather_nd(params, indices, batch_dims=0)`: `out[i...] = params[indices[i..., :]]`.
#[derive(Clone, Debug)]
pub struct GatherNd {
    batch_dims: isize,
}

impl GatherNd {
    fn pick(&self) -> Pick {
        Pick::Nd { batch_dims: self.batch_dims }
    }
}

impl TableOp for GatherNd {
    const SPEC: Spec = Spec {
        name: "gather_nd",
        torch_aliases: &[],
        tf: &["gather_nd"],
        doc: "Slices of params at the coordinates in the last dim of indices: out[i...] = params[indices[i...]].",
        differentiable: true,
        inputs: &[
            Input { torch: "params", tf: "params", list: false },
            Input { torch: "indices", tf: "indices", list: false },
        ],
        params: &[Param {
            torch: "batch_dims",
            tf: "batch_dims",
            tf_aliases: &[],
            kind: Kind::Int,
            torch_default: Some("0"),
            tf_default: Some("0"),
        }],
    };
    const ROLES: &'static [Role] = &[Role::Data, Role::Index];

    fn build(args: &Args) -> Result<Self> {
        Ok(GatherNd { batch_dims: args.int(0)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, index) = (*nth(inputs, 0, "gather_nd")?, *nth(inputs, 1, "gather_nd")?);
        pick("gather_nd", &self.pick(), x, &[index])
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, "gather_nd")?;
        Ok((infer_pick("gather_nd", &self.pick(), x, &inputs[1..])?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![Some(pick_rule(d, &self.pick(), &a)?), None])
    }
}

/// TF1's `scatter_nd(indices, updates, shape)`: zeros of `shape` with the updates added at
/// the coordinates in the last dim of indices; updates for one element add up, in order.
#[derive(Clone, Debug)]
pub struct ScatterNd {
    shape: Vec<usize>,
}

impl TableOp for ScatterNd {
    const SPEC: Spec = Spec {
        name: "scatter_nd",
        torch_aliases: &[],
        tf: &["scatter_nd"],
        doc: "Zeros of `shape` with updates added at the coordinates in indices' last dim (in order: deterministic).",
        differentiable: true,
        inputs: &[
            Input { torch: "indices", tf: "indices", list: false },
            Input { torch: "updates", tf: "updates", list: false },
        ],
        params: &[Param {
            torch: "shape",
            tf: "shape",
            tf_aliases: &[],
            kind: Kind::OptDims,
            torch_default: None,
            tf_default: None,
        }],
    };
    const ROLES: &'static [Role] = &[Role::Index, Role::Data];

    fn build(args: &Args) -> Result<Self> {
        let dims = args.dims(0)?.ok_or_else(|| Error::InvalidArgument("scatter_nd: shape is required".into()))?;
        let shape =
            dims.iter().map(|&d| usize::try_from(d)).collect::<std::result::Result<Vec<usize>, _>>().map_err(|_| {
                Error::InvalidArgument(format!("scatter_nd: the shape must be non-negative, got {dims:?}"))
            })?;
        Ok(ScatterNd { shape })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (index, updates) = (*nth(inputs, 0, "scatter_nd")?, *nth(inputs, 1, "scatter_nd")?);
        let out = Tensor::zeros(&self.shape, updates.dtype())?;
        put("scatter_nd", &Pick::Nd { batch_dims: 0 }, &out, &[index], updates, Combine::Add)?;
        Ok(out)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let ((index, index_dtype), (_, dtype)) = (*nth(inputs, 0, "scatter_nd")?, *nth(inputs, 1, "scatter_nd")?);
        check_index_dtype("scatter_nd", index_dtype)?;
        let shape = Some(self.shape.iter().map(|&d| Some(d)).collect());
        infer_pick("scatter_nd", &Pick::Nd { batch_dims: 0 }, &shape, &[(index, index_dtype)])?;
        Ok((shape, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        let _ = needs;
        Saves { inputs: 1, output: false }
    }

    /// Each update's gradient is `g` at its coordinates.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let index = nth(a.inputs, 0, "scatter_nd")?;
        let g = picked(d, &Pick::Nd { batch_dims: 0 }, a.grad, std::slice::from_ref(index))?;
        Ok(vec![None, Some(g)])
    }
}
