//! torch's `bmm` in static graphs: two batches of matrices, both 3-D with the same batch
//! size (no broadcasting), checked when the graph is built as far as shapes are known and
//! again when a run gives them. Internal: TF1 has no `bmm`; eager `torch.bmm` records the
//! matrix product itself (`autograd::record::bmm`), with the same checks (`check_shapes`).

use super::{internal, nth, Args, Input, Meta, Spec, TableOp};
use crate::dtype::DType;
use crate::error::{shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

const PRODUCT: Op = Op::MatMul { transpose_a: false, transpose_b: false };

fn fmt_dim(d: Option<usize>) -> String {
    d.map_or("?".into(), |v| v.to_string())
}

/// torch's `[2, 3, 4]`, with `?` for a dim unknown until the run.
fn fmt_dims(dims: &[Option<usize>]) -> String {
    format!("[{}]", dims.iter().map(|&d| fmt_dim(d)).collect::<Vec<_>>().join(", "))
}

/// torch's checks of `bmm(batch1, batch2)` on shapes known up to some dims: both 3-D, and
/// batch2's first two dims `[batch, k]` those of batch1 (`[batch, n, k]`). Unknown dims pass.
pub fn check_shapes(a: &PartialShape, b: &PartialShape) -> Result<()> {
    for (shape, name) in [(a, "batch1"), (b, "batch2")] {
        if let Some(dims) = shape.as_ref().filter(|d| d.len() != 3) {
            return shape_err(format!(
                "bmm: {name} must be a 3D tensor, got shape {}; use matmul for other ranks",
                fmt_dims(dims)
            ));
        }
    }
    let (Some(sa), Some(sb)) = (a, b) else { return Ok(()) };
    let differ = |p: Option<usize>, q: Option<usize>| matches!((p, q), (Some(p), Some(q)) if p != q);
    if differ(sb[0], sa[0]) || differ(sb[1], sa[2]) {
        return shape_err(format!(
            "bmm: Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}]. \
             (shapes {} and {})",
            fmt_dim(sa[0]),
            fmt_dim(sa[2]),
            fmt_dim(sb[0]),
            fmt_dim(sb[1]),
            fmt_dims(sa),
            fmt_dims(sb)
        ));
    }
    Ok(())
}

/// `bmm(input, mat2)`: `input @ mat2` for 3-D operands with one batch size.
#[derive(Clone, Debug)]
pub struct Bmm;

impl TableOp for Bmm {
    const SPEC: Spec = internal(
        "bmm",
        &[Input { torch: "input", tf: "input", list: false }, Input { torch: "mat2", tf: "mat2", list: false }],
    );

    fn tf_type(&self) -> &'static str {
        "BatchMatMulV2"
    }

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("bmm is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (*nth(inputs, 0, "bmm")?, *nth(inputs, 1, "bmm")?);
        check_shapes(&crate::graph::known(a.shape()), &crate::graph::known(b.shape()))?;
        crate::forward::forward(&PRODUCT, &[a, b])
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (a, b) = (*nth(inputs, 0, "bmm")?, *nth(inputs, 1, "bmm")?);
        check_shapes(a.0, b.0)?;
        crate::graph::infer::infer(&PRODUCT, &[a, b])
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        let need = |i: usize| needs.get(i).copied().unwrap_or(true);
        // a's gradient reads b, b's reads a.
        Saves { inputs: u32::from(need(1)) | (u32::from(need(0)) << 1), output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (x, y) = (nth(a.inputs, 0, "bmm")?, nth(a.inputs, 1, "bmm")?);
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(true);
        let gx = if need(0) {
            Some(d.apply(Op::MatMul { transpose_a: false, transpose_b: true }, &[a.grad, y])?)
        } else {
            None
        };
        let gy = if need(1) {
            Some(d.apply(Op::MatMul { transpose_a: true, transpose_b: false }, &[x, a.grad])?)
        } else {
            None
        };
        Ok(vec![gx, gy])
    }
}
